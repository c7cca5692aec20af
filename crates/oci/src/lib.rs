//! Agent loops published to an OCI registry (`--agent-loop oci://HOST/REPO:TAG`, a
//! registry entry's `path`): the component is fetched as the Wasm OCI artifact layout that
//! `wkg oci push` and Wassette use (an image manifest whose config is
//! `application/vnd.wasm.config.v0+json` and whose one layer is `application/wasm`),
//! verified against the digests the registry names, and kept in a cache named by the
//! manifest's digest, so a reference pinned by digest (`oci://HOST/REPO@sha256:…`, what a
//! run's journal keeps) loads offline and always the same bytes.
//!
//! Fetching is the registry client's (`oci-client`, the ORAS project's): the distribution
//! API, the registries' token handshake, and digest checks of the manifest and the blob.
//! This crate adds the layout's checks, limits (size, time) and the cache.

mod cache;
mod distribution;
mod error;
mod fetch;
mod reference;

pub use cache::ModuleCache;
pub use error::OciError;
pub use fetch::{Fetched, fetch};
pub use reference::OciRef;

/// The media type of the Wasm OCI artifact layout's config.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of its one layer: the component's bytes.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The largest component fetched (an interpreter guest is under 20 MiB).
pub const MAX_COMPONENT_BYTES: u64 = 128 << 20;
