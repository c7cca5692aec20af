//! The store of one hook instance: WASI with only what the hook's entry grants, the guest
//! limits, and the compute budget counted in epoch ticks.

use std::path::PathBuf;

use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimits, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::engine::WasmEngine;
use crate::limits::GuestLimits;

/// Bytes of a hook's stderr kept, to say why it trapped (an interpreter prints its exception
/// there first).
const STDERR_BYTES: usize = 16 << 10;

/// What a component hook may reach beyond its own computation: nothing unless its entry
/// says so.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookGrants {
    /// Directories it may read (mounted read-only at the same path).
    pub read: Vec<PathBuf>,
    /// Environment variables it sees, by name and value.
    pub env: Vec<(String, String)>,
}

/// The data of a hook's store.
pub(crate) struct HookState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    stderr: MemoryOutputPipe,
    /// Epoch ticks since the host last called in.
    pub ticks: u64,
}

impl WasiView for HookState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl HookState {
    /// The last line the hook wrote to stderr, if any.
    pub fn last_stderr_line(&self) -> Option<String> {
        crate::state::last_words(&String::from_utf8_lossy(&self.stderr.contents()))
    }
}

/// A fresh store for a hook: no network, no files or variables beyond `grants`, the
/// engine's memory limits, and a trap once it computed for the compute budget without
/// returning.
pub(crate) fn new_store(
    engine: &WasmEngine,
    grants: &HookGrants,
) -> Result<Store<HookState>, String> {
    let stderr = MemoryOutputPipe::new(STDERR_BYTES);
    let mut wasi = WasiCtxBuilder::new();
    wasi.stderr(stderr.clone()).allow_ip_name_lookup(false);
    for (name, value) in &grants.env {
        wasi.env(name, value);
    }
    for dir in &grants.read {
        let guest = dir.to_string_lossy();
        wasi.preopened_dir(dir, guest.as_ref(), FsPerms::ReadOnly)
            .map_err(|e| format!("cannot grant {}: {e}", dir.display()))?;
    }
    let limits: GuestLimits = engine.limits;
    let state = HookState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limits: limits.store_limits(),
        stderr,
        ticks: 0,
    };
    let mut store = Store::new(&engine.engine, state);
    store.limiter(|state| &mut state.limits);
    let budget = limits.compute_ticks();
    let budget_secs = limits.compute_budget.as_secs();
    store.epoch_deadline_callback(move |mut ctx| {
        let state = ctx.data_mut();
        state.ticks += 1;
        if state.ticks > budget {
            return Err(wasmtime::Error::msg(format!(
                "the hook computed for more than {budget_secs} s"
            )));
        }
        Ok(UpdateDeadline::Yield(1))
    });
    store.set_epoch_deadline(1);
    Ok(store)
}
