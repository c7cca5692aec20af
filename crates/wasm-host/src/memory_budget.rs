//! The memory budget of a run: the linear memory of all its live guest instances together,
//! every context of its tree counted. Each instance's own limit (512 MiB by default) bounds
//! one guest; this bounds a tree of them, so that 16 nested children of 512 MiB, or a wide
//! tree of small ones, cannot take the machine. A growth past it fails as that guest's trap,
//! an instantiation past it as that spawn's error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmtime::{ResourceLimiter, StoreLimits};

/// Bytes the guests of one run may hold together.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    limit: usize,
    used: AtomicUsize,
}

impl MemoryBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Takes `bytes` from the budget, or says it cannot.
    fn reserve(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok()
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Bytes held by live instances now.
    #[cfg(test)]
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// One store's limiter: the instance's own limits, and its share of the run's budget, given
/// back when the store is dropped.
pub(crate) struct GuestLimiter {
    own: StoreLimits,
    budget: Arc<MemoryBudget>,
    /// Bytes this store took from the budget.
    held: usize,
    /// The last growth taken, given back if the growth then fails.
    last: usize,
}

impl GuestLimiter {
    pub fn new(own: StoreLimits, budget: Arc<MemoryBudget>) -> Self {
        Self {
            own,
            budget,
            held: 0,
            last: 0,
        }
    }
}

impl ResourceLimiter for GuestLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if !self.own.memory_growing(current, desired, maximum)? {
            return Ok(false);
        }
        let more = desired.saturating_sub(current);
        if !self.budget.reserve(more) {
            return Err(wasmtime::Error::msg(format!(
                "the run's guests together would hold more than {} MiB of memory \
                 (contexts.max_memory_mb)",
                self.budget.limit >> 20
            )));
        }
        self.held += more;
        self.last = more;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.budget.release(self.last);
        self.held -= self.last;
        self.last = 0;
        self.own.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.own.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.own.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.own.instances()
    }

    fn tables(&self) -> usize {
        self.own.tables()
    }

    fn memories(&self) -> usize {
        self.own.memories()
    }
}

impl Drop for GuestLimiter {
    fn drop(&mut self) {
        self.budget.release(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::StoreLimitsBuilder;

    fn limiter(budget: &Arc<MemoryBudget>) -> GuestLimiter {
        GuestLimiter::new(
            StoreLimitsBuilder::new().memory_size(100).build(),
            budget.clone(),
        )
    }

    #[test]
    fn instances_share_the_budget_and_give_it_back_when_dropped() {
        let budget = MemoryBudget::new(150);
        let mut a = limiter(&budget);
        let mut b = limiter(&budget);
        assert!(a.memory_growing(0, 100, None).unwrap());
        // Its own limit says no first.
        assert!(!a.memory_growing(100, 101, None).unwrap());
        let refused = b.memory_growing(0, 60, None).unwrap_err();
        assert!(refused.to_string().contains("more than 0 MiB"), "{refused}");
        assert!(b.memory_growing(0, 50, None).unwrap());
        assert_eq!(budget.used(), 150);
        drop(a);
        assert_eq!(budget.used(), 50);
        assert!(b.memory_growing(50, 100, None).unwrap());
        b.memory_grow_failed(wasmtime::Error::msg("no")).ok();
        assert_eq!(budget.used(), 50);
        drop(b);
        assert_eq!(budget.used(), 0);
    }
}
