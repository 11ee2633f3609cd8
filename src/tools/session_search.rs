//! The `session_search` tool: finds and reads past conversations in state.db. The mode follows
//! from the arguments: `session_id` + `around_message_id` → scroll, `session_id` → read, no
//! `query` → browse recent conversations, `query` → discover. The caller's own conversation
//! is never a result. The logic lives in `sessions::search`; this file is the model's interface.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::sessions::search::{self, DiscoverOptions};
use crate::tools::registry::{ToolContext, ToolError, TypedTool};

pub mod summary;

/// Roles a `role_filter` may name.
const ROLES: [&str; 4] = ["user", "assistant", "tool", "system"];

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionSearchArgs {
    /// Words to find in past conversations; omit to list recent ones.
    #[serde(default)]
    pub query: Option<String>,
    /// A session to read (from a result).
    #[serde(default)]
    pub session_id: Option<String>,
    /// With session_id: show only the messages around this message id.
    #[serde(default)]
    pub around_message_id: Option<i64>,
    /// Conversations to return (query: 1-10, default 3; listing: default 10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Messages shown around a hit (default 8) or on each side of around_message_id (default 5).
    #[serde(default)]
    pub window: Option<usize>,
    /// Only match these roles, comma-separated (user,assistant,tool); default all.
    #[serde(default)]
    pub role_filter: Option<String>,
    /// newest or oldest; default by relevance.
    #[serde(default)]
    pub sort: Option<String>,
}

pub struct SessionSearch;

/// The conversation the caller is in (a background fork searches as its parent).
fn current_session(ctx: &ToolContext) -> Option<String> {
    let id = ctx.session_id.trim();
    let id = id.strip_suffix("-fork").unwrap_or(id);
    (!id.is_empty()).then(|| id.to_string())
}

fn roles(filter: Option<&str>) -> Result<Vec<String>, ToolError> {
    let Some(filter) = filter else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for r in filter.split(',').map(|r| r.trim().to_ascii_lowercase()) {
        if r.is_empty() {
            continue;
        }
        if !ROLES.contains(&r.as_str()) {
            return Err(ToolError::Respond(format!(
                "unknown role {r:?} in role_filter; use any of {}",
                ROLES.join(", ")
            )));
        }
        out.push(r);
    }
    Ok(out)
}

fn run_blocking(args: SessionSearchArgs, ctx: &ToolContext) -> Result<Value, ToolError> {
    let path = ctx.config.home.state_db();
    if !path.exists() {
        return Ok(
            json!({"success": true, "results": [], "count": 0, "note": "no conversations are stored yet"}),
        );
    }
    let conn = search::open_read(&path).map_err(|e| {
        ToolError::Respond(format!("cannot open {} for searching: {e}", path.display()))
    })?;
    let fail = |e: rusqlite::Error| ToolError::Respond(format!("the search failed: {e}"));
    let current = current_session(ctx);
    let session_id = args
        .session_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    if let Some(id) = session_id {
        let found = match args.around_message_id {
            Some(around) => search::scroll(&conn, id, around, args.window.unwrap_or(5))
                .map_err(fail)?
                .map(|s| {
                    let mut v = json!({"success": true, "mode": "scroll"});
                    merge(&mut v, json!(s));
                    v
                }),
            None => search::read(&conn, id).map_err(fail)?.map(|s| {
                let mut v = json!({"success": true, "mode": "read"});
                merge(&mut v, json!(s));
                v
            }),
        };
        return found.ok_or_else(|| {
            ToolError::Respond(format!(
                "no session {id:?}; use an id from a search result or run session_search without arguments to list recent ones"
            ))
        });
    }
    match args
        .query
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    {
        None => {
            let list = search::browse(&conn, args.limit.unwrap_or(10), current.as_deref())
                .map_err(fail)?;
            Ok(json!({"success": true, "mode": "browse", "count": list.len(), "sessions": list}))
        }
        Some(query) => {
            let opts = DiscoverOptions {
                limit: args.limit.unwrap_or(3),
                window: args.window.unwrap_or(8).min(40),
                roles: roles(args.role_filter.as_deref())?,
                current_session: current,
                sort: args.sort.clone(),
            };
            let found = search::discover(&conn, query, &opts).map_err(fail)?;
            let mut v = json!({"success": true, "mode": "discover"});
            merge(&mut v, json!(found));
            Ok(v)
        }
    }
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, from) {
        a.extend(b);
    }
}

