//! Claude on Amazon Bedrock and Google Vertex AI through the real binary, chosen the way
//! Claude Code is (`CLAUDE_CODE_USE_BEDROCK=1`, `CLAUDE_CODE_USE_VERTEX=1`): credentials from
//! where the AWS and Google tools keep them (an AWS profile in the shared files; a
//! service-account key file), each request signed or carrying a token, the stream read, and
//! the run recorded and replayed. A missing credential fails the run with one line that says
//! where it was looked for; with Claude Code's `CLAUDE_CODE_SKIP_*_AUTH`, none is needed.

use std::path::Path;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use serde_json::Value;
use wonopcode_providers::bedrock::auth::signature_headers;
use wonopcode_providers::bedrock::frames::sse_as_frames;

use crate::providers::{
    Loopback, Scripted, anthropic_turns, final_text, live_and_replayed, serve_scripted,
};
use crate::support::{Scratch, events, repo_root, stderr, wonopcode};

/// A header's value in a request head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// `YYYYMMDDTHHMMSSZ` as a time.
fn amz_date(text: &str) -> SystemTime {
    let n = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
    let (year, month, day) = (n(0..4), n(4..6), n(6..8));
    // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + n(9..11) * 3600 + n(11..13) * 60 + n(13..15);
    SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap())
}

/// The environment of a machine whose only AWS credentials are `profile`'s in `home`'s
/// shared files, and whose metadata endpoints are off.
fn aws_home(home: &Path, credentials: &str, config: &str) -> Vec<(String, String)> {
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    std::fs::write(home.join(".aws/credentials"), credentials).unwrap();
    std::fs::write(home.join(".aws/config"), config).unwrap();
    vec![
        ("HOME".into(), home.display().to_string()),
        ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
        ("CLAUDE_CODE_USE_BEDROCK".into(), "1".into()),
    ]
}

/// A loopback Bedrock answering the notes turn: Anthropic's events in event-stream frames.
fn bedrock_server() -> Loopback {
    serve_scripted(
        anthropic_turns()
            .iter()
            .map(|turn| Scripted {
                status: 200,
                content_type: "application/vnd.amazon.eventstream",
                headers: "",
                body: sse_as_frames(turn),
            })
            .collect(),
    )
}

/// A loopback Vertex answering the notes turn (Anthropic's own stream), after `first`
/// replies (a token exchange).
fn vertex_server(first: Vec<Scripted>) -> Loopback {
    let turns = anthropic_turns().into_iter().map(|turn| Scripted {
        status: 200,
        content_type: "text/event-stream",
        headers: "",
        body: turn.into_bytes(),
    });
    serve_scripted(first.into_iter().chain(turns).collect())
}

/// The notes turn, live with `env` against `base_url` and then replayed (both must tell the
/// same); it must answer from the notes.
fn live_then_replay(scratch: &Scratch, env: &[(String, String)], model: &str, base_url: &str) {
    let live = live_and_replayed(scratch, env, &["--model", model], base_url, &[]);
    assert_eq!(final_text(&live), "The notes say: remember the milk.");
}

