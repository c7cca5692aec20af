//! OAuth sign-in for remote MCP servers, through rmcp's authorization support (discovery of
//! the protected resource and authorization server metadata, client registration, PKCE,
//! scopes, token refresh). `wonopcode mcp login NAME` runs the authorization code flow once:
//! the browser opens the server's sign-in page, which sends the browser back to a one-shot
//! listener on 127.0.0.1, and the tokens are kept in a file only the user can read. Every
//! later connection to that server sends the token and refreshes it when it expires.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use crate::config::SignIn;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the user has to finish signing in.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

/// How long discovery, registration or the token exchange may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(60);

/// The most a server's authorization metadata may weigh.
const METADATA_LIMIT: usize = 1 << 20;

/// Why signing in did not work.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The server's authorization flow failed (discovery, registration, the token exchange).
    #[error("{0}")]
    Flow(String),
    /// The browser never came back, or a server did not answer in time.
    #[error("no answer within {} s", .0.as_secs())]
    Timeout(Duration),
    /// The local listener for the browser's return could not be used.
    #[error("the sign-in listener failed: {0}")]
    Listener(#[from] std::io::Error),
}

impl From<AuthError> for OAuthError {
    fn from(error: AuthError) -> Self {
        Self::Flow(error.to_string())
    }
}

/// The tokens of one server, in a file: `DIR/NAME.json`, readable by the user only, written
/// whole (a temporary file renamed over it). The file names the server's URL: tokens are
/// never sent to another address the entry was changed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialFile {
    path: PathBuf,
    url: String,
}

#[derive(Serialize, Deserialize)]
struct FileContent {
    url: String,
    credentials: StoredCredentials,
}

impl CredentialFile {
    /// The file of server `name` at `url`, under `dir`.
    pub fn new(dir: &Path, name: &str, url: &str) -> Self {
        Self {
            path: dir.join(format!("{name}.json")),
            url: url.to_owned(),
        }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it holds tokens for this URL.
    pub fn exists(&self) -> bool {
        self.read().ok().flatten().is_some()
    }

    fn read(&self) -> std::io::Result<Option<StoredCredentials>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let content: FileContent = serde_json::from_str(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok((content.url == self.url).then_some(content.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_vec(&FileContent {
            url: self.url.clone(),
            credentials,
        })
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        let temporary = self.path.with_extension("json.tmp");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &self.path)
    }

    /// Removes the tokens; `false` when there were none.
    pub fn remove(&self) -> std::io::Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn store_error(e: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait]
impl CredentialStore for CredentialFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove().map(drop).map_err(store_error)
    }
}

/// Signs in to the server at `url` as `settings` say: `open` is given the sign-in page's
/// address (to open a browser, and to show it), and the browser's return to this machine
/// completes the flow within `timeout`. The tokens go to the settings' credential file.
/// `challenge` is a `WWW-Authenticate` header the server refused a request with (a step up
/// to more scopes); without it, the server is asked for one.
pub async fn sign_in(
    url: &str,
    settings: &SignIn,
    challenge: Option<String>,
    open: impl FnOnce(&str),
    timeout: Duration,
) -> Result<(), OAuthError> {
    let Some(credentials) = settings.credentials.clone() else {
        return Err(OAuthError::Flow(
            "there is no file to keep the tokens in".to_owned(),
        ));
    };
    // reqwest 0.13 is built without a TLS provider of its own: ring, as for the providers.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (listener, redirect_uri) = match settings.callback_port {
        Some(port) => (
            tokio::net::TcpListener::bind(("127.0.0.1", port)).await?,
            format!("http://localhost:{port}/callback"),
        ),
        None => {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
            let port = listener.local_addr()?.port();
            (listener, format!("http://127.0.0.1:{port}/callback"))
        }
    };
    let mut request = AuthorizationRequest::new(redirect_uri.clone()).with_client_name("wonopcode");
    let challenge = match challenge {
        Some(given) => Some(given),
        None => probe(url).await,
    };
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    if let Some(document) = &settings.client_metadata_url {
        request = request.with_client_metadata_url(document.clone());
    }
    if let Some(id) = &settings.client_id {
        request = request.with_preregistered_client(id.clone());
    }
    if let Some(secret) = &settings.client_secret {
        request = request.with_client_secret(secret.clone());
    }
    if !settings.scopes.is_empty() {
        request = request.with_scopes(settings.scopes.iter().cloned());
    }
    // Discovery and registration talk to servers that may not answer: bounded.
    let discovery = async {
        let mut manager = AuthorizationManager::new(url).await?;
        manager.set_credential_store(credentials);
        let metadata = metadata(&manager, url, request.challenge.as_deref()).await?;
        manager.set_metadata(metadata);
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| e)?;
        Ok::<_, OAuthError>(session)
    };
    let session = tokio::time::timeout(EXCHANGE_TIMEOUT, discovery)
        .await
        .map_err(|_| OAuthError::Timeout(EXCHANGE_TIMEOUT))??;
    open(&sign_in_page(session.get_authorization_url())?);
    let path = tokio::time::timeout(timeout, one_callback(&listener))
        .await
        .map_err(|_| OAuthError::Timeout(timeout))??;
    let base = redirect_uri.trim_end_matches("/callback");
    // Exchanges the code for tokens, which are saved through the credential file.
    tokio::time::timeout(
        EXCHANGE_TIMEOUT,
        session.handle_callback_url(&format!("{base}{path}")),
    )
    .await
    .map_err(|_| OAuthError::Timeout(EXCHANGE_TIMEOUT))??;
    Ok(())
}

