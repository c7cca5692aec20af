//! Who sends a Bedrock request: AWS credentials from the standard chain, read by
//! `aws-config` as the AWS CLI and SDKs read them (the environment, the shared config and
//! credentials files and their profiles, SSO, a `credential_process`, web identity, the ECS
//! and EC2 roles), with every request signed by SigV4 (`aws-sigv4`).
//!
//! Credentials are read once and kept until five minutes before they expire.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime};

use aws_config::BehaviorVersion;
use aws_config::meta::region::ProvideRegion;
use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use tokio::sync::{Mutex, OnceCell};

use crate::http::Signer;
use crate::http::chain;
use crate::http::failure::Failure;

/// The service name Bedrock's runtime signs under.
pub const SERVICE: &str = "bedrock";

/// Longest wait for the credential chain (an SSO refresh, a `credential_process`, the
/// metadata endpoints).
const CREDENTIALS_TIMEOUT: Duration = Duration::from_secs(30);

/// Credentials closer to their expiry than this are read again.
const REFRESH_BEFORE: Duration = Duration::from_secs(300);

/// Signs requests to one region with the credentials of one profile (or the default chain).
#[derive(Debug)]
pub struct AwsAuth {
    region: String,
    profile: Option<String>,
    provider: OnceCell<Option<SharedCredentialsProvider>>,
    current: Mutex<Option<Credentials>>,
}

#[async_trait::async_trait]
impl Signer for AwsAuth {
    async fn sign(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
        body: &[u8],
    ) -> Result<reqwest::RequestBuilder, Failure> {
        let signed = self
            .signature(url, &[("content-type", "application/json")], body)
            .await?;
        Ok(signed.into_iter().fold(request, |request, (name, value)| {
            request.header(name, value)
        }))
    }

    /// The credentials, as an error that refuses them names them.
    fn described(&self) -> String {
        format!(
            "the AWS credentials of profile `{}` and region {}",
            self.profile_name(),
            self.region
        )
    }
}

impl AwsAuth {
    /// Credentials from `profile` (else `AWS_PROFILE`, else the default chain), for
    /// requests to `region`. Nothing is read until the first request.
    fn new(region: String, profile: Option<String>) -> Self {
        Self {
            region,
            profile,
            provider: OnceCell::new(),
            current: Mutex::new(None),
        }
    }

    /// The process's one signer for `region` and `profile`: every model, context and batch
    /// task shares its credentials (a `credential_process` or an SSO refresh runs once).
    pub fn shared(region: &str, profile: Option<&str>) -> Arc<Self> {
        type Key = (String, Option<String>);
        static SHARED: LazyLock<parking_lot::Mutex<HashMap<Key, Arc<AwsAuth>>>> =
            LazyLock::new(Default::default);
        let key = (region.to_owned(), profile.map(str::to_owned));
        SHARED
            .lock()
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Self::new(key.0, key.1)))
            .clone()
    }

    fn profile_name(&self) -> String {
        self.profile
            .clone()
            .or_else(|| std::env::var("AWS_PROFILE").ok())
            .unwrap_or_else(|| "default".to_owned())
    }

    /// The headers that sign a POST of `body` to `url` carrying `headers`.
    pub async fn signature(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, Failure> {
        let credentials = self.credentials().await?;
        signature_headers(
            "POST",
            url,
            headers,
            body,
            &credentials,
            &self.region,
            SERVICE,
            SystemTime::now(),
        )
        .map_err(|e| Failure::fatal(format!("bedrock: cannot sign the request: {e}")))
    }

    async fn credentials(&self) -> Result<Credentials, Failure> {
        let mut current = self.current.lock().await;
        if let Some(credentials) = current.as_ref()
            && credentials
                .expiry()
                .is_none_or(|at| at > SystemTime::now() + REFRESH_BEFORE)
        {
            return Ok(credentials.clone());
        }
        let provider = self
            .provider
            .get_or_init(|| async {
                let mut loader = aws_config::defaults(BehaviorVersion::latest())
                    .http_client(
                        aws_smithy_http_client::Builder::new()
                            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                            ))
                            .build_https(),
                    )
                    .region(aws_config::Region::new(self.region.clone()));
                if let Some(profile) = &self.profile {
                    loader = loader.profile_name(profile);
                }
                loader.load().await.credentials_provider()
            })
            .await;
        let Some(provider) = provider else {
            return Err(self.not_found("no credential provider is configured"));
        };
        let read = tokio::time::timeout(CREDENTIALS_TIMEOUT, provider.provide_credentials()).await;
        let credentials = match read {
            Err(_) => {
                return Err(self.not_found(&format!(
                    "the credential chain did not answer within {} s",
                    CREDENTIALS_TIMEOUT.as_secs()
                )));
            }
            Ok(Err(e)) => {
                // The chain's error lists every provider it tried on lines of their own;
                // the line this gives says the same places in one.
                let said = chain(&e);
                let first = said.lines().next().unwrap_or_default();
                return Err(self.not_found(first.trim().trim_end_matches(" Attempted:")));
            }
            Ok(Ok(credentials)) => credentials,
        };
        *current = Some(credentials.clone());
        Ok(credentials)
    }

    /// One line: why no credentials, and where they were looked for.
    fn not_found(&self, why: &str) -> Failure {
        let profile = self.profile_name();
        Failure::fatal(format!(
            "bedrock: no AWS credentials ({why}); looked in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
             profile `{profile}` of {} and {}, SSO, web identity and the ECS and EC2 roles; \
             or set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key",
            shared_file("AWS_CONFIG_FILE", "config"),
            shared_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
        ))
    }
}

