//! `docs/events.md` is the contract of `--json`: its JSON Schema block must equal the schema
//! generated from the `Event` type, and its sequence grammar must describe real runs (checked
//! in `demo.rs`). `WONOPCODE_UPDATE_DOCS=1` rewrites the schema block.

use serde_json::Value;
use wonopcode_protocol::Event;

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
    // Keys sorted, whether or not this build's serde_json and schemars keep insertion order
    // (a dependency's `preserve_order` turns that on for a whole build).
    let schema =
        wonopcode_providers::transcript::sorted_keys(&serde_json::to_value(&schema).unwrap());
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
             regenerate with `WONOPCODE_UPDATE_DOCS=1 cargo test --workspace --test e2e events_doc` and review the diff"
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

/// The `const` values of a `oneOf` of string constants.
fn constants(of: &Value) -> Vec<String> {
    of["oneOf"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["const"].as_str().map(str::to_owned))
        .collect()
}

/// The rows of the document's tables, by the value of their first cell (`` `name` ``).
fn table_rows(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("| `")?;
            let (name, _) = rest.split_once('`')?;
            Some((name.to_owned(), line.to_owned()))
        })
        .collect()
}

#[test]
fn every_event_item_kind_and_status_the_schema_has_is_in_the_tables() {
    let schema: Value = serde_json::from_str(&generated_schema()).unwrap();
    let defs = &schema["$defs"];
    let text = doc();
    let rows = table_rows(&text);
    let row = |name: &str| {
        rows.iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.as_str())
    };
    let mut missing = Vec::new();
    let event_types: Vec<String> = schema["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["properties"]["type"]["const"].as_str().map(str::to_owned))
        .collect();
    assert!(event_types.len() > 15, "{event_types:?}");
    let item_kinds: Vec<String> = defs["Item"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["properties"]["kind"]["const"].as_str().map(str::to_owned))
        .collect();
    assert!(item_kinds.len() > 5, "{item_kinds:?}");
    for name in event_types.iter().chain(&item_kinds) {
        if row(name).is_none() {
            missing.push(format!("a row for `{name}`"));
        }
    }
    // Each set of values, and the rows that must name every one of them.
    let values: [(&str, &[&str]); 6] = [
        ("LoopStatus", &["turn.completed", "turn.failed"]),
        ("ContextStatus", &["context.completed"]),
        ("ItemStatus", &["tool_call"]),
        ("FileChangeKind", &["tool_call"]),
        ("HookVerdict", &["hook"]),
        ("TodoStatus", &["todo_list"]),
    ];
    for (def, owners) in values {
        let named: Vec<&str> = owners.iter().filter_map(|o| row(o)).collect();
        for value in constants(&defs[def]) {
            let quoted = format!("`{value}`");
            if !named.iter().any(|r| r.contains(&quoted)) {
                missing.push(format!(
                    "{def} `{value}` in the row of {}",
                    owners.join(" or ")
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/events.md lacks: {}",
        missing.join("; ")
    );
}
