//! Renderers of the event stream: for a person (terminal) or for machines (JSONL). The
//! session's sink (`wonopcode_session::SessionSink`) persists and hands events here.

mod diff;
pub mod draw_target;
mod jsonl;
pub mod markdown;
mod status;
mod terminal;
mod tree;
pub mod typed;
mod visible;

pub use diff::diff_lines;
pub use jsonl::JsonlRenderer;
pub use terminal::TerminalRenderer;
pub use tree::cost;
pub use visible::{clip, one_line, visible};
pub use wonopcode_session::Renderer;
