//! The Seatbelt profiles the macOS backend runs commands under, checked where they are
//! generated (any platform): each policy of a table gives its golden profile
//! (`tests/seatbelt/*.sb`; `WONOPCODE_UPDATE_GOLDEN=1` rewrites them), and every profile
//! parses as the profile language with only the operations and filters it has, every path
//! in a quoted string. And, independent of the golden text, each profile is read as
//! Seatbelt decides (the last matching rule wins) and asked what it allows: a hidden path
//! is not read, a read-only one not written, a port not granted not reached.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use wonopcode_sandbox::seatbelt::{SeatbeltNetwork, SeatbeltRules, profile};
use wonopcode_sandbox::{NetworkGrant, SandboxMode, SandboxPolicy};

/// A policy as a workspace resolves it, by name.
fn table() -> Vec<(&'static str, SeatbeltRules)> {
    let p = PathBuf::from;
    let home = "/Users/me";
    let ws = "/Users/me/src/app";
    vec![
        (
            "read-only",
            SeatbeltRules {
                writable: vec![p("/private/var/folders/xy/T/wonopcode-sandbox-1")],
                read_only: vec![],
                hidden: vec![p(&format!("{home}/.aws")), p(&format!("{home}/.ssh"))],
                network: SeatbeltNetwork::None,
            },
        ),
        (
            "workspace-write",
            SeatbeltRules {
                writable: vec![p("/private/tmp"), p("/private/var/tmp"), p(ws)],
                read_only: vec![
                    p(&format!("{ws}/.claude")),
                    p(&format!("{ws}/.git")),
                    p(&format!("{ws}/vendor/lib/.git")),
                ],
                hidden: vec![p(&format!("{home}/.ssh"))],
                network: SeatbeltNetwork::None,
            },
        ),
        (
            "workspace-write-ports",
            SeatbeltRules {
                writable: vec![p(ws)],
                read_only: vec![p(&format!("{ws}/.git"))],
                hidden: vec![],
                network: SeatbeltNetwork::Ports(vec![443, 80, 443]),
            },
        ),
        (
            "network-any-odd-paths",
            SeatbeltRules {
                writable: vec![p(r#"/Users/me/My "quoted" dir\x"#)],
                read_only: vec![],
                hidden: vec![p("/Users/me/Library/Keychains")],
                network: SeatbeltNetwork::Any,
            },
        ),
    ]
}

#[test]
fn each_policy_of_the_table_gives_its_golden_profile() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/seatbelt");
    let update = std::env::var_os("WONOPCODE_UPDATE_GOLDEN").is_some();
    for (name, rules) in table() {
        let made = profile(&rules).unwrap();
        let golden = dir.join(format!("{name}.sb"));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&golden, &made).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
        assert_eq!(made, expected, "{name}: the profile changed");
    }
}

#[test]
fn every_profile_parses_with_only_known_operations_and_filters() {
    for (name, rules) in table() {
        let text = profile(&rules).unwrap();
        let forms = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        check(&forms).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        // Every path of the rules is in the text as one quoted string.
        for path in rules
            .writable
            .iter()
            .chain(&rules.read_only)
            .chain(&rules.hidden)
        {
            let quoted = format!("\"{}\"", escape(path.to_str().unwrap()));
            assert!(text.contains(&quoted), "{name}: {quoted} missing\n{text}");
        }
    }
}

