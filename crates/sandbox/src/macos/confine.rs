//! A run's sandbox on macOS ([`Sandbox`]) and one process's confinement in it
//! ([`Confinement`]: the Seatbelt profile its command runs under).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::support::Support;
use crate::denial::Explainer;
use crate::protected::{Absent, MovedAside, Nested, protected_in};
use crate::seatbelt::{SANDBOX_EXEC, SeatbeltRules, profile};
use crate::{SandboxError, SandboxMode, SandboxPolicy};

/// The sandbox of a run: one policy, enforced on every process started under it.
pub struct Sandbox {
    policy: SandboxPolicy,
    home: Option<PathBuf>,
    /// `read-only`'s one writable place (removed with the sandbox).
    private_temp: Option<tempfile::TempDir>,
    /// The protected names below each workspace's top, walked on its first process.
    nested: parking_lot::Mutex<HashMap<PathBuf, Arc<Nested>>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// The sandbox of `policy`, the hidden paths under the `HOME` the process has. Refuses
    /// a confining mode this Mac cannot enforce: a sandbox is never silently weaker.
    pub fn new(policy: SandboxPolicy) -> Result<Self, SandboxError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::with_home(policy, home.as_deref())
    }

    /// As [`Sandbox::new`], with `home` as the home directory whose secrets are hidden.
    pub fn with_home(policy: SandboxPolicy, home: Option<&Path>) -> Result<Self, SandboxError> {
        if policy.mode != SandboxMode::FullAccess && !Support::detect().seatbelt {
            return Err(SandboxError::Unsupported(format!(
                "this Mac cannot enforce the `{}` sandbox ({SANDBOX_EXEC} is missing); pass --sandbox full-access to run commands unconfined",
                policy.mode
            )));
        }
        let private_temp = match policy.mode {
            SandboxMode::ReadOnly => Some(
                tempfile::Builder::new()
                    .prefix("wonopcode-sandbox-")
                    .tempdir()
                    .map_err(|e| {
                        SandboxError::Io(format!("cannot make a private temp dir: {e}"))
                    })?,
            ),
            _ => None,
        };
        Ok(Self {
            home: home.and_then(|h| h.canonicalize().ok()),
            policy,
            private_temp,
            nested: parking_lot::Mutex::new(HashMap::new()),
        })
    }

    /// The mode it enforces.
    pub fn mode(&self) -> SandboxMode {
        self.policy.mode
    }

    /// The policy it enforces.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The paths it hides (canonical), which file tools keep out of as well: none in
    /// `full-access`, where nothing is confined.
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        if self.policy.mode == SandboxMode::FullAccess {
            return Vec::new();
        }
        self.policy.hidden(self.home.as_deref())
    }

    /// What a run says once at its start about its sandbox.
    pub fn notices(&self) -> Vec<String> {
        if self.policy.mode == SandboxMode::FullAccess {
            return vec![
                "--sandbox full-access: commands run with your full rights (any file, any host)"
                    .to_owned(),
            ];
        }
        vec![
            "sandbox: macOS cannot cap a command's processes, so max_processes is not enforced"
                .to_owned(),
        ]
    }

    /// Prepares the confinement of one process whose workspace is `workspace`.
    pub fn confine(&self, workspace: &Path) -> Result<Confinement, SandboxError> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| SandboxError::Io(format!("{}: {e}", workspace.display())))?;
        if self.policy.mode == SandboxMode::FullAccess {
            return Ok(Confinement {
                mode: SandboxMode::FullAccess,
                profile: None,
                temp: None,
                explainer: None,
                absent: Absent::default(),
            });
        }
        let nested = self.nested(&workspace);
        let temp = self.private_temp.as_ref().map(|t| t.path().to_path_buf());
        let rules = SeatbeltRules::of(
            &self.policy,
            &workspace,
            self.home.as_deref(),
            temp.as_deref(),
            &nested.existing(),
        );
        let explainer = Explainer {
            workspace: workspace.clone(),
            writable: rules.writable.clone(),
            read_only: rules.read_only.clone(),
            split: Vec::new(),
            hidden: rules.hidden.clone(),
            network: !self.policy.network.is_empty(),
        };
        Ok(Confinement {
            mode: self.policy.mode,
            profile: Some(profile(&rules)?),
            temp,
            explainer: Some(explainer),
            absent: Absent::of(&workspace, &self.policy, nested),
        })
    }

    /// What becomes of the protected names of `workspace` from now on, for a process that
    /// was started earlier and keeps running (an MCP server).
    pub fn watch_protected(&self, workspace: &Path) -> Result<Absent, SandboxError> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| SandboxError::Io(format!("{}: {e}", workspace.display())))?;
        if self.policy.mode == SandboxMode::FullAccess {
            return Ok(Absent::default());
        }
        Ok(Absent::of(
            &workspace,
            &self.policy,
            self.nested(&workspace),
        ))
    }

    /// The protected name a file tool's write to `path` (canonical, inside `workspace`)
    /// would change, when no grant names it. `None` under `full-access`.
    pub fn guards_write(&self, path: &Path, workspace: &Path) -> Option<&'static str> {
        if self.policy.mode == SandboxMode::FullAccess || self.policy.granted_write(path, workspace)
        {
            return None;
        }
        protected_in(path.strip_prefix(workspace).ok()?)
    }

    fn nested(&self, workspace: &Path) -> Arc<Nested> {
        self.nested
            .lock()
            .entry(workspace.to_path_buf())
            .or_insert_with(|| Arc::new(Nested::new(workspace, &self.policy)))
            .clone()
    }
}

