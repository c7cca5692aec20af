//! What a person reads on the terminal for each example, kept as `insta` snapshots
//! (`tests/e2e/snapshots/`): a change to the rendering shows up as a reviewed diff. What
//! differs from run to run is normalised: times, the scratch directory, the alignment that
//! follows from them, and the order of lines that concurrent work writes in any order.

use std::path::Path;

use regex::Regex;

use crate::support::{Scratch, copy_dir, repo_root, through_shell};

/// Runs `wonopcode` with `args` on a fresh copy of `workspace`; returns what it printed on
/// stdout and stderr together, in the order a person sees it, normalised.
fn rendered(workspace: &Path, args: &[&str], prompt_file: &Path) -> String {
    let s = Scratch::new();
    copy_dir(workspace, &s.ws());
    let prompt = std::fs::read_to_string(prompt_file).unwrap();
    let out = through_shell(r#"exec "$0" "$@" 2>&1"#)
        .args(args)
        .arg("-C")
        .arg(s.ws())
        .arg(prompt.trim_end())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    normalised(&text.replace(&s.ws().display().to_string(), "[workspace]"))
}

/// Times as `[t]`; runs of spaces inside a line as one (the summary table aligns on the
/// times); and the order of what concurrent work writes in any order made fixed: adjacent
/// lines of parallel sub-contexts grouped by context (each keeps its own order), adjacent
/// finished tool calls of one response sorted. A line's details (a diff, a command's
/// output) stay under it.
fn normalised(text: &str) -> String {
    let time = Regex::new(r"\b\d+(\.\d+)? (ms|s)\b").unwrap();
    let spaces = Regex::new(r"(\S) {2,}").unwrap();
    let label = Regex::new(r"\[(0(\.\d+)+) ").unwrap();
    let label_text = Regex::new(r"^\[0(\.\d+)+ [^\]]*\] ").unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let line = time.replace_all(line, "[t]");
            spaces.replace_all(&line, "$1 ").into_owned()
        })
        .collect();
    // Blocks: a line and the detail lines under it.
    let indent = |l: &str| l.len() - l.trim_start().len();
    let detail = |head: &str, l: &str| {
        let t = l.trim_start();
        indent(l) > indent(head)
            && !t.starts_with('[')
            && !["✓", "✗", "⊘", "▸", "◂", "·", "!"]
                .iter()
                .any(|m| t.starts_with(m))
    };
    let mut blocks: Vec<Vec<String>> = Vec::new();
    for line in lines {
        match blocks.last_mut() {
            Some(block) if detail(&block[0], &line) => block.push(line),
            _ => blocks.push(vec![line]),
        }
    }
    let context = |block: &[String]| {
        label
            .captures(&block[0])
            .map(|c| c[1].to_owned())
            .unwrap_or_default()
    };
    // A finished tool call's line, the context's label left out.
    let finished_call = |block: &[String]| {
        let t = label_text.replace(block[0].trim_start(), "");
        t.starts_with("✓ ") || t.starts_with("✗ ")
    };
    // Adjacent blocks of sub-contexts, grouped by context...
    let grouped = sort_runs(
        blocks,
        |a, b| !context(a).is_empty() && !context(b).is_empty(),
        |run| run.sort_by_key(|b| context(b)),
    );
    // ...then adjacent finished calls of one context, sorted.
    let sorted = sort_runs(
        grouped,
        |a, b| context(a) == context(b) && finished_call(a) && finished_call(b),
        |run| run.sort(),
    );
    sorted.concat().join("\n") + "\n"
}

/// `blocks` with each maximal run of adjacent blocks that `together` pairs reordered by
/// `order`.
fn sort_runs(
    blocks: Vec<Vec<String>>,
    together: impl Fn(&[String], &[String]) -> bool,
    order: impl Fn(&mut Vec<Vec<String>>),
) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut run: Vec<Vec<String>> = Vec::new();
    for block in blocks {
        if let Some(last) = run.last()
            && !together(last, &block)
        {
            order(&mut run);
            out.append(&mut run);
        }
        run.push(block);
    }
    order(&mut run);
    out.append(&mut run);
    out
}

#[test]
fn the_single_loop_demo_reads_the_same() {
    let demo = repo_root().join("examples/demo");
    let transcript = demo.join("transcript.jsonl");
    let out = rendered(
        &demo.join("workspace"),
        &["--yes", "--replay", transcript.to_str().unwrap()],
        &demo.join("prompt.txt"),
    );
    insta::assert_snapshot!("demo", out);
}

#[test]
fn an_edit_and_a_command_read_the_same() {
    let fixture = repo_root().join("tests/fixtures/transcripts/edit-and-run");
    let transcript = fixture.join("transcript.jsonl");
    let out = rendered(
        &repo_root().join("examples/demo/workspace"),
        &["--yes", "--replay", transcript.to_str().unwrap()],
        &fixture.join("prompt.txt"),
    );
    insta::assert_snapshot!("edit_and_run", out);
}

/// What the example `name` of `examples/agents` prints (its registry, prompt and recorded
/// transcript, on a fresh copy of its workspace).
fn agents_example(name: &str) -> String {
    let agents = repo_root().join("examples/agents");
    let transcript = agents.join(format!("transcripts/{name}.jsonl"));
    rendered(
        &agents.join("workspace"),
        &[
            "--yes",
            "--loops-dir",
            agents.to_str().unwrap(),
            "--agent-loop-name",
            name,
            "--replay",
            transcript.to_str().unwrap(),
        ],
        &agents.join(format!("prompts/{name}.txt")),
    )
}

#[test]
fn the_multi_agent_example_reads_the_same() {
    insta::assert_snapshot!("agents_orchestrator", agents_example("orchestrator"));
}

#[test]
fn the_seeds_custom_tool_example_reads_the_same() {
    insta::assert_snapshot!("agents_architect", agents_example("architect"));
}

#[test]
fn the_hooks_example_reads_the_same() {
    let example = repo_root().join("examples/hooks");
    let transcript = example.join("transcript.jsonl");
    let config = example.join("config.yaml");
    let out = rendered(
        &repo_root().join("examples/agents/workspace"),
        &[
            "--yes",
            "--config",
            config.to_str().unwrap(),
            "--replay",
            transcript.to_str().unwrap(),
        ],
        &example.join("prompt.txt"),
    );
    insta::assert_snapshot!("hooks_policy", out);
}
