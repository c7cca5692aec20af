//! Images and documents a person attaches to a prompt: read from a file, a `data:` URL or
//! stdin, their kind read from their bytes (never from a name, which anyone can give), and
//! checked against what the API and the model in use take before a request is sent.
//!
//! Nothing here resizes: an image over an API's limit is refused with the limit and the
//! file's size named, so the person decides how to shrink it (decisions.md, "Images and
//! documents").

use std::io::Read;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::message::{Message, Part, decoded_len};
use crate::usage::ModelInfo;

/// The most an attachment may be before any API's limit is asked: bigger files are refused
/// while reading, so a mistaken `-i /dev/zero` or a huge file costs no memory.
pub const MAX_ATTACHMENT_BYTES: u64 = 32 * 1024 * 1024;

/// Why an attachment was not taken.
#[derive(Debug, thiserror::Error)]
pub enum AttachmentError {
    /// The file could not be read.
    #[error("cannot read {name}: {reason}")]
    Read {
        /// The path, or `stdin`.
        name: String,
        /// The system's reason.
        reason: String,
    },
    /// Bigger than [`MAX_ATTACHMENT_BYTES`].
    #[error("{name} is over {} MiB, more than any provider takes", MAX_ATTACHMENT_BYTES / 1024 / 1024)]
    TooLarge {
        /// The path, or `stdin`.
        name: String,
    },
    /// Not an image or document the APIs read.
    #[error("{name} is not a PNG, JPEG, GIF, WebP image or a PDF (read from its first bytes)")]
    UnknownKind {
        /// The path, `stdin` or `data: URL`.
        name: String,
    },
    /// Bytes of another type than the one they were given as.
    #[error("{name} is given as `{claimed}` but holds {actual}")]
    Mislabelled {
        /// What the attachment was called.
        name: String,
        /// The type it was given as.
        claimed: String,
        /// What its bytes are.
        actual: String,
    },
    /// A `data:` URL that is not base64 of an image or PDF.
    #[error("the data URL is not `data:<image type>;base64,<data>`: {0}")]
    DataUrl(String),
}

/// What an API takes: the largest image and document (decoded bytes), and whether it reads
/// documents at all. Each wire API gives its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachmentLimits {
    /// The API's name, for the refusal's line.
    pub api: &'static str,
    /// The largest image, in bytes.
    pub image_bytes: u64,
    /// The largest document, in bytes; `None` when the API takes none.
    pub document_bytes: Option<u64>,
}

/// An image or PDF from its bytes. `name` is what an error or the model is told.
pub fn from_bytes(bytes: &[u8], name: &str) -> Result<Part, AttachmentError> {
    let media_type = kind_of(bytes, name)?;
    Ok(encoded(bytes, media_type, name))
}

/// The media type `bytes` are of, or why they are none the APIs read.
fn kind_of(bytes: &[u8], name: &str) -> Result<&'static str, AttachmentError> {
    sniff(bytes).ok_or_else(|| AttachmentError::UnknownKind {
        name: name.to_owned(),
    })
}

/// The part holding `bytes` of `media_type`.
fn encoded(bytes: &[u8], media_type: &'static str, name: &str) -> Part {
    let data = STANDARD.encode(bytes);
    if media_type == "application/pdf" {
        Part::Document {
            media_type: media_type.to_owned(),
            data,
            name: file_name(name),
        }
    } else {
        Part::Image {
            media_type: media_type.to_owned(),
            data,
        }
    }
}

/// An attachment from a reader (a file, stdin), read no further than [`MAX_ATTACHMENT_BYTES`].
pub fn from_reader(reader: impl Read, name: &str) -> Result<Part, AttachmentError> {
    let bytes = read_capped(reader, name)?;
    from_bytes(&bytes, name)
}

/// An attachment from `data:<type>;base64,<data>`. The type the URL claims must be what the
/// bytes are.
pub fn from_data_url(url: &str) -> Result<Part, AttachmentError> {
    let bad = |why: &str| AttachmentError::DataUrl(why.to_owned());
    let rest = url.strip_prefix("data:").ok_or_else(|| bad("no `data:`"))?;
    let (header, data) = rest.split_once(',').ok_or_else(|| bad("no `,`"))?;
    let claimed = header
        .strip_suffix(";base64")
        .ok_or_else(|| bad("not base64"))?;
    let bytes = STANDARD
        .decode(data.trim())
        .map_err(|e| AttachmentError::DataUrl(e.to_string()))?;
    as_claimed(&bytes, claimed, "the data URL").map_err(|e| match e {
        AttachmentError::Mislabelled {
            claimed, actual, ..
        } => AttachmentError::DataUrl(format!("it says `{claimed}` but holds {actual}")),
        other => other,
    })
}

