//! Profiles, as Python Hermes 0.19 has them: a profile is a whole home of its own (config.yaml,
//! .env, SOUL.md, state.db, memories, skills) at `<root>/profiles/<name>`; `default` is the root
//! itself. `-p/--profile NAME` picks one for a command; `hermes profile use NAME` makes one sticky
//! through the `<root>/active_profile` file. The root is `$HERMES_HOME` (or `~/.hermes`); a
//! `HERMES_HOME` that already points at `<root>/profiles/<name>` is used as it is.

use std::io;
use std::path::{Path, PathBuf};

use super::HermesHome;

/// Python Hermes' profile id rule (`_PROFILE_ID_RE`).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "`{0}` is not a valid profile name: use lowercase letters, digits, `-` and `_` \
         (at most 64, starting with a letter or digit)"
    )]
    BadName(String),
    #[error("profile `{0}` does not exist; create it with `hermes profile create {0}`")]
    Missing(String),
    #[error("profile `{name}` already exists at {}", path.display())]
    Exists { name: String, path: PathBuf },
    #[error("`default` is the built-in profile (the home itself); it cannot be {0}")]
    Default(&'static str),
    #[error(
        "neither HERMES_HOME nor HOME is set; set HERMES_HOME to the directory hermes should use"
    )]
    NoHome,
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ProfileError + use<> {
    let path = path.to_path_buf();
    move |source| ProfileError::Io { what, path, source }
}

/// Canonical name: `default` in any case, else lower-cased, then checked.
pub fn normalize(name: &str) -> Result<String, ProfileError> {
    let t = name.trim();
    if t.eq_ignore_ascii_case("default") {
        return Ok("default".into());
    }
    let lower = t.to_ascii_lowercase();
    if valid_name(&lower) {
        Ok(lower)
    } else {
        Err(ProfileError::BadName(name.to_string()))
    }
}

/// Where profiles live: the root home and its `profiles/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profiles {
    root: PathBuf,
}

impl Profiles {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Profiles { root: root.into() }
    }

    /// The root from `HERMES_HOME` / `HOME` (a `HERMES_HOME` of `<root>/profiles/<name>` gives
    /// `<root>`), plus that profile path when `HERMES_HOME` is one.
    fn from_env() -> Result<(Self, Option<PathBuf>), ProfileError> {
        if let Some(dir) = std::env::var_os("HERMES_HOME").filter(|v| !v.is_empty()) {
            let dir = PathBuf::from(dir);
            if let Some(root) = profile_root_of(&dir) {
                return Ok((Profiles::new(root), Some(dir)));
            }
            return Ok((Profiles::new(dir), None));
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok((Profiles::new(PathBuf::from(home).join(".hermes")), None)),
            None => Err(ProfileError::NoHome),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The home of profile `name` (`default` is the root).
    pub fn dir(&self, name: &str) -> PathBuf {
        if name == "default" {
            self.root.clone()
        } else {
            self.root.join("profiles").join(name)
        }
    }

    fn active_file(&self) -> PathBuf {
        self.root.join("active_profile")
    }

    /// The sticky profile (`default` when none is set or the file is unreadable).
    pub fn active(&self) -> String {
        std::fs::read_to_string(self.active_file())
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".into())
    }

    /// The named profiles, sorted (without `default`).
    pub fn names(&self) -> Result<Vec<String>, ProfileError> {
        let dir = self.root.join("profiles");
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("cannot list", &dir)(e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| valid_name(n))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The home of an existing profile.
    pub fn existing(&self, name: &str) -> Result<PathBuf, ProfileError> {
        let name = normalize(name)?;
        let dir = self.dir(&name);
        if name != "default" && !dir.is_dir() {
            return Err(ProfileError::Missing(name));
        }
        Ok(dir)
    }

    /// Makes `name` the sticky profile (`default` removes the file, as Python Hermes does).
    pub fn use_profile(&self, name: &str) -> Result<String, ProfileError> {
        let name = normalize(name)?;
        self.existing(&name)?;
        let file = self.active_file();
        if name == "default" {
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("cannot remove", &file)(e)),
            }
        } else {
            std::fs::create_dir_all(&self.root).map_err(io_err("cannot create", &self.root))?;
            crate::util::atomic_write(&file, format!("{name}\n").as_bytes())
                .map_err(io_err("cannot write", &file))?;
        }
        Ok(name)
    }

    /// Creates profile `name`: the home layout, a commented `.env` (mode 0600) and, with
    /// `clone_from`, that home's config.yaml, .env, SOUL.md, skills and memory files.
    pub fn create(&self, name: &str, clone_from: Option<&Path>) -> Result<PathBuf, ProfileError> {
        let name = normalize(name)?;
        if name == "default" {
            return Err(ProfileError::Default("created"));
        }
        let dir = self.dir(&name);
        if dir.exists() {
            return Err(ProfileError::Exists { name, path: dir });
        }
        if let Some(src) = clone_from
            && !src.is_dir()
        {
            return Err(io_err("cannot clone from", src)(io::Error::new(
                io::ErrorKind::NotFound,
                "no such profile home",
            )));
        }
        let home = HermesHome::new(&dir);
        home.ensure_layout()
            .map_err(io_err("cannot create", &dir))?;
        if let Some(src) = clone_from {
            for file in [
                "config.yaml",
                ".env",
                "SOUL.md",
                "memories/MEMORY.md",
                "memories/USER.md",
            ] {
                let from = src.join(file);
                if from.is_file() {
                    let to = dir.join(file);
                    std::fs::copy(&from, &to).map_err(io_err("cannot copy", &from))?;
                }
            }
            copy_tree(&src.join("skills"), &dir.join("skills"))?;
        }
        let env = dir.join(".env");
        if !env.exists() {
            std::fs::write(
                &env,
                "# Per-profile secrets for this Hermes profile.\n\
                 # API keys and tokens set here override the shell environment.\n",
            )
            .map_err(io_err("cannot write", &env))?;
        }
        restrict(&env)?;
        Ok(dir)
    }

    /// Deletes profile `name` and everything in it; the sticky choice falls back to `default`.
    pub fn delete(&self, name: &str) -> Result<PathBuf, ProfileError> {
        let name = normalize(name)?;
        if name == "default" {
            return Err(ProfileError::Default("deleted"));
        }
        let dir = self.existing(&name)?;
        std::fs::remove_dir_all(&dir).map_err(io_err("cannot delete", &dir))?;
        if self.active() == name {
            self.use_profile("default")?;
        }
        Ok(dir)
    }
}

