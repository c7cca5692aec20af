//! What a `bash` command runs, read with a real shell parser (tree-sitter-bash), so that a
//! permission rule sees every simple command of `ls && touch x`, `true; /bin/rm x` or
//! `echo $(rm x)` instead of a prefix of the text.
//!
//! A [`Script`] is *plain* when it is only simple commands of literal words joined by `&&`,
//! `||`, `;`, `|` or `&`, with no redirection but to `/dev/null` or another descriptor:
//! then its list of commands is exactly what runs. Anything else (substitution, expansion,
//! an assignment, a redirection to a file, a subshell, a loop, a here-document, a command
//! that runs its arguments as a command such as `env`, `xargs`, `sudo`, `bash -c` or
//! `eval`) makes it not plain: its commands are still collected as well as the parser can
//! find them, for deny rules, but no allow rule can prove it safe.

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

/// Commands longer than this are not parsed: they are not plain and show no commands.
const MAX_PARSED_BYTES: usize = 256 * 1024;

/// How deep `bash -c '…'` and `eval '…'` are opened to find the commands inside.
const MAX_NESTING: usize = 4;

/// Commands that run (some of) their arguments as another command.
const WRAPPERS: &[&str] = &[
    "builtin", "busybox", "chroot", "command", "doas", "env", "exec", "flock", "ionice", "nice",
    "nohup", "setsid", "stdbuf", "strace", "su", "sudo", "taskset", "time", "timeout", "unbuffer",
    "watch", "xargs",
];

/// Shells whose `-c` argument is a script.
const SHELLS: &[&str] = &["bash", "dash", "fish", "ksh", "mksh", "sh", "zsh"];

/// Commands that read their arguments (or a file) as shell code.
const EVALUATORS: &[&str] = &["eval", "source", "."];

/// Punctuation a plain script may contain.
const PLAIN_TOKENS: &[&str] = &[
    "&&", "||", ";", "|", "|&", "&", "\n", "\"", ">", ">>", "&>", "&>>", ">&", "<&",
];

/// Kinds of node a plain script may contain.
const PLAIN_KINDS: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "negated_command",
    "command",
    "command_name",
    "word",
    "number",
    "string",
    "string_content",
    "raw_string",
    "concatenation",
    "comment",
    "redirected_statement",
    "file_redirect",
    "file_descriptor",
];

/// A `bash` command as the shell will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    commands: Vec<Vec<String>>,
    /// Each of `commands`' words written so that they name it exactly (see
    /// [`Self::written`]).
    written: Vec<Vec<String>>,
    plain: bool,
}

impl Script {
    /// Parses `text`. Never fails: what cannot be read is simply not plain.
    pub fn parse(text: &str) -> Self {
        let mut script = Self {
            commands: Vec::new(),
            written: Vec::new(),
            plain: true,
        };
        script.read(text, 0);
        script
    }

    /// Every simple command found, as its words with quotes and escapes removed (a word the
    /// shell would expand is kept as typed).
    pub fn commands(&self) -> &[Vec<String>] {
        &self.commands
    }

    /// Each of [`Self::commands`] as words that tell it from every other command: a literal
    /// word written so that the shell reads it back as it is (`'$(touch x)'`, `'*'`, `-la`;
    /// [`plain_command`]), and a word the shell would expand (`*.rs`, `~/x`, `$V`) as it was
    /// typed. So `rm '*'` and `rm *` differ, as do `echo '$(x)'` and `echo $(x)`: an
    /// approval or an allow rule written from one never covers the other.
    pub fn written(&self) -> &[Vec<String>] {
        &self.written
    }

    /// Whether [`Self::commands`] is exactly what runs (see the module comment).
    pub fn is_plain(&self) -> bool {
        self.plain
    }

    fn read(&mut self, text: &str, depth: usize) {
        if text.len() > MAX_PARSED_BYTES || depth > MAX_NESTING {
            self.plain = false;
            return;
        }
        let Some(tree) = parse(text) else {
            self.plain = false;
            return;
        };
        let source = text.as_bytes();
        // An explicit stack: a hostile command may nest substitutions thousands deep.
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            if node.is_error() || node.is_missing() {
                self.plain = false;
            }
            let kind = node.kind();
            if node.is_named() {
                if !PLAIN_KINDS.contains(&kind) {
                    self.plain = false;
                }
            } else if !PLAIN_TOKENS.contains(&kind) {
                self.plain = false;
            }
            match kind {
                "command" => self.command(node, source, depth),
                "file_redirect" if !harmless_redirect(node, source) => self.plain = false,
                _ => {}
            }
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }

    fn command(&mut self, node: Node<'_>, source: &[u8], depth: usize) {
        // tree-sitter-bash sometimes reads an unquoted newline as a blank (`ls | ls\nrm x`
        // comes out as one command `ls rm x`), where bash ends the command there: such a
        // command is read again with those newlines as the `;` bash takes them for.
        let text = text_of(node, source);
        if let Some(split) = newlines_as_separators(text) {
            self.read(&split, depth + 1);
            return;
        }
        let mut words = Vec::new();
        let mut written = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            let word = match child.kind() {
                "variable_assignment" | "file_redirect" | "herestring_redirect" | "subshell" => {
                    continue;
                }
                "command_name" => {
                    let name = child.named_child(0).unwrap_or(child);
                    // A name with glob characters could expand to any program.
                    if expands(name, source) {
                        self.plain = false;
                    }
                    name
                }
                _ => child,
            };
            let value = self.word(word, source);
            written.push(
                if expands(word, source) || literal(word, source).is_none() {
                    text_of(word, source).to_owned()
                } else {
                    write_word(&value, words.is_empty()).into_owned()
                },
            );
            words.push(value);
        }
        self.inner_commands(&words, depth);
        self.commands.push(words);
        self.written.push(written);
    }

    /// Adds a command another one runs (`env rm x`, `find -exec rm`): its words are values,
    /// written back as literals.
    fn push_inner(&mut self, words: &[String]) {
        self.written.push(
            words
                .iter()
                .enumerate()
                .map(|(at, w)| write_word(w, at == 0).into_owned())
                .collect(),
        );
        self.commands.push(words.to_vec());
    }

    /// The literal value of a word, or its text as typed when the shell would expand it.
    fn word(&mut self, node: Node<'_>, source: &[u8]) -> String {
        literal(node, source).unwrap_or_else(|| {
            self.plain = false;
            text_of(node, source).to_owned()
        })
    }

    /// Commands that run other commands: what they run is added for deny rules, and the
    /// script is no longer plain.
    fn inner_commands(&mut self, words: &[String], depth: usize) {
        let Some(first) = words.first() else { return };
        let name = program_name(first);
        if WRAPPERS.contains(&name) {
            self.plain = false;
            // Which argument starts the wrapped command depends on each wrapper's options:
            // every later start is a candidate, so `sudo -u x env rm` still shows `rm`.
            for start in 1..words.len() {
                self.push_inner(&words[start..]);
            }
        } else if SHELLS.contains(&name) {
            if let Some(at) = words
                .iter()
                .position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))
            {
                self.plain = false;
                if let Some(script) = words.get(at + 1) {
                    self.read(script, depth + 1);
                }
            }
        } else if EVALUATORS.contains(&name) {
            self.plain = false;
            if name == "eval" {
                self.read(&words[1..].join(" "), depth + 1);
            }
        } else if name == "find" {
            for (at, word) in words.iter().enumerate() {
                if matches!(word.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                    self.plain = false;
                    self.push_inner(&words[at + 1..]);
                }
            }
        }
    }
}