impl TypedTool for SessionSearch {
    type Args = SessionSearchArgs;
    const NAME: &'static str = "session_search";
    const TOOLSET: &'static str = "session_search";
    const DESCRIPTION: &'static str = "Search past conversations (full text, any language). query → best matching conversations with the messages around each hit; no arguments → recent conversations; session_id → read one; session_id + around_message_id → the messages around one.";
    const READ_ONLY: bool = true;

    async fn run(&self, args: SessionSearchArgs, ctx: &ToolContext) -> Result<String, ToolError> {
        let ctx2 = ctx.clone();
        let query = args.query.clone().unwrap_or_default();
        let mut value = tokio::task::spawn_blocking(move || run_blocking(args, &ctx2))
            .await
            .map_err(|e| ToolError::Respond(format!("the search did not finish: {e}")))??;
        // Optional: an auxiliary model condenses the hits (off unless configured).
        if value["mode"] == "discover"
            && value["count"].as_u64().unwrap_or(0) > 0
            && let Some(sc) = summary::config(&ctx.config)
        {
            match summary::summarize(&ctx.config, &sc, &query, &value["results"]).await {
                Ok(text) => value["summary"] = Value::String(text),
                Err(e) => {
                    tracing::warn!(error = %e, "session_search summary failed");
                    value["summary_error"] = Value::String(e);
                }
            }
        }
        Ok(value.to_string())
    }
}

crate::register_tool!(SessionSearch);

#[cfg(test)]
mod tests {
    use crate::llm::Message;
    use crate::sessions::{NewSession, SessionStore};
    use crate::tools::test_support::env;
    use serde_json::json;

    fn seed(t: &crate::tools::test_support::TestEnv) {
        let store = SessionStore::open(&t.ctx.config.home.state_db()).unwrap();
        for (id, text) in [
            ("past", "the wombat migration finished"),
            ("test-session", "wombat talk in the current session"),
        ] {
            store
                .create_session(&NewSession {
                    id: id.into(),
                    source: "cli".into(),
                    ..NewSession::default()
                })
                .unwrap();
            store.append_message(id, &Message::user(text)).unwrap();
        }
    }

    #[tokio::test]
    async fn modes_and_current_session_exclusion() {
        let t = env();
        let out = t.ok("session_search", json!({"query": "wombat"})).await;
        assert!(out.contains("no conversations"), "{out}");
        seed(&t);
        let v: serde_json::Value =
            serde_json::from_str(&t.ok("session_search", json!({"query": "wombat"})).await)
                .unwrap();
        assert_eq!(v["mode"], "discover");
        assert_eq!(v["count"], 1, "{v}");
        assert_eq!(v["results"][0]["session_id"], "past");
        let v: serde_json::Value =
            serde_json::from_str(&t.ok("session_search", json!({})).await).unwrap();
        assert_eq!(v["mode"], "browse");
        assert_eq!(v["count"], 1);
        let v: serde_json::Value =
            serde_json::from_str(&t.ok("session_search", json!({"session_id": "past"})).await)
                .unwrap();
        assert_eq!(v["mode"], "read");
        assert_eq!(v["messages"][0]["content"], "the wombat migration finished");
        let err = t
            .err("session_search", json!({"session_id": "missing"}))
            .await;
        assert!(err.contains("no session"), "{err}");
        let err = t
            .err(
                "session_search",
                json!({"query": "x", "role_filter": "boss"}),
            )
            .await;
        assert!(err.contains("unknown role"), "{err}");
    }

    #[tokio::test]
    async fn fts_syntax_never_reaches_the_model_as_an_error() {
        let t = env();
        seed(&t);
        for q in ["\"foo AND (", "*", "NEAR", "wombat OR", "col:wombat", "((("] {
            let out = t.call("session_search", json!({"query": q})).await;
            assert!(!out.is_error, "{q}: {}", out.content);
        }
    }
}
