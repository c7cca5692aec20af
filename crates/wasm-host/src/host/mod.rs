//! One module per WIT interface, each implementing that interface's `Host` trait on its own
//! view of `HostState` (the parts it needs, borrowed), linked in `crate::engine`. Expected failures (unknown provider, denied permission, bad schema) are WIT
//! error values the guest handles; only broken invariants (a host call outside a run) trap.

pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod custom_tools;
pub(crate) mod providers;
pub(crate) mod shapes;
pub(crate) mod spawn_shapes;
pub(crate) mod storage;
pub(crate) mod system;
pub(crate) mod tools;
pub(crate) mod ui;

use crate::bindings::types;
use crate::state::HostState;

impl types::Host for HostState {}
