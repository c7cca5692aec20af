//! The embedding example and the history reader, one test binary: each file is a module.

mod embed;
mod history_reader;
