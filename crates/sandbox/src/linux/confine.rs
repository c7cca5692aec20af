//! The Linux backend of a run's sandbox ([`Backend`]: what the kernel was found to enforce,
//! and what each workspace needs prepared once) and one process's confinement in it
//! ([`Confinement`]: prepared before the spawn, applied by the child before exec, and the
//! process count cap and failure explanations after).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::RulesetCreated;
use seccompiler::BpfProgram;

use super::filesystem::{self, Layout};
use super::namespace::Namespace;
use super::network::{self, Sockets};
use super::process_limit::{self, CgroupPool, PooledCgroup};
use super::support::{ProcessLimitKind, Support};
use crate::denial::Explainer;
use crate::protected::{Absent, MovedAside, Nested};
use crate::sandbox::RunPolicy;
use crate::{NetworkGrant, SandboxError, SandboxMode, SandboxPolicy};

/// What the kernel enforces a run's policy with.
pub struct Backend {
    support: &'static Support,
    seccomp: Option<Arc<BpfProgram>>,
    /// What depends on the workspace only, per workspace: built once for its first
    /// process, the ruleset duplicated for each later one.
    prepared: parking_lot::Mutex<HashMap<PathBuf, Arc<Prepared>>>,
    /// Emptied per-command cgroups, kept for the next commands.
    cgroups: Arc<CgroupPool>,
}

/// A workspace's writable roots, hidden paths, Landlock ruleset and protected names below
/// its top.
struct Prepared {
    writable: Vec<PathBuf>,
    hidden: Vec<PathBuf>,
    ruleset: RulesetCreated,
    nested: Arc<Nested>,
}

impl Backend {
    /// The backend for `policy`; refuses a confining mode the kernel cannot enforce.
    pub(crate) fn new(policy: &SandboxPolicy) -> Result<Self, SandboxError> {
        let support = Support::detect();
        let confined = policy.mode != SandboxMode::FullAccess;
        if confined && !support.landlock() {
            return Err(SandboxError::Unsupported(format!(
                "this kernel cannot enforce the `{}` sandbox (no Landlock ABI {} or later); pass --sandbox full-access to run commands unconfined",
                policy.mode,
                super::support::MIN_LANDLOCK_ABI
            )));
        }
        if confined && !support.seccomp && !policy.network_unrestricted() {
            return Err(SandboxError::Unsupported(format!(
                "this kernel cannot enforce the `{}` sandbox's network rules (no seccomp); pass --sandbox full-access to run commands unconfined",
                policy.mode
            )));
        }
        let seccomp = if confined && !policy.network_unrestricted() {
            let sockets = if policy.network.is_empty() {
                Sockets::None
            } else {
                let datagrams = policy.network.iter().any(|grant| {
                    matches!(grant, NetworkGrant::Port { host, .. } if host.parse::<std::net::IpAddr>().is_err())
                });
                Sockets::Tcp { datagrams }
            };
            Some(Arc::new(network::filter(sockets)?))
        } else {
            None
        };
        Ok(Self {
            support,
            seccomp,
            prepared: parking_lot::Mutex::new(HashMap::new()),
            cgroups: Arc::default(),
        })
    }

    /// What this kernel cannot enforce of the run's confining policy, said once at its start.
    pub(crate) fn notices(&self, run: &RunPolicy) -> Vec<String> {
        let mut lines = Vec::new();
        if run.policy.mode == SandboxMode::WorkspaceWrite && !self.support.user_namespaces {
            lines.push(
                "sandbox: user namespaces are not available here, so .git and files hard-linked from outside the workspace (a package cache's) stay writable"
                    .to_owned(),
            );
        }
        if self.support.process_limit == ProcessLimitKind::None {
            lines.push(
                "sandbox: no way to cap a command's processes here (no writable pids cgroup, no user namespace)"
                    .to_owned(),
            );
        }
        if !run.policy.network.is_empty()
            && !run.policy.network_unrestricted()
            && !self.support.network_ports()
        {
            lines.push(
                "sandbox: this kernel cannot filter TCP ports, so a network grant opens every port"
                    .to_owned(),
            );
        }
        lines
    }

