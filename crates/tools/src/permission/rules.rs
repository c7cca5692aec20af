//! Permission rules: `tool[:pattern] -> allow | ask | deny`, from flags and the config file.

use std::fmt;
use std::str::FromStr;

use globset::Glob;
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
        Glob::new(pattern)
            .map(|g| g.compile_matcher().is_match(subject))
            .unwrap_or(false)
    }

    /// Whether this rule's pattern is a word prefix of one simple command (its words as the
    /// shell reads them). An `allow` rule matches the words exactly; `deny` and `ask` also
    /// match the program by name wherever it lives (`/bin/rm` for `rm`), so that a path
    /// cannot walk around them while an allow for `ls` never lets `./ls` run.
    pub fn matches_command(&self, words: &[String]) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        let mut wanted = pattern.split_whitespace();
        let (Some(program), Some(first)) = (wanted.next(), words.first()) else {
            return false;
        };
        let program_matches = first == program
            || (self.action != Action::Allow
                && shell::program_name(first) == shell::program_name(program));
        program_matches
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

    fn command(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn bash_patterns_are_word_prefixes() {
        let rule = Rule::parse("bash:cargo test", Action::Allow).unwrap();
        assert!(rule.matches_command(&command("cargo test --all")));
        assert!(rule.matches_command(&command("cargo test")));
        assert!(!rule.matches_command(&command("cargo testx")));
        assert!(!rule.matches_command(&command("cargo")));
        assert!(!rule.matches_command(&command("rm -rf /")));
        assert!(!rule.matches("write", Some("cargo test")));
    }

    #[test]
    fn only_deny_and_ask_match_a_program_by_its_name() {
        let deny = Rule::parse("bash:rm", Action::Deny).unwrap();
        assert!(deny.matches_command(&command("/bin/rm x")));
        assert!(deny.matches_command(&command("./rm")));
        let allow = Rule::parse("bash:ls", Action::Allow).unwrap();
        assert!(allow.matches_command(&command("ls -la")));
        assert!(!allow.matches_command(&command("./ls")));
        assert!(!allow.matches_command(&command("/tmp/x/ls")));
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
