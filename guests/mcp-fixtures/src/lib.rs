//! The fixture tools of the MCP conformance suite (`test_simple_text`, `test_image_content`,
//! `test_tool_with_progress`, ...), written as one guest loop that `wonopcode mcp-server`
//! serves under each tool's name (`tests/conformance/registry.yaml` gives each its
//! `input_schema`). Served with an input schema, a loop's prompt is
//! `{"tool": NAME, "arguments": {...}}`; this loop answers by the tool's name, through the
//! same host interfaces any loop uses: its answer, `__result_content__` for media, `ui`
//! progress and messages, `ui.request-input` for elicitation, a loop error for `isError`.

use serde_json::{Value, json};
use wonopcode_guest_sdk::ui::{self, MessageLevel};
use wonopcode_guest_sdk::{Loop, LoopError, export_loop, storage};

/// The state key whose value (MCP content blocks) is the tool result's content.
const RESULT_CONTENT_KEY: &str = "__result_content__";

/// A 1×1 red PNG.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A WAV file with no samples (8 kHz, mono, 16 bit).
const EMPTY_WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

#[derive(Default)]
struct Fixtures;

fn image() -> Value {
    json!({"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"})
}

fn resource(uri: &str, mime_type: &str, text: &str) -> Value {
    json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": text}})
}

/// Asks the user to fill in `schema` and says what came back.
fn form(message: &str, schema: Value) -> Result<String, LoopError> {
    Ok(match ui::request_form(message, &schema.to_string()) {
        Some(values) => format!("Elicitation completed: action=accept, content={values}"),
        None => "Elicitation completed: action=decline".to_owned(),
    })
}

/// Answers with `blocks` as the tool result's content.
fn content(blocks: Value) -> Result<String, LoopError> {
    storage::set_state(RESULT_CONTENT_KEY, &blocks.to_string());
    Ok(String::new())
}

impl Loop for Fixtures {
    fn name(&self) -> String {
        "mcp-fixtures".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        let call: Value = serde_json::from_str(&input)
            .map_err(|e| LoopError::Internal(format!("the prompt is not a tool call: {e}")))?;
        let arguments = &call["arguments"];
        match call["tool"].as_str().unwrap_or_default() {
            "test_simple_text" => Ok("This is a simple text response for testing.".to_owned()),
            "test_image_content" => content(json!([image()])),
            "test_audio_content" => content(json!([
                {"type": "audio", "data": EMPTY_WAV, "mimeType": "audio/wav"}
            ])),
            "test_embedded_resource" => content(json!([resource(
                "test://embedded-resource",
                "text/plain",
                "This is an embedded resource content."
            )])),
            "test_multiple_content_types" => content(json!([
                {"type": "text", "text": "Multiple content types test:"},
                image(),
                resource(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#
                )
            ])),
            "test_tool_with_logging" => {
                for message in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    ui::show_message(MessageLevel::Info, message);
                }
                Ok("Logging test completed".to_owned())
            }
            "test_tool_with_progress" => {
                for fraction in [0.0, 0.5, 1.0] {
                    ui::show_progress("Working", Some(fraction));
                }
                ui::hide_progress();
                Ok("Progress test completed".to_owned())
            }
            "test_error_handling" => Err(LoopError::Internal(
                "This tool intentionally returns an error for testing".to_owned(),
            )),
            "test_elicitation" => {
                let message = arguments["message"].as_str().unwrap_or("Your answer?");
                let answer = ui::request_input(message);
                Ok(format!(
                    "User response: {}",
                    answer
                        .as_deref()
                        .unwrap_or("none (declined or not answered)")
                ))
            }
            "test_elicitation_sep1034_defaults" => form(
                "Please review and update the form fields with defaults",
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {
                            "type": "string",
                            "description": "User status",
                            "enum": ["active", "inactive", "pending"],
                            "default": "active"
                        },
                        "verified": {"type": "boolean", "description": "Verification status", "default": true}
                    }
                }),
            ),
            "test_elicitation_sep1330_enums" => form(
                "Please select options from the enum fields",
                json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {
                            "type": "string",
                            "description": "Select one option",
                            "enum": ["option1", "option2", "option3"]
                        },
                        "titledSingle": {
                            "type": "string",
                            "description": "Select one option with titles",
                            "oneOf": [
                                {"const": "value1", "title": "First Option"},
                                {"const": "value2", "title": "Second Option"},
                                {"const": "value3", "title": "Third Option"}
                            ]
                        },
                        "legacyEnum": {
                            "type": "string",
                            "description": "Select one option (legacy)",
                            "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]
                        },
                        "untitledMulti": {
                            "type": "array",
                            "description": "Select multiple options",
                            "minItems": 1,
                            "maxItems": 3,
                            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                        },
                        "titledMulti": {
                            "type": "array",
                            "description": "Select multiple options with titles",
                            "minItems": 1,
                            "maxItems": 3,
                            "items": {
                                "anyOf": [
                                    {"const": "value1", "title": "First Choice"},
                                    {"const": "value2", "title": "Second Choice"},
                                    {"const": "value3", "title": "Third Choice"}
                                ]
                            }
                        }
                    }
                }),
            ),
            "test_reconnection" => Ok("Reconnection test completed".to_owned()),
            "json_schema_2020_12_tool" => Ok(format!("Received: {arguments}")),
            other => Err(LoopError::Internal(format!("no fixture named `{other}`"))),
        }
    }
}

export_loop!(Fixtures);
