//! `bash`: run a shell command in the workspace, confined by the run's sandbox
//! (`wonopcode-sandbox`, whose `spawn` starts it without fork). The command runs in its own
//! process group; when the call ends, however it ends, that group and every process the
//! command started (also those that left the group, and all of its cgroup) are killed
//! (`call_processes`), so nothing outlives it. A command the sandbox stopped says so first,
//! and may run again unconfined when the person at the terminal approves
//! (`PermissionGate::escalate`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use wonopcode_agent_loop::checkpoint::CommandEffects;
use wonopcode_agent_loop::live_output::LiveOutput;
use wonopcode_agent_loop::{ToolEnv, ToolError, ToolOutput, parameters_of};
use wonopcode_os::own_processes;
use wonopcode_protocol::event::CommandDetails;
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};

use wonopcode_sandbox::{Confinement, ProcessSpec, Sandbox, SandboxMode};

use crate::call_processes::{self, CallProcesses};
use crate::spec::spec;

/// Default limit on one command.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest limit a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes kept of the start of each of stdout and stderr, and as many of its end (the
/// registry truncates further for the model, counting what was left out here).
const KEEP_EACH_END: usize = 512 << 10;

/// Runs shell commands.
pub struct BashTool {
    spec: ToolSpec,
    default_timeout: Duration,
    /// The longest a call may run, whatever it asks for.
    ceiling: Duration,
    /// The environment commands run with; `None`: wonopcode's own, unfiltered.
    env: Option<Arc<BTreeMap<String, String>>>,
    /// The sandbox commands run in; `None`: unconfined.
    sandbox: Option<Arc<Sandbox>>,
}

impl Default for BashTool {
    fn default() -> Self {
        Self::with_timeouts(
            Duration::from_millis(DEFAULT_TIMEOUT_MS),
            Duration::from_millis(MAX_TIMEOUT_MS),
        )
    }
}

impl BashTool {
    /// A bash tool whose calls time out after `default_timeout` unless they ask for less
    /// or more, and never run past `ceiling` (the user's limit: a call asking for more gets
    /// the ceiling).
    pub fn with_timeouts(default_timeout: Duration, ceiling: Duration) -> Self {
        let default_timeout = default_timeout.min(ceiling);
        let description = format!(
            "Run a bash command in the workspace root. Returns the exit code, stdout and stderr. The command is killed after timeout_ms (default {}, at most {}).",
            default_timeout.as_millis(),
            ceiling.as_millis()
        );
        Self {
            spec: spec(
                "bash",
                &description,
                ToolKind::Mutating,
                ToolCategory::Process,
                parameters_of::<BashArgs>(),
            ),
            default_timeout,
            ceiling,
            env: None,
            sandbox: None,
        }
    }

    /// Commands run with exactly `env` (built by a `ShellEnvironmentPolicy`), nothing of
    /// wonopcode's own environment.
    pub fn with_env(self, env: Arc<BTreeMap<String, String>>) -> Self {
        Self {
            env: Some(env),
            ..self
        }
    }

    /// Commands run confined by `sandbox` (`None`: unconfined).
    pub fn with_sandbox(self, sandbox: Option<Arc<Sandbox>>) -> Self {
        Self { sandbox, ..self }
    }
}

/// A `bash` call's arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    // The command, run by `bash -c` in the workspace root.
    #[schemars(length(min = 1))]
    command: String,
    // Milliseconds it may run before it is killed.
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    timeout_ms: Option<u64>,
}

/// What a pipe gave: its first and last `KEEP_EACH_END` bytes, and how many in between
/// were dropped.
#[derive(Default)]
struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Captured {
    fn push(&mut self, mut bytes: &[u8]) {
        let room = KEEP_EACH_END.saturating_sub(self.head.len());
        let (first, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(first);
        bytes = rest;
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(KEEP_EACH_END);
        self.tail.drain(..over);
        self.dropped += over as u64;
    }

    /// The kept bytes as text (head then tail), and how many were dropped between them.
    fn text(self) -> (String, u64) {
        let mut bytes = self.head;
        bytes.extend(self.tail);
        (String::from_utf8_lossy(&bytes).into_owned(), self.dropped)
    }
}

/// Reads a pipe to its end, keeping its real start and its real end, and showing what
/// comes as it comes (`live`).
async fn capture(mut pipe: impl AsyncRead + Unpin, live: Option<LiveOutput>) -> Captured {
    let mut kept = Captured::default();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.push(&buf[..n]);
                if let Some(live) = &live {
                    live.push(&buf[..n]);
                }
            }
        }
    }
    kept
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
    Cancelled,
}

#[async_trait]
impl wonopcode_agent_loop::TypedTool for BashTool {
    type Args = BashArgs;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn permission_subject(
        &self,
        args: &BashArgs,
        _workspace_root: &std::path::Path,
    ) -> Option<String> {
        Some(args.command.clone())
    }

