//! Telling a failure the sandbox caused from any other: a command that failed with
//! "Permission denied", "Operation not permitted" or "Read-only file system" on a path the
//! policy does not let it write (or read), or on a socket without a network grant, was
//! blocked by the sandbox, and the model is told so in one line. Errors on paths the policy
//! allows (a file of mode 000 in the workspace) are the command's own.

use std::path::{Component, Path, PathBuf};

/// The errors the kernel gives a confined process.
const DENIALS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    // A hard link or rename out of a writable tree into one with other rights (`refer`).
    "Invalid cross-device link",
    "EACCES",
    "EPERM",
    "EROFS",
];

/// Words of a failed network call.
const NETWORK: &[&str] = &[
    "socket",
    "connect",
    "network",
    "Network",
    "Socket",
    "Connect",
    "resolve host",
];

/// What the sandbox denied, as the paths and network rules of one confinement see it.
#[derive(Debug, Clone)]
pub(crate) struct Explainer {
    pub workspace: PathBuf,
    pub writable: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
    /// Those of `read_only` that are files hard-linked from elsewhere (or directories of
    /// them), said apart: a write would change the other copy too.
    pub linked: Vec<PathBuf>,
    pub hidden: Vec<PathBuf>,
    /// Writable directories on the way to a hidden path, which Landlock alone keeps from
    /// taking new files.
    pub split: Vec<PathBuf>,
    pub network: bool,
}

impl Explainer {
    /// What the sandbox denied, when `output` (the command's stderr and stdout) shows it
    /// stopped the command: `write to /x denied (...)`.
    pub(crate) fn explain(&self, output: &str) -> Option<String> {
        let mut denied = false;
        for line in output.lines() {
            if !DENIALS.iter().any(|d| line.contains(d)) {
                continue;
            }
            denied = true;
            for token in subject(line).into_iter().chain(candidates(line)) {
                let path = resolve(&self.workspace, token);
                if let Some(reason) = self.denied(&path) {
                    return Some(reason);
                }
            }
        }
        // A denial on no path, in output about sockets (a traceback names them on other
        // lines than its error).
        if denied && !self.network && NETWORK.iter().any(|w| output.contains(w)) {
            return Some("network access denied (no network grant)".to_owned());
        }
        None
    }

    fn denied(&self, path: &Path) -> Option<String> {
        let shown = path.display();
        if let Some(hidden) = self.hidden.iter().find(|h| path.starts_with(h)) {
            return Some(format!(
                "access to {shown} denied ({} is hidden; a `read` grant opens it)",
                hidden.display()
            ));
        }
        if let Some(linked) = self.linked.iter().find(|p| path.starts_with(p)) {
            return Some(format!(
                "write to {shown} denied ({} is hard-linked from outside the workspace, a package cache's file as uv and pnpm link them: a write would change it there too; copy it to a file of its own first)",
                linked.display()
            ));
        }
        if let Some(protected) = self.read_only.iter().find(|p| path.starts_with(p)) {
            return Some(format!(
                "write to {shown} denied ({} is read-only; a `write` grant opens it)",
                protected.display()
            ));
        }
        if let Some(directory) = path.parent().filter(|p| self.split.iter().any(|s| s == p)) {
            let secret = self.hidden.iter().find(|h| h.starts_with(directory));
            return Some(format!(
                "write to {shown} denied ({} holds hidden {}, and without user namespaces the sandbox can only let commands write what was in it when the run started)",
                directory.display(),
                secret.map_or_else(String::new, |h| h.display().to_string())
            ));
        }
        // The sandbox only takes away what the user could do: a path the user cannot write
        // either failed on its own.
        if !self.writable.iter().any(|w| path.starts_with(w)) && user_could_write(path) {
            return Some(format!(
                "write to {shown} denied (writable: {})",
                self.writable
                    .iter()
                    .map(|w| w.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        None
    }
}

/// Whether wonopcode's user, unconfined, could write `path` (or create it in its nearest
/// existing parent).
fn user_could_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.symlink_metadata().is_ok());
    let Some(existing) = existing else {
        return false;
    };
    let Ok(text) = std::ffi::CString::new(existing.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `text` is NUL-terminated and lives for the call.
    unsafe { libc::access(text.as_ptr(), libc::W_OK) == 0 }
}

/// What an error of the shape `PROGRAM: ... NAME: Permission denied` (bash, coreutils)
/// names: a bare file name (`made.txt`) too, which [`candidates`] leaves out.
fn subject(line: &str) -> Option<&str> {
    let denial = DENIALS.iter().find_map(|d| line.find(&format!(": {d}")))?;
    let before = &line[..denial];
    let named = before
        .rsplit(": ")
        .next()?
        .trim_end_matches(['\'', '’', '"', '`']);
    let named = named
        .rsplit_once(['\'', '‘', '"', '`'])
        .map_or(named, |(_, quoted)| quoted);
    (!named.is_empty() && !named.contains(char::is_whitespace) && !names_a_socket(named))
        .then_some(named)
}

/// Whether a word names a connection rather than a file (a URL; bash's `/dev/tcp/...`).
fn names_a_socket(word: &str) -> bool {
    word.contains("://") || word.starts_with("/dev/tcp/") || word.starts_with("/dev/udp/")
}

/// The words of an error line that may be paths.
fn candidates(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '‘' | '’' | '(' | ')'))
        .map(|t| t.trim_end_matches([':', ',', ';']))
        .filter(|t| {
            !t.is_empty()
                && !names_a_socket(t)
                && (t.starts_with('/')
                    || t.starts_with("./")
                    || t.starts_with("../")
                    || t.contains('/')
                    || t.starts_with('.'))
                && !DENIALS.iter().any(|d| d.contains(*t))
        })
}

/// `token` as an absolute path, relative ones from the workspace; its existing part
/// resolved (links followed), the rest taken as written.
fn resolve(workspace: &Path, token: &str) -> PathBuf {
    let joined = workspace.join(token);
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut path = real;
            for part in rest.iter().rev() {
                path.push(part);
            }
            return normalize(&path);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return normalize(&joined),
        }
    }
}

