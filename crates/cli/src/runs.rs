//! `wonopcode runs list|show|history|gc`: the journals of past runs (`wonopcode_journal`), as a
//! person or a script reads them.

use std::collections::BTreeMap;

use anyhow::Context as _;
use wonopcode_journal::{Read, RunDir, RunStatus, Runs};
use wonopcode_protocol::EventKind;
use wonopcode_session::history::History;

use crate::args::{RunsAction, RunsArgs};
use crate::exit;
use crate::render::{clip, one_line};
use crate::session::usage;

/// Runs the action; the exit code.
pub fn run(args: &RunsArgs) -> anyhow::Result<u8> {
    let runs = Runs::standard().context("this system has no data directory for runs")?;
    match &args.action {
        RunsAction::List { json } => list(&runs, *json),
        RunsAction::Show { id } => show(&runs.find(id).map_err(|e| usage(e.to_string()))?),
        RunsAction::History { id, file } => {
            history(&runs.find(id).map_err(|e| usage(e.to_string()))?, file)
        }
        RunsAction::Gc { keep, older_than } => {
            let removed = runs.gc(*keep, *older_than)?;
            println!(
                "removed {} run(s) from {}",
                removed.len(),
                runs.dir().display()
            );
            Ok(exit::SUCCESS)
        }
    }
}

/// `runs history ID FILE`: the root's conversation, from the journal, as a new `--history`
/// file.
fn history(run: &RunDir, file: &std::path::Path) -> anyhow::Result<u8> {
    let read = Read::of(&run.events_path())?;
    let root: Vec<&EventKind> = read
        .records
        .iter()
        .filter(|r| r.event.context.depth() == 0)
        .map(|r| &r.event.kind)
        .collect();
    let session_id = root
        .iter()
        .find_map(|kind| match kind {
            EventKind::SessionStarted { session_id, .. } => Some(session_id.clone()),
            _ => None,
        })
        .unwrap_or_default();
    History::from_events(file, &session_id, root).map_err(|e| usage(e.to_string()))?;
    Ok(exit::SUCCESS)
}

fn list(runs: &Runs, json: bool) -> anyhow::Result<u8> {
    let all = runs.list();
    if all.is_empty() {
        eprintln!("no runs in {}", runs.dir().display());
        return Ok(exit::SUCCESS);
    }
    let mut rows = vec![["ID", "STATUS", "STARTED", "LOOP", "MODEL", "PROMPT"].map(str::to_owned)];
    for mut meta in all {
        // A run whose process died reads as interrupted.
        meta.status = meta.current_status();
        if json {
            println!("{}", serde_json::to_string(&meta)?);
            continue;
        }
        let status = serde_json::to_value(meta.status)?;
        rows.push([
            meta.id.clone(),
            status.as_str().unwrap_or_default().to_owned(),
            meta.started.get(..19).unwrap_or(&meta.started).to_owned(),
            one_line(&meta.loop_name).into_owned(),
            one_line(&meta.model).into_owned(),
            clip(&one_line(meta.prompt.as_deref().unwrap_or("")), 80),
        ]);
    }
    if !json {
        for line in columns(&rows) {
            println!("{line}");
        }
    }
    Ok(exit::SUCCESS)
}

/// The rows as columns two spaces apart, each as wide as its widest cell (the last one as
/// it is), measured as the terminal draws them.
fn columns<const N: usize>(rows: &[[String; N]]) -> Vec<String> {
    let mut widths = [0usize; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(console::measure_text_width(cell));
        }
    }
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
                if i + 1 == N {
                    line.push_str(cell);
                } else {
                    line.push_str(&console::pad_str(
                        cell,
                        width,
                        console::Alignment::Left,
                        None,
                    ));
                    line.push_str("  ");
                }
            }
            line
        })
        .collect()
}

/// What the journal holds of one context.
#[derive(Default)]
struct ContextSummary {
    module: Option<String>,
    responses: usize,
    tool_calls: usize,
    status: Option<String>,
    /// What went wrong, when its last turn failed.
    error: Option<String>,
}

fn show(run: &RunDir) -> anyhow::Result<u8> {
    let meta = run.meta()?;
    let status = serde_json::to_value(meta.current_status())?;
    println!("run {}  {}", meta.id, status.as_str().unwrap_or_default());
    println!("  workspace  {}", one_line(&meta.workspace));
    println!(
        "  started    {}{}",
        meta.started,
        meta.ended
            .as_deref()
            .map(|e| format!("  ended {e}"))
            .unwrap_or_default()
    );
    println!(
        "  loop       {}  model {}",
        one_line(&meta.loop_name),
        one_line(&meta.model)
    );
    if let Some(prompt) = &meta.prompt {
        println!("  prompt     {}", one_line(prompt));
    }
    if let Some(resumed) = &meta.resumes {
        println!("  resumes    {}", one_line(resumed));
    }
    if let Some(origin) = &meta.origin {
        println!("  fork of    {}", one_line(origin));
    }
    // A context that never ended: going on, to resume, or left as it was.
    let unended = match meta.current_status() {
        RunStatus::Running => "running",
        RunStatus::Interrupted | RunStatus::Suspended => "resumable",
        RunStatus::Finished | RunStatus::Failed => "unfinished",
    };
    let mut contexts: BTreeMap<String, ContextSummary> = BTreeMap::new();
    let read = Read::of(&run.events_path())?;
    for record in &read.records {
        let context = contexts
            .entry(record.event.context.to_string())
            .or_default();
        match &record.event.kind {
            EventKind::ContextStarted { module, .. } => context.module = Some(module.clone()),
            EventKind::ItemCompleted { item } if item.details.tool_call().is_some() => {
                context.tool_calls += 1;
            }
            EventKind::TurnCompleted { status, .. } => {
                context.status = serde_json::to_value(status)?.as_str().map(str::to_owned);
                context.error = None;
            }
            EventKind::TurnFailed { status, error, .. } => {
                context.status = serde_json::to_value(status)?.as_str().map(str::to_owned);
                context.error = Some(error.clone());
            }
            _ => {}
        }
    }
    // The responses, from the run's transcript (a torn last line is the one being written).
    let responses = std::fs::read_to_string(run.responses_path()).unwrap_or_default();
    for line in responses.lines() {
        let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let Some(context) = record["context"].as_str() {
            contexts.entry(context.to_owned()).or_default().responses += 1;
        }
    }
    println!("  contexts:");
    for (path, context) in &contexts {
        println!(
            "    {:<8} {:<14} {} response(s)  {} tool call(s)  {}",
            one_line(path),
            one_line(
                context
                    .module
                    .as_deref()
                    .unwrap_or(if path == "0" { "(root)" } else { "" })
            ),
            context.responses,
            context.tool_calls,
            context.status.as_deref().unwrap_or(unended)
        );
        if let Some(error) = &context.error {
            println!("             {}", one_line(error));
        }
    }
    if let Some(torn) = &read.torn {
        println!(
            "  torn last record: line {} (byte {}): {}",
            torn.line, torn.offset, torn.why
        );
    }
    Ok(exit::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_starts_where_its_header_does() {
        let rows = [
            ["ID", "LOOP", "PROMPT"],
            ["r1", "standard", "fix it"],
            ["r22", "résumé-é", "go"],
        ]
        .map(|r| r.map(str::to_owned));
        let lines = columns(&rows);
        assert_eq!(lines[0], "ID   LOOP      PROMPT");
        assert_eq!(lines[1], "r1   standard  fix it");
        // Measured as drawn: `é` is one column.
        assert_eq!(lines[2], "r22  résumé-é  go");
    }
}
