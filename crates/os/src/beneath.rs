//! Opening a workspace's files so that no link leads out of it, whatever changes between
//! the path guard's check and the open. The guard (`wonopcode_tools::workspace::resolve`) gives
//! the path with every link already resolved; the open then takes exactly that path,
//! beneath a descriptor of the workspace root, with the kernel's `openat2`
//! (`RESOLVE_BENEATH`: nothing above the root; `RESOLVE_NO_SYMLINKS`: no link on the way,
//! so a link that appeared since the check is refused; `RESOLVE_NO_MAGICLINKS`: no
//! `/proc/self/fd/N`). A sibling context swapping a directory for a link to `~/.ssh`
//! between the check and the write makes the write fail, not land there.
//!
//! On a kernel without `openat2` (before Linux 5.6, and macOS) each component is opened
//! with `O_NOFOLLOW` from the one before: the same rule, one step at a time.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{Mode, OFlags};

/// How a directory is opened to be walked beneath: a descriptor for its path only where
/// the kernel has them (`O_PATH`, Linux), else one opened for reading (macOS). Public for
/// the tools' held paths, which open the same way.
#[cfg(target_os = "linux")]
pub const DIRECTORY: OFlags = OFlags::PATH.union(OFlags::DIRECTORY);
/// How a directory is opened to be walked beneath, on macOS (no `O_PATH`).
#[cfg(not(target_os = "linux"))]
pub const DIRECTORY: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY);

/// What a file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading (non-blocking, so a FIFO does not hang the open).
    Read,
    /// Writing from the start, made when missing (mode 0644 less the umask). A file with
    /// more than one hard link is refused, before anything of it is changed: uv and pnpm
    /// link packages from their caches into `.venv` and `node_modules`, and a write into
    /// one would change the cache, and every project that links it, outside the workspace.
    Replace,
}

/// Opens `path` (inside the canonical `root`) for `access`, resolving it beneath `root`.
pub fn open(root: &Path, path: &Path, access: Access) -> io::Result<File> {
    let (flags, mode) = match access {
        Access::Read => (OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty()),
        // Truncated only once its links are counted.
        Access::Replace => (
            OFlags::WRONLY | OFlags::CREATE | OFlags::NONBLOCK,
            Mode::from_raw_mode(0o644),
        ),
    };
    let fd = open_beneath(root, relative(root, path)?, flags | OFlags::NOCTTY, mode)?;
    if access == Access::Replace {
        let stat = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(io::Error::other("not a regular file"));
        }
        let links = stat.st_nlink;
        if links > 1 {
            return Err(io::Error::other(format!(
                "it has {links} hard links, and a write would change the same file wherever else it is linked (a package cache); copy it to a file of its own first"
            )));
        }
        rustix::fs::ftruncate(&fd, 0)?;
    }
    Ok(File::from(fd))
}

/// Makes `dir` (inside the canonical `root`) and its missing parents, each made beneath
/// the one before it, never through a link that leads out.
pub fn create_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    let relative = relative(root, dir)?;
    let directory = DIRECTORY;
    if open_beneath(root, relative, directory, Mode::empty()).is_ok() {
        return Ok(());
    }
    let mut parent = open_beneath(root, Path::new("."), directory, Mode::empty())?;
    for part in relative.components() {
        let Component::Normal(name) = part else {
            continue;
        };
        match rustix::fs::mkdirat(&parent, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        parent = open_beneath_fd(&parent, Path::new(name), directory, Mode::empty())?;
    }
    Ok(())
}

/// A directory of the workspace, opened beneath its root: files in it are replaced and
/// removed by name relative to it, so the directory cannot be swapped for a link after it
/// was opened.
pub struct Dir(OwnedFd);

impl Dir {
    /// Opens `dir` (inside the canonical `root`), making it and its parents when missing.
    pub fn make(root: &Path, dir: &Path) -> io::Result<Self> {
        create_dirs(root, dir)?;
        Self::open(root, dir)
    }

