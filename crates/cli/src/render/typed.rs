//! What the person typed while a turn runs, drawn under the status lines instead of being
//! echoed into them: the line being typed, what was sent into the turn and waits for its
//! next model request (read from the session's steering inbox itself, so what is drawn is
//! what waits), and what waits for the turn to end. The REPL's type-ahead
//! (`crate::repl::type_ahead`) changes it as keys come; the renderer hides it with the
//! status lines while text streams, and keeps it the last of the lines it draws.

use std::sync::Arc;

use console::style;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use parking_lot::Mutex;
use wonopcode_agent_loop::Steering;

use super::visible::{clip, one_line};

/// What the person has typed during the turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Typing {
    /// The line being typed (Enter or Tab sends it).
    pub draft: String,
    /// To send as prompts once the turn ends (Tab), oldest first.
    pub queued: Vec<String>,
}

impl Typing {
    /// Whether nothing was typed.
    pub fn is_empty(&self) -> bool {
        self.draft.is_empty() && self.queued.is_empty()
    }

    /// The lines drawn for it and for the texts `waiting_texts` in the turn's steering inbox, each
    /// cut to `width` columns.
    fn lines(&self, waiting_texts: &[String], width: usize) -> Vec<String> {
        let max = width.saturating_sub(1).max(10);
        let mut lines = Vec::new();
        let waiting = |label: &str, text: &str| {
            let shown = clip(&one_line(text), max.saturating_sub(label.len() + 4));
            style(format!("  ↳ {label}{shown}")).dim().to_string()
        };
        lines.extend(
            waiting_texts
                .iter()
                .map(|t| waiting("into this turn at its next request: ", t)),
        );
        lines.extend(self.queued.iter().map(|t| waiting("after this turn: ", t)));
        if !self.draft.is_empty() {
            let hint = " (Enter: into this turn · Tab: after it)";
            let shown = clip(&one_line(&self.draft), max.saturating_sub(hint.len() + 2));
            lines.push(format!(
                "{} {shown}{}",
                style("›").cyan().bold(),
                style(hint).dim()
            ));
        }
        lines
    }
}

struct Drawn {
    progress: MultiProgress,
    typing: Typing,
    /// The inbox of the session whose turn runs: its texts are drawn as they wait.
    steering: Steering,
    /// Drawn now; `None` while hidden or empty.
    bar: Option<ProgressBar>,
    /// Whether the status lines are shown (not while text streams).
    shown: bool,
}

/// The typed lines of a turn, shared by the renderer and the REPL (cheap to clone).
#[derive(Clone)]
pub struct TypedLines(Arc<Mutex<Drawn>>);

impl TypedLines {
    /// Lines drawn through `progress`, under whatever it draws.
    pub fn new(progress: MultiProgress) -> Self {
        Self(Arc::new(Mutex::new(Drawn {
            progress,
            typing: Typing::default(),
            steering: Steering::default(),
            bar: None,
            shown: true,
        })))
    }

    /// Changes what was typed, and draws it again.
    pub fn update(&self, change: impl FnOnce(&mut Typing)) {
        let mut drawn = self.0.lock();
        change(&mut drawn.typing);
        drawn.redraw();
    }

    /// Writes `line` above the lines drawn (a note of what a key did).
    pub fn say(&self, line: &str) {
        let drawn = self.0.lock();
        drawn.progress.suspend(|| eprintln!("{line}"));
    }

    /// Draws the texts waiting in `steering` (the inbox of the session whose turns run).
    pub fn attach(&self, steering: Steering) {
        let mut drawn = self.0.lock();
        drawn.steering = steering;
        drawn.redraw();
    }

    /// Draws the lines again: the steering inbox changed (its run took what waited).
    pub fn refresh(&self) {
        self.0.lock().redraw();
    }

    /// Takes what was typed, leaving nothing drawn (the turn ended; what its inbox still
    /// holds is the REPL's to send, and no longer drawn).
    pub fn take(&self) -> Typing {
        let mut drawn = self.0.lock();
        drawn.steering = Steering::default();
        let typing = std::mem::take(&mut drawn.typing);
        drawn.redraw();
        typing
    }

    /// Shows the lines or hides them, with the status lines.
    pub fn show(&self, shown: bool) {
        let mut drawn = self.0.lock();
        if drawn.shown != shown {
            drawn.shown = shown;
            drawn.redraw();
        }
    }

    /// Draws the lines again under a line the renderer has just added.
    pub fn keep_last(&self) {
        let mut drawn = self.0.lock();
        if drawn.bar.is_some() {
            drawn.redraw();
        }
    }
}

impl Drawn {
    fn redraw(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            self.progress.remove(&bar);
        }
        let waiting = self.steering.waiting();
        if !self.shown || (self.typing.is_empty() && waiting.is_empty()) {
            return;
        }
        let width = usize::from(console::Term::stderr().size().1);
        let bar = ProgressBar::new_spinner()
            .with_style(
                ProgressStyle::with_template("{msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            )
            .with_message(self.typing.lines(&waiting, width).join("\n"));
        let bar = self.progress.add(bar);
        // Drawn now: nothing ticks it.
        bar.tick();
        self.bar = Some(bar);
    }
}

impl Drop for Drawn {
    /// Nothing typed stays on the screen after the renderer is gone.
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_typed_text_gets_its_line_cut_to_the_width() {
        let typing = Typing {
            draft: "half a thought".to_owned(),
            queued: vec!["then add tests\nand docs".to_owned(), "x".repeat(200)],
        };
        let lines: Vec<String> = typing
            .lines(&["use tabs".to_owned()], 80)
            .iter()
            .map(|l| console::strip_ansi_codes(l).into_owned())
            .collect();
        assert_eq!(
            lines[..3],
            [
                "  ↳ into this turn at its next request: use tabs",
                "  ↳ after this turn: then add tests\\nand docs",
                &format!("  ↳ after this turn: {}…", "x".repeat(57)),
            ]
        );
        assert_eq!(
            lines[3],
            "› half a thought (Enter: into this turn · Tab: after it)"
        );
        assert!(lines.iter().all(|l| l.chars().count() < 80), "{lines:#?}");
        assert!(Typing::default().lines(&[], 80).is_empty());
    }
}
