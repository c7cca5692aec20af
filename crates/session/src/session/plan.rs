//! What the model is told of plan mode, with the prompt it applies to: that it plans and
//! changes nothing, when a prompt is given in plan mode; that it may change things again,
//! with the first prompt after plan mode ends. Both loops see it, as a text part of the
//! prompt's message (before the prompt's own text, where attachments go); the journal's
//! record of the prompt does not hold it.

use wonopcode_tools::permission::Mode;

/// A prompt given in plan mode carries this.
pub const PLAN_NOTE: &str = "Plan mode: this turn is read-only. Explore and read as you need, change no file and run nothing that changes anything; end with the plan — the steps, the files each touches, how to check it — for the person to approve before anything is done.";

/// The first prompt after plan mode carries this.
pub const PLAN_OVER: &str =
    "Plan mode has ended: files may be changed again, as the approvals allow.";

/// Whether the last prompt was told it is in plan mode.
#[derive(Debug, Default)]
pub struct Told {
    planning: bool,
}

impl Told {
    /// The note for a prompt given in `mode`, if it needs one.
    pub fn note(&mut self, mode: Mode) -> Option<&'static str> {
        let planning = mode == Mode::Plan;
        let was = std::mem::replace(&mut self.planning, planning);
        match (was, planning) {
            (_, true) => Some(PLAN_NOTE),
            (true, false) => Some(PLAN_OVER),
            (false, false) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_plan_prompt_is_told_and_the_first_after_it_hears_it_ended() {
        let mut told = Told::default();
        assert_eq!(told.note(Mode::Ask), None);
        assert_eq!(told.note(Mode::Plan), Some(PLAN_NOTE));
        assert_eq!(told.note(Mode::Plan), Some(PLAN_NOTE));
        assert_eq!(told.note(Mode::AcceptEdits), Some(PLAN_OVER));
        assert_eq!(told.note(Mode::AcceptEdits), None);
    }
}
