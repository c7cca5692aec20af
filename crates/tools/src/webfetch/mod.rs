//! `webfetch`: an HTTP GET of one URL, its page as Markdown (htmd) or its text as it is.
//! Bounded everywhere a server could make it hang or grow: at most [`MAX_REDIRECTS`]
//! redirects, [`MAX_BODY_BYTES`] of body (the rest is not read), a time limit for the whole
//! fetch (30 s unless the call asks for less or more, up to 120 s), and the run's
//! cancellation. It asks before each fetch by default (a request can have effects, and what
//! it sends names the URL); a context whose grants narrow its sandbox reaches only the hosts
//! those grants name (`docs/grants.md`).
//!
//! Every redirect is checked, in every context ([`Redirects`]): against the context's
//! grants; to another host only when the permission rules allow that host without asking
//! (an approval of one host is not one of another); and never from a public address to a
//! loopback, private or link-local one (a cloud's metadata service), whether by a literal
//! address or by a name that resolves to one ([`addresses`]).

mod addresses;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, parameters_of};
use wonopcode_protocol::{
    PermissionRequest, PermissionStatus, SharedGate, ToolCategory, ToolKind, ToolSpec,
};
use wonopcode_sandbox::{NetworkGrant, SandboxMode, SandboxPolicy};

use crate::spec::spec;
use addresses::{AddressGuard, GuardedResolver, Lookup, is_private};

/// Redirects followed before the fetch fails.
pub const MAX_REDIRECTS: usize = 5;
/// Bytes of body read; a longer body is cut here, and the output says so.
pub const MAX_BODY_BYTES: usize = 5 << 20;
/// The time limit of a call that does not give one.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest time limit a call may ask for.
pub(crate) const MAX_TIMEOUT_SECS: u64 = 120;

/// Which hosts a context's fetches may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Any host the permission policy lets it fetch (the run's own context and those not
    /// narrowed by a grant).
    Approved,
    /// Only the hosts and ports these grants name (a context narrowed by a grant).
    Granted(Vec<NetworkGrant>),
}

impl Reach {
    /// What a context under `policy` may reach: anything when the policy is the run's own
    /// (`narrowed` false) or full access; else only its network grants.
    pub fn of(policy: &SandboxPolicy, narrowed: bool) -> Self {
        if !narrowed || policy.mode == SandboxMode::FullAccess {
            Self::Approved
        } else {
            Self::Granted(policy.network.clone())
        }
    }

    fn allows(&self, url: &reqwest::Url) -> bool {
        let Self::Granted(grants) = self else {
            return true;
        };
        let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
        let port = url.port_or_known_default();
        grants.iter().any(|grant| match grant {
            NetworkGrant::Any => true,
            NetworkGrant::Port { host: h, port: p } => {
                h.eq_ignore_ascii_case(host) && Some(*p) == port
            }
        })
    }

    /// Whether a grant names `host` itself (a narrowed context reaching a private name).
    fn names(&self, host: &str) -> bool {
        let Self::Granted(grants) = self else {
            return false;
        };
        grants.iter().any(|grant| match grant {
            NetworkGrant::Any => false,
            NetworkGrant::Port { host: h, .. } => h.eq_ignore_ascii_case(host),
        })
    }

    fn refusal(&self, url: &reqwest::Url) -> String {
        format!(
            "`{url}` is outside this context's network grants ({}); a grant in registry.yaml or the spawn's must name its host and port",
            match self {
                Self::Granted(grants) if !grants.is_empty() => grants
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "none".to_owned(),
            }
        )
    }
}

/// Fetches a URL.
pub struct WebFetchTool {
    spec: ToolSpec,
    reach: Reach,
}

impl WebFetchTool {
    /// A fetcher that may reach `reach`.
    pub fn new(reach: Reach) -> Self {
        Self {
            spec: spec(
                "webfetch",
                "Fetch a web page or text file by URL (http or https, GET). HTML comes back as Markdown, other text as it is. Bodies past 5 MiB are cut; the fetch stops after the time limit.",
                // A request can have effects on the other side: asked about by default, and
                // not run beside other calls.
                ToolKind::Mutating,
                ToolCategory::Network,
                parameters_of::<WebFetchArgs>(),
            ),
            reach,
        }
    }
}

/// A `webfetch` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// The http(s) URL
    url: String,
    /// Seconds the whole fetch may take (default 30)
    #[schemars(range(min = 1, max = MAX_TIMEOUT_SECS))]
    timeout: Option<u64>,
}

#[async_trait]
impl wonopcode_agent_loop::TypedTool for WebFetchTool {
    type Args = WebFetchArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Rules name hosts: `webfetch:docs.rs`.
    fn permission_subject(&self, args: &WebFetchArgs, _root: &std::path::Path) -> Option<String> {
        let url = reqwest::Url::parse(&args.url).ok()?;
        url.host_str().map(str::to_owned)
    }

