//! What a sandboxed process may reach: the mode, and the grants that widen it (paths to
//! write, hidden paths to read after all, network ports), and how many processes it may run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SandboxMode;

/// Secrets under the home directory that sandboxed commands and file tools cannot read
/// unless a `read` grant names them: keys, cloud and registry credentials, other agents'
/// sign-ins, shell histories, and wonopcode's own tokens, journals, trust file and compiled
/// components (a command that could write those could forge trust or plant code).
/// [`hidden_candidates`] adds the same places where the XDG variables move them.
pub const HIDDEN_IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/git/credentials",
    ".config/hub",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".password-store",
    ".pypirc",
    ".npmrc",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".bash_history",
    ".zsh_history",
    ".histfile",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".local/share/fish/fish_history",
    ".local/share/wonopcode",
    ".config/wonopcode/trusted-workspaces.json",
    ".cache/wonopcode",
    // macOS: the login and other keychains, browsers' cookies and profiles, Claude
    // Desktop's config (its MCP servers' keys), and where `dirs` puts wonopcode's own data,
    // config and cache there.
    "Library/Keychains",
    "Library/Cookies",
    "Library/Safari",
    "Library/Application Support/Google/Chrome",
    "Library/Application Support/Firefox/Profiles",
    "Library/Application Support/Claude",
    "Library/Application Support/wonopcode",
    "Library/Caches/wonopcode",
];

/// Secrets relative to `$XDG_CONFIG_HOME`, `$XDG_DATA_HOME` and `$XDG_CACHE_HOME` when
/// those are set (their defaults under the home are in [`HIDDEN_IN_HOME`]).
const HIDDEN_IN_XDG: &[(&str, &[&str])] = &[
    (
        "XDG_CONFIG_HOME",
        &[
            "gcloud",
            "gh",
            "git/credentials",
            "hub",
            "wonopcode/trusted-workspaces.json",
        ],
    ),
    ("XDG_DATA_HOME", &["wonopcode", "fish/fish_history"]),
    ("XDG_CACHE_HOME", &["wonopcode"]),
];

/// Variables that name a file or directory of secrets themselves, and what in it is one.
const HIDDEN_BY_VARIABLE: &[(&str, &str)] = &[
    // The run journals, wherever they were moved: a command that could write one could
    // plant flags for the next `resume`.
    ("WONOPCODE_RUNS_DIR", ""),
    ("HISTFILE", ""),
    ("CODEX_HOME", "auth.json"),
    ("CLAUDE_CONFIG_DIR", ".credentials.json"),
    ("GNUPGHOME", ""),
    ("AWS_SHARED_CREDENTIALS_FILE", ""),
    ("GOOGLE_APPLICATION_CREDENTIALS", ""),
    ("KUBECONFIG", ""),
    ("DOCKER_CONFIG", ""),
];

/// Every place [`SandboxPolicy::hidden`] considers, for the home directory `home` and the
/// variables `var` gives (absolute paths only; existence is checked later).
pub fn hidden_candidates(home: &Path, var: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = HIDDEN_IN_HOME.iter().map(|r| home.join(r)).collect();
    let absolute = |value: String| Some(PathBuf::from(value)).filter(|p| p.is_absolute());
    for (variable, entries) in HIDDEN_IN_XDG {
        if let Some(base) = var(variable).and_then(absolute) {
            paths.extend(entries.iter().map(|e| base.join(e)));
        }
    }
    for (variable, entry) in HIDDEN_BY_VARIABLE {
        // `KUBECONFIG` may list several files.
        for value in var(variable).unwrap_or_default().split(':') {
            if let Some(base) = absolute(value.to_owned()) {
                paths.push(if entry.is_empty() {
                    base
                } else {
                    base.join(entry)
                });
            }
        }
    }
    paths
}

/// The most processes one sandboxed command may have at once, unless the policy says.
pub const DEFAULT_MAX_PROCESSES: u32 = 512;

/// A process's confinement, before it is resolved against a workspace (`sandbox:` in the
/// config file).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxPolicy {
    /// The mode.
    pub mode: SandboxMode,
    /// More paths commands may write (in `workspace-write`; `read-only` writes nowhere). A
    /// grant naming the workspace's `.git` makes it writable.
    pub write: Vec<PathBuf>,
    /// Hidden paths ([`HIDDEN_IN_HOME`]) commands may read after all.
    pub read: Vec<PathBuf>,
    /// Paths inside the writable roots that commands may not change (kept as the
    /// protected names are, `protected.rs`): the script files a trusted workspace's hooks
    /// and MCP servers run, which a command rewriting would have run later unconfined.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<PathBuf>,
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
            read_only: Vec::new(),
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

    /// The paths hidden from commands and file tools: [`hidden_candidates`] of `home` and
    /// this process's environment, less those a `read` grant names (or lies inside). Only
    /// paths that exist, canonical, each once.
    pub fn hidden(&self, home: Option<&Path>) -> Vec<PathBuf> {
        let Some(home) = home else {
            return Vec::new();
        };
        let read: Vec<PathBuf> = self
            .read
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        let mut hidden: Vec<PathBuf> = hidden_candidates(home, &|name| std::env::var(name).ok())
            .into_iter()
            .filter_map(|path| path.canonicalize().ok())
            // A variable naming `/` or the home itself hides no more than its secrets.
            .filter(|hidden| !home.starts_with(hidden))
            .filter(|hidden| !read.iter().any(|granted| hidden.starts_with(granted)))
            .collect();
        hidden.sort();
        hidden.dedup();
        hidden
    }
}