    /// Opens the existing directory `dir` (inside the canonical `root`).
    pub fn open(root: &Path, dir: &Path) -> io::Result<Self> {
        let relative = relative(root, dir)?;
        Ok(Self(open_beneath(
            root,
            relative,
            DIRECTORY,
            Mode::empty(),
        )?))
    }

    /// Replaces the file `name` with `bytes` whole: written to a new temporary file in this
    /// directory, then renamed over it, so a reader never sees half of it and a file
    /// hard-linked from elsewhere keeps its content there. The file gets `mode` when given,
    /// else an existing file's permissions, else rw-r--r--.
    pub fn replace(
        &self,
        name: &std::ffi::OsStr,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> io::Result<()> {
        use std::io::Write;
        let existing =
            match rustix::fs::statat(&self.0, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat)
                    if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                        != rustix::fs::FileType::RegularFile =>
                {
                    return Err(io::Error::other("not a regular file"));
                }
                #[allow(clippy::useless_conversion)] // u32 on Linux, u16 on macOS
                Ok(stat) => Some(u32::from(stat.st_mode)),
                Err(_) => None,
            };
        // Twelve bits fit the raw mode of every system (u32 on Linux, u16 on macOS).
        #[allow(clippy::unnecessary_cast)]
        let mode = Mode::from_raw_mode(
            (mode.or(existing).unwrap_or(0o644) & 0o7777) as rustix::fs::RawMode,
        );
        let mut temporary = None;
        for attempt in 0..16u32 {
            let candidate = format!(
                ".{}.wonopcode-{}-{attempt}",
                name.to_string_lossy(),
                std::process::id()
            );
            match rustix::fs::openat(
                &self.0,
                candidate.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => {
                    temporary = Some((candidate, File::from(fd)));
                    break;
                }
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let (candidate, mut file) =
            temporary.ok_or_else(|| io::Error::other("no free temporary name"))?;
        let written = file
            .write_all(bytes)
            .and_then(|()| Ok(rustix::fs::fchmod(&file, mode)?))
            .and_then(|()| {
                Ok(rustix::fs::renameat(
                    &self.0,
                    candidate.as_str(),
                    &self.0,
                    name,
                )?)
            });
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.0, candidate.as_str(), rustix::fs::AtFlags::empty());
        }
        written
    }

    /// Removes the regular file `name` (a link, directory or special file is refused).
    pub fn remove(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        let stat = rustix::fs::statat(&self.0, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(io::Error::other("not a regular file"));
        }
        Ok(rustix::fs::unlinkat(
            &self.0,
            name,
            rustix::fs::AtFlags::empty(),
        )?)
    }

    /// Removes the directory `name` when it is empty (the kernel refuses one that is not,
    /// and a link: `unlinkat` with `AT_REMOVEDIR` never follows one).
    pub fn remove_empty_dir(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(
            &self.0,
            name,
            rustix::fs::AtFlags::REMOVEDIR,
        )?)
    }
}

/// The names on the way from `root` to `path` (inside the canonical `root`), in order: a
/// path outside the root, or one that leaves it by `..`, is refused. For those who walk a
/// workspace path a component at a time, as the fallback opener and a held path do.
pub fn names(relative: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    relative
        .components()
        .filter_map(|part| match part {
            Component::Normal(name) => Some(Ok(name)),
            Component::CurDir => None,
            _ => Some(Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the path leaves the workspace",
            ))),
        })
        .collect()
}

/// `path` relative to `root` (`.` for the root itself), refused when it is not beneath it.
pub fn relative<'p>(root: &Path, path: &'p Path) -> io::Result<&'p Path> {
    let relative = path.strip_prefix(root).map_err(|_| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the path is outside the workspace",
        )
    })?;
    Ok(if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    })
}

