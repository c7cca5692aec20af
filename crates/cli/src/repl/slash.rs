//! What the REPL's slash commands do to its session: `/rewind`, `/model`, `/loop`,
//! `/history`, `/resume`, `/approvals` and the rest (`commands.rs` says what was typed).

use std::path::PathBuf;

use wonopcode_protocol::{Role, Usage};
use wonopcode_session::RewindScope;
use wonopcode_tools::permission::PermissionPolicy;

use super::SlashCommand;
use crate::prompter::{Keys, read_key};
use crate::render::{clip, cost, in_out, one_line};
use crate::run::Cli;

/// The key that answers "none" at `/rewind`'s questions (Esc, and Enter at the first).
const NONE: char = '-';

impl Cli {
    /// `/rewind`'s first question: the prompt to go back to before, one key when there are
    /// nine or fewer (a number and Enter past that, or where keys cannot be read one by
    /// one); `None`: none.
    async fn which_prompt(&self, prompts: usize) -> Option<String> {
        let asked = "take back to before which prompt? (its number; Enter: none) ";
        if let Some(last) = u32::try_from(prompts).ok().filter(|n| *n <= 9) {
            let answers = (1..=last)
                .filter_map(|n| char::from_digit(n, 10).map(|d| (d, format!("prompt {n}"))))
                .chain([(NONE, "none".to_owned())]);
            let help = format!("1 to {last} (the prompt), or Enter or Esc (none)");
            let keys = Keys::choice(answers, help, NONE, NONE);
            match read_key(asked.to_owned(), self.progress.clone(), keys).await {
                Some(NONE) => return None,
                Some(key) => return Some(key.to_string()),
                None => {}
            }
        }
        let which = crate::prompter::read_line(asked.to_owned(), self.progress.clone())
            .await
            .unwrap_or_default();
        Some(which.trim().to_owned()).filter(|w| !w.is_empty())
    }

    /// `/rewind`: the run's prompts, numbered, then which to go back to before and what to
    /// take back — the files, the conversation, or both; `/rewind N [both|code|conversation]`
    /// without asking (both by default). A file someone else changed since is left alone
    /// (said so).
    pub(crate) async fn rewind(&mut self, argument: Option<&str>) {
        let mut words = argument.unwrap_or_default().split_whitespace();
        let (which, scope) = match (words.next(), words.next()) {
            (Some(which), scope) => (which.to_owned(), scope.unwrap_or_default().to_owned()),
            (None, _) => {
                let prompts = self.session.prompts();
                if prompts.is_empty() {
                    eprintln!("no prompt yet in this run");
                    return;
                }
                for (n, prompt) in prompts.iter().enumerate() {
                    let first = prompt.lines().next().unwrap_or_default();
                    eprintln!("  {:>3}  {}", n + 1, one_line(first));
                }
                let Some(which) = self.which_prompt(prompts.len()).await else {
                    return;
                };
                let asked = "take back [b]oth the files and the conversation, the [c]ode only, or the con[v]ersation only? [b] ";
                let keys = Keys::choice(
                    [
                        ('b', "both"),
                        ('c', "the code"),
                        ('v', "the conversation"),
                        (NONE, "none"),
                    ],
                    "b or Enter (both), c (the code) or v (the conversation); Esc: none",
                    'b',
                    NONE,
                );
                let scope = match read_key(asked.to_owned(), self.progress.clone(), keys).await {
                    Some(NONE) => return,
                    Some(key) => key.to_string(),
                    None => crate::prompter::read_line(asked.to_owned(), self.progress.clone())
                        .await
                        .unwrap_or_default(),
                };
                (which, scope)
            }
        };
        let Some(scope) = RewindScope::parse(&scope) else {
            eprintln!(
                "/rewind: `{}` is not what to take back: both, code or conversation",
                one_line(&scope)
            );
            return;
        };
        let number = which.parse::<usize>().unwrap_or(0);
        let rewound = match self.session.rewind(number, scope) {
            Ok(rewound) => rewound,
            Err(e) => {
                eprintln!("/rewind {}: {e} (/rewind lists them)", one_line(&which));
                return;
            }
        };
        if let Some(files) = &rewound.files {
            if !files.overlaps.is_empty() {
                eprintln!(
                    "/rewind: another context changed these files after, so both cannot hold: {}",
                    files.overlaps.join(", ")
                );
                return;
            }
            if files.restore.is_empty() {
                eprintln!("no file changes from prompt {number} on");
            }
            for line in files.done_lines() {
                eprintln!("{}", one_line(&line));
            }
        }
        if let Some(dropped) = rewound.messages_dropped {
            eprintln!(
                "conversation: back to before prompt {number} ({dropped} message(s) dropped)"
            );
        }
    }

