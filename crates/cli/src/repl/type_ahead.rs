//! Typing while a turn runs. The terminal stops echoing (what is typed would land in the
//! middle of the status lines) and stops waiting for Enter, and a thread reads the keys:
//! the line being typed is drawn under the status (`crate::render::typed`), Enter sends it
//! into the running turn at its next model request (steering, as Codex's Enter does while
//! a turn runs), and Tab keeps it to send as a prompt once the turn ends (Codex's Tab).
//! What is typed without either comes back in the line editor. Ctrl-C still interrupts: the
//! terminal keeps turning it into SIGINT.
//!
//! A question asked during the turn (an approval, a guest's or a server's) takes the
//! keyboard with [`question`]: keys typed before it was drawn stay typed text and never
//! answer it, and it reads its answer with the terminal as it was. It is told whether the
//! person was typing as it appeared, so a one-key question can wait for them to stop
//! (`crate::prompter`): the next letter of a steering line is not an answer.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, poll};
use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices, Termios};
use parking_lot::Mutex;
use wonopcode_agent_loop::Steering;
use wonopcode_session::TurnCanceller;

use crate::render::typed::{TypedLines, Typing};

/// How long the reader waits for a key before it looks whether to stop or pause.
const POLL: u16 = 50;

/// A text key pressed this recently before a question appeared means the person was typing.
const TYPING: Duration = Duration::from_secs(1);

/// The type-ahead of the turn that is running, for [`question`] to find.
static ACTIVE: Mutex<Option<Arc<Reader>>> = Mutex::new(None);

/// A key that changes the typed line, decoded from the terminal's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Text(String),
    Backspace,
    /// Ctrl-U.
    ClearLine,
    /// Ctrl-W.
    DeleteWord,
    /// Enter; `pasted` when more text came with it at once (a pasted newline).
    Enter {
        pasted: bool,
    },
    Tab,
    /// Esc pressed alone: interrupts the turn, as in Claude Code and Codex.
    Escape,
}

/// How long after an ESC byte the rest of an escape sequence may come; none by then, and it
/// was the Esc key. Terminals write a sequence at once, so this is only the scheduler's slack.
const ESCAPE_ALONE: u16 = 30;

/// Turns the terminal's bytes into keys: UTF-8 text, the editing keys, Esc, and escape
/// sequences (arrows, function keys), which are skipped.
#[derive(Default)]
struct Decoder {
    /// Bytes of a character not complete yet.
    partial: Vec<u8>,
    escape: Escape,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    /// After ESC.
    Started,
    /// In `ESC [ …`, until its final byte.
    Csi,
    /// After `ESC O`: one more byte.
    Ss3,
}