    /// Prepares the confinement of one process whose workspace is `workspace` (canonical),
    /// under a confining mode.
    pub(crate) fn confine(
        &self,
        run: &RunPolicy,
        workspace: PathBuf,
    ) -> Result<Confinement, SandboxError> {
        let prepared = self.prepared(run, &workspace)?;
        let (writable, hidden) = (&prepared.writable, &prepared.hidden);
        // Per process: a `.git` may have been made since the last one.
        // Once per command: the walk's files hard-linked from elsewhere, mounted read-only
        // and named apart in a denial.
        let linked = if run.policy.mode == SandboxMode::WorkspaceWrite {
            prepared.nested.linked()
        } else {
            Vec::new()
        };
        let read_only = Self::read_only(run, &prepared, &workspace, &linked);
        let ruleset: Option<OwnedFd> = prepared
            .ruleset
            .try_clone()
            .map_err(|e| SandboxError::Landlock(e.to_string()))?
            .into();
        // None only where Landlock enforces nothing, which `new` refused: never run unconfined.
        let ruleset = ruleset.ok_or_else(|| {
            SandboxError::Landlock("the kernel made no ruleset to enforce".to_owned())
        })?;
        // A namespace of its own holds the read-only paths, and is where `RLIMIT_NPROC`
        // counts only the command's processes.
        let rlimit_cap = self.support.process_limit == ProcessLimitKind::Rlimit;
        // Listed again per process: a secret made since the last one is covered too.
        let covered = self.covered(run, writable);
        let namespace = (self.support.user_namespaces
            && (!read_only.is_empty() || !covered.is_empty() || rlimit_cap))
            .then(|| Namespace::new(&read_only, &covered));
        let max = run.policy.max_processes;
        let (cgroup, rlimit) = match &self.support.process_limit {
            ProcessLimitKind::Cgroup(parent) => match self.cgroups.take(parent, max) {
                Ok(cgroup) => (Some(Arc::new(cgroup)), None),
                Err(e) => {
                    tracing::warn!(error = %e, "no cgroup for this command; its processes are not capped");
                    (None, None)
                }
            },
            // Only offered with user namespaces, and then every command has one (above).
            ProcessLimitKind::Rlimit => (None, Some(max)),
            ProcessLimitKind::None => (None, None),
        };
        let explainer = Explainer {
            workspace: workspace.clone(),
            writable: writable.clone(),
            linked,
            read_only,
            split: if self.support.user_namespaces {
                Vec::new()
            } else {
                split_by_hidden(writable, hidden)
            },
            hidden: hidden.clone(),
            network: !run.policy.network.is_empty(),
        };
        Ok(Confinement {
            mode: run.policy.mode,
            temp: run.temp().map(Path::to_path_buf),
            steps: Some(ChildSteps {
                cgroup: cgroup.clone(),
                namespace,
                rlimit,
                ruleset,
                seccomp: self.seccomp.clone(),
            }),
            cgroup,
            explainer: Some(explainer),
            absent: Absent::of(&workspace, &run.policy, prepared.nested.clone()),
            workspace,
        })
    }

    /// The protected names below `workspace`'s top (canonical), walked on its first process.
    pub(crate) fn nested(
        &self,
        run: &RunPolicy,
        workspace: &Path,
    ) -> Result<Arc<Nested>, SandboxError> {
        Ok(self.prepared(run, workspace)?.nested.clone())
    }

    /// Where commands may write: the policy's roots, and `read-only`'s private temp dir.
    fn writable(run: &RunPolicy, workspace: &Path) -> Vec<PathBuf> {
        let mut roots = run.policy.writable_roots(workspace);
        if let Some(temp) = run.temp() {
            roots.extend(temp.canonicalize().ok());
        }
        roots.sort();
        roots.dedup();
        roots
    }

