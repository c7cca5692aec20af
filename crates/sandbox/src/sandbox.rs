//! A run's sandbox ([`Sandbox`]): one policy, checked against what the platform can enforce
//! when the run starts, then enforced on every process started under it. What the policy
//! means is decided here, once; how each process is confined is the platform backend's
//! (`linux::Backend`, `macos::Backend`), which returns its [`crate::Confinement`].

use std::path::{Path, PathBuf};

use crate::protected::{Absent, protected_in};
use crate::{Confinement, SandboxError, SandboxMode, SandboxPolicy};

#[cfg(target_os = "linux")]
use crate::linux::Backend;
#[cfg(target_os = "macos")]
use crate::macos::Backend;

/// The sandbox of a run: one policy, enforced on every process started under it.
pub struct Sandbox {
    run: RunPolicy,
    backend: Backend,
}

/// The policy of a run as every backend reads it: the policy, the home whose secrets are
/// hidden, and `read-only`'s one writable place.
pub(crate) struct RunPolicy {
    pub(crate) policy: SandboxPolicy,
    /// Canonical.
    pub(crate) home: Option<PathBuf>,
    /// `read-only`'s private temp dir (removed with the sandbox).
    private_temp: Option<tempfile::TempDir>,
}

impl RunPolicy {
    /// The private temp dir, when the mode has one.
    pub(crate) fn temp(&self) -> Option<&Path> {
        self.private_temp.as_ref().map(tempfile::TempDir::path)
    }
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("policy", &self.run.policy)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// The sandbox of `policy`, the hidden paths under the `HOME` the process has. Refuses
    /// a confining mode the platform cannot enforce: a sandbox is never silently weaker.
    pub fn new(policy: SandboxPolicy) -> Result<Self, SandboxError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::with_home(policy, home.as_deref())
    }

    /// As [`Sandbox::new`], with `home` as the home directory whose secrets are hidden.
    pub fn with_home(policy: SandboxPolicy, home: Option<&Path>) -> Result<Self, SandboxError> {
        let backend = Backend::new(&policy)?;
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
            run: RunPolicy {
                home: home.and_then(|h| h.canonicalize().ok()),
                policy,
                private_temp,
            },
            backend,
        })
    }

    /// The mode it enforces.
    pub fn mode(&self) -> SandboxMode {
        self.run.policy.mode
    }

    /// The policy it enforces.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.run.policy
    }

    /// The paths it hides (canonical), which file tools keep out of as well: none in
    /// `full-access`, where nothing is confined.
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        if self.mode() == SandboxMode::FullAccess {
            return Vec::new();
        }
        self.run.policy.hidden(self.run.home.as_deref())
    }

    /// What a run says once at its start about its sandbox: that commands run unconfined,
    /// or what this machine cannot enforce of the policy.
    pub fn notices(&self) -> Vec<String> {
        if self.mode() == SandboxMode::FullAccess {
            return vec![
                "--sandbox full-access: commands run with your full rights (any file, any host)"
                    .to_owned(),
            ];
        }
        self.backend.notices(&self.run)
    }

    /// Prepares the confinement of one process whose workspace is `workspace`.
    pub fn confine(&self, workspace: &Path) -> Result<Confinement, SandboxError> {
        let workspace = canonical(workspace)?;
        if self.mode() == SandboxMode::FullAccess {
            return Ok(Confinement::unconfined(workspace));
        }
        self.backend.confine(&self.run, workspace)
    }

    /// What becomes of the protected names of `workspace` from now on, for a process that
    /// was started earlier and keeps running (an MCP server): after each of its calls,
    /// [`Absent::move_aside_made`] moves aside those made during the call.
    pub fn watch_protected(&self, workspace: &Path) -> Result<Absent, SandboxError> {
        let workspace = canonical(workspace)?;
        if self.mode() == SandboxMode::FullAccess {
            return Ok(Absent::default());
        }
        let nested = self.backend.nested(&self.run, &workspace)?;
        Ok(Absent::of(&workspace, &self.run.policy, nested))
    }

    /// The protected path a file tool's write to `path` (canonical, inside `workspace`)
    /// would change, when no grant names it — a protected name (`.git`), the hooks
    /// directory `core.hooksPath` names, a start-up file of a home inside the workspace:
    /// such a write needs the person at the terminal, as a command the sandbox stopped does.
    /// `None` under `full-access`.
    pub fn guards_write(&self, path: &Path, workspace: &Path) -> Option<String> {
        if self.mode() == SandboxMode::FullAccess || self.run.policy.granted_write(path, workspace)
        {
            return None;
        }
        let relative = path.strip_prefix(workspace).ok()?;
        if let Some(name) = protected_in(relative) {
            return Some(name.to_owned());
        }
        let workspace = canonical(workspace).ok()?;
        let nested = self.backend.nested(&self.run, &workspace).ok()?;
        let top = nested.top_holding(path)?;
        Some(
            top.strip_prefix(&workspace)
                .unwrap_or(top)
                .display()
                .to_string(),
        )
    }
}

fn canonical(workspace: &Path) -> Result<PathBuf, SandboxError> {
    workspace
        .canonicalize()
        .map_err(|e| SandboxError::Io(format!("{}: {e}", workspace.display())))
}
