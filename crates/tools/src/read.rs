//! `read`: a text file's lines as they are, or numbered when asked, optionally a line range.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, TypedTool, parameters_of};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use crate::file_times::FileTimes;
use crate::spec::spec;
use crate::workspace::{OpenError, describe, display, open_regular, resolve_for, rule_subject};

/// Lines returned when no range is given.
const DEFAULT_LINES: usize = 2000;

/// Reads a file.
pub struct ReadTool(ToolSpec, Arc<FileTimes>);

impl ReadTool {
    /// A `read` that notes what each context saw in `times` (which the writing tools check).
    pub fn seeing(self, times: Arc<FileTimes>) -> Self {
        Self(self.0, times)
    }
}

impl Default for ReadTool {
    fn default() -> Self {
        Self(
            spec(
                "read",
                "Read a text file of the workspace. Returns its lines as they are; give start_line and end_line (1-based, inclusive) to read a range, and numbered: true to have each line start with its number and a tab.",
                ToolKind::ReadOnly,
                ToolCategory::FileSystem,
                parameters_of::<ReadArgs>(),
            ),
            Arc::default(),
        )
    }
}

/// A `read` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// File path, relative to the workspace root
    path: String,
    // The first line read, from 1.
    #[schemars(range(min = 1))]
    start_line: Option<usize>,
    // The last line read, inclusive.
    #[schemars(range(min = 1))]
    end_line: Option<usize>,
    // Start each line with its number and a tab.
    numbered: Option<bool>,
}

#[async_trait]
impl TypedTool for ReadTool {
    type Args = ReadArgs;

    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn permission_subject(&self, args: &ReadArgs, root: &Path) -> Option<String> {
        Some(rule_subject(root, &args.path))
    }

    fn output_cap(&self) -> Option<usize> {
        Some(MAX_OUTPUT_BYTES + PAGE_NOTE_BYTES)
    }

    async fn run(&self, a: ReadArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let path = resolve_for(env, &a.path)?;
        let start = a.start_line.unwrap_or(1);
        let end = a
            .end_line
            .unwrap_or(start.saturating_add(DEFAULT_LINES - 1));
        if end < start {
            return Err(ToolError::InvalidArguments(format!(
                "end_line {end} is before start_line {start}"
            )));
        }
        let shown = display(&env.workspace_root, &path);
        let given = a.path.clone();
        let root = env.workspace_root.clone();
        let read = if crate::text_files::editor_reads(env) {
            // The text the editor holds (unsaved changes included), paged the same way.
            let text = crate::text_files::read(env, &path, &shown).await?;
            page(
                std::io::Cursor::new(text.into_bytes()),
                start,
                end,
                a.numbered.unwrap_or(false),
            )
        } else {
            let at = path.clone();
            tokio::task::spawn_blocking(move || {
                read_lines(&root, &at, start, end, a.numbered.unwrap_or(false))
            })
            .await
            .map_err(|e| ToolError::Failed(format!("reading `{given}` stopped: {e}")))?
        };
        let given = a.path;
        let read = read
            .map_err(|e| match e {
                ReadError::Io(e) => {
                    ToolError::Failed(format!("cannot read `{given}`: {}", describe(&e)))
                }
                ReadError::Open(e) => e.for_path(&given),
                ReadError::Binary => ToolError::Failed(format!("`{given}` is a binary file")),
                ReadError::PastEnd(total) => ToolError::InvalidArguments(format!(
                    "start_line {start} is past the end of `{shown}` ({total} lines)"
                )),
            })
            .map(ToolOutput::text)?;
        self.1.saw(&env.context, &path).await;
        Ok(read)
    }
}

/// Bytes looked at to tell a binary file (one with a NUL byte) from text.
const SNIFF_BYTES: usize = 8 << 10;
/// Bytes kept of one line; the rest of a longer line is counted, not kept.
const MAX_LINE_BYTES: usize = 16 << 10;
/// Bytes of lines one call returns at most: about 25,000 tokens, what Claude Code's
/// `Read` gives at most. The rest is a page away (`start_line`), said at the end; the run's
/// cap on tool output (10,000 bytes, cut from the middle) does not apply to `read`, which
/// would otherwise lose the middle of any file past about 250 lines.
const MAX_OUTPUT_BYTES: usize = 100 << 10;
/// Room for the line after the last that says where the rest starts.
const PAGE_NOTE_BYTES: usize = 96;
// A page always has room for its first line, however long: no page is only a note.
const _: () = assert!(MAX_LINE_BYTES + PAGE_NOTE_BYTES < MAX_OUTPUT_BYTES);

