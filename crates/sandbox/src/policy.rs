//! What a sandboxed process may reach: the mode, and the grants that widen it (paths to
//! write, hidden paths to read after all, network ports), and how many processes it may run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SandboxMode;

/// Secrets under the home directory that sandboxed commands cannot read unless a `read`
/// grant names them: keys, cloud and registry credentials, wonopcode's own tokens.
pub const HIDDEN_IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/wonopcode",
];

/// The most processes one sandboxed command may have at once, unless the policy says.
pub const DEFAULT_MAX_PROCESSES: u32 = 512;

/// A process's confinement, before it is resolved against a workspace (`sandbox:` in the
/// config file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// More paths commands may write (in `workspace-write`; `read-only` writes nowhere). A
    /// grant naming the workspace's `.git` makes it writable.
    pub write: Vec<PathBuf>,
    /// Hidden paths ([`HIDDEN_IN_HOME`]) commands may read after all.
    pub read: Vec<PathBuf>,
    /// Where commands may connect; empty: no network.
    pub network: Vec<NetworkGrant>,
    /// The most processes one command may have at once.
    pub max_processes: u32,
    /// `workspace-write` without `/tmp`, `/var/tmp` and `/dev/shm` (Codex's key).
    pub exclude_slash_tmp: bool,
    /// `workspace-write` without `$TMPDIR` (Codex's key).
    pub exclude_tmpdir_env_var: bool,
}

impl SandboxPolicy {
    /// A policy of `mode` with no grants.
    pub fn new(mode: SandboxMode) -> Self {
        Self {
            mode,
            write: Vec::new(),
            read: Vec::new(),
            network: Vec::new(),
            max_processes: DEFAULT_MAX_PROCESSES,
            exclude_slash_tmp: false,
            exclude_tmpdir_env_var: false,
        }
    }

    /// Whether any host may be reached.
    pub fn network_unrestricted(&self) -> bool {
        self.network.contains(&NetworkGrant::Any)
    }

    /// The paths hidden from commands: [`HIDDEN_IN_HOME`] under `home`, less those a `read`
    /// grant names (or lies inside). Only paths that exist, canonical.
    pub fn hidden(&self, home: Option<&Path>) -> Vec<PathBuf> {
        let Some(home) = home else {
            return Vec::new();
        };
        let read: Vec<PathBuf> = self
            .read
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        HIDDEN_IN_HOME
            .iter()
            .filter_map(|relative| home.join(relative).canonicalize().ok())
            .filter(|hidden| !read.iter().any(|granted| hidden.starts_with(granted)))
            .collect()
    }
}

impl SandboxPolicy {
    /// The policy of an MCP stdio server whose entry names none, in a run under this one: the
    /// same mode and grants, any host (servers exist to reach services), and the package
    /// managers' caches under `home` writable (`npx`, `uvx` and `pip` fill them on start).
    pub fn for_servers(&self, home: Option<&Path>) -> SandboxPolicy {
        let mut policy = self.clone();
        policy.network = vec![NetworkGrant::Any];
        if let Some(home) = home {
            policy
                .write
                .extend(SERVER_CACHES.iter().map(|cache| home.join(cache)));
        }
        policy
    }

    /// Reads a policy written either whole (a mapping) or as just its mode
    /// (`sandbox: read-only`), for `#[serde(deserialize_with)]`.
    pub fn mode_or_policy<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SandboxPolicy, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = SandboxPolicy;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sandbox mode or a mapping with `mode` and grants")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SandboxPolicy, E> {
                text.parse().map(SandboxPolicy::new).map_err(E::custom)
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<SandboxPolicy, M::Error> {
                SandboxPolicy::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_any(Visitor)
    }

    /// [`SandboxPolicy::mode_or_policy`] for an optional field.
    pub fn optional_mode_or_policy<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SandboxPolicy>, D::Error> {
        Self::mode_or_policy(deserializer).map(Some)
    }
}

/// The caches under the home directory MCP stdio servers may write by default.
pub const SERVER_CACHES: &[&str] = &[".npm", ".cache"];

impl Default for SandboxPolicy {
    fn default() -> Self {
        Self::new(SandboxMode::default())
    }
}

/// One `network` grant: `HOST:PORT`, or `*` for every host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NetworkGrant {
    /// Every host and port.
    Any,
    /// TCP connections to `port` (the kernel checks the port; see `docs/grants.md`).
    Port {
        /// The host the user named (an address or a name).
        host: String,
        /// The TCP port.
        port: u16,
    },
}

impl std::fmt::Display for NetworkGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Port { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            Self::Port { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

impl std::str::FromStr for NetworkGrant {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text == "*" {
            return Ok(Self::Any);
        }
        let bad = || format!("network grant `{text}` is not HOST:PORT (or `*` for any host)");
        let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if host.is_empty() || host.contains(['/', ' ']) {
            return Err(bad());
        }
        let port: u16 = port.parse().map_err(|_| bad())?;
        if port == 0 {
            return Err(bad());
        }
        Ok(Self::Port {
            host: host.to_owned(),
            port,
        })
    }
}

impl Serialize for NetworkGrant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NetworkGrant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_grants_parse_and_print_back() {
        for text in ["127.0.0.1:8080", "api.example.com:443", "[::1]:22", "*"] {
            let grant: NetworkGrant = text.parse().unwrap();
            assert_eq!(grant.to_string(), text);
        }
        for bad in ["localhost", ":80", "host:0", "host:99999", "a b:1", ""] {
            assert!(bad.parse::<NetworkGrant>().is_err(), "{bad}");
        }
    }

    #[test]
    fn hidden_paths_are_the_existing_secrets_less_the_read_grants() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::create_dir_all(home.path().join(".aws")).unwrap();
        let home = home.path().canonicalize().unwrap();
        let mut policy = SandboxPolicy::default();
        let hidden = policy.hidden(Some(&home));
        assert_eq!(hidden, vec![home.join(".ssh"), home.join(".aws")]);
        policy.read.push(home.join(".ssh"));
        assert_eq!(policy.hidden(Some(&home)), vec![home.join(".aws")]);
    }
}
