//! The path guard and the rules that see its paths, checked against the system: generated
//! paths with `.`, `..`, repeated and trailing separators, absolute forms and symlinks (inside
//! the workspace, out of it, dangling) must resolve where `std::fs::canonicalize` says they
//! lead, or be refused when that is outside the workspace. The safe opener
//! (`wonopcode_os::beneath`) is held against the same paths: what the guard resolves to
//! an existing file inside opens to that file, and nothing it opens, however the path was
//! typed, is outside the workspace.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use wonopcode_os::beneath::{Access, open};
use wonopcode_tools::permission::{Action, Rule};
use wonopcode_tools::workspace::{resolve, rule_subject};

/// A workspace with files, directories and symlinks of every kind, and a secret beside it.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(root.join("a/b/file.txt"), "f").unwrap();
    std::fs::write(root.join("a/c.txt"), "c").unwrap();
    std::fs::write(root.join(".env"), "e").unwrap();
    std::fs::write(base.join("outside/secret.txt"), "s").unwrap();
    let link = |target: &Path, name: &str| std::os::unix::fs::symlink(target, root.join(name));
    link(Path::new("a/b"), "link_in").unwrap();
    link(&root.join("a"), "link_abs_in").unwrap();
    link(&base.join("outside"), "link_out").unwrap();
    link(&root.join("nowhere"), "dangling").unwrap();
    link(Path::new("../outside/secret.txt"), "a/secret_link").unwrap();
    Tree { _dir: dir, root }
}

const NAMES: &[&str] = &[
    "a",
    "b",
    "file.txt",
    "c.txt",
    ".env",
    "link_in",
    "link_abs_in",
    "link_out",
    "dangling",
    "secret_link",
    "outside",
    "new",
    ".",
    "..",
];

/// The file an open descriptor is, as the kernel names it.
fn opened(file: &std::fs::File) -> PathBuf {
    let fd = std::os::fd::AsRawFd::as_raw_fd(file);
    std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap()
}

/// A path as a model might type it.
fn typed_path() -> impl Strategy<Value = (bool, Vec<&'static str>, Vec<&'static str>, bool)> {
    (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(NAMES), 1..6),
        prop::collection::vec(prop::sample::select(&["/", "//", "/./"][..]), 6),
        any::<bool>(),
    )
}

fn render(
    root: &Path,
    absolute: bool,
    names: &[&str],
    separators: &[&str],
    trailing: bool,
) -> String {
    let mut text = if absolute {
        format!("{}/", root.display())
    } else {
        String::new()
    };
    for (at, name) in names.iter().enumerate() {
        if at > 0 {
            text.push_str(separators[at % separators.len()]);
        }
        text.push_str(name);
    }
    if trailing {
        text.push('/');
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_safe_opener_opens_what_the_guard_resolves_and_nothing_outside(
        (absolute, names, separators, trailing) in typed_path()
    ) {
        let tree = tree();
        let root = &tree.root;
        let typed = render(root, absolute, &names, &separators, trailing);
        // The guard's path of an existing regular file inside opens, to that very file.
        if let Ok(path) = resolve(root, &typed)
            && path.is_file()
        {
            let file = open(root, &path, Access::Read);
            prop_assert!(file.is_ok(), "{} -> {}: {:?}", typed, path.display(), file.as_ref().err());
            let file = file.unwrap();
            prop_assert_eq!(opened(&file), path);
        }
        // Whatever it is given as typed, what it opens is inside.
        let joined = if absolute { PathBuf::from(&typed) } else { root.join(&typed) };
        if let Ok(file) = open(root, &joined, Access::Read) {
            let real = opened(&file);
            prop_assert!(real.starts_with(root), "{} opened {}", typed, real.display());
        }
    }

    #[test]
    fn paths_resolve_where_the_system_says_or_are_refused(
        (absolute, names, separators, trailing) in typed_path()
    ) {
        let tree = tree();
        let root = &tree.root;
        let typed = render(root, absolute, &names, &separators, trailing);
        let resolved = resolve(root, &typed);
        match std::fs::canonicalize(root.join(&typed)) {
            // An existing path: the guard agrees with the system, inside or out.
            Ok(real) if real.starts_with(root) => {
                prop_assert_eq!(resolved.as_ref().ok(), Some(&real), "{}", typed);
                let subject = rule_subject(root, &typed);
                let relative = real.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                prop_assert_eq!(&subject, if relative.is_empty() { "." } else { &relative });
                // A rule sees where the path leads, however it was typed.
                let denied = Rule::parse("read:a/**", Action::Deny).unwrap();
                prop_assert_eq!(
                    denied.matches("read", Some(&subject)),
                    relative.starts_with("a/"),
                    "{} -> {}", typed, subject
                );
                let env = Rule::parse("read:.env", Action::Deny).unwrap();
                prop_assert_eq!(env.matches("read", Some(&subject)), relative == ".env");
            }
            Ok(real) => prop_assert!(resolved.is_err(), "{} -> {:?} (really {})", typed, resolved, real.display()),
            // Not there (yet): whatever is accepted stays inside, through real directories.
            Err(_) => {
                if let Ok(path) = resolved {
                    prop_assert!(path.starts_with(root), "{} -> {}", typed, path.display());
                    let mut ancestor = path.as_path();
                    while !ancestor.exists() {
                        ancestor = ancestor.parent().unwrap();
                    }
                    let real = std::fs::canonicalize(ancestor).unwrap();
                    prop_assert!(real.starts_with(root), "{} -> {}", typed, real.display());
                    // What exists is named by its real path (`file/` is the file).
                    if path.exists() {
                        prop_assert_eq!(std::fs::canonicalize(&path).unwrap(), path.clone(), "{}", typed);
                    }
                }
            }
        }
    }
}
