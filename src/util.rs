//! Small helpers shared across subsystems: atomic file writes, text truncation, where a path
//! really points (`real_path`), the file lock
//! with a timeout (`file_lock`) and the off-runtime helper for blocking work (`offload`), and path map keys compared by
//! bytes (`path_key`).

pub mod file_lock;
pub mod offload;
pub mod path_key;
pub mod real_path;

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` via a temp file in the same directory + fsync + rename, so a crash
/// leaves either the old file or the new one, never a torn one. Keeps the old file's permissions.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_string());
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Cuts `text` to at most `max` chars on a char boundary.
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// Keeps the first 70% and last 20% of `max` chars of `text`, with a marker between.
pub fn head_tail(text: &str, max: usize, marker: &str) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head = max * 7 / 10;
    let tail = max * 2 / 10;
    let head_text: String = text.chars().take(head).collect();
    let tail_text: String = text.chars().skip(total - tail).collect();
    format!("{head_text}\n{marker}\n{tail_text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn truncation_respects_chars() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        let s = head_tail(&"x".repeat(100), 10, "[cut]");
        assert!(s.contains("[cut]"));
        assert!(s.len() < 30);
    }
}
