//! An updated file's new text: each hunk's lines are found in the file, in order, and
//! replaced. Lines are compared as Codex compares them: exactly, then ignoring trailing
//! spaces, then ignoring surrounding spaces, then with typographic dashes, quotes and spaces
//! read as their ASCII forms, so a model's copy of a line still finds it.

use super::parse::{Hunk, clip};

/// `text` with `hunks` applied, or one line naming the hunk that does not apply and where
/// its search began.
pub(crate) fn apply_hunks(text: &str, hunks: &[Hunk], path: &str) -> Result<String, String> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    // A final newline leaves an empty last piece, which is not a line.
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let mut replacements: Vec<(usize, usize, &[String])> = Vec::new();
    let mut cursor = 0;
    for (number, hunk) in hunks.iter().enumerate() {
        let not_found = |what: String, from: usize| {
            format!(
                "`{path}`: hunk {} (patch line {}) does not apply: {what} was not found from line {} of the file; read the file and copy its lines exactly",
                number + 1,
                hunk.line,
                from + 1
            )
        };
        if let Some(header) = &hunk.header {
            let wanted = [header.clone()];
            let Some(at) = seek(&lines, &wanted, cursor, false) else {
                return Err(not_found(format!("the line `@@ {}`", clip(header)), cursor));
            };
            cursor = at + 1;
        }
        if hunk.old.is_empty() {
            // Only added lines: after the header's line, or at the end of the file.
            let at = if hunk.header.is_some() {
                cursor
            } else {
                lines.len()
            };
            replacements.push((at, 0, &hunk.new));
            continue;
        }
        let (mut old, mut new) = (&hunk.old[..], &hunk.new[..]);
        let mut found = seek(&lines, old, cursor, hunk.at_end);
        // A hunk ending in an empty line may stand for the end of the file, which has none.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, cursor, hunk.at_end);
        }
        let Some(at) = found else {
            return Err(not_found(
                format!("its line `{}`", clip(&hunk.old[0])),
                cursor,
            ));
        };
        replacements.push((at, old.len(), new));
        cursor = at + old.len();
    }
    let mut result: Vec<&str> = lines;
    for (at, removed, added) in replacements.into_iter().rev() {
        result.splice(at..at + removed, added.iter().map(String::as_str));
    }
    let mut text = result.join("\n");
    text.push('\n');
    Ok(text)
}

/// Where `wanted` starts in `lines` at or after `from` (at the end first when `at_end`),
/// trying each way of comparing lines in turn.
fn seek(lines: &[&str], wanted: &[String], from: usize, at_end: bool) -> Option<usize> {
    if wanted.len() > lines.len() {
        return None;
    }
    let last = lines.len() - wanted.len();
    let comparisons: [fn(&str, &str) -> bool; 4] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
        |a, b| normalized(a) == normalized(b),
    ];
    for same in comparisons {
        let matches = |start: usize| wanted.iter().zip(&lines[start..]).all(|(w, l)| same(l, w));
        if at_end && last >= from && matches(last) {
            return Some(last);
        }
        if let Some(at) = (from..=last).find(|&start| matches(start)) {
            return Some(at);
        }
    }
    None
}

/// `line` trimmed, with typographic punctuation and spaces as ASCII.
fn normalized(line: &str) -> String {
    line.trim()
        .chars()
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::parse::{FileOp, parse};
    use super::*;

    fn hunks(patch: &str) -> Vec<Hunk> {
        match parse(patch).unwrap().remove(0) {
            FileOp::Update { hunks, .. } => hunks,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn several_hunks_in_order() {
        let text = "a\nb\nc\nd\ne\nf\ng\n";
        let patch = "*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+B\n c\n@@\n e\n-f\n+F\n+F2\n g\n*** End Patch";
        assert_eq!(
            apply_hunks(text, &hunks(patch), "f").unwrap(),
            "a\nB\nc\nd\ne\nF\nF2\ng\n"
        );
    }

    #[test]
    fn a_header_places_a_repeated_line() {
        let text = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
        let patch =
            "*** Begin Patch\n*** Update File: f\n@@ fn b() {\n-    x();\n+    y();\n*** End Patch";
        assert_eq!(
            apply_hunks(text, &hunks(patch), "f").unwrap(),
            "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n"
        );
    }

    #[test]
    fn loose_matches_and_the_end_of_the_file() {
        let text = "let s = \u{201C}hi\u{201D};  \nend\nend";
        let patch = "*** Begin Patch\n*** Update File: f\n@@\n-let s = \"hi\";\n+let s = \"bye\";\n@@\n-end\n+END\n*** End of File\n*** End Patch";
        assert_eq!(
            apply_hunks(text, &hunks(patch), "f").unwrap(),
            "let s = \"bye\";\nend\nEND\n"
        );
    }

    #[test]
    fn a_stale_hunk_says_which_and_where() {
        let text = "a\nb\n";
        let patch = "*** Begin Patch\n*** Update File: f\n@@\n-b\n+B\n@@\n-a\n+A\n*** End Patch";
        let error = apply_hunks(text, &hunks(patch), "f").unwrap_err();
        assert_eq!(
            error,
            "`f`: hunk 2 (patch line 6) does not apply: its line `a` was not found from line 3 of the file; read the file and copy its lines exactly"
        );
    }
}
