//! What a model reads of an MCP tool's result: its text, a note for each image or sound (type
//! and size: the tool round gives models text), embedded resources' text, links, and the
//! structured content when there is no text to carry it.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use wonopcode_protocol::message::decoded_len;

/// The text of `result`, and whether the server said the call failed.
pub fn to_text(result: &CallToolResult) -> (String, bool) {
    let mut pieces: Vec<String> = result.content.iter().map(block_text).collect();
    if let Some(structured) = &result.structured_content
        && pieces.iter().all(String::is_empty)
    {
        pieces = vec![structured.to_string()];
    }
    (pieces.join("\n"), result.is_error == Some(true))
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image: {}, {} bytes]",
            image.mime_type,
            decoded_len(&image.data)
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {} bytes]",
            audio.mime_type,
            decoded_len(&audio.data)
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                decoded_len(blob)
            ),
            _ => "[resource of a kind wonopcode does not show]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        // A kind of content newer than this build: said, not dropped silently.
        _ => "[content of a kind wonopcode does not show]".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_content_is_told() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("aGVsbG8=", "image/png"),
        ]);
        let (text, failed) = to_text(&result);
        assert_eq!(text, "hello\n[image: image/png, 5 bytes]");
        assert!(!failed);
        result.is_error = Some(true);
        assert!(to_text(&result).1);
        let structured = CallToolResult::structured(serde_json::json!({"sum": 3}));
        assert!(
            to_text(&structured).0.contains("\"sum\":3"),
            "{:?}",
            to_text(&structured)
        );
    }
}
