//! Agent loops from an OCI registry (`--agent-loop oci://…`, `docs/guest-authoring.md`) on the
//! real binary, against a loopback OCI distribution server that serves components in the
//! Wasm OCI artifact layout `wkg oci push` writes: the module runs, the run's journal keeps it
//! pinned by digest, a pinned reference loads from the cache without asking the registry,
//! and bytes that do not match their digest, another layout or a core module are refused in
//! one line with nothing kept.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Scratch, answer, command, events, stderr};

/// `sha256:HEX` of `bytes`.
fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the registry holds, by repository: manifests by tag or digest, blobs by digest.
#[derive(Default)]
struct Store {
    manifests: HashMap<(String, String), Vec<u8>>,
    blobs: HashMap<(String, String), Vec<u8>>,
}

/// A loopback OCI distribution server (the pull side of the API), logging every request.
struct Registry {
    host: String,
    store: Arc<Mutex<Store>>,
    requests: Arc<Mutex<Vec<String>>>,
}

/// The token a registry started with [`Registry::with_token`] hands out and wants.
const TOKEN: &str = "the-registry-token";

impl Registry {
    fn start() -> Self {
        Self::serving(false, None)
    }

    /// A registry that answers nothing without a bearer token, which it gives at its own
    /// `/token` after the `WWW-Authenticate` handshake (as Docker Hub and GHCR do).
    fn with_token() -> Self {
        Self::serving(true, None)
    }

    /// A registry at `localhost` that speaks only TLS, with a certificate `ca` signed, and
    /// wants a token.
    fn over_tls(ca: &TestCa) -> Self {
        Self::serving(true, Some(ca.server_config()))
    }