/// `text` with each newline bash would read as the end of a command turned into `;`, or
/// `None` when it has none: newlines in quotes, after a backslash, or inside `$(…)`, `(…)`,
/// `{…}` and backquotes are left alone (what is inside those is read as commands of its own).
fn newlines_as_separators(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    let mut nesting = 0usize;
    let mut backquoted = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = chars.next() {
                    out.push(next);
                }
                continue;
            }
            '\'' if nesting == 0 && !backquoted => {
                out.push(c);
                for q in chars.by_ref() {
                    out.push(q);
                    if q == '\'' {
                        break;
                    }
                }
                continue;
            }
            '"' if nesting == 0 && !backquoted => {
                out.push(c);
                while let Some(q) = chars.next() {
                    out.push(q);
                    match q {
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                out.push(escaped);
                            }
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                continue;
            }
            '(' | '{' => nesting += 1,
            ')' | '}' => nesting = nesting.saturating_sub(1),
            '`' => backquoted = !backquoted,
            '\n' if nesting == 0 && !backquoted => {
                found = true;
                out.push(';');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    found.then_some(out)
}

/// The program a command word names: `/bin/rm` and `rm` are both `rm`.
pub fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Characters that make an unquoted word a pattern the shell expands, or a tilde.
const GLOB_CHARACTERS: [char; 5] = ['*', '?', '[', '{', '~'];

/// Whether the shell would expand the word `node` although it has no substitution: a glob
/// character or a leading tilde outside quotes, in it or in a bare part of it.
fn expands(node: Node<'_>, source: &[u8]) -> bool {
    match node.kind() {
        "word" => text_of(node, source).contains(GLOB_CHARACTERS),
        "concatenation" => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .any(|part| part.kind() == "word" && expands(part, source))
        }
        _ => false,
    }
}

/// A simple command's literal `words` written so that the shell reads them back as those
/// words, with no expansion ([`write_word`] each).
pub fn plain_command(words: &[String]) -> String {
    let written: Vec<_> = words
        .iter()
        .enumerate()
        .map(|(at, word)| write_word(word, at == 0))
        .collect();
    written.join(" ")
}

/// One literal word written so that the shell reads it back as it is: bare when it holds
/// only characters no shell gives a meaning there (`-la`, `src/x.rs`, `--jobs=2`), else in
/// single quotes (`'$(touch x)'`, `'a b'`, `'*'`, `'it'\''s'`, a `first` word `'A=1'`,
/// which unquoted would be an assignment).
fn write_word(word: &str, first: bool) -> std::borrow::Cow<'_, str> {
    let bare = |c: char| {
        c.is_ascii_alphanumeric()
            || "-_./:+,@%^".contains(c)
            || (c == '=' && !first && !word.starts_with('='))
            || !c.is_ascii()
    };
    if !word.is_empty() && word.chars().all(bare) {
        word.into()
    } else {
        format!("'{}'", word.replace('\'', "'\\''")).into()
    }
}

/// The tree of `text`. The parser sees every byte past ASCII as `a`: bash reads such bytes
/// only as parts of words (its blanks and operators are all ASCII), and tree-sitter-bash's
/// scanner passes a character it just read to `isdigit`, which reads out of bounds (and can
/// crash the process) for one past 255, as in `{é`. The length is kept, so the tree's byte
/// ranges still point into `text`.
fn parse(text: &str) -> Option<tree_sitter::Tree> {
    let ascii: Vec<u8> = text
        .bytes()
        .map(|b| if b.is_ascii() { b } else { b'a' })
        .collect();
    thread_local! {
        static PARSER: RefCell<Option<Parser>> = RefCell::new({
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()
                .map(|()| parser)
        });
    }
    PARSER.with(|parser| parser.borrow_mut().as_mut()?.parse(&ascii, None))
}

fn text_of<'s>(node: Node<'_>, source: &'s [u8]) -> &'s str {
    node.utf8_text(source).unwrap_or("")
}

/// The value of a word with no expansion in it.
fn literal(node: Node<'_>, source: &[u8]) -> Option<String> {
    let text = text_of(node, source);
    match node.kind() {
        "word" | "number" => Some(unescape(text, |_| true)),
        "raw_string" => text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .map(str::to_owned),
        "string" => {
            let mut cursor = node.walk();
            if node
                .named_children(&mut cursor)
                .any(|c| c.kind() != "string_content")
            {
                return None;
            }
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            Some(unescape(inner, |c| matches!(c, '"' | '\\' | '$' | '`')))
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let parts: Option<Vec<String>> = node
                .named_children(&mut cursor)
                .map(|part| literal(part, source))
                .collect();
            parts.map(|p| p.concat())
        }
        _ => None,
    }
}

