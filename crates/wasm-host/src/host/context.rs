//! `context`: where this context sits in the tree. Spawning children arrives with the context
//! stack; until then `spawn` answers with an error value the guest can handle.

use crate::bindings::context::{ContextInfo, ContextParams, ContextResult, Host};
use crate::state::HostState;

impl Host for HostState {
    async fn spawn(
        &mut self,
        _params: ContextParams,
    ) -> wasmtime::Result<Result<ContextResult, String>> {
        Ok(Err("this host cannot spawn sub-contexts yet: context.spawn is not available in this version of wonopcode".to_owned()))
    }

    fn get_current_context(&mut self) -> wasmtime::Result<ContextInfo> {
        let env = self.env()?;
        let path = env.events.context();
        Ok(ContextInfo {
            id: path.to_string(),
            depth: u32::try_from(path.depth()).unwrap_or(u32::MAX),
            module: self.loop_name.clone(),
            parent_id: None,
            started_at: env.started_ms,
        })
    }

    fn get_context_depth(&mut self) -> wasmtime::Result<u32> {
        Ok(u32::try_from(self.env()?.events.context().depth()).unwrap_or(u32::MAX))
    }

    fn get_context_params(&mut self) -> wasmtime::Result<Option<ContextParams>> {
        // The root context was not spawned, so it has no spawn parameters.
        Ok(None)
    }
}
