//! What the clouds and gateways need of the environment, read through the variables each
//! entry names (`base_url_env`, `region_env`, `project_env`, `switch_env`, `set_up_env`, ...):
//! where an API moved, Bedrock's region, Vertex AI's project, Claude Code's switches, whether
//! a cloud looks set up, extra headers.

use super::CatalogError;
use super::entries::ProviderEntry;
use super::keys::has_key;
use crate::{bedrock, vertex};

/// The base URL the entry's `base_url_env` moves its API to (a proxy, a gateway, Azure's
/// resource endpoint with the entry's `base_url_env_path` after it), when it is set.
pub(super) fn moved_base_url(
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Option<String> {
    let url = env(entry.base_url_env.as_deref()?)?;
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    let path = entry.base_url_env_path.as_deref().unwrap_or_default();
    Some(format!("{}{path}", url.trim_end_matches('/')))
}

/// The first of `variables` that is set and not blank.
pub(super) fn first_set<V: AsRef<str>>(
    variables: &[V],
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Option<String> {
    variables
        .iter()
        .filter_map(|v| env(v.as_ref()))
        .map(|v| v.trim().to_owned())
        .find(|v| !v.is_empty())
}

/// Bedrock's region: the entry's, else its `region_env` (the variables the AWS CLI reads),
/// else the profile's (`region` in the shared config file).
pub(super) async fn aws_region(
    id: &str,
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<String, CatalogError> {
    if let Some(region) = entry.region.clone() {
        return Ok(region);
    }
    if let Some(region) = first_set(listed(&entry.region_env), env) {
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

/// Vertex AI's models collection for the entry's project and region (or its `project_env`
/// and `region_env`: the variables Claude Code and gcloud read).
pub(super) fn vertex_base_url(
    id: &str,
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<String, CatalogError> {
    let project = entry
        .project
        .clone()
        .or_else(|| first_set(listed(&entry.project_env), env))
        .ok_or_else(|| CatalogError::Invalid {
            provider: id.to_owned(),
            reason: "no Google Cloud project: set ANTHROPIC_VERTEX_PROJECT_ID, or `project` under the provider in the config file".to_owned(),
        })?;
    let region = entry
        .region
        .clone()
        .or_else(|| first_set(listed(&entry.region_env), env))
        .unwrap_or_else(|| "global".to_owned());
    Ok(vertex::base_url(&project, &region))
}

/// Whether a Bedrock or Vertex provider looks set up: a key or token command, its region,
/// project or profile in the config, or one of its `set_up_env` (the variables Claude Code
/// and the clouds' tools set for it). Its credentials are only read by the first request,
/// so a guest is not offered a cloud the user never set up.
pub(super) fn cloud_set_up(
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> bool {
    has_key(entry, env)
        || entry.region.is_some()
        || entry.project.is_some()
        || entry.profile.is_some()
        || first_set(listed(&entry.set_up_env), env).is_some()
}

/// Whether the switch `variable` an entry names (`switch_env`, `unsigned_env`: Claude Code's
/// `CLAUDE_CODE_USE_BEDROCK`, ...) is on in `env`: `1`, `true`, `yes` or `on`, in any case,
/// as Claude Code reads them. An entry that names none is off.
pub(super) fn switch_set(
    variable: Option<&str>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> bool {
    variable.and_then(env).is_some_and(|v| {
        ["1", "true", "yes", "on"]
            .iter()
            .any(|on| v.trim().eq_ignore_ascii_case(on))
    })
}

/// An entry's list of variables, empty when it names none.
fn listed(variables: &Option<Vec<String>>) -> &[String] {
    variables.as_deref().unwrap_or_default()
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
