//! Language-model providers of wonopcode. For now: `ReplayProvider`, which answers from a
//! recorded transcript (the offline default), and `RecordingModel`, which writes that same
//! format from any model. The transcript format is in `transcript` and `docs/replay.md`.

pub mod record;
pub mod replay;
pub mod transcript;

pub use record::RecordingModel;
pub use replay::ReplayProvider;
pub use transcript::{Fingerprint, Transcript, TranscriptError};