    async fn run(&self, a: WebFetchArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let url = reqwest::Url::parse(&a.url)
            .map_err(|e| ToolError::Failed(format!("`{}` is not a URL: {e}", a.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::Failed(format!(
                "`{}`: webfetch reads http and https URLs only",
                a.url
            )));
        }
        if !self.reach.allows(&url) {
            return Err(ToolError::Failed(self.reach.refusal(&url)));
        }
        let limit = a.timeout.map_or(DEFAULT_TIMEOUT, |s| {
            Duration::from_secs(s.min(MAX_TIMEOUT_SECS))
        });
        let redirects = Redirects::of(&url, self.reach.clone(), env.gate.clone());
        let fetch = fetch(url.clone(), redirects, addresses::system_lookup());
        let page = tokio::select! {
            page = tokio::time::timeout(limit, fetch) => page.map_err(|_| {
                ToolError::Failed(format!(
                    "`{url}` did not finish within {} s",
                    limit.as_secs()
                ))
            })??,
            () = env.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let text = tokio::task::spawn_blocking(move || page.into_text())
            .await
            .map_err(|e| ToolError::Failed(format!("reading the page stopped: {e}")))??;
        Ok(ToolOutput::text(text))
    }
}

/// A response's body, as far as it was read.
struct Page {
    url: reqwest::Url,
    status: reqwest::StatusCode,
    content_type: String,
    body: Vec<u8>,
    cut: bool,
}

/// What a fetch's redirects may lead to: the context's grants, the hosts the permission
/// rules allow, and no private address after a public one.
#[derive(Clone)]
struct Redirects {
    reach: Reach,
    gate: Option<SharedGate>,
    /// The host the call named (and was approved for).
    first_host: String,
    /// Which addresses the fetch may still reach.
    addresses: Arc<AddressGuard>,
}

impl Redirects {
    fn of(url: &reqwest::Url, reach: Reach, gate: Option<SharedGate>) -> Self {
        let by_name = (reach.clone(), gate.clone());
        let addresses = AddressGuard::new(url, move |host| {
            let (reach, gate) = &by_name;
            reach.names(host)
                || gate
                    .as_ref()
                    .is_some_and(|gate| allowed_without_asking(gate, host))
        });
        Self {
            reach,
            gate,
            first_host: url.host_str().unwrap_or_default().to_owned(),
            addresses,
        }
    }

    /// Why the redirect to `url` is refused, if it is.
    fn refusal(&self, url: &reqwest::Url) -> Option<String> {
        if !self.reach.allows(url) {
            return Some(self.reach.refusal(url));
        }
        if self.addresses.reached_public() && is_private(url) {
            return Some(format!(
                "redirected to `{url}`, a loopback, private or link-local address, from a public one: not followed"
            ));
        }
        let host = url.host_str().unwrap_or_default();
        if host.eq_ignore_ascii_case(&self.first_host) {
            return None;
        }
        let allowed = self
            .gate
            .as_ref()
            .is_none_or(|gate| allowed_without_asking(gate, host));
        (!allowed).then(|| {
            format!(
                "redirected to `{url}`, on another host than the one approved (`{}`): not followed; fetch that URL itself to be asked for it",
                self.first_host
            )
        })
    }
}

/// Whether the permission rules let `webfetch` reach `host` without asking anyone.
fn allowed_without_asking(gate: &SharedGate, host: &str) -> bool {
    gate.status(&PermissionRequest {
        tool: "webfetch".to_owned(),
        kind: ToolKind::Mutating,
        subject: Some(host.to_owned()),
        preview: None,
    }) == PermissionStatus::Allowed
}

async fn fetch(url: reqwest::Url, redirects: Redirects, lookup: Lookup) -> Result<Page, ToolError> {
    let resolver = GuardedResolver {
        guard: Arc::clone(&redirects.addresses),
        lookup,
    };
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if let Some(refusal) = redirects.refusal(attempt.url()) {
            attempt.error(refusal)
        } else {
            attempt.follow()
        }
    });
    let client = reqwest::Client::builder()
        .redirect(policy)
        .dns_resolver(Arc::new(resolver))
        .user_agent(concat!("wonopcode/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ToolError::Failed(format!("cannot make an HTTP client: {e}")))?;
    let response = client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/markdown, text/plain, application/json, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| ToolError::Failed(format!("`{url}`: {}", describe(&e))))?;
    let status = response.status();
    let final_url = response.url().clone();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut body = Vec::new();
    let mut cut = false;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| ToolError::Failed(format!("`{final_url}`: {}", describe(&e))))?;
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Page {
        url: final_url,
        status,
        content_type,
        body,
        cut,
    })
}

/// An HTTP error in one line, with the cause reqwest wraps (a refused redirect's reason).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

