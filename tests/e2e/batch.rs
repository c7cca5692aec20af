//! `wonopcode batch` on the real binary (`docs/batch.md`): fifty tasks against a loopback
//! Anthropic server that allows five requests a second and answers some requests 429 — the
//! shared limiter keeps every run under the limit and holds all tasks back after a 429, and a
//! batch killed midway completes only the missing tasks when run again; and the two shards of
//! a two-shard job, run as two processes and merged, equal the unsharded batch.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{command, copy_dir, repo_root};

/// What the server saw: each request's arrival, the batch run it came in, the task it was
/// for, and whether it was refused with a 429 (and when the 429 had been written: no
/// client can have read it earlier).
#[derive(Debug, Clone)]
struct Arrival {
    at: Instant,
    run: usize,
    task: String,
    refused: bool,
    refusal_sent: Option<Instant>,
}

/// A loopback Anthropic server answering each task's prompt with `done TASK`; every
/// `refuse_every`-th request is refused with a 429 and `retry-after-ms: 500`.
struct LimitedServer {
    base_url: String,
    arrivals: Arc<Mutex<Vec<Arrival>>>,
    run: Arc<AtomicUsize>,
}

/// The wait a 429 asks for.
const RETRY_AFTER: Duration = Duration::from_millis(500);

impl LimitedServer {
    fn start(refuse_every: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let run = Arc::new(AtomicUsize::new(1));
        let (log, phase) = (arrivals.clone(), run.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, phase) = (log.clone(), phase.clone());
                std::thread::spawn(move || serve(stream, refuse_every, &log, &phase));
            }
        });
        Self {
            base_url,
            arrivals,
            run,
        }
    }

    fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals.lock().unwrap().clone()
    }
}

fn serve(
    mut stream: std::net::TcpStream,
    refuse_every: usize,
    log: &Mutex<Vec<Arrival>>,
    run: &AtomicUsize,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let body_start = loop {
        let Ok(n) = stream.read(&mut chunk) else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let at = Instant::now();
    let head = String::from_utf8_lossy(&buf[..body_start]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < body_start + length {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let request: Value = serde_json::from_slice(&buf[body_start..]).unwrap_or(Value::Null);
    let prompt = request["messages"][0]["content"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| {
            request["messages"][0]["content"][0]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let task = prompt.trim_start_matches("Answer for ").to_owned();
    let (refused, index) = {
        let mut log = log.lock().unwrap();
        let refused = (log.len() + 1).is_multiple_of(refuse_every);
        log.push(Arrival {
            at,
            run: run.load(Ordering::SeqCst),
            task: task.clone(),
            refused,
            refusal_sent: None,
        });
        (refused, log.len() - 1)
    };
    if refused {
        let error = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        let _ = write!(
            stream,
            "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after-ms: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{error}",
            RETRY_AFTER.as_millis(),
            error.len()
        );
        let _ = stream.flush();
        log.lock().unwrap()[index].refusal_sent = Some(Instant::now());
        return;
    }
    let event = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        )
    };
    let body = [
        event(json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 20, "output_tokens": 0}}})),
        event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("done {task}")}})),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}})),
        event(json!({"type": "message_stop"})),
    ]
    .concat();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
    );
}

/// A batch against `server` with the rate limit in a config file.
fn limited_batch(server: &LimitedServer, dir: &Path) -> std::process::Command {
    let config = dir.join("config.yaml");
    // Under the server's 5 a second, as one sets a shared account's limit: six requests
    // then take 1.5 s, so a loaded machine that stamps arrivals late (0.23 s late has been
    // seen) does not make a paced run look like a burst.
    std::fs::write(
        &config,
        "providers:\n  anthropic:\n    requests_per_minute: 200\n",
    )
    .unwrap();
    let mut cmd = command();
    cmd.env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .arg("batch")
        .arg(dir.join("tasks.jsonl"))
        .arg("--out")
        .arg(dir.join("out"))
        .args(["--concurrency", "16", "--json", "--yes", "--config"])
        .arg(&config)
        .args(["--provider", "anthropic", "--model", "claude-haiku-4-5"]);
    cmd
}

/// The stored results of a batch directory, by id.
fn results(out: &Path) -> BTreeMap<String, Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| (r["id"].as_str().unwrap().to_owned(), r))
        .collect()
}

