//! The local checks of `hermes doctor`: config, permissions of the home and secret files,
//! state.db integrity and its search index, skills that fail to parse, gateway settings, disk
//! space. Each returns one `Check`; a repair (`--fix`) is only ever a safe one and is recorded.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Check, Status};
use crate::config::Config;

/// Free space below this fails (state.db writes would start failing); below `DISK_WARN` warns.
const DISK_FAIL_BYTES: u64 = 100 * 1024 * 1024;
const DISK_WARN_BYTES: u64 = 1024 * 1024 * 1024;

/// The search indexes kept beside `messages` (see `sessions::schema`).
const FTS_TABLES: [&str; 2] = ["messages_fts", "messages_fts_trigram"];

/// The index triggers; `sessions::schema::reconcile` re-creates missing ones and then re-fills
/// the indexes.
use crate::sessions::schema::FTS_TRIGGERS;

pub fn config(config: &Config, error: Option<String>) -> Check {
    let path = config.home.config_path();
    match error {
        Some(e) => Check::new("config", Status::Fail, "config.yaml does not load")
            .with_details(vec![e, "fix it, or `hermes setup` writes a new one".into()]),
        None if !path.exists() => Check::new(
            "config",
            Status::Info,
            "no config.yaml yet: defaults apply (`hermes setup` writes one)",
        ),
        None => Check::new("config", Status::Ok, format!("{} is valid", path.display()))
            .with_details(
                config
                    .unsupported_warning()
                    .map(|w| w.replacen("config.yaml: ", "accepted, no effect: ", 1))
                    .into_iter()
                    .chain(
                        config
                            .python_defaults_warning()
                            .map(|w| w.replacen("config.yaml: ", "", 1)),
                    )
                    .collect(),
            ),
    }
}

fn mode_of(path: &Path) -> Option<u32> {
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o777)
}

fn chmod(path: &Path, mode: u32) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// The home must not be writable by others; `.env` and `auth.json` (keys) readable by us only.
pub fn permissions(config: &Config, fix: bool, fixed: &mut Vec<String>) -> Check {
    let mut problems = Vec::new();
    let root = config.home.root();
    if let Some(mode) = mode_of(root)
        && mode & 0o022 != 0
    {
        let wanted = mode & !0o022;
        if fix && chmod(root, wanted).is_ok() {
            fixed.push(format!(
                "{}: mode {mode:04o} → {wanted:04o}",
                root.display()
            ));
        } else {
            problems.push(format!(
                "{} is writable by other users (mode {mode:04o})",
                root.display()
            ));
        }
    }
    for path in [config.home.env_path(), config.home.root().join("auth.json")] {
        let Some(mode) = mode_of(&path) else {
            continue;
        };
        if mode & 0o077 == 0 {
            continue;
        }
        if fix && chmod(&path, 0o600).is_ok() {
            fixed.push(format!("{}: mode {mode:04o} → 0600", path.display()));
        } else {
            problems.push(format!(
                "{} holds keys but is mode {mode:04o} (others can read it); it should be 0600",
                path.display()
            ));
        }
    }
    if problems.is_empty() {
        Check::new(
            "permissions",
            Status::Ok,
            "home not writable by others; .env and auth.json are 0600 (where present)",
        )
    } else {
        problems.push("`hermes doctor --fix` sets the modes".into());
        Check::new("permissions", Status::Warn, problems.remove(0)).with_details(problems)
    }
}

/// `PRAGMA quick_check`, and each search index holding one row per message and passing its own
/// `integrity-check`. `--fix` rebuilds the indexes (dropped, then re-created and re-filled from
/// `messages` by the store's own schema reconciliation, which works even when an index is too
/// damaged to be emptied row by row).
pub fn state_db(config: &Config, fix: bool, fixed: &mut Vec<String>) -> Check {
    let path = config.home.state_db();
    if !path.exists() {
        return Check::new(
            "state.db",
            Status::Info,
            "no state.db yet (created by the first conversation)",
        );
    }
    let conn = match rusqlite::Connection::open(&path) {
        Ok(c) => c,
        Err(e) => {
            return Check::new(
                "state.db",
                Status::Fail,
                format!("cannot open {}: {e}", path.display()),
            );
        }
    };
    let _ = conn.busy_timeout(std::time::Duration::from_secs(5));
    let quick: Vec<String> = conn
        .prepare("PRAGMA quick_check")
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_else(|e| vec![e.to_string()]);
    if quick != ["ok"] {
        let mut details: Vec<String> = quick.into_iter().take(5).collect();
        details.push(format!(
            "back up {} before anything else; `sqlite3 state.db .recover` may save the data",
            path.display()
        ));
        return Check::new("state.db", Status::Fail, "quick_check found damage")
            .with_details(details);
    }
    let problems = fts_problems(&conn);
    if problems.is_empty() {
        let messages: i64 = conn
            .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
            .unwrap_or(0);
        return Check::new(
            "state.db",
            Status::Ok,
            format!("quick_check ok; search index in step with {messages} messages"),
        );
    }
    if fix {
        drop(conn);
        match rebuild_fts(config) {
            Ok(()) => {
                fixed.push("state.db: search index rebuilt from the messages".into());
                let still = rusqlite::Connection::open(&path)
                    .map(|c| fts_problems(&c))
                    .unwrap_or_else(|e| vec![e.to_string()]);
                if still.is_empty() {
                    return Check::new(
                        "state.db",
                        Status::Ok,
                        "quick_check ok; search index rebuilt",
                    );
                }
                return Check::new("state.db", Status::Fail, "search index still inconsistent")
                    .with_details(still);
            }
            Err(e) => {
                return Check::new(
                    "state.db",
                    Status::Fail,
                    format!("cannot rebuild the search index: {e}"),
                )
                .with_details(problems);
            }
        }
    }
    let mut details = problems;
    details.push("`hermes doctor --fix` rebuilds it (messages are not touched)".into());
    Check::new(
        "state.db",
        Status::Fail,
        "search index out of step with the messages",
    )
    .with_details(details)
}

