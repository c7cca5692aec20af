//! Starting processes without fork: what the child gets, what a failure gives, and that
//! nothing of wonopcode's is disturbed while children share its memory.

// The Linux backend's behaviour; the macOS backend's profiles are `seatbelt.rs`'s tests.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wonopcode_sandbox::{Process, ProcessSpec, Sandbox, SandboxMode, SandboxPolicy, spawn};

fn bash(script: &str, dir: &Path) -> ProcessSpec {
    ProcessSpec::script("bash", script, None, dir)
}

/// Its exit code, stdout and stderr.
async fn output(mut process: Process) -> (Option<i32>, String, String) {
    let (mut out, mut err) = (String::new(), String::new());
    let mut stdout = process.stdout.take().unwrap();
    let mut stderr = process.stderr.take().unwrap();
    let (read_out, read_err) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    read_out.unwrap();
    read_err.unwrap();
    let status = process.wait().await.unwrap();
    (status.code(), out, err)
}

#[tokio::test]
async fn runs_in_its_directory_with_its_environment_and_own_group() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let mut spec = bash(
        "pwd; echo \"$WONOPCODE_SPAWN_TEST\"; echo oops >&2; [ \"$(cut -d' ' -f5 /proc/$$/stat)\" = $$ ] && echo leader; read line; echo \"stdin:$line\"; exit 3",
        &dir,
    );
    spec.set_env("WONOPCODE_SPAWN_TEST", "value with spaces");
    let (code, out, err) = output(spawn(&spec, None).unwrap()).await;
    assert_eq!(code, Some(3));
    assert_eq!(
        out,
        format!("{}\nvalue with spaces\nleader\nstdin:\n", dir.display())
    );
    assert_eq!(err, "oops\n");
}

#[tokio::test]
async fn a_piped_stdin_reaches_the_command_and_ends_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = bash("cat; echo end", dir.path());
    spec.piped_stdin = true;
    let mut process = spawn(&spec, None).unwrap();
    let mut stdin = process.stdin.take().unwrap();
    stdin.write_all(b"the event\n").await.unwrap();
    drop(stdin);
    let (code, out, _) = output(process).await;
    assert_eq!((code, out.as_str()), (Some(0), "the event\nend\n"));
}

#[tokio::test]
async fn the_child_gets_the_signal_state_a_std_command_gives() {
    // wonopcode ignores SIGPIPE (as every Rust program does) and blocks every signal while
    // it clones; a command gets neither, as with `std::process::Command`: no signal
    // blocked, and of the standard signals only those wonopcode's own parent made it
    // ignore. (glibc's own real-time signals, 32 and 33, are left to glibc.)
    let dir = tempfile::tempdir().unwrap();
    let script = "grep -E '^(SigBlk|SigIgn):' /proc/self/status";
    let (code, out, _) = output(spawn(&bash(script, dir.path()), None).unwrap()).await;
    assert_eq!(code, Some(0));
    let std = std::process::Command::new("bash")
        .args(["-c", script])
        .output()
        .unwrap();
    let std = String::from_utf8_lossy(&std.stdout);
    let standard = |status: &str, field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .map(|mask| mask & 0x7fff_ffff)
    };
    assert_eq!(standard(&out, "SigBlk:"), Some(0), "{out}");
    let ignored = standard(&out, "SigIgn:");
    assert_eq!(ignored, standard(&std, "SigIgn:"), "{out} against {std}");
    assert_eq!(
        ignored.unwrap() & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE ignored: {out}"
    );
}

#[tokio::test]
async fn a_relative_path_entry_is_looked_up_from_the_commands_directory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    let script = dir.path().join("tools/hello");
    std::fs::write(&script, "#!/bin/sh\necho \"hello from $(pwd)\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = ProcessSpec {
        program: "hello".into(),
        args: Vec::new(),
        env: vec![("PATH".into(), "tools:/usr/bin:/bin".into())],
        dir: dir.path().to_path_buf(),
        piped_stdin: false,
    };
    let (code, out, err) = output(spawn(&spec, None).unwrap()).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, format!("hello from {}\n", dir.path().display()));
}

#[tokio::test]
async fn a_missing_program_or_directory_is_an_error_and_leaves_no_child() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = bash("true", dir.path());
    spec.program = "wonopcode-no-such-program".into();
    let error = spawn(&spec, None).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    assert!(error.to_string().contains("not on PATH"), "{error}");

    let spec = bash("true", &dir.path().join("gone"));
    let error = spawn(&spec, None).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::ENOENT), "{error}");
    assert_no_zombie_stays().await;
}

#[tokio::test]
async fn a_killed_process_says_so_and_a_dropped_one_is_killed_and_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let mut process = spawn(&bash("sleep 30", dir.path()), None).unwrap();
    process.kill();
    let status = process.wait().await.unwrap();
    assert_eq!(status.code(), None);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );

    let process = spawn(&bash("sleep 30", dir.path()), None).unwrap();
    let pid = process.id();
    drop(process);
    let proc_dir = format!("/proc/{pid}");
    for _ in 0..200 {
        if !Path::new(&proc_dir).exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} outlived its drop");
}

/// Many children started from several threads at once, confined, while other threads
/// allocate and free: each gets its own arguments and its own result, and wonopcode's
/// memory is intact (a child writing to it would show as a wrong output or a crash).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_confined_spawns_share_memory_safely() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite);
    let sandbox = match Sandbox::with_home(policy, None) {
        Ok(sandbox) => std::sync::Arc::new(sandbox),
        Err(e) => {
            // CI requires it: a machine that cannot confine fails this test there.
            wonopcode_sandbox::test_skip::skipped(
                "landlock",
                &format!("the sandbox cannot be made: {e}"),
            );
            return;
        }
    };
    let churn = tokio::task::spawn_blocking(|| {
        let mut kept: Vec<Vec<u64>> = Vec::new();
        for i in 0..20_000u64 {
            kept.push(vec![i; 64]);
            if kept.len() > 100 {
                kept.remove(0);
            }
        }
        kept.iter().all(|v| v.iter().all(|x| *x == v[0]))
    });
    let mut tasks = Vec::new();
    for task in 0..8 {
        let (sandbox, dir) = (sandbox.clone(), dir.clone());
        tasks.push(tokio::spawn(async move {
            for call in 0..15 {
                let confinement = sandbox.confine(&dir).unwrap();
                let spec = bash(&format!("echo {task}-{call}"), &dir);
                let (code, out, err) = output(spawn(&spec, Some(&confinement)).unwrap()).await;
                assert_eq!(
                    (code, out.as_str()),
                    (Some(0), format!("{task}-{call}\n").as_str()),
                    "{err}"
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert!(churn.await.unwrap());
    assert_no_zombie_stays().await;
}

/// No child of this test process stays a zombie: one may be seen for a moment while
/// another test's child is being reaped, never for long.
async fn assert_no_zombie_stays() {
    for _ in 0..200 {
        if zombies() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("a child was left a zombie");
}

/// This test process's children that ended and were not reaped.
fn zombies() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = after.split_whitespace().collect();
            fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str())
        })
        .count()
}
