//! The bearer token of the HTTP transport: without it any local user (or any page a browser
//! loads, past the `Host` check) could run the served loops in the server's workspace. Made
//! from the kernel's randomness, kept in a file only its owner can read, compared in
//! constant time.

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Bytes of randomness in a generated token (hex-encoded: 64 characters).
const TOKEN_BYTES: usize = 32;

/// A token the HTTP transport's clients must send as `Authorization: Bearer TOKEN`.
#[derive(Clone)]
pub struct BearerToken(String);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(…)")
    }
}

impl BearerToken {
    /// A new random token.
    pub fn generate() -> std::io::Result<Self> {
        let mut bytes = [0u8; TOKEN_BYTES];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(Self(hex::encode(bytes)))
    }

    /// The token kept in `path`; a missing file is made (mode 0600) with a new token. A
    /// file others may read, or an empty one, is refused in one line.
    pub fn from_file(path: &Path) -> Result<(Self, bool), String> {
        let shown = path.display();
        match std::fs::metadata(path) {
            Ok(meta) => {
                if meta.permissions().mode() & 0o077 != 0 {
                    return Err(format!(
                        "{shown}: the token file may be read by others (chmod 600 {shown})"
                    ));
                }
                let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
                let token = text.trim();
                if token.len() < 16 || token.chars().any(char::is_whitespace) {
                    return Err(format!(
                        "{shown}: the token must be one word of at least 16 characters"
                    ));
                }
                Ok((Self(token.to_owned()), false))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let token = Self::generate().map_err(|e| format!("cannot make a token: {e}"))?;
                token.write_new(path).map_err(|e| format!("{shown}: {e}"))?;
                Ok((token, true))
            }
            Err(e) => Err(format!("{shown}: {e}")),
        }
    }

    /// Writes the token to `path`, only its owner may read it (replacing a file there).
    pub fn write_to(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let _ = std::fs::remove_file(path);
        self.write_new(path)
    }

    fn write_new(&self, path: &Path) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        file.write_all(self.0.as_bytes())?;
        file.write_all(b"\n")
    }

    /// The token itself, to give to clients.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether an `Authorization` header's value carries this token.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let Some(given) = value
            .strip_prefix(b"Bearer ")
            .or_else(|| value.strip_prefix(b"bearer "))
        else {
            return false;
        };
        let expected = self.0.as_bytes();
        // Constant time over the expected length: no early exit on the first difference.
        given.len() == expected.len()
            && given
                .iter()
                .zip(expected)
                .fold(0u8, |differ, (a, b)| differ | (a ^ b))
                == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_admits_only_itself_and_its_file_is_private() {
        let token = BearerToken::generate().unwrap();
        assert_eq!(token.as_str().len(), 64);
        let header = format!("Bearer {}", token.as_str());
        assert!(token.admits(Some(header.as_bytes())));
        assert!(!token.admits(None));
        assert!(!token.admits(Some(b"Bearer wrong")));
        assert!(!token.admits(Some(token.as_str().as_bytes())));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let (made, new) = BearerToken::from_file(&path).unwrap();
        assert!(new);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (read, new) = BearerToken::from_file(&path).unwrap();
        assert!(!new);
        assert_eq!(read.as_str(), made.as_str());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            BearerToken::from_file(&path)
                .unwrap_err()
                .contains("chmod 600")
        );
    }
}
