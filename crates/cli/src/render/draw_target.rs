//! Where status lines and spinners are drawn: stderr, at its full width. indicatif pads each
//! line it draws to the terminal's width and lets the terminal wrap to the next line; told a
//! narrower width, it would run the lines together.
//!
//! While they are drawn the terminal does not echo control keys ([`QuietControlKeys`]): its
//! `^C`, written where indicatif left the cursor (the last column), would wrap onto a line
//! indicatif does not know about, and its next clear would miss the top line, leaving a
//! copy of a status line behind. Ctrl-C says what it does itself ("cancelling the turn").

use indicatif::ProgressDrawTarget;
use nix::sys::termios::{self, LocalFlags, SetArg, Termios};

/// How often the lines may be redrawn, as indicatif's own stderr target.
const REFRESH_HZ: u8 = 20;

/// The draw target of a terminal on stderr.
pub fn stderr() -> ProgressDrawTarget {
    ProgressDrawTarget::stderr_with_hz(REFRESH_HZ)
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
