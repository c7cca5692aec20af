//! Commands run under each mode, the way the tools run them: what they may and may not do.

// The Linux backend's behaviour; the macOS backend's profiles are `seatbelt.rs`'s tests.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncReadExt;
use wonopcode_sandbox::test_skip::{required, skipped};
use wonopcode_sandbox::{ProcessSpec, Sandbox, SandboxMode, SandboxPolicy, Support, spawn};

/// Runs `script` in bash under `sandbox` in `workspace` both ways wonopcode starts a
/// confined process (`spawn`, as the bash tool does; a tokio command with the confinement
/// applied, as hooks and MCP servers do): its exit code and stderr, on which both agree.
async fn run(sandbox: &Sandbox, workspace: &Path, script: &str) -> (i32, String) {
    let spawned = run_spawned(sandbox, workspace, script).await;
    let applied = run_applied(sandbox, workspace, script).await;
    assert_eq!(
        spawned.0, applied.0,
        "`{script}`: spawned {spawned:?}, applied {applied:?}"
    );
    spawned
}

async fn run_spawned(sandbox: &Sandbox, workspace: &Path, script: &str) -> (i32, String) {
    let confinement = sandbox.confine(workspace).unwrap();
    let spec = ProcessSpec::script("bash", script, None, workspace);
    let mut process = spawn(&spec, Some(&confinement)).unwrap();
    let mut err = String::new();
    let mut stderr = process.stderr.take().unwrap();
    stderr.read_to_string(&mut err).await.unwrap();
    let status = process.wait().await.unwrap();
    (status.code().unwrap_or(-1), err)
}

async fn run_applied(sandbox: &Sandbox, workspace: &Path, script: &str) -> (i32, String) {
    let mut confinement = sandbox.confine(workspace).unwrap();
    let mut command = confinement.command("bash", false);
    command
        .arg("-c")
        .arg(script)
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = command.output().await.unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether user namespaces are here; a skip (a failure where CI requires them) if not.
fn namespaces() -> bool {
    let here = Support::detect().user_namespaces;
    if !here {
        skipped("namespaces", "no user namespaces here");
    }
    here
}

fn confining() -> bool {
    let support = Support::detect();
    if support.landlock() && support.seccomp {
        true
    } else {
        // CI requires it: a machine that cannot confine fails these tests there.
        skipped(
            "landlock",
            &format!("this kernel cannot confine ({support:?})"),
        );
        false
    }
}

#[tokio::test]
async fn workspace_write_keeps_writes_in_the_workspace_and_secrets_hidden() {
    if !confining() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let (ws, home, outside) = (root.join("ws"), root.join("home"), root.join("outside"));
    for dir in [&ws, &home.join(".ssh"), &outside, &ws.join(".git")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "KEY").unwrap();
    std::fs::write(outside.join("victim"), "original").unwrap();
    // The tempdir is under /tmp, which workspace-write may write: /etc stands for outside.
    let sandbox =
        Sandbox::with_home(SandboxPolicy::new(SandboxMode::WorkspaceWrite), Some(&home)).unwrap();
    assert_eq!(
        run(&sandbox, &ws, "echo ok > inside && cat inside").await.0,
        0
    );
    let (code, err) = run(
        &sandbox,
        &ws,
        &format!("cat {}/.ssh/id_ed25519", home.display()),
    )
    .await;
    assert_ne!(code, 0, "read a hidden key");
    // Landlock's denial, or, where a mount covers it (its home is in /tmp, which commands
    // may write), an empty directory to root and one of mode 000 to anyone else.
    assert!(
        err.contains("Permission denied") || err.contains("No such file"),
        "{err}"
    );
    let (code, _) = run(&sandbox, &ws, "echo x > .git/config").await;
    assert_ne!(code, 0, ".git was writable");
    let (code, err) = run(&sandbox, &ws, "echo x > /etc/wonopcode-sandbox-probe").await;
    assert_ne!(code, 0, "wrote to /etc");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(!Path::new("/etc/wonopcode-sandbox-probe").exists());
    let (code, _) = run(
        &sandbox,
        &ws,
        "echo x > /proc/self/root/etc/wonopcode-sandbox-probe",
    )
    .await;
    assert_ne!(code, 0);
    let (code, err) = run(&sandbox, &ws, "exec 3<>/dev/tcp/127.0.0.1/9").await;
    assert_ne!(code, 0, "opened a TCP socket");
    assert!(
        err.contains("not permitted") || err.contains("denied"),
        "{err}"
    );
}

#[tokio::test]
async fn read_only_writes_only_its_private_temp_dir() {
    if !confining() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::with_home(SandboxPolicy::new(SandboxMode::ReadOnly), None).unwrap();
    let (code, _) = run(&sandbox, ws.path(), "echo x > file").await;
    assert_ne!(code, 0, "read-only wrote to the workspace");
    let (code, err) = run(
        &sandbox,
        ws.path(),
        "echo x > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\"",
    )
    .await;
    assert_eq!(code, 0, "{err}");
}

/// A home under `/tmp` (as in many containers and CI jobs) puts its secrets inside a root
/// commands may write: `/tmp` must stay writable for new files all the same, and the
/// secrets hidden.
#[tokio::test]
async fn a_home_under_tmp_leaves_tmp_writable_and_its_secrets_hidden() {
    if !confining() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let (ws, home) = (root.join("ws"), root.join("home"));
    for dir in [&ws, &home.join(".ssh")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "KEY").unwrap();
    std::fs::write(home.join(".netrc"), "machine example.com password KEY").unwrap();
    let sandbox =
        Sandbox::with_home(SandboxPolicy::new(SandboxMode::WorkspaceWrite), Some(&home)).unwrap();
    if !Support::detect().user_namespaces {
        assert!(
            !required("namespaces"),
            "CI requires user namespaces and they are missing"
        );
        // Without a mount to hide them, only Landlock does, and it cannot give a directory
        // holding a secret the right to write new files: the failure is explained instead.
        let confinement = sandbox.confine(&ws).unwrap();
        let new = home.join("new");
        let said = confinement
            .explain(&format!("bash: {}: Permission denied", new.display()))
            .unwrap();
        assert!(said.contains("holds hidden"), "{said}");
        return;
    }
    let probe = format!("/tmp/wonopcode-probe-{}", std::process::id());
    for new in [probe.clone(), root.join("new").display().to_string()] {
        let (code, err) = run(
            &sandbox,
            &ws,
            &format!("echo hi > {new} && cat {new} && rm {new}"),
        )
        .await;
        assert_eq!(code, 0, "writing {new}: {err}");
    }
    for secret in [".ssh/id_ed25519", ".ssh", ".netrc"] {
        let path = home.join(secret);
        let (code, out) = run(
            &sandbox,
            &ws,
            &format!(
                "cat {0} 2>&1 >&2; ls {0} >&2; cat {0}/* >&2",
                path.display()
            ),
        )
        .await;
        assert!(!out.contains("KEY"), "read {secret} (exit {code}): {out}");
        // A hidden file is covered by `/dev/null`: what is written to it goes nowhere.
        run(
            &sandbox,
            &ws,
            &format!("echo x > {0} || echo x > {0}/planted", path.display()),
        )
        .await;
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".ssh/id_ed25519")).unwrap(),
        "KEY"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".netrc")).unwrap(),
        "machine example.com password KEY"
    );
    assert!(!home.join(".ssh/planted").exists());
}

