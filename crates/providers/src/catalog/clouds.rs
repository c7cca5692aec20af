//! What the clouds and gateways need of the environment: the variables that move an API
//! elsewhere, Azure's endpoint, Bedrock's region, Vertex AI's project, the switches Claude
//! Code reads, whether a cloud looks set up, extra headers.

use super::CatalogError;
use super::entries::{ApiName, ProviderEntry};
use super::keys::has_key;
use crate::{bedrock, vertex};

/// The variable that moves a provider's API elsewhere in its own ecosystem (a proxy, a
/// gateway), honoured as its SDKs and Claude Code / Codex do; `--base-url` wins over it.
pub(super) fn base_url_variable(id: &str) -> Option<&'static str> {
    match id {
        "anthropic" => Some("ANTHROPIC_BASE_URL"),
        "openai" => Some("OPENAI_BASE_URL"),
        "bedrock" => Some("ANTHROPIC_BEDROCK_BASE_URL"),
        "vertex" => Some("ANTHROPIC_VERTEX_BASE_URL"),
        _ => None,
    }
}

/// Azure OpenAI's v1 API under the resource endpoint its SDKs read from
/// `AZURE_OPENAI_ENDPOINT` (`https://RESOURCE.openai.azure.com`).
pub(super) fn azure_endpoint(
    id: &str,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Option<String> {
    (id == "azure")
        .then(|| env("AZURE_OPENAI_ENDPOINT"))
        .flatten()
        .filter(|e| !e.trim().is_empty())
        .map(|e| format!("{}/openai/v1", e.trim().trim_end_matches('/')))
}

/// The first of `variables` that is set and not blank.
pub(super) fn first_set(
    variables: &[&str],
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Option<String> {
    variables
        .iter()
        .filter_map(|v| env(v))
        .map(|v| v.trim().to_owned())
        .find(|v| !v.is_empty())
}

/// Bedrock's region: the entry's, else the variables the AWS CLI reads, else the profile's
/// (`region` in the shared config file).
pub(super) async fn aws_region(
    id: &str,
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<String, CatalogError> {
    if let Some(region) = entry.region.clone() {
        return Ok(region);
    }
    if let Some(region) = first_set(&["AWS_REGION", "AWS_DEFAULT_REGION"], env) {
        return Ok(region);
    }
    let profile = entry.profile.clone().or_else(|| env("AWS_PROFILE"));
    bedrock::auth::profile_region(profile.as_deref())
        .await
        .ok_or_else(|| CatalogError::Invalid {
            provider: id.to_owned(),
            reason: "no AWS region: set AWS_REGION, `region` in the AWS profile, or `region` under the provider in the config file".to_owned(),
        })
}

/// Vertex AI's models collection for the entry's project and region (or the variables
/// Claude Code and gcloud read).
pub(super) fn vertex_base_url(
    id: &str,
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<String, CatalogError> {
    let project = entry
        .project
        .clone()
        .or_else(|| {
            first_set(
                &[
                    "ANTHROPIC_VERTEX_PROJECT_ID",
                    "GOOGLE_CLOUD_PROJECT",
                    "CLOUDSDK_CORE_PROJECT",
                ],
                env,
            )
        })
        .ok_or_else(|| CatalogError::Invalid {
            provider: id.to_owned(),
            reason: "no Google Cloud project: set ANTHROPIC_VERTEX_PROJECT_ID, or `project` under the provider in the config file".to_owned(),
        })?;
    let region = entry
        .region
        .clone()
        .or_else(|| first_set(&["CLOUD_ML_REGION"], env))
        .unwrap_or_else(|| "global".to_owned());
    Ok(vertex::base_url(&project, &region))
}

/// Whether one of Claude Code's switches (`CLAUDE_CODE_USE_BEDROCK`, ...) is on in `env`:
/// `1`, `true`, `yes` or `on`, in any case, as Claude Code reads them.
pub(super) fn switched_on(env: &(dyn Fn(&str) -> Option<String> + Sync), variable: &str) -> bool {
    env(variable).is_some_and(|v| {
        ["1", "true", "yes", "on"]
            .iter()
            .any(|on| v.trim().eq_ignore_ascii_case(on))
    })
}

/// Whether a Bedrock or Vertex provider looks set up: a key or token command, its region,
/// project or profile in the config, or the variables Claude Code and the clouds' tools set
/// for it. Its credentials are only read by the first request, so a guest is not offered a
/// cloud the user never set up.
pub(super) fn cloud_set_up(
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> bool {
    let signs: &[&str] = match entry.api {
        Some(ApiName::Bedrock) => &[
            "CLAUDE_CODE_USE_BEDROCK",
            "AWS_PROFILE",
            "AWS_ACCESS_KEY_ID",
            "AWS_REGION",
        ],
        _ => &[
            "CLAUDE_CODE_USE_VERTEX",
            "ANTHROPIC_VERTEX_PROJECT_ID",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ],
    };
    has_key(entry, env)
        || entry.region.is_some()
        || entry.project.is_some()
        || entry.profile.is_some()
        || first_set(signs, env).is_some()
}

/// The config's `http_headers`, then the lines of `headers_env` (`Name: Value` each, blank
/// lines skipped).
pub(super) fn extra_headers(
    id: &str,
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Vec<(String, String)>, CatalogError> {
    let mut headers: Vec<(String, String)> = entry
        .http_headers
        .iter()
        .flatten()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let Some(variable) = entry.headers_env.as_deref() else {
        return Ok(headers);
    };
    for (n, line) in env(variable).unwrap_or_default().lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(CatalogError::HeaderLine {
                provider: id.to_owned(),
                variable: variable.to_owned(),
                line: n + 1,
            });
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(headers)
}
