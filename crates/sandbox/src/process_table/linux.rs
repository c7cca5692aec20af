//! The process table on Linux: `/proc`, and wonopcode made a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`) so that what a call leaves stays below it.

use std::collections::HashMap;

use super::ProcessStat as Stat;

/// Makes wonopcode a child subreaper (`PR_SET_CHILD_SUBREAPER`).
pub fn become_subreaper() -> Result<bool, String> {
    // SAFETY: prctl with integer arguments only.
    match unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } {
        0 => Ok(true),
        _ => Err(std::io::Error::last_os_error().to_string()),
    }
}

/// The processes a call may have left: the whole table when `whole`, else only
/// wonopcode's subtree. wonopcode is a subreaper, so each of them is below it, and the
/// kernel's lists of each thread's children give that subtree at a cost that does not
/// grow with the machine's other processes. Where the kernel keeps no such lists, or
/// wonopcode could not become a subreaper, the whole table.
pub(super) fn snapshot(whole: bool) -> HashMap<i32, Stat> {
    if !whole
        && super::is_subreaper()
        && let Some(below) = subtree()
    {
        return below;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, read_stat(pid)?)))
        .collect()
}

/// Every process below this one, by `/proc/PID/task/TID/children`; `None` when the
/// kernel does not list children, or wonopcode's own children keep changing.
///
/// A process re-parented to wonopcode after its old parent's list was read would be
/// missed, so the walk is repeated until wonopcode's own children stay the same.
fn subtree() -> Option<HashMap<i32, Stat>> {
    let mut mine = children("self")?;
    mine.sort_unstable();
    for _ in 0..4 {
        let table = walk(mine.clone());
        let mut again = children("self")?;
        again.sort_unstable();
        if again == mine {
            return Some(table);
        }
        mine = again;
    }
    None
}

/// The processes from `queue` down, with their stats.
fn walk(mut queue: Vec<i32>) -> HashMap<i32, Stat> {
    let mut table = HashMap::new();
    while let Some(pid) = queue.pop() {
        if table.contains_key(&pid) {
            continue;
        }
        let Some(stat) = read_stat(pid) else {
            continue;
        };
        table.insert(pid, stat);
        queue.extend(children(&pid.to_string()).unwrap_or_default());
    }
    table
}

/// The children of every thread of process `pid` (`"self"` for this one).
fn children(pid: &str) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut found = Vec::new();
    let mut listed_any = false;
    // A thread may end while its siblings are read: only none read at all is a failure.
    for task in tasks.flatten() {
        if let Ok(listed) = std::fs::read_to_string(task.path().join("children")) {
            listed_any = true;
            found.extend(
                listed
                    .split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
    listed_any.then_some(found)
}

pub(super) fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        zombie: fields.first()? == &"Z",
        parent: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// The process's environment as stored (empty when unreadable).
pub(super) fn environ(pid: i32) -> Vec<u8> {
    std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default()
}
