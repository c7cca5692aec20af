//! `--new-guest DIR --lang LANG`: writes a buildable guest project from a template
//! (`templates/` in the repository, embedded in the binary) with a copy of the host's WIT, so
//! the project builds anywhere, outside this repository too. It never writes into a
//! directory that has files.

use std::path::Path;

use anyhow::Context;

use crate::args::GuestLang;
use crate::exit;
use crate::session::usage;

/// The host's WIT package, as guests build against it.
const WIT: &[(&str, &str)] = &[
    (
        "agent-loop.wit",
        include_str!("../../../wit/agent-loop.wit"),
    ),
    ("config.wit", include_str!("../../../wit/config.wit")),
    ("context.wit", include_str!("../../../wit/context.wit")),
    (
        "custom-tool-handler.wit",
        include_str!("../../../wit/custom-tool-handler.wit"),
    ),
    (
        "custom-tools.wit",
        include_str!("../../../wit/custom-tools.wit"),
    ),
    ("providers.wit", include_str!("../../../wit/providers.wit")),
    ("resumable.wit", include_str!("../../../wit/resumable.wit")),
    ("storage.wit", include_str!("../../../wit/storage.wit")),
    ("system.wit", include_str!("../../../wit/system.wit")),
    ("tools.wit", include_str!("../../../wit/tools.wit")),
    ("types.wit", include_str!("../../../wit/types.wit")),
    ("ui.wit", include_str!("../../../wit/ui.wit")),
    ("world.wit", include_str!("../../../wit/world.wit")),
];

const RUST: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../../templates/rust/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../templates/rust/src/lib.rs"),
    ),
];

const PYTHON: &[(&str, &str)] = &[
    ("app.py", include_str!("../../../templates/python/app.py")),
    (
        "requirements.txt",
        include_str!("../../../templates/python/requirements.txt"),
    ),
    (
        "build.sh",
        include_str!("../../../templates/python/build.sh"),
    ),
];

const JS: &[(&str, &str)] = &[
    ("agent.js", include_str!("../../../templates/js/agent.js")),
    ("build.mjs", include_str!("../../../templates/js/build.mjs")),
    (
        "package.json",
        include_str!("../../../templates/js/package.json"),
    ),
];

/// A name a guest can have: lower-case ASCII letters, digits and dashes, starting with a
/// letter (it becomes a crate, a file and a loop name).
fn valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Writes the project; returns the exit code.
pub fn create(dir: &Path, lang: GuestLang) -> anyhow::Result<u8> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    if !valid_name(&name) {
        return Err(usage(format!(
            "--new-guest {}: the name `{name}` must be lower-case letters, digits and dashes, starting with a letter",
            dir.display()
        )));
    }
    if dir.exists()
        && std::fs::read_dir(dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(usage(format!(
            "--new-guest {}: the directory exists and is not empty; nothing was written",
            dir.display()
        )));
    }
    let files = match lang {
        GuestLang::Rust => RUST,
        GuestLang::Python => PYTHON,
        GuestLang::Js => JS,
    };
    let crate_name = name.replace('-', "_");
    for (rel, text) in files {
        let text = text
            .replace("{{name}}", &name)
            .replace("{{crate}}", &crate_name);
        write(&dir.join(rel), &text)?;
    }
    for (rel, text) in WIT {
        write(&dir.join("wit").join(rel), text)?;
    }
    let (build, wasm) = match lang {
        GuestLang::Rust => (
            "rustup target add wasm32-wasip2 && cargo build --release --target wasm32-wasip2"
                .to_owned(),
            format!("target/wasm32-wasip2/release/{crate_name}.wasm"),
        ),
        GuestLang::Python => (
            "python3 -m pip install -r requirements.txt && sh build.sh".to_owned(),
            format!("{name}.wasm"),
        ),
        GuestLang::Js => (
            "npm install && node build.mjs".to_owned(),
            format!("{name}.wasm"),
        ),
    };
    println!("created {}", dir.display());
    println!("  build:  cd {} && {build}", dir.display());
    println!(
        "  check:  wonopcode --validate-module --agent-loop {}/{wasm}",
        dir.display()
    );
    Ok(exit::SUCCESS)
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_lower_case_words_with_dashes() {
        assert!(valid_name("my-loop2"));
        assert!(!valid_name("My-Loop"));
        assert!(!valid_name("2loop"));
        assert!(!valid_name("a b"));
        assert!(!valid_name(""));
    }

    #[test]
    fn the_embedded_wit_is_every_file_of_the_package() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".wit"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = WIT.iter().map(|(name, _)| *name).collect();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn every_template_file_names_the_guest() {
        for files in [RUST, PYTHON, JS] {
            assert!(files.iter().any(|(_, text)| text.contains("{{name}}")));
        }
    }
}
