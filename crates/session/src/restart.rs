//! Starting a run again from another's journal — `resume` (an interrupted run goes on) and
//! `fork` (a run's responses served up to a point, then a model again) — as every front-end
//! does it: which run may be started again, the answers given for the calls it waits on,
//! where a fork may start, what a fork's model replaces, the files a fork puts back, and the
//! settings a journal would widen without the person's say. The front-end reads the stored
//! settings, asks the person where it can, and starts the run (`SessionBuilder::resuming`,
//! `forking`).

use std::path::{Path, PathBuf};

use wonopcode_journal::{EarlierRun, Invocation, ResumeError, RunMeta, Runs, SealKey};
use wonopcode_protocol::ContextPath;
use wonopcode_providers::Transcript;
use wonopcode_tools::permission::Action;

use crate::settings::Settings;

/// Why a run cannot be started again; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum RestartError {
    /// The run cannot be started again as asked (one line saying why).
    #[error("{0}")]
    Refused(String),
    /// The run's journal could not be read.
    #[error(transparent)]
    Journal(#[from] wonopcode_journal::JournalError),
    /// The run's recorded responses could not be read.
    #[error("cannot read run {id}'s responses: {reason}")]
    Responses {
        /// The run.
        id: String,
        /// Why.
        reason: String,
    },
}

/// How run `meta` was started, when it can be started again: its journal says how, and a
/// one-prompt run got its prompt before it stopped.
pub fn invocation_of(meta: &RunMeta) -> Result<&Invocation, RestartError> {
    let id = &meta.id;
    let Some(invocation) = meta.invocation.as_ref() else {
        return Err(RestartError::Refused(format!(
            "run {id} does not say how it was started (it predates resumable journals)"
        )));
    };
    if meta.prompts.is_empty() && invocation.one_shot {
        return Err(RestartError::Refused(format!(
            "run {id} stopped before its prompt was given: start it again instead"
        )));
    }
    Ok(invocation)
}

/// Refuses to start run `id` again when its conversation lives in a `--history` file:
/// starting it again would write that conversation twice.
pub fn refuse_history(id: &str, settings: &Settings) -> Result<(), RestartError> {
    match &settings.history {
        Some(history) => Err(RestartError::Refused(format!(
            "run {id} kept its conversation in --history {}, which starting it again would write twice: continue that conversation with --history {0} instead",
            history.display()
        ))),
        None => Ok(()),
    }
}

/// The run read back with the person's answers in place of the calls it waits on (each
/// `[CONTEXT:]CALL_ID` and its text); an answer naming no waiting call is refused (one line
/// naming those that wait).
pub fn answered(
    earlier: Result<EarlierRun, ResumeError>,
    answers: &[(String, String)],
) -> Result<EarlierRun, ResumeError> {
    let mut earlier = earlier?;
    for (target, text) in answers {
        let (context, id) = answer_target(target);
        earlier
            .calls
            .answer(context.as_ref(), id, text)
            .map_err(|why| ResumeError::Answer(format!("run {}: {why}", earlier.meta.id)))?;
    }
    Ok(earlier)
}

/// `CONTEXT:CALL_ID` (`0.2:toolu_06`) or a bare `CALL_ID`.
fn answer_target(target: &str) -> (Option<ContextPath>, &str) {
    match target.split_once(':') {
        Some((context, id)) if !id.is_empty() => match ContextPath::parse(context) {
            Some(context) => (Some(context), id),
            None => (None, target),
        },
        _ => (None, target),
    }
}

/// Where a fork starts: `CONTEXT:RESPONSE` (`0.2:1`), a context path and a response number.
pub fn fork_point(text: &str) -> Result<(ContextPath, u32), RestartError> {
    let bad = || {
        RestartError::Refused(format!(
            "--at {text}: give CONTEXT:RESPONSE, a context path and a response number (`0.2:1`; `wonopcode runs show` lists them)"
        ))
    };
    let (context, response) = text.rsplit_once(':').ok_or_else(bad)?;
    let context = ContextPath::parse(context).ok_or_else(bad)?;
    let response = response.parse().map_err(|_| bad())?;
    Ok((context, response))
}

/// Refuses a fork point past what run `id`'s journal (its `responses` file) holds for that
/// context.
pub fn check_fork_point(
    id: &str,
    responses: &Path,
    context: &ContextPath,
    response: u32,
) -> Result<(), RestartError> {
    let (transcript, _) =
        Transcript::load_unfinished(responses).map_err(|e| RestartError::Responses {
            id: id.to_owned(),
            reason: e.to_string(),
        })?;
    let held = transcript
        .turns
        .iter()
        .filter(|t| t.context == *context)
        .count();
    if response as usize > held || held == 0 {
        return Err(RestartError::Refused(format!(
            "--at {context}:{response}: run {id}'s journal has {held} response(s) of context {context}, numbered from 0"
        )));
    }
    Ok(())
}

/// The live model a fork names in place of the run's, its paths absolute.
#[derive(Debug, Clone, Default)]
pub struct ForkModel {
    /// A transcript to answer from.
    pub replay: Option<PathBuf>,
    /// A provider.
    pub provider: Option<String>,
    /// A model id (of the run's provider, unless `provider` names another).
    pub model: Option<String>,
    /// Another workspace.
    pub workspace: Option<PathBuf>,
}

