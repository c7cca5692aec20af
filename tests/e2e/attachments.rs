//! Images and documents attached to a prompt, through the real binary against a loopback
//! Anthropic API: `-i/--image` (a file, stdin), `@path` in the prompt, what goes on the
//! wire, the recording that replays only with the same image, and the bad input that stops
//! a run with one line before anything is sent.

use serde_json::Value;

use crate::providers::{Scripted, anthropic_turns, serve_scripted};
use crate::support::{Scratch, stderr, wonopcode};

/// The 8-byte PNG signature and the start of its header: enough for the bytes to say PNG.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-first";
const OTHER_PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-second";

fn answering(responses: usize) -> crate::providers::Loopback {
    serve_scripted(
        (0..responses)
            .map(|_| Scripted {
                status: 200,
                content_type: "text/event-stream",
                headers: "",
                body: anthropic_turns().pop().unwrap().into_bytes(),
            })
            .collect(),
    )
}

fn live(scratch: &Scratch, base_url: &str) -> assert_cmd::Command {
    let mut cmd = wonopcode();
    cmd.env("ANTHROPIC_API_KEY", "k")
        .args(["--provider", "anthropic", "--base-url", base_url, "-C"])
        .arg(scratch.ws());
    cmd
}

/// The content blocks of the first message of request `index`.
fn sent_blocks(server: &crate::providers::Loopback, index: usize) -> Vec<Value> {
    let body: Value = serde_json::from_str(&server.requests.lock().unwrap()[index]).unwrap();
    body["messages"][0]["content"].as_array().unwrap().clone()
}

#[test]
fn an_image_flag_and_a_mention_reach_the_model_and_replay_only_with_the_same_image() {
    let scratch = Scratch::new();
    let shot = scratch.outside("shot.png");
    std::fs::write(&shot, PNG).unwrap();
    std::fs::write(scratch.ws().join("diagram.png"), OTHER_PNG).unwrap();
    let recorded = scratch.outside("recorded.jsonl");
    let server = answering(1);
    let prompt = "what is in @diagram.png?";
    let out = live(&scratch, &server.base_url)
        .arg("-i")
        .arg(&shot)
        .arg("--record")
        .arg(&recorded)
        .arg(prompt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("attached: image/png").count(), 2, "{err}");
    let blocks = sent_blocks(&server, 0);
    let types: Vec<&str> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["image", "image", "text"],
        "images first, then the prompt"
    );
    use base64::Engine as _;
    let encoded = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    assert_eq!(blocks[0]["source"]["data"], encoded(PNG));
    assert_eq!(blocks[1]["source"]["data"], encoded(OTHER_PNG));
    assert_eq!(blocks[2]["text"], prompt, "the mention stays in the text");

    let replay = |image: &std::path::Path| {
        wonopcode()
            .arg("--replay")
            .arg(&recorded)
            .arg("-C")
            .arg(scratch.ws())
            .arg("-i")
            .arg(image)
            .arg(prompt)
            .output()
            .unwrap()
    };
    let same = replay(&shot);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    let other = scratch.outside("other.png");
    std::fs::write(&other, OTHER_PNG).unwrap();
    let diverged = replay(&other);
    assert_ne!(diverged.status.code(), Some(0));
    assert!(
        stderr(&diverged).contains("(attached image/png"),
        "the divergence shows the attachment, not its bytes: {}",
        stderr(&diverged)
    );
}

#[test]
fn an_image_on_stdin_goes_with_the_prompt_given_as_an_argument_on_either_loop() {
    for loop_type in ["standard", "wasm"] {
        let scratch = Scratch::new();
        let server = answering(1);
        let out = live(&scratch, &server.base_url)
            .args(["--loop-type", loop_type, "-i", "-", "describe it"])
            .write_stdin(PNG)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{loop_type}: {}", stderr(&out));
        let blocks = sent_blocks(&server, 0);
        assert_eq!(
            blocks[0]["source"]["media_type"], "image/png",
            "{loop_type}"
        );
        assert_eq!(blocks[1]["text"], "describe it", "{loop_type}");
    }
}

