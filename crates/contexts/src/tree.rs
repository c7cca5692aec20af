//! The tree of contexts one root run grows: the limits every spawn checks (depth, live
//! contexts, concurrency) and where named modules come from. (The guests it loaded, and the
//! memory they share, are the loader's: `wonopcode-wasm-host`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::resolver::{ContextLimits, ModuleResolver};

/// One root run's tree.
pub struct ContextTree {
    /// Its limits.
    pub limits: ContextLimits,
    /// Where named modules come from; `None`: nothing can be named.
    pub resolver: Option<Arc<dyn ModuleResolver>>,
    live: AtomicUsize,
    /// Contexts started in the root's current turn.
    started: AtomicUsize,
}

/// A live context's place in the count; dropping it frees the place.
pub struct LiveSlot(Arc<ContextTree>);

impl Drop for LiveSlot {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ContextTree {
    /// A tree whose root is alive.
    pub fn new(limits: ContextLimits, resolver: Option<Arc<dyn ModuleResolver>>) -> Arc<Self> {
        Arc::new(Self {
            limits,
            resolver,
            // The root context is alive for as long as the tree.
            live: AtomicUsize::new(1),
            started: AtomicUsize::new(0),
        })
    }

    /// A new turn of the root: its count of started contexts begins again.
    pub fn begin_turn(&self) {
        self.started.store(0, Ordering::Release);
    }

    /// Takes a place for a new context, or says the tree is full or has started all the
    /// contexts a turn may.
    pub fn enter(self: &Arc<Self>) -> Result<LiveSlot, String> {
        let total = self.limits.max_total;
        if self
            .started
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < total).then_some(n + 1)
            })
            .is_err()
        {
            return Err(format!(
                "the limit of {total} contexts started in this turn is reached"
            ));
        }
        let cap = self.limits.max_live;
        let taken = self
            .live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < cap).then_some(n + 1)
            });
        match taken {
            Ok(_) => Ok(LiveSlot(self.clone())),
            Err(_) => Err(format!(
                "the limit of {cap} live contexts in this run is reached"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_cap_counts_the_root_and_frees_places() {
        let tree = ContextTree::new(
            ContextLimits {
                max_live: 3,
                ..ContextLimits::default()
            },
            None,
        );
        let a = tree.enter().unwrap();
        let _b = tree.enter().unwrap();
        let refused = tree.enter().err().unwrap();
        assert!(refused.contains("3 live contexts"), "{refused}");
        drop(a);
        assert!(tree.enter().is_ok());
    }

    #[test]
    fn a_turn_starts_a_bounded_number_of_contexts() {
        let tree = ContextTree::new(
            ContextLimits {
                max_total: 2,
                ..ContextLimits::default()
            },
            None,
        );
        drop(tree.enter().unwrap());
        drop(tree.enter().unwrap());
        let refused = tree.enter().err().unwrap();
        assert_eq!(
            refused,
            "the limit of 2 contexts started in this turn is reached"
        );
        tree.begin_turn();
        assert!(tree.enter().is_ok());
    }
}