impl ForkModel {
    /// Lays the fork's model over `settings`, those of run `meta`: a transcript or a
    /// provider replaces its whole model, a model alone its id (keeping the run's
    /// provider); the run's recording file is its own (the fork records in its journal).
    pub fn lay_over(self, settings: &mut Settings, meta: &RunMeta) {
        let choice = &mut settings.model;
        if self.replay.is_some() || self.provider.is_some() || self.model.is_some() {
            choice.replay = None;
            choice.replay_pace = None;
            choice.replay_mode = Default::default();
            choice.model = None;
        }
        if self.replay.is_some() || self.provider.is_some() {
            choice.provider = None;
            choice.base_url = None;
            choice.wire = None;
        }
        if self.model.is_some() && self.provider.is_none() && choice.provider.is_none() {
            choice.provider = meta.model.split_once('/').map(|(p, _)| p.to_owned());
        }
        choice.replay = self.replay.or(choice.replay.take());
        choice.provider = self.provider.or(choice.provider.take());
        choice.model = self.model.or(choice.model.take());
        choice.record = None;
        if let Some(workspace) = self.workspace {
            settings.workspace = workspace;
        }
    }
}

/// Puts the files run `id` changed in `workspace` back to what they were before it (from
/// its checkpoints), so a fork's tool calls, run again, leave them as they were at its
/// point. A file changed since by someone else is left alone. Returns what was done and
/// refused, for the front-end to say.
pub fn files_before(
    runs: &Runs,
    id: &str,
    workspace: &Path,
) -> Result<wonopcode_journal::Rewind, RestartError> {
    let dir = runs
        .find(id)
        .map_err(|e| RestartError::Refused(e.to_string()))?;
    Ok(wonopcode_journal::rewind_run(
        &dir,
        workspace,
        0,
        &[],
        false,
        false,
    )?)
}

/// What run `invocation`'s stored settings would widen that the person did not give again
/// (`given`): nothing when the journal is sealed by this user's key. A journal can be
/// changed by whoever may write the runs directory, so settings not sealed run what they
/// would widen only when the person says so — asked, or by giving the flags again.
pub fn unasked_widening(
    invocation: &Invocation,
    stored: &Settings,
    given: &Settings,
) -> Vec<String> {
    let sealed = SealKey::standard().is_some_and(|key| invocation.is_sealed_by(&key));
    if sealed {
        return Vec::new();
    }
    let given = widening(given);
    widening(stored)
        .into_iter()
        .filter(|w| !given.contains(w))
        .collect()
}

/// The settings that widen what a run may do beyond the defaults and the user's config
/// file: approvals, sandbox, servers, rules, another config or loops, another provider
/// address, workspace trust. One flag (with its value) each, as it is typed.
pub fn widening(settings: &Settings) -> Vec<String> {
    let mut wide = Vec::new();
    if settings.yes {
        wide.push("--yes".to_owned());
    }
    wide.extend(
        settings
            .rules
            .iter()
            .filter(|r| r.action == Action::Allow)
            .map(|r| match &r.pattern {
                Some(pattern) => format!("--allow {}:{pattern}", r.tool),
                None => format!("--allow {}", r.tool),
            }),
    );
    if settings.sandbox == Some(wonopcode_sandbox::SandboxMode::FullAccess) {
        wide.push("--sandbox full-access".to_owned());
    }
    wide.extend(settings.mcp.iter().map(|(n, c)| format!("--mcp {n}={c}")));
    if let Some(config) = &settings.config_file {
        wide.push(format!("--config {}", config.display()));
    }
    wide.extend(
        settings
            .loops_dirs
            .iter()
            .map(|d| format!("--loops-dir {}", d.display())),
    );
    if settings.trust_workspace {
        wide.push("--trust-workspace".to_owned());
    }
    if let Some(url) = &settings.model.base_url {
        wide.push(format!("--base-url {url}"));
    }
    wide
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_point_is_a_context_and_a_response() {
        assert_eq!(
            fork_point("0.2:1").unwrap(),
            (ContextPath::parse("0.2").unwrap(), 1)
        );
        for bad in ["0.2", "x:1", "0.2:-1", ":1"] {
            let e = fork_point(bad).unwrap_err().to_string();
            assert!(e.contains("give CONTEXT:RESPONSE"), "{bad}: {e}");
        }
    }

    #[test]
    fn only_what_widens_and_was_not_given_again_is_asked_about() {
        let mut stored = Settings::new("/w");
        stored.yes = true;
        stored.trust_workspace = true;
        stored.model.base_url = Some("http://evil/v1".to_owned());
        let mut given = Settings::new("/w");
        given.yes = true;
        let invocation = Invocation {
            args: Vec::new(),
            settings: None,
            cwd: "/w".to_owned(),
            one_shot: true,
            json: false,
            seal: None,
        };
        assert_eq!(
            unasked_widening(&invocation, &stored, &given),
            ["--trust-workspace", "--base-url http://evil/v1"]
        );
        assert!(widening(&Settings::new("/w")).is_empty());
    }

    #[test]
    fn an_answer_is_for_a_call_in_a_context_or_any() {
        assert_eq!(
            answer_target("0.2:toolu_06"),
            (ContextPath::parse("0.2"), "toolu_06")
        );
        assert_eq!(answer_target("toolu_06"), (None, "toolu_06"));
        assert_eq!(answer_target("call:x:y"), (None, "call:x:y"));
    }
}
