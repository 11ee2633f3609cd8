//! The stat cache of one shadow repository (`<shadow>/hermes-stat-cache`): for every file of
//! the newest checkpoint, its size, times, inode and mode as seen when it was hashed, and its
//! blob id. A file whose stat still matches is not read again, so an unchanged tree costs one
//! walk of `lstat`s and no reads.
//!
//! Like git's index it must not trust a file modified within the file system's timestamp
//! granularity of the moment it was stat'ed ("racily clean"): such entries are hashed again.
//! The cache is only an accelerator: a missing, foreign or corrupt cache means every file is
//! hashed once more, never a wrong checkpoint.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::checkpoints::pack::RawOid;

pub const FILE: &str = "hermes-stat-cache";
const MAGIC: &[u8; 8] = b"HSTAT\0\0\x01";

/// What is compared to decide that a file did not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub mode: u32,
    pub size: u64,
    pub mtime: (i64, u32),
    pub ctime: (i64, u32),
    pub ino: u64,
    pub dev: u64,
}

impl Stat {
    pub fn of(m: &std::fs::Metadata) -> Self {
        Stat {
            mode: m.mode(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec().clamp(0, 999_999_999) as u32),
            ctime: (m.ctime(), m.ctime_nsec().clamp(0, 999_999_999) as u32),
            ino: m.ino(),
            dev: m.dev(),
        }
    }

    /// Whether a change could hide behind an identical stat: the file was modified within the
    /// timestamp granularity before `taken_ns` (when the cache's walk began). Timestamps with
    /// no sub-second part may come from a 1–2 s granularity file system.
    fn racy(&self, taken_ns: i128) -> bool {
        let newest = self.mtime.max(self.ctime);
        let ns = i128::from(newest.0) * 1_000_000_000 + i128::from(newest.1);
        let granularity: i128 = if newest.1 == 0 {
            2_000_000_000
        } else {
            50_000_000
        };
        ns + granularity >= taken_ns
    }
}

/// One cached file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub stat: Stat,
    pub id: RawOid,
}

/// The cache as loaded.
#[derive(Debug, Default)]
pub struct StatCache {
    /// The tree of the checkpoint these entries describe.
    pub tree: RawOid,
    /// When the walk that produced the entries began (ns since the epoch).
    pub taken_ns: i128,
    pub files: HashMap<Vec<u8>, Entry>,
}

impl StatCache {
    /// The blob id of `path` when its stat matches and is not racy.
    pub fn fresh(&self, path: &[u8], stat: &Stat) -> Option<RawOid> {
        let e = self.files.get(path)?;
        (e.stat == *stat && !stat.racy(self.taken_ns)).then_some(e.id)
    }

    /// Reads the cache of `shadow`; `None` when absent or unreadable.
    pub fn load(shadow: &Path) -> Option<Self> {
        let bytes = std::fs::read(shadow.join(FILE)).ok()?;
        parse(&bytes)
    }

    /// Writes the cache atomically (a failure only costs a re-hash next time).
    pub fn save(&self, shadow: &Path) -> std::io::Result<()> {
        let mut out = Vec::with_capacity(64 + self.files.len() * 96);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.tree);
        out.extend_from_slice(&self.taken_ns.to_le_bytes());
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        for (path, e) in &self.files {
            out.extend_from_slice(&(path.len() as u32).to_le_bytes());
            out.extend_from_slice(path);
            let s = &e.stat;
            out.extend_from_slice(&s.mode.to_le_bytes());
            out.extend_from_slice(&s.size.to_le_bytes());
            out.extend_from_slice(&s.mtime.0.to_le_bytes());
            out.extend_from_slice(&s.mtime.1.to_le_bytes());
            out.extend_from_slice(&s.ctime.0.to_le_bytes());
            out.extend_from_slice(&s.ctime.1.to_le_bytes());
            out.extend_from_slice(&s.ino.to_le_bytes());
            out.extend_from_slice(&s.dev.to_le_bytes());
            out.extend_from_slice(&e.id);
        }
        // Temp file + rename, no fsync: a cache lost in a crash costs one re-hash, while an
        // fsync of it cost ~25 ms of every checkpoint.
        let tmp = shadow.join(format!(
            "{FILE}.tmp-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::write(&tmp, &out)?;
        std::fs::rename(&tmp, shadow.join(FILE)).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

/// A bounds-checked reader over the cache bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn arr<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
    fn u32(&mut self) -> Option<u32> {
        self.arr().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.arr().map(u64::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.arr().map(i64::from_le_bytes)
    }
}

fn parse(bytes: &[u8]) -> Option<StatCache> {
    let mut r = Reader(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let tree = r.arr()?;
    let taken_ns = i128::from_le_bytes(r.arr()?);
    let count = r.u64()?;
    // Each entry takes at least 84 bytes: a count beyond that is corruption.
    if count > (bytes.len() / 84) as u64 {
        return None;
    }
    let mut files = HashMap::with_capacity(count as usize);
    for _ in 0..count {
        let len = r.u32()? as usize;
        let path = r.take(len)?.to_vec();
        let stat = Stat {
            mode: r.u32()?,
            size: r.u64()?,
            mtime: (r.i64()?, r.u32()?),
            ctime: (r.i64()?, r.u32()?),
            ino: r.u64()?,
            dev: r.u64()?,
        };
        let id = r.arr()?;
        files.insert(path, Entry { stat, id });
    }
    r.0.is_empty().then_some(StatCache {
        tree,
        taken_ns,
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(mtime: (i64, u32)) -> Stat {
        Stat {
            mode: 0o100644,
            size: 3,
            mtime,
            ctime: mtime,
            ino: 7,
            dev: 1,
        }
    }

    #[test]
    fn round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = StatCache {
            tree: [1; 20],
            taken_ns: 5_000_000_000_000,
            ..Default::default()
        };
        let old = stat((100, 5));
        c.files.insert(
            b"a/b.rs".to_vec(),
            Entry {
                stat: old,
                id: [9; 20],
            },
        );
        c.save(dir.path()).unwrap();
        let back = StatCache::load(dir.path()).unwrap();
        assert_eq!(back.tree, [1; 20]);
        assert_eq!(back.fresh(b"a/b.rs", &old), Some([9; 20]));
        assert_eq!(back.fresh(b"a/b.rs", &stat((101, 5))), None);
        assert_eq!(back.fresh(b"other", &old), None);
        // Truncated or garbled: ignored, not trusted.
        let bytes = std::fs::read(dir.path().join(FILE)).unwrap();
        for cut in [0, 10, bytes.len() - 1] {
            assert!(parse(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(parse(&extra).is_none());
    }

    #[test]
    fn files_changed_near_the_walk_are_racy() {
        let taken = 1_000 * 1_000_000_000i128;
        // Well before the walk: trusted.
        assert!(!stat((990, 1)).racy(taken));
        // Within 50 ms of it, or after: hashed again.
        assert!(stat((999, 990_000_000)).racy(taken));
        assert!(stat((1_001, 1)).racy(taken));
        // Whole seconds suggest a coarse file system: a 2 s window.
        assert!(stat((999, 0)).racy(taken));
        assert!(!stat((997, 0)).racy(taken));
    }
}
