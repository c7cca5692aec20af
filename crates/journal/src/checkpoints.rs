//! A run's checkpoints, beside its journal (`checkpoints/` in the run's directory): every
//! change the file tools made, in order — the prompt it was made under, the context, the
//! file, and the file's content before and after as content-addressed objects
//! (`objects/BLAKE3`, written once; a large content in pieces cut where its content says,
//! so the store grows with about the bytes changed) — and the
//! rewind worked out from them: what each file goes back to, and which files someone else
//! has changed since (conflicts, left alone unless forced). Nothing is written in the
//! person's repository, index or stash.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use wonopcode_agent_loop::ContextPath;
use wonopcode_agent_loop::checkpoint::Checkpoints;

use crate::JournalError;
use crate::runs::RunDir;

/// An object's name: the BLAKE3 hash of its content, in hex.
fn content_name(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Contents up to this size are kept whole; larger ones in pieces.
const WHOLE_UP_TO: usize = 64 << 10;
/// The pieces' sizes: at least, on average, at most.
const PIECE_MIN: usize = 2 << 10;
const PIECE_AVG: usize = 8 << 10;
const PIECE_MAX: usize = 64 << 10;

/// Writes `bytes` at `path` through a temporary name, so an object is whole or absent.
fn write_once(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}

/// Whether `name` is an object's name (a hash in hex), never a path.
fn is_object_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The content kept as `hash` in `objects`, checked against its hash.
fn object(objects: &Path, hash: &str) -> Result<Vec<u8>, JournalError> {
    if !is_object_name(hash) {
        let path = objects.join("?");
        return Err(JournalError::io(
            &path,
            &std::io::Error::other(format!("`{hash}` is not an object's name")),
        ));
    }
    let whole = objects.join(hash);
    let bytes = match std::fs::read(&whole) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let listed = objects.join(format!("{hash}.pieces"));
            let list =
                std::fs::read_to_string(&listed).map_err(|e| JournalError::io(&listed, &e))?;
            let mut bytes = Vec::new();
            for name in list.lines() {
                // A piece is checked with the whole; its name must be an object's.
                if !is_object_name(name) {
                    return Err(JournalError::io(
                        &listed,
                        &std::io::Error::other("a piece's name is not an object's"),
                    ));
                }
                let piece = objects.join(name);
                bytes.extend(std::fs::read(&piece).map_err(|e| JournalError::io(&piece, &e))?);
            }
            bytes
        }
        Err(e) => return Err(JournalError::io(&whole, &e)),
    };
    if content_name(&bytes) != hash {
        return Err(JournalError::io(
            &whole,
            &std::io::Error::other("its content does not match its name"),
        ));
    }
    Ok(bytes)
}

/// One change a file tool made.
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
}

/// The checkpoints of a run being made.
pub struct CheckpointStore {
    dir: PathBuf,
    /// The prompt the run is at.
    prompt: AtomicUsize,
    log: Mutex<File>,
}

impl CheckpointStore {
    /// The store of the run in `run` (made when missing).
    pub fn open(run: &RunDir) -> Result<Self, JournalError> {
        let dir = run.path().join("checkpoints");
        let objects = dir.join("objects");
        std::fs::create_dir_all(&objects).map_err(|e| JournalError::io(&objects, &e))?;
        let path = dir.join("changes.jsonl");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| JournalError::io(&path, &e))?;
        Ok(Self {
            dir,
            prompt: AtomicUsize::new(0),
            log: Mutex::new(log),
        })
    }

    /// The changes from now on are made under prompt `index` (0 for the first).
    pub fn at_prompt(&self, index: usize) {
        self.prompt.store(index, Ordering::SeqCst);
    }

    /// Keeps `bytes` as an object; its hash. A small content is one object; a larger one
    /// is cut where its content says (FastCDC), each piece an object of its own, and kept as
    /// the list of its pieces — so an edit of a large file adds the pieces it changed and a
    /// list, not the whole file again.
    fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let hash = content_name(bytes);
        let objects = self.dir.join("objects");
        let (whole, listed) = (objects.join(&hash), objects.join(format!("{hash}.pieces")));
        if whole.exists() || listed.exists() {
            return Ok(hash);
        }
        if bytes.len() <= WHOLE_UP_TO {
            write_once(&whole, bytes)?;
            return Ok(hash);
        }
        let mut list = String::new();
        for piece in fastcdc::v2020::FastCDC::new(bytes, PIECE_MIN, PIECE_AVG, PIECE_MAX) {
            let piece = &bytes[piece.offset..piece.offset + piece.length];
            let name = content_name(piece);
            let path = objects.join(&name);
            if !path.exists() {
                write_once(&path, piece)?;
            }
            list.push_str(&name);
            list.push('\n');
        }
        write_once(&listed, list.as_bytes())?;
        Ok(hash)
    }

    fn record(
        &self,
        context: &ContextPath,
        path: &str,
        before: Option<&[u8]>,
        after: Option<&[u8]>,
    ) -> std::io::Result<()> {
        let change = Change {
            prompt: self.prompt.load(Ordering::SeqCst),
            context: context.to_string(),
            path: path.to_owned(),
            before: before.map(|b| self.put(b)).transpose()?,
            after: after.map(|a| self.put(a)).transpose()?,
        };
        let mut line = serde_json::to_string(&change).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut log = self.log.lock();
        log.write_all(line.as_bytes())?;
        wonopcode_agent_loop::durable::sync_data(&log)
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

/// What taking back a run's changes does to the workspace.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rewind {
    /// Each file, and what it goes back to (an object's hash; `None`: no file).
    pub restore: Vec<(String, Option<String>)>,
    /// Files changed since the run last changed them (by someone else), left alone
    /// unless forced.
    pub conflicts: Vec<String>,
    /// Files the changes kept overlap (another context changed them after the ones taken
    /// back), refused.
    pub overlaps: Vec<String>,
    /// Paths that are not plainly inside the workspace (a journal someone else changed),
    /// never written.
    pub refused: Vec<String>,
}

