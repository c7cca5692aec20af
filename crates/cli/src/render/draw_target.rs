//! Where status lines and spinners are drawn: stderr, each line ended as a terminal keeps
//! it across a resize.
//!
//! indicatif (0.18) writes no newline between the lines it draws: it pads each with spaces
//! to the terminal's width and lets the terminal wrap. A terminal that reflows on resize
//! (most do) then splits every padded line in two when it narrows, and indicatif's next
//! redraw, moving up by the count it drew, stops short: a copy of a status line stays in
//! the scrollback and a line of the answer above is erased. [`UnpaddedLines`] is the
//! terminal indicatif draws on instead: it drops the padding, erases the rest of the row
//! (`ESC[K`, what the padding was for) and ends the line with a newline before the next one,
//! so a line shorter than the new width is never split. indicatif measures every line
//! itself at each redraw (`width()` is read then), so no SIGWINCH handling is needed: the
//! next tick (a tenth of a second) draws at the new width. What is left: narrowing below a
//! status line's own length splits that line, and a part of it can stay behind.
//!
//! While they are drawn the terminal does not echo control keys ([`QuietControlKeys`]): its
//! `^C`, written where the last line ends, would lengthen a line indicatif does not know
//! about, and its next clear could miss a row. Ctrl-C says what it does itself ("cancelling
//! the turn").

use indicatif::{ProgressDrawTarget, TermLike};
use nix::sys::termios::{self, LocalFlags, SetArg, Termios};
use parking_lot::Mutex;

/// How often the lines may be redrawn, as indicatif's own stderr target.
const REFRESH_HZ: u8 = 20;

/// Erases from the cursor to the end of its row.
const ERASE_TO_END_OF_ROW: &str = "\x1b[K";

/// The draw target of a terminal on stderr.
///
/// A `TermLike` target counts as shown (indicatif asks a `Term` only whether it is a
/// terminal): callers build it only when stderr is one. Its spinners take their colours
/// from stdout's setting, as indicatif does for any target that is not its own stderr.
pub fn stderr() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(
        Box::new(UnpaddedLines::on(console::Term::stderr())),
        REFRESH_HZ,
    )
}

/// A terminal that ends each line indicatif draws with an erase and a newline, in place of
/// the spaces indicatif pads it with.
///
/// indicatif draws a frame as: the cursor moved up to the first line and each line
/// cleared, then, for each line, its text and then its padding. So the write after a line's
/// text is its padding; the newline a line is owed is written just before the next line's
/// text, and not after the last one, where indicatif expects the cursor to stay (its next
/// frame moves up by one line fewer than it drew).
#[derive(Debug)]
pub struct UnpaddedLines {
    term: console::Term,
    frame: Mutex<Frame>,
}

/// Where indicatif is in drawing a frame.
#[derive(Debug, Default)]
struct Frame {
    /// A line's text was just written: the next write is its padding.
    padding_next: bool,
    /// A line was written and ended: its newline is written before the next line.
    newline_owed: bool,
}

impl UnpaddedLines {
    /// Lines drawn on `term`.
    pub fn on(term: console::Term) -> Self {
        Self {
            term,
            frame: Mutex::new(Frame::default()),
        }
    }

    /// A move or a clear: indicatif starts a frame (or clears one), and whatever it wrote
    /// last was ended as it expects.
    fn between_frames(&self) {
        *self.frame.lock() = Frame::default();
    }
}

impl TermLike for UnpaddedLines {
    fn width(&self) -> u16 {
        self.term.size().1
    }

    fn height(&self) -> u16 {
        self.term.size().0
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.between_frames();
        self.term.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.between_frames();
        self.term.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.between_frames();
        self.term.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.between_frames();
        self.term.move_cursor_left(n)
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.between_frames();
        self.term.write_line(s)
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        let mut frame = self.frame.lock();
        if frame.padding_next {
            frame.padding_next = false;
            frame.newline_owed = true;
            // No padding: the line fills its last row, where an erase would take the last
            // column's character (the cursor waits on it for the wrap).
            if s.is_empty() {
                return Ok(());
            }
            return self.term.write_str(ERASE_TO_END_OF_ROW);
        }
        if std::mem::take(&mut frame.newline_owed) {
            self.term.write_str("\r\n")?;
        }
        frame.padding_next = true;
        self.term.write_str(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.between_frames();
        self.term.clear_line()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.term.flush()
    }
}

/// The terminal on stdin echoing no control keys, until dropped (then as it was).
pub struct QuietControlKeys {
    saved: Option<Termios>,
}

impl QuietControlKeys {
    /// Turns the echo of control keys off where stdin is a terminal that has it on.
    pub fn on_stdin() -> Self {
        let stdin = std::io::stdin();
        let Ok(saved) = termios::tcgetattr(&stdin) else {
            return Self { saved: None };
        };
        if !saved.local_flags.contains(LocalFlags::ECHOCTL) {
            return Self { saved: None };
        }
        let mut quiet = saved.clone();
        quiet.local_flags.remove(LocalFlags::ECHOCTL);
        match termios::tcsetattr(&stdin, SetArg::TCSANOW, &quiet) {
            Ok(()) => Self { saved: Some(saved) },
            Err(_) => Self { saved: None },
        }
    }
}

impl Drop for QuietControlKeys {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take() {
            let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, &saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek};

    use indicatif::{MultiProgress, ProgressBar};

    use super::*;

    /// Two frames of two status lines drawn by indicatif on an [`UnpaddedLines`] over a
    /// file, and the screen a terminal of its width shows for them.
    fn drawn_twice() -> (String, vt100::Parser) {
        let mut file = tempfile::tempfile().unwrap();
        let term =
            console::Term::read_write_pair(file.try_clone().unwrap(), file.try_clone().unwrap());
        let lines = UnpaddedLines::on(term);
        let width = lines.width();
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::term_like(Box::new(lines)));
        let first = multi.add(ProgressBar::new_spinner().with_message("first"));
        let second = multi.add(ProgressBar::new_spinner().with_message("second line"));
        first.tick();
        second.tick();
        first.set_message("first, again");
        second.set_message("second");
        first.tick();
        second.tick();
        let mut written = String::new();
        file.rewind().unwrap();
        file.read_to_string(&mut written).unwrap();
        let mut terminal = vt100::Parser::new(24, width, 0);
        terminal.process(written.as_bytes());
        (written, terminal)
    }

    #[test]
    fn each_line_ends_with_an_erase_and_a_newline_in_place_of_padding() {
        let (written, terminal) = drawn_twice();
        assert!(!written.contains("    "), "padded: {written:?}");
        assert!(written.contains(ERASE_TO_END_OF_ROW), "{written:?}");
        let screen = terminal.screen();
        let rows: Vec<String> = screen.rows(0, screen.size().1).collect();
        assert!(rows[0].ends_with(" first, again"), "{rows:#?}");
        // What the longer line of the first frame left was erased.
        assert!(rows[1].ends_with(" second"), "{rows:#?}");
        assert!(rows[2..].iter().all(String::is_empty), "{rows:#?}");
        assert!(!screen.row_wrapped(0) && !screen.row_wrapped(1));
    }
}