enum ReadError {
    Io(std::io::Error),
    Open(OpenError),
    Binary,
    /// The file has fewer lines than the start asked for (how many it has).
    PastEnd(usize),
}

/// Lines `start..=end` of a file, read in bounded pieces: no more of the file is read than
/// the lines asked for (and one more, to know whether more follow), and no line or output
/// holds more than its cap, whatever the file's size.
fn read_lines(
    root: &Path,
    path: &Path,
    start: usize,
    end: usize,
    numbered: bool,
) -> Result<String, ReadError> {
    let (file, _) = open_regular(root, path).map_err(ReadError::Open)?;
    page(file, start, end, numbered)
}

/// Lines `start..=end` of what `source` holds (see [`read_lines`]). A file's text comes as
/// it is unless the model asks for numbers (`N\tline`, unpadded, as Claude Code's `Read`
/// numbers lines): they are a fifth of the tokens of a source file, paid again on every
/// later request that holds the read (docs/decisions.md).
fn page(
    source: impl std::io::Read,
    start: usize,
    end: usize,
    numbered: bool,
) -> Result<String, ReadError> {
    use std::fmt::Write as _;
    use std::io::{BufRead, BufReader};

    let mut reader = BufReader::with_capacity(SNIFF_BYTES, source);
    if reader.fill_buf().map_err(ReadError::Io)?.contains(&0) {
        return Err(ReadError::Binary);
    }
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let (found, cut) = next_line(&mut reader, &mut line)?;
        if !found {
            break;
        }
        number += 1;
        if number < start {
            continue;
        }
        if number > end {
            out.push_str(&match count_rest(&mut reader) {
                Some(more) => format!("[{} more lines; read from start_line {number}]\n", more + 1),
                None => format!("[more lines follow; read from start_line {number}]\n"),
            });
            return Ok(out);
        }
        // The line goes on the page, and comes off again if it does not fit.
        let page_end = out.len();
        if numbered {
            let _ = write!(out, "{number}\t");
        }
        out.push_str(&String::from_utf8_lossy(&line));
        if cut > 0 {
            let _ = write!(out, " [line cut: {cut} more bytes]");
        }
        out.push('\n');
        if number > start && out.len() > MAX_OUTPUT_BYTES {
            out.truncate(page_end);
            let _ = writeln!(
                out,
                "[output cut at {} KiB; read from start_line {number}]",
                MAX_OUTPUT_BYTES >> 10
            );
            return Ok(out);
        }
    }
    if number < start && number > 0 {
        return Err(ReadError::PastEnd(number));
    }
    Ok(out)
}

/// Bytes read past the range to count the lines that follow; past this, the count is not
/// given.
const MAX_COUNTED_BYTES: u64 = 8 << 20;

/// How many lines are left in `reader`, when they are at most [`MAX_COUNTED_BYTES`] of
/// text.
fn count_rest(reader: &mut impl std::io::BufRead) -> Option<usize> {
    let mut lines = 0;
    let mut seen = 0u64;
    let mut last = b'\n';
    while seen <= MAX_COUNTED_BYTES {
        let buf = reader.fill_buf().ok()?;
        let Some(&final_byte) = buf.last() else {
            // A last line without a newline is a line too.
            return Some(lines + usize::from(last != b'\n'));
        };
        if buf.contains(&0) {
            return None;
        }
        lines += buf.iter().filter(|b| **b == b'\n').count();
        last = final_byte;
        seen += buf.len() as u64;
        let used = buf.len();
        reader.consume(used);
    }
    None
}

