//! A `CLAUDE.md` file's imports, as Claude Code reads them: `@path` (relative to the file,
//! absolute, or `~/`) anywhere but in a code span or block, followed up to [`MAX_HOPS`]
//! deep, each file once. What a repository's file may import is bounded like the file
//! itself: a file inside the repository, or a Markdown file of the person's Claude Code
//! home that is not hidden (`@~/.claude/my-project.md`, the documented way to keep one's
//! own instructions out of the repository) — never `~/.ssh/…` or Claude Code's own
//! `.credentials.json`. The person's own files may import any of their files.

use std::path::{Path, PathBuf};

use super::read::{read_inside, read_own};
use super::{Found, Homes};

/// How deep imports are followed (Claude Code's limit).
const MAX_HOPS: usize = 5;

/// What the person's own `file` (with `text`) imports, in order.
pub(super) fn of_own(file: &Path, text: &str) -> Vec<Found> {
    follow(file, text, &|path: &Path| read_own(path))
}

/// What the repository's `file` (with `text`) imports, in order: inside `repository` and
/// not in `hidden`, or a Markdown file of the Claude Code home.
pub(super) fn of_project(
    file: &Path,
    text: &str,
    repository: &Path,
    hidden: &[PathBuf],
    homes: &Homes,
) -> Vec<Found> {
    let claude_home = homes.claude.as_ref().and_then(|h| h.canonicalize().ok());
    let inside = repository.canonicalize().ok();
    follow(file, text, &|path: &Path| {
        let real = path.canonicalize().ok()?;
        if inside.as_ref().is_some_and(|r| real.starts_with(r)) {
            return read_inside(path, repository, hidden);
        }
        let home = claude_home.as_ref()?;
        let markdown = real.extension().is_some_and(|e| e == "md");
        let visible = real
            .strip_prefix(home)
            .ok()?
            .components()
            .all(|c| !c.as_os_str().to_string_lossy().starts_with('.'));
        (markdown && visible).then(|| read_own(&real)).flatten()
    })
}

/// The files `text` (of `file`) imports and those they import, breadth first, each read by
/// `read` (which says no by `None`).
fn follow(file: &Path, text: &str, read: &dyn Fn(&Path) -> Option<String>) -> Vec<Found> {
    let mut seen: Vec<PathBuf> = file.canonicalize().into_iter().collect();
    let mut found = Vec::new();
    let mut level = vec![(file.to_path_buf(), text.to_owned())];
    for _ in 0..MAX_HOPS {
        let mut next = Vec::new();
        for (from, text) in &level {
            for named in imported_paths(text) {
                let path = resolve(from, &named);
                let Ok(real) = path.canonicalize() else {
                    continue;
                };
                if seen.contains(&real) {
                    continue;
                }
                seen.push(real);
                let Some(text) = read(&path) else {
                    tracing::warn!(file = %from.display(), import = %named, "an instruction file's import is outside what it may import: not read");
                    continue;
                };
                found.push(Found {
                    file: path.clone(),
                    shown: format!("{} (imported by {})", path.display(), from.display()),
                    text: text.clone(),
                });
                next.push((path, text));
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    found
}

/// Where `named` (an import of `from`) is.
fn resolve(from: &Path, named: &str) -> PathBuf {
    if let Some(rest) = named.strip_prefix("~/")
        && let Some(home) = dirs::home_dir()
    {
        return home.join(rest);
    }
    let path = Path::new(named);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    from.parent().unwrap_or(Path::new(".")).join(path)
}

/// The `@path` imports of `text`, in order: a word that starts with `@` after the start of
/// a line or a space, outside fenced code blocks and inline code spans.
fn imported_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        let mut previous = ' ';
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '`' {
                in_code = !in_code;
            } else if c == '@' && !in_code && previous.is_whitespace() {
                let word: String = chars[i + 1..]
                    .iter()
                    .take_while(|c| !c.is_whitespace() && **c != '`')
                    .collect();
                let word = word.trim_end_matches(['.', ',', ';', ':', ')']);
                if !word.is_empty() && !word.starts_with('@') {
                    paths.push(word.to_owned());
                }
                i += 1 + word.chars().count();
                previous = 'x';
                continue;
            }
            previous = c;
            i += 1;
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::imported_paths;

    #[test]
    fn imports_are_words_after_an_at_outside_code() {
        let text = "See @README.md and @docs/git.md.\nmail me@example.com\n`@not/this`\n```\n@nor/this\n```\n@~/.claude/mine.md";
        assert_eq!(
            imported_paths(text),
            ["README.md", "docs/git.md", "~/.claude/mine.md"]
        );
    }
}