/// The sign-in page the server's metadata names, if a browser may be sent there: an
/// `https:` address, or `http:` on this machine (a test server). Anything else — a
/// `vscode://`, `file:` or `javascript:` address that an opener would hand to another
/// program — is refused. The address comes back parsed, percent-encoded where it was not:
/// no character in it can drive a terminal.
fn sign_in_page(address: &str) -> Result<String, OAuthError> {
    let refused = |why: &str| {
        OAuthError::Flow(format!(
            "the server's sign-in page {why}; it is not opened: {}",
            address.escape_debug()
        ))
    };
    let url =
        reqwest_mcp::Url::parse(address).map_err(|e| refused(&format!("is no address ({e})")))?;
    let host = url.host_str().unwrap_or_default();
    let local = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" if !host.is_empty() => Ok(url.into()),
        "http" if local => Ok(url.into()),
        "http" => Err(refused("is plain http to another machine")),
        scheme => Err(refused(&format!("is a `{scheme}:` address, not https"))),
    }
}

/// The server's `WWW-Authenticate` challenge to a request without a token, which names its
/// protected resource metadata and the scopes it wants; `None` when it sends none.
async fn probe(url: &str) -> Option<String> {
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "wonopcode", "version": env!("CARGO_PKG_VERSION")}}
    });
    let answer = reqwest_mcp::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize.to_string())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .ok()?;
    if !matches!(answer.status().as_u16(), 401 | 403) {
        return None;
    }
    answer
        .headers()
        .get("www-authenticate")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

/// The authorization server's metadata for the server at `url`, discovered by rmcp (protected
/// resource metadata first, then the authorization server's own, then the legacy endpoints),
/// with one leniency: a server of the 2025-03-26 protocol publishes its metadata at the root of
/// its own origin, and some name an issuer with a path there (`https://host/oauth`). RFC 8414
/// says metadata whose issuer is not where it was found must not be used, because that is how
/// one authorization server passes itself off as another; an issuer on the very origin the
/// user configured cannot be another's, so that metadata is used (`docs/decisions.md`).
async fn metadata(
    manager: &AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, OAuthError> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        }) if own_origin(url, &expected_issuer, &received_issuer) => {
            legacy_metadata(&expected_issuer, &received_issuer).await
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether the metadata was found at the root of the server's own origin (the issuer rmcp
/// expected is that origin) and names an issuer on that same origin.
fn own_origin(url: &str, expected_issuer: &str, received_issuer: &str) -> bool {
    let origin = |address: &str| {
        reqwest_mcp::Url::parse(address)
            .ok()
            .map(|parsed| parsed.origin())
    };
    let expected = reqwest_mcp::Url::parse(expected_issuer);
    let at_root = expected.is_ok_and(|parsed| parsed.path() == "/" || parsed.path().is_empty());
    let server = origin(url);
    at_root
        && server.as_ref().is_some_and(|o| o.is_tuple())
        && origin(expected_issuer) == server
        && origin(received_issuer) == server
}

/// Reads the metadata at the origin's root, checking again that the issuer it names is the one
/// rmcp saw (the document did not change between the two reads).
async fn legacy_metadata(
    origin: &str,
    received_issuer: &str,
) -> Result<AuthorizationMetadata, OAuthError> {
    let address = format!(
        "{}/.well-known/oauth-authorization-server",
        origin.trim_end_matches('/')
    );
    let failed = |e: reqwest_mcp::Error| OAuthError::Flow(format!("{address}: {e}"));
    let mut answer = reqwest_mcp::Client::new()
        .get(&address)
        .timeout(EXCHANGE_TIMEOUT)
        .send()
        .await
        .and_then(reqwest_mcp::Response::error_for_status)
        .map_err(failed)?;
    // A metadata document is a few kilobytes; a server that sends more is not believed.
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(failed)? {
        body.extend_from_slice(&chunk);
        if body.len() > METADATA_LIMIT {
            return Err(OAuthError::Flow(format!(
                "{address}: the metadata is larger than {METADATA_LIMIT} bytes"
            )));
        }
    }
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body).map_err(|e| {
        OAuthError::Flow(format!("{address}: not authorization server metadata: {e}"))
    })?;
    if metadata.issuer.as_deref() != Some(received_issuer) {
        return Err(OAuthError::Flow(format!(
            "{address}: the issuer changed between two reads"
        )));
    }
    Ok(metadata)
}

