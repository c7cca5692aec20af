//! The names a tool answers to, and the line for one no tool has. The seed's guests and
//! configs name `patch` what wonopcode registers as `apply_patch`: a guest or a rule that
//! says `patch` gets that tool (`enable-tool`, `execute-tool`, a spawn's `allowed-tools`,
//! `--allow`), and a name no tool has is refused with the nearest one, never dropped.

use crate::tool_registry::ToolRegistry;

/// Other names of tools, as `(alias, registered name)`.
pub const TOOL_ALIASES: [(&str, &str); 1] = [("patch", "apply_patch")];

/// Tools a run has only when it is set up for them: `websearch` with a search engine in the
/// config, `skill` with skills. A name of these is a tool's, whether this run has it or not.
pub const OPTIONAL_TOOLS: [&str; 2] = ["skill", WEB_SEARCH_TOOL];

/// The web search tool, whose calls the run's usage counts (`web_search_count`).
pub const WEB_SEARCH_TOOL: &str = "websearch";

/// The name the tool `name` is registered under: `name` itself unless it is an alias.
pub fn canonical_tool_name(name: &str) -> &str {
    TOOL_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, registered)| registered)
}

/// The name among `known` nearest to `name` (a different case or a typo), if one is near.
pub fn nearest_name<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .map(|k| (strsim::jaro_winkler(&lower, &k.to_lowercase()), k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// One line for `name`, which none of the tools `known` is: the nearest of them, or all of
/// them, sorted.
pub fn unknown_tool_line<'a>(name: &str, known: impl Iterator<Item = &'a str> + Clone) -> String {
    match nearest_name(name, known.clone()) {
        Some(near) => format!("unknown tool `{name}`; did you mean `{near}`?"),
        None => {
            let mut all: Vec<&str> = known.collect();
            all.sort_unstable();
            format!("unknown tool `{name}`; the tools are: {}", all.join(", "))
        }
    }
}

impl ToolRegistry {
    /// One line for `name`, which no tool of this registry has: the nearest name it has, or
    /// the names it has.
    pub fn unknown_tool(&self, name: &str) -> String {
        unknown_tool_line(name, self.names())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_patch_is_apply_patch_and_other_names_are_themselves() {
        assert_eq!(canonical_tool_name("patch"), "apply_patch");
        assert_eq!(canonical_tool_name("apply_patch"), "apply_patch");
        assert_eq!(canonical_tool_name("bash"), "bash");
    }

    #[test]
    fn a_near_name_is_found_and_a_far_one_is_not() {
        let known = ["bash", "read", "write", "apply_patch"];
        assert_eq!(nearest_name("Bash", known.into_iter()), Some("bash"));
        assert_eq!(nearest_name("reed", known.into_iter()), Some("read"));
        assert_eq!(nearest_name("kubectl", known.into_iter()), None);
    }
}
