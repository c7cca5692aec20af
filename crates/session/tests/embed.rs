//! The embedding example (`examples/embed.rs`) runs as documented: the recorded demo through
//! the embedded guest, with real tools on a scratch workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../examples/embed.rs"]
mod example;

use std::path::PathBuf;

use wonopcode_protocol::LoopStatus;

#[tokio::test]
async fn an_embedder_runs_the_demo_with_one_builder_and_one_call() {
    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    let scratch = tempfile::tempdir().unwrap();
    example::copy_dir(&demo.join("workspace"), scratch.path()).unwrap();
    let prompt = std::fs::read_to_string(demo.join("prompt.txt")).unwrap();
    let result = example::run(
        scratch.path(),
        &demo.join("transcript.jsonl"),
        prompt.trim(),
    )
    .await
    .unwrap();
    assert_eq!(result.status, LoopStatus::Complete, "{:?}", result.error);
    assert!(result.iterations > 1);
    let report = std::fs::read_to_string(scratch.path().join("TODO_REPORT.md")).unwrap();
    assert!(report.contains("inventory.py"), "{report}");
}

#[tokio::test]
async fn a_workspace_that_is_not_there_is_a_choice_error() {
    let err = wonopcode_session::Session::builder("/nonexistent/wonopcode-workspace")
        .build()
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, wonopcode_session::SessionError::Choice(_)),
        "{err}"
    );
    assert!(err.to_string().contains("/nonexistent/wonopcode-workspace"));
}
