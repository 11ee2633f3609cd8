//! Writes git objects into the shadow repository as ONE pack file (`objects/pack/pack-*.pack`
//! plus its version-2 `.idx`) instead of one loose file per object: a first checkpoint of a
//! 5,000-file tree is then two file creations instead of 5,000, which is where libgit2's
//! `add_all` spent most of its time (open, write, close, rename per object, plus a directory
//! per id prefix).
//!
//! Objects are stored whole (no deltas) and zlib-compressed at the fastest level: checkpoints
//! are written on the critical path of a turn and read rarely. The pack body is streamed to a
//! temporary file (memory stays small whatever the tree size); its object count is patched in
//! at the end and the trailing checksum computed by reading the file back. The `.idx` is
//! renamed into place last, so a reader never sees an index without its pack.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

/// A git object id (SHA-1).
pub type RawOid = [u8; 20];

/// The kinds of objects a checkpoint writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Commit,
    Tree,
    Blob,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Commit => "commit",
            Kind::Tree => "tree",
            Kind::Blob => "blob",
        }
    }

    fn pack_type(self) -> u8 {
        match self {
            Kind::Commit => 1,
            Kind::Tree => 2,
            Kind::Blob => 3,
        }
    }
}

/// The id git gives `data` as an object of `kind`.
pub fn object_id(kind: Kind, data: &[u8]) -> RawOid {
    let mut h = Sha1::new();
    h.update(format!("{} {}\0", kind.name(), data.len()).as_bytes());
    h.update(data);
    h.finalize().into()
}

/// One object ready for the pack: its id and its pack entry (header + zlib data).
pub struct PackedObject {
    pub id: RawOid,
    entry: Vec<u8>,
}

/// Hashes and compresses one object (safe to call from worker threads).
pub fn pack_object(kind: Kind, data: &[u8]) -> std::io::Result<PackedObject> {
    compress(kind, data, object_id(kind, data))
}

/// Compresses one object whose id is already known.
pub fn compress(kind: Kind, data: &[u8], id: RawOid) -> std::io::Result<PackedObject> {
    let mut entry = Vec::with_capacity(data.len() / 2 + 32);
    // Type and size: 3 bits of type, then the size 4 + 7·n bits, little-endian groups.
    let mut size = data.len() as u64;
    let mut byte = (kind.pack_type() << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        entry.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    entry.push(byte);
    let mut z = flate2::write::ZlibEncoder::new(entry, flate2::Compression::fast());
    z.write_all(data)?;
    Ok(PackedObject {
        id,
        entry: z.finish()?,
    })
}

/// A pack being written.
pub struct PackWriter {
    dir: PathBuf,
    tmp: PathBuf,
    /// `None` once finished.
    out: Option<BufWriter<File>>,
    offset: u64,
    /// (id, offset, crc32 of the entry), in write order.
    entries: Vec<(RawOid, u64, u32)>,
    seen: std::collections::HashSet<RawOid>,
}

impl PackWriter {
    /// Starts a pack in `objects_dir/pack`.
    pub fn create(objects_dir: &Path) -> std::io::Result<Self> {
        let dir = objects_dir.join("pack");
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!(
            "tmp_hermes_{}_{}.pack",
            std::process::id(),
            rand::random::<u64>()
        ));
        // Read as well: `finish` reads the body back for the checksum.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        // The count is patched in by `finish`.
        out.write_all(b"PACK\0\0\0\x02\0\0\0\0")?;
        Ok(PackWriter {
            dir,
            tmp,
            out: Some(out),
            offset: 12,
            entries: Vec::new(),
            seen: std::collections::HashSet::new(),
        })
    }

    /// Appends an object (a second copy of the same id is dropped).
    pub fn add(&mut self, object: &PackedObject) -> std::io::Result<()> {
        if !self.seen.insert(object.id) {
            return Ok(());
        }
        let crc = crc32fast::hash(&object.entry);
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| std::io::Error::other("pack already finished"))?;
        out.write_all(&object.entry)?;
        self.entries.push((object.id, self.offset, crc));
        self.offset += object.entry.len() as u64;
        Ok(())
    }

    /// Whether `id` is already in this pack.
    pub fn contains(&self, id: &RawOid) -> bool {
        self.seen.contains(id)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Finishes the pack and its index and moves both into place (nothing when empty).
    pub fn finish(mut self) -> std::io::Result<()> {
        let Some(out) = self.out.take() else {
            return Ok(());
        };
        let entries = std::mem::take(&mut self.entries);
        Self::seal(&self.dir, &self.tmp, out, entries)
        // On an error `drop` removes the temporary file.
    }

    fn seal(
        dir: &Path,
        tmp: &Path,
        out: BufWriter<File>,
        mut entries: Vec<(RawOid, u64, u32)>,
    ) -> std::io::Result<()> {
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        if entries.is_empty() {
            drop(file);
            return std::fs::remove_file(tmp);
        }
        let count = u32::try_from(entries.len())
            .map_err(|_| std::io::Error::other("too many objects for one pack"))?;
        file.seek(SeekFrom::Start(8))?;
        file.write_all(&count.to_be_bytes())?;
        // The trailing checksum covers everything before it.
        file.seek(SeekFrom::Start(0))?;
        let mut h = Sha1::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        let pack_sum: RawOid = h.finalize().into();
        file.seek(SeekFrom::End(0))?;
        file.write_all(&pack_sum)?;
        drop(file);

        entries.sort_unstable_by_key(|e| e.0);
        let idx = index_bytes(&entries, &pack_sum);
        let name = format!("pack-{}", hex(&pack_sum));
        let idx_tmp = dir.join(format!("tmp_{name}.idx"));
        let placed = std::fs::write(&idx_tmp, idx)
            .and_then(|()| std::fs::rename(tmp, dir.join(format!("{name}.pack"))))
            .and_then(|()| std::fs::rename(&idx_tmp, dir.join(format!("{name}.idx"))));
        if placed.is_err() {
            let _ = std::fs::remove_file(&idx_tmp);
        }
        placed
    }
}

