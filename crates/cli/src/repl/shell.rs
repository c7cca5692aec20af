//! What the person does at the prompt that is no prompt, told to the model with the next
//! one. `!cmd`, as Claude Code's bash mode: the command runs at once with the
//! run's `bash` tool (in the workspace, in the sandbox, no approval asked: the person typed
//! it), its output is shown, and the command with its output goes to the model with the
//! next prompt, so it knows what the person saw.

/// Lines of a command's output shown at the prompt; the model gets all the tool gave.
const SHOWN_LINES: usize = 200;

/// What the model is told of a command the person ran.
pub fn note(command: &str, said: &str) -> String {
    format!("<bash-input>{command}</bash-input>\n<bash-output>{said}</bash-output>")
}

/// What the model is told of a line the person added to an instruction file (`# note`).
pub fn memory_note(file: &str, note: &str) -> String {
    format!("<memory-added file=\"{file}\">{note}</memory-added>")
}

/// `prompt` after what the person did at the prompt since the last one (`!` commands,
/// `#` notes), said as such.
pub fn with_notes(notes: Vec<String>, prompt: String) -> String {
    if notes.is_empty() {
        return prompt;
    }
    format!(
        "Before this prompt, the person did this in the workspace:\n{}\n\n{prompt}",
        notes.join("\n")
    )
}

/// The output as shown at the prompt: its first [`SHOWN_LINES`] lines.
pub fn shown(said: &str) -> String {
    let lines: Vec<&str> = said.lines().collect();
    let mut out = lines[..lines.len().min(SHOWN_LINES)].join("\n");
    if lines.len() > SHOWN_LINES {
        out.push_str(&format!("\n… {} more lines", lines.len() - SHOWN_LINES));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_go_before_the_next_prompt_and_none_leave_it_as_typed() {
        assert_eq!(with_notes(Vec::new(), "hi".into()), "hi");
        let told = with_notes(
            vec![note("ls", "a.txt\nexit code: 0")],
            "what is here?".into(),
        );
        assert_eq!(
            told,
            "Before this prompt, the person did this in the workspace:\n<bash-input>ls</bash-input>\n<bash-output>a.txt\nexit code: 0</bash-output>\n\nwhat is here?"
        );
        let long: String = (0..250).map(|n| format!("{n}\n")).collect();
        assert!(shown(&long).ends_with("199\n… 50 more lines"));
    }
}