    /// Does what a slash command asks (all but `/exit`), on stderr.
    pub(crate) async fn run_command(&mut self, command: SlashCommand, spent: &mut Usage) {
        match command {
            SlashCommand::Help => {
                eprint!("{}", SlashCommand::help());
                let custom = self.session.command_files();
                if !custom.is_empty() {
                    eprintln!("custom commands (.claude/commands):");
                    for command in custom {
                        let name = format!("/{}", command.name);
                        eprintln!(
                            "  {:<11} {}{}",
                            one_line(&name),
                            one_line(&command.description),
                            command
                                .argument_hint
                                .as_deref()
                                .map(|h| format!(" · /{} {}", command.name, one_line(h)))
                                .unwrap_or_default()
                        );
                    }
                }
            }
            SlashCommand::Exit => {}
            SlashCommand::Model(None) => {
                let model = self.session.model();
                eprintln!("answering: {}/{}", model.provider, model.id);
                eprintln!("available (/model MODEL, /model PROVIDER, or /model PROVIDER/MODEL):");
                for listing in self.session.providers() {
                    eprintln!("  {:<18} {}", listing.id, listing.models.join(", "));
                }
            }
            SlashCommand::Model(Some(choice)) => {
                // A word that names no provider is a model of the one answering, as with
                // `-m` (`/model opus`).
                let current = self.session.model().provider.clone();
                let is_provider =
                    |name: &str| self.session.providers().iter().any(|p| p.id == name);
                let (provider, model) = match choice.split_once('/') {
                    Some((provider, model)) => (provider, Some(model)),
                    None if is_provider(&choice) => (choice.as_str(), None),
                    None => (current.as_str(), Some(choice.as_str())),
                };
                match self.session.switch_model(provider, model).await {
                    Ok(info) => eprintln!(
                        "now answering: {}/{} (from the next prompt; the conversation carries over)",
                        info.provider, info.id
                    ),
                    Err(e) => eprintln!("/model {choice}: {e}"),
                }
            }
            SlashCommand::Approvals(argument) => self.approvals(argument.as_deref()),
            SlashCommand::Rewind(which) => self.rewind(which.as_deref()).await,
            SlashCommand::Loop(None) => {
                eprintln!("running: {}", self.session.loop_name());
                eprintln!("named loops (/loop NAME):");
                for (name, description) in self.session.named_loops() {
                    eprintln!(
                        "  {:<18} {}",
                        one_line(&name),
                        one_line(description.as_deref().unwrap_or(""))
                    );
                }
            }
            SlashCommand::Loop(Some(name)) => match self.session.switch_loop(&name).await {
                Ok(running) => eprintln!(
                    "now running loop `{running}` (from the next prompt; the conversation carries over)"
                ),
                Err(e) => eprintln!("/loop {name}: {e}"),
            },
            SlashCommand::Compact => {
                let (changed, usage) = self.session.compact().await;
                spent.add(&usage);
                if !changed {
                    eprintln!("nothing to compact: the conversation is as small as it gets");
                }
            }
            SlashCommand::Clear => self.session.clear(),
            SlashCommand::Trace(file) => {
                let path = PathBuf::from(file.as_deref().unwrap_or("wonopcode-trace.json"));
                match self.session.write_trace(&path) {
                    Ok(()) => eprintln!(
                        "trace written to {} (open it in https://ui.perfetto.dev)",
                        path.display()
                    ),
                    Err(e) => eprintln!("cannot write the trace to {}: {e}", path.display()),
                }
            }
            SlashCommand::Tools => eprintln!("{}", self.session.tool_names().join(", ")),
            SlashCommand::Cost => {
                eprintln!(
                    "{} · {} (every context, since the REPL started)",
                    in_out(spent),
                    cost(spent)
                );
            }
            SlashCommand::History => self.history_command(),
            SlashCommand::Status => self.status(spent),
            SlashCommand::Diff => self.diff().await,
            SlashCommand::Memory => self.memory(),
            SlashCommand::Mcp => self.mcp(),
            SlashCommand::Config => self.config(),
            SlashCommand::Doctor => self.doctor(),
            SlashCommand::Export(file) => self.export(file.as_deref()),
            // Sent as prompts before they get here (`SlashCommand::prompt`).
            SlashCommand::Review(_) | SlashCommand::Init => {}
            SlashCommand::Resume(argument) => self.resume_command(argument.as_deref()),
        }
    }

