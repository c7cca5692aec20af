//! The interactive prompt: a line editor (`reedline`: editing, persistent history, Ctrl-C
//! that clears the line, multi-line input, completion) and the slash commands typed at it.
//! The loop that runs what is typed is the session's (`crate::session`); this module reads
//! lines and says what they mean.

pub mod commands;
mod complete;
mod custom;
mod doctor;
pub mod editor;
mod inspect;
mod keys;
mod memory;
mod mode;
mod paste;
mod said;
mod shell;
mod slash;
mod turns;
pub mod type_ahead;

pub use commands::SlashCommand;
pub use editor::{Line, LineEditor};
