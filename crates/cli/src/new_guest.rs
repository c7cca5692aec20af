//! `wonopcode loops new DIR --lang LANG [--kind loop|hook]` (`--new-guest`): writes a
//! buildable guest project (`wonopcode_session::guest_project`), makes it a git repository
//! when it is not inside one, and says how to build it and then check and run a loop, or
//! configure a hook.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wonopcode_session::SessionError;
use wonopcode_session::guest_project::{self, GuestKind as Kind, GuestLanguage};

use crate::args::{GuestKind, GuestLang};
use crate::exit;
use crate::session::usage;

/// How long `git` may take to say whether the directory is in a repository, or to make one.
const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes the project; returns the exit code. `typed` is how the person asked (`loops new`,
/// `--new-guest`), which a refusal names.
pub fn create(dir: &Path, lang: GuestLang, kind: GuestKind, typed: &str) -> anyhow::Result<u8> {
    let language = match lang {
        GuestLang::Rust => GuestLanguage::Rust,
        GuestLang::Python => GuestLanguage::Python,
        GuestLang::Js => GuestLanguage::Js,
        GuestLang::C => GuestLanguage::C,
    };
    let kind = match kind {
        GuestKind::Loop => Kind::Loop,
        GuestKind::Hook => Kind::Hook,
    };
    let project = guest_project::create(dir, language, kind).map_err(|e| match e {
        SessionError::Choice(why) => usage(format!("{typed} {why}")),
        other => other.into(),
    })?;
    let repository = if git(dir, &["rev-parse", "--is-inside-work-tree"]) {
        "inside the git repository around it"
    } else if git(dir, &["init", "--quiet"]) {
        "a new git repository"
    } else {
        "not a git repository (git is not available)"
    };
    let component = dir.join(&project.component);
    println!("created {} ({repository})", dir.display());
    println!("  build:  cd {} && {}", dir.display(), project.build);
    match kind {
        Kind::Loop => {
            println!("  check:  wonopcode loops validate {}", component.display());
            println!(
                "  run:    wonopcode --agent-loop {} \"Say hello\"",
                component.display()
            );
        }
        Kind::Hook => println!(
            "  use:    a hook entry `{{type: component, component: {}}}` (README.md shows one)",
            component.display()
        ),
    }
    println!("  more:   {}", dir.join("README.md").display());
    Ok(exit::SUCCESS)
}

/// Runs `git ARGS` in `dir`, quietly, for at most [`GIT_TIMEOUT`]; whether it succeeded.
fn git(dir: &Path, args: &[&str]) -> bool {
    let Ok(mut child) = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if started.elapsed() < GIT_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}
