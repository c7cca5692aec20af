//! Running one command hook: `sh -c COMMAND` in the workspace with the event's JSON on stdin,
//! confined by the run's sandbox like any command the model runs, killed at its timeout,
//! with whatever it left running.
//! What it prints is kept up to a bound, so a hook that floods its pipes cannot grow the host.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use wonopcode_os::own_processes;
use wonopcode_sandbox::{ProcessSpec, Sandbox};

/// The most of a hook's stdout or stderr that is kept.
const KEPT_BYTES: usize = 1 << 20;

/// Where hooks run: the workspace, the environment commands get, the run's sandbox.
#[derive(Clone, Default)]
pub struct HookEnv {
    /// The workspace (the hook's working directory, `CLAUDE_PROJECT_DIR`).
    pub workspace: PathBuf,
    /// The environment commands run with (the run's secrets left out); `None`: inherited.
    pub env: Option<Arc<BTreeMap<String, String>>>,
    /// The run's sandbox; `None`: unconfined.
    pub sandbox: Option<Arc<Sandbox>>,
}

/// How a hook's process ended.
#[derive(Debug)]
pub enum Ran {
    /// It exited (`code` is `None` when a signal killed it).
    Exited {
        /// Its exit code.
        code: Option<i32>,
        /// What it printed on stdout.
        stdout: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// It ran past its timeout and was killed.
    TimedOut(Duration),
    /// It could not be started.
    NotStarted(String),
}

/// Runs the hook `command` with `input` on its stdin, for at most `timeout`; also what runs
/// any short command of the host's own as hooks run (confined, timed, bounded).
pub async fn run(
    command_line: &str,
    timeout: Duration,
    input: &[u8],
    env: &HookEnv,
    context: &str,
) -> Ran {
    let mut spec = ProcessSpec::script("sh", command_line, env.env.as_deref(), &env.workspace);
    spec.set_env("CLAUDE_PROJECT_DIR", &env.workspace);
    spec.set_env("WONOPCODE_PROJECT_DIR", &env.workspace);
    spec.set_env("WONOPCODE_CONTEXT", context);
    spec.piped_stdin = true;
    let confinement = match &env.sandbox {
        Some(sandbox) => match sandbox.confine(&env.workspace) {
            Ok(c) => Some(c),
            Err(e) => return Ran::NotStarted(format!("the sandbox: {e}")),
        },
        None => None,
    };
    let starting = own_processes::starting();
    let mut child = match wonopcode_sandbox::spawn(&spec, confinement.as_ref()) {
        Ok(child) => child,
        Err(e) => return Ran::NotStarted(e.to_string()),
    };
    // Not a leftover of a `bash` call that ends while the hook runs.
    let _own = own_processes::Own::new(child.id());
    drop(starting);
    let stdin = child.stdin.take();
    let input = input.to_vec();
    // A hook that never reads its stdin must not stall the host: written on a task of its
    // own, and dropped (closed) once written.
    let feeding = tokio::spawn(async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input).await;
        }
    });
    let stdout = child.stdout.take().map(|p| tokio::spawn(kept(p)));
    let stderr = child.stderr.take().map(|p| tokio::spawn(kept(p)));
    let group = i32::try_from(child.id()).ok();
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    feeding.abort();
    // What the hook left running goes with it: its process group (`cmd &`), and, confined,
    // everything in its cgroup (a daemon that left the group too).
    if let Some(group) = group {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    if let Some(confinement) = &confinement {
        confinement.kill_all();
        for moved in confinement.move_aside_made() {
            tracing::warn!(hook = %command_line, "{moved}");
        }
    }
    let status = match waited {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return Ran::NotStarted(format!("waiting for it failed: {e}")),
        Err(_) => {
            child.kill();
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            return Ran::TimedOut(timeout);
        }
    };
    let text = |task: Option<tokio::task::JoinHandle<Vec<u8>>>| async move {
        let bytes = match task {
            Some(t) => tokio::time::timeout(Duration::from_secs(2), t)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => Vec::new(),
        };
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Ran::Exited {
        code: status.code(),
        stdout: text(stdout).await,
        stderr: text(stderr).await,
    }
}

/// Reads a pipe to its end, keeping at most [`KEPT_BYTES`] of it.
async fn kept(mut pipe: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                let room = KEPT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether process `pid` is gone (or a zombie waiting to be reaped).
    fn gone(pid: &str) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    #[tokio::test]
    async fn what_a_hook_leaves_running_in_its_group_is_killed_with_it() {
        let workspace = tempfile::tempdir().unwrap();
        let env = HookEnv {
            workspace: workspace.path().to_path_buf(),
            ..HookEnv::default()
        };
        let ran = run(
            "sleep 30 >/dev/null 2>&1 & echo $!",
            Duration::from_secs(10),
            b"{}",
            &env,
            "0",
        )
        .await;
        let Ran::Exited {
            code: Some(0),
            stdout,
            ..
        } = ran
        else {
            panic!("{ran:?}");
        };
        let pid = stdout.trim();
        // The kill is sent before `run` returns; the kernel may take a moment to end it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !gone(pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            gone(pid),
            "the hook's background `sleep` ({pid}) still runs"
        );
    }
}
