//! The two requests of the distribution API whose answers the registry client would take
//! whole: the manifest and the token handshake. A registry is untrusted: an endless
//! manifest held 1 GiB of memory in two seconds, and a `WWW-Authenticate` realm could send
//! the client to any URL. Here the manifest is read under [`MAX_MANIFEST_BYTES`] (the size
//! the OCI distribution specification asks registries to accept), its digest computed
//! from its bytes; the token is asked only of the registry's own host, and read under
//! [`MAX_TOKEN_BYTES`]. The layer, whose size the manifest gives, is then pulled by the
//! registry client with the token found here (`fetch.rs`).

use std::time::Duration;

use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE, OciManifest,
};
use reqwest_mcp::{Client, StatusCode, Url, header};
use sha2::{Digest, Sha256};

use crate::OciError;
use crate::reference::OciRef;

/// The largest manifest read: 4 MiB.
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;
/// The largest token answer read.
pub const MAX_TOKEN_BYTES: usize = 64 << 10;

/// A manifest as the registry sent it.
pub(crate) struct Manifest {
    /// Parsed.
    pub manifest: OciManifest,
    /// `sha256:` of its bytes.
    pub digest: String,
    /// The bearer token the registry's host gave for pulling, when it asked for one.
    pub token: Option<String>,
    /// Whether the registry answered over plain HTTP (one on this machine only).
    pub plain_http: bool,
}

/// Why one try at the manifest failed.
enum Failure {
    /// Nothing answered over this scheme (no connection, no TLS handshake, no HTTP).
    Unreached(String),
    /// The registry answered, and what it said is refused.
    Refused(String),
}

