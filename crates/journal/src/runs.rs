//! Where runs are kept (`runs/` under the data dir), a new run's directory, and the runs
//! there: listed newest first, found by id (or a unique start of one), removed by `gc`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use wonopcode_protocol::{Part, attachment};

use crate::JournalError;
use crate::events::EventLog;
use crate::meta::{RunMeta, RunStatus};

/// The variable that puts `runs/` somewhere else than the data dir.
pub const RUNS_DIR_VARIABLE: &str = "WONOPCODE_RUNS_DIR";

/// A new run id: its start in UTC (so ids sort by start) and six hex digits of the clock's
/// nanoseconds, the process id and a count of the ids this process made, so two runs started
/// in one second differ (and [`Runs::create`] refuses an id that exists all the same).
pub fn new_run_id() -> String {
    static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let now = SystemTime::now();
    let stamp = wonopcode_protocol::event::rfc3339_of(now);
    // `2026-11-26T05:27:00.123Z` → `20261126T052700`.
    let compact: String = stamp
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let salt =
        (nanos ^ std::process::id().rotate_left(16) ^ made.wrapping_mul(0x9e37_79b9)) & 0x00ff_ffff;
    format!("{compact}-{salt:06x}")
}

/// Every run kept on this machine.
#[derive(Debug, Clone)]
pub struct Runs {
    dir: PathBuf,
}

impl Runs {
    /// The runs in `WONOPCODE_RUNS_DIR`, else the data dir's `wonopcode/runs`; `None` when
    /// there is no data dir.
    pub fn standard() -> Option<Self> {
        let dir = match std::env::var_os(RUNS_DIR_VARIABLE) {
            Some(dir) => PathBuf::from(dir),
            None => dirs::data_dir()?.join("wonopcode").join("runs"),
        };
        Some(Self { dir })
    }

    /// The runs in `dir`.
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// The run whose directory is `path` (a batch's `runs/ID`, say), and the runs beside
    /// it; `None` when `path` holds no run.
    pub fn holding(path: &Path) -> Option<(Self, RunDir)> {
        if !path.join("run.json").is_file() {
            return None;
        }
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Some((
            Self::at(dir),
            RunDir {
                dir: path.to_path_buf(),
            },
        ))
    }

    /// Where they are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Makes the directory of run `id`; one that exists is refused, never shared.
    pub fn create(&self, id: &str) -> Result<RunDir, JournalError> {
        crate::private::create_dir_all(&self.dir).map_err(|e| JournalError::io(&self.dir, &e))?;
        let run = RunDir {
            dir: self.dir.join(id),
        };
        crate::private::create_dir(&run.dir).map_err(|e| JournalError::io(&run.dir, &e))?;
        Ok(run)
    }

    /// Every run's metadata, newest first; a directory without readable metadata is left
    /// out.
    pub fn list(&self) -> Vec<RunMeta> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut runs: Vec<RunMeta> = entries
            .filter_map(Result::ok)
            .filter_map(|e| RunMeta::read(&e.path().join("run.json")).ok())
            .collect();
        runs.sort_by(|a, b| b.id.cmp(&a.id));
        runs
    }

    /// The run `id`, or the one run whose id starts with it.
    pub fn find(&self, id: &str) -> Result<RunDir, JournalError> {
        let exact = self.dir.join(id);
        if !id.is_empty() && !id.contains(['/', '\\']) && exact.join("run.json").is_file() {
            return Ok(RunDir { dir: exact });
        }
        let matching: Vec<RunMeta> = self
            .list()
            .into_iter()
            .filter(|m| !id.is_empty() && m.id.starts_with(id))
            .collect();
        match matching.as_slice() {
            [one] => Ok(RunDir {
                dir: self.dir.join(&one.id),
            }),
            [] => Err(JournalError::NoRun(id.to_owned())),
            many => Err(JournalError::Ambiguous(id.to_owned(), many.len())),
        }
    }

    /// Removes the runs that are not running (a `running` one whose process is gone is not)
    /// and either older than `older_than` or past the newest `keep`; the ids removed.
    pub fn gc(
        &self,
        keep: usize,
        older_than: Option<Duration>,
    ) -> Result<Vec<String>, JournalError> {
        let now = SystemTime::now();
        let mut removed = Vec::new();
        for (i, meta) in self.list().into_iter().enumerate() {
            if meta.current_status() == RunStatus::Running {
                continue;
            }
            let dir = self.dir.join(&meta.id);
            let old = older_than.is_some_and(|limit| {
                std::fs::metadata(dir.join("run.json"))
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|at| now.duration_since(at).ok())
                    .is_some_and(|age| age > limit)
            });
            if i >= keep || old {
                std::fs::remove_dir_all(&dir).map_err(|e| JournalError::io(&dir, &e))?;
                removed.push(meta.id);
            }
        }
        Ok(removed)
    }
}

/// One run's directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    dir: PathBuf,
}