/// An attachment whose type someone else named (a data URL, a guest): the bytes must be
/// that type, and no bigger than [`MAX_ATTACHMENT_BYTES`].
pub fn as_claimed(bytes: &[u8], claimed: &str, name: &str) -> Result<Part, AttachmentError> {
    if bytes.len() as u64 > MAX_ATTACHMENT_BYTES {
        return Err(AttachmentError::TooLarge {
            name: name.to_owned(),
        });
    }
    let actual = kind_of(bytes, name)?;
    if actual != claimed {
        return Err(AttachmentError::Mislabelled {
            name: name.to_owned(),
            claimed: claimed.to_owned(),
            actual: actual.to_owned(),
        });
    }
    Ok(encoded(bytes, actual, name))
}

/// The bytes of an image or document part.
pub fn bytes_of(part: &Part) -> Option<Vec<u8>> {
    match part {
        Part::Image { data, .. } | Part::Document { data, .. } => STANDARD.decode(data).ok(),
        _ => None,
    }
}

/// Whether a path names a file by an image's or PDF's extension: how a prompt's `@path` or
/// a pasted path is told from an ordinary mention. The bytes still decide what it is.
pub fn looks_attachable(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// Why `messages` cannot go to `model` over an API with `limits`, or `None`: one line naming
/// the model or the API, the attachment and the limit.
pub fn refusal(
    model: &ModelInfo,
    limits: AttachmentLimits,
    messages: &[Message],
) -> Option<String> {
    let parts = messages.iter().flat_map(|m| m.parts.iter());
    for part in parts {
        match part {
            Part::Image { .. } if !model.capabilities.vision => {
                return Some(format!(
                    "{} ({}) does not take images; choose a model that does (`--model`), or leave the image out",
                    model.id, model.provider
                ));
            }
            Part::Image { media_type, data } => {
                let size = decoded_len(data);
                if size > limits.image_bytes {
                    return Some(format!(
                        "an attached {media_type} image is {}, over the {} the {} API takes; make it smaller (fewer pixels, JPEG) and attach it again",
                        human_bytes(size),
                        human_bytes(limits.image_bytes),
                        limits.api
                    ));
                }
            }
            Part::Document { name, data, .. } => match limits.document_bytes {
                None => {
                    return Some(format!(
                        "the {} API does not take documents such as {name}; use another provider, or paste its text",
                        limits.api
                    ));
                }
                Some(_) if !model.capabilities.vision => {
                    return Some(format!(
                        "{} ({}) does not read documents such as {name}; choose a model that does (`--model`)",
                        model.id, model.provider
                    ));
                }
                Some(most) if decoded_len(data) > most => {
                    return Some(format!(
                        "{name} is {}, over the {} the {} API takes for a document",
                        human_bytes(decoded_len(data)),
                        human_bytes(most),
                        limits.api
                    ));
                }
                Some(_) => {}
            },
            _ => {}
        }
    }
    None
}

/// A short description of an attachment for a person or a diff, without its bytes:
/// `image/png, 12 KiB`.
pub fn describe(part: &Part) -> Option<String> {
    match part {
        Part::Image { media_type, data } => {
            Some(format!("{media_type}, {}", human_bytes(decoded_len(data))))
        }
        Part::Document {
            media_type,
            data,
            name,
        } => Some(format!(
            "{name}: {media_type}, {}",
            human_bytes(decoded_len(data))
        )),
        _ => None,
    }
}

/// The `data:` URL of an attachment's bytes, as OpenAI's APIs take them. It serializes as
/// a JSON string written straight from the parts, so a request body does not hold a second
/// copy of every image.
#[derive(Debug, Clone, Copy)]
pub struct DataUrl<'a> {
    /// The media type.
    pub media_type: &'a str,
    /// The bytes, base64.
    pub data: &'a str,
}

impl std::fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "data:{};base64,{}", self.media_type, self.data)
    }
}

impl serde::Serialize for DataUrl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

fn human_bytes(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// The media type the first bytes say, for the kinds every API reads.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if bytes.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

fn read_capped(reader: impl Read, name: &str) -> Result<Vec<u8>, AttachmentError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_ATTACHMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| AttachmentError::Read {
            name: name.to_owned(),
            reason: e.to_string(),
        })?;
    if bytes.len() as u64 > MAX_ATTACHMENT_BYTES {
        return Err(AttachmentError::TooLarge {
            name: name.to_owned(),
        });
    }
    Ok(bytes)
}

