//! `mcp_servers:` in the config file: one entry per server, with the field names Codex's
//! `[mcp_servers]` table and Claude Code's `.mcp.json` use (where they differ, both are
//! accepted), and `${VAR}` / `${VAR:-default}` in values as Claude Code expands them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use wonopcode_sandbox::SandboxPolicy;

/// How long a server has to start and list its tools, unless it says otherwise.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take, unless the server's entry says otherwise.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One entry of `mcp_servers`, as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    /// Claude Code's transport name: `stdio` (the default with a command) or `http`.
    #[serde(default, rename = "type")]
    pub transport: Option<String>,
    /// The program that runs the server (stdio).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables of wonopcode's own environment passed through (Codex's `env_vars`).
    #[serde(default)]
    pub env_vars: Vec<String>,
    /// Where it runs (default: the workspace).
    pub cwd: Option<PathBuf>,
    /// A streamable HTTP server's address.
    pub url: Option<String>,
    /// Headers sent to it (Codex calls them `http_headers`).
    #[serde(default, alias = "http_headers")]
    pub headers: BTreeMap<String, String>,
    /// A variable holding a bearer token for it (`bearer_token_env` also accepted).
    #[serde(alias = "bearer_token_env")]
    pub bearer_token_env_var: Option<String>,
    /// `false` leaves the server out.
    pub enabled: Option<bool>,
    /// Seconds to start and list tools (default 10).
    pub startup_timeout_sec: Option<f64>,
    /// Milliseconds to start (Codex's older spelling).
    pub startup_timeout_ms: Option<u64>,
    /// Seconds one call may take (default 60).
    pub tool_timeout_sec: Option<f64>,
    /// Only these of its tools.
    pub enabled_tools: Option<Vec<String>>,
    /// None of these of its tools.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// How to sign in to an HTTP server with OAuth, when it needs more than discovery and
    /// dynamic registration (Claude Code's `oauth` object).
    pub oauth: Option<OAuthEntry>,
    /// The sandbox of a stdio server's process: a mode, or a mapping with the mode and grants
    /// (default: the run's, with any host and the package caches writable; `docs/grants.md`).
    #[serde(default, deserialize_with = "SandboxPolicy::optional_mode_or_policy")]
    pub sandbox: Option<SandboxPolicy>,
}

/// `oauth:` of an HTTP server's entry: Claude Code's `clientId`, `callbackPort` and `scopes`,
/// and the variable holding a pre-registered client's secret.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthEntry {
    /// A client id the authorization server issued to you (no registration then).
    #[serde(alias = "clientId")]
    pub client_id: Option<String>,
    /// The variable holding that client's secret, for confidential clients.
    #[serde(alias = "clientSecretEnvVar")]
    pub client_secret_env_var: Option<String>,
    /// The browser comes back to `http://localhost:PORT/callback` (default: a free port),
    /// for a client registered with that redirect address.
    #[serde(alias = "callbackPort")]
    pub callback_port: Option<u16>,
    /// The scopes to ask for, separated by spaces (default: what the server says).
    pub scopes: Option<String>,
    /// The https address of a Client ID Metadata Document describing wonopcode for your
    /// organization: used as the client id where the authorization server accepts such
    /// documents, instead of registering.
    pub client_metadata_url: Option<String>,
}

/// A server ready to start: its entry checked and its values expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The name tools are prefixed with (`mcp__NAME__TOOL`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Limit on starting and listing tools.
    pub startup_timeout: Duration,
    /// Limit on each call.
    pub tool_timeout: Duration,
    /// Tools kept (`None`: all).
    pub enabled_tools: Option<Vec<String>>,
    /// Tools left out.
    pub disabled_tools: Vec<String>,
    /// How it is signed in to with OAuth (`wonopcode mcp login`), for an HTTP server without a
    /// bearer token; `None`: it is never signed in to.
    pub sign_in: Option<SignIn>,
    /// The sandbox a stdio server's process runs in; `None`: unconfined.
    pub sandbox: Option<SandboxPolicy>,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A program started by wonopcode, speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of the environment it starts with.
        env: BTreeMap<String, String>,
        /// Where it runs; `None`: the workspace.
        cwd: Option<PathBuf>,
    },
    /// A server at a streamable HTTP address.
    Http {
        /// Its address.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// A bearer token sent as `Authorization`.
        bearer_token: Option<String>,
    },
}

/// How an HTTP server is signed in to: its `oauth` settings, and (filled in by the caller,
/// which knows where the user's data goes) the file its tokens are kept in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignIn {
    /// A pre-registered client's id.
    pub client_id: Option<String>,
    /// That client's secret.
    pub client_secret: Option<String>,
    /// A fixed port for the browser's return.
    pub callback_port: Option<u16>,
    /// The scopes to ask for (empty: the server's choice).
    pub scopes: Vec<String>,
    /// A Client ID Metadata Document's address, used as the client id where accepted.
    pub client_metadata_url: Option<String>,
    /// Where the tokens are kept; `None` until the caller sets it.
    pub credentials: Option<crate::oauth::CredentialFile>,
}

