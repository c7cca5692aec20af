//! The process table on macOS, which has no `/proc` and no subreaper: the kernel's list of
//! processes (`proc_listallpids`), each one's parent, state and start (`proc_pidinfo` with
//! `PROC_PIDTBSDINFO`), and its environment (`sysctl` `KERN_PROCARGS2`, readable for the
//! user's own processes, as `ps eww` reads it).

use std::collections::HashMap;

use super::ProcessStat as Stat;

/// `proc_bsdinfo.pbi_status` of a process that ended and waits to be reaped.
const SZOMB: u32 = 5;

/// macOS has no subreaper: an orphan goes to `launchd`, and is found by its marker.
pub(super) fn become_subreaper() -> Result<bool, String> {
    Ok(false)
}

/// Every process of the machine (the whole table: there is no subtree to read).
pub(super) fn snapshot(_whole: bool) -> HashMap<i32, Stat> {
    let mut pids = vec![0 as libc::c_int; 4096];
    loop {
        let bytes = libc::c_int::try_from(pids.len() * std::mem::size_of::<libc::c_int>())
            .unwrap_or(libc::c_int::MAX);
        // SAFETY: the buffer is `bytes` long and the kernel writes at most that many.
        let listed = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
        let Ok(listed) = usize::try_from(listed) else {
            return HashMap::new();
        };
        if listed < pids.len() {
            pids.truncate(listed);
            break;
        }
        pids.resize(pids.len() * 2, 0);
    }
    pids.into_iter()
        .filter(|pid| *pid > 0)
        .filter_map(|pid| Some((pid, read_stat(pid)?)))
        .collect()
}

/// `pid`'s parent, state and start.
pub(super) fn read_stat(pid: i32) -> Option<Stat> {
    // SAFETY: `proc_bsdinfo` is plain data, valid zeroed.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: the buffer is one `proc_bsdinfo`, `size` long.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            std::ptr::addr_of_mut!(info).cast(),
            size,
        )
    };
    if got != size {
        return None;
    }
    Some(Stat {
        parent: i32::try_from(info.pbi_ppid).ok()?,
        zombie: info.pbi_status == SZOMB,
        start: info
            .pbi_start_tvsec
            .saturating_mul(1_000_000)
            .saturating_add(info.pbi_start_tvusec),
    })
}

/// The process's environment, each variable ended by a NUL (empty when unreadable).
///
/// `KERN_PROCARGS2` gives the argument count, the executable's path, then the arguments
/// and the environment, each ended by a NUL (with padding NULs after the path).
pub(super) fn environ(pid: i32) -> Vec<u8> {
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    let mut size: libc::size_t = 0;
    // SAFETY: asks for the size only (no buffer).
    let sized = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            std::ptr::null_mut(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if sized != 0 || size == 0 {
        return Vec::new();
    }
    let mut buffer = vec![0u8; size];
    // SAFETY: the buffer is `size` long, as the kernel said it needs.
    let read = unsafe {
        libc::sysctl(
            mib.as_mut_ptr(),
            3,
            buffer.as_mut_ptr().cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    if read != 0 {
        return Vec::new();
    }
    buffer.truncate(size);
    super::procargs::environment_of(&buffer)
}
