//! A run's sandbox ([`Sandbox`]: the policy, checked against what the kernel can enforce)
//! and one process's confinement in it ([`Confinement`]: prepared before the spawn, applied
//! by the child before exec, and the process count cap and failure explanations
//! after).

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
use crate::protected::{Absent, MovedAside, Nested, protected_in};
use crate::{NetworkGrant, SandboxError, SandboxMode, SandboxPolicy};

/// The sandbox of a run: one policy, enforced on every process started under it.
pub struct Sandbox {
    policy: SandboxPolicy,
    support: &'static Support,
    home: Option<PathBuf>,
    /// `read-only`'s one writable place (removed with the sandbox).
    private_temp: Option<tempfile::TempDir>,
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

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// The sandbox of `policy`, the hidden paths under the `HOME` the process has. Refuses
    /// a confining mode the kernel cannot enforce: a sandbox is never silently weaker.
    pub fn new(policy: SandboxPolicy) -> Result<Self, SandboxError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Self::with_home(policy, home.as_deref())
    }

    /// As [`Sandbox::new`], with `home` as the home directory whose secrets are hidden.
    pub fn with_home(policy: SandboxPolicy, home: Option<&Path>) -> Result<Self, SandboxError> {
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
            home: home.and_then(|h| h.canonicalize().ok()),
            policy,
            support,
            private_temp,
            seccomp,
            prepared: parking_lot::Mutex::new(HashMap::new()),
            cgroups: Arc::default(),
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

    /// What a run says once at its start about its sandbox: that commands run unconfined,
    /// or what this machine cannot enforce of the policy.
    pub fn notices(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.policy.mode == SandboxMode::FullAccess {
            lines.push(
                "--sandbox full-access: commands run with your full rights (any file, any host)"
                    .to_owned(),
            );
            return lines;
        }
        if self.policy.mode == SandboxMode::WorkspaceWrite && !self.support.user_namespaces {
            lines.push(
                "sandbox: user namespaces are not available here, so .git stays writable"
                    .to_owned(),
            );
        }
        if self.support.process_limit == ProcessLimitKind::None {
            lines.push(
                "sandbox: no way to cap a command's processes here (no writable pids cgroup, no user namespace)"
                    .to_owned(),
            );
        }
        if !self.policy.network.is_empty()
            && !self.policy.network_unrestricted()
            && !self.support.network_ports()
        {
            lines.push(
                "sandbox: this kernel cannot filter TCP ports, so a network grant opens every port"
                    .to_owned(),
            );
        }
        lines
    }

    /// Prepares the confinement of one process whose workspace is `workspace`.
    pub fn confine(&self, workspace: &Path) -> Result<Confinement, SandboxError> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| SandboxError::Io(format!("{}: {e}", workspace.display())))?;
        if self.policy.mode == SandboxMode::FullAccess {
            return Ok(Confinement::unconfined(workspace));
        }
        let prepared = self.prepared(&workspace)?;
        let (writable, hidden) = (&prepared.writable, &prepared.hidden);
        // Per process: a `.git` may have been made since the last one.
        let read_only = self.read_only(&prepared, &workspace);
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
        let covered = self.covered(writable);
        let namespace = (self.support.user_namespaces
            && (!read_only.is_empty() || !covered.is_empty() || rlimit_cap))
            .then(|| Namespace::new(&read_only, &covered));
        let max = self.policy.max_processes;
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
            read_only,
            split: if self.support.user_namespaces {
                Vec::new()
            } else {
                split_by_hidden(writable, hidden)
            },
            hidden: hidden.clone(),
            network: !self.policy.network.is_empty(),
        };
        Ok(Confinement {
            mode: self.policy.mode,
            temp: self.private_temp.as_ref().map(|t| t.path().to_path_buf()),
            steps: Some(ChildSteps {
                cgroup: cgroup.clone(),
                namespace,
                rlimit,
                ruleset,
                seccomp: self.seccomp.clone(),
            }),
            cgroup,
            explainer: Some(explainer),
            absent: Absent::of(&workspace, &self.policy, prepared.nested.clone()),
            workspace,
        })
    }

    /// What becomes of the protected names of `workspace` from now on, for a process that
    /// was started earlier and keeps running (an MCP server): after each of its calls,
    /// [`Absent::move_aside_made`] moves aside those made during the call.
    pub fn watch_protected(&self, workspace: &Path) -> Result<Absent, SandboxError> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| SandboxError::Io(format!("{}: {e}", workspace.display())))?;
        if self.policy.mode == SandboxMode::FullAccess {
            return Ok(Absent::default());
        }
        let prepared = self.prepared(&workspace)?;
        Ok(Absent::of(
            &workspace,
            &self.policy,
            prepared.nested.clone(),
        ))
    }

    /// The protected name a file tool's write to `path` (canonical, inside `workspace`)
    /// would change, when no grant names it: such a write needs the person at the
    /// terminal, as a command the sandbox stopped does. `None` under `full-access`.
    pub fn guards_write(&self, path: &Path, workspace: &Path) -> Option<&'static str> {
        if self.policy.mode == SandboxMode::FullAccess || self.policy.granted_write(path, workspace)
        {
            return None;
        }
        protected_in(path.strip_prefix(workspace).ok()?)
    }

    /// Where commands may write: the policy's roots, and `read-only`'s private temp dir.
    fn writable(&self, workspace: &Path) -> Vec<PathBuf> {
        let mut roots = self.policy.writable_roots(workspace);
        if let Some(temp) = &self.private_temp {
            roots.extend(temp.path().canonicalize().ok());
        }
        roots.sort();
        roots.dedup();
        roots
    }

    /// Paths inside writable roots that stay read-only: the workspace's protected names
    /// ([`crate::PROTECTED`]: `.git` and what makes an agent run something) where they
    /// exist, at its top and below and at the top of the shared temp dirs, unless a grant
    /// names them, and the user's own settings where a writable root holds the home
    /// ([`crate::protected::user_settings`]). Whole directories, not the files in them: a
    /// read-only file's directory could be renamed away and made again; a mount point
    /// cannot be renamed.
    fn read_only(&self, prepared: &Prepared, workspace: &Path) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = prepared
            .nested
            .tops
            .iter()
            .filter(|path| path.symlink_metadata().is_ok())
            .cloned()
            .collect();
        if self.policy.mode == SandboxMode::WorkspaceWrite {
            paths.extend(prepared.nested.existing());
        }
        paths.extend(crate::protected::user_settings(
            self.home.as_deref(),
            &prepared.writable,
            &self.policy,
            workspace,
        ));
        paths.sort();
        paths.dedup();
        paths
    }

    /// The hidden paths inside `writable` roots, which the command's namespace covers
    /// (none where there is no namespace: Landlock hides them instead, `filesystem.rs`).
    fn covered(&self, writable: &[PathBuf]) -> Vec<PathBuf> {
        if !self.support.user_namespaces {
            return Vec::new();
        }
        self.policy
            .hidden(self.home.as_deref())
            .into_iter()
            .filter(|h| writable.iter().any(|w| h.starts_with(w)))
            .collect()
    }

    /// The workspace's `Prepared`, built on its first process.
    fn prepared(&self, workspace: &Path) -> Result<Arc<Prepared>, SandboxError> {
        let mut cache = self.prepared.lock();
        if let Some(built) = cache.get(workspace) {
            return Ok(built.clone());
        }
        let writable = self.writable(workspace);
        let hidden = self.policy.hidden(self.home.as_deref());
        let ports: Option<Vec<u16>> = (!self.policy.network_unrestricted()).then(|| {
            self.policy
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
        let nested = Nested::new(workspace, &self.policy);
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
    fn unconfined(workspace: PathBuf) -> Self {
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