#[test]
fn a_policy_resolves_to_its_roots_its_protected_names_and_its_secrets() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().canonicalize().unwrap();
    let (home, ws) = (root.join("home"), root.join("ws"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(ws.join("sub/.git")).unwrap();
    let mut policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite);
    policy.exclude_slash_tmp = true;
    policy.exclude_tmpdir_env_var = true;
    policy.network = vec!["example.com:443".parse::<NetworkGrant>().unwrap()];
    let nested = vec![ws.join("sub/.git")];
    let rules = SeatbeltRules::of(&policy, &ws, Some(&home), None, &nested);
    assert_eq!(rules.writable, std::slice::from_ref(&ws));
    assert!(
        rules.read_only.contains(&ws.join(".git")),
        "even before it exists"
    );
    assert!(rules.read_only.contains(&ws.join("sub/.git")));
    assert!(rules.read_only.contains(&ws.join(".mcp.json")));
    assert_eq!(rules.hidden, [home.join(".ssh")]);
    assert_eq!(rules.network, SeatbeltNetwork::Ports(vec![443]));
    // Read-only writes nowhere but its temp dir; full access is not confined at all.
    let temp = root.join("private-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let read_only = SandboxPolicy::new(SandboxMode::ReadOnly);
    let rules = SeatbeltRules::of(&read_only, &ws, Some(&home), Some(&temp), &nested);
    assert_eq!(rules.writable, [temp]);
    assert!(rules.read_only.is_empty());
    let full = SeatbeltRules::of(
        &SandboxPolicy::new(SandboxMode::FullAccess),
        &ws,
        Some(&home),
        None,
        &[],
    );
    assert_eq!(full.network, SeatbeltNetwork::Any);
}

#[test]
fn a_path_the_language_cannot_hold_is_refused() {
    let rules = SeatbeltRules {
        writable: vec![PathBuf::from("/tmp/a\nb")],
        ..SeatbeltRules::default()
    };
    assert!(profile(&rules).is_err());
}

fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A form of the profile language: a list, a symbol, a string or a regex literal.
#[derive(Debug, Clone, PartialEq)]
enum Form {
    List(Vec<Form>),
    Symbol(String),
    Str(String),
    Regex(String),
    Number(i64),
}

fn parse(text: &str) -> Result<Vec<Form>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    let mut forms = Vec::new();
    while let Some(form) = next(&chars, &mut at)? {
        forms.push(form);
    }
    Ok(forms)
}

fn skip_blank(chars: &[char], at: &mut usize) {
    while *at < chars.len() {
        match chars[*at] {
            c if c.is_whitespace() => *at += 1,
            ';' => {
                while *at < chars.len() && chars[*at] != '\n' {
                    *at += 1;
                }
            }
            _ => break,
        }
    }
}

fn next(chars: &[char], at: &mut usize) -> Result<Option<Form>, String> {
    skip_blank(chars, at);
    let Some(&c) = chars.get(*at) else {
        return Ok(None);
    };
    match c {
        '(' => {
            *at += 1;
            let mut items = Vec::new();
            loop {
                skip_blank(chars, at);
                match chars.get(*at) {
                    None => return Err("a list is not closed".to_owned()),
                    Some(')') => {
                        *at += 1;
                        return Ok(Some(Form::List(items)));
                    }
                    Some(_) => items.push(next(chars, at)?.ok_or("a list is not closed")?),
                }
            }
        }
        ')' => Err(format!("a `)` closes nothing at {at}")),
        '"' => {
            *at += 1;
            string(chars, at).map(|s| Some(Form::Str(s)))
        }
        '#' if chars.get(*at + 1) == Some(&'"') => {
            *at += 2;
            let start = *at;
            while *at < chars.len() && chars[*at] != '"' {
                *at += 1;
            }
            if *at == chars.len() {
                return Err("a regex is not closed".to_owned());
            }
            let regex: String = chars[start..*at].iter().collect();
            *at += 1;
            Ok(Some(Form::Regex(regex)))
        }
        _ => {
            let start = *at;
            while *at < chars.len()
                && !chars[*at].is_whitespace()
                && !matches!(chars[*at], '(' | ')' | '"' | ';')
            {
                *at += 1;
            }
            let word: String = chars[start..*at].iter().collect();
            Ok(Some(match word.parse::<i64>() {
                Ok(n) => Form::Number(n),
                Err(_) => Form::Symbol(word),
            }))
        }
    }
}

/// A string's text after its opening quote, up to the closing one (`\\` and `\"` escape).
fn string(chars: &[char], at: &mut usize) -> Result<String, String> {
    let mut text = String::new();
    while let Some(&c) = chars.get(*at) {
        *at += 1;
        match c {
            '"' => return Ok(text),
            '\\' => match chars.get(*at) {
                Some(&e @ ('\\' | '"')) => {
                    text.push(e);
                    *at += 1;
                }
                other => return Err(format!("an unknown escape `\\{other:?}` in a string")),
            },
            c if c.is_control() => return Err("a control character in a string".to_owned()),
            c => text.push(c),
        }
    }
    Err("a string is not closed".to_owned())
}

/// The operations a rule may name (Apple's sandbox profile language, as Chromium's and
/// Codex's profiles use it).
const OPERATIONS: &[&str] = &[
    "default",
    "process-exec",
    "process-fork",
    "process-info*",
    "signal",
    "sysctl-read",
    "user-preference-read",
    "mach-lookup",
    "ipc-posix-sem",
    "pseudo-tty",
    "file-ioctl",
    "file-read*",
    "file-write*",
    "file-write-data",
    "network-outbound",
    "network-inbound",
    "system-socket",
];

