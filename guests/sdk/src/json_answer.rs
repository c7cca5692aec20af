//! Answers that must be JSON (a plan, a verdict): find the JSON object in the model's text,
//! check its shape, and when it is missing or wrong, tell the model once and ask again.

use serde_json::Value;

use crate::{Agent, LoopError};

/// The first JSON object in `text`: a fenced ```json block, else the first `{` to the last `}`.
pub fn json_object(text: &str) -> Option<Value> {
    let fenced = text
        .split("```json")
        .nth(1)
        .and_then(|rest| rest.split("```").next());
    let candidates = fenced.into_iter().chain(
        text.find('{')
            .zip(text.rfind('}'))
            .filter(|(a, b)| a < b)
            .map(|(a, b)| &text[a..=b]),
    );
    for candidate in candidates {
        if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(candidate.trim()) {
            return Some(value);
        }
    }
    None
}

/// Runs `input` and returns the answer with its JSON object, which `check` accepted. A
/// missing or malformed object gets one more turn, with the complaint as the prompt.
pub fn run_for_json(
    agent: &Agent<'_>,
    input: String,
    check: fn(&Value) -> Result<(), String>,
) -> Result<(String, Value), LoopError> {
    settle(agent, agent.run(input)?, check)
}

/// [`run_for_json`] for a suspended run: continues it (the host stored the answers to the
/// calls it waited on), then holds its answer to the same check.
pub fn resume_for_json(
    agent: &Agent<'_>,
    check: fn(&Value) -> Result<(), String>,
) -> Result<(String, Value), LoopError> {
    settle(agent, agent.resume()?, check)
}

/// The answer with its JSON object, asking once more when it has none that `check` accepts.
fn settle(
    agent: &Agent<'_>,
    answer: String,
    check: fn(&Value) -> Result<(), String>,
) -> Result<(String, Value), LoopError> {
    let problem = match checked(&answer, check) {
        Ok(value) => return Ok((answer, value)),
        Err(problem) => problem,
    };
    let answer = agent.run(format!(
        "Your answer cannot be used: {problem}. Reply again with only the JSON object."
    ))?;
    match checked(&answer, check) {
        Ok(value) => Ok((answer, value)),
        Err(problem) => Err(LoopError::Internal(format!(
            "no valid JSON answer after a retry: {problem}"
        ))),
    }
}

fn checked(answer: &str, check: fn(&Value) -> Result<(), String>) -> Result<Value, String> {
    let value = json_object(answer).ok_or("the answer holds no JSON object")?;
    check(&value)?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fenced_and_bare_objects() {
        let fenced = "Here:\n```json\n{\"steps\": []}\n```\nDone {not json}";
        assert_eq!(json_object(fenced), Some(serde_json::json!({"steps": []})));
        assert_eq!(
            json_object("verdict: {\"ok\": true} end"),
            Some(serde_json::json!({"ok": true}))
        );
        assert_eq!(json_object("no json here"), None);
        assert_eq!(json_object("} backwards {"), None);
    }
}
