//! Context paths: where in the tree of contexts an event or request comes from.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The dotted path of a context: `0` is the root, `0.1` its first child, `0.1.2` a grandchild.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct ContextPath(String);

impl ContextPath {
    /// The root context.
    pub fn root() -> Self {
        Self("0".to_owned())
    }

    /// The `index`-th child of this context.
    pub fn child(&self, index: u32) -> Self {
        Self(format!("{}.{index}", self.0))
    }

    /// Nesting depth: 0 for the root.
    pub fn depth(&self) -> usize {
        self.0.matches('.').count()
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path as numbers (`[0, 1, 2]`), for ordering contexts as people read them:
    /// `0.10` after `0.9`, a child right after its parent.
    pub fn numbers(&self) -> Vec<u32> {
        self.0.split('.').map(|s| s.parse().unwrap_or(0)).collect()
    }

    /// Parses a path, accepting only dot-separated decimal numbers starting at `0`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut segments = text.split('.');
        if segments.next() != Some("0") {
            return None;
        }
        if segments.all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())) {
            Some(Self(text.to_owned()))
        } else {
            None
        }
    }
}

impl Default for ContextPath {
    fn default() -> Self {
        Self::root()
    }
}

impl fmt::Display for ContextPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_paths_nest() {
        let child = ContextPath::root().child(1).child(2);
        assert_eq!(child.as_str(), "0.1.2");
        assert_eq!(child.depth(), 2);
        assert_eq!(ContextPath::parse("0.1.2"), Some(child));
        assert_eq!(ContextPath::parse("1"), None);
        assert_eq!(ContextPath::parse("0..1"), None);
        let mut paths = [
            ContextPath::root().child(10),
            ContextPath::root().child(9).child(1),
            ContextPath::root().child(9),
        ];
        paths.sort_by_key(ContextPath::numbers);
        let texts: Vec<&str> = paths.iter().map(ContextPath::as_str).collect();
        assert_eq!(texts, ["0.9", "0.9.1", "0.10"]);
    }
}
