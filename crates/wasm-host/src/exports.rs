//! What the host calls in a guest: `agent-loop`, `custom-tool-handler` and, where the guest
//! has it, `resumable`. These exports have the same shape in every WIT version the host
//! serves (0.2.x and 0.3); only the names of their interfaces carry the version. So they are
//! found once per compiled guest under whichever version it was built against, and called
//! through one set of typed functions: no per-version copy of the calling code.

use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, TypedFunc};
use wasmtime::{AsContextMut, Store};

use crate::bindings::types::{LoopCapabilities, LoopError};
use crate::error::WasmError;
use crate::loader::{PACKAGE, SERVED_VERSIONS};
use crate::state::HostState;

/// A linked guest and where its exports are: what each new instance of it needs.
pub(crate) struct GuestPre {
    /// The guest, linked against the host's imports.
    pub(crate) pre: InstancePre<HostState>,
    indices: ExportIndices,
}

/// Where each export is in the component.
#[derive(Clone, Copy)]
struct ExportIndices {
    run_prompt: ComponentExportIndex,
    on_start: ComponentExportIndex,
    on_complete: ComponentExportIndex,
    on_cancel: ComponentExportIndex,
    get_name: ComponentExportIndex,
    get_capabilities: ComponentExportIndex,
    handle_tool_call: ComponentExportIndex,
    resume: Option<ComponentExportIndex>,
}

impl GuestPre {
    /// Finds the exports of a linked guest; `MissingExport` names the first one it lacks.
    pub(crate) fn new(pre: InstancePre<HostState>, origin: &str) -> Result<Self, WasmError> {
        let component = pre.component();
        let missing = |export: &str| WasmError::MissingExport {
            origin: origin.to_owned(),
            export: format!("{PACKAGE}/{export}"),
        };
        let agent = interface(component, "agent-loop").ok_or_else(|| missing("agent-loop"))?;
        let handler = interface(component, "custom-tool-handler")
            .ok_or_else(|| missing("custom-tool-handler"))?;
        let func = |(iface, owner): (&ComponentExportIndex, &str), name: &str| {
            component
                .get_export_index(Some(iface), name)
                .ok_or_else(|| missing(&format!("{owner}.{name}")))
        };
        let (agent, handler) = ((&agent, "agent-loop"), (&handler, "custom-tool-handler"));
        let resume = interface(component, "resumable")
            .and_then(|iface| component.get_export_index(Some(&iface), "resume"));
        let indices = ExportIndices {
            run_prompt: func(agent, "run-prompt")?,
            on_start: func(agent, "on-start")?,
            on_complete: func(agent, "on-complete")?,
            on_cancel: func(agent, "on-cancel")?,
            get_name: func(agent, "get-name")?,
            get_capabilities: func(agent, "get-capabilities")?,
            handle_tool_call: func(handler, "handle-tool-call")?,
            resume,
        };
        Ok(Self { pre, indices })
    }

    /// The exports of an instance of this guest, type-checked against the host's view of
    /// them (a guest whose exports have other shapes fails here, not at its first call).
    pub(crate) fn exports(
        &self,
        store: &mut Store<HostState>,
        instance: &Instance,
    ) -> wasmtime::Result<GuestExports> {
        let i = self.indices;
        Ok(GuestExports {
            run_prompt: instance.get_typed_func(&mut *store, i.run_prompt)?,
            on_start: instance.get_typed_func(&mut *store, i.on_start)?,
            on_complete: instance.get_typed_func(&mut *store, i.on_complete)?,
            on_cancel: instance.get_typed_func(&mut *store, i.on_cancel)?,
            get_name: instance.get_typed_func(&mut *store, i.get_name)?,
            get_capabilities: instance.get_typed_func(&mut *store, i.get_capabilities)?,
            handle_tool_call: instance.get_typed_func(&mut *store, i.handle_tool_call)?,
            resume: match i.resume {
                Some(index) => instance.get_typed_func(&mut *store, index).ok(),
                None => None,
            },
        })
    }
}

