//! What `read` gives the model of a long file: the whole of it up to a page, as it is or
//! numbered when asked, or a page that says where the rest starts; never a file with its
//! middle cut out, which the run does to other tools' long output.

use crate::support::{Scratch, single_call, tool_output};

/// `lines` numbered lines of 50 bytes each.
fn long_file(s: &Scratch, name: &str, lines: usize) {
    let text: String = (1..=lines).map(|n| format!("{n:>48}\n")).collect();
    std::fs::write(s.ws().join(name), text).unwrap();
}

#[test]
fn a_file_past_the_runs_output_cap_is_read_whole() {
    let s = Scratch::new();
    // 30 KB: three times the cap on a command's output.
    long_file(&s, "long.txt", 600);
    let item = single_call(&s, "read", r#"{"path": "long.txt"}"#, &[]);
    assert_eq!(item["status"], "completed", "{item}");
    let text = std::fs::read_to_string(s.ws().join("long.txt")).unwrap();
    assert_eq!(tool_output(&item), text);

    let item = single_call(&s, "read", r#"{"path": "long.txt", "numbered": true}"#, &[]);
    let got: Vec<&str> = tool_output(&item).lines().collect();
    assert_eq!(got.len(), 600, "{}", tool_output(&item));
    for (i, line) in got.iter().enumerate() {
        let n = i + 1;
        assert_eq!(*line, format!("{n}\t{n:>48}"));
    }
}

#[test]
fn a_file_past_a_page_ends_with_where_the_rest_starts() {
    let s = Scratch::new();
    // 3,000 lines of 50 bytes: 150 KB, past a page of 100 KiB.
    long_file(&s, "longer.txt", 3000);
    let item = single_call(
        &s,
        "read",
        r#"{"path": "longer.txt", "end_line": 3000, "numbered": true}"#,
        &[],
    );
    let out = tool_output(&item);
    assert!(out.len() <= (100 << 10) + 96, "{}", out.len());
    let last = out.lines().last().unwrap_or_default();
    let next: usize = last
        .strip_prefix("[output cut at 100 KiB; read from start_line ")
        .and_then(|rest| rest.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{last}"));
    let before = out.lines().nth_back(1).unwrap_or_default();
    assert_eq!(before, format!("{}\t{:>48}", next - 1, next - 1));
    assert!(!out.contains("cut from the middle"), "{out}");
}

#[test]
fn other_tools_output_is_still_cut_from_the_middle() {
    let s = Scratch::new();
    long_file(&s, "long.txt", 600);
    let item = single_call(&s, "bash", r#"{"command": "cat long.txt"}"#, &["--yes"]);
    let out = tool_output(&item);
    assert!(out.contains("cut from the middle of"), "{out}");
    assert!(out.len() < 11_000, "{}", out.len());
}
