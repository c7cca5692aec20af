//! The seal of a run's invocation: an HMAC-SHA256 of how the run was started, under a key
//! only the user can read (`journal.key` in wonopcode's data directory, mode 0600, hidden
//! from commands). `resume` and `fork` start a run again from its stored command line; a
//! command line that is not sealed by this key was not typed by this user (it was planted
//! in a runs directory someone else could write, or predates seals), so its wider settings
//! are put to the person first.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::meta::Invocation;

/// SHA-256's block size, for the HMAC construction.
const BLOCK: usize = 64;

/// The user's key for sealing invocations.
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(…)")
    }
}

impl SealKey {
    /// Where the user's key is kept: `journal.key` in wonopcode's data directory.
    pub fn standard_path() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("wonopcode").join("journal.key"))
    }

    /// The user's key, made when missing; `None` when there is no data directory or it
    /// cannot be read or made (runs are then not sealed, and resuming one asks).
    pub fn standard() -> Option<Self> {
        Self::at(&Self::standard_path()?).ok()
    }

    /// The key kept in `path`, made (32 random bytes, mode 0600) when missing.
    pub fn at(path: &Path) -> std::io::Result<Self> {
        let mut key = [0u8; 32];
        match std::fs::File::open(path) {
            Ok(mut file) => {
                file.read_exact(&mut key)?;
                return Ok(Self(key));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(mut file) => {
                file.write_all(&key)?;
                file.sync_all()?;
                Ok(Self(key))
            }
            // Another wonopcode made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::at(path),
            Err(e) => Err(e),
        }
    }

    /// HMAC-SHA256 of `message`.
    fn mac(&self, message: &[u8]) -> [u8; 32] {
        let mut padded = [0u8; BLOCK];
        padded[..self.0.len()].copy_from_slice(&self.0);
        let inner_pad: Vec<u8> = padded.iter().map(|b| b ^ 0x36).collect();
        let outer_pad: Vec<u8> = padded.iter().map(|b| b ^ 0x5c).collect();
        let inner = Sha256::new()
            .chain_update(&inner_pad)
            .chain_update(message)
            .finalize();
        Sha256::new()
            .chain_update(&outer_pad)
            .chain_update(inner)
            .finalize()
            .into()
    }

    /// The seal of `invocation` (hex), over its settings with every object's keys in
    /// order: the same whatever order a JSON writer kept them in (serde_json keeps them as
    /// inserted in a build that asks it to, sorted in one that does not; a person's tool may
    /// sort them too).
    fn seal_of(&self, invocation: &Invocation) -> String {
        self.seal_over(
            invocation,
            invocation.settings.as_ref().map(sorted).as_ref(),
        )
    }

    /// The seal of `invocation` over its settings in the order they were read: how runs
    /// journaled before seals were order-free were sealed, still honoured.
    fn seal_as_read(&self, invocation: &Invocation) -> String {
        self.seal_over(invocation, invocation.settings.as_ref())
    }

    fn seal_over(&self, invocation: &Invocation, settings: Option<&serde_json::Value>) -> String {
        // A journal from before settings were kept seals its command line alone.
        let message = match settings {
            None => serde_json::to_vec(&(&invocation.args, &invocation.cwd, invocation.one_shot)),
            Some(settings) => serde_json::to_vec(&(
                settings,
                &invocation.cwd,
                invocation.one_shot,
                invocation.json,
            )),
        }
        .unwrap_or_default();
        hex::encode(self.mac(&message))
    }
}

/// `value` with every object's keys in order.
fn sorted(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            serde_json::Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(sorted).collect())
        }
        other => other.clone(),
    }
}

impl Invocation {
    /// Seals this invocation with `key`.
    pub fn seal(&mut self, key: &SealKey) {
        self.seal = Some(key.seal_of(self));
    }

    /// Whether this invocation carries `key`'s seal of it as it is now.
    pub fn is_sealed_by(&self, key: &SealKey) -> bool {
        let Some(seal) = &self.seal else {
            return false;
        };
        same(seal, &key.seal_of(self)) || same(seal, &key.seal_as_read(self))
    }
}

/// Whether two seals are equal, in constant time (no early exit on the first difference).
fn same(seal: &str, expected: &str) -> bool {
    seal.len() == expected.len()
        && seal
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_invocation_loses_its_seal_and_the_key_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/journal.key");
        let key = SealKey::at(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let mut invocation = Invocation {
            args: vec!["--yes".into(), "fix it".into()],
            settings: None,
            cwd: "/w".into(),
            one_shot: true,
            json: false,
            seal: None,
        };
        assert!(!invocation.is_sealed_by(&key));
        invocation.seal(&key);
        assert!(invocation.is_sealed_by(&key));
        assert!(
            invocation.is_sealed_by(&SealKey::at(&path).unwrap()),
            "the same key again"
        );
        let mut planted = invocation.clone();
        planted.args.insert(0, "--sandbox=full-access".into());
        assert!(!planted.is_sealed_by(&key));
        let other = SealKey::at(&dir.path().join("other.key")).unwrap();
        assert!(!invocation.is_sealed_by(&other));
        // Settings are sealed the same way, read back from the journal's text or not.
        let mut kept = Invocation {
            args: Vec::new(),
            settings: Some(serde_json::json!({"yes": false, "model": {"replay": "t.jsonl"}})),
            ..invocation.clone()
        };
        kept.seal(&key);
        let read: Invocation =
            serde_json::from_str(&serde_json::to_string_pretty(&kept).unwrap()).unwrap();
        assert!(read.is_sealed_by(&key));
        let mut planted = read.clone();
        planted.settings = Some(serde_json::json!({"yes": true, "model": {"replay": "t.jsonl"}}));
        assert!(!planted.is_sealed_by(&key));
        // The same settings with their keys in another order (a JSON tool that sorts them)
        // keep the seal.
        let mut reordered = read.clone();
        let mut map = serde_json::Map::new();
        map.insert("yes".into(), false.into());
        map.insert("model".into(), serde_json::json!({"replay": "t.jsonl"}));
        let mut backwards = serde_json::Map::new();
        for (k, v) in map.into_iter().rev() {
            backwards.insert(k, v);
        }
        reordered.settings = Some(serde_json::Value::Object(backwards));
        assert!(reordered.is_sealed_by(&key));
        // A seal made over the settings in the order they were read is still honoured.
        let mut older = read.clone();
        older.seal = Some(key.seal_as_read(&older));
        assert!(older.is_sealed_by(&key));
        let mut shown = read;
        shown.json = true;
        assert!(!shown.is_sealed_by(&key));
        // RFC 4231 test case 2 (key "Jefe"), padded construction as HMAC defines it.
        let mut jefe = [0u8; 32];
        jefe[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex::encode(SealKey(jefe).mac(b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
