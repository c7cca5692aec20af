//! Which of the workspace's directories something changed in since last asked, from the
//! kernel (inotify: a watch on each directory the workspace's ignore files leave in), so
//! finding what a command changed looks only there. The kernel queues an event as the
//! change is made, so once a command's processes are gone everything they changed is in
//! the queue. When the queue overflowed, or a watch could not be added (the user's limit
//! of watches), the answer is "everything", and the caller walks the whole workspace.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::workspace::join;

/// What changed since last asked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Dirty {
    /// Anything may have: look at the whole workspace.
    Everything,
    /// Something in these directories (relative; `""` is the workspace itself).
    Dirs {
        /// Where something was added, removed or changed.
        changed: BTreeSet<String>,
        /// Directories moved in (over an empty one of the same name): all of each is new.
        moved_in: BTreeSet<String>,
    },
}

/// The watches on a workspace's directories.
pub(crate) struct Watch {
    inotify: Inotify,
    dirs: HashMap<WatchDescriptor, String>,
    /// A watch could not be added: changes there would go unseen.
    incomplete: bool,
}

/// What a change in a watched directory is.
fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// The directory `dir` is in (`""` for one at the top).
fn parent_of(dir: &str) -> String {
    dir.rsplit_once('/')
        .map_or(String::new(), |(parent, _)| parent.to_owned())
}

impl Watch {
    /// A new set of watches (none yet); `None` where the kernel offers none.
    pub fn new() -> Option<Self> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .inspect_err(|e| tracing::debug!(error = %e, "no inotify: commands' changes are found by walking the workspace"))
            .ok()?;
        Some(Self {
            inotify,
            dirs: HashMap::new(),
            incomplete: false,
        })
    }

    /// Watches `dir` (relative to `root`). Adding a directory already watched (also one
    /// moved) gives the same watch, now under its new name.
    pub fn add(&mut self, root: &Path, dir: &str) {
        if self.incomplete {
            return;
        }
        match self.inotify.add_watch(&root.join(dir), mask()) {
            Ok(wd) => {
                self.dirs.insert(wd, dir.to_owned());
            }
            // Gone again already: its parent's events say so.
            Err(Errno::ENOENT | Errno::ENOTDIR) => {}
            Err(e) => {
                tracing::warn!(error = %e, dir, "cannot watch a directory of the workspace: commands' changes are found by walking it");
                self.incomplete = true;
            }
        }
    }

    /// Forgets the watches on `dir` and below (gone from the workspace).
    pub fn forget(&mut self, dir: &str) {
        let below = format!("{dir}/");
        let gone: Vec<WatchDescriptor> = self
            .dirs
            .iter()
            .filter(|(_, d)| d.as_str() == dir || d.starts_with(&below))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            self.dirs.remove(&wd);
            // Already removed by the kernel when the directory was deleted.
            let _ = self.inotify.rm_watch(wd);
        }
    }

    /// What changed since last asked.
    pub fn dirty(&mut self) -> Dirty {
        let (mut changed, mut moved_in) = (BTreeSet::new(), BTreeSet::new());
        let mut everything = self.incomplete;
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) => events,
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the workspace's changes from the kernel");
                    everything = true;
                    break;
                }
            };
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    everything = true;
                    continue;
                }
                if event.mask.contains(AddWatchFlags::IN_IGNORED) {
                    self.dirs.remove(&event.wd);
                    continue;
                }
                let Some(dir) = self.dirs.get(&event.wd) else {
                    continue;
                };
                if event
                    .mask
                    .intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF)
                {
                    changed.insert(parent_of(dir));
                    continue;
                }
                if event.mask.contains(AddWatchFlags::IN_ISDIR)
                    && event.mask.contains(AddWatchFlags::IN_MOVED_TO)
                    && let Some(name) = event.name.as_ref().and_then(|n| n.to_str())
                {
                    moved_in.insert(join(dir, name));
                }
                changed.insert(dir.clone());
            }
        }
        if everything {
            Dirty::Everything
        } else {
            Dirty::Dirs { changed, moved_in }
        }
    }
}
