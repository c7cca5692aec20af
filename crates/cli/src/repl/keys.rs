//! The keys the prompt gives a meaning beyond editing (Emacs keys otherwise): a paste goes
//! into the line whole (`paste`), and Esc twice within [`DOUBLE_ESC`] clears the line, or at
//! an empty prompt opens the rewind list, as in Claude Code; Shift-Tab (bound in `editor`)
//! switches the approval mode.

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use reedline::{EditCommand, EditMode, Emacs, PromptEditMode, ReedlineEvent, ReedlineRawEvent};

use super::paste::Pastes;

/// Two Esc presses this close are one double Esc.
const DOUBLE_ESC: Duration = Duration::from_millis(800);

/// What the editor hands back for a double Esc, in place of a line: no typed line is ever
/// this (the editor takes no control characters into its line).
pub const DOUBLE_ESC_SIGNAL: &str = "\u{1b}\u{1b}";

/// What the editor hands back for Shift-Tab (bound in `editor`), in place of a line.
pub const NEXT_MODE_SIGNAL: &str = "\u{1b}[Z";

/// Emacs editing with the prompt's own keys.
pub struct PromptKeys {
    keys: Emacs,
    pastes: Pastes,
    /// When Esc was last pressed alone.
    last_escape: Option<Instant>,
}

impl PromptKeys {
    /// Emacs editing with `keys`, pastes kept in `pastes`.
    pub fn new(keys: Emacs, pastes: Pastes) -> Self {
        Self {
            keys,
            pastes,
            last_escape: None,
        }
    }
}

impl EditMode for PromptKeys {
    fn parse_event(&mut self, event: ReedlineRawEvent) -> ReedlineEvent {
        let event = Event::from(event);
        if let Event::Paste(body) = &event {
            return ReedlineEvent::Edit(vec![EditCommand::InsertString(self.pastes.insert(body))]);
        }
        let escape = matches!(
            event,
            Event::Key(KeyEvent {
                code: KeyCode::Esc,
                modifiers: KeyModifiers::NONE,
                ..
            })
        );
        if escape {
            let now = Instant::now();
            if self
                .last_escape
                .take()
                .is_some_and(|at| now.duration_since(at) < DOUBLE_ESC)
            {
                // A menu open closes first; the line is the REPL's to look at.
                return ReedlineEvent::Multiple(vec![
                    ReedlineEvent::Esc,
                    ReedlineEvent::ExecuteHostCommand(DOUBLE_ESC_SIGNAL.to_owned()),
                ]);
            }
            self.last_escape = Some(now);
        } else if matches!(event, Event::Key(_)) {
            self.last_escape = None;
        }
        match ReedlineRawEvent::try_from(event) {
            Ok(event) => self.keys.parse_event(event),
            Err(()) => ReedlineEvent::None,
        }
    }

    fn edit_mode(&self) -> PromptEditMode {
        self.keys.edit_mode()
    }
}
