//! Conversations kept in the journal, gone on with from the terminal: `-c/--continue` (this
//! workspace's latest), `-r/--resume ID`, and a numbered list to pick from (`-r` alone at a
//! terminal, `/resume` in the REPL). A conversation is a run and the runs that went on
//! from it (`wonopcode_journal::Lineage`), named by its first run's id; going on with one
//! is a new run whose root starts from its messages — nothing is run or asked again.

use std::path::Path;

use wonopcode_journal::{Lineage, RunStatus, Runs};
use wonopcode_session::stored_conversation::StoredConversation;

use crate::args::PromptArgs;
use crate::session::usage;

/// How many conversations a list shows.
const LISTED: usize = 20;

/// The conversations that ran in `workspace` and can be gone on with (none open in a
/// wonopcode, this one included; none closed before its first prompt, which holds nothing
/// to go on with), the most recently active first.
pub fn of_workspace(runs: &Runs, workspace: &Path) -> Vec<Lineage> {
    let mut found: Vec<Lineage> = runs
        .lineages()
        .into_iter()
        .filter(|l| Path::new(&l.latest.workspace) == workspace)
        .filter(|l| l.latest.current_status() != RunStatus::Running)
        .filter(|l| l.title.is_some() || !l.latest.prompts.is_empty())
        .collect();
    found.sort_by(|a, b| b.updated().cmp(a.updated()));
    found
}

/// `found` as numbered lines (the first [`LISTED`]): when, what it began with, its id.
pub fn listing(found: &[Lineage]) -> String {
    let mut out = String::new();
    for (n, lineage) in found.iter().take(LISTED).enumerate() {
        let when: String = lineage.updated().chars().take(16).collect();
        let title = lineage.title.as_deref().unwrap_or("(no prompt)");
        out.push_str(&format!(
            "  {:>2}  {}  {}  {}\n",
            n + 1,
            when.replace('T', " "),
            crate::render::clip(&crate::render::one_line(title), 60),
            lineage.id
        ));
    }
    if found.len() > LISTED {
        out.push_str(&format!(
            "  … and {} more (wonopcode runs list)\n",
            found.len() - LISTED
        ));
    }
    out
}

/// The conversation `chosen` names among `found` (a number of [`listing`], a run's id in
/// it, or the start of one), read back to go on with.
pub fn chosen(
    runs: &Runs,
    found: &[Lineage],
    chosen: &str,
    workspace: &Path,
) -> Result<StoredConversation, String> {
    let chosen = chosen.trim();
    let by_number = chosen
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=found.len().min(LISTED)).contains(n))
        .map(|n| &found[n - 1]);
    let lineage = match by_number {
        Some(lineage) => lineage,
        None => {
            let holding: Vec<&Lineage> = found
                .iter()
                .filter(|l| l.runs.iter().any(|run| run == chosen))
                .collect();
            let starting: Vec<&Lineage> = found
                .iter()
                .filter(|l| l.runs.iter().any(|run| run.starts_with(chosen)))
                .collect();
            match (holding.as_slice(), starting.as_slice()) {
                ([one], _) | ([], [one]) => *one,
                ([], []) => {
                    return Err(format!(
                        "no conversation `{chosen}` of {} to go on with (wonopcode runs list shows every run; one open in a wonopcode is not listed)",
                        workspace.display()
                    ));
                }
                _ => {
                    return Err(format!(
                        "`{chosen}` starts the ids of several conversations: give more of it"
                    ));
                }
            }
        }
    };
    StoredConversation::read(runs, &lineage.id, workspace)
}

/// The conversation the flags ask to go on with: `-c/--continue`'s, or `-r ID`'s.
pub fn asked(args: &PromptArgs) -> anyhow::Result<Option<StoredConversation>> {
    let id = match args.resume.as_deref() {
        Some(id) if !id.is_empty() => Some(id),
        _ => None,
    };
    if !args.continue_latest && id.is_none() {
        return Ok(None);
    }
    if id.is_some() && args.history.is_some() {
        return Err(usage(
            "--resume ID goes on with a conversation of the journal; the conversation of a --history file goes on with --history FILE alone",
        ));
    }
    let workspace = crate::session::workspace_root(args.run.cwd.as_deref())?;
    let runs = crate::restart::runs()?;
    Ok(Some(match id {
        Some(id) => named(&runs, &workspace, id)?,
        None => latest(&runs, &workspace)?,
    }))
}

/// The conversation `-c/--continue` goes on with: `workspace`'s latest that is not open in
/// another wonopcode.
pub fn latest(runs: &Runs, workspace: &Path) -> anyhow::Result<StoredConversation> {
    let found = of_workspace(runs, workspace);
    let Some(lineage) = found.first() else {
        return Err(usage(format!(
            "--continue: no conversation of {} in {} to go on with",
            workspace.display(),
            runs.dir().display()
        )));
    };
    StoredConversation::read(runs, &lineage.id, workspace).map_err(usage)
}

/// The conversation `-r ID` names in `workspace`.
pub fn named(runs: &Runs, workspace: &Path, id: &str) -> anyhow::Result<StoredConversation> {
    chosen(runs, &of_workspace(runs, workspace), id, workspace).map_err(usage)
}

/// `-r` alone with nothing to resume: the conversations of `workspace`, numbered, and the
/// one the person picks (Enter: the first); `None` when they pick none.
pub async fn pick(
    runs: &Runs,
    workspace: &Path,
    progress: indicatif::MultiProgress,
) -> anyhow::Result<Option<StoredConversation>> {
    let found = of_workspace(runs, workspace);
    if found.is_empty() {
        return Err(usage(format!(
            "--resume: no conversation of {} in {} to go on with",
            workspace.display(),
            runs.dir().display()
        )));
    }
    eprint!(
        "conversations of {}, the latest first:\n{}",
        workspace.display(),
        listing(&found)
    );
    loop {
        let question = "go on with which (a number or an id; Enter: 1; q: none)? ".to_owned();
        let Some(answer) = crate::prompter::read_line(question, progress.clone()).await else {
            return Ok(None);
        };
        let answer = answer.trim();
        if answer.eq_ignore_ascii_case("q") {
            return Ok(None);
        }
        let answer = if answer.is_empty() { "1" } else { answer };
        match chosen(runs, &found, answer, workspace) {
            Ok(kept) => return Ok(Some(kept)),
            Err(why) => eprintln!("{why}"),
        }
    }
}