/// The filters a rule may hold, and whether each takes one quoted path.
const FILTERS: &[(&str, Arg)] = &[
    ("subpath", Arg::Path),
    ("literal", Arg::Path),
    ("regex", Arg::Regex),
    ("require-all", Arg::Filters),
    ("require-any", Arg::Filters),
    ("require-not", Arg::Filters),
    ("target", Arg::Symbol),
    ("global-name", Arg::Str),
    ("vnode-type", Arg::Symbol),
    ("remote", Arg::Remote),
];

#[derive(Clone, Copy, PartialEq)]
enum Arg {
    Path,
    Regex,
    Filters,
    Symbol,
    Str,
    Remote,
}

fn check(forms: &[Form]) -> Result<(), String> {
    let [Form::List(version), rules @ ..] = forms else {
        return Err("the profile does not start with a form".to_owned());
    };
    if version != &[Form::Symbol("version".into()), Form::Number(1)] {
        return Err("the profile does not start with (version 1)".to_owned());
    }
    if rules.first()
        != Some(&Form::List(vec![
            Form::Symbol("deny".into()),
            Form::Symbol("default".into()),
        ]))
    {
        return Err("the second form is not (deny default)".to_owned());
    }
    for rule in rules {
        let Form::List(items) = rule else {
            return Err(format!("{rule:?} is not a rule"));
        };
        match items.first() {
            Some(Form::Symbol(action)) if action == "allow" || action == "deny" => {}
            other => return Err(format!("a rule starts with {other:?}, not allow or deny")),
        }
        let mut filters = false;
        for item in &items[1..] {
            match item {
                Form::Symbol(op) if !filters => {
                    if !OPERATIONS.contains(&op.as_str()) {
                        return Err(format!("`{op}` is not an operation"));
                    }
                }
                Form::List(_) => {
                    filters = true;
                    filter(item)?;
                }
                other => return Err(format!("{other:?} in a rule")),
            }
        }
    }
    Ok(())
}

fn filter(form: &Form) -> Result<(), String> {
    let Form::List(items) = form else {
        return Err(format!("{form:?} is not a filter"));
    };
    let [Form::Symbol(name), args @ ..] = items.as_slice() else {
        return Err(format!("{form:?} is not a filter"));
    };
    let Some((_, arg)) = FILTERS.iter().find(|(n, _)| n == name) else {
        return Err(format!("`{name}` is not a filter"));
    };
    let ok = match arg {
        Arg::Path => matches!(args, [Form::Str(p)] if p.starts_with('/')),
        Arg::Regex => matches!(args, [Form::Regex(_)]),
        Arg::Filters => !args.is_empty() && args.iter().all(|a| filter(a).is_ok()),
        Arg::Symbol => matches!(args, [Form::Symbol(_)]),
        Arg::Str => matches!(args, [Form::Str(_)]),
        Arg::Remote => matches!(args, [Form::Symbol(kind), Form::Str(address)]
            if kind == "tcp" && address.split_once(':').is_some_and(|(host, port)|
                (host == "*" || host == "localhost") && port.parse::<u16>().is_ok())),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("`{name}` has arguments {args:?}"))
    }
}

/// What a command asks of the kernel, for [`decide`].
enum Ask<'a> {
    /// A file operation (`file-read-data`, `file-write-data`, …) on a path.
    File(&'a str, &'a str),
    /// An outgoing TCP connection to a port.
    Tcp(u16),
}

/// Whether the parsed profile `forms` allows `ask`, as Seatbelt decides: every rule whose
/// operation and filters match is looked at in order, and the last one decides (`deny
/// default` first). A filter this reading does not know (`regex`, `vnode-type`) matches
/// nothing, so an allow resting on it is not counted.
fn decide(forms: &[Form], ask: &Ask) -> bool {
    let mut allowed = false;
    for form in forms {
        let Form::List(items) = form else { continue };
        let [Form::Symbol(action), Form::Symbol(operation), filters @ ..] = items.as_slice() else {
            continue;
        };
        let asked = match ask {
            Ask::File(op, _) => *op,
            Ask::Tcp(_) => "network-outbound",
        };
        let names = operation == "default"
            || operation == asked
            || operation
                .strip_suffix('*')
                .is_some_and(|prefix| asked.starts_with(prefix));
        if names && (filters.is_empty() || filters.iter().any(|f| matches(f, ask))) {
            allowed = action == "allow";
        }
    }
    allowed
}

