//! `Frames`: an answer that arrives in binary frames rather than server-sent events (AWS's
//! event stream, for Bedrock). The API's module reads the frames; the transport feeds it
//! the body as the network cuts it and decodes the events it yields.

use super::failure::Failure;

/// What one frame meant.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// One stream event, as JSON text.
    Event(String),
    /// An event of another type (its name), skipped.
    Other(String),
    /// The server failed mid-stream.
    Failed(Failure),
}

/// Reads frames out of a body. See the module documentation.
pub(crate) trait Frames: Send {
    /// Takes a piece of the body and adds the frames it completed to `out`. A broken frame
    /// (a bad checksum, an impossible length) ends the stream with a failure.
    fn push(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), Failure>;

    /// Whether bytes of an unfinished frame are left over.
    fn has_partial(&self) -> bool;
}
