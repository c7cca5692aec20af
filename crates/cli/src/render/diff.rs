//! Unified diffs on the terminal: coloured (`+` green, `-` red, hunk headers cyan), whole in
//! an approval prompt, folded to a few lines under a finished `edit` or `write`.

use console::style;

use super::visible::one_line;

/// The lines of `diff` to print, each after `indent`: at most `max` lines of hunks (the
/// file headers are left out when folding), then how many more there are.
pub fn diff_lines(diff: &str, indent: &str, max: usize, folded: bool) -> Vec<String> {
    let body: Vec<&str> = diff
        .lines()
        .filter(|l| !(folded && (l.starts_with("--- ") || l.starts_with("+++ "))))
        .collect();
    let mut lines: Vec<String> = body
        .iter()
        .take(max)
        .map(|line| format!("{indent}{}", paint(line)))
        .collect();
    if body.len() > max {
        lines.push(format!(
            "{indent}{}",
            style(format!("… {} more diff line(s)", body.len() - max)).dim()
        ));
    }
    lines
}

/// One diff line, shown safely and coloured by its kind.
fn paint(line: &str) -> String {
    let shown = one_line(line);
    if line.starts_with("+++ ") || line.starts_with("--- ") {
        style(shown).bold().to_string()
    } else if line.starts_with("@@") {
        style(shown).cyan().to_string()
    } else if line.starts_with('+') {
        style(shown).green().to_string()
    } else if line.starts_with('-') {
        style(shown).red().to_string()
    } else {
        style(shown).dim().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";

    fn plain(lines: Vec<String>) -> Vec<String> {
        lines
            .into_iter()
            .map(|l| console::strip_ansi_codes(&l).into_owned())
            .collect()
    }

    #[test]
    fn a_folded_diff_drops_the_headers_and_says_what_it_left_out() {
        assert_eq!(
            plain(diff_lines(DIFF, "  ", 3, true)),
            [
                "  @@ -1,3 +1,3 @@",
                "   a",
                "  -b",
                "  … 2 more diff line(s)"
            ]
        );
        assert_eq!(plain(diff_lines(DIFF, "", 100, false)).len(), 7);
    }

    #[test]
    fn escape_sequences_in_a_diff_are_shown_not_acted_on() {
        let lines = plain(diff_lines("+\u{1b}[2Jgone\n", "", 5, true));
        assert_eq!(lines, ["+\\u{1b}[2Jgone"]);
    }
}
