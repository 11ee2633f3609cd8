//! Path resolution and traversal guards for paths that come from the model, a hub or a file.
//!
//! Two checks, used together where a path must stay inside a directory (skills, hub installs):
//! - `check_relative`: a cheap syntactic check — not empty, not absolute, no `..`, no NUL;
//! - `ensure_within`: resolves symlinks (the candidate need not exist yet: its nearest existing
//!   ancestor is resolved and the rest appended) and requires the result to stay under the
//!   resolved base, so a symlink pointing out of the directory is refused.

use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty; give a path relative to the allowed directory")]
    Empty,
    #[error("`{0}` is absolute; give a path relative to the allowed directory")]
    Absolute(String),
    #[error("`{0}` contains a `..` component; paths may not climb out of the allowed directory")]
    ParentComponent(String),
    #[error("the path contains a NUL byte; remove it")]
    NulByte,
    #[error(
        "{} resolves to {}, which is outside {}; paths (and the symlinks they go through) must stay inside it",
        .candidate.display(), .resolved.display(), .base.display()
    )]
    Escapes {
        candidate: PathBuf,
        resolved: PathBuf,
        base: PathBuf,
    },
    #[error("cannot resolve {}: {source}", .path.display())]
    Resolve {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Accepts only a non-empty relative path without `..` components or NUL bytes.
pub fn check_relative(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::NulByte);
    }
    for component in Path::new(path).components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Absolute(path.to_string()));
            }
            Component::ParentDir => return Err(PathError::ParentComponent(path.to_string())),
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    Ok(())
}

/// Resolves `candidate` (relative paths are taken relative to `base`) and returns its resolved
/// form if it lies under the resolved `base`. `base` must exist.
pub fn ensure_within(base: &Path, candidate: &Path) -> Result<PathBuf, PathError> {
    if has_nul(base) || has_nul(candidate) {
        return Err(PathError::NulByte);
    }
    let resolved_base = std::fs::canonicalize(base).map_err(|source| PathError::Resolve {
        path: base.to_path_buf(),
        source,
    })?;
    let joined = if candidate.is_absolute() {
        candidate.to_path_buf()
    } else {
        resolved_base.join(candidate)
    };
    let resolved = resolve(&joined).map_err(|source| PathError::Resolve {
        path: candidate.to_path_buf(),
        source,
    })?;
    if resolved.starts_with(&resolved_base) {
        Ok(resolved)
    } else {
        Err(PathError::Escapes {
            candidate: candidate.to_path_buf(),
            resolved,
            base: resolved_base,
        })
    }
}

fn has_nul(path: &Path) -> bool {
    path.as_os_str().as_encoded_bytes().contains(&0)
}

