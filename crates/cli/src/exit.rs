//! Exit codes, documented in the README.

use wonopcode_protocol::LoopStatus;

/// The prompt completed.
pub const SUCCESS: u8 = 0;
/// The run failed (provider, transcript, history, configuration).
pub const ERROR: u8 = 1;
/// Bad flags or arguments.
pub const USAGE: u8 = 2;
/// The run is suspended waiting for approval or an answer; `--resume` continues it.
pub const SUSPENDED: u8 = 3;
/// The iteration limit was reached.
pub const MAX_ITERATIONS: u8 = 4;
/// A limit of the run's budget (`--max-cost`, `--max-tokens`, `--max-wall`) stopped it
/// before a request that could have passed it.
pub const BUDGET_EXCEEDED: u8 = 5;
/// The prompt completed, but tool calls that needed approval were refused because nobody
/// could be asked (no terminal, no `--yes`, no allow rule): work the model asked for was
/// not done.
pub const NOT_APPROVED: u8 = 6;
/// Cancelled with Ctrl-C.
pub const CANCELLED: u8 = 130;
/// Stopped by SIGHUP (the terminal went away); the turn was cancelled as with Ctrl-C.
pub const HUNG_UP: u8 = 129;
/// Stopped by SIGTERM; the turn was cancelled as with Ctrl-C.
pub const TERMINATED: u8 = 143;
/// Whoever read stdout went away (`wonopcode completions zsh | head -1`): the code a
/// process killed by SIGPIPE ends with, without a word.
pub const BROKEN_PIPE: u8 = 141;

/// The exit code for a run's status.
pub fn for_status(status: LoopStatus) -> u8 {
    match status {
        LoopStatus::Complete => SUCCESS,
        LoopStatus::Error => ERROR,
        LoopStatus::Suspended => SUSPENDED,
        LoopStatus::MaxIterations => MAX_ITERATIONS,
        LoopStatus::Cancelled => CANCELLED,
        LoopStatus::BudgetExceeded => BUDGET_EXCEEDED,
    }
}

/// Ends the process at once with `code` (a signal, a second Ctrl-C), the terminal put back
/// as it was found: the line editor may be waiting in raw mode with bracketed paste on, and
/// a shell left so echoes nothing and reads Enter as `^M`.
pub fn now(code: u8) -> ! {
    end_own_children();
    // crossterm keeps the mode it found and puts it back (a no-op when not raw).
    let _ = crossterm::terminal::disable_raw_mode();
    let mut stdout = std::io::stdout();
    if std::io::IsTerminal::is_terminal(&stdout) {
        // Bracketed paste off, the cursor shown; a terminal already gone is no error here.
        let _ = std::io::Write::write_all(&mut stdout, b"\x1b[?2004l\x1b[?25h");
        let _ = std::io::Write::flush(&mut stdout);
    }
    std::process::exit(i32::from(code))
}

/// Sends SIGTERM to each of wonopcode's own children (an MCP server still starting, a hook
/// running), to its whole group where it leads one (a server started in a session of its
/// own): a process exit runs none of the destructors that would stop them, and one that never
/// reads its closed stdin would live on.
fn end_own_children() {
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::{Pid, getpgid};
    for pid in wonopcode_os::own_processes::all() {
        let Ok(raw) = i32::try_from(pid) else {
            continue;
        };
        let pid = Pid::from_raw(raw);
        let _ = match getpgid(Some(pid)) {
            Ok(group) if group == pid => killpg(group, Signal::SIGTERM),
            _ => kill(pid, Signal::SIGTERM),
        };
    }
}
