//! Line edits of config.yaml's top-level `model:` block for `hermes setup` and `hermes model`:
//! only the lines of the keys set or removed change, so the user's comments, other keys and key
//! order stay. (The general `hermes config set` editor lives with the config commands; this one
//! knows one block and nothing else.) Writes are atomic: a temp file in the same directory, then
//! a rename.

use std::path::Path;

/// `model:` with a scalar (`model: gpt-4o`) becomes a block keeping that name as `default`.
fn blockify(lines: &mut Vec<String>, at: usize) {
    let value = lines[at]["model:".len()..].trim().to_string();
    lines[at] = "model:".to_string();
    let value = strip_comment(&value);
    if value.starts_with('{') {
        // A flow mapping (`model: {provider: x, default: y}`): one line per key.
        if let Ok(serde_json::Value::Object(map)) =
            serde_saphyr::from_str::<serde_json::Value>(&value)
        {
            for (i, (key, v)) in map.iter().enumerate() {
                let text = match v {
                    serde_json::Value::String(s) => quote(s),
                    other => other.to_string(),
                };
                lines.insert(at + 1 + i, format!("  {key}: {text}"));
            }
        }
    } else if !value.is_empty() && value != "null" && value != "~" {
        lines.insert(at + 1, format!("  default: {value}"));
    }
}

fn strip_comment(value: &str) -> String {
    match value.find(" #") {
        Some(i) if !value.starts_with(['"', '\'']) => value[..i].trim().to_string(),
        _ => value.to_string(),
    }
}

/// Index of the top-level `model:` line and the end (exclusive) of its block.
fn block(lines: &[String]) -> Option<(usize, usize)> {
    let start = lines
        .iter()
        .position(|l| l == "model:" || l.starts_with("model:"))?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let t = l.trim_start();
            !t.is_empty() && l.len() == t.len()
        })
        .map_or(lines.len(), |i| start + 1 + i);
    Some((start, end))
}

/// The line of `key` directly inside the block, and the block's indentation.
fn find_key(lines: &[String], start: usize, end: usize, key: &str) -> (Option<usize>, String) {
    let indent = lines[start + 1..end]
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| l[..l.len() - l.trim_start().len()].to_string())
        .unwrap_or_else(|| "  ".to_string());
    let prefix = format!("{indent}{key}:");
    let at = (start + 1..end).find(|&i| {
        lines[i].starts_with(&prefix) && {
            let rest = &lines[i][prefix.len()..];
            rest.is_empty() || rest.starts_with(' ')
        }
    });
    (at, indent)
}

/// Sets `model.<key>` to `value` (a plain string, quoted as YAML needs) and removes each of
/// `remove`; returns the new text.
pub fn edit(text: &str, set: &[(&str, &str)], remove: &[&str]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if block(&lines).is_none() {
        if lines.last().is_some_and(|l| !l.trim().is_empty()) {
            lines.push(String::new());
        }
        lines.push("model:".to_string());
    }
    if let Some((start, _)) = block(&lines)
        && lines[start].trim_end() != "model:"
        && !lines[start]["model:".len()..].trim_start().starts_with('#')
    {
        blockify(&mut lines, start);
    }
    for key in remove {
        if let Some((start, end)) = block(&lines)
            && let (Some(at), _) = find_key(&lines, start, end, key)
        {
            lines.remove(at);
        }
    }
    for (key, value) in set {
        let Some((start, end)) = block(&lines) else {
            continue;
        };
        let (at, indent) = find_key(&lines, start, end, key);
        let line = format!("{indent}{key}: {}", quote(value));
        match at {
            Some(i) => lines[i] = line,
            None => lines.insert(start + 1, line),
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// A YAML scalar for `value`: plain when that reads back as the same string, else a JSON
/// (double-quoted, valid YAML) string.
fn quote(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@+".contains(c))
        && !value.starts_with(['-', ':', '@'])
        && !value.contains(": ")
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~"
        )
        && value.parse::<f64>().is_err();
    if plain {
        value.to_string()
    } else {
        serde_json::Value::String(value.to_string()).to_string()
    }
}

/// Reads `path` (missing = empty), applies [`edit`], writes it back atomically.
pub fn edit_file(path: &Path, set: &[(&str, &str)], remove: &[&str]) -> std::io::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    write_atomic(path, &edit(&text, set, remove), None)
}

/// Writes `text` to a temp file beside `path` (with `mode`, if given, from its creation) and
/// renames it over `path`, so a crash leaves the old file or the new one, never half of one.
pub fn write_atomic(path: &Path, text: &str, mode: Option<u32>) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    if let Some(mode) = mode {
        options.mode(mode);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_in_place_and_comments_stay() {
        let text = "# my config\nmodel:\n  # the one I like\n  default: old-model\n  provider: custom\n  api_key: sk-x\n\nagent:\n  max_turns: 7  # keep\n";
        let out = edit(
            text,
            &[
                ("default", "new-model"),
                ("base_url", "http://127.0.0.1:8080/v1"),
            ],
            &["api_key"],
        );
        assert_eq!(
            out,
            "# my config\nmodel:\n  base_url: http://127.0.0.1:8080/v1\n  # the one I like\n  default: new-model\n  provider: custom\n\nagent:\n  max_turns: 7  # keep\n"
        );
    }

    #[test]
    fn scalar_model_and_missing_model_become_blocks() {
        assert_eq!(
            edit("model: gpt-4o\n", &[("provider", "openai")], &[]),
            "model:\n  provider: openai\n  default: gpt-4o\n"
        );
        assert_eq!(
            edit("agent:\n  max_turns: 3\n", &[("default", "m")], &[]),
            "agent:\n  max_turns: 3\n\nmodel:\n  default: m\n"
        );
        assert_eq!(edit("", &[("default", "m")], &[]), "model:\n  default: m\n");
        assert_eq!(
            edit(
                "model: {provider: custom, default: a}\n",
                &[("default", "b")],
                &[]
            ),
            // The flow mapping's keys keep the user's order (serde_json's `preserve_order`,
            // which the MCP/ACP dependencies switch on for the whole build).
            "model:\n  provider: custom\n  default: b\n"
        );
    }

    #[test]
    fn values_that_yaml_would_misread_are_quoted() {
        assert_eq!(quote("anthropic/claude-3.5"), "anthropic/claude-3.5");
        assert_eq!(quote("yes"), "\"yes\"");
        assert_eq!(quote("1.5"), "\"1.5\"");
        assert_eq!(quote("a: b"), "\"a: b\"");
        assert_eq!(quote("qwen2.5:7b"), "qwen2.5:7b");
        assert_eq!(quote("#x"), "\"#x\"");
    }
}
