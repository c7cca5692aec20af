//! Workspace trust at the terminal: the question a run asks before it uses what a workspace
//! would run, and `wonopcode trust [DIR] | --show | --list | --revoke DIR`. The rules (what
//! counts, the digest, the trust file) are `wonopcode_session::trust`'s.

use std::io::IsTerminal;
use std::path::Path;

use indicatif::MultiProgress;
use wonopcode_session::trust::{TrustStatus, TrustStore, WorkspaceExecutables, one_line};

use crate::args::TrustArgs;
use crate::exit;
use crate::session::workspace_root;

/// The trust file, or why there is none.
fn store() -> anyhow::Result<TrustStore> {
    TrustStore::standard().ok_or_else(|| {
        anyhow::anyhow!("this machine has no config directory to keep trusted workspaces in (set HOME or XDG_CONFIG_HOME)")
    })
}

/// What `root` would run: a heading and one indented line each.
fn shown(root: &Path, found: &WorkspaceExecutables) -> String {
    let mut text = format!(
        "{} would run, once trusted:\n",
        one_line(&root.display().to_string())
    );
    for line in &found.lines {
        text.push_str(&format!("  {line}\n"));
    }
    text
}

/// Whether a run in `root` uses the workspace's executable files: `--trust-workspace`, the
/// trust file, or — on a terminal, when the workspace would run something it was not
/// trusted with — the person's answer (a yes is kept in the trust file).
pub async fn decide(root: &Path, flag: bool) -> anyhow::Result<bool> {
    if flag {
        return Ok(true);
    }
    let found = WorkspaceExecutables::scan(root);
    if found.is_empty() {
        return Ok(false);
    }
    let Some(store) = TrustStore::standard() else {
        return Ok(false);
    };
    let status = match store.status(root, &found) {
        Ok(status) => status,
        // The session says what is wrong with the file in its notices.
        Err(_) => return Ok(false),
    };
    if status == TrustStatus::Trusted {
        return Ok(true);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(false);
    }
    if status == TrustStatus::Changed {
        eprintln!("What this workspace would run has changed since you trusted it.");
    }
    eprint!("{}", shown(root, &found));
    let yes = crate::prompter::confirm(
        "Trust this workspace and run these? [y/N] ".to_owned(),
        MultiProgress::new(),
    )
    .await;
    if yes {
        store.trust(root, &found)?;
    }
    Ok(yes)
}

/// Runs `wonopcode trust ...`; the exit code.
pub fn run(args: &TrustArgs) -> anyhow::Result<u8> {
    let store = store()?;
    if args.list {
        let trusted = store.list()?;
        if trusted.is_empty() {
            println!("no trusted workspaces ({})", store.path().display());
        }
        for (dir, entry) in trusted {
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(entry.trusted_at);
            println!(
                "{}\ttrusted {}",
                one_line(&dir.display().to_string()),
                humantime::format_rfc3339_seconds(when)
            );
        }
        return Ok(exit::SUCCESS);
    }
    if let Some(dir) = &args.revoke {
        // A directory removed since is still forgotten by the path it was trusted as.
        let root = dir.canonicalize().or_else(|_| std::path::absolute(dir))?;
        if store.revoke(&root)? {
            println!("{} is no longer trusted", root.display());
        } else {
            println!("{} was not trusted", root.display());
        }
        return Ok(exit::SUCCESS);
    }
    let root = workspace_root(args.dir.as_deref())?;
    let found = WorkspaceExecutables::scan(&root);
    let status = store.status(&root, &found)?;
    if args.show {
        if found.is_empty() {
            println!(
                "{}: runs nothing of its own (no trust needed)",
                root.display()
            );
            return Ok(exit::SUCCESS);
        }
        print!("{}", shown(&root, &found));
        println!(
            "{}: {}",
            root.display(),
            match status {
                TrustStatus::Trusted => "trusted",
                TrustStatus::Changed =>
                    "trusted once, but what it would run has changed: not trusted",
                TrustStatus::Unknown => "not trusted",
            }
        );
        return Ok(exit::SUCCESS);
    }
    if !found.is_empty() {
        print!("{}", shown(&root, &found));
    }
    store.trust(&root, &found)?;
    println!("{} is trusted", root.display());
    Ok(exit::SUCCESS)
}
