//! Where loops are looked for, in order: directories from `--loops-dir`, then from
//! `WONOPCODE_AGENT_LOOPS_PATH` (colon-separated), then the workspace's agents
//! (`.wonopcode/agents/`, then Claude Code's `.claude/agents/`), the config directory's
//! `wonopcode/agent-loops/`, the user's agents (`wonopcode/agents/` in the config directory,
//! then `~/.claude/agents/`), the data directory's `wonopcode/agent-loops/`, and
//! `/usr/share/wonopcode/agent-loops/`. `dirs` honours `XDG_CONFIG_HOME` and
//! `XDG_DATA_HOME`. In each loop directory `registry.yaml` is read before the `*.wasm` files,
//! then the agent files of its `agents/` sub-directory; an agents directory holds `*.md`
//! agent files only. The project's come before the user's, as in Claude Code.

use std::path::{Path, PathBuf};

/// The environment variable with extra directories.
pub const PATH_VARIABLE: &str = "WONOPCODE_AGENT_LOOPS_PATH";

/// Why a directory is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirKind {
    /// `--loops-dir`.
    Flag,
    /// `WONOPCODE_AGENT_LOOPS_PATH`.
    Environment,
    /// The user's config directory.
    Config,
    /// The user's data directory.
    Data,
    /// The system-wide directory.
    System,
    /// A directory of the user's agent files.
    Agents,
    /// A directory of the workspace's agent files (a repository's: used as instructions
    /// only until the workspace is trusted).
    WorkspaceAgents,
}

/// One directory to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    /// The directory.
    pub path: PathBuf,
    /// Why it is searched.
    pub kind: DirKind,
}

/// The directories to search, first wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchPath {
    /// In search order.
    pub dirs: Vec<SearchDir>,
    /// Whether the person trusts the workspace: until then its agents' hooks and MCP
    /// servers are left out (default: not trusted).
    pub workspace_trusted: bool,
}

/// The sub-directory of the config, data and system directories that holds loops.
const SUBDIR: &str = "wonopcode/agent-loops";

impl SearchPath {
    /// The standard search path: `flag_dirs`, then the environment's, then the agents of
    /// `workspace` (when given), then the user's and the system's.
    pub fn standard(flag_dirs: &[PathBuf], workspace: Option<&Path>) -> Self {
        let env = std::env::var_os(PATH_VARIABLE);
        let config = dirs::config_dir();
        Self::from_parts(
            flag_dirs,
            env.as_deref()
                .map(|v| std::env::split_paths(v).collect::<Vec<_>>())
                .unwrap_or_default(),
            config.as_ref().map(|d| d.join(SUBDIR)),
            dirs::data_dir().map(|d| d.join(SUBDIR)),
            Some(Path::new("/usr/share").join(SUBDIR)),
        )
        .with_agent_dirs(
            workspace
                .map(|w| vec![w.join(".wonopcode/agents"), w.join(".claude/agents")])
                .unwrap_or_default(),
            config
                .map(|c| c.join("wonopcode/agents"))
                .into_iter()
                .chain(dirs::home_dir().map(|h| h.join(".claude/agents")))
                .collect(),
        )
    }

    /// This path, with the workspace trusted or not.
    pub fn trusting_workspace(mut self, trusted: bool) -> Self {
        self.workspace_trusted = trusted;
        self
    }

    /// This path with agents directories added: `project`'s (the workspace's) before the
    /// config directory's loops, `user`'s after them.
    pub fn with_agent_dirs(mut self, project: Vec<PathBuf>, user: Vec<PathBuf>) -> Self {
        let agents = |dirs: Vec<PathBuf>, kind: DirKind| {
            dirs.into_iter().map(move |path| SearchDir { path, kind })
        };
        let config = self.dirs.iter().position(|d| d.kind == DirKind::Config);
        let before = config.unwrap_or_else(|| {
            self.dirs
                .iter()
                .position(|d| matches!(d.kind, DirKind::Data | DirKind::System))
                .unwrap_or(self.dirs.len())
        });
        let after = config.map_or(before, |c| c + 1);
        let tail = self.dirs.split_off(after);
        self.dirs.extend(agents(user, DirKind::Agents));
        self.dirs.extend(tail);
        let tail = self.dirs.split_off(before);
        self.dirs.extend(agents(project, DirKind::WorkspaceAgents));
        self.dirs.extend(tail);
        // A directory that is both (the workspace is the home directory) is the user's.
        let users: Vec<PathBuf> = self
            .dirs
            .iter()
            .filter(|d| d.kind == DirKind::Agents)
            .map(|d| d.path.clone())
            .collect();
        for dir in &mut self.dirs {
            if dir.kind == DirKind::WorkspaceAgents && users.contains(&dir.path) {
                dir.kind = DirKind::Agents;
            }
        }
        let mut seen = Vec::new();
        self.dirs.retain(|d| {
            let new = !seen.contains(&d.path);
            seen.push(d.path.clone());
            new
        });
        self
    }

    /// A search path from its parts (for tests and embedders). Empty entries and repeats
    /// are dropped.
    pub fn from_parts(
        flag_dirs: &[PathBuf],
        env_dirs: Vec<PathBuf>,
        config: Option<PathBuf>,
        data: Option<PathBuf>,
        system: Option<PathBuf>,
    ) -> Self {
        let mut path = Self::default();
        let candidates = flag_dirs
            .iter()
            .cloned()
            .map(|p| (p, DirKind::Flag))
            .chain(env_dirs.into_iter().map(|p| (p, DirKind::Environment)))
            .chain(config.map(|p| (p, DirKind::Config)))
            .chain(data.map(|p| (p, DirKind::Data)))
            .chain(system.map(|p| (p, DirKind::System)));
        for (dir, kind) in candidates {
            if dir.as_os_str().is_empty() || path.dirs.iter().any(|d| d.path == dir) {
                continue;
            }
            path.dirs.push(SearchDir { path: dir, kind });
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_dedup() {
        let path = SearchPath::from_parts(
            &[PathBuf::from("/flag")],
            vec![
                PathBuf::from(""),
                PathBuf::from("/env"),
                PathBuf::from("/flag"),
            ],
            Some(PathBuf::from("/cfg")),
            None,
            Some(PathBuf::from("/sys")),
        );
        let got: Vec<_> = path.dirs.iter().map(|d| (d.path.clone(), d.kind)).collect();
        assert_eq!(
            got,
            vec![
                (PathBuf::from("/flag"), DirKind::Flag),
                (PathBuf::from("/env"), DirKind::Environment),
                (PathBuf::from("/cfg"), DirKind::Config),
                (PathBuf::from("/sys"), DirKind::System),
            ]
        );
    }

    #[test]
    fn the_project_agents_come_before_the_users() {
        let path = SearchPath::from_parts(
            &[PathBuf::from("/flag")],
            Vec::new(),
            Some(PathBuf::from("/cfg")),
            Some(PathBuf::from("/data")),
            None,
        )
        .with_agent_dirs(
            vec![PathBuf::from("/w/.wonopcode/agents")],
            vec![PathBuf::from("/home/.claude/agents")],
        );
        let got: Vec<_> = path.dirs.iter().map(|d| d.path.to_str().unwrap()).collect();
        assert_eq!(
            got,
            [
                "/flag",
                "/w/.wonopcode/agents",
                "/cfg",
                "/home/.claude/agents",
                "/data"
            ]
        );
    }
}
