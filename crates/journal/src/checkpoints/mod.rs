//! A run's checkpoints, beside its journal (`checkpoints/` in the run's directory): every
//! change the run made to the workspace, in order — the prompt it was made under, the
//! context, the file, and the file's content before and after as content-addressed
//! objects (`objects`) — from which a rewind is worked out (`rewind`). The file tools say
//! exactly what they change; what a command changed is found by looking at the workspace
//! again when it ends (`workspace`, only where the kernel says something changed:
//! `watch`). Nothing is written in the person's repository, index or stash.

mod objects;
mod rewind;
#[cfg(target_os = "linux")]
mod watch;
#[cfg(not(target_os = "linux"))]
#[path = "no_watch.rs"]
mod watch;
mod workspace;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use wonopcode_protocol::ContextPath;
use wonopcode_protocol::checkpoint::Checkpoints;

use self::objects::Objects;
pub use self::rewind::{Restore, Rewind, rewind_run};
use self::workspace::{FileChange, WorkspaceFiles};
use crate::JournalError;
use crate::runs::RunDir;

/// One change the run made to a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The prompt it was made under (0 for the first).
    pub prompt: usize,
    /// The context that made it.
    pub context: String,
    /// The file, relative to the workspace.
    pub path: String,
    /// Its content before (an object's hash; `None`: there was no file).
    pub before: Option<String>,
    /// Its content after (`None`: it was deleted).
    pub after: Option<String>,
    /// Its permission bits before, where a command changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_mode: Option<u32>,
    /// Its permission bits after, where a command changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_mode: Option<u32>,
}

/// What is known of the workspace's files for finding what commands change.
#[derive(Default)]
struct Commands {
    /// The files as last looked at (`None`: not looked at yet, or not tracked).
    files: Option<WorkspaceFiles>,
    /// The workspace is not tracked (too large): said once.
    untracked: bool,
    /// Commands running now: while one does, what changes is its, not someone else's.
    running: usize,
}

/// The checkpoints of a run being made.
pub struct CheckpointStore {
    dir: PathBuf,
    objects: Objects,
    /// The prompt the run is at.
    prompt: AtomicUsize,
    log: Mutex<File>,
    commands: Mutex<Commands>,
}

impl CheckpointStore {
    /// The store of the run in `run` (made when missing).
    pub fn open(run: &RunDir) -> Result<Self, JournalError> {
        let dir = run.path().join("checkpoints");
        let objects = dir.join("objects");
        crate::private::create_dir_all(&dir)
            .and_then(|()| crate::private::create_dir_all(&objects))
            .map_err(|e| JournalError::io(&objects, &e))?;
        let path = dir.join("changes.jsonl");
        let log = crate::private::options()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| JournalError::io(&path, &e))?;
        Ok(Self {
            dir,
            objects: Objects::at(objects),
            prompt: AtomicUsize::new(0),
            log: Mutex::new(log),
            commands: Mutex::new(Commands::default()),
        })
    }

    /// The changes from now on are made under prompt `index` (0 for the first).
    pub fn at_prompt(&self, index: usize) {
        self.prompt.store(index, Ordering::SeqCst);
    }

    /// Appends `changes` to the log, on disk (one sync for all) before it returns.
    fn log(&self, changes: &[Change]) -> std::io::Result<()> {
        let mut lines = String::new();
        for change in changes {
            lines.push_str(&serde_json::to_string(change).map_err(std::io::Error::other)?);
            lines.push('\n');
        }
        let mut log = self.log.lock();
        log.write_all(lines.as_bytes())?;
        wonopcode_os::durable::sync_data(&log)
    }

    fn record(
        &self,
        context: &ContextPath,
        path: &str,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
    ) -> std::io::Result<()> {
        self.log(&[Change {
            prompt: self.prompt.load(Ordering::SeqCst),
            context: context.to_string(),
            path: path.to_owned(),
            before: before.map(|b| self.objects.put(b)).transpose()?,
            after: after.map(|a| self.objects.put(a)).transpose()?,
            before_mode: None,
            after_mode: None,
        }])
    }

    /// What is never looked at for commands: every run's directory (a run there writes as
    /// it goes), and `hidden`.
    fn left_out(&self, hidden: &[PathBuf]) -> Vec<PathBuf> {
        let runs = self.dir.parent().and_then(Path::parent);
        runs.and_then(|runs| runs.canonicalize().ok())
            .into_iter()
            .chain(hidden.iter().cloned())
            .collect()
    }
}

