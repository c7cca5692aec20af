//! Debugging a guest: `--debug-guest` (or `WONOPCODE_DEBUG_GUEST=1`) compiles every
//! component with Wasmtime's native debug info — registered with gdb and lldb through their
//! JIT interface, so a breakpoint in the guest's own source stops there — without
//! optimisation, so a step follows the source, and with backtrace details, so a trap's
//! backtrace names the guest's `file:line` from the component's DWARF.
//!
//! A backtrace is kept whenever a guest traps: in its context's file in the run's directory
//! (`guest-logs/0.log`, with the guest's other lines) and on stderr when the guest's lines go
//! there. Without debug info (a stripped release build), its frames are function indices.
//!
//! The switch is process-wide, as Wasmtime's own `WASMTIME_BACKTRACE_DETAILS` is: every
//! engine of the process (the loop's, the hooks', `loops test`'s) compiles the same way, and a
//! compiled component cached in one mode is never loaded in the other (the cache's key holds
//! the engine's settings).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable that turns guest debugging on (`1`, `true`, `yes`, `on`).
pub const DEBUG_GUEST_ENV: &str = "WONOPCODE_DEBUG_GUEST";

static TURNED_ON: AtomicBool = AtomicBool::new(false);

/// Turns guest debugging on for every engine built after this (`--debug-guest`).
pub fn turn_on() {
    TURNED_ON.store(true, Ordering::Relaxed);
}

/// Whether guest debugging is on: [`turn_on`] was called or [`DEBUG_GUEST_ENV`] says so.
pub fn is_on() -> bool {
    TURNED_ON.load(Ordering::Relaxed) || std::env::var(DEBUG_GUEST_ENV).is_ok_and(|v| says_yes(&v))
}

/// Whether an environment variable's value means "on".
fn says_yes(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// The guest's backtrace a trap carries, one frame a line, innermost first
/// (`#11 my_loop::pick_specialist (src/lib.rs:12:9)`); `None` when it carries none.
///
/// The innermost frames of a panic are the toolchain's (the panic handler, `abort`); when the
/// guest's own code is further out, they are left out, with a line saying how many.
pub(crate) fn backtrace(error: &wasmtime::Error) -> Option<String> {
    let trace = error.downcast_ref::<wasmtime::WasmBacktrace>()?;
    let frames: Vec<(String, Option<String>)> = trace.frames().iter().map(frame_line).collect();
    let toolchain = |place: &Option<String>| {
        place
            .as_deref()
            .is_some_and(|p| p.starts_with("/rustc/") || p.contains("wasisdk:"))
    };
    let skip = match frames.iter().position(|(_, place)| !toolchain(place)) {
        Some(first_own) if frames[first_own].1.is_some() => first_own,
        _ => 0,
    };
    let mut text = String::new();
    if skip > 0 {
        let _ = writeln!(
            text,
            "(#0 to #{}: the toolchain's panic and abort)",
            skip - 1
        );
    }
    for (i, (name, place)) in frames.iter().enumerate().skip(skip) {
        let _ = write!(text, "#{i} {name}");
        if let Some(place) = place {
            let _ = write!(text, " ({place})");
        }
        text.push('\n');
    }
    (!text.is_empty()).then_some(text)
}

/// A frame's function (demangled) and its place: `file:line:column` from the component's
/// debug info, else its code offset.
fn frame_line(frame: &wasmtime::FrameInfo) -> (String, Option<String>) {
    let symbols = frame.symbols();
    let name = symbols
        .iter()
        .find_map(|s| s.name())
        .or_else(|| frame.func_name())
        .map(|n| format!("{:#}", rustc_demangle::demangle(n)))
        .unwrap_or_else(|| format!("<wasm function {}>", frame.func_index()));
    let place = match symbols.iter().find(|s| s.file().is_some()) {
        Some(symbol) => {
            let mut place = symbol.file().unwrap_or_default().to_owned();
            if let Some(line) = symbol.line() {
                let _ = write!(place, ":{line}");
                if let Some(column) = symbol.column() {
                    let _ = write!(place, ":{column}");
                }
            }
            Some(place)
        }
        None => frame.module_offset().map(|o| format!("at 0x{o:x}")),
    };
    (name, place)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_yes_turns_debugging_on() {
        for (value, on) in [
            ("1", true),
            (" On ", true),
            ("yes", true),
            ("0", false),
            ("", false),
            ("off", false),
        ] {
            assert_eq!(says_yes(value), on, "{DEBUG_GUEST_ENV}={value:?}");
        }
    }
}