impl Decoder {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        let mut keys = Vec::new();
        let mut text = String::new();
        for (i, &byte) in bytes.iter().enumerate() {
            match self.escape {
                Escape::Started => {
                    self.escape = match byte {
                        b'[' => Escape::Csi,
                        b'O' => Escape::Ss3,
                        // Esc twice: the first was the key.
                        0x1b => {
                            if !text.is_empty() {
                                keys.push(Key::Text(std::mem::take(&mut text)));
                            }
                            keys.push(Key::Escape);
                            Escape::Started
                        }
                        // Alt with a key: skipped, as the editing keys it stands for are.
                        _ => Escape::None,
                    };
                    continue;
                }
                Escape::Csi => {
                    if (0x40..=0x7e).contains(&byte) {
                        self.escape = Escape::None;
                    }
                    continue;
                }
                Escape::Ss3 => {
                    self.escape = Escape::None;
                    continue;
                }
                Escape::None => {}
            }
            if byte >= 0x80 {
                self.partial.push(byte);
                match std::str::from_utf8(&self.partial) {
                    Ok(c) => {
                        text.push_str(c);
                        self.partial.clear();
                    }
                    Err(e) if e.error_len().is_some() || self.partial.len() >= 4 => {
                        self.partial.clear();
                    }
                    Err(_) => {}
                }
                continue;
            }
            self.partial.clear();
            let key = match byte {
                0x20..=0x7e => {
                    text.push(char::from(byte));
                    continue;
                }
                b'\r' | b'\n' => {
                    // A CR LF pair is one Enter.
                    if byte == b'\n' && i > 0 && bytes[i - 1] == b'\r' {
                        continue;
                    }
                    let rest = &bytes[i + 1..];
                    let rest = rest
                        .strip_prefix(b"\n")
                        .filter(|_| byte == b'\r')
                        .unwrap_or(rest);
                    Key::Enter {
                        pasted: !rest.is_empty(),
                    }
                }
                b'\t' => Key::Tab,
                0x7f | 0x08 => Key::Backspace,
                0x15 => Key::ClearLine,
                0x17 => Key::DeleteWord,
                0x1b => {
                    self.escape = Escape::Started;
                    continue;
                }
                _ => continue,
            };
            if !text.is_empty() {
                keys.push(Key::Text(std::mem::take(&mut text)));
            }
            keys.push(key);
        }
        if !text.is_empty() {
            keys.push(Key::Text(text));
        }
        keys
    }

    /// Whether the bytes fed so far end with an ESC that may start a sequence.
    fn after_escape(&self) -> bool {
        self.escape == Escape::Started
    }

    /// The ESC that ended the bytes fed was the Esc key (nothing followed it in time).
    fn escape_alone(&mut self) -> Option<Key> {
        self.after_escape().then(|| {
            self.escape = Escape::None;
            Key::Escape
        })
    }
}

/// What a key asks to send: the typed line, into the turn or after it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Send {
    IntoTurn(String),
    AfterTurn(String),
    /// Esc: the turn is to stop; the typed line stays.
    Interrupt,
}

/// Applies `key` to the typed line; what it sends, if it sends the line.
fn apply(draft: &mut String, key: Key) -> Option<Send> {
    match key {
        Key::Text(text) => draft.push_str(&text),
        Key::Backspace => {
            draft.pop();
        }
        Key::ClearLine => draft.clear(),
        Key::DeleteWord => {
            let kept = draft
                .trim_end()
                .trim_end_matches(|c: char| !c.is_whitespace());
            draft.truncate(kept.len());
        }
        Key::Enter { pasted: true } => draft.push('\n'),
        Key::Enter { pasted: false } | Key::Tab if draft.trim().is_empty() => draft.clear(),
        Key::Enter { pasted: false } => {
            return Some(Send::IntoTurn(std::mem::take(draft).trim().to_owned()));
        }
        Key::Tab => return Some(Send::AfterTurn(std::mem::take(draft).trim().to_owned())),
        Key::Escape => return Some(Send::Interrupt),
    }
    None
}

/// The terminal's modes: as the person had it, and without echo or line editing.
struct Modes {
    cooked: Termios,
    quiet: Termios,
}

impl Modes {
    /// The modes of stdin, a terminal; `None` where it is not one.
    fn of_stdin() -> Option<Self> {
        let cooked = termios::tcgetattr(std::io::stdin()).ok()?;
        let mut quiet = cooked.clone();
        quiet
            .local_flags
            .remove(LocalFlags::ECHO | LocalFlags::ICANON);
        quiet.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        quiet.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        Some(Self { cooked, quiet })
    }

    fn set(mode: &Termios) {
        let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, mode);
    }
}

/// The reader's state, shared with [`question`].
struct Reader {
    decoder: Mutex<Decoder>,
    typed: TypedLines,
    steering: Steering,
    /// Stops the turn when Esc is pressed.
    canceller: TurnCanceller,
    /// (`Termios` is not `Sync`.)
    modes: Mutex<Modes>,
    /// Held while the keyboard is read, by the thread or by a question.
    reading: Mutex<()>,
    /// Set while a question has the keyboard: the thread waits.
    paused: AtomicBool,
    /// When the last text key was read.
    last_key: Mutex<Option<std::time::Instant>>,
    stop: AtomicBool,
}

impl Reader {
    /// The terminal as the person had it.
    fn cooked(&self) {
        Modes::set(&self.modes.lock().cooked);
    }

