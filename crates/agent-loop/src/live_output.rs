//! What a running tool prints, shown while it runs: a command's last lines as `item.updated`
//! events of its call's item (status `in_progress`, `output` the lines so far), so a person
//! watches a long build or test run work instead of a spinner. A call that ends within
//! [`FIRST_AFTER`] sends none, so quick calls add no events; after that, at most one every
//! [`EVERY`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use wonopcode_protocol::event::{Emitter, EventKind, Item, ItemDetails, ItemStatus, ToolCallItem};

/// How long a call runs before its output is shown live.
pub const FIRST_AFTER: Duration = Duration::from_millis(150);

/// The least time between two updates.
pub const EVERY: Duration = Duration::from_millis(100);

/// Bytes of the end of the output kept for showing (whole lines where it can).
const KEPT: usize = 2048;

/// Where a running tool writes what it prints; cloned to each of its pipes.
#[derive(Clone)]
pub struct LiveOutput {
    emitter: Emitter,
    id: String,
    item: Arc<ToolCallItem>,
    state: Arc<Mutex<State>>,
}

struct State {
    started: Instant,
    last: Option<Instant>,
    tail: String,
}

impl LiveOutput {
    /// Live output for the call shown as item `id` (`item`, in progress), through `emitter`.
    pub fn new(emitter: Emitter, id: String, item: ToolCallItem) -> Self {
        Self {
            emitter,
            id,
            item: Arc::new(item),
            state: Arc::new(Mutex::new(State {
                started: Instant::now(),
                last: None,
                tail: String::new(),
            })),
        }
    }

    /// Takes in `bytes` the tool printed; shows the last lines when it is time to.
    pub fn push(&self, bytes: &[u8]) {
        let shown = {
            let mut state = self.state.lock();
            state.tail.push_str(&String::from_utf8_lossy(bytes));
            if state.tail.len() > KEPT {
                let mut cut = state.tail.len() - KEPT;
                while !state.tail.is_char_boundary(cut) {
                    cut += 1;
                }
                // From the next whole line where there is one.
                if let Some(newline) = state.tail[cut..].find('\n') {
                    cut += newline + 1;
                }
                state.tail.drain(..cut);
            }
            let now = Instant::now();
            let due = now.duration_since(state.started) >= FIRST_AFTER
                && state
                    .last
                    .is_none_or(|last| now.duration_since(last) >= EVERY);
            if !due {
                return;
            }
            state.last = Some(now);
            as_drawn(&state.tail)
        };
        self.emitter.emit(EventKind::ItemUpdated {
            item: Item {
                id: self.id.clone(),
                details: ItemDetails::for_call(ToolCallItem {
                    status: ItemStatus::InProgress,
                    output: Some(shown),
                    ..(*self.item).clone()
                }),
            },
        });
    }
}

/// `text` as a terminal would leave it, in plain characters: each line from its last
/// carriage return (a progress line drawn over itself), colour and cursor sequences left out.
fn as_drawn(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let line = line.rsplit('\r').next().unwrap_or(line);
            without_sequences(line)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `line` without its CSI sequences (`ESC [`, parameters, a final byte `@` to `~`).
fn without_sequences(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

impl std::fmt::Debug for LiveOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveOutput")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wonopcode_protocol::ContextPath;
    use wonopcode_protocol::event::{Event, EventSink};

    #[derive(Default)]
    struct Kept(Mutex<Vec<Event>>);
    impl EventSink for Kept {
        fn emit(&self, event: Event) {
            self.0.lock().push(event);
        }
    }

    fn item() -> ToolCallItem {
        ToolCallItem::in_progress("c1".into(), "bash".into(), "{}".into())
    }

    fn shown(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ItemUpdated { item } => match &item.details {
                    ItemDetails::ToolCall(call) => call.output.clone(),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    #[test]
    fn output_is_shown_as_a_terminal_leaves_it() {
        assert_eq!(
            as_drawn("\u{1b}[32mok\u{1b}[0m\n 10%\r 50%\r100%\r\nend"),
            "ok\n100%\nend"
        );
    }

    #[test]
    fn a_quick_call_shows_nothing_and_a_long_one_its_last_lines_now_and_then() {
        let kept = Arc::new(Kept::default());
        let emitter = Emitter::new(kept.clone(), ContextPath::root());
        let live = LiveOutput::new(emitter, "item_0".into(), item());
        live.push(b"one\n");
        assert!(shown(&kept.0.lock()).is_empty(), "shown before it was due");
        std::thread::sleep(FIRST_AFTER);
        live.push(b"two\n");
        // Within `EVERY` of the last: kept, not shown yet.
        live.push(b"three\n");
        assert_eq!(shown(&kept.0.lock()), ["one\ntwo\n"]);
        std::thread::sleep(EVERY);
        live.push(&vec![b'x'; KEPT * 2]);
        let all = shown(&kept.0.lock());
        assert_eq!(all.len(), 2);
        assert!(all[1].len() <= KEPT, "{}", all[1].len());
    }
}