#[test]
fn bedrock_signs_with_a_profiles_credentials_and_the_run_replays() {
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let mut env = aws_home(
        &scratch.outside("home"),
        "[work]\naws_access_key_id = AKIDPROFILEWORK\naws_secret_access_key = profile/secret/key\naws_session_token = session-of-work\n",
        "[profile work]\nregion = eu-west-3\n",
    );
    let server = bedrock_server();
    env.push(("AWS_PROFILE".into(), "work".into()));
    live_then_replay(&scratch, &env, "test-model", &server.base_url);

    let heads = server.heads.lock().unwrap().clone();
    let bodies = server.requests.lock().unwrap().clone();
    assert_eq!(heads.len(), 2);
    let credentials = Credentials::new(
        "AKIDPROFILEWORK",
        "profile/secret/key",
        Some("session-of-work".into()),
        None,
        "profile",
    );
    let url = format!(
        "{}/model/test-model/invoke-with-response-stream",
        server.base_url
    );
    for (head, body) in heads.iter().zip(&bodies) {
        assert!(
            head.starts_with("POST /v1/model/test-model/invoke-with-response-stream HTTP/1.1"),
            "{head}"
        );
        // The server's side of SigV4: the same request, signed with the profile's secret at
        // the time the request says, gives the signature it carries.
        let date = header(head, "x-amz-date").expect("x-amz-date");
        let expected = signature_headers(
            "POST",
            &url,
            &[("content-type", "application/json")],
            body.as_bytes(),
            &credentials,
            "eu-west-3",
            "bedrock",
            amz_date(date),
        )
        .unwrap();
        let expected = |name: &str| {
            expected
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header(head, "authorization"), expected("authorization"));
        assert!(
            header(head, "authorization")
                .is_some_and(|a| a.contains("Credential=AKIDPROFILEWORK/")
                    && a.contains("/eu-west-3/bedrock/aws4_request")),
            "{head}"
        );
        assert_eq!(
            header(head, "x-amz-security-token"),
            Some("session-of-work")
        );
        let sent: Value = serde_json::from_str(body).unwrap();
        assert_eq!(sent["anthropic_version"], "bedrock-2023-05-31");
        assert!(sent.get("model").is_none(), "{sent}");
    }
    // The second request carries the first's signed thinking back, as Anthropic's API wants.
    assert!(bodies[1].contains("SIG-abc"), "{}", bodies[1]);
}