    /// The terminal without echo or line editing.
    fn quiet(&self) {
        Modes::set(&self.modes.lock().quiet);
    }

    /// Reads what the terminal holds now, without waiting; whether the terminal is gone.
    fn read_waiting(&self) -> bool {
        self.read(0u8)
    }

    /// Reads keys, waiting up to `timeout` for the first; whether the terminal is gone.
    fn read(&self, timeout: impl Into<nix::poll::PollTimeout>) -> bool {
        let stdin = std::io::stdin();
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) | Err(Errno::EINTR) => return false,
            Ok(_) => {}
            Err(_) => return true,
        }
        let closed = fds[0].revents().is_some_and(|r| {
            r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
                && !r.contains(PollFlags::POLLIN)
        });
        if closed {
            return true;
        }
        let mut buf = [0u8; 1024];
        let n = match nix::unistd::read(stdin.as_fd(), &mut buf) {
            Ok(0) => return true,
            Ok(n) => n,
            Err(Errno::EINTR | Errno::EAGAIN) => return false,
            Err(_) => return true,
        };
        let mut keys = self.decoder.lock().feed(&buf[..n]);
        if self.decoder.lock().after_escape() {
            let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
            if matches!(poll(&mut fds, ESCAPE_ALONE), Ok(0)) {
                keys.extend(self.decoder.lock().escape_alone());
            }
        }
        // Text is typing; an Enter left from a question's `y⏎` is not.
        if keys.iter().any(|k| matches!(k, Key::Text(_))) {
            *self.last_key.lock() = Some(std::time::Instant::now());
        }
        if keys.is_empty() {
            return false;
        }
        let mut interrupt = false;
        self.typed.update(|typing| {
            for key in keys {
                match apply(&mut typing.draft, key) {
                    // Drawn from the inbox as the update redraws.
                    Some(Send::IntoTurn(text)) => self.steering.send(text),
                    Some(Send::AfterTurn(text)) => typing.queued.push(text),
                    Some(Send::Interrupt) => interrupt = true,
                    None => {}
                }
            }
        });
        if interrupt && self.canceller.cancel() {
            self.typed.say("cancelling the turn (Esc)");
        }
        false
    }
}

