//! A session's run journal (`wonopcode_journal`): the run's directory, made when the session
//! is built; its model responses recorded into the run's transcript from the first request;
//! its `run.json` and event log begun once the loop and model are known; its end marked.
//! A journal that cannot be made is a notice, and the run goes on without one.

use std::sync::Arc;

use parking_lot::Mutex;
use wonopcode_journal::{
    CheckpointStore, EventLog, Invocation, KeptCommand, RunDir, RunMeta, RunStatus, Runs,
    SessionCommand, new_run_id,
};
use wonopcode_protocol::{ModelSource, Part, SharedModel};
use wonopcode_providers::{RecordingModel, RecordingSource};

use crate::error::SessionError;

/// The journal of one session's run.
pub(crate) struct RunJournal {
    id: String,
    dir: RunDir,
    /// `run.json` as written last (its prompts grow as the run goes).
    meta: Mutex<Option<RunMeta>>,
    /// Every change the file tools make, to take back (`None`: the store could not be made).
    checkpoints: Option<Arc<CheckpointStore>>,
}

impl RunJournal {
    /// Makes a new run's directory under `runs` (with another id should one exist).
    pub fn create(runs: &Runs) -> Result<Self, String> {
        let mut last = String::new();
        for _ in 0..3 {
            let id = new_run_id();
            match runs.create(&id) {
                Ok(dir) => {
                    let checkpoints = CheckpointStore::open(&dir)
                        .inspect_err(|e| tracing::warn!(error = %e, "the run keeps no checkpoints"))
                        .ok()
                        .map(Arc::new);
                    return Ok(Self {
                        id,
                        dir,
                        meta: Mutex::new(None),
                        checkpoints,
                    });
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The run's directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// The prompts the root has been given so far.
    pub fn prompts(&self) -> Vec<String> {
        self.meta
            .lock()
            .as_ref()
            .map(|meta| meta.prompts.clone())
            .unwrap_or_default()
    }

    /// Where the file tools record their changes.
    pub fn checkpoints(&self) -> Option<wonopcode_protocol::checkpoint::SharedCheckpoints> {
        self.checkpoints
            .clone()
            .map(|c| c as wonopcode_protocol::checkpoint::SharedCheckpoints)
    }

    /// `model` and `models` with every response recorded into the run's transcript.
    pub fn recording(
        &self,
        model: SharedModel,
        models: Arc<dyn ModelSource>,
    ) -> Result<(SharedModel, Arc<dyn ModelSource>), SessionError> {
        let path = self.dir.responses_path();
        let recorder = Arc::new(RecordingModel::create(model, &path).map_err(|e| {
            SessionError::Transcript(format!("cannot create {}: {e}", path.display()))
        })?);
        let models = RecordingSource::new(models, recorder.clone());
        Ok((recorder, Arc::new(models)))
    }

    /// Writes `run.json` (running) and opens the event log.
    pub fn begin(&self, meta: RunMetaParts<'_>) -> Result<EventLog, String> {
        let meta = RunMeta {
            id: self.id.clone(),
            workspace: meta.workspace.to_owned(),
            started: wonopcode_protocol::event::now_rfc3339(),
            ended: None,
            loop_name: meta.loop_name.to_owned(),
            model: meta.model.to_owned(),
            prompt: None,
            status: RunStatus::Running,
            origin: meta.origin,
            pid: Some(std::process::id()),
            resumes: meta.resumes,
            continues: meta.continues,
            invocation: meta.invocation,
            prompts: Vec::new(),
            modules: meta.modules,
            commands: Vec::new(),
        };
        let log = self.dir.begin(&meta).map_err(|e| e.to_string())?;
        *self.meta.lock() = Some(meta);
        Ok(log)
    }

    /// Marks the run ended: interrupted, suspended (its last turn waits for answers), or
    /// finished.
    pub fn end(&self, status: RunStatus) -> Result<(), String> {
        self.dir.end(status).map_err(|e| e.to_string())
    }

    /// Adds the pin of a module fetched by `tag` to `run.json`, for a resume to fetch again.
    pub fn pinned(&self, tag: &str, pinned: &str) {
        let mut meta = self.meta.lock();
        let Some(meta) = meta.as_mut() else {
            return;
        };
        meta.modules.insert(tag.to_owned(), pinned.to_owned());
        if let Err(e) = meta.write(&self.dir.meta_path()) {
            tracing::warn!(error = %e, "cannot update the run's metadata");
        }
    }

    /// Keeps a session command in `run.json`, in its place among the prompts, for a resume
    /// to give again.
    pub fn commanded(&self, command: SessionCommand) {
        let mut meta = self.meta.lock();
        let Some(meta) = meta.as_mut() else {
            return;
        };
        meta.commands.push(KeptCommand {
            after_prompts: meta.prompts.len(),
            command,
        });
        if let Err(e) = meta.write(&self.dir.meta_path()) {
            tracing::warn!(error = %e, "cannot update the run's metadata");
        }
    }

    /// Adds a prompt of the root to `run.json` (whole: a resume gives it again; the first
    /// also cut to a line, for `runs list`), and its attachments beside it, before its turn
    /// runs.
    pub fn prompted(&self, prompt: &str, attachments: &[Part]) {
        let mut meta = self.meta.lock();
        let Some(meta) = meta.as_mut() else {
            return;
        };
        if !attachments.is_empty()
            && let Err(e) = self.dir.keep_attachments(meta.prompts.len(), attachments)
        {
            tracing::warn!(error = %e, "cannot keep the prompt's attachments");
        }
        if let Some(checkpoints) = &self.checkpoints {
            checkpoints.at_prompt(meta.prompts.len());
        }
        if meta.prompt.is_none() {
            let line = prompt.lines().next().unwrap_or_default();
            meta.prompt = Some(line.chars().take(120).collect());
        }
        meta.prompts.push(prompt.to_owned());
        if let Err(e) = meta.write(&self.dir.meta_path()) {
            tracing::warn!(error = %e, "cannot update the run's metadata");
        }
    }
}

/// What `run.json` says besides what the journal knows itself.
pub(crate) struct RunMetaParts<'a> {
    /// The workspace.
    pub workspace: &'a str,
    /// The root's loop or agent.
    pub loop_name: &'a str,
    /// The root's model, `provider/id`.
    pub model: &'a str,
    /// How the run was started.
    pub invocation: Option<Invocation>,
    /// The interrupted run it resumes.
    pub resumes: Option<String>,
    /// The run whose conversation it goes on with.
    pub continues: Option<String>,
    /// The run and point it forks (`RUN_ID@CONTEXT:RESPONSE`).
    pub origin: Option<String>,
    /// The published modules fetched so far, each tag with its pin.
    pub modules: std::collections::BTreeMap<String, String>,
}
