//! Where status lines and spinners are drawn: stderr, a few columns short of its width.
//!
//! indicatif pads each line it draws to the terminal's full width and leaves the cursor in
//! the last column. The terminal itself echoes `^C` when Ctrl-C is pressed; in that column
//! the echo wraps onto a new line that indicatif does not know about, and its next clear
//! then misses the top line, leaving a copy of a status line behind. Drawn short of the
//! edge, the echo stays on the bars' own line, which the next draw clears.

use console::Term;
use indicatif::{ProgressDrawTarget, TermLike};

/// Columns left free at the right edge: room for the terminal's `^C`.
const ECHO_ROOM: u16 = 3;

/// How often the lines may be redrawn, as indicatif's own stderr target.
const REFRESH_HZ: u8 = 20;

/// stderr, narrowed by [`ECHO_ROOM`].
#[derive(Debug)]
struct Narrowed(Term);

/// The draw target of a terminal on stderr.
pub fn stderr() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(Box::new(Narrowed(Term::buffered_stderr())), REFRESH_HZ)
}

impl TermLike for Narrowed {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(ECHO_ROOM).max(1)
    }

    fn height(&self) -> u16 {
        self.0.size().0
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.0.write_line(s)
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.0.write_str(s)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}