/// Waits for the browser's return and answers it; the path (and query) it came back to.
async fn one_callback(listener: &tokio::net::TcpListener) -> Result<String, OAuthError> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let mut request = vec![0_u8; 8192];
        let read = stream.read(&mut request).await?;
        let text = String::from_utf8_lossy(&request[..read]);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("");
        if !target.starts_with("/callback") {
            // A favicon or a stray request: not the return.
            let _ = stream
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                .await;
            continue;
        }
        let body = "Signed in. You can close this tab and go back to wonopcode.";
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        return Ok(target.to_owned());
    }
}

/// The authorization of a signed-in server, its tokens refreshed as they expire; `None` when
/// nobody signed in to it.
pub async fn authorization(
    url: &str,
    credentials: CredentialFile,
) -> Result<Option<AuthorizationManager>, OAuthError> {
    if !credentials.exists() {
        return Ok(None);
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(credentials);
    let metadata = metadata(&manager, url, None).await?;
    manager.set_metadata(metadata);
    if !manager.initialize_from_store().await? {
        return Ok(None);
    }
    Ok(Some(manager))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_is_sent_only_to_an_https_page_or_one_on_this_machine() {
        for fine in [
            "https://auth.example.com/authorize?x=1",
            "http://127.0.0.1:8080/authorize",
            "http://localhost/authorize",
            "http://[::1]:9/a",
        ] {
            assert!(sign_in_page(fine).is_ok(), "{fine}");
        }
        for (hostile, said) in [
            ("vscode://evil/open?x", "a `vscode:` address"),
            ("file:///etc/passwd", "a `file:` address"),
            ("javascript:alert(1)", "a `javascript:` address"),
            (
                "http://attacker.example/authorize",
                "plain http to another machine",
            ),
            ("not a url", "is no address"),
        ] {
            let err = sign_in_page(hostile).unwrap_err().to_string();
            assert!(err.contains(said), "{hostile}: {err}");
        }
        let shown = sign_in_page("https://a.example/\x1b]52;c;x\x07").unwrap();
        assert!(!shown.contains('\x1b'), "{shown}");
    }

    #[test]
    fn only_an_issuer_on_the_servers_own_origin_found_at_its_root_is_let_through() {
        let server = "http://127.0.0.1:4000/mcp";
        // The 2025-03-26 layout: metadata at the root, an issuer with a path on the same origin.
        assert!(own_origin(
            server,
            "http://127.0.0.1:4000/",
            "http://127.0.0.1:4000/oauth"
        ));
        // Another host, port or scheme names another authorization server.
        assert!(!own_origin(
            server,
            "http://127.0.0.1:4000/",
            "http://evil.example/oauth"
        ));
        assert!(!own_origin(
            server,
            "http://127.0.0.1:4000/",
            "http://127.0.0.1:4001/"
        ));
        assert!(!own_origin(
            server,
            "http://127.0.0.1:4000/",
            "https://127.0.0.1:4000/"
        ));
        // Metadata found elsewhere (through protected resource metadata) keeps the strict rule.
        assert!(!own_origin(
            server,
            "http://auth.example/",
            "http://auth.example/tenant"
        ));
        assert!(!own_origin(
            server,
            "http://127.0.0.1:4000/tenant",
            "http://127.0.0.1:4000/other"
        ));
        assert!(!own_origin("not a url", "http://a/", "http://a/b"));
    }

    #[test]
    fn tokens_are_private_and_bound_to_their_url() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = CredentialFile::new(dir.path(), "tracker", "https://a.example/mcp");
        assert!(!file.exists());
        file.write(StoredCredentials::new("client".into(), None, vec![], None))
            .unwrap();
        assert!(file.exists());
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // The same name at another address has no tokens.
        assert!(!CredentialFile::new(dir.path(), "tracker", "https://b.example/mcp").exists());
        assert!(file.remove().unwrap());
        assert!(!file.remove().unwrap());
    }
}