    /// Paths inside writable roots that stay read-only: the workspace's protected names
    /// ([`crate::PROTECTED`]: `.git` and what makes an agent run something) where they
    /// exist, at its top and below and at the top of the shared temp dirs, unless a grant
    /// names them, its files hard-linked from elsewhere ([`crate::hard_links`]), and the
    /// user's own settings where a writable root holds the home
    /// ([`crate::protected::user_settings`]). Whole directories, not the files in them: a
    /// read-only file's directory could be renamed away and made again; a mount point
    /// cannot be renamed.
    fn read_only(
        run: &RunPolicy,
        prepared: &Prepared,
        workspace: &Path,
        linked: &[PathBuf],
    ) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = prepared
            .nested
            .tops
            .iter()
            .filter(|path| path.symlink_metadata().is_ok())
            .cloned()
            .collect();
        if run.policy.mode == SandboxMode::WorkspaceWrite {
            paths.extend(prepared.nested.existing());
            paths.extend(linked.iter().cloned());
        }
        paths.extend(crate::protected::user_settings(
            run.home.as_deref(),
            &prepared.writable,
            &run.policy,
            workspace,
        ));
        paths.sort();
        paths.dedup();
        paths
    }

    /// The hidden paths inside `writable` roots, which the command's namespace covers
    /// (none where there is no namespace: Landlock hides them instead, `filesystem.rs`).
    fn covered(&self, run: &RunPolicy, writable: &[PathBuf]) -> Vec<PathBuf> {
        if !self.support.user_namespaces {
            return Vec::new();
        }
        run.policy
            .hidden(run.home.as_deref())
            .into_iter()
            .filter(|h| writable.iter().any(|w| h.starts_with(w)))
            .collect()
    }

    /// The workspace's `Prepared`, built on its first process.
    fn prepared(&self, run: &RunPolicy, workspace: &Path) -> Result<Arc<Prepared>, SandboxError> {
        let mut cache = self.prepared.lock();
        if let Some(built) = cache.get(workspace) {
            return Ok(built.clone());
        }
        let writable = Self::writable(run, workspace);
        let hidden = run.policy.hidden(run.home.as_deref());
        let ports: Option<Vec<u16>> = (!run.policy.network_unrestricted()).then(|| {
            run.policy
                .network
                .iter()
                .filter_map(|grant| match grant {
                    NetworkGrant::Port { port, .. } => Some(*port),
                    NetworkGrant::Any => None,
                })
                .collect()
        });
        let ruleset = filesystem::ruleset(&Layout {
            abi: self.support.landlock_abi.unwrap_or_default(),
            writable: &writable,
            hidden: &hidden,
            covered: self.support.user_namespaces,
            ports: ports.as_deref(),
        })?;
        let nested = Nested::new(workspace, &run.policy, run.home.as_deref());
        let built = Arc::new(Prepared {
            writable,
            hidden,
            ruleset,
            nested: Arc::new(nested),
        });
        cache.insert(workspace.to_path_buf(), built.clone());
        Ok(built)
    }
}

/// What the child does between its start and exec, all of it prepared before. Applied
/// without changing it: in a child that shares wonopcode's memory (`spawn`), a change
/// would be wonopcode's too.
pub(crate) struct ChildSteps {
    cgroup: Option<Arc<PooledCgroup>>,
    namespace: Option<Namespace>,
    rlimit: Option<u32>,
    /// The Landlock ruleset to enforce.
    ruleset: OwnedFd,
    seccomp: Option<Arc<BpfProgram>>,
}

impl ChildSteps {
    /// Confines the calling process. Only system calls on prepared memory: it runs in the
    /// child of a multi-threaded process.
    pub(crate) fn apply(&self) -> io::Result<()> {
        if let Some(cgroup) = &self.cgroup {
            cgroup.join()?;
        }
        if let Some(namespace) = &self.namespace {
            namespace.enter()?;
        }
        if let Some(max) = self.rlimit {
            process_limit::set_rlimit(max)?;
        }
        // SAFETY: prctl and landlock_restrict_self take no pointer.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(
                    libc::SYS_landlock_restrict_self,
                    self.ruleset.as_raw_fd(),
                    0,
                ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(program) = &self.seccomp {
            seccompiler::apply_filter(program).map_err(|_| io::Error::last_os_error())?;
        }
        Ok(())
    }
}

