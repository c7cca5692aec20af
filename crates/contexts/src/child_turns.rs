//! A live child and its turns in the background: what a guest's `child` handle (WIT 0.2.8)
//! and an agent of the native loop's `spawn_agent` hold. A turn runs on a task of its own, so
//! the parent goes on; its result waits until taken (`wait`, `poll`). Dropping it cancels
//! the turn in progress, and the child's place in the tree is freed once the turn has let go.

use std::sync::Arc;

use futures::FutureExt;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use wonopcode_protocol::Usage;

use crate::child::{LiveChild, ParentView};
use crate::spawn::ChildResult;
use wonopcode_protocol::ContextPath;

/// A finished turn: the result, and what it spent since the last one.
pub type Turn = (ChildResult, Usage);

/// Where a child is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// A turn runs.
    Working,
    /// A turn finished; its result is not taken yet.
    Answered,
    /// It waits for a follow-up.
    Idle,
}

/// A live child with its turn in progress, if any.
pub struct ChildTurns {
    id: String,
    module: String,
    child: Arc<tokio::sync::Mutex<LiveChild>>,
    cancel: CancellationToken,
    turn: Option<JoinHandle<Turn>>,
}

impl Drop for ChildTurns {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl ChildTurns {
    /// `child`, starting a turn on `prompt`.
    pub fn begin(child: LiveChild, prompt: String) -> Self {
        let id = child.path().to_string();
        let module = child.module().to_owned();
        let cancel = child.canceller();
        let child = Arc::new(tokio::sync::Mutex::new(child));
        let mut turns = Self {
            id,
            module,
            child,
            cancel,
            turn: None,
        };
        turns.turn = Some(turns.run(prompt));
        turns
    }

    fn run(&self, prompt: String) -> JoinHandle<Turn> {
        let child = self.child.clone();
        tokio::spawn(async move { child.lock().await.turn(&prompt).await })
    }

    /// Its context id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The module or agent it runs.
    pub fn module(&self) -> &str {
        &self.module
    }

    /// Where it is.
    pub fn state(&self) -> TurnState {
        match &self.turn {
            Some(turn) if !turn.is_finished() => TurnState::Working,
            Some(_) => TurnState::Answered,
            None => TurnState::Idle,
        }
    }

    /// Starts a follow-up turn; `Err` unless it is idle.
    pub fn send(&mut self, message: String) -> Result<(), String> {
        match self.state() {
            TurnState::Working => Err(format!(
                "context {} is still working: wait for it, then send",
                self.id
            )),
            TurnState::Answered => Err(format!(
                "context {} has an answer not yet taken: wait for it first",
                self.id
            )),
            TurnState::Idle => {
                self.turn = Some(self.run(message));
                Ok(())
            }
        }
    }

    /// The turn in progress, taken out to be waited on (`put_back` returns one whose wait
    /// timed out); `None` when it is idle.
    pub fn take_turn(&mut self) -> Option<JoinHandle<Turn>> {
        self.turn.take()
    }

    /// Puts back a turn taken with [`Self::take_turn`] and not finished.
    pub fn put_back(&mut self, turn: JoinHandle<Turn>) {
        self.turn = Some(turn);
    }

    /// Waits for the current turn and takes its result.
    pub async fn wait(&mut self) -> Result<Turn, String> {
        let turn = self.turn.take().ok_or_else(|| {
            format!(
                "context {} has no turn to wait for: send it a follow-up first",
                self.id
            )
        })?;
        joined(&self.id, turn.await)
    }

    /// The current turn's result when it has finished (taken), else `None`.
    pub fn poll(&mut self) -> Option<Result<Turn, String>> {
        if self.state() != TurnState::Answered {
            return None;
        }
        let turn = self.turn.take()?;
        turn.now_or_never()
            .map(|joined_turn| joined(&self.id, joined_turn))
    }

    /// Cancels the turn in progress and every later one.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A new child at `path` under `parent` with a copy of this one's history and settings,
    /// starting a turn on `task`. `Err` while a turn runs (its history is not settled).
    pub async fn fork(
        &self,
        parent: &ParentView,
        path: ContextPath,
        task: String,
    ) -> Result<Self, String> {
        if self.state() == TurnState::Working {
            return Err(format!(
                "context {} is working: wait for it before forking it",
                self.id
            ));
        }
        let forked = self.child.lock().await.fork(parent, path, &task).await?;
        Ok(Self::begin(forked, task))
    }
}

/// A joined turn, or why it has no result.
fn joined(id: &str, joined: Result<Turn, tokio::task::JoinError>) -> Result<Turn, String> {
    joined.map_err(|e| format!("context {id} stopped without a result: {e}"))
}
