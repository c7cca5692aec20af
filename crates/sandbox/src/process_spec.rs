//! What to start for a command, the same on every platform; each platform's `spawn`
//! starts it (`linux/spawn.rs`, `macos/spawn.rs`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to start: a program (a name is looked up on the `PATH` of `env`, as a shell does),
/// its arguments, its whole environment and its directory. Its stdin is empty or a pipe,
/// its stdout and stderr are pipes, and it leads a process group of its own.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// The program: a path, or a name looked up on `PATH`.
    pub program: OsString,
    /// Its arguments, after the program's name.
    pub args: Vec<OsString>,
    /// Its whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// Its working directory.
    pub dir: PathBuf,
    /// Whether its stdin is a pipe ([`crate::Process::stdin`]) rather than empty.
    pub piped_stdin: bool,
}

impl ProcessSpec {
    /// `shell -c script` in `dir`, with exactly `env` when given (a command environment
    /// built for the run), else wonopcode's own environment; stdin empty.
    pub fn script(
        shell: &str,
        script: &str,
        env: Option<&BTreeMap<String, String>>,
        dir: &Path,
    ) -> Self {
        Self {
            program: shell.into(),
            args: vec!["-c".into(), script.into()],
            env: match env {
                Some(env) => env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
                None => std::env::vars_os().collect(),
            },
            dir: dir.to_path_buf(),
            piped_stdin: false,
        }
    }

    /// Sets the variable `key` to `value`, in place of any value it had.
    pub fn set_env(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }
}
