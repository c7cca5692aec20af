//! An agent on a pseudo-terminal for the whole-process terminal benchmarks, read as soon as
//! it writes (rexpect's own reader polls every 100 ms, too coarse to time a frame), and
//! answering what a terminal emulator answers at once: the cursor's position, its device
//! attributes, and its colours. An agent that waits for one of those (a line editor, a TUI
//! probing the terminal) is then timed as it runs in a real terminal, not as it runs when
//! its question times out.

use std::io::{Read, Write};
use std::process::Command;

use rexpect::process::PtyProcess;

/// A terminal's answers to the questions agents ask at start-up, as an xterm answers them.
const ANSWERS: &[(&[u8], &[u8])] = &[
    // Where is the cursor? Row 1, column 1.
    (b"\x1b[6n", b"\x1b[1;1R"),
    // What are you? A VT420-class terminal (xterm's answer).
    (b"\x1b[c", b"\x1b[?64;1;2;6;22c"),
    (b"\x1b[0c", b"\x1b[?64;1;2;6;22c"),
    // The default foreground and background colours, both ways of ending the question.
    (b"\x1b]10;?\x07", b"\x1b]10;rgb:ffff/ffff/ffff\x07"),
    (b"\x1b]11;?\x07", b"\x1b]11;rgb:0000/0000/0000\x07"),
    (b"\x1b]10;?\x1b\\", b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\"),
    (b"\x1b]11;?\x1b\\", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
];

/// A process on a pseudo-terminal of 120 columns by 40 rows.
pub struct Terminal {
    process: PtyProcess,
    pty: std::fs::File,
    /// What was written and not yet matched.
    unread: Vec<u8>,
}

impl Terminal {
    /// Starts `command` on a new pseudo-terminal.
    pub fn start(command: Command) -> Self {
        let mut process = PtyProcess::new(command).expect("spawn on a pseudo-terminal");
        process.set_kill_timeout(Some(2_000));
        let pty = process.get_file_handle().expect("pty");
        // A pseudo-terminal starts at 0 by 0; a TUI lays itself out for a real one.
        let size = rustix::termios::Winsize {
            ws_row: 40,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&pty, size).expect("window size");
        Self {
            process,
            pty,
            unread: Vec::new(),
        }
    }

    /// Reads until `text` appears, answering the terminal's questions on the way.
    pub fn until(&mut self, text: &str) {
        let text = text.as_bytes();
        let mut buf = [0u8; 8192];
        loop {
            self.answer();
            if let Some(at) = find(&self.unread, text) {
                self.unread.drain(..at + text.len());
                return;
            }
            let n = self.pty.read(&mut buf).unwrap_or(0);
            assert!(
                n > 0,
                "the agent ended before `{}`; it wrote: {}",
                String::from_utf8_lossy(text),
                String::from_utf8_lossy(&self.unread)
            );
            self.unread.extend_from_slice(&buf[..n]);
        }
    }

    /// Answers every question in what was read, taking it out.
    fn answer(&mut self) {
        for (question, answer) in ANSWERS {
            while let Some(at) = find(&self.unread, question) {
                self.unread.drain(at..at + question.len());
                self.type_keys(answer);
            }
        }
    }

    /// Sends `keys` as typed.
    pub fn type_keys(&mut self, keys: &[u8]) {
        self.pty.write_all(keys).expect("type");
        self.pty.flush().expect("flush");
    }

    /// Quits with `keys` (Ctrl-D at a REPL), and waits until the terminal closes.
    pub fn quit(mut self, keys: &[u8]) {
        self.type_keys(keys);
        let mut buf = [0u8; 4096];
        while matches!(self.pty.read(&mut buf), Ok(n) if n > 0) {}
    }

    /// Ends the process (SIGTERM, then SIGKILL after 2 s); the hang-up of its terminal
    /// then reaches what it started in its foreground process group (its MCP servers).
    pub fn end(mut self) {
        let _ = self.process.exit();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