impl Rewind {
    /// The rewind of the changes made under prompt `from` and after (only `context`'s and
    /// its children's, when given), against the workspace as it is now.
    pub fn of(changes: &[Change], from: usize, context: Option<&str>, workspace: &Path) -> Self {
        let taken =
            |c: &Change| c.prompt >= from && context.is_none_or(|ctx| in_context(&c.context, ctx));
        let mut rewind = Rewind::default();
        let mut paths: Vec<&str> = Vec::new();
        for change in changes.iter().filter(|c| taken(c)) {
            if !paths.contains(&change.path.as_str()) {
                paths.push(&change.path);
            }
        }
        for path in paths {
            if !plainly_inside(path) {
                rewind.refused.push(path.to_owned());
                continue;
            }
            let of_path: Vec<&Change> = changes.iter().filter(|c| c.path == path).collect();
            let Some(first) = of_path.iter().position(|c| taken(c)) else {
                continue;
            };
            // A change kept (another context's) after one taken back: both cannot hold.
            if of_path[first..].iter().any(|c| !taken(c)) {
                rewind.overlaps.push(path.to_owned());
                continue;
            }
            let last = of_path[of_path.len() - 1];
            if current_hash(&workspace.join(path)) != last.after {
                rewind.conflicts.push(path.to_owned());
            }
            rewind
                .restore
                .push((path.to_owned(), of_path[first].before.clone()));
        }
        rewind
    }

    /// What a rewind applied without `force` did, a line a file: `restored PATH`, `removed
    /// PATH`, or `left alone PATH: changed since by someone else`.
    pub fn done_lines(&self) -> Vec<String> {
        self.restore
            .iter()
            .map(
                |(path, content)| match (self.conflicts.contains(path), content) {
                    (true, _) => format!("left alone {path}: changed since by someone else"),
                    (false, Some(_)) => format!("restored {path}"),
                    (false, None) => format!("removed {path}"),
                },
            )
            .collect()
    }

    /// Puts each file back (a conflict's too, when `force`); the files changed. A file
    /// whose directory leads out of the workspace (a link), or whose kept content does not
    /// match its hash, is an error and stops the rewind there.
    pub fn apply(
        &self,
        run: &RunDir,
        workspace: &Path,
        force: bool,
    ) -> Result<Vec<String>, JournalError> {
        let objects = run.path().join("checkpoints/objects");
        let mut done = Vec::new();
        for (path, content) in &self.restore {
            if self.conflicts.contains(path) && !force {
                continue;
            }
            let target = inside(workspace, path)?;
            match content {
                Some(hash) => {
                    let bytes = object(&objects, hash)?;
                    if let Some(parent) = target.parent() {
                        std::fs::create_dir_all(parent)
                            .map_err(|e| JournalError::io(parent, &e))?;
                    }
                    std::fs::write(&target, bytes).map_err(|e| JournalError::io(&target, &e))?;
                }
                None => match std::fs::remove_file(&target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(JournalError::io(&target, &e)),
                },
            }
            done.push(path.clone());
        }
        Ok(done)
    }
}

