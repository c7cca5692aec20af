//! A conversation kept across runs: its first run's id names it, and each run that went on
//! with it names the run before — `resumes` (a resume, which gave the earlier prompts again)
//! or `continues` (an editor's session loaded again, which went on from where it ended).
//! Nothing a run left is ever rewritten. What an editor calls a session, listed and loaded by that first id.

use std::collections::{HashMap, HashSet};

use crate::JournalError;
use crate::meta::RunMeta;
use crate::runs::{RunDir, Runs};

/// A conversation and the run that holds it now.
#[derive(Debug, Clone)]
pub struct Lineage {
    /// Its first run's id: the conversation's name.
    pub id: String,
    /// Its first run's first prompt, cut to a line.
    pub title: Option<String>,
    /// Its newest run that no other went on from (by start, to the millisecond: two runs
    /// started in one second have ids in no particular order).
    pub latest: RunMeta,
    /// The ids of the runs that hold it, the first first and the newest last (each went on
    /// from the one before; a run resumed twice has only the newest branch here).
    pub runs: Vec<String>,
    /// Where in `runs` its whole conversation starts: at its last resume (which gave the
    /// earlier prompts again, so its journal holds all of it), else at its first run.
    pub whole_from: usize,
}

impl Lineage {
    /// When it was last active: its newest run's end, else that run's start.
    pub fn updated(&self) -> &str {
        self.latest.ended.as_deref().unwrap_or(&self.latest.started)
    }
}

impl Runs {
    /// Every conversation, the most recently active first.
    pub fn lineages(&self) -> Vec<Lineage> {
        let runs = self.list();
        let by_id: HashMap<&str, &RunMeta> = runs.iter().map(|m| (m.id.as_str(), m)).collect();
        // A run another went on from holds less than that one.
        let went_on: HashSet<&str> = runs.iter().filter_map(went_on_from).collect();
        let newer = |a: &RunMeta, b: &RunMeta| {
            let key = |m: &RunMeta| {
                (
                    !went_on.contains(m.id.as_str()),
                    m.started.clone(),
                    m.id.clone(),
                )
            };
            key(a) > key(b)
        };
        let mut lineages: HashMap<&str, Lineage> = HashMap::new();
        for meta in &runs {
            let first = first_of(meta, &by_id);
            let lineage = lineages.entry(&first.id).or_insert_with(|| Lineage {
                id: first.id.clone(),
                title: first.prompt.clone(),
                latest: meta.clone(),
                runs: Vec::new(),
                whole_from: 0,
            });
            if newer(meta, &lineage.latest) {
                lineage.latest = meta.clone();
            }
            if lineage.title.is_none() {
                lineage.title.clone_from(&meta.prompt);
            }
        }
        let mut lineages: Vec<Lineage> = lineages.into_values().collect();
        for lineage in &mut lineages {
            lineage.runs = chain_to(&lineage.latest, &by_id);
            lineage.whole_from = lineage
                .runs
                .iter()
                .rposition(|id| by_id.get(id.as_str()).is_some_and(|m| m.resumes.is_some()))
                .unwrap_or(0);
        }
        lineages.sort_by(|a, b| b.updated().cmp(a.updated()).then(b.id.cmp(&a.id)));
        lineages
    }

    /// The conversation `id` names (exactly: the id of its first run).
    pub fn lineage(&self, id: &str) -> Result<Lineage, JournalError> {
        self.lineages()
            .into_iter()
            .find(|l| l.id == id)
            .ok_or_else(|| JournalError::NoRun(id.to_owned()))
    }

    /// The directory of each run holding `lineage`, the first first.
    pub fn dirs_of(&self, lineage: &Lineage) -> Result<Vec<RunDir>, JournalError> {
        lineage.runs.iter().map(|id| self.find(id)).collect()
    }
}

/// The run `meta` went on from: the one it resumes, or the one whose conversation it
/// continues.
fn went_on_from(meta: &RunMeta) -> Option<&str> {
    meta.resumes.as_deref().or(meta.continues.as_deref())
}

/// The ids of the runs from the first of `meta`'s lineage to `meta`.
fn chain_to(meta: &RunMeta, by_id: &HashMap<&str, &RunMeta>) -> Vec<String> {
    let mut chain = vec![meta.id.clone()];
    let mut at = meta;
    for _ in 0..by_id.len() {
        match went_on_from(at).and_then(|id| by_id.get(id)) {
            Some(earlier) if !chain.contains(&earlier.id) => {
                chain.push(earlier.id.clone());
                at = earlier;
            }
            _ => break,
        }
    }
    chain.reverse();
    chain
}

