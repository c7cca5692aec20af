//! A stdio server's connection: rmcp's line transport over the child's pipes, the child
//! itself (killed when the connection is dropped), and a bound on one message. rmcp drops a
//! line over its own limit and reads on, so a call whose answer was that line would wait
//! for its whole timeout; here the read fails instead, the connection ends at once, and the
//! call says why ([`Oversize`]).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The most one message from a server may take (rmcp's own line limit, and its HTTP
/// client's largest event).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// How long a closed connection's server is given to exit before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// Whether a connection ended because its server sent a message over [`MAX_MESSAGE_BYTES`].
#[derive(Clone, Default)]
pub(crate) struct Oversize(Arc<AtomicBool>);

impl Oversize {
    /// Whether it happened.
    pub(crate) fn happened(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A server's stdout that fails once a line grows past [`MAX_MESSAGE_BYTES`].
struct BoundedLines {
    stdout: ChildStdout,
    since_newline: usize,
    oversize: Oversize,
}

impl AsyncRead for BoundedLines {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let oversize = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a message over {} MiB", MAX_MESSAGE_BYTES >> 20),
            )
        };
        if this.oversize.happened() {
            return Poll::Ready(Err(oversize()));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.stdout).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        this.since_newline = match read.iter().rposition(|&b| b == b'\n') {
            Some(at) => read.len() - at - 1,
            None => this.since_newline + read.len(),
        };
        if this.since_newline > MAX_MESSAGE_BYTES {
            this.oversize.0.store(true, Ordering::Release);
            return Poll::Ready(Err(oversize()));
        }
        Poll::Ready(Ok(()))
    }
}

/// A started stdio server as rmcp's transport.
pub(crate) struct ServerProcess {
    child: Child,
    transport: AsyncRwTransport<RoleClient, BoundedLines, ChildStdin>,
    oversize: Oversize,
}

impl ServerProcess {
    /// The connection over `child`'s piped stdin and stdout, and the flag it sets when a
    /// message is too large.
    pub(crate) fn new(mut child: Child) -> io::Result<(Self, Oversize)> {
        let missing = |what| io::Error::other(format!("the server's {what} is not a pipe"));
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let oversize = Oversize::default();
        let read = BoundedLines {
            stdout,
            since_newline: 0,
            oversize: oversize.clone(),
        };
        // rmcp's own limit is above this one (the newline), so this one decides.
        let transport =
            AsyncRwTransport::new(read, stdin).with_max_line_length(MAX_MESSAGE_BYTES + 1);
        Ok((
            Self {
                child,
                transport,
                oversize: oversize.clone(),
            },
            oversize,
        ))
    }

    /// The server's process id.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.id()
    }
}

impl Transport<RoleClient> for ServerProcess {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Closes its stdin (the MCP way to ask a stdio server to stop), then kills it if it
    /// has not exited within [`EXIT_WAIT`]; a server that sent an oversize message is
    /// killed at once (it is likely blocked writing the rest, and its call is waiting).
    async fn close(&mut self) -> Result<(), Self::Error> {
        if self.oversize.happened() {
            return self.child.kill().await;
        }
        self.transport.close().await?;
        if tokio::time::timeout(EXIT_WAIT, self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        Ok(())
    }
}
