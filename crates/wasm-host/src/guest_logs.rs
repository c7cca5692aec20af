//! A guest's own lines — what it prints to stdout and stderr, and its `system.log` calls —
//! kept plain (no colour, no log prefix), apart from wonopcode's log: a file per context in
//! the run's directory (`guest-logs/0.1.log`), and on stderr with `--verbose`. A file is cut
//! at [`MAX_FILE_BYTES`], so a guest that prints without end cannot fill the disk; a line
//! that cannot be written is dropped (the run goes on), and wonopcode's log says why.

use std::io::Write;
use std::path::PathBuf;

/// The most one context's file may hold.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Where a guest's own lines go besides wonopcode's log.
#[derive(Debug, Clone, Default)]
pub struct GuestLogs {
    /// The directory of the files (`RUN/guest-logs`); `None`: no files (a run without a
    /// journal).
    pub dir: Option<PathBuf>,
    /// Whether the lines go to stderr too (`--verbose`), each after `[CONTEXT GUEST]`.
    pub echo: bool,
}

impl GuestLogs {
    /// Keeps `lines` (one or more, from `source`: `stdout`, `stderr`, `log`) that `guest`
    /// said in `context` (`0.1`).
    pub(crate) fn keep(&self, context: &str, guest: &str, source: &str, lines: &str) {
        if lines.is_empty() {
            return;
        }
        if self.echo {
            let mut stderr = std::io::stderr().lock();
            for line in lines.lines() {
                let _ = writeln!(stderr, "[{context} {guest}] {line}");
            }
        }
        if let Some(dir) = &self.dir
            && let Err(e) = append(dir, context, source, lines)
        {
            tracing::warn!(context, guest, "the guest's log was not kept: {e}");
        }
    }
}

/// Appends `lines` to `DIR/CONTEXT.log`, each after its source, within the cap.
fn append(dir: &std::path::Path, context: &str, source: &str, lines: &str) -> std::io::Result<()> {
    // A context path is digits and dots; anything else is no file name of ours.
    let name: String = context
        .chars()
        .map(|c| {
            if c.is_ascii_digit() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{name}.log"));
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
    };
    // The directory is made by the first line only, not looked for at every one.
    let mut file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            open()?
        }
        other => other?,
    };
    // Room is kept for the line that says the file was cut.
    let cut = "\n(cut: a guest's log holds 16 MiB)\n";
    let had = file.metadata()?.len();
    let Some(room) = MAX_FILE_BYTES.checked_sub(had + cut.len() as u64) else {
        return Ok(());
    };
    if room == 0 {
        return Ok(());
    }
    let mut text = String::with_capacity(lines.len() + 16);
    for line in lines.lines() {
        text.push_str(source);
        text.push_str(": ");
        text.push_str(line);
        text.push('\n');
    }
    let room = usize::try_from(room).unwrap_or(usize::MAX);
    if text.len() > room {
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(cut);
    }
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_go_to_the_contexts_file_after_their_source_and_stop_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let logs = GuestLogs {
            dir: Some(dir.path().join("guest-logs")),
            echo: false,
        };
        logs.keep("0.1", "coder", "stderr", "one\ntwo\n");
        logs.keep("0.1", "coder", "log", "three");
        logs.keep("../x", "coder", "log", "kept beside, not above");
        let text = std::fs::read_to_string(dir.path().join("guest-logs/0.1.log")).unwrap();
        assert_eq!(text, "stderr: one\nstderr: two\nlog: three\n");
        assert!(dir.path().join("guest-logs/..__.log").is_file());
        let big = "x".repeat(1 << 20);
        for _ in 0..20 {
            logs.keep("0", "loop", "stdout", &big);
        }
        let len = std::fs::metadata(dir.path().join("guest-logs/0.log"))
            .unwrap()
            .len();
        assert!(len <= MAX_FILE_BYTES, "{len}");
        assert!(len > MAX_FILE_BYTES - 100, "{len}");
    }
}
