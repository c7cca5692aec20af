//! Starting a command's process without `fork`: [`spawn`] and the [`Process`] it gives.
//!
//! A `fork` copies the page tables of wonopcode's whole address space, and afterwards each
//! page either side writes first takes a copy-on-write fault: about 1 ms a command for a
//! process of wonopcode's size, more than the rest of starting it. Here the child shares the
//! parent's memory until it execs (`clone(CLONE_VM | CLONE_VFORK)`, as glibc's
//! `posix_spawn` does), on a stack of its own, and makes only system calls on memory
//! prepared before the clone: its stdio, directory and process group, the confinement's
//! steps, then `execve`. The spawning thread waits until the child has exec'd or failed;
//! wonopcode's other threads run on meanwhile in the same memory, which is why the child
//! never allocates, locks or unwinds.
//!
//! Signals stay blocked from before the clone until just before `execve`, and the child
//! first sets every handler back to the default: a handler of wonopcode's run in the child
//! would act on wonopcode's memory as if wonopcode had been signalled.
//!
//! The end of the process is noticed through its pidfd (`CLONE_PIDFD`), or on kernels
//! without one by `SIGCHLD`; dropped before it ended, it is killed and reaped.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::confine::{ChildSteps, Confinement};
use crate::ProcessSpec;

/// The child's stack: its few frames of system calls, with room to spare.
const STACK_BYTES: usize = 256 << 10;

/// A started process: its output pipes, and waiting for its end.
#[derive(Debug)]
pub struct Process {
    pid: libc::pid_t,
    /// `None` once reaped.
    exit: Option<Exit>,
    /// The write end of its stdin, when piped (drop it to close the stdin).
    pub stdin: Option<pipe::Sender>,
    /// The read end of its stdout.
    pub stdout: Option<pipe::Receiver>,
    /// The read end of its stderr.
    pub stderr: Option<pipe::Receiver>,
}

/// How the end of a process is noticed. Either way it is reaped by its id, which cannot be
/// reused before: it is wonopcode's own child, waited for by nothing else.
#[derive(Debug)]
enum Exit {
    /// Its pidfd becomes readable (Linux 5.3 and later).
    Pidfd(AsyncFd<OwnedFd>),
    /// A `SIGCHLD` arrives (older kernels).
    Sigchld(Signal),
}

