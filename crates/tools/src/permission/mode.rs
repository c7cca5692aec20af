//! The approval mode a person switches while they work (Claude Code's permission modes,
//! cycled with Shift-Tab at the REPL, chosen at start with `--permission-mode`): it lies
//! over the rules, so switching back gives the rules as they were written.

use serde::{Deserialize, Serialize};
use wonopcode_protocol::ToolKind;

use super::rules::Action;

/// The built-in tools that change files: what `AcceptEdits` lets run and `Plan` refuses.
pub const FILE_EDIT_TOOLS: &[&str] = &["write", "edit", "apply_patch"];

/// How calls are approved beside the rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// As the rules say.
    #[default]
    Ask,
    /// File edits run without a question (a rule that denies one still does).
    AcceptEdits,
    /// Read-only: file edits are refused whatever allows them, and every other call that
    /// changes something is asked about; the model plans, and its plan is approved before
    /// anything is written.
    Plan,
}

impl Mode {
    /// The mode after this one, in the order Shift-Tab goes: ask, accept edits, plan.
    pub fn next(self) -> Self {
        match self {
            Self::Ask => Self::AcceptEdits,
            Self::AcceptEdits => Self::Plan,
            Self::Plan => Self::Ask,
        }
    }

    /// Whether this is the default (for settings that omit it).
    pub fn is_ask(&self) -> bool {
        *self == Self::Ask
    }

    /// The mode in a few words, as the prompt and the banner say it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::AcceptEdits => "accept edits",
            Self::Plan => "plan",
        }
    }

    /// Whether this mode refuses `tool` whatever allows it: plan mode's file edits.
    pub fn refuses(self, tool: &str) -> bool {
        self == Self::Plan && FILE_EDIT_TOOLS.contains(&tool)
    }

    /// The action for `tool`'s call of `kind`, which the rules gave `ruled` (`written`: a
    /// rule the person wrote, not the default for its kind, so an `ask` rule for an edit
    /// still asks in accept-edits mode).
    pub fn over(self, tool: &str, kind: ToolKind, ruled: Action, written: bool) -> Action {
        if self.refuses(tool) {
            return Action::Deny;
        }
        let edits = FILE_EDIT_TOOLS.contains(&tool);
        match self {
            Self::Ask => ruled,
            Self::AcceptEdits if edits && (!written || ruled == Action::Allow) => Action::Allow,
            Self::AcceptEdits => ruled,
            Self::Plan if kind == ToolKind::Mutating && ruled == Action::Allow => Action::Ask,
            Self::Plan => ruled,
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_tab_goes_round_the_three_modes() {
        assert_eq!(Mode::Ask.next(), Mode::AcceptEdits);
        assert_eq!(Mode::AcceptEdits.next(), Mode::Plan);
        assert_eq!(Mode::Plan.next(), Mode::Ask);
    }

    #[test]
    fn accept_edits_allows_edits_no_rule_asks_about_or_denies() {
        let m = Mode::AcceptEdits;
        let over = |tool, ruled, written| m.over(tool, ToolKind::Mutating, ruled, written);
        assert_eq!(over("write", Action::Ask, false), Action::Allow);
        assert_eq!(over("write", Action::Ask, true), Action::Ask);
        assert_eq!(over("edit", Action::Deny, true), Action::Deny);
        assert_eq!(over("bash", Action::Ask, false), Action::Ask);
    }

    #[test]
    fn plan_refuses_edits_and_asks_for_what_a_rule_would_let_change_things() {
        let m = Mode::Plan;
        let over = |tool, kind, ruled| m.over(tool, kind, ruled, true);
        assert_eq!(
            over("write", ToolKind::Mutating, Action::Allow),
            Action::Deny
        );
        assert_eq!(over("bash", ToolKind::Mutating, Action::Allow), Action::Ask);
        assert_eq!(
            over("read", ToolKind::ReadOnly, Action::Allow),
            Action::Allow
        );
        assert_eq!(over("bash", ToolKind::Mutating, Action::Deny), Action::Deny);
    }
}
