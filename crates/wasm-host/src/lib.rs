//! The WebAssembly host of wonopcode: runs agent loops written as components of the
//! `wonopcode:agent-loop` world (`wit/`) with Wasmtime. The guest is the brain (which model,
//! which tools, when to stop); the host is the hands: it gives the guest the same providers,
//! tools, permissions, events and limits as the native loop, through one module per WIT
//! interface in `host/`. It also runs hook components (`wonopcode:hooks`, `wit/hooks/`) under
//! the same engine, cache and limits (`hook`).

#![deny(missing_docs)]

mod bindings;
pub mod cache;
pub mod check;
mod component;
pub mod debug;
pub mod engine;
pub mod error;
mod exports;
mod frame;
mod guest_loader;
mod guest_logs;
pub mod hook;
mod host;
pub mod limits;
pub mod loader;
mod loop_name;
mod memory_budget;
pub mod prompter;
pub mod reload;
mod since_v0_2;
pub mod state;
mod wasm_loop;

pub use cache::{CachePolicy, CompileCache};
pub use component::Component;
pub use engine::{EngineOptions, WasmEngine};
pub use error::WasmError;
pub use guest_loader::GuestLoader;
pub use guest_logs::GuestLogs;
pub use limits::GuestLimits;
pub use loader::{ModuleInfo, inspect, is_hook_component};
pub use prompter::GuestPrompter;
pub use reload::GuestFile;
pub use state::HostConfig;
pub use wasm_loop::WasmAgentLoop;

/// The default guest loop (`guests/default-loop`), built by `build.rs` and embedded so
/// `--loop-type=wasm` needs no files.
pub const DEFAULT_LOOP: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default_loop.wasm"));

/// Paths of the guest components built from `guests/`, for tests, benchmarks and examples.
#[doc(hidden)]
pub mod guest_paths {
    include!(concat!(env!("OUT_DIR"), "/guests.rs"));
}
