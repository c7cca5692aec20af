//! The wire to the editor: newline-delimited JSON-RPC on stdin and stdout, read one frame at
//! a time with a cap. The protocol crate's own stdio transport reads a line whole, however
//! long: one unterminated frame of 700 MiB was held in memory. Here a frame past
//! [`MAX_FRAME_BYTES`] is dropped as it arrives (the rest of it up to its newline is read
//! and thrown away) and stands as a line that is not JSON, which the protocol answers with a
//! JSON-RPC parse error; the connection goes on. MCP's client stops at the same size.

use std::io;

use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest frame read from the editor.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

/// What stands in for a frame over the cap: not JSON, so it is answered as a parse error.
pub(crate) const OVERSIZED: &str = "(a frame over 16 MiB, not read)";

/// The frames of `input`, each without its newline; a last one without a newline counts.
pub(crate) fn incoming(
    input: impl AsyncRead + Unpin + Send + 'static,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures::stream::unfold(BufReader::new(input), |mut reader| async move {
        match next_frame(&mut reader).await {
            Ok(Some(frame)) => Some((Ok(frame), reader)),
            Ok(None) => None,
            Err(e) => Some((Err(e), reader)),
        }
    })
}

/// The next frame, `None` at the end of the input.
async fn next_frame(reader: &mut (impl AsyncBufReadExt + Unpin)) -> io::Result<Option<String>> {
    let mut frame: Vec<u8> = Vec::new();
    let mut oversized = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok((oversized || !frame.is_empty()).then(|| text(frame, oversized)));
        }
        let (taken, ended) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (at, true),
            None => (buffer.len(), false),
        };
        if !oversized && frame.len() + taken > MAX_FRAME_BYTES {
            oversized = true;
            frame = Vec::new();
            tracing::warn!(
                limit = MAX_FRAME_BYTES,
                "the editor sent a frame over the limit; it is dropped"
            );
        }
        if !oversized {
            frame.extend_from_slice(&buffer[..taken]);
        }
        reader.consume(if ended { taken + 1 } else { taken });
        if ended {
            return Ok(Some(text(frame, oversized)));
        }
    }
}

fn text(frame: Vec<u8>, oversized: bool) -> String {
    if oversized {
        return OVERSIZED.to_owned();
    }
    String::from_utf8(frame).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The sink of frames to `output`, each written with its newline and flushed.
pub(crate) fn outgoing(
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> impl Sink<String, Error = io::Error> + Send + 'static {
    futures::sink::unfold(output, |mut output, frame: String| async move {
        let mut bytes = frame.into_bytes();
        bytes.push(b'\n');
        output.write_all(&bytes).await?;
        output.flush().await?;
        Ok::<_, io::Error>(output)
    })
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    #[tokio::test]
    async fn a_frame_over_the_cap_is_dropped_and_the_next_one_read() {
        let mut input = b"{\"a\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_FRAME_BYTES + 10));
        input.extend_from_slice(b"\n{\"b\":2}\nlast");
        let frames: Vec<String> = incoming(std::io::Cursor::new(input))
            .map(|f| f.unwrap())
            .collect()
            .await;
        assert_eq!(frames, ["{\"a\":1}", OVERSIZED, "{\"b\":2}", "last"]);
    }
}