/// `<root>` when `dir` is `<root>/profiles/<name>`.
fn profile_root_of(dir: &Path) -> Option<PathBuf> {
    let parent = dir.parent()?;
    (parent.file_name()? == "profiles").then(|| parent.parent().map(Path::to_path_buf))?
}

#[cfg(unix)]
fn restrict(path: &Path) -> Result<(), ProfileError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io_err("cannot restrict", path))
}

#[cfg(not(unix))]
fn restrict(_: &Path) -> Result<(), ProfileError> {
    Ok(())
}

/// Copies a directory tree (files and directories; symlinks are copied as links, never followed,
/// so a clone cannot pull in files from outside the skills tree).
fn copy_tree(from: &Path, to: &Path) -> Result<(), ProfileError> {
    if !from.is_dir() {
        return Ok(());
    }
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(|e| ProfileError::Io {
            what: "cannot read",
            path: from.to_path_buf(),
            source: e.into(),
        })?;
        let Ok(rel) = entry.path().strip_prefix(from) else {
            continue;
        };
        let target = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target).map_err(io_err("cannot create", &target))?;
        } else if kind.is_symlink() {
            #[cfg(unix)]
            {
                let link = std::fs::read_link(entry.path())
                    .map_err(io_err("cannot read", entry.path()))?;
                std::os::unix::fs::symlink(&link, &target)
                    .map_err(io_err("cannot create", &target))?;
            }
        } else {
            std::fs::copy(entry.path(), &target).map_err(io_err("cannot copy", entry.path()))?;
        }
    }
    Ok(())
}

/// The home for this process: `-p NAME` if given, else a `HERMES_HOME` that is a profile path,
/// else the sticky `active_profile`, else the root.
pub fn resolve_home(profile: Option<&str>) -> Result<HermesHome, ProfileError> {
    let (profiles, env_profile) = Profiles::from_env()?;
    if let Some(name) = profile {
        return Ok(HermesHome::new(profiles.existing(name)?));
    }
    if let Some(dir) = env_profile {
        return Ok(HermesHome::new(dir));
    }
    let active = profiles.active();
    if active == "default" {
        return Ok(HermesHome::new(profiles.root()));
    }
    Ok(HermesHome::new(profiles.existing(&active)?))
}

/// The profiles of this process's root (for `hermes profile …`).
pub fn from_env() -> Result<Profiles, ProfileError> {
    Ok(Profiles::from_env()?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_normalized() {
        assert_eq!(normalize("Coder").unwrap(), "coder");
        assert_eq!(normalize("DEFAULT").unwrap(), "default");
        for bad in ["", "-x", "a b", "../x", "x/y", &"a".repeat(65)] {
            assert!(normalize(bad).is_err(), "{bad}");
        }
        assert_eq!(
            profile_root_of(Path::new("/r/profiles/coder")),
            Some(PathBuf::from("/r"))
        );
        assert_eq!(profile_root_of(Path::new("/r/coder")), None);
    }

    #[test]
    fn create_clone_use_delete() {
        let root = tempfile::tempdir().unwrap();
        let p = Profiles::new(root.path());
        std::fs::write(root.path().join("config.yaml"), "agent:\n  max_turns: 3\n").unwrap();
        std::fs::create_dir_all(root.path().join("skills/mine")).unwrap();
        std::fs::write(
            root.path().join("skills/mine/SKILL.md"),
            "---\nname: mine\n---\n",
        )
        .unwrap();
        let dir = p.create("work", Some(root.path())).unwrap();
        assert!(dir.join("skills/mine/SKILL.md").is_file());
        assert!(dir.join("config.yaml").is_file());
        let plain = p.create("plain", None).unwrap();
        assert!(!plain.join("config.yaml").exists() && plain.join("memories").is_dir());
        assert!(matches!(
            p.create("work", None),
            Err(ProfileError::Exists { .. })
        ));
        assert_eq!(p.names().unwrap(), ["plain", "work"]);
        assert_eq!(p.use_profile("work").unwrap(), "work");
        assert_eq!(p.active(), "work");
        p.delete("work").unwrap();
        assert_eq!(p.active(), "default");
        assert!(matches!(
            p.use_profile("gone"),
            Err(ProfileError::Missing(_))
        ));
        assert!(matches!(p.delete("default"), Err(ProfileError::Default(_))));
    }
}
