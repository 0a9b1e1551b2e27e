//! LLM cognition against a real local model: `scripts/local-llm` serves
//! SmolLM2-135M through llama-cpp-python's OpenAI-compatible server (the
//! first run builds its cached environment, several minutes), the court
//! world's LLM clerk is woken a few times, its acts seal, and `seed replay`
//! verifies them without calling the model again. This test needs no network:
//! the model ships inside a PyPI package installed from the package registry.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
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
    start_local_server(log, "serve")
}

/// `scripts/local-llm VERB PORT` on a free port, once it answers.
fn start_local_server(log: &std::path::Path, verb: &str) -> LocalModel {
    let port = free_port();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/local-llm");
    let log_file = std::fs::File::create(log).unwrap();
    let child = Command::new(script)
        .args([verb, &port.to_string()])
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

/// The court's LLM clerk, driven by the real model for three ticks: once as
/// it is (`forward`), once wearing `recollecting` (orientation `half`: its
/// prompt carries what it recalls, and its tools an optional `importance`);
/// and for two ticks as a panel of two members.
#[test]
fn a_real_local_model_drives_the_court_clerk_and_replay_verifies_its_acts() {
    if !crate::opted_in("SEED_TEST_LOCAL_LLM", "a real local model (scripts/local-llm)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = start_local_model(&dir.path().join("server.log"));
    let embeddings = start_local_server(&dir.path().join("embeddings.log"), "serve-embeddings");
    let connections = dir.path().join("llm.toml");
    // Forcing the summon tool: with a forced function this small model
    // mostly answers with a tool call whose arguments follow the schema.
    std::fs::write(
        &connections,
        format!(
            "default = \"local\"\n[connection.local]\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"smollm2-135m\"\n\
             tool_choice = \"summon\"\nmax_tokens = 48\ntimeout_ms = 120000\n\
             [connection.local-embed]\nbase_url = \"http://127.0.0.1:{}/v1\"\nmodel = \"smollm2-135m\"\ntimeout_ms = 120000\n",
            server.port, embeddings.port
        ),
    )
    .unwrap();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let court = repo.join("tests/fixtures/llm/court.toml");
    // The same court, its clerk remembering (its folders made absolute).
    let remembering_text = std::fs::read_to_string(&court)
        .unwrap()
        .replace("\"../../../", &format!("\"{}/", repo.display()))
        .replace("\"roles\"]", &format!("\"{}\"]", repo.join("tests/fixtures/llm/roles").display()))
        .replace(
            "flow = [{ role = \"clerk\" }]",
            "flow = [{ role = \"clerk\" }, { stack = true, role = \"recollecting\" }]",
        );
    let remembering = dir.path().join("remembering-court.toml");
    // It remembers with the real model's embeddings: a vector per act.
    std::fs::write(&remembering, format!("{remembering_text}\n[config]\nembedding_connection = \"local-embed\"\n"))
        .unwrap();
    // The same court, its clerk a panel of two members asking the model.
    let panel_text = std::fs::read_to_string(&court)
        .unwrap()
        .replace("\"../../../", &format!("\"{}/", repo.display()))
        .replace("\"roles\"]", &format!("\"{}\"]", repo.join("tests/fixtures/llm/roles").display()))
        .replace("cognition = \"llm\"", "cognition = \"panel\"");
    let panel = dir.path().join("panel-court.toml");
    std::fs::write(
        &panel,
        format!("{panel_text}\n[being.panel]\nmembers = [{{ name = \"first\", kind = \"llm\" }}, {{ name = \"second\", kind = \"llm\" }}]\n"),
    )
    .unwrap();
    let panel_land = dir.path().join("land-panel");
    drive_the_panel(&panel_land, &panel, &connections, &dir.path().join("trace-panel.jsonl"));
    let mut lands = Vec::new();
    for (fixture, orientation) in [(&court, "forward"), (&remembering, "half")] {
        let land = dir.path().join(format!("land-{orientation}"));
        let acts =
            drive_the_clerk(&land, fixture, &connections, &dir.path().join(format!("trace-{orientation}.jsonl")));
        let reel: serde_json::Value =
            serde_json::from_slice(&common::seed(&land, &["reel", "@clerk", "--json"]).stdout).unwrap();
        for fact in reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "act") {
            assert_eq!(fact["body"]["orientation"], orientation, "{fact}");
        }
        // The remembering land embeds each act, in a fact of its own after it.
        let count = |kind: &str| reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == kind).count();
        let expected_vectors = if orientation == "half" { count("act") } else { 0 };
        assert_eq!(count("embedding"), expected_vectors, "{orientation}: {reel}");
        lands.push((land, acts));
    }
    // Replay verifies every LLM act; the server is stopped first, so any
    // attempt to call the model would fail the replay.
    drop(server);
    drop(embeddings);
    let replay = common::seed(&panel_land, &["replay", "--all"]);
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stdout));
    assert!(
        String::from_utf8_lossy(&replay.stdout).contains(" 0 divergence(s)"),
        "{}",
        String::from_utf8_lossy(&replay.stdout)
    );
    for (land, acts) in lands {
        let replay = common::seed(&land, &["replay", "@clerk"]);
        let text = String::from_utf8_lossy(&replay.stdout);
        assert!(replay.status.success(), "{text}");
        assert!(text.contains(&format!("{acts} moments replayed, 0 divergence(s)")), "{text}");
        let all = common::seed(&land, &["replay", "--all"]);
        assert!(all.status.success(), "{}", String::from_utf8_lossy(&all.stdout));
    }
}