    async fn run(&self, a: BashArgs, env: &ToolEnv) -> Result<ToolOutput, ToolError> {
        let timeout = a
            .timeout_ms
            .map_or(self.default_timeout, Duration::from_millis)
            .min(self.ceiling);
        // What the command changes in the workspace is recorded, to take back.
        let effects = CommandEffects::start(env).await;
        let first = self
            .execute(&a.command, timeout, env, self.sandbox.as_deref())
            .await;
        effects.end().await;
        let first = first?;
        let blocked = first.command.as_ref().and_then(|c| c.blocked.clone());
        let (Some(blocked), Some(gate)) = (blocked, &env.gate) else {
            return Ok(first);
        };
        if !gate.escalate("bash", &a.command, &blocked).await {
            return Ok(first);
        }
        let effects = CommandEffects::start(env).await;
        // The person who approved it runs this one command with their own rights.
        let again = self.execute(&a.command, timeout, env, None).await;
        effects.end().await;
        let mut again = again?;
        again.content = format!(
            "ran again outside the sandbox, with the user's approval (it had been blocked: {blocked})\n{}",
            again.content
        );
        if let Some(details) = &mut again.command {
            details.sandbox = Some(SandboxMode::FullAccess.to_string());
            details.blocked = Some(blocked);
        }
        Ok(again)
    }
}

