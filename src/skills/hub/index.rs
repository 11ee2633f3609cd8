//! HTTP skill indexes: `https://HOST/.well-known/skills/index.json` lists skills as
//! `{"skills": [{"name", "description", "files": [...]}]}` and serves each file at
//! `…/.well-known/skills/NAME/FILE` (Python Hermes's `well-known` source). The index is cached
//! under `skills/.hub/index-cache/` with Python's key (`well_known_index_<md5 of URL>.json`) and
//! TTL; file paths the index advertises pass the bundle rules before anything is downloaded.
//!
//! The hub is blocking code (git2 is); an HTTP request runs on a short-lived thread with its own
//! small runtime, so it works the same from a CLI command and from a tool's blocking task.

use std::time::{Duration, SystemTime};

use md5::{Digest, Md5};
use serde_json::{Value, json};

use super::bundle::{Bundle, MAX_FILE_BYTES};
use super::source::{SkillMeta, SourceRef, Trust, trust_name};
use super::{Hub, HubError};

/// An index document is at most this large.
const MAX_INDEX_BYTES: u64 = 16 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(20);

/// A parsed index.
#[derive(Debug, Clone)]
pub struct Index {
    pub index_url: String,
    pub base_url: String,
    pub skills: Vec<Value>,
}

/// `…/.well-known/skills/index.json` for a URL given as a host, a base or the index itself.
pub fn index_url_for(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    if url.ends_with("/index.json") {
        url.to_string()
    } else if let Some((host, _)) = url.split_once("/.well-known/skills") {
        format!("{host}/.well-known/skills/index.json")
    } else {
        format!("{url}/.well-known/skills/index.json")
    }
}

fn cache_path(hub: &Hub, index_url: &str) -> std::path::PathBuf {
    let digest = Md5::digest(index_url.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hub.cache_dir().join(format!("well_known_index_{hex}.json"))
}

/// The index at `index_url`, from the cache when it is younger than the TTL (or when the
/// network fails and a stale copy exists), else fetched.
pub fn load(hub: &Hub, index_url: &str, refresh: bool) -> Result<Index, HubError> {
    let cache = cache_path(hub, index_url);
    let cached = || -> Option<(Index, bool)> {
        let age = std::fs::metadata(&cache)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())?;
        let v: Value = serde_json::from_slice(&std::fs::read(&cache).ok()?).ok()?;
        let skills = v.get("skills")?.as_array()?.clone();
        Some((
            Index {
                index_url: index_url.to_string(),
                base_url: index_url.trim_end_matches("/index.json").to_string(),
                skills,
            },
            age <= hub.ttl,
        ))
    };
    if !refresh && let Some((index, true)) = cached() {
        return Ok(index);
    }
    let fetched = http_get(index_url, MAX_INDEX_BYTES).and_then(|bytes| {
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| HubError::Http {
            url: index_url.to_string(),
            message: format!("the index is not JSON: {e}"),
        })?;
        let skills = v
            .get("skills")
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| HubError::Http {
                url: index_url.to_string(),
                message: "the index has no `skills` list".into(),
            })?;
        Ok(Index {
            index_url: index_url.to_string(),
            base_url: index_url.trim_end_matches("/index.json").to_string(),
            skills,
        })
    });
    match fetched {
        Ok(index) => {
            hub.ensure_dirs()?;
            let doc = json!({"index_url": index.index_url, "base_url": index.base_url, "skills": index.skills});
            if let Err(e) = crate::util::atomic_write(&cache, doc.to_string().as_bytes()) {
                tracing::warn!(path = %cache.display(), error = %e, "cannot cache a skill index");
            }
            Ok(index)
        }
        Err(e) => match cached() {
            Some((index, _)) => {
                tracing::warn!(error = %e, "using a stale copy of a skill index");
                Ok(index)
            }
            None => Err(e),
        },
    }
}

impl Index {
    fn entry(&self, name: &str) -> Option<&Value> {
        self.skills
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
    }

    /// The index's entries as search results.
    pub fn listing(&self, trust: Trust) -> Vec<SkillMeta> {
        self.skills
            .iter()
            .filter_map(|e| {
                let name = e.get("name")?.as_str()?.to_string();
                if name.is_empty() || name.contains('/') {
                    return None;
                }
                let source = SourceRef::WellKnown {
                    base_url: self.base_url.clone(),
                    name: name.clone(),
                };
                Some(SkillMeta {
                    identifier: source.identifier(),
                    description: e
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    source: "well-known".into(),
                    trust_level: trust_name(trust).into(),
                    repo: Some(self.index_url.clone()),
                    path: Some(name.clone()),
                    tags: Vec::new(),
                    extra: json!({"index_url": self.index_url, "base_url": self.base_url,
                                  "files": e.get("files").cloned().unwrap_or(json!(["SKILL.md"]))}),
                    name,
                })
            })
            .collect()
    }
}

/// Downloads the skill `name` of the index at `base_url` (every advertised path checked first).
pub fn fetch(
    hub: &Hub,
    source: &SourceRef,
    trust: Trust,
    refresh: bool,
) -> Result<Bundle, HubError> {
    let SourceRef::WellKnown { base_url, name } = source else {
        return Err(HubError::NotFound("not an index skill".into()));
    };
    let index = load(hub, &format!("{base_url}/index.json"), refresh)?;
    let entry = index.entry(name).ok_or_else(|| {
        HubError::NotFound(format!(
            "the index {} has no skill `{name}`",
            index.index_url
        ))
    })?;
    let files: Vec<String> = match entry.get("files").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect(),
        _ => vec!["SKILL.md".to_string()],
    };
    let mut bundle = Bundle::new(source.clone(), trust, None);
    // Check every path before downloading any: one bad path refuses the whole skill.
    for rel in &files {
        bundle.admit(rel, 0);
    }
    let mut bundle = bundle.finish_paths()?;
    for rel in &files {
        match http_get(&format!("{base_url}/{name}/{rel}"), MAX_FILE_BYTES + 1) {
            Ok(bytes) => bundle.add(rel, bytes),
            Err(e) => bundle.refuse(format!("cannot download `{rel}`: {e}")),
        }
    }
    bundle.finish()
}

/// GET `url`, at most `max` bytes (more is an error, not a silent cut).
pub fn http_get(url: &str, max: u64) -> Result<Vec<u8>, HubError> {
    let err = |message: String| HubError::Http {
        url: url.to_string(),
        message,
    };
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(err("only http(s) URLs can be fetched".into()));
    }
    let owned = url.to_string();
    let work = move || -> Result<Vec<u8>, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start an HTTP runtime: {e}"))?;
        runtime.block_on(async move {
            let client = crate::llm::http::client_builder(Duration::from_secs(10))
                .timeout(TIMEOUT)
                .build()
                .map_err(|e| e.to_string())?;
            let mut response = client.get(&owned).send().await.map_err(|e| e.to_string())?;
            if !response.status().is_success() {
                return Err(format!("HTTP {}", response.status()));
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > max {
                    return Err(format!("the response is larger than {max} bytes"));
                }
            }
            Ok(body)
        })
    };
    std::thread::scope(|s| s.spawn(work).join())
        .map_err(|_| err("the download thread stopped".into()))?
        .map_err(err)
}
