//! A workspace path held still while someone else opens it by name. The editor's
//! `fs/read_text_file` (ACP) takes a path, not a descriptor: between the path guard's
//! check and the editor's open, a sibling context could swap a directory on the way for a
//! link to `~/.ssh`, and the editor would read the key for the model. So before the
//! editor is asked, every directory from the workspace root to the file's parent is opened
//! beneath the root (no link on the way) and its change time noted; after the answer, each
//! is looked at again. Any rename, link or removal inside one of them moves its change
//! time, which no one but the clock can set back, so an unchanged chain means the name the
//! editor opened led where the guard checked. A changed chain drops the editor's answer,
//! and the file is read from disk beneath the root instead.
//!
//! A directory changed within the last [`QUIET`] is not held at all (its next change
//! might share its time stamp on a file system with coarse times): the disk is read.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::workspace::OpenError;

/// How long a directory must have been left alone to be held: longer than the coarsest
/// time stamp of a file system wonopcode runs on (2 s, FAT and HFS+).
const QUIET: Duration = Duration::from_secs(2);

/// The directories from the root to a file's parent, each open, with the change time it
/// had when opened.
pub(crate) struct HeldPath {
    dirs: Vec<(OwnedFd, ChangeTime)>,
}

/// A change time, to the nanosecond where the file system keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ChangeTime(i64, i64);

impl HeldPath {
    /// Holds the directories on the way to `path` (inside the canonical `root`; the file
    /// may be missing). `Ok(None)`: one of them changed within [`QUIET`], so it cannot be
    /// held. A link on the way, a path outside the root, or a file that is not a regular
    /// one (a link, a FIFO, a device) is refused.
    pub(crate) fn hold(root: &Path, path: &Path) -> Result<Option<Self>, OpenError> {
        let relative = wonopcode_os::beneath::relative(root, path).map_err(OpenError::Io)?;
        let names = wonopcode_os::beneath::names(relative).map_err(OpenError::Io)?;
        let Some((file, dirs)) = names.split_last() else {
            return Err(OpenError::NotRegular);
        };
        let directory = wonopcode_os::beneath::DIRECTORY | OFlags::CLOEXEC;
        let mut current = rustix::fs::open(root, directory, Mode::empty()).map_err(io_error)?;
        let mut held = Vec::with_capacity(dirs.len() + 1);
        for name in dirs {
            let next =
                rustix::fs::openat(&current, *name, directory | OFlags::NOFOLLOW, Mode::empty())
                    .map_err(io_error)?;
            let at = changed_at(&rustix::fs::fstat(&current).map_err(io_error)?);
            held.push((std::mem::replace(&mut current, next), at));
        }
        match rustix::fs::statat(&current, *file, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile => {
                return Err(OpenError::NotRegular);
            }
            Ok(_) => {}
            Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(io_error(e)),
        }
        let at = changed_at(&rustix::fs::fstat(&current).map_err(io_error)?);
        held.push((current, at));
        let quiet_since = ChangeTime::of(SystemTime::now() - QUIET);
        if held.iter().any(|(_, at)| *at >= quiet_since) {
            return Ok(None);
        }
        Ok(Some(Self { dirs: held }))
    }

    /// Whether no directory on the way changed since it was held.
    pub(crate) fn unchanged(&self) -> bool {
        self.dirs.iter().all(|(fd, at)| {
            rustix::fs::fstat(fd)
                .map(|stat| changed_at(&stat) == *at)
                .unwrap_or(false)
        })
    }
}

impl ChangeTime {
    fn of(time: SystemTime) -> Self {
        let since = time
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Self(
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            i64::from(since.subsec_nanos()),
        )
    }
}

fn io_error(e: rustix::io::Errno) -> OpenError {
    OpenError::Io(e.into())
}

#[allow(clippy::unnecessary_cast)] // the fields' types differ between Linux and macOS
fn changed_at(stat: &rustix::fs::Stat) -> ChangeTime {
    ChangeTime(stat.st_ctime as i64, stat.st_ctime_nsec as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swap_on_the_way_is_seen_and_a_quiet_path_is_held() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let root = base.join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(base.join("ssh")).unwrap();
        std::fs::write(root.join("sub/f"), "inside").unwrap();
        // Just made: too fresh to hold.
        assert!(
            HeldPath::hold(&root, &root.join("sub/f"))
                .unwrap()
                .is_none()
        );
        // A change time cannot be set back: wait the quiet time out.
        std::thread::sleep(QUIET + Duration::from_millis(50));
        let held = HeldPath::hold(&root, &root.join("sub/f")).unwrap().unwrap();
        assert!(held.unchanged());
        // Editing the file itself moves nothing on the way.
        std::fs::write(root.join("sub/f"), "edited").unwrap();
        assert!(held.unchanged());
        // The directory swapped for a link to elsewhere, and back: seen.
        std::fs::rename(root.join("sub"), root.join("away")).unwrap();
        std::os::unix::fs::symlink(base.join("ssh"), root.join("sub")).unwrap();
        std::fs::remove_file(root.join("sub")).unwrap();
        std::fs::rename(root.join("away"), root.join("sub")).unwrap();
        assert!(!held.unchanged());
        // A link on the way, a link as the file, a path outside: refused.
        std::os::unix::fs::symlink(base.join("ssh"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(base.join("ssh/k"), root.join("sub/k")).unwrap();
        assert!(HeldPath::hold(&root, &root.join("out/k")).is_err());
        assert!(HeldPath::hold(&root, &root.join("sub/k")).is_err());
        assert!(HeldPath::hold(&root, &base.join("ssh/k")).is_err());
        assert!(HeldPath::hold(&root, &root.join("sub/../../ssh/k")).is_err());
    }
}
