//! Custom slash commands at the prompt (`wonopcode_registry::command_file`): `/name ARGS`
//! becomes the command's prompt, its `` !`command` `` lines run first in the sandbox, as `!`
//! runs a command, their output in their place.

use wonopcode_registry::command_file::shell_lines;

use crate::render::one_line;
use crate::run::Cli;

impl Cli {
    /// The prompt of the custom command `line` starts with (`/fix-issue 42`); `None` when
    /// it names none.
    pub(crate) async fn custom_prompt(&self, line: &str) -> Option<String> {
        let (word, arguments) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let name = word.strip_prefix('/')?;
        let command = self
            .session
            .command_files()
            .iter()
            .find(|c| c.name == name)?;
        let prompt = command.prompt(arguments.trim());
        let shell = shell_lines(&prompt);
        if shell.is_empty() {
            return Some(prompt);
        }
        let mut lines: Vec<String> = prompt.lines().map(str::to_owned).collect();
        for (at, command) in shell {
            let said = match self.session.shell(&command).await {
                Some((said, _)) => said,
                None => "(not run: this run has no `bash` tool)".to_owned(),
            };
            eprintln!(
                "{}",
                console::style(format!("ran `{}` for /{name}", one_line(&command))).dim()
            );
            lines[at] = format!("$ {command}\n{}", said.trim_end());
        }
        Some(lines.join("\n"))
    }
}
