//! The answer's Markdown as it streams, for a person at a terminal: each line is drawn once
//! it is complete — headings, list items, quotes, rules, emphasis, inline code and links —
//! code blocks are highlighted by their language (`syntect`, loaded at the first one), and a
//! table is held until its last row so its columns line up. Everything else is the text as
//! the model wrote it. Without colours (`NO_COLOR`, not a terminal) the markers still go and
//! the structure stays; `--no-markdown` (or stdout not a terminal) shows the text as sent.
//!
//! The text reaching here has had its control characters made visible already
//! (`visible.rs`): the only escapes written are this module's own.

use std::sync::OnceLock;

use console::{Style, measure_text_width};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

/// The syntaxes code blocks are highlighted with, loaded at the first code block.
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The colours of highlighted code: a dark theme with enough contrast on a light terminal.
fn theme() -> Option<&'static Theme> {
    static THEMES: OnceLock<ThemeSet> = OnceLock::new();
    THEMES
        .get_or_init(ThemeSet::load_defaults)
        .themes
        .get("base16-eighties.dark")
}

/// How wide a rule is drawn.
const RULE_WIDTH: usize = 40;

/// Renders an answer's Markdown a line at a time as its text streams in.
pub struct MarkdownStream {
    /// The line not yet ended.
    pending: String,
    /// The code block the lines are in, if any.
    code: Option<CodeBlock>,
    /// The rows of the table being read.
    table: Vec<String>,
    /// Whether styles are drawn (else only the structure).
    color: bool,
}

/// An open fenced code block.
struct CodeBlock {
    /// Its fence (three or more backticks or tildes): a line of at least these closes it.
    fence: String,
    /// Its language's highlighter, when colours are on and the language is known.
    highlighter: Option<HighlightLines<'static>>,
}

impl MarkdownStream {
    /// A renderer drawing styles when `color`.
    pub fn new(color: bool) -> Self {
        Self {
            pending: String::new(),
            code: None,
            table: Vec::new(),
            color,
        }
    }

