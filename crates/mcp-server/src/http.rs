//! Streamable HTTP: rmcp's service (sessions, SSE streams with resumption, `Host` checks
//! against DNS rebinding) run by hyper on a TCP listener, behind a bearer token. Each MCP
//! session gets its own handler, so logging levels never leak between clients.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::ServeError;
use crate::auth::BearerToken;
use crate::handler::LoopServer;

/// How the HTTP server is reached.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// `Host` names (or `host:port`) accepted besides the loopback ones (`localhost`,
    /// `127.0.0.1`, `::1`); a request naming any other host is refused (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// The token every request must carry (`Authorization: Bearer …`); `None`: none
    /// (`--no-auth`, on a loopback address only).
    pub token: Option<BearerToken>,
}

/// A 401 with the challenge a client needs to know what to send.
fn unauthorized()
-> hyper::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>> {
    use http_body_util::BodyExt;
    let mut response = hyper::Response::new(
        http_body_util::Full::new(bytes::Bytes::from_static(
            b"this server needs its bearer token: Authorization: Bearer TOKEN\n",
        ))
        .boxed(),
    );
    *response.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    response
}

/// Keep-alive comments on idle SSE streams, so proxies do not close them.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Serves `server` on `listener` until `cancel`; every path answers MCP (`/mcp` by
/// convention).
pub async fn serve_http(
    server: LoopServer,
    listener: TcpListener,
    options: HttpOptions,
    cancel: CancellationToken,
) -> Result<(), ServeError> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    hosts.extend(options.allowed_hosts);
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(cancel.child_token());
    config.sse_keep_alive = Some(KEEP_ALIVE);
    let service = StreamableHttpService::new(
        move || Ok(server.connection()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token = options.token.map(Arc::new);
    let service =
        hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let (service, token) = (service.clone(), token.clone());
            async move {
                let authorization = request
                    .headers()
                    .get(hyper::header::AUTHORIZATION)
                    .map(|v| v.as_bytes());
                if let Some(token) = &token
                    && !token.admits(authorization)
                {
                    return Ok::<_, std::convert::Infallible>(unauthorized());
                }
                Ok(service.handle(request).await)
            }
        });
    loop {
        let (stream, peer) = tokio::select! {
            () = cancel.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!(error = %e, "cannot accept an HTTP connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let service = service.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let builder = auto::Builder::new(TokioExecutor::new());
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            tokio::select! {
                () = cancel.cancelled() => {}
                served = connection => if let Err(e) = served {
                    tracing::debug!(%peer, error = %e, "an HTTP connection ended with an error");
                },
            }
        });
    }
}