/// What is wrong with the search indexes (empty when nothing is). Databases older than schema
/// v11 keep Python's earlier index layout, which Python migrates itself: not checked.
fn fts_problems(conn: &rusqlite::Connection) -> Vec<String> {
    let version: i64 = conn
        .query_row("SELECT version FROM schema_version LIMIT 1", [], |r| {
            r.get(0)
        })
        .unwrap_or(0);
    if version < 11 {
        return Vec::new();
    }
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0));
    let messages = match count("SELECT COUNT(*) FROM messages") {
        Ok(n) => n,
        Err(e) => return vec![format!("cannot count messages: {e}")],
    };
    let mut problems = Vec::new();
    for table in FTS_TABLES {
        match count(&format!("SELECT COUNT(*) FROM {table}")) {
            Ok(n) if n != messages => problems.push(format!(
                "{table} holds {n} rows for {messages} messages (searches miss or invent hits)"
            )),
            Ok(_) => {}
            Err(e) => {
                problems.push(format!("{table} cannot be read: {e}"));
                continue;
            }
        }
        if let Err(e) = conn.execute(
            &format!("INSERT INTO {table}({table}) VALUES('integrity-check')"),
            [],
        ) {
            problems.push(format!("{table} fails its integrity check: {e}"));
        }
    }
    let triggers: i64 = count(&format!(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({})",
        FTS_TRIGGERS.map(|t| format!("'{t}'")).join(",")
    ))
    .unwrap_or(0);
    if triggers < FTS_TRIGGERS.len() as i64 {
        problems.push("index triggers are missing: new messages are not indexed".into());
    }
    problems
}

/// Drops both indexes and their triggers in one transaction, then opens the store, whose schema
/// reconciliation re-creates them and re-fills them from `messages`.
fn rebuild_fts(config: &Config) -> Result<(), String> {
    let path = config.home.state_db();
    let mut conn = rusqlite::Connection::open(&path).map_err(|e| e.to_string())?;
    let _ = conn.busy_timeout(std::time::Duration::from_secs(5));
    let tx = conn.transaction().map_err(|e| e.to_string())?;
    for trigger in FTS_TRIGGERS {
        tx.execute_batch(&format!("DROP TRIGGER IF EXISTS {trigger};"))
            .map_err(|e| e.to_string())?;
    }
    for table in FTS_TABLES {
        tx.execute_batch(&format!("DROP TABLE IF EXISTS {table};"))
            .map_err(|e| e.to_string())?;
    }
    tx.commit().map_err(|e| e.to_string())?;
    drop(conn);
    crate::sessions::SessionStore::open_with_timeout(&path, std::time::Duration::from_secs(5))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

pub fn skills(config: &Config) -> Check {
    let scan = crate::skills::store::SkillStore::from_config(config).scan();
    if scan.invalid.is_empty() {
        return Check::new(
            "skills",
            Status::Ok,
            format!("{} skills, all parse", scan.skills.len()),
        );
    }
    let details = scan
        .invalid
        .iter()
        .map(|s| format!("{}: {}", s.path.display(), s.error))
        .collect();
    Check::new(
        "skills",
        Status::Warn,
        format!(
            "{} skill(s) fail to parse and are not offered to the model",
            scan.invalid.len()
        ),
    )
    .with_details(details)
}

pub fn gateway(config: &Config) -> Check {
    match crate::gateway::configured(config, None) {
        Ok(platforms) => Check::new(
            "gateway",
            Status::Ok,
            format!("tokens present for: {}", platforms.names().join(", ")),
        ),
        Err(crate::gateway::GatewayError::NoPlatform(_)) => Check::new(
            "gateway",
            Status::Info,
            "no chat platform configured (TELEGRAM_BOT_TOKEN + TELEGRAM_ALLOWED_USERS, or API_SERVER_KEY, in .env)",
        ),
        Err(e) => Check::new("gateway", Status::Warn, e.to_string()),
    }
}

pub fn disk(config: &Config) -> Check {
    let Some(free) = free_bytes(config.home.root()) else {
        return Check::new("disk", Status::Info, "free space unknown");
    };
    let text = format!("{:.1} GB free", free as f64 / 1e9);
    if free < DISK_FAIL_BYTES {
        Check::new(
            "disk",
            Status::Fail,
            format!("{text}: state.db and logs will fail to write"),
        )
    } else if free < DISK_WARN_BYTES {
        Check::new("disk", Status::Warn, format!("{text}: running low"))
    } else {
        Check::new("disk", Status::Ok, text)
    }
}

fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a valid NUL-terminated path and `stat` is a properly sized out-parameter
    // that statvfs fills completely when it returns 0.
    let rc = unsafe { libc::statvfs(c.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: rc == 0, so statvfs initialised the struct.
    let stat = unsafe { stat.assume_init() };
    // The field types differ between platforms (u32 on some 32-bit targets).
    #[allow(clippy::useless_conversion)]
    let (blocks, size) = (u64::from(stat.f_bavail), u64::from(stat.f_frsize));
    Some(blocks.saturating_mul(size))
}