    /// Takes the next piece of the answer; what can be drawn now (whole lines).
    pub fn push(&mut self, text: &str) -> String {
        self.pending.push_str(text);
        let mut out = String::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            out.push_str(&self.line(line.trim_end_matches(['\n', '\r'])));
        }
        out
    }

    /// The answer ended: the rest of it (a last line without its newline, a table).
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            out.push_str(&self.line(&line));
        }
        out.push_str(&self.flush_table());
        self.code = None;
        out
    }

    /// One whole line, drawn (with its newline), or held (a table row, a fence).
    fn line(&mut self, line: &str) -> String {
        if let Some(code) = &mut self.code {
            let trimmed = line.trim();
            let closes = trimmed.starts_with(&code.fence)
                && trimmed.chars().all(|c| c == fence_char(&code.fence));
            if closes {
                self.code = None;
                return String::new();
            }
            return code_line(code, line, self.color);
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with('|') {
            self.table.push(trimmed.to_owned());
            return String::new();
        }
        let mut out = self.flush_table();
        if let Some(fence) = opening_fence(trimmed) {
            let language = trimmed[fence.len()..].split_whitespace().next();
            self.code = Some(CodeBlock {
                highlighter: self
                    .color
                    .then(|| highlighter(language.unwrap_or_default()))
                    .flatten(),
                fence,
            });
            return out;
        }
        out.push_str(&self.block_line(line));
        out.push('\n');
        out
    }

    /// A line outside code and tables: its block marker drawn, its text inline.
    fn block_line(&self, line: &str) -> String {
        let indent = &line[..line.len() - line.trim_start().len()];
        let text = line.trim_start();
        if let Some((level, heading)) = heading(text) {
            let style = match level {
                1 => Style::new().bold().underlined().cyan(),
                2 => Style::new().bold().cyan(),
                _ => Style::new().bold(),
            };
            return self.styled(style, &self.inline(heading));
        }
        if is_rule(text) {
            return self.styled(Style::new().dim(), &"─".repeat(RULE_WIDTH));
        }
        if let Some(quoted) = text.strip_prefix('>') {
            let bar = self.styled(Style::new().dim(), "│");
            let quoted = self.inline(quoted.trim_start());
            return format!(
                "{indent}{bar} {}",
                self.styled(Style::new().italic(), &quoted)
            );
        }
        if let Some(item) = ["- ", "* ", "+ "].iter().find_map(|m| text.strip_prefix(m)) {
            return format!("{indent}• {}", self.inline(item));
        }
        if let Some((number, item)) = numbered(text) {
            return format!("{indent}{number} {}", self.inline(item));
        }
        format!("{indent}{}", self.inline(text))
    }

    /// `text` with its emphasis, code and links drawn and their markers gone.
    fn inline(&self, text: &str) -> String {
        let mut out = String::new();
        let (mut bold, mut italic, mut strike) = (0u32, 0u32, 0u32);
        let mut links: Vec<(String, usize)> = Vec::new();
        let options = Options::ENABLE_STRIKETHROUGH;
        for event in Parser::new_ext(text, options) {
            match event {
                Event::Start(Tag::Strong) => bold += 1,
                Event::End(TagEnd::Strong) => bold = bold.saturating_sub(1),
                Event::Start(Tag::Emphasis) => italic += 1,
                Event::End(TagEnd::Emphasis) => italic = italic.saturating_sub(1),
                Event::Start(Tag::Strikethrough) => strike += 1,
                Event::End(TagEnd::Strikethrough) => strike = strike.saturating_sub(1),
                Event::Start(Tag::Link { dest_url, .. }) => {
                    links.push((dest_url.to_string(), out.len()));
                }
                Event::End(TagEnd::Link) => {
                    if let Some((url, from)) = links.pop() {
                        let shown = console::strip_ansi_codes(&out[from..]).into_owned();
                        if !url.is_empty() && shown != url {
                            let url = self.styled(Style::new().dim().underlined(), &url);
                            out.push_str(&format!(" ({url})"));
                        }
                    }
                }
                Event::Code(code) => {
                    out.push_str(&self.styled(Style::new().yellow(), &code));
                }
                Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => {
                    let mut style = Style::new();
                    if bold > 0 {
                        style = style.bold();
                    }
                    if italic > 0 {
                        style = style.italic();
                    }
                    if strike > 0 {
                        style = style.strikethrough();
                    }
                    if !links.is_empty() {
                        style = style.underlined().blue();
                    }
                    out.push_str(&self.styled(style, &text));
                }
                Event::SoftBreak | Event::HardBreak => out.push(' '),
                Event::FootnoteReference(name) => out.push_str(&format!("[^{name}]")),
                Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
                _ => {}
            }
        }
        out
    }

    /// `text` in `style` when colours are on.
    fn styled(&self, style: Style, text: &str) -> String {
        style.force_styling(self.color).apply_to(text).to_string()
    }

    /// The table read so far, its columns lined up (nothing when there is none).
    fn flush_table(&mut self) -> String {
        if self.table.is_empty() {
            return String::new();
        }
        let rows: Vec<Vec<String>> = std::mem::take(&mut self.table)
            .iter()
            .map(|row| cells(row))
            .collect();
        let rule = |cells: &[String]| {
            !cells.is_empty()
                && cells.iter().all(|c| {
                    let c = c.trim_matches(':');
                    !c.is_empty() && c.chars().all(|ch| ch == '-')
                })
        };
        let drawn: Vec<Option<Vec<String>>> = rows
            .iter()
            .enumerate()
            .map(|(n, cells)| {
                (!rule(cells)).then(|| {
                    cells
                        .iter()
                        .map(|cell| {
                            let text = self.inline(cell);
                            // The header (the row above the rule) is bold.
                            if n == 0 && rows.get(1).is_some_and(|r| rule(r)) {
                                self.styled(Style::new().bold(), &console::strip_ansi_codes(&text))
                            } else {
                                text
                            }
                        })
                        .collect()
                })
            })
            .collect();
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                drawn
                    .iter()
                    .flatten()
                    .filter_map(|row| row.get(c))
                    .map(|cell| measure_text_width(cell))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let bar = self.styled(Style::new().dim(), " │ ");
        let mut out = String::new();
        for row in &drawn {
            match row {
                Some(cells) => {
                    let padded: Vec<String> = widths
                        .iter()
                        .enumerate()
                        .map(|(c, width)| {
                            let cell = cells.get(c).map(String::as_str).unwrap_or_default();
                            let pad = width.saturating_sub(measure_text_width(cell));
                            format!("{cell}{}", " ".repeat(pad))
                        })
                        .collect();
                    out.push_str(padded.join(&bar).trim_end());
                }
                None => {
                    let lines: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                    out.push_str(&self.styled(Style::new().dim(), &lines.join("─┼─")));
                }
            }
            out.push('\n');
        }
        out
    }
}

