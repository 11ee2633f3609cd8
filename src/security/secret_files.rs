//! Files that hold secrets wherever they are: a project's `.env`, private keys (`id_rsa`, `*.key`,
//! a `*.pem` holding a private key), token files (`.npmrc`, `.netrc`, `.pgpass`,
//! `.git-credentials`, `.pypirc`). `ProtectedPaths::check_read` refuses them to the file tools
//! (`read_file`, `patch`, content search) unless the user lists the path in
//! `security.readable_paths`.
//!
//! The choice, with Python Hermes in mind: it refuses a fixed list of project `.env` names
//! anywhere on disk (`agent/file_safety.py`, "read .env.example instead") and redacts what other
//! reads return. Redacting a `.env` would leave the model a file of `[REDACTED]` values (what it
//! would learn is only the key names, which `.env.example` gives) while any value our patterns
//! miss (a database password, a webhook secret without a known shape) would reach the provider.
//! So: refused, with a message that names `.env.example` and the key that allows the read. Shapes
//! a user routinely needs to read stay readable (`.env.example`, `.env.sample`, `.env.template`,
//! public keys, certificates without a private key). Like Python's list this is a file-tool rule:
//! the terminal can still `cat .env` (its output is redacted by value and shape).

use std::io::Read;
use std::path::Path;

/// Names of documented-shape copies of a `.env` (readable).
const ENV_SHAPES: &[&str] = &[
    "example", "sample", "template", "dist", "defaults", "schema",
];

/// Token and password files, by exact (lower-cased) name.
const TOKEN_FILES: &[&str] = &[
    ".envrc",
    ".npmrc",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".pypirc",
    ".dockercfg",
];

/// SSH private keys by their default names (the `.pub` halves are readable).
const SSH_KEYS: &[&str] = &[
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
    "identity",
];

/// Extensions of key stores that are always private.
const KEY_EXTENSIONS: &[&str] = &["key", "p12", "pfx", "jks", "keystore", "ppk", "kdbx"];

/// How much of a `.pem` is looked at for a private-key header.
const PEM_SNIFF_BYTES: u64 = 64 * 1024;

/// Whether the file at `path` (resolved) is a secrets file by its name, or — for a `.pem` — by
/// holding a private key.
pub fn is_secret_file(path: &Path) -> bool {
    let Some(name) = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
    else {
        return false;
    };
    if name == ".env" {
        return true;
    }
    if let Some(variant) = name.strip_prefix(".env.") {
        // `.env.local`, `.env.production`, … but not `.env.example`.
        return !ENV_SHAPES.contains(&variant);
    }
    if TOKEN_FILES.contains(&name.as_str()) || SSH_KEYS.contains(&name.as_str()) {
        return true;
    }
    let Some((_, ext)) = name.rsplit_once('.') else {
        return false;
    };
    if KEY_EXTENSIONS.contains(&ext) {
        return true;
    }
    ext == "pem" && holds_private_key(path)
}

/// Whether the start of the file holds a PEM private-key header (a certificate does not).
fn holds_private_key(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(PEM_SNIFF_BYTES).read_to_end(&mut head).is_err() {
        return false;
    }
    head.windows(b"PRIVATE KEY-----".len())
        .any(|w| w == b"PRIVATE KEY-----")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_and_readable_shapes() {
        for name in [
            ".env",
            ".ENV",
            ".env.local",
            ".env.production",
            ".envrc",
            ".npmrc",
            ".netrc",
            "id_rsa",
            "id_ed25519",
            "server.key",
            "store.p12",
        ] {
            assert!(
                is_secret_file(Path::new("/p").join(name).as_path()),
                "{name}"
            );
        }
        for name in [
            ".env.example",
            ".env.sample",
            "env.rs",
            "id_rsa.pub",
            "keys.rs",
            "README.md",
            ".environment",
        ] {
            assert!(
                !is_secret_file(Path::new("/p").join(name).as_path()),
                "{name}"
            );
        }
    }

    #[test]
    fn a_pem_is_secret_only_when_it_holds_a_private_key() {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("ca.pem");
        std::fs::write(
            &cert,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let key = dir.path().join("tls.pem");
        std::fs::write(
            &key,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN EC PRIVATE KEY-----\nMHc\n",
        )
        .unwrap();
        assert!(!is_secret_file(&cert));
        assert!(is_secret_file(&key));
        assert!(!is_secret_file(&dir.path().join("missing.pem")));
    }
}