/// Starts `spec`, confined by `confinement` when given (its steps run in the child before
/// `execve`, and it adds `TMPDIR` where it has a temp dir of its own).
///
/// Must be called inside a tokio runtime (it waits through the runtime's reactor).
pub fn spawn(spec: &ProcessSpec, confinement: Option<&Confinement>) -> io::Result<Process> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(io::Error::other(
            "a process is started only inside a tokio runtime",
        ));
    }
    let mut spec = spec.clone();
    if let Some(temp) = confinement.and_then(Confinement::temp) {
        spec.set_env("TMPDIR", temp);
    }
    let env = spec.env;
    let path = find_program(&spec.program, &env, &spec.dir)?;
    let path = c_string(path.as_os_str())?;
    let arguments = std::iter::once(&spec.program)
        .chain(&spec.args)
        .map(|a| c_string(a))
        .collect::<io::Result<Vec<_>>>()?;
    let variables = env
        .iter()
        .map(|(k, v)| {
            let mut pair = k.clone();
            pair.push("=");
            pair.push(v);
            c_string(&pair)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let argv = null_terminated(&arguments);
    let envp = null_terminated(&variables);
    let dir = c_string(spec.dir.as_os_str())?;

    let (stdin_write, stdin) = if spec.piped_stdin {
        let (read, write) = pipe_pair()?;
        (Some(write), above_stdio(read)?)
    } else {
        (None, above_stdio(std::fs::File::open("/dev/null")?.into())?)
    };
    let (out_read, out_write) = pipe_pair()?;
    let (err_read, err_write) = pipe_pair()?;
    let plan = Plan {
        path: &path,
        argv: &argv,
        envp: &envp,
        dir: &dir,
        stdio: [
            stdin.as_raw_fd(),
            out_write.as_raw_fd(),
            err_write.as_raw_fd(),
        ],
        steps: confinement.and_then(Confinement::steps),
        failure: AtomicI32::new(0),
    };
    let stack = Stack::new()?;
    let (pid, pidfd) = clone_child(&plan, &stack)?;
    drop((stdin, out_write, err_write));
    let failure = plan.failure.load(Ordering::Acquire);
    if failure != 0 {
        // It has exited already (the parent resumes only after the exec or the exit).
        let _ = waitid(pid, libc::WEXITED);
        return Err(io::Error::from_raw_os_error(failure));
    }
    let exit = match exit_notice(pidfd) {
        Ok(exit) => exit,
        Err(e) => {
            kill(pid);
            let _ = waitid(pid, libc::WEXITED);
            return Err(e);
        }
    };
    let mut process = Process {
        pid,
        exit: Some(exit),
        stdin: None,
        stdout: None,
        stderr: None,
    };
    // A failure from here drops `process`, which kills and reaps the child.
    process.stdin = stdin_write.map(pipe::Sender::from_owned_fd).transpose()?;
    process.stdout = Some(pipe::Receiver::from_owned_fd(out_read)?);
    process.stderr = Some(pipe::Receiver::from_owned_fd(err_read)?);
    Ok(process)
}

/// How the end of the process with `pidfd` (when the kernel gave one) will be noticed.
fn exit_notice(pidfd: Option<OwnedFd>) -> io::Result<Exit> {
    if let Some(pidfd) = pidfd {
        // SAFETY: an `OwnedFd` keeps its descriptor open, the same one, for its whole life.
        let registered = unsafe { AsyncFd::register_with_interest(pidfd, Interest::READABLE) };
        // Refused where pidfds cannot be polled (Linux 5.2).
        if let Ok(pidfd) = registered {
            return Ok(Exit::Pidfd(pidfd));
        }
    }
    // Created after the clone: a SIGCHLD before it is seen by the first look in `reap`.
    Ok(Exit::Sigchld(signal(SignalKind::child())?))
}

impl Process {
    /// Its process id (also its process group's).
    pub fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    /// Waits for it to end, and reaps it.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let Some(exit) = &mut self.exit else {
            return Err(io::Error::other("the process was waited for already"));
        };
        let status = reap(self.pid, exit).await?;
        self.exit = None;
        Ok(status)
    }

    /// Sends it `SIGKILL` (nothing once it was waited for).
    pub fn kill(&self) {
        if self.exit.is_some() {
            kill(self.pid);
        }
    }
}

/// Sends `SIGKILL` to `pid`, a child not reaped yet (so the id is still its own).
fn kill(pid: libc::pid_t) {
    // SAFETY: kill takes no pointer.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

impl Drop for Process {
    /// Kills a process not waited for, and reaps it: now when it is gone at once, else in
    /// a task of the runtime (or, outside one, by blocking until it is).
    fn drop(&mut self) {
        let Some(mut exit) = self.exit.take() else {
            return;
        };
        kill(self.pid);
        if matches!(waitid(self.pid, libc::WEXITED | libc::WNOHANG), Ok(Some(_))) {
            return;
        }
        let pid = self.pid;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(async move { reap(pid, &mut exit).await })),
            Err(_) => drop(waitid(pid, libc::WEXITED)),
        }
    }
}

/// Waits until `pid` has ended, and reaps it.
async fn reap(pid: libc::pid_t, exit: &mut Exit) -> io::Result<ExitStatus> {
    loop {
        if let Some(status) = waitid(pid, libc::WEXITED | libc::WNOHANG)? {
            return Ok(status);
        }
        match exit {
            Exit::Pidfd(pidfd) => pidfd.readable().await?.clear_ready(),
            Exit::Sigchld(signal) => {
                if signal.recv().await.is_none() {
                    return Err(io::Error::other("SIGCHLD is no longer delivered"));
                }
            }
        }
    }
}

