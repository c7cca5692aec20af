//! Flushing a file to disk from inside a run. An fsync blocks its thread for as long as the
//! disk takes; done on one of the runtime's few worker threads it stalls every other task
//! on that worker, so a batch of 64 runs on 2 workers would sync one file at a time.
//! [`sync_data`] and [`sync_all`] hand the worker's other tasks to another thread first
//! (`tokio::task::block_in_place`), so many runs' fsyncs are in flight at once and the file
//! system commits them together. Outside a multi-threaded runtime they simply sync.

use std::fs::File;
use std::io;

use tokio::runtime::{Handle, RuntimeFlavor};

/// `File::sync_data`, without stalling the runtime's other tasks.
pub fn sync_data(file: &File) -> io::Result<()> {
    off_the_workers(|| file.sync_data())
}

/// `File::sync_all`, without stalling the runtime's other tasks.
pub fn sync_all(file: &File) -> io::Result<()> {
    off_the_workers(|| file.sync_all())
}

/// Runs `f`, a blocking call, so that it does not hold up a worker's other tasks.
fn off_the_workers<R>(f: impl FnOnce() -> R) -> R {
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        // A current-thread runtime has no other worker to hand its tasks to.
        Ok(RuntimeFlavor::CurrentThread) | Err(_) => f(),
        Ok(_) => tokio::task::block_in_place(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synced() -> bool {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("f")).unwrap();
        sync_data(&file).is_ok() && sync_all(&file).is_ok()
    }

    #[test]
    fn syncs_outside_a_runtime_and_on_either_kind() {
        assert!(synced());
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(current.block_on(async { synced() }));
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        assert!(multi.block_on(async { tokio::spawn(async { synced() }).await.unwrap() }));
        assert!(multi.block_on(async { synced() }));
    }
}