impl Page {
    /// The page for the model: a line with the URL and status, then the Markdown or text.
    fn into_text(self) -> Result<String, ToolError> {
        let mime = self
            .content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let textual = mime.is_empty()
            || mime.starts_with("text/")
            || mime.ends_with("+xml")
            || mime.ends_with("+json")
            || matches!(
                mime.as_str(),
                "application/json" | "application/xml" | "application/javascript"
            );
        if !textual {
            return Err(ToolError::Failed(format!(
                "`{}` is `{mime}`, not text; webfetch reads pages and text files",
                self.url
            )));
        }
        let text = decode(&self.body, &self.content_type);
        let html = matches!(mime.as_str(), "text/html" | "application/xhtml+xml");
        let content = if html {
            htmd::HtmlToMarkdown::builder()
                .skip_tags(vec!["script", "style", "noscript", "template", "svg"])
                .build()
                .convert(&text)
                .map_err(|e| ToolError::Failed(format!("`{}`: {e}", self.url)))?
        } else {
            text
        };
        let mut out = format!("{} {}", self.status.as_u16(), self.url);
        if self.cut {
            out.push_str(&format!(
                " (the body was cut at {} MiB)",
                MAX_BODY_BYTES >> 20
            ));
        }
        out.push_str("\n\n");
        out.push_str(content.trim());
        Ok(out)
    }
}

/// `body` as text, in the charset the `Content-Type` names (UTF-8 when it names none);
/// bytes that are not of the charset become U+FFFD.
fn decode(body: &[u8], content_type: &str) -> String {
    let label = content_type.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"'))
    });
    let encoding = label
        .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_and_grants() {
        assert_eq!(decode(b"caf\xe9", "text/plain; charset=ISO-8859-1"), "café");
        assert_eq!(decode(b"caf\xe9", "text/plain"), "caf\u{fffd}");
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let grants = Reach::Granted(vec![NetworkGrant::Port {
            host: "docs.rs".into(),
            port: 443,
        }]);
        assert!(grants.allows(&url("https://docs.rs/htmd")));
        assert!(!grants.allows(&url("http://docs.rs/htmd")));
        assert!(!grants.allows(&url("https://example.com/")));
        assert!(Reach::Approved.allows(&url("http://127.0.0.1:9/")));
        assert!(!Reach::Granted(Vec::new()).allows(&url("https://docs.rs/")));
    }

    #[test]
    fn a_redirect_from_a_public_address_to_a_private_one_is_refused() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        for private in [
            "http://127.0.0.2/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.1.2.3/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[fd00::1]/",
            "http://localhost:8080/",
            "http://0.0.0.0/",
        ] {
            assert!(is_private(&url(private)), "{private}");
            let public = Redirects::of(&url("https://docs.rs/"), Reach::Approved, None);
            // The first hop's name resolved to a public address.
            let resolved = vec!["93.184.216.34:443".parse().unwrap()];
            assert!(public.addresses.admit("docs.rs", resolved).is_ok());
            let refused = public.refusal(&url(private)).unwrap_or_default();
            assert!(refused.contains("private"), "{private}: {refused}");
            // A call that named a private address itself may be redirected within them.
            let local = Redirects::of(&url("http://127.0.0.1:3000/"), Reach::Approved, None);
            assert_eq!(local.refusal(&url(private)), None, "{private}");
        }
        assert!(!is_private(&url("https://8.8.8.8/")));
        assert!(!is_private(&url("https://docs.rs/")));
    }

    /// A local server answering every request with one page.
    async fn serve_one_page() -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut request = [0_u8; 4096];
                let _ = stream.read(&mut request).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecret")
                    .await;
            }
        });
        port
    }

    #[tokio::test]
    async fn a_public_name_that_resolves_to_a_loopback_address_is_not_fetched() {
        let port = serve_one_page().await;
        // `rebind.example` resolves (here) to the loopback, as a hostile name's records can.
        let lookup: Lookup = Arc::new(move |_name| {
            Box::pin(async move { Ok(vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))]) })
        });
        let url = reqwest::Url::parse(&format!("http://rebind.example:{port}/")).unwrap();
        let open = Redirects::of(&url, Reach::Approved, None);
        let Err(ToolError::Failed(refused)) = fetch(url.clone(), open, Arc::clone(&lookup)).await
        else {
            panic!("a name resolving to the loopback was fetched");
        };
        assert!(
            refused.contains("resolves to a loopback, private or link-local address (127.0.0.1)"),
            "{refused}"
        );
        // A grant naming the host lets it reach the address.
        let granted = Reach::Granted(vec![NetworkGrant::Port {
            host: "rebind.example".into(),
            port,
        }]);
        let page = fetch(url.clone(), Redirects::of(&url, granted, None), lookup)
            .await
            .unwrap();
        assert_eq!(page.body, b"secret");
    }
}
