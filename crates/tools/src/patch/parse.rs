//! The patch format Codex's models write (`*** Begin Patch` … `*** End Patch`), read into
//! file operations. The grammar:
//!
//! ```text
//! Patch      := "*** Begin Patch" NL { FileOp } "*** End Patch" [NL]
//! FileOp     := AddFile | DeleteFile | UpdateFile
//! AddFile    := "*** Add File: " path NL { "+" line NL }
//! DeleteFile := "*** Delete File: " path NL
//! UpdateFile := "*** Update File: " path NL [ "*** Move to: " path NL ] Hunk { Hunk }
//! Hunk       := "@@" [ " " header ] NL { (" " | "-" | "+") line NL } [ "*** End of File" NL ]
//! ```
//!
//! As Codex reads it, markers may carry surrounding spaces, the first hunk of a file may
//! leave out its `@@` line, and an empty line inside a hunk is an empty context line. Every
//! error names the patch line it is about.

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileOp {
    /// A new file with these lines.
    Add { path: String, lines: Vec<String> },
    /// A file to remove.
    Delete { path: String },
    /// A file to change (and perhaps rename).
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

impl FileOp {
    /// The path the operation names first.
    pub(crate) fn path(&self) -> &str {
        match self {
            Self::Add { path, .. } | Self::Delete { path } | Self::Update { path, .. } => path,
        }
    }
}

/// One change of an updated file: lines to find and what replaces them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Hunk {
    /// The `@@` header: a line (a function, a class) the change comes after.
    pub header: Option<String>,
    /// The lines as they are (context and removed lines).
    pub old: Vec<String>,
    /// The lines as they become (context and added lines).
    pub new: Vec<String>,
    /// `*** End of File`: the lines end the file.
    pub at_end: bool,
    /// The patch line the hunk starts on (1-based).
    pub line: usize,
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// The file operations of `text`, or one line saying what is wrong and on which line.
pub(crate) fn parse(text: &str) -> Result<Vec<FileOp>, String> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return Err("the patch is empty; it starts with `*** Begin Patch`".to_owned());
    };
    if lines[first].trim() != BEGIN {
        return Err(format!("line {}: a patch starts with `{BEGIN}`", first + 1));
    }
    if last == first || lines[last].trim() != END {
        return Err(format!("line {}: a patch ends with `{END}`", last + 1));
    }
    let mut reader = Reader {
        lines: &lines[..last],
        at: first + 1,
    };
    let mut ops = Vec::new();
    while let Some(line) = reader.peek() {
        let marker = line.trim();
        let number = reader.at + 1;
        if let Some(path) = marker.strip_prefix(ADD.trim_end()) {
            reader.at += 1;
            ops.push(reader.add(path_of(path, number)?)?);
        } else if let Some(path) = marker.strip_prefix(DELETE.trim_end()) {
            reader.at += 1;
            ops.push(FileOp::Delete {
                path: path_of(path, number)?,
            });
        } else if let Some(path) = marker.strip_prefix(UPDATE.trim_end()) {
            reader.at += 1;
            ops.push(reader.update(path_of(path, number)?, number)?);
        } else if marker.is_empty() {
            reader.at += 1;
        } else {
            return Err(format!(
                "line {number}: `{}` is not a file operation; each starts with `{}`, `{}` or `{}`",
                clip(line),
                ADD.trim_end(),
                DELETE.trim_end(),
                UPDATE.trim_end()
            ));
        }
    }
    if ops.is_empty() {
        return Err("the patch changes no file".to_owned());
    }
    Ok(ops)
}

/// A path after a marker's colon; empty is an error.
fn path_of(rest: &str, line: usize) -> Result<String, String> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(format!("line {line}: the file operation names no path"));
    }
    Ok(path.to_owned())
}