/// `path` without `.` and `..` components.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_of_an_error_line() {
        assert_eq!(
            subject("bash: line 1: made.txt: Permission denied"),
            Some("made.txt")
        );
        assert_eq!(
            subject("touch: cannot touch 'a b': Permission denied"),
            None
        );
        assert_eq!(
            subject("cp: cannot create regular file 'out.txt': Read-only file system"),
            Some("out.txt")
        );
        assert_eq!(subject("Permission denied"), None);
        assert_eq!(
            subject("bash: line 1: /dev/tcp/127.0.0.1/80: Operation not permitted"),
            None
        );
    }

    fn explainer(workspace: &Path) -> Explainer {
        Explainer {
            workspace: workspace.to_path_buf(),
            writable: vec![workspace.to_path_buf()],
            read_only: vec![workspace.join(".git")],
            linked: Vec::new(),
            hidden: vec![PathBuf::from("/home/u/.ssh")],
            split: Vec::new(),
            network: false,
        }
    }

    #[test]
    fn denials_on_paths_outside_the_policy_are_the_sandboxs() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let outside = ws.parent().unwrap();
        let e = explainer(&ws);
        let line = format!("bash: {}/owned: Permission denied", outside.display());
        let said = e.explain(&line).unwrap();
        let wanted = format!("write to {}/owned denied", outside.display());
        assert!(said.starts_with(&wanted), "{said}");
        let said = e
            .explain("touch: cannot touch '../outside': Permission denied")
            .unwrap();
        assert!(
            said.contains(&format!(
                "write to {} denied",
                outside.join("outside").display()
            )),
            "{said}"
        );
        let said = e
            .explain("error: could not lock config file .git/config: Read-only file system")
            .unwrap();
        assert!(said.contains(".git/config denied"), "{said}");
        let said = e
            .explain("cat: /home/u/.ssh/id_ed25519: Permission denied")
            .unwrap();
        assert!(
            said.contains("access to /home/u/.ssh/id_ed25519 denied"),
            "{said}"
        );
        let said = e
            .explain("PermissionError: [Errno 1] Operation not permitted (socket)")
            .unwrap();
        assert!(said.contains("network access denied"), "{said}");
    }

    #[test]
    fn a_new_file_beside_a_secret_without_namespaces_is_explained() {
        let mut e = explainer(Path::new("/tmp/ws"));
        e.writable.push(PathBuf::from("/tmp"));
        e.hidden = vec![PathBuf::from("/tmp/home/.ssh")];
        e.split = vec![PathBuf::from("/tmp"), PathBuf::from("/tmp/home")];
        let said = e.explain("bash: /tmp/x: Permission denied").unwrap();
        assert!(
            said.starts_with("write to /tmp/x denied (/tmp holds hidden /tmp/home/.ssh"),
            "{said}"
        );
        assert_eq!(e.explain("bash: /tmp/ws/x/y: Permission denied"), None);
    }

    #[test]
    fn denials_on_paths_the_policy_allows_are_the_commands_own() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let e = explainer(&ws);
        assert_eq!(e.explain("cat: ./secret.txt: Permission denied"), None);
        let inside = format!("bash: {}/x: Permission denied", ws.display());
        assert_eq!(e.explain(&inside), None);
        assert_eq!(e.explain("all good: /etc/passwd"), None);
    }
}
