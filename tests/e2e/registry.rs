//! Named loops: discovery from a temporary XDG config/data/cache, `--list-loops`,
//! `--validate-module`, `--agent-loop-name`, and their bad inputs.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wonopcode_wasm_host::guest_paths;

use crate::support::{Scratch, copy_dir, repo_root, stderr, wonopcode};

/// A home for named loops: XDG config, data and cache directories in a temporary dir.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let home = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(home.loops()).unwrap();
        home
    }

    /// `$XDG_CONFIG_HOME/wonopcode/agent-loops`.
    fn loops(&self) -> PathBuf {
        self.dir.path().join("config/wonopcode/agent-loops")
    }

    fn registry(&self, yaml: &str) {
        std::fs::write(self.loops().join("registry.yaml"), yaml).unwrap();
    }

    fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = wonopcode();
        cmd.env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env_remove("WONOPCODE_AGENT_LOOPS_PATH");
        cmd
    }

    fn list_json(&self, extra: &[&str]) -> Value {
        let out = self
            .cmd()
            .args(["--list-loops", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn entry<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["loops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {listing}"))
}

fn copy(from: &str, to: &Path) {
    std::fs::copy(from, to).unwrap();
}

#[test]
fn list_loops_shows_builtins_registry_and_directory_entries() {
    let home = Home::new();
    let extra = tempfile::tempdir().unwrap();
    home.registry(&format!(
        "modules:\n  seed:\n    path: {}\n    description: built against the seed's text\n    version: '0.2.0'\n  missing:\n    path: gone.wasm\n  hello:\n    path: hello.wasm\n",
        guest_paths::SEED_0_2_0
    ));
    copy(guest_paths::GUEST_HELLO, &home.loops().join("hello.wasm"));
    std::fs::write(home.loops().join("junk.wasm"), "not wasm at all").unwrap();
    // A second `hello` in a --loops-dir: searched first, so it wins; the registry's is shadowed.
    copy(guest_paths::MISBEHAVE, &extra.path().join("hello.wasm"));
    let listing = home.list_json(&["--loops-dir", extra.path().to_str().unwrap()]);

    let names: Vec<&str> = listing["loops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["standard", "default", "hello", "seed", "missing", "junk"]
    );
    assert_eq!(entry(&listing, "standard")["location"]["kind"], "native");
    assert_eq!(
        entry(&listing, "default")["metadata"]["status"]["status"],
        "ok"
    );
    let seed = entry(&listing, "seed");
    assert_eq!(seed["source"]["kind"], "registry");
    assert_eq!(seed["version"], "0.2.0");
    assert_eq!(seed["metadata"]["wit_version"], "0.2.0");
    assert_eq!(seed["metadata"]["status"]["status"], "ok");
    let hello = entry(&listing, "hello");
    assert_eq!(hello["source"]["kind"], "directory");
    assert_eq!(hello["metadata"]["loop_name"], "misbehave");
    let shadows = hello["shadows"].as_array().unwrap();
    assert_eq!(shadows.len(), 1, "{hello}");
    assert_eq!(shadows[0]["source"]["kind"], "registry");
    assert_eq!(shadows[0]["metadata"]["loop_name"], "hello");
    let missing = entry(&listing, "missing")["metadata"]["status"].clone();
    assert_eq!(missing["status"], "invalid");
    assert!(
        missing["reason"].as_str().unwrap().contains("gone.wasm"),
        "{missing}"
    );
    let junk = entry(&listing, "junk")["metadata"]["status"].clone();
    assert!(
        junk["reason"]
            .as_str()
            .unwrap()
            .contains("junk.wasm is not a WebAssembly file"),
        "{junk}"
    );

    // The table says the same for people: in 100 columns, with the reasons below it...
    let out = home
        .cmd()
        .args([
            "--list-loops",
            "--loops-dir",
            extra.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let short = String::from_utf8_lossy(&out.stdout);
    assert!(short.starts_with("NAME "), "{short}");
    assert!(
        short
            .lines()
            .filter(|l| !l.starts_with("note: "))
            .all(|l| l.chars().count() <= 100),
        "wider than 100 columns:\n{short}"
    );
    assert!(
        short.contains("note: hello (registry): shadowed by the directory entry of the same name"),
        "{short}"
    );
    assert!(
        short.contains("note: junk (directory): ") && short.contains("is not a WebAssembly file"),
        "{short}"
    );
    // ...and everything, in full, with --verbose (`loops list` is the same listing).
    let out = home
        .cmd()
        .args([
            "loops",
            "list",
            "--verbose",
            "--loops-dir",
            extra.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str, source: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")) && l.contains(source))
            .unwrap_or_else(|| panic!("no {name}/{source} row in\n{table}"))
            .to_owned()
    };
    assert!(table.starts_with("NAME "), "{table}");
    assert!(line("seed", "registry").contains("0.2.0"), "{table}");
    assert!(
        line("hello", "registry").contains("shadowed by the directory entry of the same name"),
        "{table}"
    );
    assert!(line("junk", "directory").contains("invalid: "), "{table}");
}

#[test]
fn a_warm_listing_reads_the_metadata_cache() {
    let home = Home::new();
    copy(guest_paths::GUEST_HELLO, &home.loops().join("hello.wasm"));
    let first = home.list_json(&[]);
    assert_eq!(entry(&first, "hello")["metadata"]["loop_name"], "hello");
    // Every module has one cache entry, named by its content hash.
    let cache = home.dir.path().join("cache/wonopcode/loop-metadata");
    let sha = entry(&first, "hello")["metadata"]["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    let cached: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(&sha))
        .collect();
    assert_eq!(cached.len(), 1, "{cached:?}");
    // The second listing answers from the cache: an edited entry shows through.
    let mut metadata: Value =
        serde_json::from_str(&std::fs::read_to_string(&cached[0]).unwrap()).unwrap();
    metadata["loop_name"] = "from-the-cache".into();
    std::fs::write(&cached[0], metadata.to_string()).unwrap();
    let second = home.list_json(&[]);
    assert_eq!(
        entry(&second, "hello")["metadata"]["loop_name"],
        "from-the-cache"
    );
    // A corrupt entry is validated again.
    std::fs::write(&cached[0], "{not json").unwrap();
    let third = home.list_json(&[]);
    assert_eq!(entry(&third, "hello")["metadata"]["loop_name"], "hello");
}

#[test]
fn agent_loop_name_runs_the_named_guest_on_the_offline_example() {
    let home = Home::new();
    home.registry(&format!(
        "modules:\n  my-default:\n    path: {}\n",
        guest_paths::DEFAULT_LOOP
    ));
    let s = Scratch::new();
    let demo = repo_root().join("examples/demo");
    copy_dir(&demo.join("workspace"), &s.ws());
    let prompt = std::fs::read_to_string(demo.join("prompt.txt")).unwrap();
    let out = home
        .cmd()
        .arg("--json")
        .arg("--replay")
        .arg(demo.join("transcript.jsonl"))
        .arg("-C")
        .arg(s.ws())
        .args(["--yes", "--agent-loop-name", "my-default"])
        .arg(prompt.trim_end())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let started: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(started["loop_name"], "default", "{started}");
    let report = std::fs::read_to_string(s.ws().join("TODO_REPORT.md")).unwrap();
    assert!(report.contains("## src/report.py"), "{report}");
}

#[test]
fn validate_module_reports_every_check() {
    let home = Home::new();
    copy(guest_paths::GUEST_HELLO, &home.loops().join("hello.wasm"));
    let out = home
        .cmd()
        .args(["--validate-module", "--agent-loop-name", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for check in [
        "parse",
        "component",
        "world",
        "wit version",
        "exports",
        "compile",
        "imports",
        "instantiate",
        "get-name",
        "get-capabilities",
    ] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with("ok") && l.contains(&format!(" {check} "))),
            "no passing `{check}` in\n{text}"
        );
    }
    assert!(text.contains("valid: loop `hello`"), "{text}");
    // The smoke call of the guest's own tool reached it through custom-tool-handler, whose
    // host check of `{}` against the tool's derived schema refused it: reported apart from
    // the checks, as a refusal, not a failure.
    assert!(!text.contains("FAIL"), "{text}");
    let smoke = text.split("valid: loop `hello`").nth(1).unwrap_or_default();
    assert!(
        smoke.lines().any(|l| l.contains("refused")
            && l.contains("word_count")
            && l.contains(
                r#"invalid arguments for `word_count`: arguments: "text" is a required property"#
            )),
        "{text}"
    );

    let out = home
        .cmd()
        .args([
            "--validate-module",
            "--json",
            "--agent-loop",
            guest_paths::MISSING_EXPORT,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], false);
    let checks = report["checks"].as_array().unwrap();
    let status = |name: &str| {
        checks
            .iter()
            .find(|c| c["check"] == name)
            .map(|c| c["status"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(status("wit version"), "ok");
    assert_eq!(status("exports"), "failed");
    assert_eq!(status("compile"), "skipped");
    let failed = checks.iter().find(|c| c["status"] == "failed").unwrap();
    assert!(
        failed["detail"]
            .as_str()
            .unwrap()
            .contains("does not export `wonopcode:agent-loop/custom-tool-handler`"),
        "{failed}"
    );
}

#[test]
fn bad_names_and_flags_get_one_clear_line() {
    let home = Home::new();
    copy(guest_paths::GUEST_HELLO, &home.loops().join("hello.wasm"));
    let cases: [(&[&str], &str); 5] = [
        (
            &["--agent-loop-name", "helo", "hi"],
            "no agent loop named `helo`; did you mean `hello`?",
        ),
        (
            &["--validate-module"],
            "--validate-module needs the guest to check: --agent-loop PATH or --agent-loop-name NAME",
        ),
        (
            &[
                "--validate-module",
                "--agent-loop",
                "x.wasm",
                "--agent-loop-name",
                "hello",
            ],
            "give --agent-loop PATH or --agent-loop-name NAME, not both",
        ),
        (
            &["--agent-loop", "x.wasm", "--agent-loop-name", "hello", "hi"],
            "--agent-loop and --agent-loop-name both choose the loop",
        ),
        (
            &["--loop-type=standard", "--agent-loop-name", "hello", "hi"],
            "--agent-loop-name runs a named loop and cannot be combined with --loop-type=standard",
        ),
    ];
    for (args, expected) in cases {
        let out = home.cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_malformed_registry_is_reported_with_its_position_and_listing_goes_on() {
    let home = Home::new();
    home.registry("modules:\n  a:\n    path: [unclosed\n");
    copy(guest_paths::GUEST_HELLO, &home.loops().join("hello.wasm"));
    let out = home.cmd().arg("--list-loops").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    let registry = home.loops().join("registry.yaml");
    assert!(
        err.contains(&format!("warning: {}:", registry.display()))
            && err.contains("(file skipped)"),
        "{err}"
    );
    let line = err.lines().next().unwrap();
    let position = line
        .strip_prefix(&format!("warning: {}:", registry.display()))
        .unwrap();
    let mut numbers = position.split(':').take(2).map(|n| n.parse::<u32>());
    assert!(
        numbers.next().unwrap().is_ok() && numbers.next().unwrap().is_ok(),
        "line and column in: {line}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello "));
}