/// One process's confinement: [`Confinement::apply`] it to the command before the spawn,
/// keep it while the process runs, [`Confinement::explain`] a failure, drop it after.
pub struct Confinement {
    mode: SandboxMode,
    workspace: PathBuf,
    temp: Option<PathBuf>,
    steps: Option<ChildSteps>,
    cgroup: Option<Arc<PooledCgroup>>,
    explainer: Option<Explainer>,
    /// The protected names missing when it was prepared.
    absent: Absent,
}

impl std::fmt::Debug for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confinement")
            .field("mode", &self.mode)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl Confinement {
    /// The confinement of a process under `full-access`: none.
    pub(crate) fn unconfined(workspace: PathBuf) -> Self {
        Self {
            mode: SandboxMode::FullAccess,
            workspace,
            temp: None,
            steps: None,
            cgroup: None,
            explainer: None,
            absent: Absent::default(),
        }
    }

    /// The mode the process runs under.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// A command that runs `program` confined: add its arguments, variables and directory
    /// as to any command, but never clear its environment (`clear_env` starts it from an
    /// empty one instead, so `TMPDIR`, pointed at the writable temp dir, stays). Its
    /// process confines itself in the child, before exec.
    /// Its process also leads a session of its own: it has no controlling terminal, so it
    /// cannot open `/dev/tty` to write around wonopcode's output or read what is typed.
    pub fn command(
        &mut self,
        program: impl AsRef<std::ffi::OsStr>,
        clear_env: bool,
    ) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(program);
        if clear_env {
            command.env_clear();
        }
        if let Some(temp) = &self.temp {
            command.env("TMPDIR", temp);
        }
        let steps = self.steps.take();
        // SAFETY: `setsid` and `ChildSteps::apply` make only async-signal-safe system calls
        // on memory prepared before fork, as a `pre_exec` hook must.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                match &steps {
                    Some(steps) => steps.apply(),
                    None => Ok(()),
                }
            });
        }
        command
    }

    /// What its process does before exec; `None` when unconfined (or applied already).
    pub(crate) fn steps(&self) -> Option<&ChildSteps> {
        self.steps.as_ref()
    }

    /// The temp dir its process is given as `TMPDIR`, when it has one of its own.
    pub(crate) fn temp(&self) -> Option<&Path> {
        self.temp.as_deref()
    }

    /// Kills every process the command still has (when it has a cgroup of its own).
    pub fn kill_all(&self) {
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill_all();
        }
    }

    /// Moves aside the protected names made at the workspace's top since it was prepared
    /// (call it once the process and all it started have ended), and says which.
    pub fn move_aside_made(&self) -> Vec<MovedAside> {
        self.absent.move_aside_made()
    }

    /// When `output` shows the sandbox stopped the command, what it denied, in one line
    /// (`write to /x denied (...)`).
    pub fn explain(&self, output: &str) -> Option<String> {
        self.explainer.as_ref()?.explain(output)
    }
}

/// The directories inside `writable` roots on the way to a `hidden` path (the root
/// included): where Landlock alone lets a command write only what existed when the run
/// started (`filesystem.rs`).
fn split_by_hidden(writable: &[PathBuf], hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut split: Vec<PathBuf> = hidden
        .iter()
        .filter_map(|h| Some((h, writable.iter().find(|w| h.starts_with(w))?)))
        .flat_map(|(h, root)| {
            h.ancestors()
                .skip(1)
                .take_while(move |a| a.starts_with(root))
                .map(Path::to_path_buf)
        })
        .collect();
    split.sort();
    split.dedup();
    split
}