/// Removes the backslashes the shell removes: before any character outside quotes, before
/// `"`, `\`, `$` and `` ` `` inside double quotes; a backslash-newline disappears.
fn unescape(text: &str, escapable: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') => {}
            Some(next) if escapable(next) => out.push(next),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A redirection that writes or reads no file: to `/dev/null`, or between descriptors.
fn harmless_redirect(node: Node<'_>, source: &[u8]) -> bool {
    let mut cursor = node.walk();
    let operator = node
        .children(&mut cursor)
        .find(|c| !c.is_named())
        .map(|c| c.kind());
    let destination = node
        .child_by_field_name("destination")
        .and_then(|d| literal(d, source));
    match (operator, destination.as_deref()) {
        (Some(">" | ">>" | "&>" | "&>>"), Some("/dev/null")) => true,
        (Some(">&" | "<&"), Some(d)) => d == "-" || d.chars().all(|c| c.is_ascii_digit()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(script: &Script) -> Vec<String> {
        script.commands().iter().map(|c| c.join(" ")).collect()
    }

    #[test]
    fn plain_sequences_list_every_command() {
        let s = Script::parse("ls -la && cargo test --all; echo 'a b' | wc -l");
        assert!(s.is_plain());
        let mut found = words(&s);
        found.sort();
        assert_eq!(found, ["cargo test --all", "echo a b", "ls -la", "wc -l"]);
        assert!(Script::parse("cargo build 2>&1 >/dev/null").is_plain());
        assert!(Script::parse("sleep 1 &").is_plain());
    }

    #[test]
    fn quotes_and_escapes_are_removed_from_words() {
        for text in ["\\rm x", "'rm' x", "\"rm\" x", "r\"\"m x", "r'm' x"] {
            let s = Script::parse(text);
            assert!(s.is_plain(), "{text}");
            assert_eq!(words(&s), ["rm x"], "{text}");
        }
    }

    #[test]
    fn syntax_that_hides_what_runs_is_not_plain() {
        for text in [
            "echo $(rm x)",
            "echo `rm x`",
            "ls > out.txt",
            "cat < /etc/passwd",
            "X=1 ls",
            "$CMD x",
            "(rm x)",
            "{ rm x; }",
            "for f in *; do rm $f; done",
            "cat <<EOF\nhi\nEOF",
            "env rm x",
            "bash -c 'rm x'",
            "eval rm x",
            "find . -exec rm {} ;",
            "/bin/r? x",
            "ls &&",
            "echo \"$HOME\"",
        ] {
            assert!(!Script::parse(text).is_plain(), "{text}");
        }
    }

    #[test]
    fn commands_inside_other_syntax_are_still_found() {
        let has = |text: &str, wanted: &str| {
            let found = words(&Script::parse(text));
            assert!(
                found.iter().any(|w| w.starts_with(wanted)),
                "{text}: {found:?}"
            );
        };
        has("echo $(rm x)", "rm x");
        has("echo `rm x`", "rm x");
        has("(cd a && rm x)", "rm x");
        has("sudo -u me env rm x", "rm x");
        has("bash -lc 'true; rm x'", "rm x");
        has("sh -c \"rm x\"", "rm x");
        has("eval 'rm x'", "rm x");
        has("find . -name a -exec rm {} +", "rm {}");
        has("if true; then rm x; fi", "rm x");
    }

    #[test]
    fn deep_nesting_and_huge_commands_do_not_overflow() {
        let deep = format!("{}rm x{}", "$(".repeat(5000), ")".repeat(5000));
        assert!(!Script::parse(&deep).is_plain());
        let huge = "a ".repeat(MAX_PARSED_BYTES);
        let s = Script::parse(&huge);
        assert!(!s.is_plain());
        assert!(s.commands().is_empty());
    }

    #[test]
    fn characters_past_ascii_are_words() {
        // `{` then a character past 255 made tree-sitter-bash's scanner read out of bounds.
        for text in ["echo {é", "echo {\u{1F600}..", "ls {\u{10FFFF}"] {
            let _ = Script::parse(text);
        }
        let s = Script::parse("echo héllo wörld && rm é");
        assert!(s.is_plain());
        assert_eq!(words(&s).len(), 2);
        assert!(
            words(&s).contains(&"echo héllo wörld".to_owned()),
            "{:?}",
            words(&s)
        );
        assert!(words(&s).contains(&"rm é".to_owned()), "{:?}", words(&s));
    }

    #[test]
    fn program_names_drop_their_directory() {
        assert_eq!(program_name("/bin/rm"), "rm");
        assert_eq!(program_name("rm"), "rm");
        assert_eq!(program_name("./x/"), "");
    }
}