    /// `/history`: the conversation's prompts, numbered, and how to go on with it later.
    fn history_command(&self) {
        let prompts: Vec<String> = self
            .session
            .messages()
            .iter()
            .filter(|m| m.role == Role::User)
            .map(wonopcode_protocol::Message::text_content)
            .filter(|text| !text.is_empty())
            .collect();
        if prompts.is_empty() {
            eprintln!("nothing has been said in this conversation yet");
        } else {
            eprintln!("the conversation's prompts:");
            for (n, prompt) in prompts.iter().enumerate() {
                eprintln!("  {:>2}  {}", n + 1, clip(&one_line(prompt), 100));
            }
        }
        match (&self.history, self.session.run_id()) {
            (Some(path), _) => eprintln!(
                "kept in {0}: `wonopcode --history {0}` goes on with it",
                path.display()
            ),
            (None, Some(run)) => eprintln!(
                "kept in the journal as run {run}: `wonopcode -r {run}` goes on with it (`-c` while it is this workspace's latest)"
            ),
            (None, None) => eprintln!("not kept (--no-journal)"),
        }
    }

    /// `/resume`: this workspace's kept conversations, numbered; `/resume N|ID`: ends this
    /// session and goes on with that one.
    fn resume_command(&mut self, argument: Option<&str>) {
        let Ok(runs) = crate::restart::runs() else {
            eprintln!("there is no data directory for runs (set WONOPCODE_RUNS_DIR)");
            return;
        };
        let workspace = self.session.workspace().to_path_buf();
        let found = crate::conversations::of_workspace(&runs, &workspace);
        let Some(argument) = argument else {
            if found.is_empty() {
                eprintln!("no conversation of {} is kept", workspace.display());
            } else {
                eprint!(
                    "conversations of {}, the latest first (/resume N goes on with one):\n{}",
                    workspace.display(),
                    crate::conversations::listing(&found)
                );
            }
            return;
        };
        match crate::conversations::chosen(&runs, &found, argument, &workspace) {
            Ok(kept) => self.switch_to = Some(kept),
            Err(why) => eprintln!("{why}"),
        }
    }

    /// `/approvals`: the "always" answers of the session, numbered; `revoke N` or
    /// `revoke all` takes them back.
    fn approvals(&self, argument: Option<&str>) {
        let keys = self.session.approvals();
        let Some(argument) = argument else {
            if keys.is_empty() {
                eprintln!(
                    "no call is approved for the rest of the session ([a] always at a question adds one)"
                );
                return;
            }
            eprintln!("approved for the rest of the session (/approvals revoke N, or all):");
            for (i, key) in keys.iter().enumerate() {
                eprintln!("  {}  {}", i + 1, approval_text(key));
            }
            return;
        };
        let which: Vec<&String> = match argument.strip_prefix("revoke").map(str::trim) {
            Some("all") => keys.iter().collect(),
            Some(n) => match n
                .parse::<usize>()
                .ok()
                .and_then(|n| keys.get(n.wrapping_sub(1)))
            {
                Some(key) => vec![key],
                None => {
                    eprintln!(
                        "/approvals revoke: `{n}` is not the number of an approval (1 to {})",
                        keys.len()
                    );
                    return;
                }
            },
            None => {
                eprintln!("/approvals: `{argument}` is not `revoke N` or `revoke all`");
                return;
            }
        };
        for key in which {
            if self.session.revoke(key) {
                eprintln!("revoked: {} (it is asked about again)", approval_text(key));
            }
        }
    }
}

/// An approval key in words, shown safely.
fn approval_text(key: &str) -> String {
    one_line(&PermissionPolicy::describe_approval(key)).into_owned()
}