/// Fetches the manifest `reference` names, checked against the digest it pins: over
/// HTTPS, and from a registry on this machine over plain HTTP where it does not speak TLS
/// (as Docker treats `localhost`; a registry with a certificate of its own is trusted
/// through `SSL_CERT_FILE`, `docs/guest-authoring.md`).
pub(crate) async fn manifest(reference: &OciRef, timeout: Duration) -> Result<Manifest, OciError> {
    let registry = |why: String| OciError::Registry {
        reference: reference.to_string(),
        why,
    };
    let client = Client::builder()
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .user_agent(concat!("wonopcode/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| registry(e.to_string()))?;
    let hinted = |why: String| {
        if why.contains("certificate") {
            format!(
                "{why} (a registry with a certificate of its own: name its CA's PEM file in SSL_CERT_FILE)"
            )
        } else {
            why
        }
    };
    match manifest_over(&client, reference, "https")
        .await
        .map_err(|f| match f {
            Failure::Unreached(why) => Failure::Unreached(hinted(why)),
            refused => refused,
        }) {
        Ok(found) => Ok(found),
        Err(Failure::Unreached(tls)) if reference.is_loopback() => {
            match manifest_over(&client, reference, "http").await {
                Ok(found) => Ok(found),
                Err(Failure::Unreached(plain)) => Err(registry(format!(
                    "over HTTPS: {tls}; over plain HTTP: {plain}"
                ))),
                Err(Failure::Refused(why)) => Err(registry(why)),
            }
        }
        Err(Failure::Unreached(why) | Failure::Refused(why)) => Err(registry(why)),
    }
}

/// One try at the manifest over `scheme`.
async fn manifest_over(
    client: &Client,
    reference: &OciRef,
    scheme: &str,
) -> Result<Manifest, Failure> {
    let tag_or_digest = reference
        .digest()
        .map(str::to_owned)
        .or_else(|| reference.client_reference().tag().map(str::to_owned))
        .unwrap_or_else(|| "latest".to_owned());
    let url = Url::parse(&format!(
        "{scheme}://{}/v2/{}/manifests/{tag_or_digest}",
        reference.registry(),
        reference.repository()
    ))
    .map_err(|e| Failure::Refused(format!("no manifest address: {e}")))?;
    let accept = [
        OCI_IMAGE_MEDIA_TYPE,
        OCI_IMAGE_INDEX_MEDIA_TYPE,
        IMAGE_MANIFEST_MEDIA_TYPE,
        IMAGE_MANIFEST_LIST_MEDIA_TYPE,
    ]
    .join(", ");
    let ask = |token: Option<&str>| {
        let mut request = client.get(url.clone()).header(header::ACCEPT, &accept);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let mut answer = ask(None)
        .await
        .map_err(|e| Failure::Unreached(with_causes(&e)))?;
    let refused = Failure::Refused;
    let mut token = None;
    if answer.status() == StatusCode::UNAUTHORIZED {
        let challenge = answer
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let given = bearer_token(client, &url, &challenge, reference)
            .await
            .map_err(refused)?;
        answer = ask(Some(&given))
            .await
            .map_err(|e| refused(with_causes(&e)))?;
        token = Some(given);
    }
    if !answer.status().is_success() {
        return Err(refused(format!(
            "the registry answered {} for the manifest",
            answer.status()
        )));
    }
    let bytes = capped(answer, MAX_MANIFEST_BYTES, "the manifest")
        .await
        .map_err(refused)?;
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    if let Some(pinned) = reference.digest()
        && pinned != digest
    {
        return Err(refused(format!(
            "the manifest's digest is {digest}, not the {pinned} the reference pins"
        )));
    }
    let manifest = serde_json::from_slice(&bytes)
        .map_err(|e| refused(format!("the manifest does not parse: {e}")))?;
    Ok(Manifest {
        manifest,
        digest,
        token,
        plain_http: scheme == "http",
    })
}

/// `error` and its causes in one line: reqwest's own words name only the address, and the
/// cause says what failed (a certificate no root vouches for, a refused connection).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let words = next.to_string();
        if !line.contains(&words) {
            line.push_str(": ");
            line.push_str(&words);
        }
        cause = next.source();
    }
    line
}

/// The token a `Bearer realm="…",service="…"` challenge gives for pulling: asked of the
/// realm only when it is on the registry's own host, its answer read under a cap.
async fn bearer_token(
    client: &Client,
    registry: &Url,
    challenge: &str,
    reference: &OciRef,
) -> Result<String, String> {
    let fields = challenge_fields(challenge).ok_or_else(|| {
        format!("the registry asks for a sign-in wonopcode does not make ({challenge})")
    })?;
    let realm = fields
        .iter()
        .find(|(k, _)| k == "realm")
        .map(|(_, v)| v.as_str())
        .ok_or("the registry's challenge names no realm")?;
    let mut realm = Url::parse(realm).map_err(|e| format!("the token realm is no address: {e}"))?;
    if realm.host_str() != registry.host_str() || !matches!(realm.scheme(), "https" | "http") {
        return Err(format!(
            "the registry sends the token request to {}, another host than its own: not asked",
            realm.as_str()
        ));
    }
    if realm.scheme() == "http" && registry.scheme() == "https" {
        return Err("the registry sends the token request over plain http: not asked".to_owned());
    }
    {
        let mut query = realm.query_pairs_mut();
        query.append_pair(
            "scope",
            &format!("repository:{}:pull", reference.repository()),
        );
        if let Some((_, service)) = fields.iter().find(|(k, _)| k == "service") {
            query.append_pair("service", service);
        }
    }
    let answer = client.get(realm).send().await.map_err(|e| e.to_string())?;
    if !answer.status().is_success() {
        return Err(format!(
            "the token request was answered {}",
            answer.status()
        ));
    }
    let bytes = capped(answer, MAX_TOKEN_BYTES, "the token answer").await?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the token answer does not parse: {e}"))?;
    value["token"]
        .as_str()
        .or_else(|| value["access_token"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| "the token answer holds no token".to_owned())
}

/// The `key="value"` pairs of a `Bearer` challenge (a quoted value may hold commas);
/// `None` for another scheme or a challenge that does not read.
fn challenge_fields(challenge: &str) -> Option<Vec<(String, String)>> {
    let mut rest = challenge.trim().strip_prefix("Bearer ")?.trim_start();
    let mut fields = Vec::new();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let (value, after) = match after.strip_prefix('"') {
            Some(quoted) => {
                let (value, after) = quoted.split_once('"')?;
                (value, after)
            }
            None => after.split_once(',').map_or((after, ""), |(v, a)| (v, a)),
        };
        fields.push((key.trim().to_ascii_lowercase(), value.to_owned()));
        rest = after.trim_start().trim_start_matches(',').trim_start();
    }
    Some(fields)
}

/// The body of `answer`, refused past `cap` bytes (a declared length past it before any
/// byte is read).
async fn capped(
    mut answer: reqwest_mcp::Response,
    cap: usize,
    what: &str,
) -> Result<Vec<u8>, String> {
    let too_large = || format!("{what} is larger than {cap} bytes");
    if answer.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(|e| e.to_string())? {
        if bytes.len() + chunk.len() > cap {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_is_read_into_its_fields() {
        let fields = challenge_fields(
            r#"Bearer realm="https://r.example/token",service="r.example",scope="repository:x:pull""#,
        )
        .unwrap();
        assert_eq!(
            fields[0],
            ("realm".into(), "https://r.example/token".into())
        );
        assert_eq!(fields[1], ("service".into(), "r.example".into()));
        assert_eq!(fields[2], ("scope".into(), "repository:x:pull".into()));
        let two = challenge_fields(r#"Bearer realm="https://a/t", scope="repository:x:pull,push""#)
            .unwrap();
        assert_eq!(two[1].1, "repository:x:pull,push");
        assert!(challenge_fields("Basic realm=\"x\"").is_none());
    }
}
