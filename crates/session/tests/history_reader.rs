//! The history reader fuzzed: whatever a file holds, opening it gives the messages or one
//! error line, never a panic; a history cut at any byte (a crash, a full disk) opens with
//! every whole record, keeps the cut record aside, and loses nothing.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use wonopcode_protocol::Message;
use wonopcode_session::history::History;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A history file holding `texts` as user messages, and where each record ends.
fn written(texts: &[String]) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    let (mut history, _) = History::open(&path, "s").unwrap();
    for text in texts {
        history.append(&Message::user(text.clone())).unwrap();
    }
    drop(history);
    let bytes = std::fs::read(&path).unwrap();
    (dir, path, bytes)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_open_or_fail_with_one_line(tail in prop::collection::vec(any::<u8>(), 0..400)) {
        let (_dir, path, mut bytes) = written(&["kept".to_owned()]);
        bytes.extend_from_slice(&tail);
        std::fs::write(&path, &bytes).unwrap();
        match History::open(&path, "s") {
            Ok((history, _)) => prop_assert_eq!(history.session_id, "s"),
            Err(e) => {
                let line = e.to_string();
                prop_assert!(!line.contains('\n'), "{}", line);
                prop_assert!(line.contains("h.jsonl"), "{}", line);
            }
        }
    }

    #[test]
    fn a_history_cut_anywhere_keeps_every_whole_record(
        texts in prop::collection::vec("\\PC{0,40}", 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let (dir, path, bytes) = written(&texts);
        // Somewhere after the session record (cutting that one leaves no history at all).
        let first = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
        let at = first + cut.index(bytes.len() - first + 1);
        std::fs::write(&path, &bytes[..at]).unwrap();
        let whole = bytes[..at].iter().filter(|b| **b == b'\n').count() - 1;

        let (history, messages) = History::open(&path, "other").unwrap();
        prop_assert_eq!(history.session_id.as_str(), "s");
        let kept: Vec<String> = messages.iter().map(Message::text_content).collect();
        prop_assert_eq!(&kept[..], &texts[..whole]);
        let torn = dir.path().join("h.jsonl.torn");
        let cut_short = at > 0 && bytes[at - 1] != b'\n';
        prop_assert_eq!(history.torn.is_some(), cut_short);
        if cut_short {
            let start = bytes[..at].iter().rposition(|b| *b == b'\n').unwrap() + 1;
            let mut aside = bytes[start..at].to_vec();
            aside.push(b'\n');
            prop_assert_eq!(std::fs::read(&torn).unwrap(), aside);
        }
        drop(history);
        // Opened again: the same messages, nothing more set aside.
        let (again, messages) = History::open(&path, "other").unwrap();
        prop_assert!(again.torn.is_none());
        prop_assert_eq!(messages.len(), whole);
    }
}