impl Drop for PackWriter {
    /// A pack abandoned (an error half-way) or failed leaves no temporary file behind.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// A version-2 pack index: fan-out table, sorted ids, CRCs, offsets (large ones in a second
/// table), the pack's checksum and the index's own.
fn index_bytes(sorted: &[(RawOid, u64, u32)], pack_sum: &RawOid) -> Vec<u8> {
    let mut idx = Vec::with_capacity(8 + 1024 + sorted.len() * 28 + 40);
    idx.extend_from_slice(b"\xfftOc\0\0\0\x02");
    let mut fanout = [0u32; 256];
    for (id, _, _) in sorted {
        fanout[id[0] as usize] += 1;
    }
    let mut total = 0u32;
    for n in fanout {
        total += n;
        idx.extend_from_slice(&total.to_be_bytes());
    }
    for (id, _, _) in sorted {
        idx.extend_from_slice(id);
    }
    for (_, _, crc) in sorted {
        idx.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large: Vec<u64> = Vec::new();
    for (_, offset, _) in sorted {
        match u32::try_from(*offset) {
            Ok(small) if small < 0x8000_0000 => idx.extend_from_slice(&small.to_be_bytes()),
            _ => {
                let slot = 0x8000_0000 | large.len() as u32;
                idx.extend_from_slice(&slot.to_be_bytes());
                large.push(*offset);
            }
        }
    }
    for offset in large {
        idx.extend_from_slice(&offset.to_be_bytes());
    }
    idx.extend_from_slice(pack_sum);
    let own: RawOid = Sha1::digest(&idx).into();
    idx.extend_from_slice(&own);
    idx
}

pub fn hex(id: &RawOid) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_git() {
        // `git hash-object` of "hello\n" and the empty tree.
        assert_eq!(
            hex(&object_id(Kind::Blob, b"hello\n")),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(
            hex(&object_id(Kind::Tree, b"")),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }

    #[test]
    fn libgit2_reads_what_the_pack_holds() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        let mut w = PackWriter::create(&dir.path().join("objects")).unwrap();
        let big = vec![b'x'; 100_000];
        let mut ids = Vec::new();
        for data in [&b"one\n"[..], b"", &big] {
            let o = pack_object(Kind::Blob, data).unwrap();
            ids.push(o.id);
            w.add(&o).unwrap();
            w.add(&o).unwrap(); // a duplicate is dropped
        }
        assert_eq!(w.len(), 3);
        w.finish().unwrap();
        let odb = repo.odb().unwrap();
        odb.refresh().unwrap();
        for (id, data) in ids.iter().zip([&b"one\n"[..], b"", &big]) {
            let obj = odb.read(git2::Oid::from_bytes(id).unwrap()).unwrap();
            assert_eq!(obj.data(), data);
            assert_eq!(obj.kind(), git2::ObjectType::Blob);
        }
        // An empty pack leaves nothing behind.
        let w = PackWriter::create(&dir.path().join("objects")).unwrap();
        w.finish().unwrap();
        // Neither does one abandoned half-way (an error while reading the tree).
        let mut w = PackWriter::create(&dir.path().join("objects")).unwrap();
        w.add(&pack_object(Kind::Blob, b"abandoned").unwrap())
            .unwrap();
        drop(w);
        let files = std::fs::read_dir(dir.path().join("objects/pack"))
            .unwrap()
            .count();
        assert_eq!(files, 2, "one .pack and one .idx");
    }
}