/// An `mcp_servers` entry that cannot be used, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mcp_servers.{name}: {reason}")]
pub struct ConfigError {
    /// The entry.
    pub name: String,
    /// What is wrong.
    pub reason: String,
}

impl ServerEntry {
    /// The sign-in settings of an HTTP server without a bearer token.
    fn sign_in(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<SignIn>, String> {
        if self.url.is_none() || self.bearer_token_env_var.is_some() {
            return match self.oauth {
                Some(_) if self.url.is_none() => {
                    Err("`oauth` is for HTTP servers (with a `url`)".to_owned())
                }
                Some(_) => {
                    Err("give either `oauth` or `bearer_token_env_var`, not both".to_owned())
                }
                None => Ok(None),
            };
        }
        let oauth = self.oauth.clone().unwrap_or_default();
        let client_secret = match &oauth.client_secret_env_var {
            Some(variable) => Some(lookup(variable).ok_or_else(|| {
                format!("`oauth.client_secret_env_var` names `{variable}`, which is not set")
            })?),
            None => None,
        };
        if let Some(document) = &oauth.client_metadata_url
            && !document.starts_with("https://")
        {
            return Err(format!(
                "`oauth.client_metadata_url` must be an https:// address, not `{document}`"
            ));
        }
        if client_secret.is_some() && oauth.client_id.is_none() {
            return Err("`oauth.client_secret_env_var` needs `oauth.client_id`".to_owned());
        }
        Ok(Some(SignIn {
            client_id: oauth.client_id,
            client_secret,
            callback_port: oauth.callback_port,
            client_metadata_url: oauth.client_metadata_url,
            scopes: oauth
                .scopes
                .as_deref()
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            credentials: None,
        }))
    }

    /// Checks the entry and expands its `${VAR}` references with `lookup`. `Ok(None)` for a
    /// disabled entry.
    pub fn resolve(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<ServerConfig>, ConfigError> {
        let fail = |reason: String| ConfigError {
            name: name.to_owned(),
            reason,
        };
        check_name(name).map_err(fail)?;
        if self.enabled == Some(false) {
            return Ok(None);
        }
        match self.transport.as_deref() {
            None | Some("stdio") => {}
            Some("http" | "streamable_http" | "streamable-http") => {}
            Some(other) => {
                return Err(fail(format!(
                    "unknown transport `{other}` (stdio or http; `sse` servers are deprecated by MCP)"
                )));
            }
        }
        let expand = |value: &str| expand(value, lookup).map_err(fail);
        let transport = match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                return Err(fail(
                    "give either `command` (stdio) or `url` (http), not both".into(),
                ));
            }
            (None, None) => {
                return Err(fail(
                    "no `command` to start the server (or `url` to reach it)".into(),
                ));
            }
            (None, Some(url)) => self.http(url, &expand, lookup).map_err(fail)?,
            (Some(command), None) if command.trim().is_empty() => {
                return Err(fail("`command` is empty".into()));
            }
            (Some(command), None) => {
                if self.transport.as_deref().is_some_and(|t| t != "stdio") {
                    return Err(fail("`type: http` needs a `url`, not a `command`".into()));
                }
                let mut env = BTreeMap::new();
                for passed in &self.env_vars {
                    if let Some(value) = lookup(passed) {
                        env.insert(passed.clone(), value);
                    }
                }
                for (key, value) in &self.env {
                    env.insert(key.clone(), expand(value)?);
                }
                Transport::Stdio {
                    command: expand(command)?,
                    args: self
                        .args
                        .iter()
                        .map(|a| expand(a))
                        .collect::<Result<_, _>>()?,
                    env,
                    cwd: self.cwd.clone(),
                }
            }
        };
        let seconds = |value: Option<f64>, what: &str, default: Duration| match value {
            None => Ok(default),
            Some(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
            Some(s) => Err(fail(format!(
                "`{what}` must be a positive number of seconds, not {s}"
            ))),
        };
        let startup_default = self
            .startup_timeout_ms
            .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_millis);
        Ok(Some(ServerConfig {
            name: name.to_owned(),
            transport,
            startup_timeout: seconds(
                self.startup_timeout_sec,
                "startup_timeout_sec",
                startup_default,
            )?,
            tool_timeout: seconds(
                self.tool_timeout_sec,
                "tool_timeout_sec",
                DEFAULT_TOOL_TIMEOUT,
            )?,
            enabled_tools: self.enabled_tools.clone(),
            disabled_tools: self.disabled_tools.clone(),
            sign_in: self.sign_in(lookup).map_err(fail)?,
            sandbox: self.sandbox.clone(),
        }))
    }

