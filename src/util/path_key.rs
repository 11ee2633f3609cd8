//! `PathKey`: a path as a hash-map key compared and hashed by its bytes.
//!
//! `Path`'s own `Hash` and `Eq` walk the path component by component (so `a//b` equals `a/b`),
//! which made hashing the largest user-space cost of a warm skill scan over 1,000 skills. The
//! maps keyed by `PathKey` only ever see paths built the same way (a root joined with names
//! read from disk), so byte equality is the equality they need; a path spelled differently is
//! at worst a cache miss, never a wrong hit. `Borrow<[u8]>` lets a lookup use
//! `path_bytes(path)` without allocating.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// A hash map keyed by paths, with a fast non-cryptographic hasher (the keys are local paths,
/// not attacker-chosen flooding input: a skill directory holds what its owner put there).
pub type PathMap<V> = std::collections::HashMap<PathKey, V, rustc_hash::FxBuildHasher>;

/// A path compared and hashed by its bytes.
#[derive(Debug, Clone)]
pub struct PathKey(PathBuf);

/// The bytes a `PathKey` of `path` hashes and compares (for lookups).
pub fn path_bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_encoded_bytes()
}

impl PathKey {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl From<PathBuf> for PathKey {
    fn from(path: PathBuf) -> Self {
        PathKey(path)
    }
}

impl From<&Path> for PathKey {
    fn from(path: &Path) -> Self {
        PathKey(path.to_path_buf())
    }
}

impl PartialEq for PathKey {
    fn eq(&self, other: &Self) -> bool {
        path_bytes(&self.0) == path_bytes(&other.0)
    }
}

impl Eq for PathKey {}

impl Hash for PathKey {
    // Must hash exactly as `[u8]` does: lookups go through `Borrow<[u8]>`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        path_bytes(&self.0).hash(state);
    }
}

impl Borrow<[u8]> for PathKey {
    fn borrow(&self) -> &[u8] {
        path_bytes(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_finds_a_key_by_the_bytes_of_an_equal_path() {
        let mut map: PathMap<u32> = PathMap::default();
        map.insert(PathKey::from(Path::new("/a/b/SKILL.md")), 7);
        assert_eq!(
            map.get(path_bytes(&Path::new("/a").join("b/SKILL.md"))),
            Some(&7)
        );
        // Spelled differently: a miss (a re-parse), never somebody else's entry.
        assert_eq!(map.get(path_bytes(Path::new("/a//b/SKILL.md"))), None);
        assert_eq!(map.get(path_bytes(Path::new("/a/b/skill.md"))), None);
    }
}
