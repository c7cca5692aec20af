//! The `bash` rule matcher fuzzed with generated commands: any text parses without a panic;
//! commands of plain words, quoted any way and joined by any list operator, are read exactly;
//! a construct that hides what runs is never plain; and a denied program is denied however it
//! is spelled and wherever it is put; an "always" answer's keys name a command's words
//! exactly, so quoted text never meets the same text unquoted.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use wonopcode_protocol::{PermissionRequest, ToolKind};
use wonopcode_tools::permission::shell::{Script, plain_command};
use wonopcode_tools::permission::{Action, PermissionPolicy, PolicyConfig, Rule};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A word of a command, as its value.
fn word() -> impl Strategy<Value = String> {
    "[a-z0-9_./-]{1,8}".prop_filter("not a shell keyword", |w| {
        !matches!(
            w.as_str(),
            "if" | "then"
                | "else"
                | "elif"
                | "fi"
                | "do"
                | "done"
                | "for"
                | "in"
                | "case"
                | "esac"
                | "while"
                | "until"
                | "select"
                | "function"
                | "time"
        )
    })
}

/// `value` written as a shell word: bare, quoted, escaped or pieced together.
fn spelled(value: String) -> impl Strategy<Value = String> {
    let v = value.clone();
    prop_oneof![
        Just(value.clone()),
        Just(format!("'{value}'")),
        Just(format!("\"{value}\"")),
        Just(format!("\\{value}")),
        (0..=v.len()).prop_map(move |at| format!("{}''{}", &v[..at], &v[at..])),
    ]
}

/// A command (its words' values) and how it is typed.
fn command() -> impl Strategy<Value = (Vec<String>, String)> {
    let program = prop::sample::select(&["ls", "cat", "git", "grep", "cargo", "echo", "wc"][..]);
    (program, prop::collection::vec(word(), 0..3)).prop_flat_map(|(program, arguments)| {
        let mut words = vec![program.to_owned()];
        words.extend(arguments);
        let spellings: Vec<_> = words.iter().cloned().map(spelled).collect();
        (Just(words), spellings).prop_map(|(words, typed)| (words, typed.join(" ")))
    })
}

const OPERATORS: &[&str] = &[" && ", " || ", "; ", " | ", "\n", " & "];

/// Several commands joined by list operators.
fn script() -> impl Strategy<Value = (Vec<Vec<String>>, String)> {
    prop::collection::vec((command(), prop::sample::select(OPERATORS)), 1..5).prop_map(|parts| {
        let mut text = String::new();
        let mut commands = Vec::new();
        for (at, ((words, typed), operator)) in parts.into_iter().enumerate() {
            if at > 0 {
                text.push_str(operator);
            }
            text.push_str(&typed);
            commands.push(words);
        }
        (commands, text)
    })
}

fn sorted(mut commands: Vec<Vec<String>>) -> Vec<Vec<String>> {
    commands.sort();
    commands
}

fn bash(command: &str) -> PermissionRequest {
    PermissionRequest {
        tool: "bash".into(),
        kind: ToolKind::Mutating,
        subject: Some(command.into()),
        preview: None,
    }
}