fn file_name(name: &str) -> String {
    Path::new(name)
        .file_name()
        .map_or_else(|| name.to_owned(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use crate::usage::ModelCapabilities;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn model(vision: bool) -> ModelInfo {
        ModelInfo {
            id: "m".into(),
            provider: "p".into(),
            context_window: 1000,
            max_output: 100,
            pricing: None,
            capabilities: ModelCapabilities {
                vision,
                ..ModelCapabilities::default()
            },
        }
    }

    const LIMITS: AttachmentLimits = AttachmentLimits {
        api: "Test",
        image_bytes: 100,
        document_bytes: None,
    };

    #[test]
    fn the_kind_comes_from_the_bytes_not_the_name() {
        let part = from_bytes(PNG, "photo.jpg").map_err(|e| e.to_string());
        assert!(
            matches!(&part, Ok(Part::Image { media_type, .. }) if media_type == "image/png"),
            "{part:?}"
        );
        let text = from_bytes(b"fn main() {}", "evil.png").map_err(|e| e.to_string());
        assert_eq!(
            text.err().as_deref(),
            Some(
                "evil.png is not a PNG, JPEG, GIF, WebP image or a PDF (read from its first bytes)"
            )
        );
        let pdf = from_bytes(b"%PDF-1.7\n", "/tmp/spec.pdf");
        assert!(matches!(pdf, Ok(Part::Document { name, .. }) if name == "spec.pdf"));
    }

    #[test]
    fn a_data_url_must_be_what_it_says() {
        let data = STANDARD.encode(PNG);
        let url = DataUrl {
            media_type: "image/png",
            data: &data,
        };
        assert_eq!(
            serde_json::to_string(&url).ok(),
            Some(format!("\"data:image/png;base64,{data}\""))
        );
        assert!(matches!(
            from_data_url(&url.to_string()),
            Ok(Part::Image { .. })
        ));
        let lying = DataUrl {
            media_type: "image/gif",
            ..url
        }
        .to_string();
        let error = from_data_url(&lying).map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(
            error.err().as_deref(),
            Some(
                "the data URL is not `data:<image type>;base64,<data>`: it says `image/gif` but holds image/png"
            )
        );
        assert!(from_data_url("data:image/png,rawbytes").is_err());
        assert!(from_data_url("data:image/png;base64,***").is_err());
    }

    #[test]
    fn a_reader_is_read_no_further_than_the_cap() {
        let endless = std::io::repeat(0xFF);
        let error = from_reader(endless, "stdin")
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            error.err().as_deref(),
            Some("stdin is over 32 MiB, more than any provider takes")
        );
    }

    #[test]
    fn refusals_name_the_model_or_the_limit() {
        let image = Message::new(
            Role::User,
            vec![Part::Image {
                media_type: "image/png".into(),
                data: STANDARD.encode([0u8; 150]),
            }],
        );
        let blind = refusal(&model(false), LIMITS, std::slice::from_ref(&image));
        assert_eq!(
            blind.as_deref(),
            Some(
                "m (p) does not take images; choose a model that does (`--model`), or leave the image out"
            )
        );
        let big = refusal(&model(true), LIMITS, std::slice::from_ref(&image));
        assert_eq!(
            big.as_deref(),
            Some(
                "an attached image/png image is 150 bytes, over the 100 bytes the Test API takes; make it smaller (fewer pixels, JPEG) and attach it again"
            )
        );
        let roomy = AttachmentLimits {
            image_bytes: 1000,
            ..LIMITS
        };
        assert_eq!(refusal(&model(true), roomy, &[image]), None);
        let pdf = Message::new(
            Role::User,
            vec![Part::Document {
                media_type: "application/pdf".into(),
                data: STANDARD.encode(b"%PDF-"),
                name: "a.pdf".into(),
            }],
        );
        assert_eq!(
            refusal(&model(true), LIMITS, &[pdf]).as_deref(),
            Some(
                "the Test API does not take documents such as a.pdf; use another provider, or paste its text"
            )
        );
    }

    #[test]
    fn decoded_sizes_are_exact() {
        for n in 0..10 {
            assert_eq!(decoded_len(&STANDARD.encode(vec![1u8; n])), n as u64);
        }
    }
}
