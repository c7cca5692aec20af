//! Doom-loop detection: the same tool with the same arguments several times in a row means
//! the model is stuck (3 times by default: `LoopConfig::doom_loop_threshold`).

use sha2::{Digest, Sha256};

/// Counts consecutive identical tool calls.
#[derive(Debug, Clone, Default)]
pub struct DoomLoopDetector {
    last: Option<[u8; 32]>,
    count: usize,
}

impl DoomLoopDetector {
    /// Records a call and returns how many times in a row it has now been seen.
    pub fn observe(&mut self, name: &str, arguments: &str) -> usize {
        let mut hasher = Sha256::new();
        hasher.update(name.as_bytes());
        hasher.update([0]);
        // Identical JSON with different spacing is the same call.
        let canonical = serde_json::from_str::<serde_json::Value>(arguments)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| arguments.to_owned());
        hasher.update(canonical.as_bytes());
        let signature: [u8; 32] = hasher.finalize().into();
        if self.last == Some(signature) {
            self.count += 1;
        } else {
            self.last = Some(signature);
            self.count = 1;
        }
        self.count
    }

    /// Forgets the streak (after the user allowed it to go on).
    pub fn reset(&mut self) {
        self.last = None;
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_identical_consecutive_calls() {
        let mut d = DoomLoopDetector::default();
        assert_eq!(d.observe("read", r#"{"path":"a"}"#), 1);
        assert_eq!(d.observe("read", r#"{ "path": "a" }"#), 2);
        assert_eq!(d.observe("read", r#"{"path":"a"}"#), 3);
        assert_eq!(d.observe("read", r#"{"path":"b"}"#), 1);
        assert_eq!(d.observe("grep", r#"{"path":"b"}"#), 1);
    }
}
