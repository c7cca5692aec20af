//! `wonopcode batch merge DIR... --out DIR`: the result directories of a batch's shards
//! (each machine of an Indexed Job writes its own) joined into one, as if one machine had run
//! the whole batch. Each task's files are copied except its scratch workspace (its changes
//! are in `changes.patch`); a task found in two directories is refused unless both results
//! are the same.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::BatchError;
use crate::results::{ResultsDir, TaskResult};

/// What a merge joined.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Every task's result, by id.
    pub results: BTreeMap<String, TaskResult>,
}

/// Joins the results under `dirs` into `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, BatchError> {
    let target = ResultsDir::open(out)?;
    let mut results = target.finished()?;
    let mut origin: BTreeMap<String, PathBuf> = results
        .keys()
        .map(|id| (id.clone(), out.to_path_buf()))
        .collect();
    for dir in dirs {
        if !dir.join("tasks").is_dir() {
            return Err(BatchError::Merge(format!(
                "{} is not a batch's results directory (it has no tasks/)",
                dir.display()
            )));
        }
        let source = ResultsDir::open(dir)?;
        if same_dir(dir, out) {
            continue;
        }
        for (id, result) in source.finished()? {
            if let Some(earlier) = results.get(&id) {
                if same_result(earlier, &result) {
                    continue;
                }
                let first = origin
                    .get(&id)
                    .map_or_else(String::new, |p| p.display().to_string());
                return Err(BatchError::Merge(format!(
                    "task `{id}` has different results in {first} and {}",
                    dir.display()
                )));
            }
            copy_task(&source.task_dir(&id), &target.task_dir(&id))?;
            origin.insert(id.clone(), dir.clone());
            results.insert(id, result);
        }
    }
    target.rewrite(&results)?;
    Ok(Merged { results })
}

/// The same result, whenever it was stored.
fn same_result(a: &TaskResult, b: &TaskResult) -> bool {
    a.id == b.id
        && a.status == b.status
        && a.answer == b.answer
        && a.changed_files == b.changed_files
        && a.run_id == b.run_id
}

fn same_dir(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// Copies a task's directory, leaving out its scratch workspace.
fn copy_task(from: &Path, to: &Path) -> Result<(), BatchError> {
    let io = |what: String| move |source| BatchError::Io { what, source };
    std::fs::create_dir_all(to).map_err(io(format!("cannot create {}", to.display())))?;
    let entries = std::fs::read_dir(from).map_err(io(format!("cannot read {}", from.display())))?;
    for entry in entries {
        let entry = entry.map_err(io(format!("cannot read {}", from.display())))?;
        let name = entry.file_name();
        if name == "workspace" {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(io(format!("cannot read {}", entry.path().display())))?;
        let target = to.join(&name);
        if kind.is_dir() {
            copy_task(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)
                .map_err(io(format!("cannot copy {}", entry.path().display())))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::TaskStatus;

    fn result(id: &str, answer: &str) -> TaskResult {
        TaskResult {
            id: id.to_owned(),
            status: TaskStatus::Complete,
            answer: Some(answer.to_owned()),
            error: None,
            usage: Default::default(),
            cost_usd: None,
            iterations: 1,
            duration_ms: 5,
            changed_files: Vec::new(),
            run_id: None,
            finished_at: "2026-01-01T00:00:00Z".to_owned(),
        }
    }

    #[test]
    fn shards_merge_and_a_conflict_is_refused() -> Result<(), BatchError> {
        let temp = tempfile::tempdir().map_err(|e| BatchError::Io {
            what: "tempdir".into(),
            source: e,
        })?;
        let (a, b, out) = (
            temp.path().join("a"),
            temp.path().join("b"),
            temp.path().join("out"),
        );
        ResultsDir::open(&a)?.store(&result("one", "1"), "")?;
        ResultsDir::open(&b)?.store(&result("two", "2"), "diff --git a/x b/x\n")?;
        std::fs::create_dir_all(b.join("tasks/two/workspace")).map_err(|e| BatchError::Io {
            what: "mkdir".into(),
            source: e,
        })?;
        let merged = merge(&[a.clone(), b.clone()], &out)?;
        assert_eq!(merged.results.keys().collect::<Vec<_>>(), ["one", "two"]);
        assert!(out.join("tasks/two/changes.patch").is_file());
        assert!(!out.join("tasks/two/workspace").exists());
        let lines = std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default();
        assert_eq!(lines.lines().count(), 2);
        // Merging again changes nothing.
        assert_eq!(merge(&[a.clone(), b.clone()], &out)?, merged);

        let c = temp.path().join("c");
        ResultsDir::open(&c)?.store(&result("one", "another answer"), "")?;
        let error = merge(&[a, c], &temp.path().join("out2"))
            .err()
            .map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("task `one` has different results")),
            "{error:?}"
        );
        let error = merge(&[temp.path().join("nothing")], &out)
            .err()
            .map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("not a batch's results directory")),
            "{error:?}"
        );
        Ok(())
    }
}
