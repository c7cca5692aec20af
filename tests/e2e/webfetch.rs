//! `webfetch` on the real binary against a loopback HTTP server that misbehaves the ways
//! real ones do: a page with scripts, a redirect loop, a 50 MB body, a body that never ends,
//! a page in Latin-1, an image. And `websearch` against the same server speaking SearXNG's
//! JSON API.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Scratch, call, done, events, stderr, text, tool_results};

/// Serves every connection on its own thread until the test process ends; the path picks
/// the answer.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    base
}

fn answer(mut stream: TcpStream) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&request);
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let head = |status: &str, kind: &str, length: usize| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n"
        )
    };
    let _ = match path.as_str() {
        "/page" => {
            let body = "<html><head><style>p{}</style><script>steal()</script></head><body><h1>Release notes</h1><p>Version <b>2.0</b> adds <a href=\"/docs\">docs</a>.</p></body></html>";
            stream.write_all((head("200 OK", "text/html; charset=utf-8", body.len()) + body).as_bytes())
        }
        "/loop" => stream.write_all(
            b"HTTP/1.1 302 Found\r\nlocation: /loop\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        ),
        "/big" => {
            let size = 50 << 20;
            let chunk = vec![b'a'; 64 << 10];
            let mut sent = stream.write_all(head("200 OK", "text/plain", size).as_bytes());
            let mut left = size;
            while sent.is_ok() && left > 0 {
                let n = left.min(chunk.len());
                sent = stream.write_all(&chunk[..n]);
                left -= n;
            }
            sent
        }
        "/slow" => {
            let mut sent = stream.write_all(head("200 OK", "text/plain", 1000).as_bytes());
            for _ in 0..100 {
                if sent.is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
                sent = stream.write_all(b"x");
            }
            sent
        }
        "/latin1" => {
            let body = b"caf\xe9 cr\xe8me";
            stream
                .write_all(head("200 OK", "text/plain; charset=ISO-8859-1", body.len()).as_bytes())
                .and_then(|()| stream.write_all(body))
        }
        p if p.starts_with("/search?") && p.contains("format=json") => {
            let body = json!({"query": "wonopcode", "results": [
                {"url": "https://example.org/a", "title": "First hit", "content": "About   the\n first."},
                {"url": "https://example.org/b", "title": "Second hit", "content": "About the second."}
            ]})
            .to_string();
            stream.write_all((head("200 OK", "application/json", body.len()) + &body).as_bytes())
        }
        "/image" => stream.write_all((head("200 OK", "image/png", 4) + "\u{89}PNG").as_bytes()),
        _ => stream.write_all(head("404 Not Found", "text/plain", 0).as_bytes()),
    };
}

/// Runs one `webfetch` call per argument object, each in its own response, and returns
/// the calls' items in order.
fn fetch_all(calls: &[Value]) -> Vec<Value> {
    let s = Scratch::new();
    let mut turns: Vec<Vec<Value>> = calls
        .iter()
        .enumerate()
        .map(|(i, args)| {
            let mut turn = call(&format!("w{i}"), "webfetch", &args.to_string());
            turn.push(done("tool_use"));
            turn
        })
        .collect();
    turns.push(vec![text("fetched"), done("end_turn")]);
    let t = s.transcript("t.jsonl", &turns);
    let out = s.run_json(&t, &["--allow", "webfetch"], "fetch them");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    tool_results(&events(&out))
}