/// The `region` of `profile` (else `AWS_PROFILE`'s, else `default`) in the shared config
/// file, as the AWS CLI reads it.
pub async fn profile_region(profile: Option<&str>) -> Option<String> {
    let mut provider = aws_config::profile::ProfileFileRegionProvider::builder();
    if let Some(profile) = profile {
        provider = provider.profile_name(profile);
    }
    provider
        .build()
        .region()
        .await
        .map(|region| region.to_string())
}

/// Where the shared `file` is read from: its variable, else `~/.aws/FILE`.
fn shared_file(variable: &str, file: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| format!("~/.aws/{file}"))
}

/// The SigV4 headers (`authorization`, `x-amz-date`, and `x-amz-security-token` for
/// temporary credentials) for one request, signed at `time`.
#[allow(clippy::too_many_arguments)]
pub fn signature_headers(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    credentials: &Credentials,
    region: &str,
    service: &str,
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let request = SignableRequest::new(
        method,
        url,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| e.to_string())?;
    let (instructions, _) = sign(request, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of AWS's documentation ("Create a signed AWS API request", and the
    /// Signature Version 4 test suite): IAM's `ListUsers`, signed on 2015-08-30 12:36:00 UTC.
    #[test]
    fn the_documented_example_signs_to_its_published_signature() {
        let credentials = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "example",
        );
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160);
        let headers = signature_headers(
            "GET",
            "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08",
            &[(
                "content-type",
                "application/x-www-form-urlencoded; charset=utf-8",
            )],
            b"",
            &credentials,
            "us-east-1",
            "iam",
            time,
        )
        .unwrap();
        let authorization = headers
            .iter()
            .find(|(name, _)| name == "authorization")
            .map(|(_, value)| value.as_str());
        assert_eq!(
            authorization,
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, \
                 Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
            )
        );
    }

    #[test]
    fn temporary_credentials_send_their_session_token() {
        let credentials = Credentials::new("AKID", "secret", Some("token".into()), None, "t");
        let headers = signature_headers(
            "POST",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/a%3A0/invoke-with-response-stream",
            &[("content-type", "application/json")],
            b"{}",
            &credentials,
            "us-east-1",
            SERVICE,
            SystemTime::now(),
        )
        .unwrap();
        assert!(
            headers
                .iter()
                .any(|(n, v)| n == "x-amz-security-token" && v == "token"),
            "{headers:?}"
        );
        let authorization = &headers
            .iter()
            .find(|(n, _)| n == "authorization")
            .unwrap()
            .1;
        assert!(
            authorization.contains("/us-east-1/bedrock/aws4_request"),
            "{authorization}"
        );
    }
}
