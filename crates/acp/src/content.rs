//! A prompt's content blocks as a wonopcode prompt: text as it is, a resource link as the
//! mention of its URI, an embedded text resource as the file's text under its URI, an image
//! as an attachment checked by its bytes (never by the type the editor claims).

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use wonopcode_protocol::Part;
use wonopcode_protocol::attachment;

/// The prompt's text and its attachments; `Err`: one line saying which block is refused.
pub(crate) fn prompt_of(blocks: &[ContentBlock]) -> Result<(String, Vec<Part>), String> {
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(t) => text.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => text.push(format!("@{}", link.uri)),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(file) => text.push(format!(
                    "<context uri=\"{}\">\n{}\n</context>",
                    file.uri, file.text
                )),
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    attachments.push(decoded(index, &blob.blob, blob.mime_type.as_deref())?);
                }
                _ => {
                    return Err(format!(
                        "prompt block {index}: a resource of an unknown kind"
                    ));
                }
            },
            ContentBlock::Image(image) => {
                attachments.push(decoded(index, &image.data, Some(&image.mime_type))?);
            }
            ContentBlock::Audio(_) => {
                return Err(format!(
                    "prompt block {index}: audio is not taken (the agent does not offer it)"
                ));
            }
            _ => return Err(format!("prompt block {index}: a block of an unknown kind")),
        }
    }
    Ok((text.join("\n\n"), attachments))
}

/// An image or document given base64, read by its bytes; a type the editor claims must be
/// what the bytes are.
fn decoded(index: usize, data: &str, claimed: Option<&str>) -> Result<Part, String> {
    let name = format!("prompt block {index}");
    let bytes = STANDARD
        .decode(data.trim())
        .map_err(|e| format!("{name}: not base64: {e}"))?;
    match claimed {
        Some(claimed) => attachment::as_claimed(&bytes, claimed, &name),
        None => attachment::from_bytes(&bytes, &name),
    }
    .map_err(|e| e.to_string())
}
