//! Slash commands: lines starting with `/` are for wonopcode, never sent to the model. An
//! unknown one is refused with the closest known name.

use reedline::{Completer, Span, Suggestion};

/// What a typed slash command asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/help`: the commands and keys.
    Help,
    /// `/exit`, `/quit`: leave.
    Exit,
    /// `/model`: the provider and model answering and those it can switch to;
    /// `/model PROVIDER[/MODEL]`: switch.
    Model(Option<String>),
    /// `/tools`: the tools the model may call.
    Tools,
    /// `/cost`: tokens and money spent so far in this REPL.
    Cost,
    /// `/history`: the conversation's prompts and where it is kept.
    History,
    /// `/resume`: this workspace's kept conversations, numbered; `/resume N|ID`: go on
    /// with one instead of this one.
    Resume(Option<String>),
    /// `/approvals`: the calls approved for the session; `/approvals revoke N|all`.
    Approvals(Option<String>),
    /// `/compact`: summarize the conversation now.
    Compact,
    /// `/clear`: start the conversation afresh.
    Clear,
    /// `/trace [FILE]`: write the session's trace so far.
    Trace(Option<String>),
    /// `/loop`: the loop running and the named loops; `/loop NAME`: switch.
    Loop(Option<String>),
    /// `/rewind`: the prompts, numbered, and which to go back to; `/rewind N [both|code|
    /// conversation]`: take back the files and/or the conversation from prompt N on.
    Rewind(Option<String>),
    /// `/status`: the model, loop, sandbox, approvals, workspace and conversation.
    Status,
    /// `/diff`: the working tree's changes (`git diff`, run in the sandbox).
    Diff,
    /// `/review [FOCUS]`: a prompt asking the model to review the working tree's changes.
    Review(Option<String>),
    /// `/init`: a prompt asking the model to write the repository's `AGENTS.md`.
    Init,
    /// `/memory`: the instruction files the model is told, and where `#` notes go.
    Memory,
    /// `/mcp`: each MCP server: starting, failed, or its tools.
    Mcp,
    /// `/config`: the config file read and what it sets.
    Config,
    /// `/doctor`: whether each part of the session works here.
    Doctor,
    /// `/export [FILE]`: the conversation written as Markdown.
    Export(Option<String>),
}

/// What `/review` asks, as Codex's `/review` of the working tree does.
const REVIEW: &str = "Review the changes in this repository's working tree: run `git status` and `git diff` (and `git diff --cached`), read what you need around them, and report what is wrong — bugs, risks, missing tests, unclear names — most important first, each with its file and line and what to do instead. Change nothing.";

/// What `/init` asks, as Claude Code's and Codex's `/init` do.
const INIT: &str = "Explore this repository and write `AGENTS.md` at its root for the agents that will work in it: what the project is, how it is laid out, how to build, test and lint it (the exact commands), the conventions its code follows, and anything a newcomer would get wrong. Keep it short and specific to this repository. If an `AGENTS.md` or `CLAUDE.md` already exists, improve it instead of starting over.";

/// Every command with its one-line description, in the order `/help` lists them.
const COMMANDS: &[(&str, &str)] = &[
    ("/help", "the commands and keys"),
    (
        "/model",
        "the model answering and the others; /model PROVIDER[/MODEL] switches",
    ),
    (
        "/loop",
        "the loop running and the named loops; /loop NAME switches",
    ),
    ("/tools", "the tools the model may call"),
    (
        "/approvals",
        "the calls approved for the session; /approvals revoke N|all",
    ),
    ("/cost", "tokens and money spent since the REPL started"),
    (
        "/compact",
        "summarize the conversation now, to free the model's window",
    ),
    (
        "/clear",
        "start the conversation afresh (the loop and settings stay)",
    ),
    (
        "/history",
        "the conversation's prompts, and how to go on with it later",
    ),
    (
        "/resume",
        "this workspace's conversations; /resume N|ID goes on with one",
    ),
    (
        "/rewind",
        "go back to before a prompt: its files, conversation or both (/rewind N [code|conversation])",
    ),
    (
        "/trace",
        "write the session's trace (Perfetto) to FILE (default wonopcode-trace.json)",
    ),
    (
        "/status",
        "the model, loop, sandbox, approvals, workspace and conversation",
    ),
    ("/diff", "the working tree's changes (git diff)"),
    (
        "/review",
        "ask the model to review the working tree's changes; /review FOCUS",
    ),
    ("/init", "ask the model to write the repository's AGENTS.md"),
    (
        "/memory",
        "the instruction files the model is told, and where # notes go",
    ),
    ("/mcp", "the MCP servers: starting, failed, or their tools"),
    (
        "/config",
        "the config file read and what it sets (as `wonopcode config show`)",
    ),
    (
        "/doctor",
        "whether the config, sandbox, model, MCP servers and workspace trust work here",
    ),
    (
        "/permissions",
        "the calls approved for the session (as /approvals)",
    ),
    (
        "/agents",
        "the named loops and agents to switch to or delegate to",
    ),
    (
        "/export",
        "write the conversation as Markdown to FILE (default conversation.md)",
    ),
    ("/exit", "leave (also /quit, Ctrl-D)"),
];

