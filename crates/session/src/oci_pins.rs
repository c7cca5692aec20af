//! Modules published to an OCI registry, as one run fetches them: `--agent-loop oci://…`, a
//! registry entry whose `path` is one, the root's and every child's alike. Each tag is
//! fetched once per run and pinned to the digest it named; the pins go into the run's
//! `run.json` (`modules`), and a resume or fork is given them back, so it runs the same bytes
//! however the tag moved since. A pin is only taken for the repository its tag names: a
//! changed `run.json` can choose another published version of the same module, nothing else.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use wonopcode_contexts::LoopSource;
use wonopcode_oci::OciRef;

use crate::loops::fetch_module;
use crate::run_journal::RunJournal;

/// The run's published modules: the pins it was given and those it made.
#[derive(Default)]
pub(crate) struct PublishedModules {
    /// Each tag reference fetched (or given by the run resumed) and the digest it named.
    pins: Mutex<BTreeMap<String, String>>,
    /// Where new pins are written, once the run's journal has begun.
    journal: Mutex<Option<Arc<RunJournal>>>,
}

impl PublishedModules {
    /// A run's, starting from the pins of the run it resumes or forks.
    pub fn new(pins: BTreeMap<String, String>) -> Self {
        Self {
            pins: Mutex::new(pins),
            journal: Mutex::new(None),
        }
    }

    /// `source` ready to load: a published module fetched into its file, anything else as
    /// it is. `Err`: one line naming the reference.
    pub async fn located(&self, source: LoopSource) -> Result<LoopSource, String> {
        match source {
            LoopSource::Oci(reference) => Ok(LoopSource::File(self.fetch(&reference).await?)),
            other => Ok(other),
        }
    }

    /// The file of the module `reference` names, pinned as this run pinned it.
    pub async fn fetch(&self, reference: &str) -> Result<PathBuf, String> {
        let wanted = self.pin_of(reference);
        let fetched = fetch_module(&wanted).await.map_err(|e| e.to_string())?;
        let pinned = fetched.pinned.to_string();
        if pinned != reference {
            let new = self
                .pins
                .lock()
                .insert(reference.to_owned(), pinned.clone())
                .is_none();
            if new && let Some(journal) = self.journal.lock().as_ref() {
                journal.pinned(reference, &pinned);
            }
        }
        Ok(fetched.path)
    }

    /// The pins so far, for `run.json` when the journal begins; later ones go there as they
    /// are made.
    pub fn begin_journal(&self, journal: Arc<RunJournal>) -> BTreeMap<String, String> {
        *self.journal.lock() = Some(journal);
        self.pins.lock().clone()
    }

    /// The reference to fetch for `reference`: its pin when it has one for the same
    /// repository, else itself.
    fn pin_of(&self, reference: &str) -> String {
        let Some(pin) = self.pins.lock().get(reference).cloned() else {
            return reference.to_owned();
        };
        match (OciRef::parse(reference), OciRef::parse(&pin)) {
            (Ok(tag), Ok(pinned))
                if tag.registry() == pinned.registry()
                    && tag.repository() == pinned.repository()
                    && pinned.digest().is_some() =>
            {
                pin
            }
            _ => {
                tracing::warn!(%reference, %pin, "a module pin for another repository is ignored");
                reference.to_owned()
            }
        }
    }
}