/// With the home in a writable root, the user's own settings (wonopcode's config, Claude
/// Code's and Codex's) stay read-only: a command cannot add an MCP server, a rule or a hook
/// that the next run would obey.
#[tokio::test]
async fn a_home_under_tmp_keeps_the_users_settings_read_only() {
    if !confining() || !namespaces() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let (ws, home) = (root.join("ws"), root.join("home"));
    for dir in [&ws, &home.join(".claude"), &home.join(".config/wonopcode")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".claude/settings.json"), "{}").unwrap();
    std::fs::write(home.join(".config/wonopcode/config.yaml"), "").unwrap();
    let sandbox =
        Sandbox::with_home(SandboxPolicy::new(SandboxMode::WorkspaceWrite), Some(&home)).unwrap();
    for (script, what) in [
        (".claude/settings.json", "Claude Code's settings"),
        (".config/wonopcode/config.yaml", "wonopcode's config"),
        (".claude/agents.md", "a new file beside them"),
    ] {
        let path = home.join(script);
        let (code, err) = run(&sandbox, &ws, &format!("echo x >> {}", path.display())).await;
        assert_ne!(code, 0, "wrote {what}");
        assert!(err.contains("Read-only file system"), "{what}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
        "{}"
    );
    // The rest of the home stays writable.
    let notes = home.join("notes.txt");
    let (code, err) = run(&sandbox, &ws, &format!("echo x > {}", notes.display())).await;
    assert_eq!(code, 0, "{err}");
    // Settings edited on purpose, in a workspace of their own, stay writable there.
    let settings = home.join(".config/wonopcode");
    let (code, err) = run(&sandbox, &settings, "echo 'model: x' > config.yaml").await;
    assert_eq!(code, 0, "{err}");
}