    fn serving(token: bool, tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (host, scheme) = match tls {
            Some(_) => (format!("localhost:{port}"), "https"),
            None => (format!("127.0.0.1:{port}"), "http"),
        };
        let store = Arc::new(Mutex::new(Store::default()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (served, log) = (store.clone(), requests.clone());
        let realm = token.then(|| format!("{scheme}://{host}/token"));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (store, log, realm) = (served.clone(), log.clone(), realm.clone());
                let tls = tls.clone();
                std::thread::spawn(move || {
                    let realm = realm.as_deref();
                    match tls {
                        Some(config) => {
                            let Ok(session) = rustls::ServerConnection::new(config) else {
                                return;
                            };
                            let mut stream = rustls::StreamOwned::new(session, stream);
                            serve(&mut stream, &store, &log, realm);
                            stream.conn.send_close_notify();
                            let _ = stream.flush();
                        }
                        None if starts_a_tls_handshake(&stream) => {
                            // As a plain HTTP server answers bytes that are no request.
                            let mut stream = stream;
                            let _ = stream.write_all(
                                b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                            );
                        }
                        None => serve(&mut { stream }, &store, &log, realm),
                    }
                });
            }
        });
        Self {
            host,
            store,
            requests,
        }
    }

    /// Publishes `component` under `repository:tag` in the Wasm OCI artifact layout (as
    /// `wkg oci push` does), with this config media type and layer `served` in place of the
    /// component's bytes when given; the manifest's digest.
    fn publish_as(
        &self,
        repository: &str,
        tag: &str,
        component: &[u8],
        config_type: &str,
        served: Option<&[u8]>,
    ) -> String {
        let config = json!({
            "created": "2026-11-28T00:00:00Z",
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [digest(component)],
            "component": {"exports": ["wonopcode:agent-loop/agent-loop@0.2.0"], "imports": []},
        })
        .to_string();
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": config_type, "digest": digest(config.as_bytes()), "size": config.len()},
            "layers": [{"mediaType": "application/wasm", "digest": digest(component), "size": component.len()}],
            "annotations": {"org.opencontainers.image.created": "2026-11-28T00:00:00Z"},
        })
        .to_string()
        .into_bytes();
        let manifest_digest = digest(&manifest);
        let mut store = self.store.lock().unwrap();
        let blob = |digest: String| (repository.to_owned(), digest);
        store
            .blobs
            .insert(blob(digest(config.as_bytes())), config.into_bytes());
        store.blobs.insert(
            blob(digest(component)),
            served.unwrap_or(component).to_vec(),
        );
        for reference in [tag.to_owned(), manifest_digest.clone()] {
            store
                .manifests
                .insert((repository.to_owned(), reference), manifest.clone());
        }
        manifest_digest
    }

    fn publish(&self, repository: &str, tag: &str, component: &[u8]) -> String {
        self.publish_as(
            repository,
            tag,
            component,
            "application/vnd.wasm.config.v0+json",
            None,
        )
    }

    fn requests(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// Answers one request; with `realm`, only one that carries [`TOKEN`] (the token itself is
/// given at `realm`, the registry's `/token`).
fn serve(
    stream: &mut (impl Read + Write),
    store: &Mutex<Store>,
    log: &Mutex<Vec<String>>,
    realm: Option<&str>,
) {
    let Some(head) = crate::support::request_head(stream) else {
        return;
    };
    let mut words = head.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let bearer = head
        .to_ascii_lowercase()
        .contains(&format!("authorization: bearer {TOKEN}"));
    log.lock().unwrap().push(format!(
        "{method} {path}{}",
        if bearer { " (with the token)" } else { "" }
    ));
    if let Some(realm) = realm {
        if path.starts_with("/token") {
            let body = format!(r#"{{"token": "{TOKEN}", "access_token": "{TOKEN}"}}"#);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            return;
        }
        if !bearer {
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer realm=\"{realm}\",service=\"loopback\",scope=\"repository:loops/default:pull\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            return;
        }
    }
    let store = store.lock().unwrap();
    let found = if path == "/v2/" {
        Some(("application/json", b"{}".to_vec()))
    } else if let Some((repository, reference)) = path
        .strip_prefix("/v2/")
        .and_then(|p| p.split_once("/manifests/"))
    {
        store
            .manifests
            .get(&(repository.to_owned(), reference.to_owned()))
            .map(|m| ("application/vnd.oci.image.manifest.v1+json", m.clone()))
    } else if let Some((repository, blob)) = path
        .strip_prefix("/v2/")
        .and_then(|p| p.split_once("/blobs/"))
    {
        store
            .blobs
            .get(&(repository.to_owned(), blob.to_owned()))
            .map(|b| ("application/octet-stream", b.clone()))
    } else {
        None
    };
    let response = match found {
        Some((kind, body)) => {
            let mut response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            if method != "HEAD" {
                response.extend(body);
            }
            response
        }
        None => {
            let body = r#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not here"}]}"#;
            format!(
                "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        }
    };
    let _ = stream.write_all(&response);
}

/// Whether the first byte waiting on `stream` opens a TLS handshake record.
fn starts_a_tls_handshake(stream: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    stream
        .peek(&mut first)
        .is_ok_and(|n| n == 1 && first[0] == 0x16)
}

/// A certificate authority made for one test, and a `localhost` certificate it signed.
struct TestCa {
    pem: String,
    leaf: rustls::pki_types::CertificateDer<'static>,
    leaf_key: Vec<u8>,
}

impl TestCa {
    fn new() -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "wonopcode test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap())
            .unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
        Self {
            pem: ca.pem(),
            leaf: leaf.der().clone(),
            leaf_key: leaf_key.serialize_der(),
        }
    }

    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.leaf_key.clone().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![self.leaf.clone()], key)
        .unwrap();
        Arc::new(config)
    }
}

/// The default guest's component bytes.
fn component() -> Vec<u8> {
    wonopcode_wasm_host::DEFAULT_LOOP.to_vec()
}

/// Runs the loop `reference` on one prompt, answered from a transcript, with the module
/// cache and the journal in the scratch directory.
pub(crate) fn run(s: &Scratch, reference: &str) -> Output {
    running(s, reference).output().unwrap()
}

/// The command [`run`] runs.
fn running(s: &Scratch, reference: &str) -> Command {
    let transcript = s.transcript("t.jsonl", &[answer("Hello from the registry.")]);
    let mut command = command();
    command
        .env("XDG_CACHE_HOME", s.outside("cache"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .args(["--json", "--replay"])
        .arg(&transcript)
        .arg("--agent-loop")
        .arg(reference)
        .arg("-C")
        .arg(s.ws())
        .arg("Say hello.");
    command
}

/// The run exited 0 with the transcript's answer: the module ran.
fn said_hello(out: &Output) {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    let said: Vec<Value> = events(out)
        .into_iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["kind"] == "agent_message")
        .collect();
    assert_eq!(said[0]["item"]["text"], "Hello from the registry.");
}

/// The modules the cache holds.
fn cached(s: &Scratch) -> Vec<PathBuf> {
    let dir = s.outside("cache").join("wonopcode/oci");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries.map(|e| e.unwrap().path()).collect()
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.map(|e| e.unwrap().path()) {
            if path.is_dir() {
                dirs.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// The only run's `run.json`.
fn run_json(runs: &Path) -> Value {
    let (_, dir) = crate::resume::only_run(runs);
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn a_module_from_a_registry_runs_pinned_by_digest_and_loads_from_the_cache_after() {
    let registry = Registry::start();
    let manifest = registry.publish("loops/default", "1.0", &component());
    let s = Scratch::new();
    let tagged = format!("oci://{}/loops/default:1.0", registry.host);
    let out = run(&s, &tagged);
    said_hello(&out);
    // The journal keeps the digest the tag named.
    let pinned = format!("oci://{}/loops/default@{manifest}", registry.host);
    let meta = run_json(&s.outside("runs"));
    assert_eq!(meta["modules"], json!({tagged.clone(): pinned}), "{meta}");
    let files = cached(&s);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::read(&files[0]).unwrap(), component());

    // `loops validate` checks the bytes a reference names.
    let validated = command()
        .env("XDG_CACHE_HOME", s.outside("cache"))
        .args(["loops", "validate", &tagged])
        .output()
        .unwrap();
    assert_eq!(validated.status.code(), Some(0), "{}", stderr(&validated));

    // Pinned and cached: the registry is not asked again.
    let before = registry.requests();
    let again = Scratch::new();
    std::fs::rename(s.outside("cache"), again.outside("cache")).unwrap();
    let out = run(&again, &pinned);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(registry.requests(), before);
}

#[test]
fn a_registry_that_wants_a_token_gets_the_handshake_and_the_module_runs() {
    let registry = Registry::with_token();
    registry.publish("loops/default", "1.0", &component());
    let s = Scratch::new();
    let out = run(&s, &format!("oci://{}/loops/default:1.0", registry.host));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    handshake_made(&registry);
}

/// Refused without the token, asked for one at the registry's own realm, then served the
/// manifest and the layer with it.
fn handshake_made(registry: &Registry) {
    let asked = registry.requests.lock().unwrap().clone();
    assert!(
        asked.iter().any(|r| r.starts_with("GET /token")),
        "{asked:?}"
    );
    for wanted in ["/manifests/1.0", "/blobs/"] {
        assert!(
            asked
                .iter()
                .any(|r| r.contains(wanted) && r.ends_with("(with the token)")),
            "{wanted}: {asked:?}"
        );
    }
}

#[test]
fn a_registry_with_its_own_certificate_is_trusted_through_ssl_cert_file_and_refused_without_it() {
    let ca = TestCa::new();
    let registry = Registry::over_tls(&ca);
    registry.publish("loops/default", "1.0", &component());
    let reference = format!("oci://{}/loops/default:1.0", registry.host);

    // No root vouches for the certificate: one line naming it, nothing kept.
    let s = Scratch::new();
    let out = running(&s, &reference)
        .env_remove("SSL_CERT_FILE")
        .output()
        .unwrap();
    let said = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    let line = said
        .lines()
        .find(|l| l.contains(&reference))
        .unwrap_or_else(|| panic!("no line names the reference: {said}"));
    assert!(
        line.contains("over HTTPS:") && line.contains("certificate"),
        "{line}"
    );
    assert!(cached(&s).is_empty(), "{:?}", cached(&s));
    assert!(
        registry.requests() == 0,
        "TLS never got as far as a request"
    );

    // The test CA as the roots: the handshake, the token, the module, all over TLS.
    let ca_file = s.outside("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let out = running(&s, &reference)
        .env("SSL_CERT_FILE", &ca_file)
        .output()
        .unwrap();
    said_hello(&out);
    handshake_made(&registry);
    assert_eq!(cached(&s).len(), 1);
}

#[test]
fn what_does_not_match_its_digest_or_is_not_a_component_is_refused_and_not_kept() {
    let registry = Registry::start();
    let good = component();
    let mut tampered = good.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    registry.publish_as(
        "loops/tampered",
        "1",
        &good,
        "application/vnd.wasm.config.v0+json",
        Some(&tampered),
    );
    registry.publish_as(
        "loops/image",
        "1",
        &good,
        "application/vnd.oci.image.config.v1+json",
        None,
    );
    // A core module: `\0asm` version 1.
    let core = b"\0asm\x01\x00\x00\x00".to_vec();
    registry.publish("loops/core", "1", &core);
    let host = &registry.host;
    for (reference, says) in [
        (format!("oci://{host}/loops/tampered:1"), "digest"),
        (
            format!("oci://{host}/loops/image:1"),
            "not a WebAssembly component artifact: its config is `application/vnd.oci.image.config.v1+json`",
        ),
        (
            format!("oci://{host}/loops/core:1"),
            "its layer is not a WebAssembly component",
        ),
        (format!("oci://{host}/loops/missing:1"), "loops/missing:1"),
        (
            format!("oci://{host}/loops/x@sha256:{}", "0".repeat(64)),
            "loops/x@sha256:",
        ),
        ("oci://loops/default:1".to_owned(), "names no registry host"),
    ] {
        let s = Scratch::new();
        let out = run(&s, &reference);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{reference}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{reference}: {err}");
        assert!(err.contains(says), "{reference}: {err}");
        // Nothing at all: no module, no partial download, no record of one.
        let kept = files_under(&s.outside("cache"));
        assert!(kept.is_empty(), "{reference}: kept {kept:?}");
    }
}

#[test]
fn registry_entries_name_published_modules_for_the_root_and_its_children_and_a_fork_keeps_the_pin()
{
    let registry = Registry::start();
    registry.publish("loops/default", "1.0", &component());
    let misbehave = std::fs::read(wonopcode_wasm_host::guest_paths::MISBEHAVE).unwrap();
    registry.publish("loops/misbehave", "2", &misbehave);
    let s = Scratch::new();
    let loops = s.outside("loops");
    std::fs::create_dir_all(&loops).unwrap();
    let host = &registry.host;
    std::fs::write(
        loops.join("registry.yaml"),
        format!(
            "modules:\n  greeter:\n    path: oci://{host}/loops/default:1.0\n  spawner:\n    path: oci://{host}/loops/misbehave:2\n"
        ),
    )
    .unwrap();
    // The root runs a published entry, which spawns a child by another's name.
    let transcript = crate::support::transcript_of("0.1", &[answer("Hello from a child.")]);
    let t = s.outside("child.jsonl");
    std::fs::write(&t, transcript).unwrap();
    let spec = json!({"module": {"named": "greeter"}, "task": "Say hello."});
    let out = command()
        .env("XDG_CACHE_HOME", s.outside("cache"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .args(["--json", "--replay"])
        .arg(&t)
        .arg("--loops-dir")
        .arg(&loops)
        .args(["--agent-loop-name", "spawner", "-C"])
        .arg(s.ws())
        .arg(format!("spawn {spec}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let child = events(&out)
        .into_iter()
        .find(|e| e["type"] == "context.completed" && e["context"] == "0.1")
        .expect("the child ran");
    assert_eq!(child["status"], "completed", "{child}");
    let meta = run_json(&s.outside("runs"));
    let modules = meta["modules"].as_object().unwrap();
    assert_eq!(modules.len(), 2, "{meta}");

    // The tag moves to other bytes; a fork of the run still runs the ones it pinned, from
    // the cache, without asking the registry for the tag.
    let hello = std::fs::read(wonopcode_wasm_host::guest_paths::GUEST_HELLO).unwrap();
    registry.publish("loops/misbehave", "2", &hello);
    let before = registry.requests();
    let (id, _) = crate::resume::only_run(&s.outside("runs"));
    let forked = command()
        .env("XDG_CACHE_HOME", s.outside("cache"))
        .env("WONOPCODE_RUNS_DIR", s.outside("runs"))
        .args(["fork", &id, "--at", "0.1:0"])
        .output()
        .unwrap();
    assert_eq!(forked.status.code(), Some(0), "{}", stderr(&forked));
    let started = events(&forked)
        .into_iter()
        .find(|e| e["type"] == "session.started")
        .expect("the fork started");
    assert_eq!(started["loop_name"], "misbehave", "{started}");
    assert_eq!(
        registry.requests(),
        before,
        "the pins were fetched from the cache"
    );
}