/// `waitid` for the child `pid`: its status once it has ended (`None` while it runs, with
/// `WNOHANG`).
fn waitid(pid: libc::pid_t, options: libc::c_int) -> io::Result<Option<ExitStatus>> {
    let id = libc::id_t::try_from(pid).map_err(|_| io::Error::other("bad process id"))?;
    loop {
        // SAFETY: `info` is a zeroed siginfo_t the kernel fills in.
        let (result, info) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            (libc::waitid(libc::P_PID, id, &mut info, options), info)
        };
        if result != 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        // SAFETY: waitid filled in a SIGCHLD siginfo (or left it zeroed: not ended).
        let (ended, status) = unsafe { (info.si_pid(), info.si_status()) };
        if ended == 0 {
            return Ok(None);
        }
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => status | 0x80,
            _ => status,
        };
        return Ok(Some(ExitStatus::from_raw(raw)));
    }
}

/// Everything the child reads, prepared by the parent. The child writes only `failure`.
struct Plan<'a> {
    path: &'a CString,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    dir: &'a CString,
    /// What becomes its fds 0, 1 and 2 (each above 2 itself).
    stdio: [libc::c_int; 3],
    steps: Option<&'a ChildSteps>,
    /// The errno of the step that failed; 0 while none did.
    failure: AtomicI32,
}

/// Clones the child that runs `plan` on `stack`; returns its id, and its pidfd where the
/// kernel gives one (`CLONE_PIDFD`, Linux 5.2 and later), once it has exec'd or failed.
fn clone_child(plan: &Plan, stack: &Stack) -> io::Result<(libc::pid_t, Option<OwnedFd>)> {
    static NO_PIDFD: AtomicBool = AtomicBool::new(false);
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    if !NO_PIDFD.load(Ordering::Relaxed) {
        let mut pidfd: libc::c_int = -1;
        match clone_with(plan, stack, flags | libc::CLONE_PIDFD, &mut pidfd) {
            // SAFETY: the kernel gave this fd to this process for the child (CLONE_PIDFD).
            Ok(pid) => {
                return Ok((
                    pid,
                    (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) }),
                ));
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                NO_PIDFD.store(true, Ordering::Relaxed)
            }
            Err(e) => return Err(e),
        }
    }
    let pid = clone_with(plan, stack, flags, std::ptr::null_mut())?;
    Ok((pid, None))
}

/// One `clone` of the child with `flags`, every signal blocked around it; `pidfd` receives
/// the pidfd with `CLONE_PIDFD`.
fn clone_with(
    plan: &Plan,
    stack: &Stack,
    flags: libc::c_int,
    pidfd: *mut libc::c_int,
) -> io::Result<libc::pid_t> {
    // SAFETY: every signal is blocked for the clone and restored after it. The child runs
    // `child` on its own stack, reading `plan`, which outlives it: with CLONE_VFORK this
    // thread resumes only after the child's exec or exit.
    unsafe {
        let mut all = std::mem::zeroed::<libc::sigset_t>();
        let mut before = std::mem::zeroed::<libc::sigset_t>();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
        let pid = libc::clone(
            child,
            stack.top(),
            flags,
            std::ptr::from_ref(plan).cast_mut().cast(),
            pidfd,
        );
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        if pid < 0 { Err(error) } else { Ok(pid) }
    }
}

/// The child: from the clone to `execve`. Never returns.
extern "C" fn child(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `plan` is the parent's `Plan`, alive and unchanged until this execs or exits.
    let plan = unsafe { &*plan.cast::<Plan>().cast_const() };
    // SAFETY: only system calls on `plan`'s memory, as `exec` requires.
    let error = unsafe { exec(plan) };
    plan.failure.store(
        error.raw_os_error().unwrap_or(libc::EINVAL),
        Ordering::Release,
    );
    // SAFETY: ends the child without running anything of the parent's.
    unsafe { libc::_exit(127) }
}

