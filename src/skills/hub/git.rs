//! Git repositories as skill sources, through git2: any URL libgit2 can fetch (https, `file://`,
//! a local path). Each repository is mirrored bare under `skills/.hub/repos/<hash>.git` and
//! fetched again when a command needs fresh data; files are read straight from git's objects
//! (no checkout), so a symlink is seen as a link (mode 120000) and refused, a file's size is
//! known before its bytes are read, and nothing from the repository touches the filesystem
//! before the guard has scanned it in quarantine.

use std::path::PathBuf;
use std::time::Duration;

use git2::{Commit, ObjectType, Oid, Repository, Tree};
use sha2::{Digest, Sha256};

use super::bundle::Bundle;
use super::{Hub, HubError};
use crate::skills::skill;
use crate::util::file_lock::FileLock;

/// How deep below a tap's folder a SKILL.md is looked for.
const MAX_LIST_DEPTH: usize = 5;
/// Two processes fetching into one mirror wait for each other at most this long.
const MIRROR_LOCK_TIMEOUT: Duration = Duration::from_secs(120);
const HEAD_REF: &str = "refs/remotes/origin/HEAD";

fn git_err(what: &'static str, target: &str, e: git2::Error) -> HubError {
    HubError::Git {
        what,
        target: target.to_string(),
        message: e.message().to_string(),
    }
}

/// A fetched mirror of one repository.
pub struct Mirror {
    pub repo: Repository,
    pub url: String,
}

fn mirror_path(hub: &Hub, url: &str) -> PathBuf {
    let digest = Sha256::digest(url.as_bytes());
    let key: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    hub.repos_dir().join(format!("{key}.git"))
}

/// Opens the mirror of `url`, creating it, and fetches every branch and tag when `fetch` is
/// true (or the mirror is new).
pub fn mirror(hub: &Hub, url: &str, fetch: bool) -> Result<Mirror, HubError> {
    hub.ensure_dirs()?;
    let path = mirror_path(hub, url);
    let lock_path = path.with_extension("lock");
    let _lock = FileLock::acquire(&lock_path, MIRROR_LOCK_TIMEOUT)
        .map_err(|e| HubError::Lock(format!("the mirror of {url} is busy: {e}")))?;
    let fresh = !path.exists();
    let repo = if fresh {
        Repository::init_bare(&path).map_err(|e| git_err("create a mirror for", url, e))?
    } else {
        Repository::open_bare(&path).map_err(|e| git_err("open the mirror of", url, e))?
    };
    if (fresh || fetch)
        && let Err(e) = fetch_all(&repo, url)
    {
        if fresh {
            drop(repo);
            let _ = std::fs::remove_dir_all(&path);
        }
        return Err(e);
    }
    Ok(Mirror {
        repo,
        url: url.to_string(),
    })
}

fn fetch_all(repo: &Repository, url: &str) -> Result<(), HubError> {
    let mut remote = repo
        .remote_anonymous(url)
        .map_err(|e| git_err("read", url, e))?;
    // The proxy the user set for git and HTTP (`http.proxy`, `https_proxy`), like the HTTP
    // index sources (reqwest reads the same variables).
    let proxy = || {
        let mut p = git2::ProxyOptions::new();
        p.auto();
        p
    };
    remote
        .connect_auth(git2::Direction::Fetch, None, Some(proxy()))
        .map_err(|e| git_err("connect to", url, e))?;
    let default = remote
        .default_branch()
        .ok()
        .and_then(|b| b.as_str().map(str::to_string));
    remote
        .disconnect()
        .map_err(|e| git_err("disconnect from", url, e))?;
    let mut options = git2::FetchOptions::new();
    options.download_tags(git2::AutotagOption::All);
    options.proxy_options(proxy());
    remote
        .fetch(
            &[
                "+refs/heads/*:refs/remotes/origin/*",
                "+refs/tags/*:refs/tags/*",
            ],
            Some(&mut options),
            None,
        )
        .map_err(|e| git_err("fetch", url, e))?;
    if let Some(branch) = default.and_then(|b| b.strip_prefix("refs/heads/").map(str::to_string)) {
        repo.reference_symbolic(
            HEAD_REF,
            &format!("refs/remotes/origin/{branch}"),
            true,
            "default branch",
        )
        .map_err(|e| git_err("record the default branch of", url, e))?;
    }
    Ok(())
}