/// Runs a prompt in `scratch` with `env` added, expecting it to fail; the line of its
/// stderr that holds `needle`.
fn failure_line(scratch: &Scratch, env: &[(String, String)], needle: &str) -> String {
    let out = wonopcode()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args([
            "--model",
            "test-model",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .arg("-C")
        .arg(scratch.ws())
        .arg("hi")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    err.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{err}"))
        .to_owned()
}

#[test]
fn bedrock_without_credentials_says_where_it_looked() {
    let scratch = Scratch::new();
    let mut env = aws_home(&scratch.outside("home"), "", "");
    env.push(("AWS_REGION".into(), "us-east-1".into()));
    let line = failure_line(&scratch, &env, "no AWS credentials");
    assert!(
        line.contains("AWS_ACCESS_KEY_ID")
            && line.contains("profile `default`")
            && line.contains("AWS_BEARER_TOKEN_BEDROCK"),
        "{line}"
    );
}

/// A service-account key file whose token endpoint is `token_uri`.
fn service_account(scratch: &Scratch, token_uri: &str) -> std::path::PathBuf {
    let key = std::fs::read_to_string(
        repo_root().join("tests/fixtures/google/throwaway-service-account-key.pem"),
    )
    .unwrap();
    let file = serde_json::json!({
        "type": "service_account",
        "project_id": "proj-1",
        "private_key_id": "k1",
        "private_key": key,
        "client_email": "runner@proj-1.iam.gserviceaccount.com",
        "client_id": "1",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    });
    let path = scratch.outside("service-account.json");
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

#[test]
fn vertex_exchanges_a_service_account_key_for_a_token_and_the_run_replays() {
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let token = Scripted {
        status: 200,
        content_type: "application/json",
        headers: "",
        body: br#"{"access_token":"ya29.loopback-token","expires_in":3599,"token_type":"Bearer"}"#
            .to_vec(),
    };
    let server = vertex_server(vec![token]);
    let key = service_account(&scratch, &format!("{}/token", server.base_url));
    let env = [
        ("HOME", scratch.outside("home").display().to_string()),
        ("GOOGLE_APPLICATION_CREDENTIALS", key.display().to_string()),
        ("CLAUDE_CODE_USE_VERTEX", "1".to_owned()),
        ("ANTHROPIC_VERTEX_PROJECT_ID", "proj-1".to_owned()),
    ]
    .map(|(k, v)| (k.to_owned(), v));
    live_then_replay(&scratch, &env, "claude-test@1", &server.base_url);

    let heads = server.heads.lock().unwrap().clone();
    let bodies = server.requests.lock().unwrap().clone();
    // One token exchange: a JWT signed with the key, for the cloud-platform scope.
    assert!(
        heads[0].starts_with("POST /v1/token HTTP/1.1"),
        "{}",
        heads[0]
    );
    assert!(
        bodies[0].contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
            && bodies[0].contains("assertion="),
        "{}",
        bodies[0]
    );
    assert_eq!(heads.len(), 3, "the token is reused: {heads:?}");
    for (head, body) in heads[1..].iter().zip(&bodies[1..]) {
        assert!(
            head.starts_with("POST /v1/claude-test@1:streamRawPredict HTTP/1.1"),
            "{head}"
        );
        assert_eq!(
            header(head, "authorization"),
            Some("Bearer ya29.loopback-token")
        );
        let sent: Value = serde_json::from_str(body).unwrap();
        assert_eq!(sent["anthropic_version"], "vertex-2023-10-16");
        assert!(sent.get("model").is_none(), "{sent}");
    }
}

#[test]
fn vertex_with_a_missing_key_file_says_where_it_looked() {
    let scratch = Scratch::new();
    let env = [
        ("HOME", scratch.outside("home").display().to_string()),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            scratch.outside("missing-key.json").display().to_string(),
        ),
        ("CLAUDE_CODE_USE_VERTEX", "1".to_owned()),
        ("ANTHROPIC_VERTEX_PROJECT_ID", "proj-1".to_owned()),
    ]
    .map(|(k, v)| (k.to_owned(), v));
    let line = failure_line(&scratch, &env, "no Google credentials");
    assert!(
        line.contains("missing-key.json") && line.contains("application_default_credentials.json"),
        "{line}"
    );
}

#[test]
fn a_gateway_that_signs_for_itself_gets_requests_without_credentials() {
    // Claude Code's LLM-gateway set-up: the cloud's API through a gateway holding the cloud's
    // credentials, with `CLAUDE_CODE_SKIP_*_AUTH=1` and none on this machine.
    let scratch = Scratch::new();
    scratch.file("notes.txt", "remember the milk\n");
    let unsigned = |heads: Vec<String>, path: &str| {
        assert_eq!(heads.len(), 2, "{heads:?}");
        for head in heads {
            assert!(head.starts_with(&format!("POST {path} HTTP/1.1")), "{head}");
            for credential in ["authorization", "x-amz-date", "x-amz-security-token"] {
                assert_eq!(header(&head, credential), None, "{head}");
            }
            // The gateway's own key, from Claude Code's custom headers.
            assert_eq!(header(&head, "x-gateway-key"), Some("gk"), "{head}");
        }
    };

    let bedrock = bedrock_server();
    let mut env = aws_home(&scratch.outside("aws-home"), "", "");
    env.push(("AWS_REGION".into(), "us-east-1".into()));
    env.push(("CLAUDE_CODE_SKIP_BEDROCK_AUTH".into(), "1".into()));
    env.push((
        "ANTHROPIC_CUSTOM_HEADERS".into(),
        "X-Gateway-Key: gk".into(),
    ));
    live_then_replay(&scratch, &env, "test-model", &bedrock.base_url);
    unsigned(
        bedrock.heads.lock().unwrap().clone(),
        "/v1/model/test-model/invoke-with-response-stream",
    );

    let vertex = vertex_server(Vec::new());
    let env = [
        ("HOME", scratch.outside("google-home").display().to_string()),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            scratch.outside("missing-key.json").display().to_string(),
        ),
        ("CLAUDE_CODE_USE_VERTEX", "1".to_owned()),
        ("ANTHROPIC_VERTEX_PROJECT_ID", "proj-1".to_owned()),
        ("CLAUDE_CODE_SKIP_VERTEX_AUTH", "1".to_owned()),
        ("ANTHROPIC_CUSTOM_HEADERS", "X-Gateway-Key: gk".to_owned()),
    ]
    .map(|(k, v)| (k.to_owned(), v));
    live_then_replay(&scratch, &env, "claude-test@1", &vertex.base_url);
    unsigned(
        vertex.heads.lock().unwrap().clone(),
        "/v1/claude-test@1:streamRawPredict",
    );
}

/// A recorded stream of `crates/providers/tests/fixtures` (see `SOURCES-shared.md` there).
fn recorded(name: &str) -> String {
    std::fs::read_to_string(
        repo_root()
            .join("crates/providers/tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// One provider's run in [`recorded_streams_of_each_new_api_through_the_binary`].
struct Case {
    provider: &'static str,
    env: &'static [(&'static str, &'static str)],
    config: &'static str,
    reply: Scripted,
    answer: &'static str,
    request_line: &'static str,
    credential: &'static str,
}

/// Each new wire format's recorded text stream, served through the real binary: the answer
/// it prints is the one the recording's own test suite expects, and each request went where
/// and as its API wants.
#[test]
fn recorded_streams_of_each_new_api_through_the_binary() {
    let stream = |content_type, body: String| Scripted {
        status: 200,
        content_type,
        headers: "",
        body: body.into_bytes(),
    };
    let gemini: String = recorded("gemini/text-signature.chunks.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("data: {l}\n\n"))
        .collect();
    let anthropic = recorded("anthropic/text-ping-padded.sse");
    let responses = recorded("responses/text-after-tool-event-lines.sse");
    let cases = [
        Case {
            provider: "openai",
            env: &[("OPENAI_API_KEY", "k-openai")],
            config: "",
            reply: stream("text/event-stream", responses.clone()),
            answer: "The capital of France is Paris.",
            request_line: "POST /v1/responses HTTP/1.1",
            credential: "authorization: Bearer k-openai",
        },
        Case {
            provider: "azure",
            env: &[("AZURE_OPENAI_API_KEY", "k-azure")],
            config: "",
            reply: stream("text/event-stream", responses),
            answer: "The capital of France is Paris.",
            request_line: "POST /v1/responses HTTP/1.1",
            credential: "api-key: k-azure",
        },
        Case {
            provider: "gemini",
            env: &[("GEMINI_API_KEY", "k-gemini")],
            config: "",
            reply: stream("text/event-stream", gemini),
            answer: "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y",
            request_line: "POST /v1/models/m:streamGenerateContent?alt=sse HTTP/1.1",
            credential: "x-goog-api-key: k-gemini",
        },
        Case {
            provider: "bedrock",
            env: &[
                ("AWS_BEARER_TOKEN_BEDROCK", "k-bedrock"),
                ("AWS_REGION", "us-west-2"),
            ],
            config: "",
            reply: Scripted {
                status: 200,
                content_type: "application/vnd.amazon.eventstream",
                headers: "",
                body: sse_as_frames(&anthropic),
            },
            answer: "2",
            request_line: "POST /v1/model/m/invoke-with-response-stream HTTP/1.1",
            credential: "authorization: Bearer k-bedrock",
        },
        Case {
            provider: "vertex",
            env: &[],
            // The token command replaces Google's credentials.
            config: "providers:\n  vertex:\n    project: proj-1\n    key_command: printf k-vertex\n",
            reply: stream("text/event-stream", anthropic),
            answer: "2",
            request_line: "POST /v1/m:streamRawPredict HTTP/1.1",
            credential: "authorization: Bearer k-vertex",
        },
    ];
    for case in cases {
        let provider = case.provider;
        let scratch = Scratch::new();
        let server = serve_scripted(vec![case.reply]);
        let mut run = wonopcode();
        if !case.config.is_empty() {
            run.arg("--config").arg(scratch.config(case.config));
        }
        let out = run
            .envs(case.env.iter().copied())
            .env("HOME", scratch.outside("home"))
            .args(["--json", "-y", "--provider", provider, "--model", "m"])
            .arg("--base-url")
            .arg(&server.base_url)
            .arg("-C")
            .arg(scratch.ws())
            .arg("hi")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{provider}: {}", stderr(&out));
        let events = events(&out);
        assert_eq!(final_text(&events), case.answer, "{provider}: {events:#?}");
        let head = server.heads.lock().unwrap()[0].clone();
        assert!(head.starts_with(case.request_line), "{provider}: {head}");
        assert!(
            head.to_ascii_lowercase()
                .contains(&format!("\r\n{}\r\n", case.credential.to_ascii_lowercase())),
            "{provider}: {head}"
        );
    }
}
