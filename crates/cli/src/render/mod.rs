//! Renderers of the event stream: for a person (terminal) or for machines (JSONL, or Claude
//! Code's `-p` output). The
//! session's sink (`wonopcode_session::SessionSink`) persists and hands events here.

mod claude_stream;
mod diff;
pub mod draw_target;
mod jsonl;
pub mod markdown;
mod status;
mod terminal;
mod tree;
pub mod typed;
mod visible;

pub use claude_stream::ClaudeStreamRenderer;
pub use diff::diff_lines;
pub use jsonl::JsonlRenderer;
pub use terminal::TerminalRenderer;
pub use tree::{cost, in_out};
pub use visible::{clip, one_line, visible};
pub use wonopcode_session::Renderer;