/// One process's confinement: start its command with [`Confinement::command`], keep it
/// while the process runs, [`Confinement::explain`] a failure, drop it after.
pub struct Confinement {
    mode: SandboxMode,
    /// The Seatbelt profile; `None` when unconfined.
    profile: Option<String>,
    temp: Option<PathBuf>,
    explainer: Option<Explainer>,
    absent: Absent,
}

impl std::fmt::Debug for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confinement")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Confinement {
    /// The mode the process runs under.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// A command that runs `program` confined: `sandbox-exec -p PROFILE -- program`, to
    /// which its arguments, variables and directory are added as to any command, but never
    /// a cleared environment (`clear_env` starts from an empty one, keeping `TMPDIR`). Its
    /// process leads a process group of its own.
    pub fn command(
        &mut self,
        program: impl AsRef<OsStr>,
        clear_env: bool,
    ) -> tokio::process::Command {
        let line = self.wrapped(program.as_ref(), &[]);
        let mut command = tokio::process::Command::new(&line[0]);
        command.args(&line[1..]);
        if clear_env {
            command.env_clear();
        }
        if let Some(temp) = &self.temp {
            command.env("TMPDIR", temp);
        }
        command.process_group(0);
        command
    }

    /// The program and arguments that run `program` with `args` under the profile.
    pub(crate) fn wrapped(
        &self,
        program: &OsStr,
        args: &[std::ffi::OsString],
    ) -> Vec<std::ffi::OsString> {
        let mut line = Vec::new();
        if let Some(profile) = &self.profile {
            line.extend([
                SANDBOX_EXEC.into(),
                "-p".into(),
                profile.into(),
                "--".into(),
            ]);
        }
        line.push(program.to_os_string());
        line.extend(args.iter().cloned());
        line
    }

    /// The temp dir its process is given as `TMPDIR`, when it has one of its own.
    pub(crate) fn temp(&self) -> Option<&Path> {
        self.temp.as_deref()
    }

    /// Kills every process the command still has: macOS has no per-command group of
    /// processes to kill at once, so the caller's process-group kill and the call's
    /// process tracking do it.
    pub fn kill_all(&self) {}

    /// Moves aside the protected names made at the workspace's top since it was prepared,
    /// and says which.
    pub fn move_aside_made(&self) -> Vec<MovedAside> {
        self.absent.move_aside_made()
    }

    /// When `output` shows the sandbox stopped the command, what it denied, in one line.
    pub fn explain(&self, output: &str) -> Option<String> {
        self.explainer.as_ref()?.explain(output)
    }
}
