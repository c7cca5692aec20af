//! What is piped into a prompt's run: the prompt itself when none is given
//! (`cat task.md | wonopcode`), or, with a prompt, the input the prompt is about, sent after
//! it in a `<stdin>` block (`git diff | wonopcode "Review this change"`), as `codex exec` and
//! `claude -p` do. A stdin that has not ended after a second (a pipe a parent never closes)
//! is said so on stderr, so the wait is never silent.

use std::io::{IsTerminal, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;

use crate::session::usage;

/// The most read from stdin; more is refused (a file the model reads serves better).
const MOST: u64 = 16 << 20;

/// All of stdin when it is not a terminal and holds more than blanks; `None` otherwise.
/// `Err`, in a line: more than 16 MiB, or not UTF-8 text.
pub fn read_stdin() -> anyhow::Result<Option<String>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let done = Arc::new(AtomicBool::new(false));
    let waited = Arc::clone(&done);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !waited.load(Ordering::SeqCst) {
            eprintln!("reading stdin, which has not ended yet (give < /dev/null to send nothing)");
        }
    });
    let mut bytes = Vec::new();
    let read = stdin.lock().take(MOST + 1).read_to_end(&mut bytes);
    done.store(true, Ordering::SeqCst);
    read.context("cannot read stdin")?;
    if bytes.len() as u64 > MOST {
        return Err(usage(format!(
            "stdin holds more than {} MiB: save it to a file in the workspace and name the file in the prompt",
            MOST >> 20
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        usage("stdin is not UTF-8 text: give an image with --image -, or save it to a file in the workspace")
    })?;
    Ok((!text.trim().is_empty()).then_some(text))
}

/// `prompt`, with what was piped (if anything) after it in a `<stdin>` block.
pub fn with_piped(prompt: &str, piped: Option<&str>) -> String {
    match piped {
        None => prompt.to_owned(),
        Some(text) => format!("{prompt}\n\n<stdin>\n{}\n</stdin>", text.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_piped_follows_the_prompt_in_a_block() {
        assert_eq!(with_piped("Review.", None), "Review.");
        assert_eq!(
            with_piped("Review.", Some("diff --git a/x b/x\n+1\n\n")),
            "Review.\n\n<stdin>\ndiff --git a/x b/x\n+1\n</stdin>"
        );
    }
}
