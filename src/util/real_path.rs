//! Where a path really points, without policy: `normalize` (lexical: `.` and `..`) and
//! `resolve` (follows symlinks like the kernel would, for a path whose tail may not exist yet).
//! The rules about which paths a tool may use live in `tools::file_path` (the one path policy)
//! and `security::protected` (the list it consults); both stand on these two functions.

use std::io;
use std::path::{Component, Path, PathBuf};

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
    fn normalize_is_lexical() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../x")), PathBuf::from("/x"));
        assert_eq!(normalize(Path::new("a/../../x")), PathBuf::from("../x"));
    }

    #[test]
    fn resolve_follows_links_through_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let canon = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(canon.join("real")).unwrap();
        symlink(canon.join("real"), canon.join("link")).unwrap();
        assert_eq!(
            resolve(&canon.join("link/new/f.md")).unwrap(),
            canon.join("real/new/f.md")
        );
        assert_eq!(
            resolve(&canon.join("missing/../link/x")).unwrap(),
            canon.join("real/x")
        );
        // A dangling link is followed (a write through it creates its target).
        symlink(canon.join("elsewhere/t"), canon.join("dangling")).unwrap();
        assert_eq!(
            resolve(&canon.join("dangling")).unwrap(),
            canon.join("elsewhere/t")
        );
        // A loop ends with an error, not a hang.
        symlink(canon.join("loop2"), canon.join("loop1")).unwrap();
        symlink(canon.join("loop1"), canon.join("loop2")).unwrap();
        assert!(resolve(&canon.join("loop1/x")).is_err());
    }
}