impl RunDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Its `run.json`.
    pub fn meta_path(&self) -> PathBuf {
        self.dir.join("run.json")
    }

    /// Its `events.jsonl`.
    pub fn events_path(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    /// Its `responses.jsonl` (a transcript).
    pub fn responses_path(&self) -> PathBuf {
        self.dir.join("responses.jsonl")
    }

    /// The images and documents its root's prompt `index` (of `run.json`'s `prompts`)
    /// carried, when it carried any: kept beside `run.json`, which `runs list` reads for
    /// every run, so a screenshot does not slow the listing.
    pub fn attachments_path(&self, index: usize) -> PathBuf {
        attachments_path(&self.dir, index)
    }

    /// Keeps the attachments of its root's prompt `index` ([`Self::attachments_path`]),
    /// readable by the owner alone, as the rest of the journal.
    pub fn keep_attachments(&self, index: usize, attachments: &[Part]) -> Result<(), JournalError> {
        let path = self.attachments_path(index);
        let bytes = serde_json::to_vec(attachments).unwrap_or_default();
        path.parent()
            .map_or(Ok(()), crate::private::create_dir_all)
            .and_then(|()| crate::private::write(&path, &bytes))
            .map_err(|e| JournalError::io(&path, &e))
    }

    /// Its metadata.
    pub fn meta(&self) -> Result<RunMeta, JournalError> {
        RunMeta::read(&self.meta_path())
    }

    /// Begins the run's journal: `run.json` (status `running`) and an empty event log.
    pub fn begin(&self, meta: &RunMeta) -> Result<EventLog, JournalError> {
        meta.write(&self.meta_path())?;
        EventLog::create(&self.events_path())
    }

    /// Marks the run ended with `status`.
    pub fn end(&self, status: RunStatus) -> Result<(), JournalError> {
        let mut meta = self.meta()?;
        meta.status = status;
        meta.pid = None;
        meta.ended = Some(wonopcode_protocol::event::now_rfc3339());
        meta.write(&self.meta_path())
    }
}

/// Where the run in `dir` keeps the attachments of its root's prompt `index`.
pub fn attachments_path(dir: &Path, index: usize) -> PathBuf {
    dir.join("attachments").join(format!("prompt-{index}.json"))
}

/// The attachments of the root's prompt `index` of the run in `dir` (none when it carried
/// none), each checked by its bytes again: a journal is read back, not trusted.
pub fn prompt_attachments(dir: &Path, index: usize) -> Result<Vec<Part>, JournalError> {
    let path = attachments_path(dir, index);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(JournalError::io(&path, &e)),
    };
    let parts: Vec<Part> =
        serde_json::from_str(&text).map_err(|e| bad_attachment(&path, &e.to_string()))?;
    parts
        .iter()
        .map(|part| {
            let (media_type, name) = match part {
                Part::Image { media_type, .. } => (media_type.as_str(), "an image".to_owned()),
                Part::Document {
                    media_type, name, ..
                } => (media_type.as_str(), name.clone()),
                _ => return Err(bad_attachment(&path, "not an image or document")),
            };
            let bytes =
                attachment::bytes_of(part).ok_or_else(|| bad_attachment(&path, "not base64"))?;
            attachment::as_claimed(&bytes, media_type, &name)
                .map_err(|e| bad_attachment(&path, &e.to_string()))
        })
        .collect()
}

fn bad_attachment(path: &Path, why: &str) -> JournalError {
    JournalError::Io {
        path: path.display().to_string(),
        why: why.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str, status: RunStatus) -> RunMeta {
        RunMeta {
            id: id.to_owned(),
            workspace: "/w".into(),
            started: "2026-11-26T05:27:00.000Z".into(),
            ended: None,
            loop_name: "standard".into(),
            model: "p/m".into(),
            prompt: Some("hi".into()),
            resumes: None,
            continues: None,
            invocation: None,
            prompts: Vec::new(),
            modules: Default::default(),
            commands: Vec::new(),
            status,
            origin: None,
            pid: Some(std::process::id()),
        }
    }

    #[test]
    fn runs_are_listed_newest_first_found_by_a_prefix_and_collected() {
        let dir = tempfile::tempdir().unwrap();
        let runs = Runs::at(dir.path());
        for (id, status) in [
            ("20261126T050000-aaaaaa", RunStatus::Finished),
            ("20261126T060000-bbbbbb", RunStatus::Interrupted),
            ("20261126T070000-cccccc", RunStatus::Running),
            ("20261126T080000-dddddd", RunStatus::Running),
        ] {
            let mut meta = meta(id, status);
            if id.ends_with("dddddd") {
                // Its process is gone: it died before its end.
                meta.pid = Some(u32::MAX - 1);
            }
            runs.create(id).unwrap().begin(&meta).unwrap();
        }
        let listed: Vec<(String, RunStatus)> = runs
            .list()
            .into_iter()
            .map(|m| (m.id.clone(), m.current_status()))
            .collect();
        let expected = [
            ("20261126T080000-dddddd", RunStatus::Interrupted),
            ("20261126T070000-cccccc", RunStatus::Running),
            ("20261126T060000-bbbbbb", RunStatus::Interrupted),
            ("20261126T050000-aaaaaa", RunStatus::Finished),
        ]
        .map(|(id, status)| (id.to_owned(), status));
        assert_eq!(listed, expected);
        assert!(runs.find("20261126T06").is_ok());
        assert!(runs.find("20261126T").is_err(), "ambiguous");
        assert!(runs.find("20261126T07").is_ok());
        assert!(runs.find("../x").is_err());
        // An id that exists is never given to a second run.
        assert!(runs.create("20261126T050000-aaaaaa").is_err());
        // Keep one: the running one is never collected, whatever its place; past the one
        // kept, the rest are.
        let removed = runs.gc(1, None).unwrap();
        assert_eq!(
            removed,
            ["20261126T060000-bbbbbb", "20261126T050000-aaaaaa"]
        );
        assert_eq!(runs.list().len(), 2);
        // The dead one goes too when nothing is kept; the live one stays.
        assert_eq!(runs.gc(0, None).unwrap(), ["20261126T080000-dddddd"]);
    }

    #[test]
    fn run_ids_sort_by_start_and_differ() {
        let ids: Vec<String> = (0..100).map(|_| new_run_id()).collect();
        assert_eq!(ids[0].len(), "20261126T052700-1a2b3c".len(), "{}", ids[0]);
        assert!(ids[0][..15] <= ids[99][..15]);
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len());
    }
}
