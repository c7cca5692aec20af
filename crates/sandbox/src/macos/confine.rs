//! The macOS backend of a run's sandbox ([`Backend`]) and one process's confinement in it
//! ([`Confinement`]: the Seatbelt profile its command runs under).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::support::Support;
use crate::denial::Explainer;
use crate::protected::{Absent, MovedAside, Nested};
use crate::sandbox::RunPolicy;
use crate::seatbelt::{SANDBOX_EXEC, SeatbeltRules, profile};
use crate::{SandboxError, SandboxMode, SandboxPolicy};

/// What Seatbelt enforces a run's policy with.
pub struct Backend {
    /// The protected names below each workspace's top, walked on its first process.
    nested: parking_lot::Mutex<HashMap<PathBuf, Arc<Nested>>>,
}

impl Backend {
    /// The backend for `policy`; refuses a confining mode this Mac cannot enforce.
    pub(crate) fn new(policy: &SandboxPolicy) -> Result<Self, SandboxError> {
        if policy.mode != SandboxMode::FullAccess && !Support::detect().seatbelt {
            return Err(SandboxError::Unsupported(format!(
                "this Mac cannot enforce the `{}` sandbox ({SANDBOX_EXEC} is missing); pass --sandbox full-access to run commands unconfined",
                policy.mode
            )));
        }
        Ok(Self {
            nested: parking_lot::Mutex::new(HashMap::new()),
        })
    }

    /// What macOS cannot enforce of the run's confining policy, said once at its start.
    pub(crate) fn notices(&self, _run: &RunPolicy) -> Vec<String> {
        vec![
            "sandbox: macOS cannot cap a command's processes, so max_processes is not enforced"
                .to_owned(),
        ]
    }

    /// Prepares the confinement of one process whose workspace is `workspace` (canonical),
    /// under a confining mode: the profile its command runs under.
    pub(crate) fn confine(
        &self,
        run: &RunPolicy,
        workspace: PathBuf,
    ) -> Result<Confinement, SandboxError> {
        let nested = self.nested(run, &workspace)?;
        let temp = run.temp().map(Path::to_path_buf);
        // The files hard-linked from elsewhere stay unwritten too, as on Linux.
        let linked = nested.linked();
        let mut kept = nested.existing();
        kept.extend(linked.iter().cloned());
        let rules = SeatbeltRules::of(
            &run.policy,
            &workspace,
            run.home.as_deref(),
            temp.as_deref(),
            &kept,
        );
        let explainer = Explainer {
            workspace: workspace.clone(),
            writable: rules.writable.clone(),
            read_only: rules.read_only.clone(),
            linked,
            split: Vec::new(),
            hidden: rules.hidden.clone(),
            network: !run.policy.network.is_empty(),
        };
        Ok(Confinement {
            mode: run.policy.mode,
            profile: Some(profile(&rules)?),
            temp,
            explainer: Some(explainer),
            absent: Absent::of(&workspace, &run.policy, nested),
        })
    }

    /// The protected names below `workspace`'s top (canonical), walked on its first process.
    pub(crate) fn nested(
        &self,
        run: &RunPolicy,
        workspace: &Path,
    ) -> Result<Arc<Nested>, SandboxError> {
        Ok(self
            .nested
            .lock()
            .entry(workspace.to_path_buf())
            .or_insert_with(|| Arc::new(Nested::new(workspace, &run.policy, run.home.as_deref())))
            .clone())
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
    /// The confinement of a process under `full-access`: none.
    pub(crate) fn unconfined(_workspace: PathBuf) -> Self {
        Self {
            mode: SandboxMode::FullAccess,
            profile: None,
            temp: None,
            explainer: None,
            absent: Absent::default(),
        }
    }

    /// The mode the process runs under.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// A command that runs `program` confined: `sandbox-exec -p PROFILE -- program`, to
    /// which its arguments, variables and directory are added as to any command, but never
    /// a cleared environment (`clear_env` starts from an empty one, keeping `TMPDIR`). Its
    /// process leads a session of its own ([`own_session`]).
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
        own_session(&mut command);
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

/// Makes `command`'s process lead a session (and so a process group) of its own: without a
/// controlling terminal it cannot open `/dev/tty`, which the profile lets it read like any
/// other file, to read what the person types.
pub(crate) fn own_session(command: &mut tokio::process::Command) {
    // SAFETY: `setsid` is async-signal-safe and touches no memory, as a `pre_exec` hook must.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
