//! Fetching a module: the manifest (its digest checked against a pinned reference), the
//! layout's checks, then the one layer streamed into the cache under a size cap, its digest
//! checked, and its first bytes those of a component. Every step has a timeout; a module
//! already in the cache under its digest is not asked of the registry again.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::{OciDescriptor, OciImageManifest, OciManifest};
use oci_client::secrets::RegistryAuth;
use tokio::io::AsyncWrite;

use crate::cache::ModuleCache;
use crate::reference::OciRef;
use crate::{MAX_COMPONENT_BYTES, OciError, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};

/// The longest wait for a connection or a read.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a whole fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(300);

/// A fetched module.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Its component file, in the cache.
    pub path: std::path::PathBuf,
    /// The reference pinned to the manifest's digest (what a journal keeps).
    pub pinned: OciRef,
    /// Whether it came from the cache without asking the registry.
    pub cached: bool,
}

/// Fetches the module `reference` names into `cache` (or finds it there).
pub async fn fetch(reference: &OciRef, cache: &ModuleCache) -> Result<Fetched, OciError> {
    if let Some(digest) = reference.digest()
        && let Some(path) = cache.get(digest)
    {
        return Ok(Fetched {
            path,
            pinned: reference.clone(),
            cached: true,
        });
    }
    let timed_out = || OciError::Registry {
        reference: reference.to_string(),
        why: format!("no answer within {} s", FETCH_TIMEOUT.as_secs()),
    };
    tokio::time::timeout(FETCH_TIMEOUT, fetch_from_registry(reference, cache))
        .await
        .map_err(|_| timed_out())?
}

async fn fetch_from_registry(reference: &OciRef, cache: &ModuleCache) -> Result<Fetched, OciError> {
    let registry = |e: oci_client::errors::OciDistributionError| OciError::Registry {
        reference: reference.to_string(),
        why: e.to_string(),
    };
    // reqwest's rustls needs a provider installed once; ring is the one the tree has.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Read under a cap, its digest checked against the reference's when it pins one.
    let fetched = crate::distribution::manifest(reference, NETWORK_TIMEOUT).await?;
    let digest = fetched.digest;
    let client = client_for(fetched.plain_http);
    if let Some(token) = fetched.token {
        // Kept for the layer's pull; with a token given, the client asks no realm itself.
        client
            .auth(
                reference.client_reference(),
                &RegistryAuth::Bearer(token),
                oci_client::RegistryOperation::Pull,
            )
            .await
            .map_err(registry)?;
    }
    let layer = component_layer(reference, fetched.manifest)?;
    let pinned = reference.pinned(&digest);
    if let Some(path) = cache.get(&digest) {
        return Ok(Fetched {
            path,
            pinned,
            cached: true,
        });
    }
    let file = cache.temporary()?;
    let out = file.reopen().map_err(|e| OciError::Cache {
        path: file.path().display().to_string(),
        why: e.to_string(),
    })?;
    let capped = Capped {
        inner: tokio::fs::File::from_std(out),
        left: MAX_COMPONENT_BYTES,
    };
    // The client checks the blob's bytes against the layer's digest as they stream.
    client
        .pull_blob(reference.client_reference(), &layer, capped)
        .await
        .map_err(registry)?;
    check_component(reference, file.path())?;
    let path = cache.keep(&digest, file)?;
    tracing::info!(module = %pinned, path = %path.display(), "fetched a module");
    Ok(Fetched {
        path,
        pinned,
        cached: false,
    })
}

/// A client that speaks HTTPS, or plain HTTP where the manifest came over it (a registry
/// on this machine only, [`crate::distribution::manifest`]).
fn client_for(plain_http: bool) -> Client {
    let protocol = if plain_http {
        ClientProtocol::Http
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        read_timeout: Some(NETWORK_TIMEOUT),
        connect_timeout: Some(NETWORK_TIMEOUT),
        user_agent: concat!("wonopcode/", env!("CARGO_PKG_VERSION")),
        platform_resolver: None,
        ..ClientConfig::default()
    })
}

/// The one layer of a manifest in the Wasm OCI artifact layout, within the size cap.
fn component_layer(reference: &OciRef, manifest: OciManifest) -> Result<OciDescriptor, OciError> {
    let layout = |why: String| OciError::Layout {
        reference: reference.to_string(),
        why,
    };
    let image: OciImageManifest = match manifest {
        OciManifest::Image(image) => image,
        OciManifest::ImageIndex(_) => {
            return Err(layout(
                "the reference names an image index (an image for several platforms)".to_owned(),
            ));
        }
    };
    if image.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(layout(format!(
            "its config is `{}`, not `{WASM_CONFIG_MEDIA_TYPE}`",
            image.config.media_type
        )));
    }
    let [layer] = image.layers.as_slice() else {
        return Err(layout(format!(
            "it has {} layers, not the one `{WASM_LAYER_MEDIA_TYPE}` layer",
            image.layers.len()
        )));
    };
    if layer.media_type != WASM_LAYER_MEDIA_TYPE {
        return Err(layout(format!(
            "its layer is `{}`, not `{WASM_LAYER_MEDIA_TYPE}`",
            layer.media_type
        )));
    }
    if u64::try_from(layer.size).map_or(true, |size| size > MAX_COMPONENT_BYTES) {
        return Err(layout(format!(
            "its layer says {} bytes; the limit is {MAX_COMPONENT_BYTES}",
            layer.size
        )));
    }
    Ok(layer.clone())
}

/// A component starts with `\0asm` and the component encoding's version and layer
/// (`0d 00 01 00`); a core module or anything else is refused before it is kept.
fn check_component(reference: &OciRef, path: &std::path::Path) -> Result<(), OciError> {
    let mut head = [0u8; 8];
    let read =
        std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
    if read.is_err() || head != *b"\0asm\x0d\x00\x01\x00" {
        return Err(OciError::Layout {
            reference: reference.to_string(),
            why: "its layer is not a WebAssembly component".to_owned(),
        });
    }
    Ok(())
}

/// A writer that refuses bytes past `left`: a registry cannot fill the disk, whatever the
/// manifest said of the layer's size.
struct Capped<W> {
    inner: W,
    left: u64,
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Capped<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if buf.len() as u64 > this.left {
            return Poll::Ready(Err(std::io::Error::other(format!(
                "the layer is larger than {MAX_COMPONENT_BYTES} bytes"
            ))));
        }
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &written {
            this.left -= *n as u64;
        }
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
