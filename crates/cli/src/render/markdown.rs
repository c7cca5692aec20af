//! The answer's Markdown as it streams, for a person at a terminal: each line is drawn once
//! it is complete — headings, list items, quotes, rules, emphasis, inline code and links —
//! wrapped at the terminal's width between words (a list item's lines under its text, a
//! quote's each with its bar), code blocks are highlighted by their language (`syntect`,
//! loaded at the first one), and a table is held until its last row so its columns line up
//! (aligned as its rule row says). Everything else is the text as
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

/// How wide a rule is drawn where the terminal's width is not known, and at most.
const RULE_WIDTH: usize = 40;

/// The narrowest width text is wrapped at: narrower, lines are left to the terminal.
const NARROWEST: usize = 20;

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
    /// The terminal's width text is wrapped at (`None`: not wrapped).
    width: Option<usize>,
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
            width: None,
        }
    }

    /// Wraps the lines drawn from now on at `width` columns (`None`: not wrapped).
    pub fn set_width(&mut self, width: Option<usize>) {
        self.width = width;
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

    /// A line outside code and tables: its block marker drawn, its text inline, wrapped.
    fn block_line(&self, line: &str) -> String {
        let indent = &line[..line.len() - line.trim_start().len()];
        let text = line.trim_start();
        if let Some((level, heading)) = heading(text) {
            let style = match level {
                1 => Style::new().bold().underlined().cyan(),
                2 => Style::new().bold().cyan(),
                _ => Style::new().bold(),
            };
            let heading = console::strip_ansi_codes(&self.inline(heading)).into_owned();
            return self
                .wrapped(&heading, "", "")
                .iter()
                .map(|l| self.styled(style.clone(), l))
                .collect::<Vec<_>>()
                .join("\n");
        }
        if is_rule(text) {
            let width = self.width.map_or(RULE_WIDTH, |w| w.clamp(1, 80));
            return self.styled(Style::new().dim(), &"─".repeat(width));
        }
        if let Some(quoted) = text.strip_prefix('>') {
            let bar = format!("{indent}{} ", self.styled(Style::new().dim(), "│"));
            let quoted = console::strip_ansi_codes(&self.inline(quoted.trim_start())).into_owned();
            // Each line its own bar and its own style, so neither is lost where it wraps.
            let room = self
                .width
                .map(|w| w.saturating_sub(measure_text_width(&bar)));
            return wrap_at(&quoted, room, "", "")
                .iter()
                .map(|l| format!("{bar}{}", self.styled(Style::new().italic(), l)))
                .collect::<Vec<_>>()
                .join("\n");
        }
        if let Some(item) = ["- ", "* ", "+ "].iter().find_map(|m| text.strip_prefix(m)) {
            let first = format!("{indent}• ");
            let rest = format!("{indent}  ");
            return self.wrapped(&self.inline(item), &first, &rest).join("\n");
        }
        if let Some((number, item)) = numbered(text) {
            let first = format!("{indent}{number} ");
            let rest = " ".repeat(measure_text_width(&first));
            return self.wrapped(&self.inline(item), &first, &rest).join("\n");
        }
        self.wrapped(&self.inline(text), indent, indent).join("\n")
    }

    /// `text` in lines of the terminal's width, the first after `first`, the others after
    /// `rest`.
    fn wrapped(&self, text: &str, first: &str, rest: &str) -> Vec<String> {
        wrap_at(text, self.width, first, rest)
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
        // As the rule row says: `--:` right, `:-:` centred, else left.
        let aligns: Vec<Align> = rows
            .iter()
            .find(|cells| rule(cells))
            .map(|cells| cells.iter().map(|c| Align::of(c)).collect())
            .unwrap_or_default();
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
                            let (before, after) = match aligns.get(c) {
                                Some(Align::Right) => (pad, 0),
                                Some(Align::Center) => (pad / 2, pad - pad / 2),
                                _ => (0, pad),
                            };
                            format!("{}{cell}{}", " ".repeat(before), " ".repeat(after))
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

/// `text` in lines of at most `width` columns, broken between words (colour codes take no
/// width; a word longer than a line stays whole, for the terminal to wrap), the first after
/// `first`, the others after `rest`; one line when `width` is unknown or too narrow.
fn wrap_at(text: &str, width: Option<usize>, first: &str, rest: &str) -> Vec<String> {
    let Some(width) = width.filter(|w| *w >= NARROWEST && !text.is_empty()) else {
        return vec![format!("{first}{text}")];
    };
    let options = textwrap::Options::new(width)
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(false)
        .word_separator(textwrap::WordSeparator::AsciiSpace);
    let lines = textwrap::wrap(text, options);
    lines
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect()
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

/// How a table's column is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
    Center,
}

impl Align {
    /// The alignment a rule row's cell gives (`:--`, `--:`, `:-:`, `---`).
    fn of(cell: &str) -> Self {
        match (cell.starts_with(':'), cell.ends_with(':')) {
            (true, true) => Self::Center,
            (false, true) => Self::Right,
            _ => Self::Left,
        }
    }
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
        drawn(None, text)
    }

    /// `text` drawn without colours, wrapped at `width`.
    fn drawn(width: Option<usize>, text: &str) -> String {
        let mut md = MarkdownStream::new(false);
        md.set_width(width);
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
            "name      │ size\n──────────┼─────\na         │    1\nlong name │   22\nafter\n  fn main() {}\n"
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

    fn at(width: usize, text: &str) -> String {
        drawn(Some(width), text)
    }

    #[test]
    fn lines_wrap_between_words_with_the_items_and_quotes_marks_kept() {
        let out = at(
            24,
            "Some words that go on past the edge.\n- an item that goes on past it\n> a quote that goes on past it\n12. numbered and going on\n---\n",
        );
        assert_eq!(
            out,
            "Some words that go on\npast the edge.\n• an item that goes on\n  past it\n│ a quote that goes on\n│ past it\n12. numbered and going\n    on\n────────────────────────\n"
        );
        for line in out.lines() {
            assert!(measure_text_width(line) <= 24, "{line:?}");
        }
        // A word longer than the line stays whole.
        let long = "x".repeat(30);
        assert_eq!(at(24, &format!("see {long}\n")), format!("see\n{long}\n"));
    }

    #[test]
    fn colour_codes_take_no_width_when_wrapping() {
        let mut md = MarkdownStream::new(true);
        md.set_width(Some(20));
        let out = md.push("**bold** words and `code` here too\n");
        for line in out.lines() {
            assert!(measure_text_width(line) <= 20, "{line:?}");
        }
        assert_eq!(
            console::strip_ansi_codes(&out),
            "bold words and code\nhere too\n"
        );
    }

    #[test]
    fn a_centred_column_is_centred() {
        let out = plain("| a | b |\n|:-:|---|\n| long | x |\n");
        assert_eq!(out, " a   │ b\n─────┼──\nlong │ x\n");
    }
}