/// At most 60 characters of a line, for messages.
pub(crate) fn clip(line: &str) -> String {
    match line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// Whether `line` starts the next file operation (or ends the patch).
fn is_file_marker(line: &str) -> bool {
    let marker = line.trim();
    [ADD, DELETE, UPDATE]
        .iter()
        .any(|m| marker.starts_with(m.trim_end()))
        || marker == END
}

struct Reader<'a> {
    lines: &'a [&'a str],
    /// Index of the next line.
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    fn add(&mut self, path: String) -> Result<FileOp, String> {
        let mut lines = Vec::new();
        while let Some(line) = self.peek() {
            if is_file_marker(line) {
                break;
            }
            let Some(content) = line.strip_prefix('+') else {
                return Err(format!(
                    "line {}: every line of an added file starts with `+` (`{path}`)",
                    self.at + 1
                ));
            };
            lines.push(content.to_owned());
            self.at += 1;
        }
        Ok(FileOp::Add { path, lines })
    }

    fn update(&mut self, path: String, header_line: usize) -> Result<FileOp, String> {
        let mut move_to = None;
        if let Some(target) = self
            .peek()
            .and_then(|l| l.trim().strip_prefix(MOVE.trim_end()))
        {
            move_to = Some(path_of(target, self.at + 1)?);
            self.at += 1;
        }
        let mut hunks: Vec<Hunk> = Vec::new();
        while let Some(line) = self.peek() {
            if is_file_marker(line) {
                break;
            }
            let trimmed = line.trim();
            let starts_hunk = trimmed == "@@" || trimmed.starts_with("@@ ");
            if !starts_hunk && !hunks.is_empty() {
                return Err(format!(
                    "line {}: `{}` is not a hunk line; hunk lines start with ` `, `-` or `+`, and a new hunk with `@@`",
                    self.at + 1,
                    clip(line)
                ));
            }
            hunks.push(self.hunk(starts_hunk)?);
        }
        if hunks.is_empty() {
            return Err(format!(
                "line {header_line}: `{UPDATE}{path}` has no hunks; give the lines to change after `@@`"
            ));
        }
        Ok(FileOp::Update {
            path,
            move_to,
            hunks,
        })
    }

    /// One hunk; `with_header`: the current line is its `@@` line.
    fn hunk(&mut self, with_header: bool) -> Result<Hunk, String> {
        let mut hunk = Hunk {
            line: self.at + 1,
            ..Hunk::default()
        };
        if with_header {
            let header = self.peek().unwrap_or_default().trim()["@@".len()..].trim();
            hunk.header = (!header.is_empty()).then(|| header.to_owned());
            self.at += 1;
        }
        let mut changes = 0;
        while let Some(line) = self.peek() {
            let trimmed = line.trim();
            if is_file_marker(line) || trimmed == "@@" || trimmed.starts_with("@@ ") {
                break;
            }
            if trimmed == END_OF_FILE {
                hunk.at_end = true;
                self.at += 1;
                break;
            }
            match line.chars().next() {
                None => {
                    hunk.old.push(String::new());
                    hunk.new.push(String::new());
                }
                Some(' ') => {
                    hunk.old.push(line[1..].to_owned());
                    hunk.new.push(line[1..].to_owned());
                }
                Some('-') => {
                    hunk.old.push(line[1..].to_owned());
                    changes += 1;
                }
                Some('+') => {
                    hunk.new.push(line[1..].to_owned());
                    changes += 1;
                }
                Some(_) if hunk.old.is_empty() && hunk.new.is_empty() => {
                    return Err(format!(
                        "line {}: `{}` is not a hunk line; hunk lines start with ` `, `-` or `+`",
                        self.at + 1,
                        clip(line)
                    ));
                }
                // The end of this hunk; the caller says what is wrong with the line.
                Some(_) => break,
            }
            self.at += 1;
        }
        if changes == 0 {
            return Err(format!(
                "line {}: the hunk changes nothing; mark removed lines with `-` and added ones with `+`",
                hunk.line
            ));
        }
        Ok(hunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_of_the_format() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: hello.txt\n+Hello world\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello, world!\")\n*** Delete File: obsolete.txt\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(
            ops,
            vec![
                FileOp::Add {
                    path: "hello.txt".into(),
                    lines: vec!["Hello world".into()]
                },
                FileOp::Update {
                    path: "src/app.py".into(),
                    move_to: Some("src/main.py".into()),
                    hunks: vec![Hunk {
                        header: Some("def greet():".into()),
                        old: vec!["print(\"Hi\")".into()],
                        new: vec!["print(\"Hello, world!\")".into()],
                        at_end: false,
                        line: 6,
                    }]
                },
                FileOp::Delete {
                    path: "obsolete.txt".into()
                },
            ]
        );
    }

    #[test]
    fn codex_leniencies() {
        let ops = parse(
            "  *** Begin Patch \n*** Update File: a.txt\n a\n-b\n+B\n\n c\n@@\n-z\n+Z\n*** End of File\n *** End Patch\n",
        )
        .unwrap();
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!("{ops:?}")
        };
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].old, ["a", "b", "", "c"]);
        assert_eq!(hunks[0].new, ["a", "B", "", "c"]);
        assert!(hunks[1].at_end);
    }

    #[test]
    fn mistakes_name_their_line() {
        for (text, says) in [
            ("", "the patch is empty"),
            (
                "*** Begin Patch\n*** End Patch",
                "the patch changes no file",
            ),
            ("diff --git a b\n", "line 1: a patch starts with"),
            (
                "*** Begin Patch\n*** Add File: a\n+x\n",
                "line 3: a patch ends with",
            ),
            (
                "*** Begin Patch\n*** Add File: a\nx\n*** End Patch",
                "line 3: every line",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End Patch",
                "line 2: `*** Update File: a` has no hunks",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n a\n*** End Patch",
                "line 3: the hunk changes nothing",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n-a\n+b\nnot a hunk line\n*** End Patch",
                "line 6: `not a hunk line` is not a hunk line",
            ),
            (
                "*** Begin Patch\n*** Copy File: a\n*** End Patch",
                "line 2: `*** Copy File: a` is not a file operation",
            ),
            (
                "*** Begin Patch\n*** Delete File:   \n*** End Patch",
                "line 2: the file operation names no path",
            ),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.starts_with(says), "{text:?}: {error}");
        }
    }
}