/// The fence a line opens a code block with (three or more backticks or tildes).
fn opening_fence(line: &str) -> Option<String> {
    let first = line.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let fence: String = line.chars().take_while(|c| *c == first).collect();
    (fence.len() >= 3 && !(first == '`' && line[fence.len()..].contains('`'))).then_some(fence)
}

fn fence_char(fence: &str) -> char {
    fence.chars().next().unwrap_or('`')
}

/// A code block's line: highlighted, or indented two columns without colours.
fn code_line(code: &mut CodeBlock, line: &str, color: bool) -> String {
    let Some(highlighter) = code.highlighter.as_mut().filter(|_| color) else {
        return format!("  {line}\n");
    };
    let with_newline = format!("{line}\n");
    match highlighter.highlight_line(&with_newline, syntaxes()) {
        Ok(ranges) => format!(
            "  {}\x1b[0m",
            syntect::util::as_24_bit_terminal_escaped(&ranges, false)
        ),
        Err(_) => format!("  {line}\n"),
    }
}

/// The highlighter of a code block in `language` (a name or a file extension).
fn highlighter(language: &str) -> Option<HighlightLines<'static>> {
    let syntax = syntaxes().find_syntax_by_token(language)?;
    Some(HighlightLines::new(syntax, theme()?))
}

/// `# Title` to `###### Title`: the level and the title.
fn heading(text: &str) -> Option<(usize, &str)> {
    let level = text.chars().take_while(|c| *c == '#').count();
    let rest = &text[level..];
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with(' ')))
        .then(|| (level, rest.trim().trim_end_matches('#').trim_end()))
}

/// `---`, `***` or `___` (spaces between allowed).
fn is_rule(text: &str) -> bool {
    let marks: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| marks.chars().all(|c| c == *m))
}

/// `1. item` or `1) item`: the number with its mark, and the item.
fn numbered(text: &str) -> Option<(&str, &str)> {
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let rest = &text[digits..];
    let item = rest
        .strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))?;
    Some((&text[..=digits], item))
}

/// The cells of a table row `| a | b |`.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(|c| c.trim().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> String {
        let mut md = MarkdownStream::new(false);
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out
    }

    #[test]
    fn markers_go_and_the_structure_stays_without_colours() {
        let out = plain(
            "# Plan\n\nSome **bold** and *em* and `code` and [docs](https://x.dev).\n- one\n  * two\n3. three\n> said\n---\n",
        );
        assert_eq!(
            out,
            "Plan\n\nSome bold and em and code and docs (https://x.dev).\n• one\n  • two\n3. three\n│ said\n────────────────────────────────────────\n"
        );
    }

    #[test]
    fn a_table_lines_up_and_code_keeps_its_text() {
        let out = plain(
            "| name | size |\n|---|--:|\n| a | 1 |\n| long name | 22 |\nafter\n```rust\nfn main() {}\n```\n",
        );
        assert_eq!(
            out,
            "name      │ size\n──────────┼─────\na         │ 1\nlong name │ 22\nafter\n  fn main() {}\n"
        );
    }

    #[test]
    fn text_split_anywhere_draws_the_same_as_whole() {
        let text = "## Steps\n1. run `cargo test`\n| a | b |\n|-|-|\n| 1 | 2 |\n```py\nprint('x')\n```\nend **now**";
        let whole = plain(text);
        for size in [1, 2, 3, 7] {
            let mut md = MarkdownStream::new(false);
            let mut out = String::new();
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(size) {
                out.push_str(&md.push(&piece.iter().collect::<String>()));
            }
            out.push_str(&md.finish());
            assert_eq!(out, whole, "pieces of {size}");
        }
    }

    #[test]
    fn colours_style_the_text_and_highlight_known_code() {
        let mut md = MarkdownStream::new(true);
        let out = md.push("**bold** text\n```rust\nlet x = 1;\n```\n");
        assert!(out.contains("\x1b[1mbold"), "{out:?}");
        assert!(!out.contains("**"), "{out:?}");
        // 24-bit colours on the code line, reset after it.
        assert!(out.contains("\x1b[38;2;"), "{out:?}");
        assert!(out.contains("let"), "{out:?}");
    }

    #[test]
    fn backticks_that_open_no_fence_stay_text() {
        let out = plain("``not a fence\n`` ` ``\n");
        assert_eq!(out, "``not a fence\n`\n");
    }
}
