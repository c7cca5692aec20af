//! The subcommand dispatcher: which command runs, and a prompt's run or the seed's action
//! flags spelled as flags of one.

use clap::ArgMatches;

use crate::args::{Args, Command, PromptArgs};
use crate::exit;
use crate::loops;

use crate::run::run_session;

/// Runs the command; returns the exit code.
pub async fn run(args: Args, matches: ArgMatches) -> anyhow::Result<u8> {
    let Some(command) = args.command else {
        return run_prompt(args.prompt, &matches).await;
    };
    match command {
        Command::Run(prompt) => {
            let matches = matches.subcommand_matches("run").unwrap_or(&matches);
            run_prompt(*prompt, matches).await
        }
        Command::Exec(mut prompt) => {
            let matches = matches.subcommand_matches("exec").unwrap_or(&matches);
            prompt.print = true;
            run_prompt(*prompt, matches).await
        }
        Command::Loops(loops) => loops::command(&loops).await,
        Command::Config(config) => crate::config_file::run(&config),
        Command::Completions { shell } => {
            let mut command = <Args as clap::CommandFactory>::command();
            // Made whole first: clap_complete panics on a failed write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "wonopcode", &mut script);
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Ok(()) => Ok(exit::SUCCESS),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(exit::BROKEN_PIPE),
                Err(e) => Err(anyhow::Error::from(e).context("cannot write the completions")),
            }
        }
        Command::Mcp(mcp) => crate::mcp::run(&mcp).await,
        Command::Sandbox(sandbox) => Ok(crate::sandbox::run(&sandbox)),
        Command::Trust(trust) => crate::trust::run(&trust),
        Command::Runs(runs) => crate::runs::run(&runs),
        Command::Resume(resume) => crate::restart::resume_by_id(&resume).await,
        Command::Fork(fork) => crate::restart::fork(&fork).await,
        Command::Rewind(rewind) => crate::rewind::rewind(&rewind),
        Command::Undo(undo) => crate::rewind::undo(&undo),
        Command::Batch(batch) => {
            let matches = matches.subcommand_matches("batch").unwrap_or(&matches);
            crate::batch::run(&batch, matches).await
        }
        Command::Acp(acp) => {
            let matches = matches.subcommand_matches("acp").unwrap_or(&matches);
            crate::acp::run(&acp, matches).await
        }
        Command::McpServer(serve) => {
            let matches = matches.subcommand_matches("mcp-server").unwrap_or(&matches);
            crate::mcp_server::run(&serve, matches).await
        }
    }
}

/// A prompt's run (or the seed's action flags, which are spelled as flags of one).
async fn run_prompt(args: PromptArgs, matches: &ArgMatches) -> anyhow::Result<u8> {
    if args.list_loops {
        return loops::list(&loops::Search::of_run(&args.run), args.json, args.verbose).await;
    }
    if args.validate_module {
        return loops::validate_flags(&args).await;
    }
    if let (Some(dir), Some(lang)) = (&args.new_guest, args.lang) {
        let kind = args.kind.unwrap_or(crate::args::GuestKind::Loop);
        return crate::new_guest::create(dir, lang, kind, "--new-guest");
    }
    if args.resume.as_deref() == Some("") && args.history.is_none() {
        return crate::restart::resume_latest(args, matches).await;
    }
    let continuing = crate::conversations::asked(&args)?;
    run_session(args, matches, continuing).await
}