impl Checkpoints for CheckpointStore {
    fn changed(
        &self,
        context: &ContextPath,
        path: &str,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
    ) {
        if let Err(e) = self.record(context, path, before, after) {
            tracing::warn!(error = %e, path, "cannot keep a checkpoint of the change");
        }
    }

    fn command_starts(&self, workspace: &Path, hidden: &[PathBuf]) {
        let mut commands = self.commands.lock();
        commands.running += 1;
        if commands.untracked {
            return;
        }
        let first = commands.running == 1;
        match &mut commands.files {
            // What changed since the last command is someone else's (a file tool's, which
            // said so itself, or the person's): the command starts from it.
            Some(files) if first => {
                files.refresh(&self.objects);
            }
            Some(_) => {}
            None => match WorkspaceFiles::look(workspace, self.left_out(hidden), &self.objects) {
                Ok(files) => commands.files = Some(files),
                Err(why) => {
                    tracing::warn!(
                        workspace = %workspace.display(),
                        "what commands change is not tracked for rewind: the workspace has {why}"
                    );
                    commands.untracked = true;
                }
            },
        }
    }

    fn command_ended(&self, context: &ContextPath) {
        let mut commands = self.commands.lock();
        commands.running = commands.running.saturating_sub(1);
        let Some(files) = &mut commands.files else {
            return;
        };
        let changes = files.refresh(&self.objects);
        if let Some(why) = files.too_large() {
            tracing::warn!(
                "what commands change is no longer tracked for rewind: the workspace has {why}"
            );
            commands.files = None;
            commands.untracked = true;
        }
        if changes.is_empty() {
            return;
        }
        let prompt = self.prompt.load(Ordering::SeqCst);
        let changes: Vec<Change> = changes
            .into_iter()
            .map(
                |FileChange {
                     path,
                     before,
                     after,
                 }| {
                    let (before, before_mode) = before.unzip();
                    let (after, after_mode) = after.unzip();
                    Change {
                        prompt,
                        context: context.to_string(),
                        path,
                        before,
                        after,
                        before_mode,
                        after_mode,
                    }
                },
            )
            .collect();
        // A command that made many files pays one sync, not one a file.
        if let Err(e) = self.log(&changes) {
            tracing::warn!(error = %e, files = changes.len(), "cannot keep a checkpoint of a command's changes");
        }
    }
}

/// The changes the run in `run` made, in order (none when it kept no checkpoints).
pub fn changes(run: &RunDir) -> Result<Vec<Change>, JournalError> {
    let path = run.path().join("checkpoints/changes.jsonl");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(JournalError::io(&path, &e)),
    };
    // A last line cut short by a crash is not a change that was kept.
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes under `dir`.
    fn size_of(dir: &Path) -> u64 {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum()
    }

    #[test]
    fn a_hundred_edits_of_a_large_file_store_about_what_they_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let run = crate::Runs::at(tmp.path()).create("r").unwrap();
        let store = CheckpointStore::open(&run).unwrap();
        // 1 MiB of varied text, edited a few bytes at a time in 100 places.
        let mut text: Vec<u8> = (0..(1u32 << 20))
            .map(|i| b"abcdefghij\n"[(i.wrapping_mul(2_654_435_761) >> 28) as usize % 11])
            .collect();
        let mut versions = Vec::new();
        for edit in 0..100usize {
            let before = text.clone();
            let at = (edit * 10_007) % (text.len() - 8);
            text[at..at + 8].copy_from_slice(b"EDITED!\n");
            store.changed(&ContextPath::root(), "big.txt", Some(&before), Some(&text));
            versions.push(text.clone());
        }
        let objects = run.path().join("checkpoints/objects");
        let stored = size_of(&objects);
        // Whole copies would be 101 MiB; pieces are a small multiple of what changed.
        assert!(stored < 8 << 20, "{stored} bytes stored");
        let kept = changes(&run).unwrap();
        assert_eq!(kept.len(), 100);
        let fiftieth = kept[49].after.as_deref().unwrap();
        assert_eq!(store.objects.get(fiftieth).unwrap(), versions[49]);
        // A piece swapped for other bytes is found out.
        let list = std::fs::read_to_string(objects.join(format!("{fiftieth}.pieces"))).unwrap();
        let piece = list.lines().next().unwrap();
        std::fs::write(objects.join(piece), b"planted").unwrap();
        assert!(store.objects.get(fiftieth).is_err());
        assert!(store.objects.get("../../etc/passwd").is_err());
    }
}
