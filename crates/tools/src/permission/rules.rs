//! Permission rules: `tool[:pattern] -> allow | ask | deny`, from flags and the config file.

use std::fmt;
use std::str::FromStr;

use globset::Glob;
use serde::{Deserialize, Serialize};

/// What a rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Run without asking.
    Allow,
    /// Ask someone first.
    Ask,
    /// Never run.
    Deny,
}

/// One rule. `tool` is a tool name or `*`. `pattern`, when given, is a command prefix for
/// `bash` (matching whole words: `cargo test` matches `cargo test --all`, not `cargo testx`)
/// and a glob over the workspace-relative path for file tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Tool name, or `*` for every tool.
    pub tool: String,
    /// Command prefix or path glob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// What to do.
    pub action: Action,
}

/// A rule given on the command line could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid permission rule `{0}`: expected TOOL or TOOL:PATTERN")]
pub struct RuleParseError(pub String);

impl Rule {
    /// Parses `TOOL` or `TOOL:PATTERN` with the given action.
    pub fn parse(text: &str, action: Action) -> Result<Self, RuleParseError> {
        let (tool, pattern) = match text.split_once(':') {
            Some((t, p)) => (t.trim(), Some(p.trim().to_owned())),
            None => (text.trim(), None),
        };
        if tool.is_empty() || pattern.as_deref() == Some("") {
            return Err(RuleParseError(text.to_owned()));
        }
        Ok(Self {
            tool: tool.to_owned(),
            pattern,
            action,
        })
    }

    /// Whether this rule applies to a call of `tool` acting on `subject`.
    pub fn matches(&self, tool: &str, subject: Option<&str>) -> bool {
        if self.tool != "*" && self.tool != tool {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        let Some(subject) = subject else { return false };
        if tool == "bash" {
            let subject = subject.trim_start();
            subject == pattern
                || subject
                    .strip_prefix(pattern.as_str())
                    .is_some_and(|rest| rest.starts_with(char::is_whitespace))
        } else {
            let subject = subject.trim_start_matches("./");
            Glob::new(pattern)
                .map(|g| g.compile_matcher().is_match(subject))
                .unwrap_or(false)
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        })
    }
}

impl FromStr for Action {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "allow" => Ok(Self::Allow),
            "ask" => Ok(Self::Ask),
            "deny" => Ok(Self::Deny),
            other => Err(format!(
                "unknown permission action `{other}` (allow, ask or deny)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_patterns_are_word_prefixes() {
        let rule = Rule::parse("bash:cargo test", Action::Allow).unwrap();
        assert!(rule.matches("bash", Some("cargo test --all")));
        assert!(rule.matches("bash", Some("cargo test")));
        assert!(!rule.matches("bash", Some("cargo testx")));
        assert!(!rule.matches("bash", Some("rm -rf /")));
        assert!(!rule.matches("write", Some("cargo test")));
    }

    #[test]
    fn file_patterns_are_globs() {
        let rule = Rule::parse("write:src/**", Action::Deny).unwrap();
        assert!(rule.matches("write", Some("src/a/b.rs")));
        assert!(!rule.matches("write", Some("docs/a.md")));
        assert!(
            Rule::parse("*", Action::Ask)
                .unwrap()
                .matches("anything", None)
        );
    }

    #[test]
    fn malformed_rules_are_refused() {
        assert!(Rule::parse("", Action::Allow).is_err());
        assert!(Rule::parse("bash:", Action::Allow).is_err());
    }
}
