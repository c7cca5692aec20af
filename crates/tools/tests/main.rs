//! The path guard and the `bash` rule matcher held against the system and generated input, one test
//! binary: each file is a module.

mod path_guard;
mod shell_rules;
