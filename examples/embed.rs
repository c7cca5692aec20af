//! wonopcode inside another Rust program: one builder, one call. This runs the recorded
//! demo (`examples/demo`) through the embedded default guest on a scratch copy of its
//! workspace, offline, and prints what the run did.
//!
//! ```sh
//! cargo run -p wonopcode-session --example embed
//! ```
//!
//! A real provider instead of the recording: set `provider` (and `model`) in the
//! `ModelChoice` and the provider's key in the environment (`docs/providers.md`).

use std::path::{Path, PathBuf};

use wonopcode_agent_loop::LoopResult;
use wonopcode_session::{LoopSource, ModelChoice, Session, SessionError};

/// Runs `prompt` on `workspace` with the model's side replayed from `transcript`.
pub async fn run(
    workspace: &Path,
    transcript: &Path,
    prompt: &str,
) -> Result<LoopResult, SessionError> {
    let mut session = Session::builder(workspace)
        .with_settings(|settings| {
            settings.model = ModelChoice {
                replay: Some(transcript.to_path_buf()),
                ..ModelChoice::default()
            };
            // Nobody is there to approve the writes: approve them all.
            settings.yes = true;
        })
        .loop_source(LoopSource::Embedded)
        .build()
        .await?;
    session.start().await?;
    Ok(session.prompt(prompt).await)
}

/// Copies a directory tree (the demo's workspace into a scratch one).
pub fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    let scratch = std::env::temp_dir().join(format!("wonopcode-embed-{}", std::process::id()));
    copy_dir(&demo.join("workspace"), &scratch)?;
    let prompt = std::fs::read_to_string(demo.join("prompt.txt"))?;
    let result = run(&scratch, &demo.join("transcript.jsonl"), prompt.trim()).await?;
    println!("status: {:?}", result.status);
    println!("model requests: {}", result.iterations);
    println!("answer: {}", result.response.unwrap_or_default());
    println!(
        "--- {}:\n{}",
        scratch.join("TODO_REPORT.md").display(),
        std::fs::read_to_string(scratch.join("TODO_REPORT.md"))?
    );
    Ok(())
}