/// Opens `relative` beneath `root` with `flags`.
fn open_beneath(root: &Path, relative: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let dir = rustix::fs::open(root, DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    open_beneath_fd(&dir, relative, flags, mode)
}

/// Opens `relative` beneath the directory `dir` with `flags`: the kernel resolves it where
/// it can (`openat2`), else one component at a time.
fn open_beneath_fd(
    dir: &OwnedFd,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC;
    match resolved_beneath(dir, relative, flags, mode) {
        Some(opened) => opened,
        None => open_without_links(dir, relative, flags, mode),
    }
}

/// `openat2` with `RESOLVE_BENEATH`, no links and no magic links; `None` where the kernel
/// has none (before Linux 5.6) or asks for a retry (a rename elsewhere on the system).
#[cfg(target_os = "linux")]
fn resolved_beneath(
    dir: &OwnedFd,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> Option<io::Result<OwnedFd>> {
    use rustix::fs::ResolveFlags;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, relative, flags, mode, resolve) {
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::AGAIN) => None,
        other => Some(other.map_err(io::Error::from)),
    }
}

/// macOS has no `openat2`: `None`, one component at a time.
#[cfg(not(target_os = "linux"))]
fn resolved_beneath(
    _dir: &OwnedFd,
    _relative: &Path,
    _flags: OFlags,
    _mode: Mode,
) -> Option<io::Result<OwnedFd>> {
    None
}

/// The fallback of a kernel without `openat2`: each directory opened with `O_NOFOLLOW`
/// from the one before, the last component too; `..` refused.
fn open_without_links(
    dir: &OwnedFd,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let parts = names(relative)?;
    let Some((last, dirs)) = parts.split_last() else {
        return Ok(rustix::fs::openat(dir, ".", flags, mode)?);
    };
    let mut current = rustix::fs::openat(dir, ".", DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    for name in dirs {
        current = rustix::fs::openat(
            &current,
            *name,
            DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
    }
    Ok(rustix::fs::openat(
        &current,
        *last,
        flags | OFlags::NOFOLLOW,
        mode,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_on_the_way_is_refused_and_the_checked_path_opens() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, outside) = (base.join("ws"), base.join("secret"));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("key"), "KEY").unwrap();
        std::fs::write(root.join("sub/f"), "inside").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("in")).unwrap();
        assert!(open(&root, &root.join("out/key"), Access::Read).is_err());
        assert!(open(&root, &root.join("out/new"), Access::Replace).is_err());
        assert!(!outside.join("new").exists());
        assert!(create_dirs(&root, &root.join("out/made")).is_err());
        assert!(!outside.join("made").exists());
        // The guard gives `sub/f` for `in/f`; a link still on the way appeared since.
        assert!(open(&root, &root.join("in/f"), Access::Read).is_err());
        let text = std::io::read_to_string(open(&root, &root.join("sub/f"), Access::Read).unwrap())
            .unwrap();
        assert_eq!(text, "inside");
        create_dirs(&root, &root.join("a/b/c")).unwrap();
        assert!(root.join("a/b/c").is_dir());
        // Replacing and removing go through a directory opened beneath the root.
        assert!(Dir::open(&root, &root.join("out")).is_err());
        let sub = Dir::make(&root, &root.join("sub")).unwrap();
        sub.replace(std::ffi::OsStr::new("f"), b"replaced", None)
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("sub/f")).unwrap(),
            "replaced"
        );
        std::os::unix::fs::symlink(outside.join("key"), root.join("sub/key")).unwrap();
        assert!(
            sub.remove(std::ffi::OsStr::new("key")).is_err(),
            "a link is not removed"
        );
        assert!(
            sub.replace(std::ffi::OsStr::new("key"), b"x", None)
                .is_err(),
            "nor written through"
        );
        assert_eq!(std::fs::read_to_string(outside.join("key")).unwrap(), "KEY");
        sub.remove(std::ffi::OsStr::new("f")).unwrap();
        assert!(!root.join("sub/f").exists());
        assert!(open(&root, &base.join("elsewhere"), Access::Read).is_err());
    }
}
