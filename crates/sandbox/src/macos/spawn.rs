//! Starting a command's process on macOS: through tokio's own spawn, under `sandbox-exec`
//! when confined, leading a session of its own, its stdio pipes the same types as on Linux.

use std::io;
use std::process::{ExitStatus, Stdio};

use tokio::net::unix::pipe;

use super::confine::{Confinement, own_session};
use crate::ProcessSpec;

/// A started process: its output pipes, and waiting for its end.
#[derive(Debug)]
pub struct Process {
    child: tokio::process::Child,
    pid: u32,
    /// Whether it was waited for.
    reaped: bool,
    /// The write end of its stdin, when piped (drop it to close the stdin).
    pub stdin: Option<pipe::Sender>,
    /// The read end of its stdout.
    pub stdout: Option<pipe::Receiver>,
    /// The read end of its stderr.
    pub stderr: Option<pipe::Receiver>,
}

/// Starts `spec`, confined by `confinement` when given (under its profile, with `TMPDIR`
/// where it has a temp dir of its own). Must be called inside a tokio runtime.
pub fn spawn(spec: &ProcessSpec, confinement: Option<&Confinement>) -> io::Result<Process> {
    let mut spec = spec.clone();
    if let Some(temp) = confinement.and_then(Confinement::temp) {
        spec.set_env("TMPDIR", temp);
    }
    let line = match confinement {
        Some(confinement) => confinement.wrapped(&spec.program, &spec.args),
        None => std::iter::once(spec.program.clone())
            .chain(spec.args.iter().cloned())
            .collect(),
    };
    let mut command = tokio::process::Command::new(&line[0]);
    command
        .args(&line[1..])
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.dir)
        .stdin(if spec.piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    own_session(&mut command);
    let mut child = command.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the process ended before it was seen"))?;
    let stdin = child
        .stdin
        .take()
        .map(|s| s.into_owned_fd().and_then(pipe::Sender::from_owned_fd))
        .transpose()?;
    let stdout = child
        .stdout
        .take()
        .map(|s| s.into_owned_fd().and_then(pipe::Receiver::from_owned_fd))
        .transpose()?;
    let stderr = child
        .stderr
        .take()
        .map(|s| s.into_owned_fd().and_then(pipe::Receiver::from_owned_fd))
        .transpose()?;
    Ok(Process {
        child,
        pid,
        reaped: false,
        stdin,
        stdout,
        stderr,
    })
}

impl Process {
    /// Its process id (also its process group's).
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Waits for it to end, and reaps it.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        if self.reaped {
            return Err(io::Error::other("the process was waited for already"));
        }
        let status = self.child.wait().await?;
        self.reaped = true;
        Ok(status)
    }

    /// Sends it `SIGKILL` (nothing once it was waited for).
    pub fn kill(&self) {
        if !self.reaped
            && let Ok(pid) = libc::pid_t::try_from(self.pid)
        {
            // SAFETY: kill takes no pointer; the id is still its own until it is reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}