/// Simulates three ticks of `fixture` into `land` with the real model and
/// checks the clerk's moments; returns how many acts it sealed.
fn drive_the_clerk(land: &Path, fixture: &Path, connections: &Path, trace: &Path) -> u64 {
    let summary = simulate_with_the_model(land, fixture, connections, trace, 3);
    assert_eq!(summary["llm"]["calls"], 3, "the clerk called the model once a tick: {summary}");
    let trace_text = std::fs::read_to_string(trace).unwrap();
    let clerk: Vec<serde_json::Value> = trace_text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|moment| moment["name"] == "clerk")
        .collect();
    assert_eq!(clerk.len(), 3);
    // What so small a model answers depends on the machine llama.cpp was
    // compiled for (its arithmetic differs with the CPU's instructions), and
    // now and then it is not a usable call. The substrate's promise holds
    // either way: each moment is an act or a failure naming what was wrong
    // with the answer, every call is counted, and the model drives the clerk.
    let mut acts = 0;
    for moment in &clerk {
        let outcome = moment["outcome"].as_str().unwrap_or_default();
        assert!(outcome == "act: summon" || outcome.starts_with("failure in momentum: llm: "), "{moment}");
        acts += u64::from(outcome == "act: summon");
        assert_eq!(moment["llm"]["model"], "smollm2-135m");
        assert!(moment["llm"]["promptTokens"].as_u64().unwrap() > 0, "{moment}");
    }
    assert!(acts >= 1, "the model never drove the clerk to a summons");
    // Every answered call is on the clerk's reel: an act's in the act, a
    // failed moment's in a spend fact (each moment above was answered).
    let reel: serde_json::Value =
        serde_json::from_slice(&common::seed(land, &["reel", "@clerk", "--json"]).stdout).unwrap();
    assert_eq!(reel["llm"]["calls"], clerk.len(), "{}", reel["llm"]);
    let verify = common::seed(land, &["verify"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    acts
}

/// Simulates two ticks of the panel court into `land`: each moment both
/// members ask the model, and the clerk acts on the majority's call (or the
/// first member's, on a tie) or fails naming each member's failure.
fn drive_the_panel(land: &Path, fixture: &Path, connections: &Path, trace: &Path) {
    let summary = simulate_with_the_model(land, fixture, connections, trace, 2);
    assert_eq!(summary["llm"]["calls"], 4, "both members called the model each tick: {summary}");
    let reel: serde_json::Value =
        serde_json::from_slice(&common::seed(land, &["reel", "@clerk", "--json"]).stdout).unwrap();
    assert_eq!(reel["llm"]["calls"], 4, "every call is on the reel: {}", reel["llm"]);
    let acts: Vec<&serde_json::Value> =
        reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "act").collect();
    for act in &acts {
        let members = act["body"]["panel"]["members"].as_array().unwrap();
        let names: Vec<&str> = members.iter().map(|member| member["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["first", "second"], "{act}");
        assert!(members.iter().all(|member| member["llm"]["request"].is_string()), "{act}");
    }
    let verify = common::seed(land, &["verify"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
}

/// `seed sim FIXTURE --ticks TICKS --llm CONNECTIONS --trace TRACE --json`
/// into `land`: its summary.
fn simulate_with_the_model(
    land: &Path,
    fixture: &Path,
    connections: &Path,
    trace: &Path,
    ticks: u64,
) -> serde_json::Value {
    let ticks = ticks.to_string();
    let output = common::seed(
        land,
        &[
            "sim",
            fixture.to_str().unwrap(),
            "--ticks",
            &ticks,
            "--llm",
            connections.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}
