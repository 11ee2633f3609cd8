//! Bundled skills: the `skills/` tree of the repository, embedded in the binary, and their sync
//! into `$HERMES_HOME/skills` with `.bundled_manifest` (`name:md5` lines). A copy the user
//! changed is never overwritten, a copy the user deleted is not brought back, and an unchanged
//! copy is updated when a newer hermes ships a newer version. `.no-bundled-skills` opts out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

use crate::skills::usage::BUNDLED_MANIFEST;

/// Every file of the bundled tree, relative to `skills/`. A unit test checks this list against
/// the directory so a new file cannot be forgotten.
pub const FILES: &[(&str, &str)] = &[
    (
        "autonomous-ai-agents/DESCRIPTION.md",
        include_str!("../../skills/autonomous-ai-agents/DESCRIPTION.md"),
    ),
    (
        "autonomous-ai-agents/hermes-agent/SKILL.md",
        include_str!("../../skills/autonomous-ai-agents/hermes-agent/SKILL.md"),
    ),
    (
        "autonomous-ai-agents/skill-authoring/SKILL.md",
        include_str!("../../skills/autonomous-ai-agents/skill-authoring/SKILL.md"),
    ),
    (
        "autonomous-ai-agents/skill-authoring/templates/SKILL.md.template",
        include_str!(
            "../../skills/autonomous-ai-agents/skill-authoring/templates/SKILL.md.template"
        ),
    ),
    (
        "software-development/DESCRIPTION.md",
        include_str!("../../skills/software-development/DESCRIPTION.md"),
    ),
    (
        "software-development/debugging-checklist/SKILL.md",
        include_str!("../../skills/software-development/debugging-checklist/SKILL.md"),
    ),
    (
        "software-development/git-workflow/SKILL.md",
        include_str!("../../skills/software-development/git-workflow/SKILL.md"),
    ),
];

const OPT_OUT_MARKER: &str = ".no-bundled-skills";

/// What a sync did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SyncReport {
    pub installed: Vec<String>,
    pub updated: Vec<String>,
    /// Changed or deleted by the user, or shadowed by a skill of the same name.
    pub kept: Vec<String>,
}

/// One bundled skill: its directory relative to `skills/` and its files relative to that.
struct Bundle {
    rel_dir: String,
    files: Vec<(String, &'static str)>,
}

fn bundles() -> BTreeMap<String, Bundle> {
    let mut out: BTreeMap<String, Bundle> = BTreeMap::new();
    // A skill directory is the one holding SKILL.md; every other file belongs to the skill
    // whose directory is a prefix of its path.
    let dirs: Vec<&str> = FILES
        .iter()
        .filter_map(|(p, _)| p.strip_suffix("/SKILL.md"))
        .collect();
    for dir in &dirs {
        let name = dir.rsplit('/').next().unwrap_or(dir).to_string();
        let files = FILES
            .iter()
            .filter_map(|(p, text)| {
                p.strip_prefix(dir)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .map(|rel| (rel.to_string(), *text))
            })
            .collect();
        out.insert(
            name,
            Bundle {
                rel_dir: dir.to_string(),
                files,
            },
        );
    }
    out
}

/// md5 over the sorted (path, content) pairs of a skill's files.
fn hash_files<'a>(files: impl IntoIterator<Item = (String, &'a [u8])>) -> String {
    let mut sorted: Vec<(String, &[u8])> = files.into_iter().collect();
    sorted.sort();
    let mut md5 = Md5::new();
    for (path, bytes) in sorted {
        md5.update(path.as_bytes());
        md5.update([0]);
        md5.update(bytes);
        md5.update([0]);
    }
    format!("{:x}", md5.finalize())
}

fn hash_dir(dir: &Path) -> Option<String> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(dir)
            .ok()?
            .to_string_lossy()
            .replace('\\', "/");
        files.push((rel, std::fs::read(entry.path()).ok()?));
    }
    Some(hash_files(
        files.iter().map(|(p, b)| (p.clone(), b.as_slice())),
    ))
}

fn read_manifest(path: &Path) -> BTreeMap<String, Option<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() {
                return None;
            }
            Some(match line.split_once(':') {
                Some((n, h)) => (n.trim().to_string(), Some(h.trim().to_string())),
                None => (line.to_string(), None),
            })
        })
        .collect()
}

fn write_manifest(path: &Path, manifest: &BTreeMap<String, Option<String>>) -> std::io::Result<()> {
    let text: String = manifest
        .iter()
        .map(|(n, h)| match h {
            Some(h) => format!("{n}:{h}\n"),
            None => format!("{n}\n"),
        })
        .collect();
    crate::util::atomic_write(path, text.as_bytes())
}

fn write_bundle(skills_dir: &Path, bundle: &Bundle) -> std::io::Result<PathBuf> {
    let dir = skills_dir.join(&bundle.rel_dir);
    for (rel, text) in &bundle.files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        crate::util::atomic_write(&path, text.as_bytes())?;
    }
    Ok(dir)
}

