//! Where the kernel offers no inotify: no watches, so finding what a command changed walks
//! the whole workspace (sizes and times; content only for what changed).

use std::collections::BTreeSet;
use std::path::Path;

/// What changed since last asked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dirty {
    /// Anything may have: look at the whole workspace.
    Everything,
    /// Something in these directories; these moved in (never here: there are no watches).
    #[allow(dead_code)]
    Dirs {
        /// Where something was added, removed or changed.
        changed: BTreeSet<String>,
        /// Directories moved in.
        moved_in: BTreeSet<String>,
    },
}

/// No watches.
pub(crate) struct Watch;

impl Watch {
    /// None here.
    pub fn new() -> Option<Self> {
        None
    }

    /// Nothing to watch with.
    pub fn add(&mut self, _root: &Path, _dir: &str) {}

    /// Nothing to forget.
    pub fn forget(&mut self, _dir: &str) {}

    /// Everything, always.
    pub fn dirty(&mut self) -> Dirty {
        Dirty::Everything
    }
}
