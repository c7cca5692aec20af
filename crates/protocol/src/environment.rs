//! The environment block of a system prompt: what the model is told of the machine and the
//! moment a run works in (the date, the OS, the shell, the repository's branch and status),
//! as Claude Code and Codex tell theirs. It ends the run's instructions, between
//! [`OPEN`] and [`CLOSE`], so what depends on the day or the working tree can be told apart
//! from what a recorded request must match (`wonopcode_providers::transcript`).

/// Where the block starts.
pub const OPEN: &str = "<environment>";

/// Where it ends.
pub const CLOSE: &str = "</environment>";

/// `lines` as the block.
pub fn block(lines: &[String]) -> String {
    format!("{OPEN}\n{}\n{CLOSE}", lines.join("\n"))
}

/// `system` without its environment block (and the blank line before it): what stays the
/// same from one day, and one working tree, to the next.
pub fn without(system: &str) -> std::borrow::Cow<'_, str> {
    let Some(start) = system.rfind(OPEN) else {
        return system.into();
    };
    let Some(end) = system[start..].find(CLOSE).map(|e| start + e + CLOSE.len()) else {
        return system.into();
    };
    let before = system[..start].trim_end_matches('\n');
    format!("{before}{}", &system[end..]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_is_left_out_and_the_rest_kept() {
        let system = format!(
            "Be brief.\n\n{}",
            block(&["Today's date: 2026-12-02".to_owned()])
        );
        assert_eq!(without(&system), "Be brief.");
        assert_eq!(without("no block"), "no block");
        assert_eq!(
            without("open <environment> only"),
            "open <environment> only"
        );
    }
}