/// Copies new bundled skills into `skills_dir` and updates unchanged ones.
pub fn sync(skills_dir: &Path) -> std::io::Result<SyncReport> {
    let mut report = SyncReport::default();
    if skills_dir.join(OPT_OUT_MARKER).exists() {
        return Ok(report);
    }
    std::fs::create_dir_all(skills_dir)?;
    let manifest_path = skills_dir.join(BUNDLED_MANIFEST);
    let mut manifest = read_manifest(&manifest_path);
    let before = manifest.clone();
    // Only a bundled skill new to the manifest needs the full scan (a user skill of the same
    // name shadows it); scanning on every start would parse every SKILL.md of the home.
    let mut existing: Option<crate::skills::store::Scan> = None;
    for (name, bundle) in bundles() {
        let bundled_hash = hash_files(bundle.files.iter().map(|(p, t)| (p.clone(), t.as_bytes())));
        let dest = skills_dir.join(&bundle.rel_dir);
        match manifest.get(&name).cloned() {
            None => {
                let existing = existing.get_or_insert_with(|| {
                    crate::skills::store::SkillStore::new(skills_dir).scan()
                });
                let shadowed = existing.skills.iter().any(|s| s.name == name)
                    || existing.invalid.iter().any(|s| s.name == name);
                if dest.exists() || shadowed {
                    report.kept.push(name.clone());
                } else {
                    write_bundle(skills_dir, &bundle)?;
                    report.installed.push(name.clone());
                }
                manifest.insert(name, Some(bundled_hash));
            }
            Some(recorded) => {
                if !dest.exists() {
                    // Deleted by the user: stays deleted.
                    continue;
                }
                let current = hash_dir(&dest);
                match recorded {
                    Some(old)
                        if current.as_deref() == Some(old.as_str()) && old != bundled_hash =>
                    {
                        write_bundle(skills_dir, &bundle)?;
                        report.updated.push(name.clone());
                        manifest.insert(name, Some(bundled_hash));
                    }
                    Some(old) if current.as_deref() == Some(old.as_str()) => {}
                    // A v1 manifest (bare names) carries no hash: adopt ours only when the
                    // copy is identical, otherwise treat it as changed by the user.
                    None if current.as_deref() == Some(bundled_hash.as_str()) => {
                        manifest.insert(name, Some(bundled_hash));
                    }
                    _ => report.kept.push(name),
                }
            }
        }
    }
    // Category descriptions: only added when missing.
    for (rel, text) in FILES.iter().filter(|(p, _)| p.ends_with("/DESCRIPTION.md")) {
        let path = skills_dir.join(rel);
        if !path.exists() && path.parent().is_some_and(Path::is_dir) {
            crate::util::atomic_write(&path, text.as_bytes())?;
        }
    }
    if manifest != before {
        write_manifest(&manifest_path, &manifest)?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_list_matches_the_repository_tree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
        let mut on_disk: Vec<String> = walkdir::WalkDir::new(&root)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                e.path()
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(listed, on_disk, "update bundled::FILES");
    }

    #[test]
    fn bundled_skills_parse_and_pass_the_guard() {
        let home = tempfile::tempdir().unwrap();
        let report = sync(home.path()).unwrap();
        assert_eq!(report.installed.len(), 4, "{report:?}");
        let scan = crate::skills::store::SkillStore::new(home.path()).scan();
        assert_eq!(scan.skills.len(), 4);
        assert!(scan.invalid.is_empty(), "{:?}", scan.invalid);
        for s in &scan.skills {
            crate::skills::skill::parse_strict(&s.content().unwrap()).unwrap();
            let findings = crate::skills::guard::scan_dir(&s.dir);
            assert_eq!(
                crate::skills::guard::verdict(&findings),
                crate::skills::guard::Verdict::Safe,
                "{}: {findings:?}",
                s.name
            );
        }
        assert!(
            home.path()
                .join("software-development/DESCRIPTION.md")
                .exists()
        );
    }

    #[test]
    fn user_changes_and_deletions_survive_a_resync() {
        let home = tempfile::tempdir().unwrap();
        sync(home.path()).unwrap();
        let git = home
            .path()
            .join("software-development/git-workflow/SKILL.md");
        std::fs::write(
            &git,
            "---\nname: git-workflow\ndescription: mine\n---\nmy way\n",
        )
        .unwrap();
        let debug = home.path().join("software-development/debugging-checklist");
        std::fs::remove_dir_all(&debug).unwrap();
        let report = sync(home.path()).unwrap();
        assert!(
            report.installed.is_empty() && report.updated.is_empty(),
            "{report:?}"
        );
        assert!(std::fs::read_to_string(&git).unwrap().contains("my way"));
        assert!(!debug.exists());
    }

    #[test]
    fn an_unchanged_old_copy_is_updated() {
        let home = tempfile::tempdir().unwrap();
        sync(home.path()).unwrap();
        // Pretend an older hermes installed a different version and recorded its hash.
        let dir = home.path().join("software-development/git-workflow");
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: git-workflow\ndescription: old\n---\nold\n",
        )
        .unwrap();
        let old_hash = hash_dir(&dir).unwrap();
        let manifest = home.path().join(BUNDLED_MANIFEST);
        let text = std::fs::read_to_string(&manifest).unwrap();
        let text: String = text
            .lines()
            .map(|l| {
                if l.starts_with("git-workflow:") {
                    format!("git-workflow:{old_hash}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&manifest, text).unwrap();
        let report = sync(home.path()).unwrap();
        assert_eq!(report.updated, ["git-workflow"]);
        assert!(
            std::fs::read_to_string(dir.join("SKILL.md"))
                .unwrap()
                .contains("Git workflow")
        );
    }

    #[test]
    fn opt_out_marker_skips_everything() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(OPT_OUT_MARKER), "").unwrap();
        assert_eq!(sync(home.path()).unwrap(), SyncReport::default());
        assert!(!home.path().join(BUNDLED_MANIFEST).exists());
    }
}
