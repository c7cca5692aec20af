//! The approval mode at the REPL, as Claude Code's Shift-Tab cycles it: ask, accept edits,
//! plan. The prompt says the mode it is in; a turn that ends in plan mode asks whether to
//! carry the plan out, and a yes leaves plan mode and sends the prompt that does it.

use wonopcode_agent_loop::LoopResult;
use wonopcode_protocol::LoopStatus;
use wonopcode_tools::permission::Mode;

use crate::prompter::{Keys, read_key, read_line};
use crate::run::Cli;

/// The prompt sent when the person approves a plan.
pub const CARRY_OUT: &str = "The plan is approved: carry it out.";

/// The prompt's marker in `mode`: `>` alone when asking, the mode's name before it else.
pub fn marker(mode: Mode) -> String {
    let arrow = console::style(">").cyan().bold();
    match mode {
        Mode::Ask => arrow.to_string(),
        other => format!("{} {arrow}", console::style(other.label()).yellow()),
    }
}

/// The line said when the mode becomes `mode`.
fn said(mode: Mode) -> String {
    let what = match mode {
        Mode::Ask => "approvals as the rules say",
        Mode::AcceptEdits => "file edits run without a question; commands still ask",
        Mode::Plan => {
            "read-only: the model plans, and you approve the plan before anything is written"
        }
    };
    format!(
        "mode: {} — {what} (Shift-Tab: {})",
        mode.label(),
        mode.next().label()
    )
}

impl Cli {
    /// Shift-Tab: the next mode.
    pub(super) fn next_mode(&self) {
        self.switch_mode(self.session.mode().next());
    }

    /// Switches to `mode`, said in one line.
    fn switch_mode(&self, mode: Mode) {
        self.session.set_mode(mode);
        eprintln!("{}", console::style(said(mode)).dim());
    }

    /// After a turn: when it gave a plan in plan mode, asks whether to carry it out. A yes
    /// switches the mode (accept edits, or ask before each edit) and gives the prompt to
    /// send; no keeps planning.
    pub(super) async fn approve_plan(&self, result: &LoopResult) -> Option<String> {
        let planned = result.status == LoopStatus::Complete
            && result
                .response
                .as_deref()
                .is_some_and(|r| !r.trim().is_empty());
        if self.session.mode() != Mode::Plan || !planned {
            return None;
        }
        let asked = "carry out this plan? [y] yes, accepting edits · [a] yes, asking before each edit · [n] no, keep planning ";
        let keys = Keys::choice(
            [
                ('y', "yes, accepting edits"),
                ('a', "yes, asking before each edit"),
                ('n', "no, keep planning"),
            ],
            "y (yes, accepting edits), a (yes, asking before each edit), or n, Esc or Enter (no, keep planning)",
            'n',
            'n',
        );
        let key = match read_key(asked.to_owned(), self.progress.clone(), keys).await {
            Some(key) => key,
            None => read_line(asked.to_owned(), self.progress.clone())
                .await
                .and_then(|line| line.trim().chars().next())
                .unwrap_or('n'),
        };
        let mode = match key.to_ascii_lowercase() {
            'y' => Mode::AcceptEdits,
            'a' => Mode::Ask,
            _ => return None,
        };
        self.switch_mode(mode);
        Some(CARRY_OUT.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_names_the_one_shift_tab_goes_to() {
        assert!(said(Mode::Ask).ends_with("(Shift-Tab: accept edits)"));
        assert!(said(Mode::Plan).starts_with("mode: plan — read-only"));
        assert!(console::strip_ansi_codes(&marker(Mode::Plan)).starts_with("plan >"));
        assert_eq!(console::strip_ansi_codes(&marker(Mode::Ask)), ">");
    }
}
