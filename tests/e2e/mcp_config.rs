//! `wonopcode mcp add | remove | get` (issue: "The terminal a Claude Code or Codex user
//! reaches for first"): the lines a server's README gives for `claude mcp add` change the
//! user's config file, nothing else in it is lost, and bad input gets one line.

use std::process::Output;

use crate::support::{Scratch, stderr, wonopcode};

/// `wonopcode mcp ARGS` with the user's config directory in the scratch.
fn mcp(s: &Scratch, args: &[&str]) -> Output {
    wonopcode()
        .env("XDG_CONFIG_HOME", s.outside("config"))
        .arg("mcp")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn claude_codes_add_lines_write_the_users_config_and_get_and_remove_read_it() {
    let s = Scratch::new();
    let file = s.outside("config").join("wonopcode/config.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "# my settings\nmodel: claude-sonnet-4-5\n").unwrap();
    let out = mcp(
        &s,
        &[
            "add",
            "-e",
            "TOKEN=${FS_TOKEN}",
            "fs",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/srv",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = mcp(
        &s,
        &[
            "add",
            "--transport",
            "http",
            "docs",
            "https://mcp.example.com/mcp",
            "--header",
            "Authorization: Bearer ${DOCS_TOKEN}",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The file reads as a config with both, and what it held before stays.
    let text = std::fs::read_to_string(&file).unwrap();
    let config: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(config["model"], "claude-sonnet-4-5");
    assert_eq!(config["mcp_servers"]["fs"]["command"], "npx");
    assert_eq!(config["mcp_servers"]["fs"]["args"][2], "/srv");
    assert_eq!(config["mcp_servers"]["fs"]["env"]["TOKEN"], "${FS_TOKEN}");
    assert_eq!(config["mcp_servers"]["docs"]["type"], "http");
    assert_eq!(
        config["mcp_servers"]["docs"]["headers"]["Authorization"],
        "Bearer ${DOCS_TOKEN}"
    );
    // Its comment was not kept there, so the file as it was is beside it.
    assert_eq!(
        std::fs::read_to_string(file.with_extension("yaml.bak")).unwrap(),
        "# my settings\nmodel: claude-sonnet-4-5\n"
    );
    let out = mcp(&s, &["get", "fs"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("command: npx"));
    let out = mcp(&s, &["--json", "get", "docs"]);
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["url"], "https://mcp.example.com/mcp");
    // The same name again is refused, and the file is left as it was.
    let out = mcp(&s, &["add", "fs", "--", "other"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`fs` is in mcp_servers already"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let out = mcp(&s, &["remove", "fs"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = mcp(&s, &["remove", "fs"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no server `fs` in") && stderr(&out).contains("(it has docs)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_add_lines_get_one_line_and_write_nothing() {
    let s = Scratch::new();
    let file = s.outside("config").join("wonopcode/config.yaml");
    for (args, says) in [
        (
            vec!["add", "--scope", "project", "fs", "--", "npx"],
            "starts no workspace's own MCP servers",
        ),
        (
            vec!["add", "bad name", "--", "npx"],
            "a server's name is letters",
        ),
        (
            vec!["add", "-e", "NOEQUALS", "fs", "--", "npx"],
            "write it as KEY=VALUE",
        ),
        (
            vec!["add", "-t", "http", "web", "npx"],
            "needs the server's http(s) address",
        ),
        (
            vec!["add", "-t", "sse", "web", "https://x.dev/sse"],
            "not the older SSE transport",
        ),
        (
            vec!["add", "web", "https://x.dev/mcp", "-H", "no colon"],
            "write it as `Name: value`",
        ),
    ] {
        let out = mcp(&s, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).lines().count(),
            1,
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!file.exists(), "{args:?} wrote the file");
    }
    // A config that does not parse is named with its line, and left alone.
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "model: [unclosed\n").unwrap();
    let out = mcp(&s, &["add", "fs", "--", "npx"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("config.yaml:"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "model: [unclosed\n"
    );
}