    /// The streamable HTTP transport of an entry with a `url`.
    fn http(
        &self,
        url: &str,
        expand: &dyn Fn(&str) -> Result<String, ConfigError>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Transport, String> {
        if !self.args.is_empty()
            || !self.env.is_empty()
            || !self.env_vars.is_empty()
            || self.cwd.is_some()
        {
            return Err(
                "`args`, `env`, `env_vars` and `cwd` are for a `command`, not a `url`".into(),
            );
        }
        if self.transport.as_deref() == Some("stdio") {
            return Err("`type: stdio` needs a `command`, not a `url`".into());
        }
        let expanded = |value: &str| expand(value).map_err(|e| e.reason);
        let url = expanded(url)?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "`url` must be an http:// or https:// address, not `{url}`"
            ));
        }
        let mut headers = BTreeMap::new();
        for (key, value) in &self.headers {
            headers.insert(key.clone(), expanded(value)?);
        }
        let bearer_token = match &self.bearer_token_env_var {
            None => None,
            Some(variable) => Some(lookup(variable).ok_or_else(|| {
                format!("the variable `{variable}` (bearer_token_env_var) is not set")
            })?),
        };
        Ok(Transport::Http {
            url,
            headers,
            bearer_token,
        })
    }
}

/// A server name becomes part of every tool name: letters, digits, `_` and `-` only, and
/// no `__` (it separates the server from the tool).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err("a server name may hold only letters, digits, `_` and `-`".to_owned());
    }
    if name.contains("__") {
        return Err("a server name may not contain `__` (it separates server and tool)".to_owned());
    }
    Ok(())
}

/// `value` with `${VAR}` and `${VAR:-default}` replaced, as Claude Code does; a variable that
/// is unset and has no default is an error naming it.
pub fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`{value}` has a `${{` without its `}}`"));
        };
        let inner = &after[..end];
        let (variable, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (lookup(variable), default) {
            (Some(found), _) => out.push_str(&found),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("the variable `{variable}` is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        (name == "HOME").then(|| "/home/ada".to_owned())
    }

    fn entry(yaml: &str) -> ServerEntry {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn codex_and_claude_code_entries_both_read() {
        let codex = entry(
            "command: npx\nargs: ['-y', 'server']\nenv: {ROOT: '${HOME}/x'}\nstartup_timeout_ms: 2000\ntool_timeout_sec: 5\n",
        );
        let config = codex.resolve("files", &lookup).unwrap().unwrap();
        let Transport::Stdio { command, env, .. } = &config.transport else {
            panic!("{config:?}");
        };
        assert_eq!(command, "npx");
        assert_eq!(env["ROOT"], "/home/ada/x");
        assert_eq!(config.startup_timeout, Duration::from_millis(2000));
        assert_eq!(config.tool_timeout, Duration::from_secs(5));
        let claude = entry("type: stdio\ncommand: '${BIN:-node}'\nargs: [server.js]\n");
        let config = claude.resolve("x", &lookup).unwrap().unwrap();
        assert!(matches!(&config.transport, Transport::Stdio { command, .. } if command == "node"));
        let remote = entry(
            "type: http\nurl: 'https://mcp.example/${HOME}'\nheaders: {X-Team: '${HOME}'}\nbearer_token_env_var: HOME\n",
        );
        let config = remote.resolve("r", &lookup).unwrap().unwrap();
        assert_eq!(
            config.transport,
            Transport::Http {
                url: "https://mcp.example//home/ada".into(),
                headers: [("X-Team".to_owned(), "/home/ada".to_owned())].into(),
                bearer_token: Some("/home/ada".into()),
            }
        );
        assert!(
            entry("command: x\nenabled: false\n")
                .resolve("x", &lookup)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn bad_entries_get_one_line_naming_them() {
        let refused =
            |yaml: &str, name: &str| entry(yaml).resolve(name, &lookup).unwrap_err().to_string();
        assert_eq!(
            refused("args: [x]\n", "empty"),
            "mcp_servers.empty: no `command` to start the server (or `url` to reach it)"
        );
        assert_eq!(
            refused("type: carrier-pigeon\ncommand: x\n", "bird"),
            "mcp_servers.bird: unknown transport `carrier-pigeon` (stdio or http; `sse` servers are deprecated by MCP)"
        );
        assert!(refused("command: x\n", "a__b").contains("may not contain `__`"));
        assert!(refused("command: x\n", "a b").contains("only letters"));
        assert_eq!(
            refused("command: '${NOPE}'\n", "v"),
            "mcp_servers.v: the variable `NOPE` is not set"
        );
        assert!(refused("command: x\ntool_timeout_sec: -1\n", "t").contains("positive number"));
        assert!(refused("url: ftp://x\n", "f").contains("http:// or https://"));
        assert!(refused("url: http://x\nargs: [a]\n", "a").contains("are for a `command`"));
        assert!(refused("url: http://x\nbearer_token_env_var: NOPE\n", "b").contains("`NOPE`"));
        assert!(serde_yaml::from_str::<ServerEntry>("commmand: x\n").is_err());
        assert!(
            refused(
                "url: https://x\noauth: {client_metadata_url: 'http://x/c.json'}\n",
                "o"
            )
            .contains("must be an https:// address")
        );
        assert!(refused("command: x\noauth: {clientId: c}\n", "s").contains("for HTTP servers"));
        assert!(
            refused("url: https://x\noauth: {client_secret_env_var: S}\n", "p")
                .contains("`S`, which is not set")
        );
    }
}
