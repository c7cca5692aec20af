//! `wonopcode rewind RUN --to PROMPT [--code] [--conversation] [--context C]` and `wonopcode
//! undo`: the changes a run made to the workspace from one of its prompts on, taken back
//! from its checkpoints (the files' contents before each change, kept beside its journal),
//! and with `--conversation` its conversation (`conversation`). A file someone else changed
//! since the run last changed it is a conflict: listed, and left alone unless `--force`.
//! Changes of the context rewound that another context's later changes build on are
//! refused, naming the files.

mod conversation;

use wonopcode_journal::{RunDir, RunMeta, RunStatus, Runs, rewind_run};

use self::conversation::ConversationBack;

use crate::args::{RewindApply, RewindArgs, UndoArgs};
use crate::exit;
use crate::restart::{find_run, runs};
use crate::session::{usage, workspace_root};

/// `wonopcode rewind RUN --to PROMPT`.
pub fn rewind(args: &RewindArgs) -> anyhow::Result<u8> {
    let (runs, dir) = find_run(&args.id)?;
    let from = usize::try_from(args.to - 1).unwrap_or(usize::MAX);
    let meta = checked(&dir, from)?;
    // The conversation is worked out first: what refuses it refuses the whole rewind.
    let conversation = if args.conversation {
        Some(ConversationBack::plan(&runs, &meta, from)?)
    } else {
        None
    };
    let mut code = exit::SUCCESS;
    if args.code || !args.conversation {
        let contexts: Vec<&str> = args.context.iter().map(String::as_str).collect();
        code = take_back(&dir, &meta, from, &contexts, &args.apply)?;
    }
    if let Some(conversation) = conversation {
        let (number, dropped) = (from + 1, conversation.dropped());
        if args.apply.dry_run {
            println!(
                "would take the conversation back to before prompt {number} ({dropped} message(s) left out)"
            );
        } else {
            let id = conversation.keep(&runs)?;
            println!(
                "conversation: back to before prompt {number} ({dropped} message(s) left out) in run {id}, which goes on from run {}",
                meta.id
            );
        }
    }
    Ok(code)
}

/// `wonopcode undo`: the last prompt of this workspace's latest run.
pub fn undo(args: &UndoArgs) -> anyhow::Result<u8> {
    let root = workspace_root(args.cwd.as_deref())?;
    let runs = runs()?;
    let workspace = root.display().to_string();
    // A run without prompts (one a conversation's rewind made) changed no file.
    let Some(meta) = runs
        .list()
        .into_iter()
        .find(|m| m.workspace == workspace && !m.prompts.is_empty())
    else {
        return Err(usage(format!(
            "undo: no run of {workspace} with a prompt in {}",
            runs.dir().display()
        )));
    };
    let last = meta.prompts.len() - 1;
    let dir = found(&runs, &meta.id)?;
    let meta = checked(&dir, last)?;
    take_back(&dir, &meta, last, &[], &args.apply)
}

fn found(runs: &Runs, id: &str) -> anyhow::Result<RunDir> {
    runs.find(id).map_err(|e| usage(e.to_string()))
}

/// The run in `dir`, when it is not running and has a prompt `from` (0-based).
fn checked(dir: &RunDir, from: usize) -> anyhow::Result<RunMeta> {
    let meta = dir.meta()?;
    if meta.current_status() == RunStatus::Running {
        return Err(usage(format!(
            "run {} is still running (process {}): stop it first",
            meta.id,
            meta.pid.unwrap_or_default()
        )));
    }
    if from >= meta.prompts.len() {
        return Err(usage(format!(
            "run {} has {} prompt(s): there is no prompt {}",
            meta.id,
            meta.prompts.len(),
            from + 1
        )));
    }
    Ok(meta)
}

/// Takes back the file changes of `dir`'s run (`meta`) from prompt `from` (0-based) on, of
/// `contexts` when some are given, as `apply` says.
fn take_back(
    dir: &RunDir,
    meta: &RunMeta,
    from: usize,
    contexts: &[&str],
    apply: &RewindApply,
) -> anyhow::Result<u8> {
    let workspace = std::path::PathBuf::from(&meta.workspace);
    let rewind = rewind_run(dir, &workspace, from, contexts, apply.force, apply.dry_run)?;
    let shown = crate::render::one_line;
    for path in &rewind.refused {
        eprintln!(
            "refused: {} is not a path inside the workspace",
            shown(path)
        );
    }
    if !rewind.overlaps.is_empty() {
        let files: Vec<String> = rewind
            .overlaps
            .iter()
            .map(|p| shown(p).into_owned())
            .collect();
        return Err(usage(format!(
            "another context changed these files after the changes to take back, so both cannot hold: {}",
            files.join(", ")
        )));
    }
    if rewind.restore.is_empty() {
        println!(
            "nothing to take back: the run changed no file from prompt {} on",
            from + 1
        );
        return Ok(exit::SUCCESS);
    }
    for restore in &rewind.restore {
        let path = &restore.path;
        let what = if restore.content.is_some() {
            "restore"
        } else {
            "remove"
        };
        let conflict = rewind.conflicts.contains(path);
        let note = match (conflict, apply.force) {
            (true, true) => " (changed since by someone else: overwritten, --force)",
            (true, false) => " (changed since by someone else: left alone; --force restores it)",
            _ => "",
        };
        let verb = if apply.dry_run { "would " } else { "" };
        println!("{verb}{what} {}{note}", shown(path));
    }
    if apply.dry_run {
        return Ok(exit::SUCCESS);
    }
    if !apply.force && !rewind.conflicts.is_empty() {
        eprintln!(
            "{} file(s) changed since by someone else were left alone",
            rewind.conflicts.len()
        );
        return Ok(exit::ERROR);
    }
    Ok(exit::SUCCESS)
}