fn matches(filter: &Form, ask: &Ask) -> bool {
    let Form::List(items) = filter else {
        return false;
    };
    let path = match ask {
        Ask::File(_, path) => Some(*path),
        Ask::Tcp(_) => None,
    };
    match items.as_slice() {
        [Form::Symbol(f), Form::Str(p)] if f == "subpath" => {
            path.is_some_and(|path| path == p || path.starts_with(&format!("{p}/")))
        }
        [Form::Symbol(f), Form::Str(p)] if f == "literal" => path == Some(p.as_str()),
        [Form::Symbol(f), rest @ ..] if f == "require-all" => rest.iter().all(|r| matches(r, ask)),
        [Form::Symbol(f), rest @ ..] if f == "require-any" => rest.iter().any(|r| matches(r, ask)),
        [Form::Symbol(f), inner] if f == "require-not" => !matches(inner, ask),
        [Form::Symbol(f), Form::Symbol(proto), Form::Str(target)] if f == "remote" => {
            let Ask::Tcp(port) = ask else { return false };
            proto == "tcp"
                && target
                    .strip_prefix("*:")
                    .is_some_and(|p| p == "*" || p.parse::<u16>() == Ok(*port))
        }
        _ => false,
    }
}

#[test]
fn each_profile_means_what_its_rules_say() {
    let rules: std::collections::HashMap<_, _> = table().into_iter().collect();
    let decided = |name: &str, ask: Ask| {
        let forms = parse(&profile(&rules[name]).unwrap()).unwrap();
        decide(&forms, &ask)
    };
    let (read, write) = ("file-read-data", "file-write-data");
    let ws = "/Users/me/src/app";
    // workspace-write: the workspace and temp dirs are written, its protected names and
    // everything else are not; everything but a hidden path is read; no network.
    for (path, can) in [
        (format!("{ws}/src/main.rs"), true),
        ("/private/tmp/x".to_owned(), true),
        (format!("{ws}/.git/config"), false),
        (format!("{ws}/.git"), false),
        (format!("{ws}/vendor/lib/.git/HEAD"), false),
        (format!("{ws}/.claude/settings.json"), false),
        (format!("{ws}/.gitignore"), true),
        ("/Users/me/.bashrc".to_owned(), false),
        ("/Users/me/.ssh/authorized_keys".to_owned(), false),
        ("/Users/me/src/app-other/f".to_owned(), false),
    ] {
        assert_eq!(
            decided("workspace-write", Ask::File(write, &path)),
            can,
            "write {path}"
        );
    }
    assert!(decided(
        "workspace-write",
        Ask::File(read, "/Users/me/.bashrc")
    ));
    assert!(decided(
        "workspace-write",
        Ask::File(read, &format!("{ws}/.git/config"))
    ));
    assert!(!decided(
        "workspace-write",
        Ask::File(read, "/Users/me/.ssh/id_ed25519")
    ));
    assert!(!decided(
        "workspace-write",
        Ask::File(read, "/Users/me/.ssh")
    ));
    assert!(!decided("workspace-write", Ask::Tcp(443)));
    // read-only: only its private temp dir is written; hidden paths stay unread.
    assert!(!decided(
        "read-only",
        Ask::File(write, &format!("{ws}/src/main.rs"))
    ));
    assert!(decided(
        "read-only",
        Ask::File(write, "/private/var/folders/xy/T/wonopcode-sandbox-1/f")
    ));
    assert!(!decided(
        "read-only",
        Ask::File(read, "/Users/me/.aws/credentials")
    ));
    assert!(decided(
        "read-only",
        Ask::File(read, &format!("{ws}/README.md"))
    ));
    // Ports: the granted ones only. Any: every port.
    assert!(decided("workspace-write-ports", Ask::Tcp(443)));
    assert!(decided("workspace-write-ports", Ask::Tcp(80)));
    assert!(!decided("workspace-write-ports", Ask::Tcp(22)));
    assert!(decided("network-any-odd-paths", Ask::Tcp(22)));
    assert!(decided(
        "network-any-odd-paths",
        Ask::File(write, r#"/Users/me/My "quoted" dir\x/f"#)
    ));
    assert!(!decided(
        "network-any-odd-paths",
        Ask::File(read, "/Users/me/Library/Keychains/login.keychain-db")
    ));
}
