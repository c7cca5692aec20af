//! Unified diffs of what `edit` and `write` change: shown in an approval prompt before the
//! call, and carried in the call's `file_change` after it.

use std::time::Duration;

/// Lines of context around each change, as `diff -u` and git show them.
const CONTEXT_LINES: usize = 3;

/// Text past this size (before and after together) gets no diff: a person does not read it,
/// and computing it would hold up the call.
pub const MAX_DIFF_INPUT: usize = 1 << 20;

/// How long computing one diff may take before `similar` settles for a coarser one.
const DIFF_DEADLINE: Duration = Duration::from_millis(200);

/// The unified diff turning `before` (`None`: the file is new) into `after`, with `path` in
/// its headers as git writes them; `None` when the text is too large to show.
pub fn unified(path: &str, before: Option<&str>, after: &str) -> Option<String> {
    let old = before.unwrap_or("");
    if old.len() + after.len() > MAX_DIFF_INPUT {
        return None;
    }
    let diff = similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, after);
    let from = match before {
        Some(_) => format!("a/{path}"),
        None => "/dev/null".to_owned(),
    };
    Some(
        diff.unified_diff()
            .context_radius(CONTEXT_LINES)
            .missing_newline_hint(true)
            .header(&from, &format!("b/{path}"))
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_shown_with_its_context_and_git_headers() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let diff = unified("src/x.txt", Some(before), after).unwrap();
        assert_eq!(
            diff,
            "--- a/src/x.txt\n+++ b/src/x.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn a_new_file_comes_from_dev_null_and_a_huge_one_has_no_diff() {
        let diff = unified("n.txt", None, "one\n").unwrap();
        assert!(diff.starts_with("--- /dev/null\n+++ b/n.txt\n"), "{diff}");
        assert!(diff.ends_with("+one\n"), "{diff}");
        assert_eq!(unified("big", None, &"x".repeat(MAX_DIFF_INPUT + 1)), None);
    }
}
