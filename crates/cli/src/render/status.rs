//! The status lines of a running turn, in the style of Codex's "Working" line: one for the
//! root while its turn runs and one for each sub-context while it runs, each with the time
//! it has taken, the tokens it has streamed so far (estimated at 4 bytes a token, the rule
//! compaction uses) and, for the root, how to interrupt. They are hidden while text streams
//! onto a line, since a line drawn there would erase it, and come back when the line ends.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressState, ProgressStyle};
use wonopcode_protocol::ContextPath;

use super::typed::TypedLines;

/// How often a status line redraws (its spinner and its time).
const TICK: Duration = Duration::from_millis(100);

/// A context that is working.
struct Working {
    /// `Working` for the root, `[0.1 coder] working` for a sub-context.
    label: String,
    started: Instant,
    streamed_bytes: usize,
    /// Drawn now; `None` while hidden.
    bar: Option<ProgressBar>,
}

impl Working {
    fn message(&self, root: bool) -> String {
        let tokens = match self.streamed_bytes {
            0 => String::new(),
            bytes => format!(" · ~{} tokens", bytes.div_ceil(4)),
        };
        let interrupt = if root { " · Ctrl-C to interrupt" } else { "" };
        format!("{tokens}{interrupt})")
    }
}

/// The working contexts' status lines.
pub struct StatusLines {
    progress: MultiProgress,
    /// What the person types meanwhile, drawn under these lines.
    typed: TypedLines,
    /// By context path, as numbers so `0.10` comes after `0.9`.
    working: BTreeMap<Vec<u32>, Working>,
    shown: bool,
    /// Status lines drawn afresh so far: each restarts its spinner.
    drawn: std::cell::Cell<usize>,
}

impl StatusLines {
    /// Status lines drawn through `progress` above `typed`, shown until
    /// [`StatusLines::show`] says not.
    pub fn new(progress: MultiProgress, typed: TypedLines) -> Self {
        Self {
            progress,
            typed,
            working: BTreeMap::new(),
            shown: true,
            drawn: std::cell::Cell::new(0),
        }
    }

    /// `path` started working, labelled `label`.
    pub fn start(&mut self, path: &ContextPath, label: String) {
        let mut working = Working {
            label,
            started: Instant::now(),
            streamed_bytes: 0,
            bar: None,
        };
        if self.shown {
            working.bar = Some(self.draw(&working, path.depth() == 0));
        }
        if let Some(old) = self.working.insert(path.numbers(), working) {
            self.remove(old);
        }
    }

    /// `path` streamed `bytes` more of text.
    pub fn streamed(&mut self, path: &ContextPath, bytes: usize) {
        if let Some(working) = self.working.get_mut(&path.numbers()) {
            working.streamed_bytes += bytes;
            let message = working.message(path.depth() == 0);
            if let Some(bar) = &working.bar {
                bar.set_message(message);
            }
        }
    }

    /// `path` is done.
    pub fn stop(&mut self, path: &ContextPath) {
        if let Some(working) = self.working.remove(&path.numbers()) {
            self.remove(working);
        }
    }

    /// Every context is done (the turn ended, or was interrupted).
    pub fn stop_all(&mut self) {
        let working = std::mem::take(&mut self.working);
        for (_, w) in working {
            self.remove(w);
        }
    }

    /// Whether the lines are drawn (not while a line of text is being written), and how
    /// many were drawn afresh so far.
    #[cfg(test)]
    pub fn drawn(&self) -> (bool, usize) {
        (self.shown, self.drawn.get())
    }

    /// Shows the lines, or hides them while a line of text is being written.
    pub fn show(&mut self, shown: bool) {
        if shown == self.shown {
            return;
        }
        self.shown = shown;
        self.typed.show(shown);
        let keys: Vec<Vec<u32>> = self.working.keys().cloned().collect();
        for k in keys {
            let root = k.len() == 1;
            let bar = match self.working.get_mut(&k).and_then(|w| w.bar.take()) {
                Some(bar) => {
                    bar.finish_and_clear();
                    self.progress.remove(&bar);
                    None
                }
                None if shown => self.working.get(&k).map(|w| self.draw(w, root)),
                None => None,
            };
            if let Some(w) = self.working.get_mut(&k) {
                w.bar = bar;
            }
        }
    }

    fn draw(&self, working: &Working, root: bool) -> ProgressBar {
        self.drawn.set(self.drawn.get() + 1);
        let style = ProgressStyle::with_template("{spinner:.cyan} {prefix} {took:.dim}{msg:.dim}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner())
            .with_key(
                "took",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "({:.1} s", state.elapsed().as_secs_f64());
                },
            );
        let bar = ProgressBar::new_spinner()
            .with_elapsed(working.started.elapsed())
            .with_style(style)
            .with_prefix(working.label.clone())
            .with_message(working.message(root));
        let bar = self.progress.add(bar);
        self.typed.keep_last();
        // A ticker is a thread: none where nothing is drawn (stderr not a terminal).
        if !bar.is_hidden() {
            bar.enable_steady_tick(TICK);
        }
        bar
    }

    fn remove(&self, working: Working) {
        if let Some(bar) = working.bar {
            bar.finish_and_clear();
            self.progress.remove(&bar);
        }
    }
}

impl Drop for StatusLines {
    /// No status line stays on the screen after the renderer is gone (an interrupted run).
    fn drop(&mut self) {
        self.stop_all();
    }
}
