//! Bedrock's response stream: AWS event-stream messages (`application/vnd.amazon.eventstream`,
//! framed and checksummed as the AWS SDKs read them, by `aws-smithy-eventstream`). A `chunk`
//! event carries one Anthropic stream event, base64-encoded in its JSON payload's `bytes`; an
//! exception message carries the error Bedrock hit mid-stream.

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder, write_message_to};
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::BytesMut;

use crate::http::Frame;
use crate::http::Frames;
use crate::http::failure::{self, Failure};

/// Reads messages out of the bytes as they arrive, however the network cuts them.
#[derive(Debug, Default)]
pub struct FrameReader {
    buffer: BytesMut,
    decoder: MessageFrameDecoder,
}

impl Frames for FrameReader {
    /// Takes a piece of the body and returns the messages it completed. A broken frame (a
    /// bad checksum, an impossible length) ends the stream with a failure.
    fn push(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), Failure> {
        self.buffer.extend_from_slice(bytes);
        loop {
            match self.decoder.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Complete(message)) => out.push(frame(&message)),
                Ok(DecodedFrame::Incomplete) => return Ok(()),
                Err(e) => {
                    return Err(Failure::transient(format!(
                        "bedrock: a broken event-stream frame: {e}"
                    )));
                }
            }
        }
    }

    /// Whether bytes of an unfinished message are left over.
    fn has_partial(&self) -> bool {
        !self.buffer.is_empty()
    }
}

/// One Anthropic stream event framed as Bedrock sends it: a `chunk` event whose JSON payload's
/// `bytes` is the event in base64. For servers that stand in for Bedrock (tests, proxies).
pub fn chunk_message(event: &str) -> Vec<u8> {
    let payload = serde_json::json!({ "bytes": aws_smithy_types::base64::encode(event) });
    encoded(
        &[
            (":message-type", "event"),
            (":event-type", "chunk"),
            (":content-type", "application/json"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An Anthropic event stream (its `data:` lines) as Bedrock carries it: each event in a
/// [`chunk_message`]. For servers that stand in for Bedrock with a recorded Anthropic stream.
pub fn sse_as_frames(sse: &str) -> Vec<u8> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .flat_map(chunk_message)
        .collect()
}

/// A mid-stream exception of `kind` (`throttlingException`) saying `text`, as Bedrock sends it.
pub fn exception_message(kind: &str, text: &str) -> Vec<u8> {
    encoded(
        &[
            (":message-type", "exception"),
            (":exception-type", kind),
            (":content-type", "application/json"),
        ],
        serde_json::json!({ "message": text })
            .to_string()
            .as_bytes(),
    )
}

/// One event-stream message with string headers.
fn encoded(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let message = headers
        .iter()
        .fold(Message::new(payload.to_vec()), |message, (name, value)| {
            message.add_header(Header::new(
                name.to_string(),
                HeaderValue::String(value.to_string().into()),
            ))
        });
    let mut out = Vec::new();
    // Writing to a vector fails only for a message past the format's 16 MiB limit.
    if write_message_to(&message, &mut out).is_err() {
        out.clear();
    }
    out
}

/// The string value of header `name`.
fn header<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

fn frame(message: &Message) -> Frame {
    let payload = String::from_utf8_lossy(message.payload());
    match header(message, ":message-type") {
        Some("event") => match header(message, ":event-type") {
            Some("chunk") => chunk(&payload),
            other => Frame::Other(other.unwrap_or("").to_owned()),
        },
        Some("exception") => Frame::Failed(exception(
            header(message, ":exception-type").unwrap_or("exception"),
            &payload,
        )),
        // An error message names its code and text in headers.
        _ => Frame::Failed(Failure::fatal(format!(
            "bedrock: {}: {}",
            header(message, ":error-code").unwrap_or("error"),
            header(message, ":error-message").unwrap_or("no details")
        ))),
    }
}

/// The Anthropic event inside a `chunk`: `{"bytes": BASE64}`.
fn chunk(payload: &str) -> Frame {
    let encoded = serde_json::from_str::<serde_json::Value>(payload)
        .ok()
        .and_then(|v| v.get("bytes")?.as_str().map(str::to_owned));
    let Some(encoded) = encoded else {
        return Frame::Failed(Failure::fatal(format!(
            "bedrock: a chunk without `bytes`: {}",
            failure::provider_message(payload)
        )));
    };
    match aws_smithy_types::base64::decode(&encoded) {
        Ok(bytes) => Frame::Event(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => Frame::Failed(Failure::fatal(format!(
            "bedrock: a chunk's `bytes` is not base64: {e}"
        ))),
    }
}

/// A mid-stream exception, classified as the HTTP statuses Bedrock gives the same errors:
/// throttling is a rate limit, the service's own faults are worth another attempt, a
/// validation error is not (and may say the prompt is too long). The kind is the stream
/// union's member name (`throttlingException`); some clients send the shape's name
/// (`ThrottlingException`), so case is ignored.
pub fn exception(kind: &str, payload: &str) -> Failure {
    let said = failure::provider_message(payload);
    let message = format!("bedrock: {kind}: {said}");
    match kind.to_ascii_lowercase().as_str() {
        "throttlingexception" => Failure {
            rate_limited: true,
            ..Failure::transient(message)
        },
        "internalserverexception"
        | "serviceunavailableexception"
        | "modelstreamerrorexception"
        | "modeltimeoutexception" => Failure::transient(message),
        _ => Failure {
            overflow: failure::is_overflow(&said),
            ..Failure::fatal(message)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cut_anywhere_decode_to_their_events() {
        let event = r#"{"type":"message_stop"}"#;
        let mut stream = chunk_message(event);
        // The shape's name, as some clients send it, reads as the member's.
        stream.extend(exception_message(
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ));
        for cut in [1, 7, 13, 64, stream.len()] {
            let mut reader = FrameReader::default();
            let mut out = Vec::new();
            for piece in stream.chunks(cut) {
                reader.push(piece, &mut out).unwrap();
            }
            assert!(!reader.has_partial());
            assert_eq!(out[0], Frame::Event(event.to_owned()));
            let Frame::Failed(failure) = &out[1] else {
                panic!("{out:?}")
            };
            assert!(failure.rate_limited && failure.retryable, "{failure:?}");
            assert!(failure.message.contains("Too many requests"));
        }
    }

    #[test]
    fn a_corrupted_frame_is_a_failure_not_a_panic() {
        let mut stream = encoded(
            &[(":message-type", "event"), (":event-type", "chunk")],
            b"{}",
        );
        let last = stream.len() - 1;
        stream[last] ^= 0xff;
        let mut out = Vec::new();
        let failed = FrameReader::default().push(&stream, &mut out).unwrap_err();
        assert!(
            failed.message.contains("broken event-stream frame"),
            "{failed:?}"
        );
    }
}
