//! What several wonopcode crates ask of the operating system, each written once so every
//! crate gets the same guarantee: opening a workspace's files so that no link leads out of
//! it ([`beneath`]), flushing a file without stalling the runtime's other tasks
//! ([`durable`]), and knowing which processes wonopcode itself started, so a `bash`
//! call's cleanup never kills one ([`own_processes`]).
//!
//! It stands below the tool and model sources, the journal and the batch runner, beside
//! the sandbox, and knows none of them: no run, no message, no event.

#![deny(missing_docs)]

pub mod beneath;
pub mod durable;
pub mod own_processes;