fn policy(rules: &[(&str, Action)]) -> PermissionPolicy {
    let config = PolicyConfig {
        rules: rules
            .iter()
            .map(|(text, action)| Rule::parse(text, *action).unwrap())
            .collect(),
        ..PolicyConfig::default()
    };
    PermissionPolicy::new(config, false, None)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_is_read_without_a_panic(text in "\\PC{0,200}") {
        let script = Script::parse(&text);
        let _ = script.commands();
        let _ = policy(&[("bash:rm", Action::Deny), ("bash:ls", Action::Allow)]).action(&bash(&text));
    }

    #[test]
    fn plain_commands_are_read_exactly((commands, text) in script()) {
        let script = Script::parse(&text);
        prop_assert!(script.is_plain(), "{:?}", text);
        prop_assert_eq!(sorted(script.commands().to_vec()), sorted(commands), "{:?}", text);
    }

    #[test]
    fn what_hides_what_runs_is_never_plain(
        (_, text) in script(),
        hazard in prop::sample::select(&[
            " $(touch p)", " `touch p`", " > p", " >> p", " 2> p", " < p", " $V", " ${V}",
            " <(true)", " <<< p", " $((1+1))",
        ][..]),
        prefix in prop::sample::select(&["", "X=1 ", "env ", "sudo ", "eval ", "command ", "xargs "][..]),
    ) {
        let hidden = format!("{prefix}{text}{hazard}");
        prop_assert!(!Script::parse(&hidden).is_plain(), "{:?}", hidden);
        if !prefix.is_empty() {
            let wrapped = format!("{prefix}{text}");
            prop_assert!(!Script::parse(&wrapped).is_plain(), "{:?}", wrapped);
        }
    }

    #[test]
    fn a_denied_program_is_denied_however_it_is_put(
        (_, before) in script(),
        (_, after) in script(),
        spelling in prop::sample::select(&[
            "rm", "/bin/rm", "/usr/bin/rm", "\\rm", "'rm'", "\"rm\"", "r''m", "./rm",
        ][..]),
        place in prop::sample::select(&[
            "@ x", "$(@ x)", "`@ x`", "(@ x)", "{ @ x; }", "bash -c '@ x'",
            "sh -c \"@ x\"", "env @ x", "sudo -u u @ x", "timeout 5 @ x",
            "if true; then @ x; fi", "find . -exec @ {} +", "xargs @ < list", "eval @ x",
            "echo $(cat $(@ x))", "! @ x", "@ x 2>&1 | wc -l",
        ][..]),
        operator in prop::sample::select(OPERATORS),
    ) {
        let denied = place.replace('@', spelling);
        let text = format!("{before}{operator}{denied}{operator}{after}");
        let policy = policy(&[("bash:rm", Action::Deny), ("bash", Action::Allow)]);
        prop_assert_eq!(policy.action(&bash(&text)), Action::Deny, "{:?}", text);
    }

    #[test]
    fn an_allow_rule_allows_only_its_own_commands(
        (commands, text) in script(),
    ) {
        let policy = policy(&[("bash:ls", Action::Allow)]);
        let allowed = policy.action(&bash(&text)) == Action::Allow;
        let all_ls = commands.iter().all(|words| words[0] == "ls");
        prop_assert_eq!(allowed, all_ls, "{:?}", text);
    }

    #[test]
    fn an_approval_key_reads_back_as_the_words_it_was_made_of(
        program in prop::sample::select(&["ls", "cat", "git", "echo", "A=1", "~", "#x", "{a,b}"][..]),
        arguments in prop::collection::vec("[ -~]{0,8}", 0..4),
    ) {
        let mut words = vec![program.to_owned()];
        words.extend(arguments);
        let written = plain_command(&words);
        let script = Script::parse(&written);
        prop_assert!(script.is_plain(), "{:?}", written);
        prop_assert_eq!(script.commands().to_vec(), vec![words], "{:?}", written);
    }

    #[test]
    fn what_an_always_approves_never_includes_a_command_that_hides_what_runs(
        (_, text) in script(),
        hazard in prop::sample::select(&[
            "$(touch p)", "`touch p`", "$V", "${V}", "$((1+1))", "*", "~/x", "{a,b}", "a b",
        ][..]),
        quote in prop::sample::select(&["'", "\""][..]),
    ) {
        // The same hazard as a quoted, plain word, and as the shell would expand it (in
        // double quotes `$` and backquotes still expand, so those take single quotes).
        let quote = if hazard.contains(['$', '`']) { "'" } else { quote };
        let quoted = format!("{text} {quote}{hazard}{quote}");
        let unquoted = format!("{text} {hazard}");
        let keys = |command: &str| PermissionPolicy::approval_keys(&bash(command));
        prop_assert!(Script::parse(&quoted).is_plain(), "{:?}", quoted);
        let approved = keys(&quoted);
        let asked = keys(&unquoted);
        prop_assert!(
            !asked.iter().all(|key| approved.contains(key)),
            "{:?} approved {:?}: {:?} / {:?}", quoted, unquoted, approved, asked
        );
    }
}
