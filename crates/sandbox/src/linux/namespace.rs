//! A user and mount namespace of the command's own, in which some paths inside writable
//! ones are bind-mounted read-only (`.git` and the other protected names), and hidden paths
//! inside them are covered: Landlock can only add rights beneath a path, never take them
//! back, so a read-only or unreadable hole in a writable tree needs a mount. The uid and
//! gid stay the user's own.
//!
//! A hidden directory is covered by an empty, read-only tmpfs of mode 000 (listing or
//! reading in it is "Permission denied"); a hidden file by `/dev/null`, read-only (reads
//! find it empty: a mount over a file needs a file, and every other file a command could
//! be shown would be one it can reach). A confined process cannot unmount either: Landlock
//! refuses mount and unmount to a process it restricts.
//!
//! [`Namespace::enter`] runs in the child before exec: it only makes system calls
//! on what [`Namespace::new`] prepared (no allocation, no locks).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Everything the child needs to enter its namespace, prepared before fork.
#[derive(Debug)]
pub(crate) struct Namespace {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    read_only: Vec<ReadOnlyBind>,
    covered: Vec<Cover>,
}

/// A hidden path inside a writable one, and what covers it.
#[derive(Debug)]
struct Cover {
    path: CString,
    /// An empty tmpfs for a directory, else `/dev/null` with the flags its remount keeps.
    directory: bool,
    kept: libc::c_ulong,
}

#[derive(Debug)]
struct ReadOnlyBind {
    path: CString,
    /// The flags the remount must keep (the kernel refuses to clear a locked one).
    kept: libc::c_ulong,
}

impl Namespace {
    /// A namespace in which `read_only` (the paths that exist) are read-only and `covered`
    /// (those that exist) hidden.
    pub(crate) fn new(read_only: &[PathBuf], covered: &[PathBuf]) -> Self {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            read_only: read_only
                .iter()
                .filter_map(|path| {
                    let kept = kept_flags(path)?;
                    let path = CString::new(path.as_os_str().as_bytes()).ok()?;
                    Some(ReadOnlyBind { path, kept })
                })
                .collect(),
            covered: covered
                .iter()
                .filter_map(|path| {
                    let directory = path.symlink_metadata().ok()?.is_dir();
                    let kept = if directory {
                        0
                    } else {
                        kept_flags(Path::new(std::ffi::OsStr::from_bytes(
                            NULL_DEVICE.to_bytes(),
                        )))?
                    };
                    let path = CString::new(path.as_os_str().as_bytes()).ok()?;
                    Some(Cover {
                        path,
                        directory,
                        kept,
                    })
                })
                .collect(),
        }
    }

    /// Enters the namespace and makes the paths read-only. In the child, before exec.
    pub(crate) fn enter(&self) -> io::Result<()> {
        // SAFETY: every call below passes pointers to NUL-terminated strings and buffers that
        // live in `self` for the whole call, or null where the kernel allows it.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/gid_map", &self.gid_map)?;
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for bind in &self.read_only {
                bind_read_only(&bind.path, &bind.path, libc::MS_REC, bind.kept)?;
            }
            for cover in &self.covered {
                cover.mount()?;
            }
        }
        Ok(())
    }
}

/// The file a hidden file is covered with.
const NULL_DEVICE: &std::ffi::CStr = c"/dev/null";

impl Cover {
    /// Mounts the cover. In the child, before exec.
    ///
    /// # Safety
    /// Only system calls on memory `self` holds.
    unsafe fn mount(&self) -> io::Result<()> {
        const HARMLESS: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        // SAFETY: NUL-terminated strings that live for each call.
        unsafe {
            if self.directory {
                return check(libc::mount(
                    c"tmpfs".as_ptr(),
                    self.path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | HARMLESS,
                    c"mode=000,size=4k".as_ptr().cast(),
                ));
            }
            bind_read_only(NULL_DEVICE, &self.path, 0, self.kept)
        }
    }
}

/// Mounts `source` on `target` (with `flags`, `MS_REC` or none) and makes it read-only,
/// keeping the flags `kept` the kernel refuses to clear. In the child, before exec.
///
/// # Safety
/// Only system calls; `source` and `target` stay valid for them.
unsafe fn bind_read_only(
    source: &std::ffi::CStr,
    target: &std::ffi::CStr,
    flags: libc::c_ulong,
    kept: libc::c_ulong,
) -> io::Result<()> {
    // SAFETY: NUL-terminated strings that live for each call, or null where allowed.
    unsafe {
        check(libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | flags,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            std::ptr::null(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept,
            std::ptr::null(),
        ))
    }
}

/// Whether this machine lets an unprivileged process make the namespace: tried once in a
/// short-lived child. It runs from `Support::detect`, which every `Sandbox::new` waits for,
/// and a session builds its sandbox (full access included) before its first `bash` call, so
/// no call has ended while it runs: no call's cleanup takes the probe for a leftover.
pub(crate) fn available() -> bool {
    use std::os::unix::process::CommandExt;
    let namespace = Namespace::new(&[], &[]);
    let mut probe = std::process::Command::new("true");
    probe
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: `enter` only makes system calls on memory prepared before fork.
    unsafe {
        probe.pre_exec(move || namespace.enter());
    }
    probe.status().is_ok_and(|status| status.success())
}

/// The mount flags of `path`'s mount that a read-only remount must keep.
fn kept_flags(path: &Path) -> Option<libc::c_ulong> {
    let path = CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is NUL-terminated and `stat` is large enough for the kernel's answer.
    let stat = unsafe {
        if libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return None;
        }
        stat.assume_init()
    };
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Some(
        pairs
            .iter()
            .filter(|(st, _)| stat.f_flag & st != 0)
            .fold(0, |flags, (_, ms)| flags | ms),
    )
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes `bytes` to the file at `path` in one write. Async-signal-safe.
///
/// # Safety
/// Only system calls; `path` and `bytes` must stay valid for the call.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: as the function's contract says.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(written).ok() == Some(bytes.len()) {
            Ok(())
        } else {
            Err(error)
        }
    }
}
