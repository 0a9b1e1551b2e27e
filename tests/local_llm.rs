//! LLM cognition against a real local model: `scripts/local-llm` serves
//! SmolLM2-135M through llama-cpp-python's OpenAI-compatible server (the
//! first run builds its cached environment, several minutes), the court
//! world's LLM clerk is woken a few times, its acts seal, and `seed replay`
//! verifies them without calling the model again. This test needs no network:
//! the model ships inside a PyPI package installed from the package registry.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to come up, including building the cached
/// Python environment on a machine that has never built it.
const LOCAL_LLM_START_MS_MAX: u64 = 25 * 60 * 1000;

/// The server process; stopped (with its Python child) when dropped.
struct LocalModel {
    child: Child,
    port: u16,
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        // `timeout` runs the server and passes SIGTERM on to it.
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// GET a path on loopback; the status line and body, or None if nothing answers.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

fn start_local_model(log: &std::path::Path) -> LocalModel {
    let port = free_port();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/local-llm");
    let log_file = std::fs::File::create(log).unwrap();
    let child = Command::new(script)
        .args(["serve", &port.to_string()])
        .env("SEED_LOCAL_LLM_LIFETIME_S", "1800")
        .stdout(Stdio::from(log_file.try_clone().unwrap()))
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("scripts/local-llm runs");
    let mut server = LocalModel { child, port };
    let started = Instant::now();
    loop {
        if let Some(response) = get(port, "/v1/models") {
            if response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200") {
                return server;
            }
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("the local model server exited ({status}):\n{}", std::fs::read_to_string(log).unwrap_or_default());
        }
        if started.elapsed() > Duration::from_millis(LOCAL_LLM_START_MS_MAX) {
            panic!(
                "the local model server did not answer in time:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_real_local_model_drives_the_court_clerk_and_replay_verifies_its_acts() {
    if !crate::opted_in("SEED_TEST_LOCAL_LLM", "a real local model (scripts/local-llm)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = start_local_model(&dir.path().join("server.log"));
    let connections = dir.path().join("llm.toml");
    // Forcing the summon tool: with a forced function this small model
    // answers with a valid tool call (its arguments follow the tool's schema).
    std::fs::write(
        &connections,
        format!(
            "[connection.local]\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"smollm2-135m\"\n\
             tool_choice = \"summon\"\nmax_tokens = 48\ntimeout_ms = 120000\n",
            server.port
        ),
    )
    .unwrap();
    let land = dir.path().join("land");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm/court.toml");
    let trace = dir.path().join("trace.jsonl");
    let output = common::seed(
        &land,
        &[
            "sim",
            fixture.to_str().unwrap(),
            "--ticks",
            "3",
            "--llm",
            connections.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["llm"]["calls"], 3, "the clerk called the model once a tick: {summary}");
    let trace_text = std::fs::read_to_string(&trace).unwrap();
    let clerk: Vec<serde_json::Value> = trace_text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|moment| moment["name"] == "clerk")
        .collect();
    assert_eq!(clerk.len(), 3);
    for moment in &clerk {
        assert_eq!(moment["outcome"], "act: summon", "{moment}");
        assert_eq!(moment["llm"]["model"], "smollm2-135m");
        assert!(moment["llm"]["promptTokens"].as_u64().unwrap() > 0, "{moment}");
    }
    // The acts are sealed on the clerk's reel with their model calls.
    let reel: serde_json::Value =
        serde_json::from_slice(&common::seed(&land, &["reel", "@clerk", "--json"]).stdout).unwrap();
    assert_eq!(reel["llm"]["calls"], 3, "{}", reel["llm"]);
    // The judge heard the clerk: the summons woke her.
    let verify = common::seed(&land, &["verify"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    // Replay verifies every LLM act; the server is stopped first, so any
    // attempt to call the model would fail the replay.
    drop(server);
    let replay = common::seed(&land, &["replay", "@clerk"]);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{text}");
    assert!(text.contains("3 moments replayed, 0 divergence(s)"), "{text}");
    let all = common::seed(&land, &["replay", "--all"]);
    assert!(all.status.success(), "{}", String::from_utf8_lossy(&all.stdout));
}
