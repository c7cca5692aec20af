//! The instruction files found for a workspace, with the person's homes given.

use super::*;

/// What is found for `workspace` with no home of the person's.
fn find(workspace: &Path, hidden: &[PathBuf]) -> ProjectInstructions {
    ProjectInstructions::find_with(workspace, hidden, &Homes::default())
}

#[test]
fn files_up_to_the_repository_root_outermost_first() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let ws = repo.join("crates/app");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(dir.path().join(FILE_NAME), "outside the repository").unwrap();
    std::fs::write(repo.join(FILE_NAME), "Use cargo nextest.").unwrap();
    std::fs::write(ws.join(FILE_NAME), "This crate is the app.\n").unwrap();
    let found = find(&ws, &[]);
    assert_eq!(found.files, vec![repo.join(FILE_NAME), ws.join(FILE_NAME)]);
    assert!(!found.text.contains("outside the repository"));
    let outer = found.text.find("Use cargo nextest.").unwrap();
    let inner = found
        .text
        .find("## AGENTS.md\n\nThis crate is the app.")
        .unwrap();
    assert!(outer < inner, "{}", found.text);
    assert!(!found.truncated);
}

#[test]
fn a_link_out_of_the_repository_or_into_a_hidden_path_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (ws, home) = (dir.join("ws"), dir.join("home"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), ws.join(FILE_NAME)).unwrap();
    assert_eq!(find(&ws, &[]), ProjectInstructions::default());
    // Inside, but hidden (a workspace that holds the home directory).
    std::fs::remove_file(ws.join(FILE_NAME)).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), home.join(FILE_NAME)).unwrap();
    let found = find(&home, &[home.join(".ssh")]);
    assert!(!found.text.contains("PRIVATE KEY"), "{}", found.text);
    // A link that stays inside is read.
    std::fs::write(ws.join("docs/agents.md"), "Use tabs.").unwrap();
    std::os::unix::fs::symlink(ws.join("docs/agents.md"), ws.join(FILE_NAME)).unwrap();
    assert!(find(&ws, &[]).text.contains("Use tabs."));
}

#[test]
fn outside_a_repository_only_the_workspace_and_long_files_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(dir.path().join(FILE_NAME), "parent").unwrap();
    assert_eq!(find(&ws, &[]), ProjectInstructions::default());
    std::fs::write(ws.join(FILE_NAME), "é".repeat(MAX_BYTES)).unwrap();
    let found = find(&ws, &[]);
    assert!(found.truncated);
    assert!(found.text.len() < MAX_BYTES + 400);
}

#[test]
fn claude_code_and_codex_files_are_read_in_each_directory_with_the_persons_first() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (repo, codex, claude) = (dir.join("repo"), dir.join("codex"), dir.join("claude"));
    let ws = repo.join("app");
    for d in [
        &ws,
        &codex,
        &claude,
        &repo.join(".git"),
        &repo.join(".claude"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(codex.join(FILE_NAME), "codex base").unwrap();
    std::fs::write(codex.join(OVERRIDE), "codex override").unwrap();
    std::fs::write(claude.join("CLAUDE.md"), "claude user").unwrap();
    std::fs::write(repo.join(FILE_NAME), "repo agents").unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "repo claude").unwrap();
    std::fs::write(repo.join(".claude/CLAUDE.md"), "repo dot claude").unwrap();
    std::fs::write(ws.join("CLAUDE.local.md"), "ws local").unwrap();
    // An empty override is no override.
    std::fs::write(ws.join(OVERRIDE), "").unwrap();
    std::fs::write(ws.join(FILE_NAME), "ws agents").unwrap();
    let homes = Homes {
        codex: Some(codex.clone()),
        claude: Some(claude.clone()),
    };
    let found = ProjectInstructions::find_with(&ws, &[], &homes);
    let order = [
        "codex override",
        "claude user",
        "repo agents",
        "repo claude",
        "repo dot claude",
        "ws agents",
        "ws local",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|t| {
            found
                .text
                .find(t)
                .unwrap_or_else(|| panic!("{t}: {}", found.text))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{}", found.text);
    assert!(!found.text.contains("codex base"), "{}", found.text);
    assert_eq!(found.files.len(), 7);
    assert_eq!(found.files[0], codex.join(OVERRIDE));
    assert!(
        found.text.contains("## CLAUDE.local.md\n\nws local"),
        "{}",
        found.text
    );
}

#[test]
fn a_claude_md_imports_its_files_but_a_repositorys_never_reach_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (ws, claude, ssh) = (dir.join("ws"), dir.join("claude"), dir.join("home/.ssh"));
    for d in [&ws.join("docs"), &claude, &ssh] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(ssh.join("id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::write(claude.join(".credentials.json"), "TOKEN").unwrap();
    std::fs::write(claude.join("mine.md"), "my own notes").unwrap();
    std::fs::write(ws.join("docs/git.md"), "Rebase, never merge. See @style.md").unwrap();
    std::fs::write(ws.join("docs/style.md"), "Tabs.").unwrap();
    std::fs::write(
        ws.join("CLAUDE.md"),
        format!(
            "Read @docs/git.md and @{}/mine.md.\nNot `@docs/style.md` twice.\n@{}/id_ed25519 @{}/.credentials.json @{}/../home/.ssh/id_ed25519",
            claude.display(),
            ssh.display(),
            claude.display(),
            claude.display()
        ),
    )
    .unwrap();
    let homes = Homes {
        codex: None,
        claude: Some(claude.clone()),
    };
    let found = ProjectInstructions::find_with(&ws, &[], &homes);
    for told in ["Rebase, never merge.", "Tabs.", "my own notes"] {
        assert!(found.text.contains(told), "{told}: {}", found.text);
    }
    for secret in ["PRIVATE KEY", "TOKEN"] {
        assert!(!found.text.contains(secret), "{secret}: {}", found.text);
    }
    assert_eq!(found.files.len(), 4, "{:?}", found.files);
    // A file imported twice is told once; an import of an import follows.
    assert_eq!(found.text.matches("Tabs.").count(), 1);
    // The person's own file may import their own files wherever they are.
    std::fs::write(
        claude.join("CLAUDE.md"),
        format!("@{}/id_ed25519", ssh.display()),
    )
    .unwrap();
    std::fs::remove_file(ws.join("CLAUDE.md")).unwrap();
    let own = ProjectInstructions::find_with(&ws, &[], &homes);
    assert!(own.text.contains("PRIVATE KEY"), "{}", own.text);
}