impl SlashCommand {
    /// The command `line` names, when it is one (`/word`, maybe an argument after it);
    /// `Err` says what is wrong with a `/word` that is no command (naming the closest) or
    /// with its argument. A line starting with `//` is a prompt starting with `/`, and a
    /// line such as `/etc/hosts is odd` is a prompt too.
    pub fn parse(line: &str) -> Option<Result<Self, String>> {
        let line = line.trim();
        let (word, argument) = match line.split_once(char::is_whitespace) {
            Some((word, rest)) => (word, Some(rest.trim().to_owned())),
            None => (line, None),
        };
        let name = word.strip_prefix('/')?;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        let bare = |command: Self| match &argument {
            None => Ok(command),
            Some(_) => Err(format!(
                "`{word}` takes no argument (a prompt starting with `/` is sent with `//`)"
            )),
        };
        Some(match name {
            "help" | "?" => bare(Self::Help),
            "exit" | "quit" => bare(Self::Exit),
            "model" => Ok(Self::Model(argument)),
            "tools" => bare(Self::Tools),
            "cost" => bare(Self::Cost),
            "history" => bare(Self::History),
            "approvals" | "permissions" => Ok(Self::Approvals(argument)),
            "status" => bare(Self::Status),
            "diff" => bare(Self::Diff),
            "review" => Ok(Self::Review(argument)),
            "init" => bare(Self::Init),
            "memory" => bare(Self::Memory),
            "mcp" => bare(Self::Mcp),
            "config" => bare(Self::Config),
            "doctor" => bare(Self::Doctor),
            "agents" => bare(Self::Loop(None)),
            "export" => Ok(Self::Export(argument)),
            "compact" => bare(Self::Compact),
            "clear" => bare(Self::Clear),
            "trace" => Ok(Self::Trace(argument)),
            "loop" => Ok(Self::Loop(argument)),
            "rewind" => Ok(Self::Rewind(argument)),
            "resume" => Ok(Self::Resume(argument)),
            _ => Err(unknown(word)),
        })
    }

    /// The prompt a command sends to the model in place of a line typed (`/review`,
    /// `/init`); `None` for a command the REPL answers itself.
    pub fn prompt(&self) -> Option<String> {
        match self {
            Self::Review(None) => Some(REVIEW.to_owned()),
            Self::Review(Some(focus)) => Some(format!("{REVIEW} Focus on: {focus}")),
            Self::Init => Some(INIT.to_owned()),
            _ => None,
        }
    }

    /// `/help`'s text.
    pub fn help() -> String {
        let mut out = String::from("commands:\n");
        for (name, what) in COMMANDS {
            out.push_str(&format!("  {name:<11} {what}\n"));
        }
        out.push_str(
            "keys: Enter sends · a line ending in \\ continues on the next · Up/Down and Ctrl-R search the history · Tab completes a command or an @file · Esc twice clears the line, or at an empty prompt opens /rewind · Ctrl-C clears the line or stops the running turn; twice at an empty prompt, or Ctrl-D, quits\n",
        );
        out.push_str(
            "while a turn runs: type on; Enter sends the line into the turn at its next model request, Tab sends it as the next prompt once the turn ends, Esc stops the turn; anything else comes back at the prompt\n",
        );
        out.push_str("a line starting with // is sent to the model with one /\n");
        out.push_str(
            "!cmd runs a shell command in the sandbox (the model is told it with the next prompt; !! sends a !) · # note adds a line to CLAUDE.md or AGENTS.md · @file puts a file's text (or an image) into the prompt, Tab after @ completes the workspace's files · a long paste shows as [Pasted text #N +L lines]\n",
        );
        out
    }
}

/// "unknown command `/hlep` (did you mean `/help`? /help lists them)".
fn unknown(word: &str) -> String {
    let closest = COMMANDS
        .iter()
        .map(|(name, _)| (strsim::levenshtein(name, word), *name))
        .min()
        .filter(|(distance, _)| *distance <= 2);
    match closest {
        Some((_, name)) => {
            format!("unknown command `{word}` (did you mean `{name}`? /help lists them)")
        }
        None => format!("unknown command `{word}` (/help lists them)"),
    }
}

/// Completes a slash command at the start of the line.
pub struct CommandCompleter;

impl Completer for CommandCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let typed = &line[..pos.min(line.len())];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return Vec::new();
        }
        COMMANDS
            .iter()
            .filter(|(name, _)| name.starts_with(typed))
            .map(|(name, what)| Suggestion {
                value: (*name).to_owned(),
                description: Some((*what).to_owned()),
                span: Span::new(0, typed.len()),
                append_whitespace: false,
                ..Suggestion::default()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_commands_and_prompts_that_look_like_them() {
        assert_eq!(SlashCommand::parse("/help"), Some(Ok(SlashCommand::Help)));
        assert_eq!(SlashCommand::parse(" /quit "), Some(Ok(SlashCommand::Exit)));
        assert_eq!(SlashCommand::parse("hello"), None);
        assert_eq!(SlashCommand::parse("/etc/hosts is odd"), None);
        assert_eq!(SlashCommand::parse("//help"), None);
        assert_eq!(
            SlashCommand::parse("/model openai/gpt-5"),
            Some(Ok(SlashCommand::Model(Some("openai/gpt-5".to_owned()))))
        );
        assert_eq!(
            SlashCommand::parse("/help me"),
            Some(Err(
                "`/help` takes no argument (a prompt starting with `/` is sent with `//`)"
                    .to_owned()
            ))
        );
        assert_eq!(
            SlashCommand::parse("/hlep"),
            Some(Err(
                "unknown command `/hlep` (did you mean `/help`? /help lists them)".to_owned()
            ))
        );
        assert_eq!(
            SlashCommand::parse("/frobnicate"),
            Some(Err(
                "unknown command `/frobnicate` (/help lists them)".to_owned()
            ))
        );
    }

    #[test]
    fn completion_offers_the_commands_that_start_with_what_is_typed() {
        let values: Vec<String> = CommandCompleter
            .complete("/h", 2)
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert_eq!(values, ["/help", "/history"]);
        assert!(CommandCompleter.complete("fix /h", 6).is_empty());
    }
}
