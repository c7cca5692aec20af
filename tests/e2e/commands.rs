//! The command line's shape: subcommands like cargo's (`run`, `loops`, `config`,
//! `completions`, `help`) beside the seed's flags, which stay as aliases.

use crate::support::{Scratch, done, stderr, text, wonopcode};
use wonopcode_wasm_host::guest_paths;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn help_is_a_command_and_groups_the_flags_with_examples() {
    for args in [&["help"][..], &["--help"][..]] {
        let out = wonopcode().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let help = stdout(&out);
        let heading = |h: &str| {
            help.find(&format!("\n{h}:\n"))
                .unwrap_or_else(|| panic!("{args:?}: no `{h}` group in\n{help}"))
        };
        // The groups, in the order a person reads them.
        let order = [
            heading("Provider"),
            heading("Loop"),
            heading("Permissions and sandbox"),
            heading("Output"),
            heading("Session"),
            heading("Examples"),
        ];
        assert!(order.is_sorted(), "{args:?}: {help}");
        assert!(help.contains("(default 4)"), "{help}");
        for command in ["run", "loops", "config", "completions", "help"] {
            assert!(
                help.lines()
                    .any(|l| l.trim_start().starts_with(&format!("{command} "))),
                "{args:?}: no `{command}` command in\n{help}"
            );
        }
    }
}

#[test]
fn run_is_the_default_command_spelled_out() {
    let s = Scratch::new();
    let t = s.transcript(
        "t.jsonl",
        &[vec![text("Hello from run."), done("end_turn")]],
    );
    for first in [&["run"][..], &[][..]] {
        let out = wonopcode()
            .args(first)
            .arg("--replay")
            .arg(&t)
            .arg("-C")
            .arg(s.ws())
            .arg("Say hello.")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{first:?}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim_end(), "Hello from run.", "{first:?}");
    }
}

#[test]
fn loops_list_and_validate_are_the_seed_flags_under_one_command() {
    let listed = wonopcode()
        .args(["loops", "list", "--json"])
        .output()
        .unwrap();
    let flagged = wonopcode()
        .args(["--list-loops", "--json"])
        .output()
        .unwrap();
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert_eq!(stdout(&listed), stdout(&flagged));

    let out = wonopcode()
        .args(["loops", "validate", guest_paths::GUEST_HELLO])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("valid: loop `hello`"),
        "{}",
        stdout(&out)
    );

    // A file that is no WebAssembly: the one failed check, nothing skipped after it.
    let s = Scratch::new();
    let junk = s.file("notes.txt", "not a module");
    let out = wonopcode()
        .args(["loops", "validate"])
        .arg(&junk)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stdout(&out);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 3, "{said}");
    assert!(
        lines[1].contains("FAIL") && lines[1].contains("is not a WebAssembly file"),
        "{said}"
    );
    assert_eq!(
        lines[2],
        "invalid: the `parse` check failed; the checks after it cannot run"
    );
    assert!(!said.contains("skip"), "{said}");

    // A name no loop has.
    let out = wonopcode()
        .args(["loops", "validate", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no agent loop named `nope`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn config_path_and_show_read_the_file_and_name_a_mistake_with_its_line() {
    let s = Scratch::new();
    let config = s.config(
        "model: my-model\nmax_iterations: 7\nprojects:\n  /src/app:\n    permissions:\n      rules: [{tool: bash, pattern: 'make*', action: allow}]\n",
    );
    let out = wonopcode()
        .args(["config", "path", "--config", &config])
        .output()
        .unwrap();
    assert_eq!(stdout(&out).trim_end(), config);
    let out = wonopcode()
        .args(["config", "show", "--config", &config])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // YAML, as it says: the settings with the defaults filled in, and the rules `p` wrote.
    let shown: serde_yaml::Value = serde_yaml::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown["model"].as_str(), Some("my-model"), "{shown:?}");
    assert_eq!(shown["max_iterations"].as_u64(), Some(7), "{shown:?}");
    assert_eq!(shown["sandbox"].as_str(), Some("workspace-write"));
    assert_eq!(shown["permissions"]["mutating"].as_str(), Some("ask"));
    let rule = &shown["projects"]["/src/app"]["permissions"]["rules"][0];
    assert_eq!(rule["pattern"].as_str(), Some("make*"), "{shown:?}");

    let bad = s.config("model: x\nmax_iterations: many\n");
    let out = wonopcode()
        .args(["config", "show", "--config", &bad])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(said.contains(&format!("{bad}:2:")), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef wonopcode"),
        ("fish", "complete -c wonopcode"),
    ] {
        let out = wonopcode().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("loops"), "{shell}");
    }
    let out = wonopcode().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
