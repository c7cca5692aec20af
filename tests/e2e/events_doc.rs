//! `docs/events.md` is the contract of `--json`: its JSON Schema block must equal the schema
//! generated from the `Event` type, and its sequence grammar must describe real runs (checked
//! in `demo.rs`). `WONOPCODE_UPDATE_DOCS=1` rewrites the schema block.

use serde_json::Value;
use wonopcode_agent_loop::Event;

use crate::support::repo_root;

const START: &str = "<!-- schema:start -->\n```json\n";
const END: &str = "```\n<!-- schema:end -->";
const SEQ_START: &str = "<!-- sequence:start -->\n```text\n";
const SEQ_END: &str = "```\n<!-- sequence:end -->";
const CHILD_SEQ_START: &str = "<!-- child-sequence:start -->\n```text\n";
const CHILD_SEQ_END: &str = "```\n<!-- child-sequence:end -->";

fn doc() -> String {
    std::fs::read_to_string(repo_root().join("docs/events.md")).unwrap()
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("docs/events.md lacks `{start}`"))
        + start.len();
    let to = text[from..]
        .find(end)
        .unwrap_or_else(|| panic!("docs/events.md lacks `{end}`"))
        + from;
    &text[from..to]
}

fn generated_schema() -> String {
    let schema = schemars::schema_for!(Event);
    format!("{}\n", serde_json::to_string_pretty(&schema).unwrap())
}

/// The JSON Schema documented for one event line.
pub fn documented_schema() -> Value {
    serde_json::from_str(between(&doc(), START, END)).unwrap()
}

/// The documented grammar of the root context's event types, as a regex over the
/// space-joined types.
pub fn documented_sequence() -> regex::Regex {
    grammar(SEQ_START, SEQ_END)
}

/// The documented grammar of one sub-context's event types.
pub fn documented_child_sequence() -> regex::Regex {
    grammar(CHILD_SEQ_START, CHILD_SEQ_END)
}

fn grammar(start: &str, end: &str) -> regex::Regex {
    // In the grammar, `a.b` names an event type, each followed by one space in the input;
    // whitespace only separates.
    let text = doc();
    let pattern = regex::Regex::new(r"[a-z_]+\.[a-z_]+")
        .unwrap()
        .replace_all(between(&text, start, end), |c: &regex::Captures| {
            format!(r"(?:{}\x20)", regex::escape(&c[0]))
        });
    let pattern: String = pattern.split_whitespace().collect();
    regex::Regex::new(&format!("^(?:{pattern})$")).unwrap()
}

#[test]
fn documented_schema_matches_the_event_type() {
    let text = doc();
    let documented = between(&text, START, END);
    let generated = generated_schema();
    if documented != generated {
        if std::env::var_os("WONOPCODE_UPDATE_DOCS").is_some() {
            let updated = text.replacen(documented, &generated, 1);
            std::fs::write(repo_root().join("docs/events.md"), updated).unwrap();
            return;
        }
        panic!(
            "docs/events.md documents a different event schema than the code emits; \
             regenerate with `WONOPCODE_UPDATE_DOCS=1 cargo test -p wonopcode-e2e events_doc` and review the diff"
        );
    }
}

#[test]
fn sequence_grammar_accepts_a_minimal_run_and_rejects_nonsense() {
    let re = documented_sequence();
    assert!(re.is_match("session.started turn.started message.created turn.completed "));
    assert!(!re.is_match("turn.started session.started "));
    assert!(!re.is_match("session.started turn.started "));
}
