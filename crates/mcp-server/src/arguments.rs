//! What a call of a loop's tool takes: a prompt, and optionally the workspace, the model and
//! the request limit. The schema is what clients show and models fill in; the parse is
//! strict, so a misspelled field is an error the caller sees, not a silent default.

use std::path::PathBuf;

use serde_json::{Value, json};

/// The input schema of every loop's tool.
pub fn schema() -> serde_json::Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "The task, as you would type it to wonopcode."
            },
            "workspace": {
                "type": "string",
                "description": "Directory the loop works in; its tools cannot reach outside it (default: the server's workspace)."
            },
            "model": {
                "type": "string",
                "description": "Model id at the server's provider (default: the server's model)."
            },
            "max_iterations": {
                "type": "integer",
                "minimum": 1,
                "description": "Model requests allowed for this prompt (default: the server's)."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// A call's arguments, checked.
#[derive(Debug, PartialEq, Eq)]
pub struct Arguments {
    /// The task.
    pub prompt: String,
    /// Where the loop works, when not the server's workspace.
    pub workspace: Option<PathBuf>,
    /// The model, when not the server's.
    pub model: Option<String>,
    /// The request limit, when not the server's.
    pub max_iterations: Option<u32>,
}

/// Checks `arguments` against [`schema`]; the error is one line naming the field.
pub fn parse(arguments: Option<&serde_json::Map<String, Value>>) -> Result<Arguments, String> {
    let empty = serde_json::Map::new();
    let arguments = arguments.unwrap_or(&empty);
    for key in arguments.keys() {
        if !["prompt", "workspace", "model", "max_iterations"].contains(&key.as_str()) {
            return Err(format!(
                "unknown argument `{key}` (a loop takes prompt, workspace, model and max_iterations)"
            ));
        }
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        match arguments.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(format!("`{key}` is empty")),
            Some(other) => Err(format!("`{key}` must be a string, not {other}")),
        }
    };
    let prompt = text("prompt")?.ok_or_else(|| "`prompt` is required".to_owned())?;
    let max_iterations = match arguments.get("max_iterations") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    format!("`max_iterations` must be a whole number from 1, not {value}")
                })?,
        ),
    };
    let workspace = text("workspace")?.map(PathBuf::from);
    // Beneath the server's workspace, by a relative path that climbs nowhere (a link out is
    // refused where the directory is resolved).
    if let Some(dir) = &workspace
        && !dir.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
    {
        return Err(format!(
            "`workspace` `{}` must be a relative path beneath the server's workspace, without `..`",
            dir.display()
        ));
    }
    Ok(Arguments {
        prompt,
        workspace,
        model: text("model")?,
        max_iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Result<Arguments, String> {
        parse(value.as_object())
    }

    #[test]
    fn only_the_known_fields_with_the_right_types_are_taken() {
        let parsed = args(json!({"prompt": "fix it", "max_iterations": 3})).unwrap();
        assert_eq!(parsed.prompt, "fix it");
        assert_eq!(parsed.max_iterations, Some(3));
        assert_eq!(parse(None).unwrap_err(), "`prompt` is required");
        for (bad, says) in [
            (json!({"prompt": " "}), "`prompt` is empty"),
            (json!({"prompt": 3}), "`prompt` must be a string"),
            (
                json!({"prompt": "x", "max_iterations": 0}),
                "`max_iterations`",
            ),
            (
                json!({"prompt": "x", "max_iterations": -1}),
                "`max_iterations`",
            ),
            (
                json!({"prompt": "x", "promt": "y"}),
                "unknown argument `promt`",
            ),
        ] {
            let error = args(bad.clone()).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
