//! `modified-files` of a child context: an event sink between the child's emitter and its
//! parent's that notes the file of every completed tool call that wrote or edited one. A
//! grandchild's events pass through its parent's sink too, so the list covers descendants.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use wonopcode_agent_loop::event::{ItemDetails, ItemStatus};
use wonopcode_agent_loop::{Event, EventKind, EventSink};

/// Forwards events to the parent's sink, keeping the paths of changed files.
pub(crate) struct FileChanges {
    inner: Arc<dyn EventSink>,
    paths: Mutex<BTreeSet<String>>,
}

impl FileChanges {
    pub fn new(inner: Arc<dyn EventSink>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            paths: Mutex::new(BTreeSet::new()),
        })
    }

    /// The changed files so far, relative to the workspace, sorted.
    pub fn paths(&self) -> Vec<String> {
        self.paths
            .lock()
            .map(|p| p.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl EventSink for FileChanges {
    fn emit(&self, event: Event) {
        if let EventKind::ItemCompleted { item } = &event.kind
            && let ItemDetails::ToolCall(call) = &item.details
            && call.status == ItemStatus::Completed
            && let Some(change) = &call.file_change
            && let Ok(mut paths) = self.paths.lock()
        {
            paths.insert(change.path.clone());
        }
        self.inner.emit(event);
    }
}