/// Sets the child up and execs `plan`'s program; returns only the error that stopped it.
///
/// # Safety
/// Runs in a child sharing the parent's memory: only system calls on `plan`'s memory.
unsafe fn exec(plan: &Plan) -> io::Error {
    // SAFETY: system calls on `plan`'s memory and the stack.
    unsafe {
        default_signal_handlers();
        for (target, fd) in (0..).zip(plan.stdio) {
            if libc::dup2(fd, target) < 0 {
                return io::Error::last_os_error();
            }
        }
        // A session of its own (and so a process group): no controlling terminal, so no
        // `/dev/tty` to write around wonopcode's output or to read what is typed.
        if libc::chdir(plan.dir.as_ptr()) != 0 || libc::setsid() < 0 {
            return io::Error::last_os_error();
        }
        if let Some(steps) = plan.steps
            && let Err(e) = steps.apply()
        {
            return e;
        }
        let mut none = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(plan.path.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
        io::Error::last_os_error()
    }
}

/// Sets each signal wonopcode handles back to its default, and `SIGPIPE` too (ignored by
/// Rust programs, expected by shells' pipelines).
///
/// # Safety
/// In the child, with every signal blocked.
unsafe fn default_signal_handlers() {
    // SAFETY: `sigaction` on stack memory.
    unsafe {
        let mut default = std::mem::zeroed::<libc::sigaction>();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut default.sa_mask);
        for signal in 1..=libc::SIGRTMAX() {
            let mut current = std::mem::zeroed::<libc::sigaction>();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            let handled =
                current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if handled || signal == libc::SIGPIPE {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

/// The child's stack: a mapping of its own with a guard page below it.
struct Stack {
    base: *mut libc::c_void,
}

impl Stack {
    fn new() -> io::Result<Self> {
        // SAFETY: a fresh anonymous mapping; its lowest page made inaccessible.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                STACK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Self { base };
            if libc::mprotect(base, page_size(), libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// Its top, where a stack that grows down starts.
    fn top(&self) -> *mut libc::c_void {
        self.base.wrapping_byte_add(STACK_BYTES)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used (the child has exec'd or exited).
        unsafe {
            libc::munmap(self.base, STACK_BYTES);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf touches no memory.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// Where `program` is: itself when it names a path, else the first executable file of that
/// name on the `PATH` of `env` (a shell's default `PATH` when it has none), as `execvp` in
/// the child would find it: a relative or empty entry is taken from its directory `dir`.
fn find_program(program: &OsStr, env: &[(OsString, OsString)], dir: &Path) -> io::Result<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    let path = env.iter().find(|(k, _)| k == "PATH").map_or_else(
        || OsString::from("/usr/local/bin:/usr/bin:/bin"),
        |(_, v)| v.clone(),
    );
    std::env::split_paths(&path)
        .map(|entry| dir.join(entry).join(program))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("`{}` is not on PATH", program.to_string_lossy()),
            )
        })
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn c_string(text: &OsStr) -> io::Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` contains a NUL byte", text.to_string_lossy()),
        )
    })
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// A pipe, both ends close-on-exec: (read, write), the write end above 0-2.
fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two new descriptors owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((read, above_stdio(write)?))
}

/// `fd`, moved above 0-2 when it is one of them (wonopcode started with a standard stream
/// closed): the child's `dup2`s onto 0-2 must not replace a descriptor they have yet to
/// read.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: duplicates a descriptor this process owns.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_script_gets_the_given_environment_and_a_set_variable_replaces_its_value() {
        let env = BTreeMap::from([
            ("PATH".to_owned(), "/usr/bin".to_owned()),
            ("KEY".to_owned(), "old".to_owned()),
        ]);
        let mut spec = ProcessSpec::script("sh", "true", Some(&env), Path::new("/w"));
        spec.set_env("KEY", "new");
        let mut vars = spec.env.clone();
        vars.sort();
        assert_eq!(
            vars,
            vec![
                ("KEY".into(), "new".into()),
                ("PATH".into(), "/usr/bin".into())
            ]
        );
        assert_eq!(spec.args, vec![OsString::from("-c"), "true".into()]);
    }

    #[tokio::test]
    async fn without_a_pidfd_the_end_is_noticed_by_sigchld() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ProcessSpec::script("bash", "sleep 0.2; exit 4", None, dir.path());
        let mut process = spawn(&spec, None).unwrap();
        process.exit = Some(exit_notice(None).unwrap());
        assert!(matches!(process.exit, Some(Exit::Sigchld(_))));
        assert_eq!(process.wait().await.unwrap().code(), Some(4));
    }
}
