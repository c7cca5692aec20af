//! A form on the terminal, an MCP server's (`elicitation/create`) or a guest's
//! (`ui.request-form`): the server's message, then
//! one question per field with its description, its choices and its default in brackets.
//! Enter takes the default; a value of the wrong type is asked again; `/decline` and
//! `/cancel` answer the whole form; the end of input cancels it.

use async_trait::async_trait;
use serde_json::{Map, Value};
use wonopcode_mcp::{Elicited, Elicitor, Form};

use crate::prompter::{TerminalPrompter, read_line};
use crate::render::{one_line, visible};

/// Tries before a field that keeps getting a wrong value cancels the form.
const TRIES: usize = 3;

#[async_trait]
impl Elicitor for TerminalPrompter {
    async fn elicit(&self, server: &str, form: &Form) -> Elicited {
        let empty = Map::new();
        let properties = form
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = form
            .schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        eprintln!(
            "{} `{}` asks: {} (Enter takes [the default]; /decline, /cancel)",
            console::style("?").cyan().bold(),
            one_line(server),
            visible(&form.message)
        );
        let mut values = Map::new();
        for name in &form.fields {
            let Some(property) = properties.get(name) else {
                continue;
            };
            let mut tries = 0;
            loop {
                let question = field_question(name, property, required.contains(&name.as_str()));
                let Some(line) = read_line(question, self.progress.clone()).await else {
                    return Elicited::Cancel;
                };
                match line.trim() {
                    "/decline" => return Elicited::Decline,
                    "/cancel" => return Elicited::Cancel,
                    "" if property.get("default").is_some() => break,
                    "" if !required.contains(&name.as_str()) => break,
                    "" => eprintln!("  `{}` is required", one_line(name)),
                    text => match parse(text, property) {
                        Ok(value) => {
                            values.insert(name.clone(), value);
                            break;
                        }
                        Err(why) => eprintln!("  {why}"),
                    },
                }
                tries += 1;
                if tries == TRIES {
                    return Elicited::Cancel;
                }
            }
        }
        Elicited::Accept(values)
    }
}

/// `  name (what it is) {a|b} [default]: `
fn field_question(name: &str, property: &Value, required: bool) -> String {
    let mut question = format!("  {}", one_line(name));
    if let Some(about) = property
        .get("description")
        .or_else(|| property.get("title"))
        .and_then(Value::as_str)
    {
        question.push_str(&format!(" ({})", visible(about)));
    }
    let choices = choices(property);
    if !choices.is_empty() {
        question.push_str(&format!(" {{{}}}", choices.join("|")));
    }
    if let Some(default) = property.get("default") {
        let shown = default
            .as_str()
            .map_or_else(|| default.to_string(), str::to_owned);
        question.push_str(&format!(" [{}]", one_line(&shown)));
    } else if required {
        question.push_str(" (required)");
    }
    question.push_str(": ");
    question
}

/// The values an enum field allows (`enum`, or `oneOf` of `const`s).
fn choices(property: &Value) -> Vec<String> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    property
        .get("oneOf")
        .and_then(Value::as_array)
        .map(|options| {
            options
                .iter()
                .filter_map(|o| o.get("const").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `text` as the field's type says; why not, when it does not fit.
fn parse(text: &str, property: &Value) -> Result<Value, String> {
    let kind = property
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let value = match kind {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, please".to_owned())?,
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "a number, please".to_owned())?,
        "boolean" => match text.to_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => return Err("yes or no, please".to_owned()),
        },
        _ => Value::String(text.to_owned()),
    };
    let choices = choices(property);
    if !choices.is_empty() && !choices.iter().any(|c| Some(c.as_str()) == value.as_str()) {
        return Err(format!("one of {}, please", choices.join(", ")));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_typed_and_choices_kept() {
        assert_eq!(parse("30", &json!({"type": "integer"})), Ok(json!(30)));
        assert!(parse("thirty", &json!({"type": "integer"})).is_err());
        assert_eq!(parse("yes", &json!({"type": "boolean"})), Ok(json!(true)));
        let status = json!({"type": "string", "enum": ["active", "inactive"], "default": "active"});
        assert!(parse("gone", &status).is_err());
        assert_eq!(parse("inactive", &status), Ok(json!("inactive")));
        assert_eq!(
            field_question("status", &status, false),
            "  status {active|inactive} [active]: "
        );
    }
}