/// The first run of `meta`'s lineage (a chain of `resumes` cut where a run is missing, or
/// where it would loop).
fn first_of<'a>(meta: &'a RunMeta, by_id: &HashMap<&str, &'a RunMeta>) -> &'a RunMeta {
    let mut first = meta;
    for _ in 0..by_id.len() {
        match went_on_from(first).and_then(|id| by_id.get(id)) {
            Some(earlier) if earlier.id != first.id => first = earlier,
            _ => break,
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use crate::meta::{RunMeta, RunStatus};
    use crate::runs::Runs;

    /// Writes run `id`, going on from `before` (a resume, or with `+` before it a
    /// continuation).
    fn write(runs: &Runs, id: &str, before: Option<&str>, prompt: &str) {
        let dir = runs.create(id).unwrap();
        let (resumes, continues) = match before.map(|b| b.strip_prefix('+').ok_or(b)) {
            Some(Ok(continued)) => (None, Some(continued)),
            Some(Err(resumed)) => (Some(resumed), None),
            None => (None, None),
        };
        let meta: RunMeta = serde_json::from_value(serde_json::json!({
            "id": id, "workspace": "/w", "started": id, "loop_name": "standard",
            "model": "p/m", "status": RunStatus::Finished, "resumes": resumes,
            "continues": continues, "prompt": prompt,
        }))
        .unwrap();
        meta.write(&dir.meta_path()).unwrap();
    }

    #[test]
    fn a_resumed_conversation_is_found_by_its_first_run_and_held_by_its_newest() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = Runs::at(tmp.path());
        write(&runs, "20261128T100000-aaaaaa", None, "first");
        write(
            &runs,
            "20261128T110000-bbbbbb",
            Some("20261128T100000-aaaaaa"),
            "first",
        );
        write(
            &runs,
            "20261128T120000-cccccc",
            Some("+20261128T110000-bbbbbb"),
            "first",
        );
        write(&runs, "20261128T113000-dddddd", None, "other");
        // A chain that loops on itself is cut, not followed for ever.
        write(
            &runs,
            "20261128T090000-eeeeee",
            Some("20261128T090000-eeeeee"),
            "loop",
        );
        let lineages = runs.lineages();
        let ids: Vec<(&str, &str)> = lineages
            .iter()
            .map(|l| (l.id.as_str(), l.latest.id.as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                ("20261128T100000-aaaaaa", "20261128T120000-cccccc"),
                ("20261128T113000-dddddd", "20261128T113000-dddddd"),
                ("20261128T090000-eeeeee", "20261128T090000-eeeeee"),
            ]
        );
        assert_eq!(
            lineages[0].runs,
            [
                "20261128T100000-aaaaaa",
                "20261128T110000-bbbbbb",
                "20261128T120000-cccccc"
            ]
        );
        let found = runs.lineage("20261128T100000-aaaaaa").unwrap();
        // bbbbbb resumed aaaaaa: its journal holds the conversation from the start.
        assert_eq!(found.whole_from, 1);
        let dirs = runs.dirs_of(&found).unwrap();
        assert!(dirs[2].path().ends_with("20261128T120000-cccccc"));
        // Only a conversation's own name finds it: not a later run's id, nor a prefix.
        assert!(runs.lineage("20261128T110000-bbbbbb").is_err());
        assert!(runs.lineage("20261128T1").is_err());
        assert!(runs.lineage("..").is_err());
    }

    #[test]
    fn a_resume_started_in_the_same_second_is_newest_whatever_its_id() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = Runs::at(tmp.path());
        write(&runs, "20261128T100000-dddddd", None, "first");
        // Its id sorts first (the same second, a smaller suffix), yet it went on from the other.
        write(
            &runs,
            "20261128T100000-000001",
            Some("20261128T100000-dddddd"),
            "first",
        );
        let lineage = runs.lineage("20261128T100000-dddddd").unwrap();
        assert_eq!(lineage.latest.id, "20261128T100000-000001");
        assert_eq!(
            lineage.runs,
            ["20261128T100000-dddddd", "20261128T100000-000001"]
        );
    }
}