#[test]
fn webfetch_reads_pages_as_markdown_and_survives_hostile_servers() {
    let base = serve();
    let items = fetch_all(&[
        json!({"url": format!("{base}/page")}),
        json!({"url": format!("{base}/loop")}),
        json!({"url": format!("{base}/big")}),
        json!({"url": format!("{base}/slow"), "timeout": 1}),
        json!({"url": format!("{base}/latin1")}),
        json!({"url": format!("{base}/image")}),
        json!({"url": "file:///etc/passwd"}),
    ]);
    let output = |i: usize| items[i]["output"].as_str().unwrap_or_default().to_owned();

    let page = output(0);
    assert!(
        page.starts_with(&format!("200 {base}/page\n\n# Release notes")),
        "{page}"
    );
    assert!(
        page.contains("Version **2.0** adds [docs](/docs)."),
        "{page}"
    );
    assert!(!page.contains("steal"), "scripts are left out: {page}");

    assert_eq!(items[1]["status"], "failed");
    assert!(output(1).contains("more than 5 redirects"), "{}", output(1));

    assert_eq!(items[2]["status"], "completed", "{}", items[2]);
    assert!(
        output(2).contains("(the body was cut at 5 MiB)"),
        "{}",
        &output(2)[..200]
    );

    assert_eq!(items[3]["status"], "failed");
    assert!(
        output(3).ends_with("did not finish within 1 s"),
        "{}",
        output(3)
    );

    assert!(output(4).ends_with("café crème"), "{}", output(4));

    assert_eq!(items[5]["status"], "failed");
    assert!(
        output(5).contains("is `image/png`, not text"),
        "{}",
        output(5)
    );

    assert!(
        output(6).contains("http and https URLs only"),
        "{}",
        output(6)
    );
}

#[test]
fn webfetch_asks_first_and_nobody_to_ask_means_not_fetched() {
    let base = serve();
    let s = Scratch::new();
    let mut turn = call(
        "w1",
        "webfetch",
        &json!({"url": format!("{base}/page")}).to_string(),
    );
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("ok"), done("end_turn")]]);
    let out = s.run_json(&t, &[], "fetch");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let item = &tool_results(&events(&out))[0];
    assert_eq!(item["status"], "declined", "{item}");
    assert!(
        item["output"]
            .as_str()
            .unwrap()
            .contains("--allow 'webfetch:127.0.0.1'"),
        "{item}"
    );
}

#[test]
fn websearch_exists_only_with_an_engine_and_lists_its_results() {
    let base = serve();
    let s = Scratch::new();
    let mut turn = call("q1", "websearch", r#"{"query": "wonopcode"}"#);
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("ok"), done("end_turn")]]);
    let config = s.config(&format!("websearch:\n  engine: searxng\n  url: {base}\n"));
    let out = s.run_json(&t, &["--config", &config, "--allow", "websearch"], "search");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let item = &tool_results(&events(&out))[0];
    assert_eq!(
        item["output"],
        "1. First hit\n   https://example.org/a\n   About the first.\n2. Second hit\n   https://example.org/b\n   About the second.",
        "{item}"
    );
    // Without an engine there is no tool, not one that fails.
    let out = s.run_json(&t, &[], "search");
    let item = &tool_results(&events(&out))[0];
    assert!(
        item["output"]
            .as_str()
            .unwrap()
            .starts_with("unknown tool `websearch`"),
        "{item}"
    );
    // Brave without its token: one line before anything runs.
    let config = s.config("websearch: {engine: brave}\n");
    let out = crate::support::wonopcode()
        .env_remove("BRAVE_API_KEY")
        .args(["--config", &config, "--replay"])
        .arg(&t)
        .arg("-C")
        .arg(s.ws())
        .arg("search")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("websearch: Brave Search needs a token: set BRAVE_API_KEY"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_fetch_allowed_for_one_host_follows_no_redirect_to_another() {
    // The metadata service stand-in: another loopback address, counting who asks.
    let metadata = TcpListener::bind("127.0.0.2:0").unwrap();
    let metadata_url = format!(
        "http://{}/latest/meta-data/",
        metadata.local_addr().unwrap()
    );
    metadata.set_nonblocking(true).unwrap();
    // The allowed host redirects there.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let target = metadata_url.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 2048];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                format!("HTTP/1.1 302 Found\r\nlocation: {target}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").as_bytes(),
            );
        }
    });
    let s = Scratch::new();
    let mut turn = call(
        "w1",
        "webfetch",
        &json!({"url": format!("{base}/docs")}).to_string(),
    );
    turn.push(done("tool_use"));
    let t = s.transcript("t.jsonl", &[turn, vec![text("ok"), done("end_turn")]]);
    let out = s.run_json(&t, &["--allow", "webfetch:127.0.0.1"], "fetch");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let item = &tool_results(&events(&out))[0];
    assert_eq!(item["status"], "failed", "{item}");
    let said = item["output"].as_str().unwrap_or_default();
    assert!(
        said.contains("on another host than the one approved"),
        "{item}"
    );
    assert!(
        metadata.accept().is_err(),
        "the redirect reached the metadata stand-in"
    );
}