impl Mirror {
    /// The commit for `rev` (a branch, a tag or a commit id), or the default branch's tip.
    pub fn resolve(&self, rev: Option<&str>) -> Result<Commit<'_>, HubError> {
        let object = match rev {
            None => self
                .repo
                .revparse_single(HEAD_REF)
                .or_else(|_| self.repo.revparse_single("refs/remotes/origin/main"))
                .or_else(|_| self.repo.revparse_single("refs/remotes/origin/master"))
                .map_err(|_| {
                    HubError::NotFound(format!(
                        "{} has no default branch (is it an empty repository?)",
                        self.url
                    ))
                })?,
            Some(rev) => [
                format!("refs/tags/{rev}"),
                format!("refs/remotes/origin/{rev}"),
                rev.to_string(),
            ]
            .iter()
            .find_map(|r| self.repo.revparse_single(r).ok())
            .ok_or_else(|| {
                HubError::NotFound(format!("{} has no branch, tag or commit `{rev}`", self.url))
            })?,
        };
        object
            .peel_to_commit()
            .map_err(|e| git_err("read the commit of", &self.url, e))
    }

    /// The tree at `subpath` of `commit` ("" = the root).
    fn subtree<'r>(&'r self, commit: &Commit<'r>, subpath: &str) -> Result<Tree<'r>, HubError> {
        let root = commit
            .tree()
            .map_err(|e| git_err("read the tree of", &self.url, e))?;
        if subpath.is_empty() {
            return Ok(root);
        }
        let entry = root.get_path(std::path::Path::new(subpath)).map_err(|_| {
            HubError::NotFound(format!(
                "{} has no folder `{subpath}` at commit {}",
                self.url,
                short(commit.id())
            ))
        })?;
        self.repo
            .find_tree(entry.id())
            .map_err(|_| HubError::NotFound(format!("`{subpath}` in {} is not a folder", self.url)))
    }

    /// Reads the skill folder `subpath` at `commit` into `bundle` (every rule checked).
    pub fn read_into(
        &self,
        commit: &Commit<'_>,
        subpath: &str,
        bundle: &mut Bundle,
    ) -> Result<(), HubError> {
        let tree = self.subtree(commit, subpath)?;
        self.collect(&tree, "", bundle);
        Ok(())
    }

    fn collect(&self, tree: &Tree<'_>, prefix: &str, bundle: &mut Bundle) {
        for entry in tree.iter() {
            let Some(name) = entry.name() else {
                bundle.refuse(format!("a file name in `{prefix}` is not valid UTF-8"));
                continue;
            };
            let rel = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            };
            match entry.filemode() {
                0o040000 => match self.repo.find_tree(entry.id()) {
                    Ok(sub) => self.collect(&sub, &rel, bundle),
                    Err(e) => bundle.refuse(format!("cannot read folder `{rel}`: {}", e.message())),
                },
                0o120000 => {
                    let target = self
                        .repo
                        .find_blob(entry.id())
                        .map(|b| String::from_utf8_lossy(b.content()).into_owned())
                        .unwrap_or_default();
                    bundle.refuse(format!(
                        "`{rel}` is a symlink (to {target}); hub skills may not contain links"
                    ));
                }
                0o160000 => bundle.refuse(format!(
                    "`{rel}` is a git submodule; hub skills must hold their own files"
                )),
                _ => {
                    let size = self
                        .repo
                        .odb()
                        .and_then(|odb| odb.read_header(entry.id()))
                        .map(|(size, _)| size as u64);
                    match size {
                        Ok(size) if bundle.admit(&rel, size) => {
                            match self.repo.find_blob(entry.id()) {
                                Ok(blob) => bundle.add(&rel, blob.content().to_vec()),
                                Err(e) => {
                                    bundle.refuse(format!("cannot read `{rel}`: {}", e.message()))
                                }
                            }
                        }
                        Ok(_) => {}
                        Err(e) => bundle.refuse(format!("cannot read `{rel}`: {}", e.message())),
                    }
                }
            }
        }
    }

    /// Every skill folder below `base` at `commit`: (sub-path, SKILL.md text). Folders whose
    /// names start with `.` or `_` are skipped (as Python Hermes does), and so are a skill's
    /// own support folders.
    pub fn list_skills(
        &self,
        commit: &Commit<'_>,
        base: &str,
    ) -> Result<Vec<(String, String)>, HubError> {
        let tree = self.subtree(commit, base)?;
        let mut out = Vec::new();
        self.walk_for_skills(&tree, base, 0, &mut out);
        Ok(out)
    }

    fn walk_for_skills(
        &self,
        tree: &Tree<'_>,
        path: &str,
        depth: usize,
        out: &mut Vec<(String, String)>,
    ) {
        if let Some(entry) = tree.get_name("SKILL.md")
            && entry.kind() == Some(ObjectType::Blob)
            && let Ok(blob) = self.repo.find_blob(entry.id())
            && blob.size() as u64 <= super::bundle::MAX_FILE_BYTES
        {
            out.push((
                path.to_string(),
                String::from_utf8_lossy(blob.content()).into_owned(),
            ));
        }
        if depth >= MAX_LIST_DEPTH {
            return;
        }
        for entry in tree.iter() {
            let Some(name) = entry.name() else { continue };
            if entry.kind() != Some(ObjectType::Tree)
                || name.starts_with('.')
                || name.starts_with('_')
                || super::bundle::SUPPORT_DIRS.contains(&name)
            {
                continue;
            }
            if let Ok(sub) = self.repo.find_tree(entry.id()) {
                let child = if path.is_empty() {
                    name.to_string()
                } else {
                    format!("{path}/{name}")
                };
                self.walk_for_skills(&sub, &child, depth + 1, out);
            }
        }
    }
}

/// The first 12 hex digits of a commit id.
pub fn short(id: Oid) -> String {
    id.to_string().chars().take(12).collect()
}

/// Name, description and tags from a SKILL.md (lenient: listings show what they can).
pub fn summary(text: &str) -> Option<(Option<String>, String, Vec<String>)> {
    let doc = skill::parse_lenient(text).ok()?;
    let fm = doc.frontmatter;
    Some((fm.name, fm.description.unwrap_or_default(), fm.tags))
}
