//! Directories and files of the journal that only their owner can open: a run's journal
//! holds the prompts, the model's answers and every tool output, and its checkpoints hold
//! copies of workspace files (a `0600` `secret.env` among them). Directories are `0700`
//! and files `0600` whatever the umask, and a directory made earlier with wider bits (by an
//! older wonopcode) is narrowed when it is used again.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of every journal directory.
pub(crate) const DIR_MODE: u32 = 0o700;
/// The mode of every journal file.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Makes `path` and the directories missing on its way, each `0700`, and narrows `path`
/// itself to `0700` when it was there already.
pub(crate) fn create_dir_all(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)?;
    narrow(path, DIR_MODE)
}

/// Makes the new directory `path` (`0700`); one that exists is an error.
pub(crate) fn create_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(path)?;
    narrow(path, DIR_MODE)
}

/// Options that create a file `0600` (the caller says how it is opened).
pub(crate) fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// Writes `bytes` to `path`, a new or truncated file of mode `0600`.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    io::Write::write_all(&mut create(path)?, bytes)
}

/// Creates (or truncates) `path` for writing, `0600`.
pub(crate) fn create(path: &Path) -> io::Result<File> {
    let file = options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    narrow_file(&file)?;
    Ok(file)
}

/// Sets `path`'s mode to `mode` unless it is that already (a umask can only take bits away,
/// so this only matters for what an older version left wider).
fn narrow(path: &Path, mode: u32) -> io::Result<()> {
    if std::fs::metadata(path)?.permissions().mode() & 0o777 != mode {
        std::fs::set_permissions(path, Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Narrows an open file (one that existed with wider bits keeps them through `open`).
fn narrow_file(file: &File) -> io::Result<()> {
    if file.metadata()?.permissions().mode() & 0o777 != FILE_MODE {
        file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn what_is_made_is_the_owners_alone_and_what_was_wider_is_narrowed() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        create_dir_all(&deep).unwrap();
        assert_eq!(mode(&deep), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        let old = dir.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::set_permissions(&old, Permissions::from_mode(0o755)).unwrap();
        create_dir_all(&old).unwrap();
        assert_eq!(mode(&old), 0o700);
        let file = deep.join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, Permissions::from_mode(0o644)).unwrap();
        write(&file, b"y").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert!(create_dir(&deep).is_err(), "a new directory only");
    }
}
