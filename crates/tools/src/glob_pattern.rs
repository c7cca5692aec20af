//! Glob patterns from text wonopcode does not control — a model's `glob` and `grep`
//! arguments, a permission rule read from a config file, a shell policy's variable names —
//! compiled so that no pattern can take the process down. globset builds any pattern, but
//! panics when the regular expression it made will not compile (400 nested braces pass the
//! parser, then exceed the regex engine's nesting limit), and renders nested alternatives
//! recursively; so the nesting and the length are bounded first, and the regex is compiled
//! through a [`GlobSet`], whose build returns an error instead of panicking.

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The longest pattern compiled: the longest path Linux takes, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4096;

/// The deepest nesting of `{…}` alternatives compiled.
pub const MAX_BRACE_DEPTH: usize = 16;

/// A compiled glob pattern.
#[derive(Debug, Clone)]
pub struct GlobPattern {
    set: GlobSet,
}

/// How a pattern is read.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobOptions {
    /// `*` and `?` do not match `/` (only `**` crosses directories).
    pub literal_separator: bool,
    /// Letters match either case.
    pub case_insensitive: bool,
}

impl GlobPattern {
    /// Compiles `pattern`; what is wrong with it, in words, when it cannot be.
    pub fn new(pattern: &str, options: GlobOptions) -> Result<Self, String> {
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(format!(
                "the pattern is {} bytes long; at most {MAX_PATTERN_BYTES}",
                pattern.len()
            ));
        }
        let depth = brace_depth(pattern);
        if depth > MAX_BRACE_DEPTH {
            return Err(format!(
                "the pattern nests `{{…}}` {depth} deep; at most {MAX_BRACE_DEPTH}"
            ));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(options.literal_separator)
            .case_insensitive(options.case_insensitive)
            .build()
            .map_err(|e| e.kind().to_string())?;
        let set = GlobSetBuilder::new()
            .add(glob)
            .build()
            .map_err(|e| e.kind().to_string())?;
        Ok(Self { set })
    }

    /// Whether `path` matches.
    pub fn is_match(&self, path: impl AsRef<Path>) -> bool {
        self.set.is_match(path)
    }
}

/// The deepest nesting of `{` in `pattern`, outside escapes and `[…]` classes (where a `]`
/// first, or after `!`, is a member, as globset reads it).
fn brace_depth(pattern: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' => {
                chars.next_if_eq(&'!');
                chars.next_if_eq(&']');
                for member in chars.by_ref() {
                    if member == ']' {
                        break;
                    }
                }
            }
            '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// `text` as a glob that matches exactly `text`: a file named `*` becomes a rule for that
/// file, not for every file.
pub fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '?' | '*' | '[' | ']' | '{' | '}' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_or_long_patterns_are_refused_not_a_panic() {
        let nested = format!("{}a{}", "{".repeat(400), "}".repeat(400));
        let err = GlobPattern::new(&nested, GlobOptions::default()).unwrap_err();
        assert!(err.contains("400 deep"), "{err}");
        let deepest = format!("{}b{}", "{a,".repeat(16), "}".repeat(16));
        assert!(GlobPattern::new(&deepest, GlobOptions::default()).is_ok());
        assert!(GlobPattern::new(&"a".repeat(5000), GlobOptions::default()).is_err());
        assert!(GlobPattern::new("[", GlobOptions::default()).is_err());
        let fine = GlobPattern::new("src/{a,{b,c}}/*.rs", GlobOptions::default()).unwrap();
        assert!(fine.is_match("src/c/x.rs"));
    }

    #[test]
    fn a_literal_matches_only_itself() {
        for name in ["*", "a?b", "[x]", "{a,b}", "back\\slash*", "é{}"] {
            let pattern = GlobPattern::new(&literal(name), GlobOptions::default()).unwrap();
            assert!(pattern.is_match(name), "{name}");
        }
        let star = GlobPattern::new(&literal("*"), GlobOptions::default()).unwrap();
        assert!(!star.is_match("secret.env"));
        let braces = "{".repeat(300) + "}";
        assert!(GlobPattern::new(&literal(&braces), GlobOptions::default()).is_ok());
    }
}
