//! Permission rules: `tool[:pattern] -> allow | ask | deny`, from flags and the config file.

use std::fmt;
use std::str::FromStr;

use crate::glob_pattern::{GlobOptions, GlobPattern};
use serde::{Deserialize, Serialize};

use super::shell;

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
/// `bash`, matched against each simple command of the parsed command in whole words
/// (`cargo test` matches `cargo test --all`, not `cargo testx`), and a glob over the
/// workspace-relative path for file tools.
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

/// A rule names a tool this run does not have: it would silently never match (a `deny` that
/// denies nothing), so it is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the permission rule for `{tool}` names no tool of this run{hint}")]
pub struct UnknownToolError {
    /// The name as the rule gave it.
    pub tool: String,
    /// "; did you mean `x`?", or the list of tools.
    hint: String,
}

/// A rule's path pattern does not compile.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the permission rule `{rule}` has a bad pattern: {why}")]
pub struct BadPatternError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with its pattern.
    pub why: String,
}

impl Rule {
    /// Refuses a rule whose tool is neither `*` nor one of `known`, suggesting the closest
    /// name (a different case or a typo).
    pub fn check_tool<'a>(
        &self,
        known: impl Iterator<Item = &'a str> + Clone,
    ) -> Result<(), UnknownToolError> {
        if self.tool == "*" || known.clone().any(|k| k == self.tool) {
            return Ok(());
        }
        let closest = wonopcode_agent_loop::nearest_name(&self.tool, known.clone());
        let hint = match closest {
            Some(name) => format!("; did you mean `{name}`?"),
            None => format!("; its tools are: {}", known.collect::<Vec<_>>().join(", ")),
        };
        Err(UnknownToolError {
            tool: self.tool.clone(),
            hint,
        })
    }

    /// Refuses a rule whose path pattern does not compile (a `deny` that could never
    /// match); a `bash` rule's pattern is a command, read by the shell parser.
    pub fn check_pattern(&self) -> Result<(), BadPatternError> {
        match &self.pattern {
            Some(pattern) if self.tool != "bash" => {
                GlobPattern::new(pattern, GlobOptions::default())
                    .map(drop)
                    .map_err(|why| BadPatternError {
                        rule: format!("{}:{pattern}", self.tool),
                        why,
                    })
            }
            _ => Ok(()),
        }
    }

    /// A rule that allows exactly `subject` for `tool` (an "always" answer kept in a config
    /// file): a path as a literal glob ([`crate::glob_pattern::literal`]), so a file named
    /// `*` allows that file only; a `bash` command as the written words its approval key
    /// holds.
    pub fn allowing(tool: &str, subject: &str) -> Self {
        let pattern = match tool {
            _ if subject.is_empty() => None,
            "bash" => Some(subject.to_owned()),
            _ => Some(crate::glob_pattern::literal(subject)),
        };
        Self {
            tool: tool.to_owned(),
            pattern,
            action: Action::Allow,
        }
    }

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
            // A rule for the seed's `patch` is about `apply_patch`.
            tool: wonopcode_agent_loop::canonical_tool_name(tool).to_owned(),
            pattern,
            action,
        })
    }

    /// Whether this rule is about `tool`: names it, is `*`, or names the MCP server it
    /// comes from (`mcp__fs` is about `mcp__fs__read_file`).
    pub fn names(&self, tool: &str) -> bool {
        self.tool == "*"
            || self.tool == tool
            || (self.tool.starts_with("mcp__")
                && !self.tool["mcp__".len()..].contains("__")
                && tool
                    .strip_prefix(self.tool.as_str())
                    .is_some_and(|rest| rest.starts_with("__")))
    }

    /// Whether this rule applies to a call of `tool` acting on `subject`, for every tool but
    /// `bash`, whose commands are matched by [`Self::matches_command`].
    pub fn matches(&self, tool: &str, subject: Option<&str>) -> bool {
        if !self.names(tool) {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        let Some(subject) = subject else { return false };
        let subject = subject.trim_start_matches("./");
        GlobPattern::new(pattern, GlobOptions::default()).is_ok_and(|g| g.is_match(subject))
    }

    /// Whether this rule's pattern is a word prefix of one simple command: `words`, as the
    /// shell reads them, and `written`, the same words as [`shell::Script::written`] tells
    /// them apart. An `allow` rule matches the written words exactly, its pattern read as a
    /// command too (so `rm '*'` allows `rm '*'`, never `rm *`, and `ls` allows `ls *.rs`);
    /// `deny` and `ask` match the words whatever their quoting, and the program by name
    /// wherever it lives (`/bin/rm` for `rm`), so that neither quotes nor a path can walk
    /// around them, while an allow for `ls` never lets `./ls` run.
    pub fn matches_command(&self, words: &[String], written: &[String]) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        if self.action == Action::Allow {
            let parsed = shell::Script::parse(pattern);
            let wanted: Vec<String> = match parsed.written() {
                [only] if parsed.is_plain() => only.clone(),
                _ => pattern.split_whitespace().map(str::to_owned).collect(),
            };
            return !wanted.is_empty() && written.starts_with(&wanted);
        }
        let mut wanted = pattern.split_whitespace();
        let (Some(program), Some(first)) = (wanted.next(), words.first()) else {
            return false;
        };
        (first == program || shell::program_name(first) == shell::program_name(program))
            && wanted
                .enumerate()
                .all(|(at, w)| words.get(at + 1).is_some_and(|x| x == w))
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
    fn a_rule_for_a_tool_the_run_lacks_is_refused_with_a_suggestion() {
        let known = ["bash", "read", "write"];
        let check = |text: &str| {
            Rule::parse(text, Action::Deny)
                .unwrap()
                .check_tool(known.iter().copied())
        };
        assert!(check("bash").is_ok());
        assert!(check("*").is_ok());
        assert!(check("read:src/**").is_ok());
        assert_eq!(
            check("Bash").unwrap_err().to_string(),
            "the permission rule for `Bash` names no tool of this run; did you mean `bash`?"
        );
        assert_eq!(
            check("bsh").unwrap_err().to_string(),
            "the permission rule for `bsh` names no tool of this run; did you mean `bash`?"
        );
        assert_eq!(
            check("teleport").unwrap_err().to_string(),
            "the permission rule for `teleport` names no tool of this run; its tools are: bash, read, write"
        );
    }

    /// Whether `rule` matches the first simple command of `text`.
    fn matches(rule: &Rule, text: &str) -> bool {
        let script = shell::Script::parse(text);
        rule.matches_command(&script.commands()[0], &script.written()[0])
    }

    #[test]
    fn bash_patterns_are_word_prefixes() {
        let rule = Rule::parse("bash:cargo test", Action::Allow).unwrap();
        assert!(matches(&rule, "cargo test --all"));
        assert!(matches(&rule, "cargo test"));
        assert!(!matches(&rule, "cargo testx"));
        assert!(!matches(&rule, "cargo"));
        assert!(!matches(&rule, "rm -rf /"));
        assert!(!rule.matches("write", Some("cargo test")));
    }

    #[test]
    fn only_deny_and_ask_match_a_program_by_its_name() {
        let deny = Rule::parse("bash:rm", Action::Deny).unwrap();
        assert!(matches(&deny, "/bin/rm x"));
        assert!(matches(&deny, "./rm"));
        let allow = Rule::parse("bash:ls", Action::Allow).unwrap();
        assert!(matches(&allow, "ls -la"));
        assert!(!matches(&allow, "./ls"));
        assert!(!matches(&allow, "/tmp/x/ls"));
    }

    #[test]
    fn an_allow_rule_tells_quoted_words_from_expanded_ones() {
        let quoted = Rule::parse("bash:rm '*'", Action::Allow).unwrap();
        assert!(matches(&quoted, "rm '*'"));
        assert!(matches(&quoted, "rm \"*\""));
        assert!(!matches(&quoted, "rm *"));
        let ls = Rule::parse("bash:ls", Action::Allow).unwrap();
        assert!(
            matches(&ls, "ls *.rs"),
            "a prefix allows any arguments after it"
        );
        let deny = Rule::parse("bash:rm *", Action::Deny).unwrap();
        assert!(matches(&deny, "rm '*'"), "a deny rule sees through quotes");
    }

    #[test]
    fn a_rule_naming_an_mcp_server_covers_its_tools() {
        let rule = Rule::parse("mcp__fs", Action::Deny).unwrap();
        assert!(rule.names("mcp__fs__read_file"));
        assert!(!rule.names("mcp__fsx__read_file"));
        assert!(!rule.names("read"));
        let tool = Rule::parse("mcp__fs__read_file", Action::Allow).unwrap();
        assert!(tool.names("mcp__fs__read_file"));
        assert!(!tool.names("mcp__fs__read_file__x"));
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