/// The interface `name` of the newest served version the guest exports, if any.
fn interface(component: &Component, name: &str) -> Option<ComponentExportIndex> {
    SERVED_VERSIONS
        .iter()
        .find_map(|v| component.get_export_index(None, format!("{PACKAGE}/{name}@{v}")))
}

/// A live instance's exports.
pub(crate) struct GuestExports {
    run_prompt: TypedFunc<(String,), (Result<String, LoopError>,)>,
    on_start: TypedFunc<(), (Result<(), LoopError>,)>,
    on_complete: TypedFunc<(String,), (Result<(), LoopError>,)>,
    on_cancel: TypedFunc<(), (Result<(), LoopError>,)>,
    get_name: TypedFunc<(), (String,)>,
    get_capabilities: TypedFunc<(), (LoopCapabilities,)>,
    handle_tool_call: TypedFunc<(String, String), (Result<String, String>,)>,
    resume: Option<TypedFunc<(), (Result<String, LoopError>,)>>,
}

impl GuestExports {
    /// `agent-loop.run-prompt`.
    pub(crate) async fn call_run_prompt(
        &self,
        store: impl AsContextMut<Data = HostState>,
        input: &str,
    ) -> wasmtime::Result<Result<String, LoopError>> {
        Ok(self
            .run_prompt
            .call_async(store, (input.to_owned(),))
            .await?
            .0)
    }

    /// `agent-loop.on-start`.
    pub(crate) async fn call_on_start(
        &self,
        store: impl AsContextMut<Data = HostState>,
    ) -> wasmtime::Result<Result<(), LoopError>> {
        Ok(self.on_start.call_async(store, ()).await?.0)
    }

    /// `agent-loop.on-complete`.
    pub(crate) async fn call_on_complete(
        &self,
        store: impl AsContextMut<Data = HostState>,
        result: &str,
    ) -> wasmtime::Result<Result<(), LoopError>> {
        Ok(self
            .on_complete
            .call_async(store, (result.to_owned(),))
            .await?
            .0)
    }

    /// `agent-loop.on-cancel`.
    pub(crate) async fn call_on_cancel(
        &self,
        store: impl AsContextMut<Data = HostState>,
    ) -> wasmtime::Result<Result<(), LoopError>> {
        Ok(self.on_cancel.call_async(store, ()).await?.0)
    }

    /// `agent-loop.get-name`.
    pub(crate) async fn call_get_name(
        &self,
        store: impl AsContextMut<Data = HostState>,
    ) -> wasmtime::Result<String> {
        Ok(self.get_name.call_async(store, ()).await?.0)
    }

    /// `agent-loop.get-capabilities`.
    pub(crate) async fn call_get_capabilities(
        &self,
        store: impl AsContextMut<Data = HostState>,
    ) -> wasmtime::Result<LoopCapabilities> {
        Ok(self.get_capabilities.call_async(store, ()).await?.0)
    }

    /// `custom-tool-handler.handle-tool-call`.
    pub(crate) async fn call_handle_tool_call(
        &self,
        store: impl AsContextMut<Data = HostState>,
        tool_id: &str,
        arguments: &str,
    ) -> wasmtime::Result<Result<String, String>> {
        let args = (tool_id.to_owned(), arguments.to_owned());
        Ok(self.handle_tool_call.call_async(store, args).await?.0)
    }

    /// Whether the guest exports `resumable` (0.2.5 and later; older guests and loops that
    /// never suspend do not).
    pub(crate) fn can_resume(&self) -> bool {
        self.resume.is_some()
    }

    /// `resumable.resume`; `None` when the guest does not export it.
    pub(crate) async fn call_resume(
        &self,
        store: impl AsContextMut<Data = HostState>,
    ) -> Option<wasmtime::Result<Result<String, LoopError>>> {
        let resume = self.resume?;
        Some(resume.call_async(store, ()).await.map(|(r,)| r))
    }
}
