//! How tests treat a machine without a part they need (a confining kernel, user
//! namespaces, a writable pids cgroup, root to become another user, an installed tool).
//! Where `WONOPCODE_REQUIRE_SANDBOX` names the part, a missing one fails the test: CI names
//! every part its machines have, so a regression cannot pass there as a skip. Set to
//! anything else (`1`), it names Landlock and seccomp. Otherwise the test is skipped: said
//! on stderr and appended to the file `WONOPCODE_SKIP_LOG` names, whose lines CI's summary
//! counts (cargo's own count has only the ignored tests).

use std::io::Write;

/// Whether the run requires `part` (`landlock`, `seccomp`, `namespaces`, `cgroups`, `root`).
pub fn required(part: &str) -> bool {
    let Ok(parts) = std::env::var("WONOPCODE_REQUIRE_SANDBOX") else {
        return false;
    };
    let named: Vec<&str> = parts.split(',').map(str::trim).collect();
    if named
        .iter()
        .all(|p| p.chars().all(|c| c.is_ascii_lowercase()) && !p.is_empty())
    {
        named.contains(&part)
    } else {
        matches!(part, "landlock" | "seccomp")
    }
}

/// A test that cannot run here for want of `part`: fails when the run requires it, else
/// says `skipped: WHY` and counts it ([`note`]).
pub fn skipped(part: &str, why: &str) {
    assert!(
        !required(part),
        "WONOPCODE_REQUIRE_SANDBOX names `{part}` and this machine lacks it: {why}"
    );
    note(why);
}

/// Says `skipped: WHY` on stderr and appends it to `WONOPCODE_SKIP_LOG`'s file, for a skip
/// that another switch already let happen.
pub fn note(why: &str) {
    eprintln!("skipped: {why}");
    if let Some(log) = std::env::var_os("WONOPCODE_SKIP_LOG")
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
    {
        let _ = writeln!(file, "{}", why.replace('\n', " "));
    }
}