/// Reads one line into `line` (without its `\n` or `\r\n`), keeping at most
/// [`MAX_LINE_BYTES`]: returns whether a line was there and how many bytes were left out.
/// Stops at the first NUL byte: the file is binary.
fn next_line(
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
) -> Result<(bool, usize), ReadError> {
    let mut found = false;
    let mut cut = 0;
    loop {
        let buf = reader.fill_buf().map_err(ReadError::Io)?;
        if buf.is_empty() {
            break;
        }
        found = true;
        let (piece, ends) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (&buf[..at], true),
            None => (buf, false),
        };
        if piece.contains(&0) {
            return Err(ReadError::Binary);
        }
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        let kept = piece.len().min(room);
        line.extend_from_slice(&piece[..kept]);
        cut += piece.len() - kept;
        let used = piece.len() + usize::from(ends);
        reader.consume(used);
        if ends {
            break;
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok((found, cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8], start: usize, end: usize, numbered: bool) -> Result<String, ReadError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, text).unwrap();
        read_lines(dir.path(), &path, start, end, numbered)
    }

    fn lines(text: &[u8], start: usize, end: usize) -> Result<String, ReadError> {
        read(text, start, end, true)
    }

    #[test]
    fn ranges_are_numbered_and_say_what_follows() {
        let text = b"one\r\ntwo\nthree\n";
        assert_eq!(
            lines(text, 1, 10).ok().unwrap(),
            "1\tone\n2\ttwo\n3\tthree\n"
        );
        assert_eq!(
            lines(text, 2, 2).ok().unwrap(),
            "2\ttwo\n[1 more lines; read from start_line 3]\n"
        );
        assert_eq!(
            lines(b"a\nb\nc\nd", 1, 1).ok().unwrap(),
            "1\ta\n[3 more lines; read from start_line 2]\n"
        );
        assert!(matches!(lines(text, 5, 6), Err(ReadError::PastEnd(3))));
        assert_eq!(lines(b"", 1, 10).ok().unwrap(), "");
        assert_eq!(lines(b"no newline", 1, 1).ok().unwrap(), "1\tno newline\n");
    }

    #[test]
    fn without_numbers_lines_come_as_they_are() {
        let text = b"one\r\n\ttwo\nthree";
        assert_eq!(
            read(text, 1, 10, false).ok().unwrap(),
            "one\n\ttwo\nthree\n"
        );
        assert_eq!(
            read(text, 2, 2, false).ok().unwrap(),
            "\ttwo\n[1 more lines; read from start_line 3]\n"
        );
        assert!(matches!(
            read(text, 4, 4, false),
            Err(ReadError::PastEnd(3))
        ));
    }

    #[test]
    fn binary_files_are_told_from_the_first_bytes() {
        assert!(matches!(lines(b"ab\0cd", 1, 1), Err(ReadError::Binary)));
    }

    #[test]
    fn a_huge_sparse_file_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(4 << 30).unwrap();
        let started = std::time::Instant::now();
        assert!(matches!(
            read_lines(dir.path(), &path, 1, 10, false),
            Err(ReadError::Binary)
        ));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn long_lines_and_long_outputs_are_cut_with_a_count() {
        let mut text = vec![b'x'; MAX_LINE_BYTES + 100];
        text.push(b'\n');
        let out = lines(&text, 1, 1).ok().unwrap();
        assert!(
            out.ends_with(" [line cut: 100 more bytes]\n"),
            "{}",
            &out[out.len() - 40..]
        );
        let many = "y".repeat(1000) + "\n";
        let out = lines(many.repeat(1000).as_bytes(), 1, 1000).ok().unwrap();
        assert!(
            out.len() <= MAX_OUTPUT_BYTES + PAGE_NOTE_BYTES,
            "{}",
            out.len()
        );
        assert!(
            out.ends_with("[output cut at 100 KiB; read from start_line 102]\n"),
            "{}",
            &out[out.len() - 80..]
        );
        // The next page starts where the note says, with the line the first left out.
        let next = lines(many.repeat(1000).as_bytes(), 102, 1000).ok().unwrap();
        assert!(next.starts_with("102\ty"), "{}", &next[..10]);
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(
            read_lines(dir.path(), &path, 1, 1, false),
            Err(ReadError::Open(OpenError::NotRegular))
        ));
    }
}