/// Lexical normal form of a path: `.` removed, `..` applied to the component before it (never
/// above the root). Does not touch the file system, so symlinks are not followed.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.is_absolute() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonicalizes an absolute path whose tail may not exist yet: the longest existing prefix is
/// canonicalized (following symlinks like the kernel would) and the missing components are
/// appended. A `..` in the missing part is applied and the walk starts again, because after it
/// the path may re-enter existing directories (and their symlinks).
pub fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    // Every round removes one `..` or follows one dangling symlink; the cap stops link loops.
    for _ in 0..256 {
        let comps: Vec<Component> = current.components().collect();
        let mut found = None;
        for k in (1..=comps.len()).rev() {
            let prefix: PathBuf = comps[..k].iter().collect();
            match std::fs::canonicalize(&prefix) {
                Ok(canon) => {
                    found = Some((canon, k));
                    break;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        let Some((mut canon, k)) = found else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no part of the path exists",
            ));
        };
        let rest = &comps[k..];
        // The first missing component may be a dangling symlink: a write through it creates
        // its target, so resolution follows it too.
        if let Some(Component::Normal(name)) = rest.first() {
            let link = canon.join(name);
            if let Ok(target) = std::fs::read_link(&link) {
                let mut next = if target.is_absolute() {
                    target
                } else {
                    canon.join(target)
                };
                for c in &rest[1..] {
                    next.push(c.as_os_str());
                }
                current = next;
                continue;
            }
        }
        match rest.iter().position(|c| matches!(c, Component::ParentDir)) {
            None => {
                for c in rest {
                    if let Component::Normal(name) = c {
                        canon.push(name);
                    }
                }
                return Ok(canon);
            }
            Some(j) => {
                // Components before the `..` do not exist; the `..` cancels the last of them, or
                // climbs out of the existing prefix when there is none.
                let mut kept: Vec<&Component> = rest[..j]
                    .iter()
                    .filter(|c| matches!(c, Component::Normal(_)))
                    .collect();
                if kept.pop().is_none() {
                    canon.pop();
                }
                let mut next = canon;
                for c in kept.into_iter().chain(rest[j + 1..].iter()) {
                    next.push(c.as_os_str());
                }
                current = next;
            }
        }
    }
    Err(io::Error::other(
        "too many `..` components or symbolic links (a symlink loop?)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn relative_paths() {
        assert!(check_relative("references/api.md").is_ok());
        assert!(check_relative("./a/b").is_ok());
        assert!(matches!(check_relative(""), Err(PathError::Empty)));
        assert!(matches!(
            check_relative("/etc/passwd"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            check_relative("../x"),
            Err(PathError::ParentComponent(_))
        ));
        assert!(matches!(
            check_relative("a/../../x"),
            Err(PathError::ParentComponent(_))
        ));
        assert!(matches!(
            check_relative("a/.."),
            Err(PathError::ParentComponent(_))
        ));
        assert!(matches!(check_relative("a\0b"), Err(PathError::NulByte)));
        // `..` only matters as a whole component.
        assert!(check_relative("a..b/..c").is_ok());
        let msg = check_relative("../x").unwrap_err().to_string();
        assert!(msg.contains("`../x`") && msg.contains(".."), "{msg}");
    }

    #[test]
    fn inside_and_not_yet_existing_paths() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        std::fs::create_dir(base.join("sub")).unwrap();
        std::fs::write(base.join("sub/file.txt"), "x").unwrap();
        let canon = std::fs::canonicalize(base).unwrap();
        assert_eq!(
            ensure_within(base, Path::new("sub/file.txt")).unwrap(),
            canon.join("sub/file.txt")
        );
        assert_eq!(
            ensure_within(base, Path::new("new/dir/f.md")).unwrap(),
            canon.join("new/dir/f.md")
        );
        assert_eq!(
            ensure_within(base, Path::new("sub/../other")).unwrap(),
            canon.join("other")
        );
        assert_eq!(
            ensure_within(base, Path::new("nope/../sub/x")).unwrap(),
            canon.join("sub/x")
        );
        assert_eq!(
            ensure_within(base, &canon.join("sub")).unwrap(),
            canon.join("sub")
        );
    }

    #[test]
    fn traversal_and_absolute_escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base");
        std::fs::create_dir(&base).unwrap();
        for bad in [
            "../outside",
            "a/../../outside",
            "nope/../../x",
            "/etc/passwd",
            "/",
        ] {
            let err = ensure_within(&base, Path::new(bad)).unwrap_err();
            assert!(matches!(err, PathError::Escapes { .. }), "{bad}: {err}");
        }
        // A sibling whose name merely starts with the base name is outside too.
        std::fs::create_dir(dir.path().join("base2")).unwrap();
        assert!(ensure_within(&base, &dir.path().join("base2/x")).is_err());
    }

    #[test]
    fn symlink_escape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("skill");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        symlink(&outside, base.join("link")).unwrap();
        symlink(outside.join("secret"), base.join("file-link")).unwrap();
        for bad in [
            "link/secret",
            "link/new-file",
            "link",
            "file-link",
            "link/../../outside",
        ] {
            let err = ensure_within(&base, Path::new(bad)).unwrap_err();
            assert!(matches!(err, PathError::Escapes { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("outside"), "{err}");
        }
        // `x/../link/…` through a missing directory still lands on the symlink.
        assert!(ensure_within(&base, Path::new("missing/../link/secret")).is_err());
        // A symlink that stays inside is fine.
        std::fs::create_dir(base.join("real")).unwrap();
        symlink(base.join("real"), base.join("inner")).unwrap();
        let ok = ensure_within(&base, Path::new("inner/f")).unwrap();
        assert_eq!(ok, std::fs::canonicalize(&base).unwrap().join("real/f"));
    }

    #[test]
    fn nul_and_missing_base() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            ensure_within(dir.path(), Path::new("a\0b")),
            Err(PathError::NulByte)
        ));
        let err = ensure_within(&dir.path().join("missing"), Path::new("a")).unwrap_err();
        assert!(matches!(err, PathError::Resolve { .. }), "{err}");
    }
}
