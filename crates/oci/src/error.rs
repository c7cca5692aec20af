//! What can go wrong fetching a module: each a line naming the reference.

/// Why a module could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference is not `oci://HOST/REPOSITORY[:TAG][@sha256:DIGEST]`.
    #[error(
        "`{reference}` is not an OCI module reference: {why} (give oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:DIGEST)"
    )]
    Reference {
        /// What was given.
        reference: String,
        /// What is wrong with it.
        why: String,
    },
    /// The registry could not be reached, refused, or answered something the distribution
    /// API does not (a digest that does not match included).
    #[error("{reference}: {why}")]
    Registry {
        /// The reference.
        reference: String,
        /// The registry client's words.
        why: String,
    },
    /// What the registry holds is not a component in the Wasm OCI artifact layout.
    #[error("{reference}: not a WebAssembly component artifact: {why}")]
    Layout {
        /// The reference.
        reference: String,
        /// What is off.
        why: String,
    },
    /// The cache could not be read or written.
    #[error("the module cache {path}: {why}")]
    Cache {
        /// The file or directory.
        path: String,
        /// The system's words.
        why: String,
    },
}
