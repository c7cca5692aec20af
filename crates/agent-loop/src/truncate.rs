//! Truncation of tool output: long output keeps its head and tail with a marker between, so
//! the model sees how a command started and how it ended.

/// Default cap on tool output given to the model, in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 10_000;

/// Returns `text` unchanged when it fits in `max_bytes`, otherwise its head and tail (split
/// on character boundaries) around a line saying how much was cut. `omitted` bytes of the
/// real output were already left out of `text` by the tool (from its middle): they count in
/// the notice, which so tells the real size; when nothing more is cut, a last line says so.
pub fn truncate_middle(text: &str, max_bytes: usize, omitted: u64) -> String {
    if text.len() <= max_bytes {
        if omitted == 0 {
            return text.to_owned();
        }
        return format!(
            "{text}\n[... {omitted} bytes of the output were left out of its middle ...]"
        );
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
    let cut = (tail_start - head_end) as u64 + omitted;
    let total = text.len() as u64 + omitted;
    let cut_lines = text[head_end..tail_start].matches('\n').count();
    let lines = if omitted == 0 {
        format!("{cut_lines} lines")
    } else {
        format!("{cut_lines}+ lines")
    };
    format!(
        "{}\n[... {cut} bytes ({lines}) cut from the middle of {total} bytes of output ...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(truncate_middle("abc", 10, 0), "abc");
    }

    #[test]
    fn bytes_a_tool_left_out_count_in_the_notice() {
        let text = format!("{}{}", "a".repeat(6_000), "z".repeat(6_000));
        let out = truncate_middle(&text, 10_000, 50_000_000);
        assert!(
            out.contains("50002000 bytes (0+ lines) cut from the middle of 50012000 bytes"),
            "{}",
            &out[4_990..5_100]
        );
        assert!(out.ends_with(&"z".repeat(5_000)));
        assert_eq!(
            truncate_middle("short", 100, 7),
            "short\n[... 7 bytes of the output were left out of its middle ...]"
        );
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text = format!("{}{}", "a".repeat(15_000), "z".repeat(5_000));
        let out = truncate_middle(&text, 10_000, 0);
        assert!(out.starts_with(&"a".repeat(5_000)));
        assert!(out.ends_with(&"z".repeat(5_000)));
        assert!(out.contains("10000 bytes"), "{}", &out[5_000..5_100]);
        assert!(out.len() < 10_200);
    }

    #[test]
    fn multibyte_boundaries_are_respected() {
        let text = "é".repeat(10_000);
        let out = truncate_middle(&text, 1001, 0);
        assert!(out.contains("cut from the middle"));
    }
}
