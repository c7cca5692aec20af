//! The path guard: every file tool resolves its paths here, so `..`, absolute paths and
//! symlinks cannot reach outside the workspace root.

use std::io;
use std::path::{Component, Path, PathBuf};

use wonopcode_agent_loop::{ToolEnv, ToolError};

/// Resolves `input` (relative to `root`, or absolute) to a path inside `root`. `root` must be
/// canonical. The longest prefix that exists is resolved by the system, as opening the path
/// would resolve it (symlinks followed before a `..` after them applies); in the rest, which
/// does not exist yet, `.` is skipped and `..` is refused, as the system would. A dangling
/// symlink is refused:
/// its target cannot be checked, and writing through it would create that target.
pub fn resolve(root: &Path, input: &str) -> Result<PathBuf, ToolError> {
    let given = Path::new(input);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let failed = |e: &io::Error| {
        ToolError::Failed(format!("cannot resolve path `{input}`: {}", describe(e)))
    };
    let components: Vec<Component> = joined.components().collect();
    let mut existing = components.len();
    let mut full = loop {
        let prefix: PathBuf = components[..existing].iter().collect();
        match prefix.canonicalize() {
            Ok(real) => break real,
            // Missing (and not a dangling symlink): the name is one still to be made.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && existing > 1
                    && std::fs::symlink_metadata(&prefix).is_err() =>
            {
                existing -= 1;
            }
            Err(e) => return Err(failed(&e)),
        }
    };
    for component in &components[existing..] {
        match component {
            // As for the system: `missing/..` is not there.
            Component::ParentDir => {
                return Err(failed(&io::Error::from(io::ErrorKind::NotFound)));
            }
            Component::Normal(name) => full.push(name),
            _ => {}
        }
    }
    if full.starts_with(root) {
        Ok(full)
    } else {
        Err(ToolError::OutsideWorkspace {
            path: input.to_owned(),
        })
    }
}

/// [`resolve`], refusing a path that lies in one of `hidden` (the credentials the sandbox
/// hides from commands: [`ToolEnv::hidden`]) with a line saying so.
pub fn resolve_visible(root: &Path, hidden: &[PathBuf], input: &str) -> Result<PathBuf, ToolError> {
    let path = resolve(root, input)?;
    match hidden_by(hidden, &path) {
        Some(hidden) => Err(ToolError::Failed(format!(
            "`{input}` is hidden: {} holds credentials, kept from file tools and commands alike (a `read` grant in your sandbox settings opens it)",
            display(root, hidden)
        ))),
        None => Ok(path),
    }
}

/// [`resolve_visible`] in a call's workspace, with the run's hidden paths.
pub fn resolve_for(env: &ToolEnv, input: &str) -> Result<PathBuf, ToolError> {
    resolve_visible(&env.workspace_root, env.hidden(), input)
}

/// The hidden path `path` (canonical) is, or lies in.
pub(crate) fn hidden_by<'h>(hidden: &'h [PathBuf], path: &Path) -> Option<&'h PathBuf> {
    hidden.iter().find(|h| path.starts_with(h))
}

/// The path a model gave, as permission rules see it: resolved like every tool path and
/// shown relative to `root`. A path that does not resolve inside the workspace is kept as
/// given (the tool refuses it anyway).
pub fn rule_subject(root: &Path, input: &str) -> String {
    resolve(root, input).map_or_else(|_| input.to_owned(), |path| display(root, &path))
}

/// `path` relative to `root`, for output the model sees (and that replays the same on every
/// machine). `.` for the root itself.
pub fn display(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// A short description of an I/O error, without the OS error code noise.
pub fn describe(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => error.to_string(),
    }
}

/// Opens a file of the workspace `root` for reading only when it is a regular file, giving
/// its size: resolved beneath `root` (no link leads out, however the path changed since it
/// was checked), and a FIFO, a socket or a device is refused without blocking on it (the
/// open is non-blocking and the check is made on the open handle).
pub(crate) fn open_regular(root: &Path, path: &Path) -> Result<(std::fs::File, u64), OpenError> {
    let file = wonopcode_os::beneath::open(root, path, wonopcode_os::beneath::Access::Read)
        .map_err(OpenError::Io)?;
    let metadata = file.metadata().map_err(OpenError::Io)?;
    if metadata.is_file() {
        Ok((file, metadata.len()))
    } else {
        Err(OpenError::NotRegular)
    }
}

/// Why [`open_regular`] refused.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The system refused.
    Io(std::io::Error),
    /// A directory, FIFO, socket or device.
    NotRegular,
}

impl OpenError {
    /// The tool error for `given` (the path as the model gave it).
    pub(crate) fn for_path(self, given: &str) -> ToolError {
        match self {
            Self::Io(e) => ToolError::Failed(format!("cannot read `{given}`: {}", describe(&e))),
            Self::NotRegular => ToolError::Failed(format!(
                "`{given}` is not a regular file (a directory, FIFO, socket or device)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn inside_paths_resolve() {
        let (_d, root) = setup();
        assert_eq!(
            resolve(&root, "sub/new.txt").unwrap(),
            root.join("sub/new.txt")
        );
        assert_eq!(resolve(&root, "sub/../a.txt").unwrap(), root.join("a.txt"));
        assert!(resolve(&root, "missing/../a.txt").is_err());
        assert_eq!(
            resolve(&root, "deep/new/file").unwrap(),
            root.join("deep/new/file")
        );
    }

    #[test]
    fn dotdot_escape_is_refused() {
        let (_d, root) = setup();
        let err = resolve(&root, "../secret.txt").unwrap_err();
        assert_eq!(
            err,
            ToolError::OutsideWorkspace {
                path: "../secret.txt".into()
            }
        );
        assert!(resolve(&root, "/etc/passwd").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlink_escape_is_refused() {
        let (dir, root) = setup();
        std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
        assert!(matches!(
            resolve(&root, "link/secret.txt"),
            Err(ToolError::OutsideWorkspace { .. })
        ));
        assert!(matches!(
            resolve(&root, "link/new.txt"),
            Err(ToolError::OutsideWorkspace { .. })
        ));
        std::os::unix::fs::symlink(dir.path().join("nowhere"), root.join("dangling")).unwrap();
        assert!(resolve(&root, "dangling").is_err());
    }
}
