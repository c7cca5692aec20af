//! `context`: where this context sits in the tree, and starting children from a
//! `spawn-request` — one run to its end (`spawn`), a batch run concurrently under a limit
//! (`spawn-parallel`), or one that lives on behind a handle (`start`). The running of a child is the
//! context tree's (`wonopcode_contexts::child`); here the parent's side: its place and
//! history lent to the child, paths, the batch's concurrency, and adding each child's usage
//! to the parent's, so usage rolls up to the root.

use tokio::sync::Semaphore;
use wasmtime::component::HasData;
use wasmtime::component::{Resource, ResourceTable};
use wonopcode_contexts::{
    ChildResult, ChildTurns, LiveChild, ParentView, SpawnAsks, SpawnRequest, TurnState, run_child,
};
use wonopcode_protocol::{ContextPath, Usage};

use super::spawn_shapes::{asked, wit_result};
use crate::bindings::context::{
    ChildState, ContextInfo, ContextResult, Host, HostChild, SpawnRequest as WitRequest,
};
use crate::guest_loader::GuestLoader;
use crate::state::{ContextTools, HostState, Place, RunSlot};

/// What `context` sees of a store: the run (its services and usage), the guest's place in
/// the tree (which it extends with children), and the tools it lends them.
pub(crate) struct ContextView<'a> {
    pub(crate) run: &'a mut RunSlot,
    pub(crate) place: &'a mut Place,
    pub(crate) tools: &'a ContextTools,
    /// Where the guest's `child` handles live.
    pub(crate) table: &'a mut ResourceTable,
}

impl<'a> ContextView<'a> {
    pub(crate) fn of(state: &'a mut HostState) -> Self {
        Self {
            run: &mut state.run,
            place: &mut state.place,
            tools: &state.tools,
            table: &mut state.io.table,
        }
    }
}

/// Links `context` on [`ContextView`].
pub(crate) struct ContextData;

impl HasData for ContextData {
    type Data<'a> = ContextView<'a>;
}

impl Host for ContextView<'_> {
    async fn spawn(
        &mut self,
        request: WitRequest,
    ) -> wasmtime::Result<Result<ContextResult, String>> {
        match asked(request) {
            Ok((request, asks)) => self.run_request(request, asks).await,
            Err(e) => Ok(Err(e)),
        }
    }

    async fn spawn_parallel(
        &mut self,
        requests: Vec<WitRequest>,
        max_concurrent: Option<u32>,
    ) -> wasmtime::Result<Vec<Result<ContextResult, String>>> {
        self.spawn_batch(requests.into_iter().map(asked).collect(), max_concurrent)
            .await
    }

    async fn start(
        &mut self,
        request: WitRequest,
    ) -> wasmtime::Result<Result<Resource<ChildTurns>, String>> {
        match asked(request) {
            Ok((request, asks)) => self.start_request(request, asks).await,
            Err(e) => Ok(Err(e)),
        }
    }

    fn get_current_context(&mut self) -> wasmtime::Result<ContextInfo> {
        let env = self.run.services()?;
        let path = env.events.context();
        Ok(ContextInfo {
            id: path.to_string(),
            depth: u32::try_from(path.depth()).unwrap_or(u32::MAX),
            module: self.place.loop_name.clone(),
            parent_id: self.place.frame.as_ref().and_then(|f| f.parent_id.clone()),
            started_at: self.run.started_ms,
        })
    }

    fn get_context_depth(&mut self) -> wasmtime::Result<u32> {
        Ok(u32::try_from(self.run.services()?.events.context().depth()).unwrap_or(u32::MAX))
    }

    fn get_spawn_request(&mut self) -> wasmtime::Result<Option<WitRequest>> {
        Ok(self.place.spawn_request().cloned())
    }
}

