//! `modified-files` of a child context. Each child has a `FileChanges` set; its events go
//! through a `ChildSink` straight to the root's sink, noting the file of every completed tool
//! call that wrote or edited one in the sets of the child and of all its ancestors, so each
//! list covers descendants, and an event costs one sink call however deep its context is.

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;

use wonopcode_protocol::event::ItemStatus;
use wonopcode_protocol::{Event, EventKind, EventSink};

/// The files one context and its descendants changed.
#[derive(Default)]
pub struct FileChanges(Mutex<BTreeSet<String>>);

impl FileChanges {
    /// The changed files so far, relative to the workspace, sorted.
    pub fn paths(&self) -> Vec<String> {
        self.0.lock().iter().cloned().collect()
    }

    fn note(&self, path: &str) {
        self.0.lock().insert(path.to_owned());
    }
}

/// A child context's sink: notes changed files, then hands the event to the root's sink.
pub struct ChildSink {
    /// The root's sink, which every event reaches.
    pub root: Arc<dyn EventSink>,
    /// The child's set and its ancestors' (the root has none).
    pub changes: Vec<Arc<FileChanges>>,
}

impl EventSink for ChildSink {
    fn emit(&self, event: Event) {
        if let EventKind::ItemCompleted { item } = &event.kind
            && let Some(call) = item.details.tool_call()
            && call.status == ItemStatus::Completed
        {
            for change in call.changes() {
                for set in &self.changes {
                    set.note(&change.path);
                }
            }
        }
        self.root.emit(event);
    }
}
