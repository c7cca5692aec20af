//! Limits on guests: memory per instance, tables and instances, a budget of pure computation
//! between host calls (the epoch deadline), a wall-clock limit per run, and host-side timeouts
//! on imports that can block.

use std::time::Duration;

use wasmtime::{StoreLimits, StoreLimitsBuilder};

/// How often the epoch advances; the unit of the computation budget.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Limits applied to every guest instance.
#[derive(Debug, Clone, Copy)]
pub struct GuestLimits {
    /// Linear memory per instance (default 512 MiB).
    pub memory_bytes: usize,
    /// Table elements per table.
    pub table_elements: usize,
    /// Core instances, tables and memories per store.
    pub instances: usize,
    /// Longest stretch of guest computation without a host call (default 30 s).
    pub compute_budget: Duration,
    /// Wall-clock limit of one `run-prompt` (default: none).
    pub run_timeout: Option<Duration>,
    /// Longest `system.sleep-ms`.
    pub max_sleep: Duration,
}

impl Default for GuestLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 512 << 20,
            table_elements: 100_000,
            instances: 32,
            compute_budget: Duration::from_secs(30),
            run_timeout: None,
            max_sleep: Duration::from_secs(600),
        }
    }
}

impl GuestLimits {
    /// The store limiter enforcing the memory, table and instance limits.
    pub fn store_limits(&self) -> StoreLimits {
        StoreLimitsBuilder::new()
            .memory_size(self.memory_bytes)
            .table_elements(self.table_elements)
            .instances(self.instances)
            .tables(self.instances)
            .memories(self.instances)
            .trap_on_grow_failure(true)
            .build()
    }

    /// The computation budget in epoch ticks.
    pub fn compute_ticks(&self) -> u64 {
        (self.compute_budget.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }
}
