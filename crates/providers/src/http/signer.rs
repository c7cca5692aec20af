//! `Signer`: what proves each request of a cloud's model when no fixed header does (SigV4
//! with AWS credentials, a Google access token). Credentials are read on the first request
//! and refreshed as they expire, so a signer is asked per attempt. Each cloud's module
//! implements it; the transport only calls it.

use std::sync::Arc;

use async_trait::async_trait;

use super::failure::Failure;
use super::{HttpSettings, Wire};

/// Signs one request. See the module documentation.
#[async_trait]
pub(crate) trait Signer: Send + Sync + std::fmt::Debug {
    /// Adds the signature or token to a POST of `body` to `url`.
    async fn sign(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
        body: &[u8],
    ) -> Result<reqwest::RequestBuilder, Failure>;

    /// The credentials, as an error that refuses them names them.
    fn described(&self) -> String;
}

/// The signer `settings` need: none when a key was given or a gateway signs, else the
/// wire's.
pub(super) fn signer_for(settings: &HttpSettings, wire: &dyn Wire) -> Option<Arc<dyn Signer>> {
    if settings.api_key.is_some() || settings.unsigned {
        return None;
    }
    wire.signer(settings)
}