#[test]
fn fifty_tasks_stay_under_the_rate_limit_through_429s_and_a_kill() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let ids: Vec<String> = (0..50).map(|i| format!("task-{i:02}")).collect();
    let tasks: String = ids
        .iter()
        .map(|id| {
            format!(
                "{}\n",
                json!({"id": id, "prompt": format!("Answer for {id}")})
            )
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), tasks).unwrap();
    let server = LimitedServer::start(8);

    // The first run is killed once 20 tasks have finished.
    let mut child = limited_batch(&server, dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut finished_first = 0;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if line.contains("\"type\":\"task\"") {
            finished_first += 1;
        }
        if finished_first == 20 {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let after_kill = results(&dir.join("out"));
    assert!(
        after_kill.len() >= 20 && after_kill.len() < 50,
        "{}",
        after_kill.len()
    );

    // The second run does only the missing ones.
    server.run.store(2, Ordering::SeqCst);
    let output = limited_batch(&server, dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let last = String::from_utf8_lossy(&output.stdout);
    let summary: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["by_status"]["complete"], 50, "{summary}");
    assert_eq!(summary["ran"], 50 - after_kill.len(), "{summary}");

    // Every task completed once, with its own answer.
    let all = results(&dir.join("out"));
    assert_eq!(all.keys().cloned().collect::<Vec<_>>(), ids);
    for (id, result) in &all {
        assert_eq!(result["status"], "complete", "{result}");
        assert_eq!(result["answer"], format!("done {id}"), "{result}");
    }
    let arrivals = server.arrivals();
    let answered = |run: usize| -> Vec<String> {
        arrivals
            .iter()
            .filter(|a| a.run == run && !a.refused)
            .map(|a| a.task.clone())
            .collect()
    };
    let second: Vec<String> = answered(2);
    for id in after_kill.keys() {
        assert!(
            !second.contains(id),
            "{id} finished before the kill and was asked again"
        );
    }
    let second_set: BTreeSet<&String> = second.iter().collect();
    assert_eq!(
        second_set.len(),
        second.len(),
        "a task asked twice in one run: {second:?}"
    );
    let asked: BTreeSet<String> = answered(1).into_iter().chain(second).collect();
    assert_eq!(asked.len(), 50);

    // Within each run: never six requests within a second (the server's limit is five), and
    // nothing in the wait a 429 asked for, from any task.
    let refused = arrivals.iter().filter(|a| a.refused).count();
    assert!(refused >= 5, "{refused} 429s");
    for run in [1, 2] {
        let mut times: Vec<Instant> = arrivals
            .iter()
            .filter(|a| a.run == run)
            .map(|a| a.at)
            .collect();
        times.sort();
        let tightest = times.windows(6).map(|w| w[5] - w[0]).min().unwrap();
        eprintln!("run {run}: the tightest six requests took {tightest:?}");
        assert!(
            tightest >= Duration::from_secs(1),
            "run {run}: six requests in {tightest:?}"
        );
        // Counted from when the 429 had been written, which is before any client read it:
        // a request arriving within the wait after that was sent inside it, with no slack
        // for a late stamp (the limiter spaces requests, so none is in flight then).
        for refusal in arrivals.iter().filter(|a| a.run == run && a.refused) {
            let sent = refusal
                .refusal_sent
                .expect("a refusal is stamped when written");
            let soon = times
                .iter()
                .filter(|t| **t > sent && **t - sent < RETRY_AFTER)
                .count();
            assert_eq!(soon, 0, "run {run}: requests went out inside a 429's wait");
        }
    }
}

/// The demo's replayed run as six tasks.
fn demo_tasks(dir: &Path) {
    let root = repo_root();
    let workspace = dir.join("workspace");
    copy_dir(&root.join("examples/demo/workspace"), &workspace);
    let prompt = std::fs::read_to_string(root.join("examples/demo/prompt.txt")).unwrap();
    let replay = root.join("examples/demo/transcript.jsonl");
    let tasks: String = (0..6)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("demo-{i}"), "prompt": prompt.trim(), "workspace": "workspace", "replay": replay})
            )
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), tasks).unwrap();
}

fn batch(dir: &Path, out: &str, extra: &[&str]) -> std::process::Command {
    let mut cmd = command();
    cmd.arg("batch")
        .arg(dir.join("tasks.jsonl"))
        .arg("--out")
        .arg(dir.join(out))
        .args(["--yes", "--no-journal"])
        .args(extra);
    cmd
}

/// What must be the same however the batch was split: status, answer, files and patch.
fn comparable(out: &Path) -> BTreeMap<String, (Value, Value, Value, String)> {
    results(out)
        .into_iter()
        .map(|(id, r)| {
            let patch = std::fs::read_to_string(out.join("tasks").join(&id).join("changes.patch"))
                .unwrap_or_default();
            (
                id,
                (
                    r["status"].clone(),
                    r["answer"].clone(),
                    r["changed_files"].clone(),
                    patch,
                ),
            )
        })
        .collect()
}