/// Takes back the changes the run in `run` made from prompt `from` (0-based) on — only
/// `context`'s and its children's when given — in `workspace`: nothing when some overlap
/// changes that stay (the rewind says which), nor when `dry_run`; a conflict's file only
/// when `force`. The rewind worked out, whatever was done.
pub fn rewind_run(
    run: &RunDir,
    workspace: &Path,
    from: usize,
    context: Option<&str>,
    force: bool,
    dry_run: bool,
) -> Result<Rewind, JournalError> {
    let rewind = Rewind::of(&changes(run)?, from, context, workspace);
    if !dry_run && rewind.overlaps.is_empty() {
        rewind.apply(run, workspace, force)?;
    }
    Ok(rewind)
}

/// Whether `path` is relative and names only plain components (no `..`, no root).
fn plainly_inside(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// `path` under `workspace`, when the directory it is in (as far as it exists) resolves
/// inside the workspace: no link leads a restore out of it.
fn inside(workspace: &Path, path: &str) -> Result<PathBuf, JournalError> {
    let target = workspace.join(path);
    let refused = |why: &str| JournalError::io(&target, &std::io::Error::other(why.to_owned()));
    if !plainly_inside(path) {
        return Err(refused("not a path inside the workspace"));
    }
    let root = workspace
        .canonicalize()
        .map_err(|e| JournalError::io(workspace, &e))?;
    let mut existing = target.parent().map(Path::to_path_buf);
    while let Some(dir) = existing {
        if let Ok(real) = dir.canonicalize() {
            if !real.starts_with(&root) {
                return Err(refused("its directory leads out of the workspace"));
            }
            break;
        }
        existing = dir.parent().map(Path::to_path_buf);
    }
    if target
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(refused("it is a link"));
    }
    Ok(target)
}

/// Whether a change of `context` is in `of` (it, or one of its children).
fn in_context(context: &str, of: &str) -> bool {
    context == of
        || context
            .strip_prefix(of)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The hash of the file at `path` now; `None` when there is none.
fn current_hash(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| content_name(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        prompt: usize,
        context: &str,
        path: &str,
        before: Option<&str>,
        after: Option<&str>,
    ) -> Change {
        let hash = |text: &str| content_name(text.as_bytes());
        Change {
            prompt,
            context: context.into(),
            path: path.into(),
            before: before.map(hash),
            after: after.map(hash),
        }
    }

    #[test]
    fn a_rewind_restores_the_first_before_refuses_overlaps_and_planted_paths() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a"), "a2").unwrap();
        std::fs::write(ws.path().join("b"), "b1").unwrap();
        std::fs::write(ws.path().join("c"), "by hand").unwrap();
        let changes = [
            change(0, "0", "a", Some("a0"), Some("a1")),
            change(1, "0.1", "a", Some("a1"), Some("a2")),
            change(1, "0.2", "b", None, Some("b1")),
            change(1, "0.1", "c", Some("c0"), Some("c1")),
            // Another context built on 0.1's work after it.
            change(1, "0.1", "d", None, Some("d1")),
            change(2, "0.3", "d", Some("d1"), Some("d2")),
            change(1, "0.1.1", "e", None, Some("e1")),
            change(1, "0.1", "../outside", None, Some("x")),
        ];
        // From prompt 1, context 0.1 and its children.
        let rewind = Rewind::of(&changes, 1, Some("0.1"), ws.path());
        assert_eq!(
            rewind.restore,
            [
                ("a".to_owned(), changes[1].before.clone()),
                ("c".to_owned(), changes[3].before.clone()),
                ("e".to_owned(), None),
            ]
        );
        // `c` was changed by hand since, `e` is not there any more.
        assert_eq!(rewind.conflicts, ["c", "e"]);
        assert_eq!(
            rewind.done_lines(),
            [
                "restored a",
                "left alone c: changed since by someone else",
                "left alone e: changed since by someone else",
            ]
        );
        assert_eq!(rewind.overlaps, ["d"]);
        assert_eq!(rewind.refused, ["../outside"]);
        // The whole of prompt 1 on: `a` goes back to what prompt 1 found.
        let all = Rewind::of(&changes, 1, None, ws.path());
        assert!(all.restore.contains(&("b".to_owned(), None)));
        assert!(all.overlaps.is_empty());
        // `0.10` is not a child of `0.1`.
        assert!(!in_context("0.10", "0.1"));
        assert!(in_context("0.1.2", "0.1"));
    }

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
        assert_eq!(object(&objects, fiftieth).unwrap(), versions[49]);
        // A piece swapped for other bytes is found out.
        let list = std::fs::read_to_string(objects.join(format!("{fiftieth}.pieces"))).unwrap();
        let piece = list.lines().next().unwrap();
        std::fs::write(objects.join(piece), b"planted").unwrap();
        assert!(object(&objects, fiftieth).is_err());
        assert!(object(&objects, "../../etc/passwd").is_err());
    }
}
