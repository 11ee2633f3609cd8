//! Helpers shared by the file tools (`read_file`, `write_file`, `patch`, `search_files`): running
//! blocking file work off the async runtime, binary detection, text similarity, and error
//! messages that help the model recover (similar names for a missing file, a directory listing).

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::Path;

use crate::tools::registry::ToolError;

/// How many leading bytes are inspected to decide whether a file is binary.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Runs blocking file-system work on tokio's blocking pool so the async runtime stays responsive.
pub async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) => Err(ToolError::Respond(format!(
            "the tool stopped unexpectedly ({e}); try again, or use the terminal tool instead"
        ))),
    }
}

/// A file is treated as binary when a NUL byte appears in its first 8 KiB (what git and grep do).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// Reads one line into `out`, keeping at most `keep` bytes of it (the rest is skipped without
/// being stored). Returns the full line length without the newline, or `None` at end of file.
pub fn read_line_capped<R: BufRead>(
    reader: &mut R,
    out: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<Option<usize>> {
    out.clear();
    let mut total = 0usize;
    let mut started = false;
    loop {
        let (used, finished) = {
            let available = match reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(started.then_some(total));
            }
            started = true;
            let newline = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..newline.unwrap_or(available.len())];
            let room = keep.saturating_sub(out.len());
            out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            total += chunk.len();
            match newline {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            }
        };
        reader.consume(used);
        if finished {
            return Ok(Some(total));
        }
    }
}

/// Similarity of two strings in `0.0..=1.0` (Dice coefficient over character bigrams).
/// Cheap (linear in the lengths), good enough to rank near-misses of names and lines.
pub fn similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    dice(&bigrams(a, usize::MAX), &bigrams(b, usize::MAX))
}

/// Sorted character bigrams of the first `max_chars` chars of `s`, each packed in a `u64`.
/// Start and end markers make short strings comparable too (`}` vs `{` differ).
pub fn bigrams(s: &str, max_chars: usize) -> Vec<u64> {
    const EDGE: u64 = 0x11_0000; // outside the char range
    let mut out = Vec::with_capacity(s.len().min(max_chars) + 1);
    let mut prev = EDGE;
    for c in s.chars().take(max_chars) {
        out.push((prev << 32) | u64::from(c));
        prev = u64::from(c);
    }
    out.push((prev << 32) | EDGE);
    out.sort_unstable();
    out
}

/// Dice coefficient of two sorted bigram multisets (from [`bigrams`]).
pub fn dice(x: &[u64], y: &[u64]) -> f64 {
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (2 * common) as f64 / (x.len() + y.len()) as f64
}

/// The error for a path that does not exist: names similar entries of its directory, or says
/// which parent directory is missing.
pub fn missing_path_message(path: &Path, shown: &str) -> String {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let Some(parent) = parent else {
        return format!("{shown} does not exist");
    };
    if !parent.is_dir() {
        let mut ancestor = parent;
        while let Some(up) = ancestor.parent() {
            if up.is_dir() {
                return format!(
                    "{shown} does not exist: directory {} does not exist (nearest existing directory: {})",
                    parent.display(),
                    up.display()
                );
            }
            ancestor = up;
        }
        return format!(
            "{shown} does not exist: directory {} does not exist",
            parent.display()
        );
    }
    let wanted = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut scored: Vec<(f64, String)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(parent) {
        for entry in entries.flatten().take(10_000) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let lower = name.to_lowercase();
            let score = if lower == wanted {
                1.0
            } else if !wanted.is_empty()
                && (lower.starts_with(&wanted) || wanted.starts_with(&lower))
            {
                0.8
            } else {
                similarity(&lower, &wanted)
            };
            if score >= 0.5 {
                scored.push((score, name));
            }
        }
    }
    // Best first; ties by name so the message is stable.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    if scored.is_empty() {
        return format!(
            "{shown} does not exist and nothing in {} has a similar name; use search_files with target=files to find it",
            parent.display()
        );
    }
    let names: Vec<String> = scored
        .into_iter()
        .take(5)
        .map(|(_, name)| parent.join(name).display().to_string())
        .collect();
    format!(
        "{shown} does not exist. Did you mean: {}?",
        names.join(", ")
    )
}

/// The error for a path that is a directory when a file was expected: lists a few entries.
pub fn directory_message(path: &Path, shown: &str, what_to_do: &str) -> String {
    const SHOWN_ENTRIES: usize = 20;
    let mut names = BTreeSet::new();
    let mut total = 0usize;
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            total += 1;
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            names.insert(name);
        }
    }
    let listed: Vec<String> = names.into_iter().take(SHOWN_ENTRIES).collect();
    let more = if total > listed.len() {
        format!(" (and {} more)", total - listed.len())
    } else {
        String::new()
    };
    if listed.is_empty() {
        format!("{shown} is an empty directory, not a file; {what_to_do}")
    } else {
        format!(
            "{shown} is a directory, not a file; {what_to_do}. It contains: {}{more}",
            listed.join(", ")
        )
    }
}

/// Maps an I/O error on `shown` to a message for the model.
pub fn io_message(action: &str, shown: &str, err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot {action} {shown}: permission denied; choose another path")
        }
        _ => format!("cannot {action} {shown}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn similarity_ranks_near_misses() {
        assert_eq!(similarity("abc", "abc"), 1.0);
        assert!(similarity("config.rs", "confg.rs") > 0.6);
        assert!(similarity("config.rs", "zzzz") < 0.1);
        assert_eq!(similarity("}", "{"), 0.0);
        assert_eq!(similarity("", ""), 1.0);
    }

    #[test]
    fn binary_sniff_looks_at_first_8k_only() {
        assert!(looks_binary(b"ab\0cd"));
        assert!(!looks_binary(b"plain text"));
        let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
        late.push(0);
        assert!(!looks_binary(&late));
    }

    #[test]
    fn missing_file_suggests_similar_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.yaml"), "x").unwrap();
        std::fs::write(dir.path().join("unrelated.bin"), "x").unwrap();
        let msg = missing_path_message(&dir.path().join("confg.yaml"), "confg.yaml");
        assert!(msg.contains("Did you mean"), "{msg}");
        assert!(msg.contains("config.yaml"), "{msg}");
        assert!(!msg.contains("unrelated"), "{msg}");
        let msg = missing_path_message(&dir.path().join("nope/deeper/x.txt"), "x.txt");
        assert!(msg.contains("does not exist"), "{msg}");
        assert!(msg.contains("nearest existing directory"), "{msg}");
    }

    #[test]
    fn directory_message_lists_entries() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        let msg = directory_message(dir.path(), "d", "pick a file");
        assert!(msg.contains("a.txt") && msg.contains("sub/"), "{msg}");
    }
}
