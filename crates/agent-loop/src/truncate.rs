//! Truncation of tool output: long output keeps its head and tail with a marker between, so
//! the model sees how a command started and how it ended.

/// Default cap on tool output given to the model, in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 10_000;

/// Returns `text` unchanged when it fits in `max_bytes`, otherwise its head and tail (split
/// on character boundaries) around a line saying how much was cut.
pub fn truncate_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let half = max_bytes / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let cut = tail_start - head_end;
    let cut_lines = text[head_end..tail_start].matches('\n').count();
    format!(
        "{}\n[... {cut} bytes ({cut_lines} lines) cut from the middle of {} bytes of output ...]\n{}",
        &text[..head_end],
        text.len(),
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(truncate_middle("abc", 10), "abc");
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text = format!("{}{}", "a".repeat(15_000), "z".repeat(5_000));
        let out = truncate_middle(&text, 10_000);
        assert!(out.starts_with(&"a".repeat(5_000)));
        assert!(out.ends_with(&"z".repeat(5_000)));
        assert!(out.contains("10000 bytes"), "{}", &out[5_000..5_100]);
        assert!(out.len() < 10_200);
    }

    #[test]
    fn multibyte_boundaries_are_respected() {
        let text = "é".repeat(10_000);
        let out = truncate_middle(&text, 1001);
        assert!(out.contains("cut from the middle"));
    }
}