#[test]
fn bad_attachments_stop_the_run_with_one_line_before_anything_is_sent() {
    let scratch = Scratch::new();
    scratch.file("notes.png", "not an image at all");
    let server = answering(0);
    let cases: [(&[&str], &str); 4] = [
        (
            &["-i", "notes.png", "look"],
            "notes.png is not a PNG, JPEG, GIF, WebP image or a PDF (read from its first bytes)",
        ),
        (
            &["look at @gone.png"],
            "cannot read @gone.png: no such file",
        ),
        (
            &["-i", "-"],
            "`--image -` reads the image from stdin, so give the prompt as an argument",
        ),
        (
            &["-i", "data:image/png;base64,????", "look"],
            "the data URL is not `data:<image type>;base64,<data>`",
        ),
    ];
    for (args, said) in cases {
        let out = live(&scratch, &server.base_url)
            .current_dir(scratch.ws())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(said), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
    assert!(server.requests.lock().unwrap().is_empty());
}

#[test]
fn a_model_that_reads_only_text_is_refused_before_the_request() {
    let scratch = Scratch::new();
    let shot = scratch.outside("shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let server = answering(0);
    let out = wonopcode()
        .env("DEEPSEEK_API_KEY", "k")
        .args([
            "--provider",
            "deepseek",
            "--model",
            "deepseek-chat",
            "--base-url",
        ])
        .arg(&server.base_url)
        .arg("-C")
        .arg(scratch.ws())
        .arg("-i")
        .arg(&shot)
        .arg("what is this?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("deepseek-chat (deepseek) does not take images"),
        "{err}"
    );
    assert!(server.requests.lock().unwrap().is_empty());
}

/// A run's attachments are kept in its journal, so a fork (and a resume) gives its prompts
/// again with them: the forked run's request carries the same image as the original's.
#[test]
fn a_fork_gives_the_prompt_again_with_its_image() {
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let shot = scratch.outside("shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let runs = scratch.outside("runs");
    let first = serve_scripted(
        anthropic_turns()
            .into_iter()
            .map(|body| Scripted {
                status: 200,
                content_type: "text/event-stream",
                headers: "",
                body: body.into_bytes(),
            })
            .collect(),
    );
    let out = live(&scratch, &first.base_url)
        .env("WONOPCODE_RUNS_DIR", &runs)
        .args(["--yes", "-i"])
        .arg(&shot)
        .arg("what do my notes say?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (id, run) = crate::resume::only_run(&runs);
    assert!(run.join("attachments/prompt-0.json").is_file());

    let second = answering(1);
    let forked = wonopcode()
        .env("WONOPCODE_RUNS_DIR", &runs)
        .env("ANTHROPIC_API_KEY", "k")
        .args(["fork", &id, "--at", "0:1", "-C"])
        .arg(scratch.ws())
        .args(["--", "--base-url", &second.base_url])
        .output()
        .unwrap();
    assert_eq!(forked.status.code(), Some(0), "{}", stderr(&forked));
    let blocks = sent_blocks(&second, 0);
    assert_eq!(blocks[0]["type"], "image", "{blocks:?}");
    assert_eq!(
        blocks[0]["source"]["data"],
        sent_blocks(&first, 0)[0]["source"]["data"]
    );
}

#[test]
fn a_mention_that_is_a_link_out_of_the_workspace_is_not_sent() {
    let scratch = Scratch::new();
    // What a cloned repository can hold: a document that is a link to the person's files.
    let private = scratch.outside("Documents/passport.png");
    std::fs::create_dir_all(private.parent().unwrap()).unwrap();
    std::fs::write(&private, PNG).unwrap();
    std::fs::create_dir_all(scratch.ws().join("docs")).unwrap();
    std::os::unix::fs::symlink(&private, scratch.ws().join("docs/spec.png")).unwrap();
    // A link that stays inside is as good as its target.
    std::fs::write(scratch.ws().join("shot.png"), OTHER_PNG).unwrap();
    std::os::unix::fs::symlink("shot.png", scratch.ws().join("latest.png")).unwrap();
    let server = answering(1);
    let out = live(&scratch, &server.base_url)
        .arg("what is in @docs/spec.png?")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("@docs/spec.png") && err.contains("leads out of the workspace"),
        "{err}"
    );
    assert!(
        server.requests.lock().unwrap().is_empty(),
        "nothing is sent"
    );
    let out = live(&scratch, &server.base_url)
        .arg("what is in @latest.png?")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    use base64::Engine as _;
    let sent = sent_blocks(&server, 0);
    assert_eq!(
        sent[0]["source"]["data"],
        base64::engine::general_purpose::STANDARD.encode(OTHER_PNG)
    );
}