/// The keyboard read while a turn runs; [`TypeAhead::stop`] gives back what was typed.
pub struct TypeAhead {
    reader: Arc<Reader>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TypeAhead {
    /// Starts reading the keyboard for a turn; what Enter sends goes to `steering`, Esc
    /// stops the turn through `canceller`, and what is typed is drawn by `typed`. `None`
    /// where stdin is not a terminal.
    pub fn start(typed: TypedLines, steering: Steering, canceller: TurnCanceller) -> Option<Self> {
        let modes = Modes::of_stdin()?;
        Modes::set(&modes.quiet);
        typed.attach(steering.clone());
        let reader = Arc::new(Reader {
            decoder: Mutex::default(),
            typed,
            steering,
            canceller,
            modes: Mutex::new(modes),
            reading: Mutex::new(()),
            paused: AtomicBool::new(false),
            last_key: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        *ACTIVE.lock() = Some(reader.clone());
        let thread = {
            let reader = reader.clone();
            std::thread::spawn(move || {
                while !reader.stop.load(Ordering::SeqCst) {
                    if reader.paused.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(u64::from(POLL)));
                        continue;
                    }
                    let _reading = reader.reading.lock();
                    if reader.read(POLL) {
                        break;
                    }
                }
            })
        };
        Some(Self {
            reader,
            thread: Some(thread),
        })
    }

    /// Stops reading and puts the terminal back as it was: what was typed (keys typed up
    /// to now included). Texts sent into the turn that no request took are the
    /// session's inbox's to give back, not this.
    pub fn stop(mut self) -> Typing {
        self.finish();
        self.reader.typed.take()
    }

    fn finish(&mut self) {
        self.reader.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.reader.read_waiting();
        *ACTIVE.lock() = None;
        self.reader.cooked();
    }
}

impl Drop for TypeAhead {
    /// A turn that ends by an error still gives the terminal back.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}

/// Runs `ask`, a question read from the terminal, with the keyboard its own: keys typed
/// before it stay typed text, and the terminal echoes and edits lines as it did before the
/// turn. `ask` is told whether the person pressed a key in the last [`TYPING`]. Without a
/// type-ahead running, `ask(false)`: the question looks at what waits itself.
pub fn question<R>(ask: impl FnOnce(bool) -> R) -> R {
    let active = ACTIVE.lock().clone();
    let Some(reader) = active else {
        return ask(false);
    };
    reader.paused.store(true, Ordering::SeqCst);
    let answer = {
        let _reading = reader.reading.lock();
        reader.read_waiting();
        let typing = reader
            .last_key
            .lock()
            .is_some_and(|at| at.elapsed() < TYPING);
        reader.cooked();
        let answer = ask(typing);
        reader.quiet();
        answer
    };
    reader.paused.store(false, Ordering::SeqCst);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(chunks: &[&[u8]]) -> (String, Vec<Send>) {
        let mut decoder = Decoder::default();
        let mut draft = String::new();
        let mut sent = Vec::new();
        for chunk in chunks {
            for key in decoder.feed(chunk) {
                sent.extend(apply(&mut draft, key));
            }
        }
        (draft, sent)
    }

    #[test]
    fn enter_sends_into_the_turn_and_tab_after_it() {
        let (draft, sent) = typed(&[b"use tabs\r", b"then add tests\t", b"half"]);
        assert_eq!(draft, "half");
        assert_eq!(
            sent,
            [
                Send::IntoTurn("use tabs".to_owned()),
                Send::AfterTurn("then add tests".to_owned())
            ]
        );
        // Nothing typed: nothing sent.
        assert_eq!(typed(&[b"  \r\t"]), (String::new(), vec![]));
    }

    #[test]
    fn editing_keys_edit_and_escape_sequences_are_skipped() {
        let (draft, _) = typed(&[b"helo\x7fp wor", b"\x1b[D\x1b[1;5C\x1bOA", b"ld"]);
        assert_eq!(draft, "help world");
        assert_eq!(typed(&[b"one two  \x17"]).0, "one ");
        assert_eq!(typed(&[b"gone\x15kept"]).0, "kept");
    }

    #[test]
    fn esc_alone_interrupts_and_eats_no_key_typed_after_it() {
        let mut decoder = Decoder::default();
        assert!(decoder.feed(b"\x1b").is_empty());
        assert_eq!(decoder.escape_alone(), Some(Key::Escape));
        assert_eq!(decoder.feed(b"xyz"), [Key::Text("xyz".to_owned())]);
        // A sequence split after its ESC is still a sequence.
        assert!(decoder.feed(b"\x1b").is_empty());
        assert_eq!(decoder.feed(b"[Dab"), [Key::Text("ab".to_owned())]);
        // Esc twice in one read: the first is a key, the second waits for what follows.
        assert_eq!(
            decoder.feed(b"a\x1b\x1b"),
            [Key::Text("a".to_owned()), Key::Escape]
        );
        assert_eq!(decoder.escape_alone(), Some(Key::Escape));
        assert_eq!(decoder.escape_alone(), None);
        let mut draft = "kept".to_owned();
        assert_eq!(apply(&mut draft, Key::Escape), Some(Send::Interrupt));
        assert_eq!(draft, "kept");
    }

    #[test]
    fn characters_split_across_reads_are_joined_and_a_paste_keeps_its_newlines() {
        let bytes = "café ✓".as_bytes();
        let (draft, _) = typed(&[&bytes[..4], &bytes[4..7], &bytes[7..]]);
        assert_eq!(draft, "café ✓");
        // A pasted block: its newlines stay in the line; the Enter typed after it sends it.
        let (draft, sent) = typed(&[b"first\r\nsecond\nthird", b"\r"]);
        assert!(draft.is_empty());
        assert_eq!(sent, [Send::IntoTurn("first\nsecond\nthird".to_owned())]);
    }
}
