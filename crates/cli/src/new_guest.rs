//! `--new-guest DIR --lang LANG`: writes a buildable guest project
//! (`wonopcode_session::guest_project`) and says how to build and check it.

use std::path::Path;

use wonopcode_session::SessionError;
use wonopcode_session::guest_project::{self, GuestLanguage};

use crate::args::GuestLang;
use crate::exit;
use crate::session::usage;

/// Writes the project; returns the exit code.
pub fn create(dir: &Path, lang: GuestLang) -> anyhow::Result<u8> {
    let language = match lang {
        GuestLang::Rust => GuestLanguage::Rust,
        GuestLang::Python => GuestLanguage::Python,
        GuestLang::Js => GuestLanguage::Js,
    };
    let project = guest_project::create(dir, language).map_err(|e| match e {
        SessionError::Choice(why) => usage(format!("--new-guest {why}")),
        other => other.into(),
    })?;
    println!("created {}", dir.display());
    println!("  build:  cd {} && {}", dir.display(), project.build);
    println!(
        "  check:  wonopcode --validate-module --agent-loop {}",
        dir.join(&project.component).display()
    );
    Ok(exit::SUCCESS)
}