/// A manifest of `deploy/kubernetes/`.
fn manifest(name: &str) -> serde_yaml::Value {
    let path = repo_root().join("deploy/kubernetes").join(name);
    serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A container's argument with the pod's paths moved into `dir` and its variables set.
fn local(arg: &str, dir: &Path, vars: &[(&str, String)]) -> String {
    let mut arg = arg
        .replace("/config/", &format!("{}/config/", dir.display()))
        .replace("/results/", &format!("{}/results/", dir.display()));
    for (name, value) in vars {
        arg = arg.replace(&format!("$({name})"), value);
    }
    arg
}

/// The Indexed Job of `deploy/kubernetes/` run here: its container's own arguments, for
/// each completion index, as two processes at once on the ConfigMap's config; then the
/// merge Job's own command. The merged results equal one unsharded batch's.
#[test]
fn the_kubernetes_job_s_two_shards_merge_to_the_unsharded_batch() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let config_map = manifest("configmap.yaml");
    let config = config_map["data"]["config.yaml"].as_str().unwrap();
    std::fs::write(dir.join("config/config.yaml"), config).unwrap();
    demo_tasks(&dir.join("config"));

    let job = manifest("job.yaml");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let shards = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64(), Some(shards));
    let container = &spec["template"]["spec"]["containers"][0];
    let env = container["env"].as_sequence().unwrap();
    let var = |name: &str| {
        env.iter()
            .find(|e| e["name"].as_str() == Some(name))
            .unwrap()
    };
    assert_eq!(
        var("SHARDS")["value"].as_str(),
        Some(shards.to_string().as_str())
    );
    assert_eq!(
        var("SHARD")["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
    );
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "batch");

    // The shards list disjoint ids that together are every task.
    let mut listed = BTreeSet::new();
    for index in 0..shards {
        let out = command()
            .arg("batch")
            .arg(dir.join("config/tasks.jsonl"))
            .args(["--list", "--shard", &format!("{index}/{shards}")])
            .output()
            .unwrap();
        for id in String::from_utf8_lossy(&out.stdout).lines() {
            assert!(listed.insert(id.to_owned()), "{id} is in two shards");
        }
    }
    assert_eq!(listed.len(), 6);

    // Every pod at once, each with its completion index.
    let pods: Vec<_> = (0..shards)
        .map(|index| {
            let vars = [("SHARD", index.to_string()), ("SHARDS", shards.to_string())];
            command()
                .args(args.iter().map(|a| local(a, dir, &vars)))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for pod in pods {
        let out = pod.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // The merge Job's own command, with this binary as `wonopcode`.
    let merge = manifest("merge-job.yaml");
    let merge_container = &merge["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(merge_container["command"][0].as_str(), Some("/bin/sh"));
    let script = local(merge_container["args"][0].as_str().unwrap(), dir, &[]).replace(
        "exec wonopcode ",
        &format!("exec {} ", crate::support::bin().display()),
    );
    let merged = std::process::Command::new("/bin/sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    assert!(
        String::from_utf8_lossy(&merged.stdout).contains("merged 6 task(s) from 2 directories")
    );

    // One batch of the whole file, for comparison.
    let whole = command()
        .arg("batch")
        .arg(dir.join("config/tasks.jsonl"))
        .arg("--out")
        .arg(dir.join("whole"))
        .args(["--yes", "--sandbox", "full-access", "--config"])
        .arg(dir.join("config/config.yaml"))
        .output()
        .unwrap();
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let expected = comparable(&dir.join("whole"));
    assert_eq!(expected.len(), 6);
    assert!(
        expected
            .values()
            .all(|(status, _, files, patch)| status == "complete"
                && files == &json!(["TODO_REPORT.md"])
                && patch.contains("+++ b/TODO_REPORT.md"))
    );
    assert_eq!(comparable(&dir.join("results/merged")), expected);
    // The source workspace is untouched: each task worked on its own copy.
    assert!(!dir.join("config/workspace/TODO_REPORT.md").exists());
}

#[test]
fn bad_batches_say_what_and_where() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    std::fs::write(
        dir.join("tasks.jsonl"),
        "{\"id\":\"a\",\"prompt\":\"x\"}\n{\"id\":\"a\",\"prompt\":\"y\"}\n",
    )
    .unwrap();
    let out = batch(dir, "out", &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tasks.jsonl:2: the id `a` is used by an earlier task"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let out = command()
        .args(["batch", "merge"])
        .arg(dir.join("missing"))
        .arg("--out")
        .arg(dir.join("m"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a batch's results directory"));
}

#[test]
fn a_task_cannot_take_a_workspace_from_outside_the_tasks_files_directory() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let keys = dir.join("home/.ssh");
    std::fs::create_dir_all(&keys).unwrap();
    std::fs::write(keys.join("id_ed25519"), "PRIVATE KEY").unwrap();
    let tasks = dir.join("tasks");
    std::fs::create_dir_all(tasks.join("ws")).unwrap();
    std::fs::write(
        tasks.join("tasks.jsonl"),
        "{\"id\":\"ok\",\"prompt\":\"x\",\"workspace\":\"ws\"}\n{\"id\":\"steal\",\"prompt\":\"x\",\"workspace\":\"../home/.ssh\"}\n",
    )
    .unwrap();
    // Named with its directory, and as a bare name in the current directory (whose parent
    // is the empty path).
    let named = batch(&tasks, "out", &[]);
    let mut bare = command();
    bare.current_dir(&tasks).args([
        "batch",
        "tasks.jsonl",
        "--out",
        "out",
        "--yes",
        "--no-journal",
    ]);
    for mut run in [named, bare] {
        let out = run.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("tasks.jsonl:2: the workspace") && stderr.contains("is outside"),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let copied = walk_files(&tasks.join("out"));
        assert!(
            !copied.iter().any(|f| f.ends_with("id_ed25519")),
            "{copied:?}"
        );
    }
}

/// Every file beneath `dir` (none when it does not exist).
pub(crate) fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}
