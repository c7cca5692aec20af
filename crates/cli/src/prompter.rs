//! Permission prompts on the terminal: once / always for this key / deny.

use std::io::Write;

use async_trait::async_trait;
use indicatif::MultiProgress;
use wonopcode_tools::permission::{Answer, Prompter};

/// Asks on stderr and reads the answer from stdin (a terminal).
pub struct TerminalPrompter {
    /// Spinners to hide while asking.
    pub progress: MultiProgress,
}

async fn read_answer(question: String, progress: MultiProgress) -> String {
    tokio::task::spawn_blocking(move || {
        progress.suspend(|| {
            let mut stderr = std::io::stderr();
            let _ = write!(stderr, "{question}");
            let _ = stderr.flush();
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            line.trim().to_lowercase()
        })
    })
    .await
    .unwrap_or_default()
}

#[async_trait]
impl Prompter for TerminalPrompter {
    async fn ask(&self, tool: &str, subject: Option<&str>) -> Answer {
        let what = match subject {
            Some(s) => format!("`{tool}` on `{s}`"),
            None => format!("`{tool}`"),
        };
        let question = format!(
            "{} allow {what}? [y] once  [a] always  [N] no: ",
            console::style("?").yellow().bold()
        );
        match read_answer(question, self.progress.clone()).await.as_str() {
            "y" | "yes" => Answer::Once,
            "a" | "always" => Answer::Always,
            _ => Answer::Deny,
        }
    }

    async fn confirm_repetition(&self, tool: &str, count: usize) -> bool {
        let question = format!(
            "{} the model called `{tool}` {count} times in a row with the same arguments. Let it go on? [y/N]: ",
            console::style("?").yellow().bold()
        );
        matches!(
            read_answer(question, self.progress.clone()).await.as_str(),
            "y" | "yes"
        )
    }
}