impl BashTool {
    /// Runs `text` once, confined by `sandbox` when given.
    async fn execute(
        &self,
        text: &str,
        timeout: Duration,
        env: &ToolEnv,
        sandbox: Option<&Sandbox>,
    ) -> Result<ToolOutput, ToolError> {
        let mut spec = ProcessSpec::script("bash", text, self.env.as_deref(), &env.workspace_root);
        let marker = CallProcesses::next_marker();
        spec.set_env(call_processes::MARKER_VARIABLE, &marker);
        let confinement = match sandbox {
            Some(sandbox) => Some(
                sandbox
                    .confine(&env.workspace_root)
                    .map_err(|e| ToolError::Failed(e.to_string()))?,
            ),
            None => None,
        };
        // Started and tracked before any other call's cleanup looks: until it is tracked, the
        // new shell would look like a process that call left behind.
        let starting = own_processes::starting();
        // Killed however `run` ends, the registry dropping the call's future included.
        let mut child =
            wonopcode_sandbox::spawn(&spec, confinement.as_ref()).map_err(
                |e| match &confinement {
                    Some(c) => ToolError::Failed(format!(
                        "cannot start bash in the `{}` sandbox: {e}",
                        c.mode()
                    )),
                    None => ToolError::Failed(format!("cannot start bash: {e}")),
                },
            )?;
        let mut processes = CallProcesses::track(child.id(), marker);
        drop(starting);
        let stdout = child
            .stdout
            .take()
            .map(|p| tokio::spawn(capture(p, env.live.clone())));
        let stderr = child
            .stderr
            .take()
            .map(|p| tokio::spawn(capture(p, env.live.clone())));
        let ending = tokio::select! {
            biased;
            () = env.cancel.cancelled() => Ending::Cancelled,
            status = tokio::time::timeout(timeout, child.wait()) => match status {
                Ok(Ok(status)) => Ending::Exited(status),
                Ok(Err(e)) => return Err(ToolError::Failed(format!("waiting for bash failed: {e}"))),
                Err(_) => Ending::TimedOut(timeout),
            },
        };
        // Kill what is left (background jobs would hold the pipes open), then reap.
        processes.kill_all();
        if let Some(confinement) = &confinement {
            confinement.kill_all();
        }
        if !matches!(ending, Ending::Exited(_)) {
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
        let collect = |task: Option<tokio::task::JoinHandle<Captured>>| async move {
            match task {
                Some(t) => tokio::time::timeout(Duration::from_secs(2), t)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_default(),
                None => Captured::default(),
            }
        };
        let (out, out_dropped) = collect(stdout).await.text();
        let (err, err_dropped) = collect(stderr).await.text();
        // All of its processes have ended: what it made at the workspace's top that would
        // run something next time is moved aside now.
        let moved_aside = confinement
            .as_ref()
            .map(Confinement::move_aside_made)
            .unwrap_or_default();
        let (exit_code, headline, is_error) = match ending {
            Ending::Cancelled => return Err(ToolError::Cancelled),
            Ending::TimedOut(after) => (
                None,
                format!(
                    "timed out after {} ms; the command was killed",
                    after.as_millis()
                ),
                true,
            ),
            Ending::Exited(status) => match status.code() {
                Some(code) => (Some(code), format!("exit code: {code}"), code != 0),
                None => (None, "killed by a signal".to_owned(), true),
            },
        };
        // A failure the sandbox caused says so first: the model should not retry blindly.
        let blocked = match &confinement {
            Some(confinement) if is_error => confinement.explain(&format!("{err}\n{out}")),
            _ => None,
        };
        let mut content = match &blocked {
            Some(what) => format!("blocked by the sandbox: {what}\n{headline}"),
            None => headline,
        };
        for moved in &moved_aside {
            tracing::warn!(call = %text, "{moved}");
            content.push_str(&format!("\nblocked by the sandbox: {moved}"));
        }
        if !out.is_empty() {
            content.push_str("\nstdout:\n");
            content.push_str(&out);
        }
        if !err.is_empty() {
            content.push_str("\nstderr:\n");
            content.push_str(&err);
        }
        Ok(ToolOutput {
            content,
            // What it made was taken back: it did not do what it meant to.
            is_error: is_error || !moved_aside.is_empty(),
            command: Some(CommandDetails {
                command: text.to_owned(),
                exit_code,
                sandbox: confinement.as_ref().map(|c| c.mode().to_string()),
                blocked,
            }),
            omitted_bytes: out_dropped + err_dropped,
            ..ToolOutput::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    // The calls as the registry makes them: JSON, through the blanket `Tool`.
    use wonopcode_agent_loop::Tool;

    fn env() -> ToolEnv {
        ToolEnv::outside_a_run(std::env::temp_dir())
    }

    #[tokio::test]
    async fn captures_exit_code_and_streams() {
        let out = BashTool::default()
            .run(json!({"command": "echo hi; echo oops >&2; exit 3"}), &env())
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(out.content.starts_with("exit code: 3"), "{}", out.content);
        assert!(out.content.contains("stdout:\nhi"));
        assert!(out.content.contains("stderr:\noops"));
    }

    /// Processes whose command line is exactly `sleep SECONDS`, and whether any is a zombie.
    fn sleeping(seconds: &str) -> Vec<(String, bool)> {
        let wanted = format!("sleep\0{seconds}\0");
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes())
            })
            .map(|e| {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    stat.contains(") Z "),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn processes_that_leave_the_group_end_with_the_call() {
        for (command, seconds) in [
            ("setsid sleep 7781 &", "7781"),
            ("(sleep 7782 &);", "7782"),
            ("nohup sleep 7783 >/dev/null 2>&1 &", "7783"),
            ("env -i /usr/bin/setsid /bin/sleep 7784 &", "7784"),
            (
                "setsid bash -c '(setsid sleep 7785 &); sleep 7785' &",
                "7785",
            ),
        ] {
            // The pause lets the escape happen before the call ends.
            let command = format!("{command} sleep 0.3");
            let out = BashTool::default()
                .run(json!({ "command": command }), &env())
                .await
                .unwrap();
            assert!(!out.is_error, "{command}: {}", out.content);
            assert!(
                sleeping(seconds).is_empty(),
                "{command}: {:?}",
                sleeping(seconds)
            );
        }
    }

    #[tokio::test]
    async fn wonopcodes_own_processes_started_during_a_call_are_left_alone() {
        let call = tokio::spawn(async {
            BashTool::default()
                .run(json!({"command": "sleep 0.5"}), &env())
                .await
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        // Started while the call runs, as a server restarted by a parallel context would be.
        let starting = own_processes::starting();
        let mut own = std::process::Command::new("sleep")
            .arg("7797")
            .spawn()
            .unwrap();
        let mark = own_processes::Own::new(own.id());
        drop(starting);
        call.await.unwrap().unwrap();
        assert!(
            own.try_wait().unwrap().is_none(),
            "an own process was killed"
        );
        drop(mark);
        own.kill().unwrap();
        own.wait().unwrap();
    }

    /// One call's cleanup runs while other calls start their shells: none of them is taken
    /// for a process the ending call left behind.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn calls_starting_while_another_ends_are_not_killed() {
        let calls: Vec<_> = (0..8)
            .map(|_| {
                tokio::spawn(async move {
                    let mut outs = Vec::new();
                    for _ in 0..25 {
                        outs.push(
                            BashTool::default()
                                .run(json!({"command": "true"}), &env())
                                .await,
                        );
                    }
                    outs
                })
            })
            .collect();
        for call in calls {
            for out in call.await.unwrap() {
                let out = out.unwrap();
                assert!(!out.is_error, "{}", out.content);
            }
        }
    }

    #[tokio::test]
    async fn a_cancelled_call_leaves_no_process_behind() {
        let env = env();
        let cancel = env.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        });
        let result = BashTool::default()
            .run(json!({"command": "setsid sleep 7791 & sleep 7792"}), &env)
            .await;
        assert!(matches!(result, Err(ToolError::Cancelled)));
        assert!(sleeping("7791").is_empty(), "{:?}", sleeping("7791"));
        assert!(sleeping("7792").is_empty(), "{:?}", sleeping("7792"));
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let started = std::time::Instant::now();
        let out = BashTool::default()
            .run(
                json!({"command": "sleep 30 & sleep 30; echo never", "timeout_ms": 200}),
                &env(),
            )
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(
            out.content.contains("timed out after 200 ms"),
            "{}",
            out.content
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn cancellation_stops_the_command() {
        let e = env();
        let cancel = e.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let r = BashTool::default()
            .run(json!({"command": "sleep 30"}), &e)
            .await;
        assert_eq!(r, Err(ToolError::Cancelled));
        assert!(started.elapsed() < Duration::from_secs(3));
    }
}