impl HostChild for ContextView<'_> {
    fn id(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<String> {
        Ok(self.table.get(&child)?.id().to_owned())
    }

    fn send(
        &mut self,
        child: Resource<ChildTurns>,
        message: String,
    ) -> wasmtime::Result<Result<(), String>> {
        Ok(self.table.get_mut(&child)?.send(message))
    }

    async fn wait(
        &mut self,
        child: Resource<ChildTurns>,
    ) -> wasmtime::Result<Result<ContextResult, String>> {
        let outcome = self.table.get_mut(&child)?.wait().await;
        Ok(self.roll_up(outcome))
    }

    fn poll(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<Option<ContextResult>> {
        let outcome = self.table.get_mut(&child)?.poll();
        // A turn that stopped without a result (its task panicked) is an `error` status.
        Ok(outcome.map(|o| match self.roll_up(o) {
            Ok(result) => result,
            Err(e) => wit_result(ChildResult::failed(e)),
        }))
    }

    fn state(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<ChildState> {
        Ok(match self.table.get(&child)?.state() {
            TurnState::Working => ChildState::Working,
            TurnState::Answered => ChildState::Answered,
            TurnState::Idle => ChildState::Idle,
        })
    }

    fn cancel(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<()> {
        self.table.get(&child)?.cancel();
        Ok(())
    }

    async fn fork(
        &mut self,
        child: Resource<ChildTurns>,
        task: String,
    ) -> wasmtime::Result<Result<Resource<ChildTurns>, String>> {
        let parent = self.parent_view(false)?;
        let path = self.next_child_path()?;
        let forked = self.table.get(&child)?.fork(&parent, path, task).await;
        match forked {
            Ok(forked) => Ok(Ok(self.table.push(forked)?)),
            Err(e) => Ok(Err(e)),
        }
    }

    /// The guest let go of its handle: the child is cancelled and, once its turn has let go,
    /// its place in the tree is free.
    fn drop(&mut self, child: Resource<ChildTurns>) -> wasmtime::Result<()> {
        self.table.delete(child)?;
        Ok(())
    }
}

impl ContextView<'_> {
    /// Runs a child on the tree's request to its end (`spawn`) and rolls its usage up.
    async fn run_request(
        &mut self,
        request: SpawnRequest,
        asks: SpawnAsks,
    ) -> wasmtime::Result<Result<ContextResult, String>> {
        if let Some(ended) = self.ended()? {
            return Ok(Err(ended));
        }
        let parent = self.parent_view(request.inherit_messages)?;
        let path = self.next_child_path()?;
        let outcome = run_child(&parent, path, request, asks).await;
        Ok(self.roll_up(outcome))
    }

    /// Starts a child that lives on from the tree's request.
    async fn start_request(
        &mut self,
        request: SpawnRequest,
        asks: SpawnAsks,
    ) -> wasmtime::Result<Result<Resource<ChildTurns>, String>> {
        if let Some(ended) = self.ended()? {
            return Ok(Err(ended));
        }
        let parent = self.parent_view(request.inherit_messages)?;
        let path = self.next_child_path()?;
        let task = request.task.clone();
        let child = match LiveChild::start(&parent, path, request, asks).await {
            Ok(child) => child,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(self.table.push(ChildTurns::begin(child, task))?))
    }

    /// Runs a batch of children concurrently, at most `max_concurrent` (and never more than
    /// the host's limit) at once; results in input order.
    async fn spawn_batch(
        &mut self,
        children: Vec<Result<(SpawnRequest, SpawnAsks), String>>,
        max_concurrent: Option<u32>,
    ) -> wasmtime::Result<Vec<Result<ContextResult, String>>> {
        if let Some(ended) = self.ended()? {
            return Ok(children.iter().map(|_| Err(ended.clone())).collect());
        }
        let inherit = children
            .iter()
            .any(|c| c.as_ref().is_ok_and(|(r, _)| r.inherit_messages));
        let parent = self.parent_view(inherit)?;
        let host_limit = parent_limit(self.place);
        let limit = max_concurrent
            .map_or(host_limit, |n| usize::try_from(n).unwrap_or(usize::MAX))
            .clamp(1, host_limit);
        let gate = Semaphore::new(limit);
        // Paths are given in input order before anything runs, so a replayed run finds each
        // child's recorded turns under the same path however the children interleave.
        let mut batch = Vec::with_capacity(children.len());
        for child in children {
            let path = self.next_child_path()?;
            let (parent, gate) = (&parent, &gate);
            batch.push(async move {
                let (request, asks) = child?;
                let _permit = gate
                    .acquire()
                    .await
                    .map_err(|_| "the spawn batch was closed".to_owned())?;
                run_child(parent, path, request, asks).await
            });
        }
        let outcomes = futures::future::join_all(batch).await;
        let results = outcomes.into_iter().map(|o| self.roll_up(o)).collect();
        Ok(results)
    }

    /// Adds a child's usage (its descendants' included) to this context's run. A child that
    /// suspended suspends this run on the calls it waits on: the guest reads the result (an
    /// `error("suspended: …")`, as the 0.2 `context-status` has no such case), and its next
    /// request learns that the run has ended.
    fn roll_up(
        &mut self,
        outcome: Result<(ChildResult, Usage), String>,
    ) -> Result<ContextResult, String> {
        outcome.map(|(mut result, usage)| {
            if let Some(run) = &mut self.run.run {
                run.stats.usage.add(&usage);
                if !result.pending.is_empty() {
                    run.wait_on(std::mem::take(&mut result.pending));
                }
            }
            wit_result(result)
        })
    }

    /// Why no child may start: the run has ended (a child's suspension suspended it, a tool
    /// completed it), so a child started now would work for nothing. `None`: it goes on.
    fn ended(&self) -> wasmtime::Result<Option<String>> {
        Ok(match self.run.get()?.ending() {
            None => None,
            Some(Err(e)) => Some(format!("the run has ended ({e}): no child starts")),
            Some(Ok(_)) => Some("the run has ended: no child starts".to_owned()),
        })
    }

    /// The parent's side of a spawn; `inherit` copies the history (only when a child asks).
    fn parent_view(&self, inherit: bool) -> wasmtime::Result<ParentView> {
        let frame = self
            .place
            .frame
            .as_ref()
            .ok_or_else(|| wasmtime::Error::msg("spawn from a store without a loop"))?;
        let run = self.run.get()?;
        let services = match &self.tools.enabled {
            Some(enabled) => run.services.with_tools(
                run.services
                    .tools
                    .filtered(enabled.iter().map(String::as_str)),
            ),
            None => wonopcode_agent_loop::RunServices::clone(&run.services),
        };
        Ok(ParentView {
            place: GuestLoader::place_of(frame),
            services,
            messages: if inherit {
                run.messages.to_vec()
            } else {
                Vec::new()
            },
        })
    }

    /// The path of the next child of this context.
    fn next_child_path(&mut self) -> wasmtime::Result<ContextPath> {
        self.place.children += 1;
        Ok(self
            .run
            .services()?
            .events
            .context()
            .child(self.place.children))
    }
}

/// The host's cap on a batch's concurrency.
fn parent_limit(place: &Place) -> usize {
    place
        .frame
        .as_ref()
        .map_or(1, |f| f.tree.limits.max_parallel.max(1))
}