/// Temp directories every `workspace-write` command may write.
pub(crate) const SHARED_TEMP: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// `path` as the kernel will see it: its links resolved as far as it exists (a path not
/// made yet keeps its last components as written).
pub(crate) fn real(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut missing = Vec::new();
    let mut existing = path.to_path_buf();
    loop {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
        if let Ok(mut real) = existing.canonicalize() {
            real.extend(missing.iter().rev());
            return real;
        }
    }
}

impl SandboxPolicy {
    /// Where commands may write in `workspace` (canonical, existing paths only), besides
    /// `read-only`'s private temp dir: for `workspace-write`, the workspace, the temp dirs
    /// the policy keeps, and the `write` grants.
    pub fn writable_roots(&self, workspace: &Path) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = Vec::new();
        if self.mode != SandboxMode::WorkspaceWrite {
            return roots;
        }
        roots.push(workspace.to_path_buf());
        if !self.exclude_slash_tmp {
            roots.extend(
                SHARED_TEMP
                    .iter()
                    .filter_map(|d| Path::new(d).canonicalize().ok()),
            );
        }
        if !self.exclude_tmpdir_env_var
            && let Some(temp) = std::env::var_os("TMPDIR")
        {
            roots.extend(PathBuf::from(temp).canonicalize().ok());
        }
        roots.extend(self.write.iter().filter_map(|p| p.canonicalize().ok()));
        roots.sort();
        roots.dedup();
        roots
    }

    /// Whether a `write` grant makes `workspace`'s `.git` writable (naming it, or a path
    /// inside the workspace that holds it; the workspace itself does not count).
    pub fn git_writable(&self, workspace: &Path) -> bool {
        self.granted_write(&workspace.join(".git"), workspace)
    }

    /// Whether a `write` grant names `path` (or a directory on its way other than the
    /// workspace itself): a protected path of the workspace made writable on purpose.
    pub fn granted_write(&self, path: &Path, workspace: &Path) -> bool {
        self.write_grants(workspace)
            .iter()
            .any(|p| path.starts_with(p))
    }

    /// The paths `write` grants name (canonical where they exist), other than `workspace`
    /// itself: where a protected path may be made and changed on purpose.
    pub(crate) fn write_grants(&self, workspace: &Path) -> Vec<PathBuf> {
        self.write
            .iter()
            .map(|p| real(p))
            .filter(|p| p != workspace)
            .collect()
    }

    /// What a context whose parent runs under `self` gets when it asks for `wanted` (both
    /// with absolute paths; `home` holds the hidden paths): `wanted` itself, with the temp
    /// dirs and the process cap no wider than the parent's. A grant wider than the parent's
    /// (a wider mode, a path it may not write, a hidden path it may not read, a host it may
    /// not reach) is refused with one line naming it: a grant can only narrow.
    pub fn narrowed_to(
        &self,
        wanted: &SandboxPolicy,
        workspace: &Path,
        home: Option<&Path>,
    ) -> Result<SandboxPolicy, String> {
        if self.mode == SandboxMode::FullAccess {
            return Ok(wanted.clone());
        }
        if wanted.mode.narrowest(self.mode) != wanted.mode {
            return Err(format!(
                "sandbox `{}` is wider than its parent's `{}`",
                wanted.mode, self.mode
            ));
        }
        if wanted.mode == SandboxMode::WorkspaceWrite {
            let roots = self.writable_roots(workspace);
            let git = workspace.join(".git");
            for path in &wanted.write {
                let path = real(path);
                let inside = roots.iter().any(|root| path.starts_with(root));
                let opens_git =
                    (git.starts_with(&path) && path != workspace) || path.starts_with(&git);
                if !inside || (opens_git && !self.git_writable(workspace)) {
                    return Err(format!(
                        "write `{}` is outside what its parent may write",
                        path.display()
                    ));
                }
            }
        }
        let parent_hidden = self.hidden(home);
        for path in &wanted.read {
            let path = real(path);
            if parent_hidden
                .iter()
                .any(|hidden| hidden.starts_with(&path) || path.starts_with(hidden))
            {
                return Err(format!(
                    "read `{}` is hidden from its parent",
                    path.display()
                ));
            }
        }
        if !self.network_unrestricted() {
            for grant in &wanted.network {
                if !self.network.contains(grant) {
                    return Err(format!("network `{grant}` is not granted to its parent"));
                }
            }
        }
        let mut read_only = self.read_only.clone();
        read_only.extend(wanted.read_only.iter().cloned());
        Ok(SandboxPolicy {
            read_only,
            max_processes: wanted.max_processes.min(self.max_processes),
            exclude_slash_tmp: wanted.exclude_slash_tmp || self.exclude_slash_tmp,
            exclude_tmpdir_env_var: wanted.exclude_tmpdir_env_var || self.exclude_tmpdir_env_var,
            ..wanted.clone()
        })
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
    fn a_grant_can_only_narrow() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, workspace, shared) = (root.join("home"), root.join("ws"), root.join("shared"));
        for d in [home.join(".ssh"), workspace.join(".git"), shared.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        // The test's directories are in the temp dir: the parent does not write there.
        let parent = SandboxPolicy {
            write: vec![shared.clone()],
            network: vec!["127.0.0.1:8080".parse().unwrap()],
            exclude_slash_tmp: true,
            exclude_tmpdir_env_var: true,
            ..SandboxPolicy::default()
        };
        let narrow = |wanted: &SandboxPolicy| parent.narrowed_to(wanted, &workspace, Some(&home));
        // Narrower: kept as asked.
        let read_only = SandboxPolicy::new(SandboxMode::ReadOnly);
        assert_eq!(narrow(&read_only).unwrap().mode, SandboxMode::ReadOnly);
        let within = SandboxPolicy {
            write: vec![shared.join("out"), workspace.join("src")],
            network: parent.network.clone(),
            max_processes: 10_000,
            ..SandboxPolicy::default()
        };
        let got = narrow(&within).unwrap();
        assert_eq!(got.max_processes, DEFAULT_MAX_PROCESSES);
        assert_eq!(got.write, within.write);
        assert!(
            got.exclude_slash_tmp,
            "the parent's narrower temp dirs are kept"
        );
        // Wider: refused, naming the grant.
        let wider = |wanted: SandboxPolicy| narrow(&wanted).unwrap_err();
        assert!(
            wider(SandboxPolicy::new(SandboxMode::FullAccess)).contains("`full-access` is wider")
        );
        assert!(
            wider(SandboxPolicy {
                write: vec![root.join("elsewhere")],
                ..SandboxPolicy::default()
            })
            .starts_with("write `")
        );
        assert!(
            wider(SandboxPolicy {
                write: vec![workspace.join(".git")],
                ..SandboxPolicy::default()
            })
            .contains(".git` is outside")
        );
        assert!(
            wider(SandboxPolicy {
                read: vec![home.clone()],
                ..SandboxPolicy::default()
            })
            .contains("is hidden from its parent")
        );
        assert!(
            wider(SandboxPolicy {
                network: vec![NetworkGrant::Any],
                ..SandboxPolicy::default()
            })
            .contains("network `*`")
        );
        let read_only_parent = SandboxPolicy::new(SandboxMode::ReadOnly);
        let within = SandboxPolicy {
            exclude_slash_tmp: false,
            exclude_tmpdir_env_var: false,
            ..within
        };
        assert!(
            read_only_parent
                .narrowed_to(&SandboxPolicy::default(), &workspace, Some(&home))
                .unwrap_err()
                .contains("`workspace-write` is wider than its parent's `read-only`")
        );
        // Under full access anything goes.
        let full = SandboxPolicy::new(SandboxMode::FullAccess);
        assert_eq!(full.narrowed_to(&within, &workspace, None).unwrap(), within);
    }

    #[test]
    fn hidden_paths_are_the_existing_secrets_less_the_read_grants() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::create_dir_all(home.path().join(".aws")).unwrap();
        let home = home.path().canonicalize().unwrap();
        let mut policy = SandboxPolicy::default();
        // The machine's own variables (`HISTFILE`, XDG) may add paths elsewhere.
        let under_home = |policy: &SandboxPolicy| -> Vec<PathBuf> {
            policy
                .hidden(Some(&home))
                .into_iter()
                .filter(|p| p.starts_with(&home))
                .collect()
        };
        assert_eq!(
            under_home(&policy),
            vec![home.join(".aws"), home.join(".ssh")]
        );
        policy.read.push(home.join(".ssh"));
        assert_eq!(under_home(&policy), vec![home.join(".aws")]);
    }

    #[test]
    fn xdg_locations_and_named_files_are_hidden_where_the_variables_put_them() {
        let vars = |name: &str| match name {
            "XDG_CONFIG_HOME" => Some("/cfg".to_owned()),
            "XDG_DATA_HOME" => Some("relative/ignored".to_owned()),
            "KUBECONFIG" => Some("/k/one:/k/two".to_owned()),
            "CODEX_HOME" => Some("/codex".to_owned()),
            _ => None,
        };
        let found = hidden_candidates(Path::new("/home/u"), &vars);
        for expected in [
            "/home/u/.ssh",
            "/home/u/.codex/auth.json",
            "/home/u/.claude/.credentials.json",
            "/home/u/.config/git/credentials",
            "/home/u/.local/share/wonopcode",
            "/cfg/gh",
            "/cfg/git/credentials",
            "/cfg/wonopcode/trusted-workspaces.json",
            "/k/one",
            "/k/two",
            "/codex/auth.json",
        ] {
            assert!(
                found.contains(&PathBuf::from(expected)),
                "{expected}: {found:?}"
            );
        }
        assert!(
            !found.iter().any(|p| p.starts_with("relative")),
            "{found:?}"
        );
    }
}
