//! LLM cognition against the in-process fake endpoint: every fault ends in its
//! documented result and never wedges the being or the land; the prompt and
//! the tools follow the composed role; the resolution chain, failover and the
//! concurrency cap; keys never reach facts, traces or logs; replay verifies
//! LLM acts without calling a model.

use crate::common;

use seed::engine::{self, fixture::Fixture, EngineOptions, RunSummary};
use seed::llm_http::client::LlmClient;
use seed::llm_http::connections::Connections;
use seed::llm_http::fake::{FakeEndpoint, Reply};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn llm_fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/llm").join(name)
}

/// A variant of a fixture in `dir`, with its relative paths made absolute and `extra` appended.
fn fixture_variant(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(llm_fixture(name)).unwrap();
    let base = repo().join("tests/fixtures/llm");
    let text = text
        .replace("\"../../../", &format!("\"{}/", repo().display()))
        .replace("\"roles\"]", &format!("\"{}\"]", base.join("roles").display()));
    let path = dir.join(format!("variant-{name}"));
    std::fs::write(&path, format!("{text}\n{extra}\n")).unwrap();
    path
}

/// A connections file with one connection to the fake endpoint (fast retries).
fn one_connection(endpoint: &FakeEndpoint, extra: &str) -> String {
    format!(
        "[connection.fake]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries_max = 3\n\
         backoff_base_ms = 10\nbackoff_max_ms = 2000\n{extra}\n",
        endpoint.base_url()
    )
}

struct Run {
    summary: RunSummary,
    /// The moment trace, one JSON object per moment.
    trace: Vec<Json>,
    land: PathBuf,
    _dir: tempfile::TempDir,
}

impl Run {
    fn moments_of(&self, name: &str) -> Vec<&Json> {
        self.trace.iter().filter(|moment| moment["name"] == name).collect()
    }
}

fn simulate(fixture: &Path, connections: &str, ticks: u64) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let connections = Connections::parse(connections, "test connections", dir.path(), &|_| None).unwrap();
    let model = Arc::new(LlmClient::new(connections).unwrap());
    let fixture = Fixture::load(fixture).unwrap();
    let options = EngineOptions {
        store: Default::default(),
        snapshot_every_facts: None,
        snapshot_spacing_step_bytes: None,
        ticks: Some(ticks),
        seed: 0,
        threads: 1,
        land_dir: dir.path().join("land"),
        trace_file: Some(dir.path().join("trace.jsonl")),
        progress: std::sync::Arc::new(seed::progress::NoProgress),
        model: Some(model),
        mode: seed::engine::Mode::Simulation,
    };
    let summary = engine::simulate(&fixture, &options).unwrap();
    let trace = std::fs::read_to_string(dir.path().join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    Run { summary, trace, land: dir.path().join("land"), _dir: dir }
}

/// Replays every being of a land against the fixture's definitions: exit 0, no divergence.
fn assert_replays_clean(land: &Path, fixture: &Path) {
    let output = common::seed(land, &["replay", "--all", "--fixture", fixture.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "replay failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("0 divergence(s)"), "{stdout}");
}

fn check_fault(endpoint: &FakeEndpoint, replies: Vec<Reply>, expected: &str, attempts: u64) {
    let fixture = llm_fixture("court.toml");
    endpoint.push(replies.clone());
    let run = simulate(&fixture, &one_connection(endpoint, "timeout_ms = 400"), 2);
    let clerk = run.moments_of("clerk");
    assert_eq!(clerk.len(), 2, "{replies:?}: the clerk has a moment each tick");
    let first = &clerk[0];
    let outcome = first["outcome"].as_str().unwrap();
    assert!(outcome.contains(expected), "{replies:?}: expected {expected:?} in {outcome:?}");
    assert_eq!(first["llm"]["attempts"], attempts, "{replies:?}: {first}");
    // The being is not wedged: its next moment calls again and acts.
    assert_eq!(clerk[1]["outcome"], "act: see", "{replies:?}: the next moment: {}", clerk[1]);
    // Nor is the land: it verifies and replays.
    assert_replays_clean(&run.land, &fixture);
}

#[test]
fn every_fault_ends_in_its_documented_result_and_never_wedges_the_being() {
    let endpoint = FakeEndpoint::start().unwrap();
    let cases: Vec<(Vec<Reply>, &str, u64)> = vec![
        (vec![Reply::ServerError], "act: see", 2),
        (vec![Reply::ServerError; 4], "failure in momentum: llm: fake: status 500", 4),
        (vec![Reply::Hang { ms: 1500 }], "failure in momentum: llm: fake: timed out after 400 ms (timeout_ms)", 1),
        (vec![Reply::Malformed], "failure in momentum: llm: the response is not JSON", 1),
        (vec![Reply::EmptyChoices], "failure in momentum: llm: the response's `choices` list is empty", 1),
        (
            vec![Reply::Tool { name: "see".into(), arguments: "{\"address\": ".into(), prose: None }],
            "failure in momentum: llm: the arguments of `see` are not JSON",
            1,
        ),
        (
            vec![Reply::tool("do", json!({ "action": "rule" }))],
            "failure in momentum: llm: the model called `do`, which was not offered (offered: see, summon)",
            1,
        ),
        (
            vec![Reply::tool("see", json!({ "address": "/vault" }))],
            "failure in decide: see /vault is not within canSee",
            1,
        ),
        (
            vec![Reply::tool("summon", json!({ "target": "@judge-of-elsewhere", "content": "hi" }))],
            "failure in decide: summon @judge-of-elsewhere is not within canSummon",
            1,
        ),
        (vec![Reply::Raw { status: 401, body: "no".into() }], "failure in momentum: llm: fake: status 401", 1),
        (vec![Reply::Prose("Nothing needs me.".into())], "see", 1),
        (vec![Reply::tool("summon", json!({ "target": "@ada", "content": "The docket is empty." }))], "act: summon", 1),
    ];
    for (replies, expected, attempts) in cases {
        check_fault(&endpoint, replies, expected, attempts);
    }
}

#[test]
fn a_429_waits_for_retry_after_then_acts() {
    let endpoint = FakeEndpoint::start().unwrap();
    endpoint.push([Reply::TooManyRequests { retry_after_s: 1 }]);
    let run = simulate(&llm_fixture("court.toml"), &one_connection(&endpoint, ""), 1);
    let clerk = run.moments_of("clerk");
    assert_eq!(clerk[0]["outcome"], "act: see");
    assert_eq!(clerk[0]["llm"]["attempts"], 2);
    // Retry-After: 1 was honoured (a lower bound, not a timing measurement).
    assert!(clerk[0]["llm"]["latencyUs"].as_u64().unwrap() >= 1_000_000, "{}", clerk[0]);
}

#[test]
fn prose_beside_a_tool_call_is_the_acts_content_and_prose_alone_is_logged_not_sealed() {
    let endpoint = FakeEndpoint::start().unwrap();
    endpoint.push([
        Reply::Tool {
            name: "summon".into(),
            arguments: json!({ "target": "@ada", "content": "Case 1 is ready." }).to_string(),
            prose: Some("Filed the first case.".into()),
        },
        Reply::Prose("All quiet.".into()),
    ]);
    let run = simulate(&llm_fixture("court.toml"), &one_connection(&endpoint, ""), 2);
    let clerk = run.moments_of("clerk");
    assert_eq!(clerk[1]["outcome"], "see");
    assert_eq!(clerk[1]["llm"]["prose"], "All quiet.");
    assert_eq!(clerk[1]["seeReason"], "the model answered without calling a tool");
    let reel = common::seed(&run.land, &["reel", "@clerk", "--json"]);
    let reel: Json = serde_json::from_slice(&reel.stdout).unwrap();
    let acts: Vec<&Json> = reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "act").collect();
    assert_eq!(acts.len(), 1, "only the tool call sealed an act: {reel}");
    let body = &acts[0]["body"];
    assert_eq!(body["content"], "Filed the first case.");
    assert_eq!(body["call"]["content"], "Case 1 is ready.");
    assert_eq!(body["llm"]["connection"], "fake");
    assert_eq!(body["llm"]["params"]["model"], "fake-model");
    // The prose alone sealed no act, but what it cost is on the reel.
    let spends: Vec<&Json> = reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "spend").collect();
    assert_eq!(spends.len(), 1, "{reel}");
    assert_eq!(spends[0]["body"]["outcome"], "see", "{}", spends[0]);
    assert_eq!(spends[0]["body"]["llm"]["prompt_tokens"], 100, "{}", spends[0]);
    // Token accounting: the fake reports 100 + 10 per call; the reel counts every call.
    assert_eq!(reel["llm"], json!({ "calls": 2, "promptTokens": 200, "completionTokens": 20, "costMicros": 0 }));
    assert_eq!(run.summary.llm_calls, 2);
    assert_eq!(run.summary.llm_prompt_tokens, 200);
}

fn tool_names(request: &Json) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| tools.iter().map(|tool| tool["function"]["name"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn tool<'a>(request: &'a Json, name: &str) -> &'a Json {
    request["tools"].as_array().unwrap().iter().find(|tool| tool["function"]["name"] == name).unwrap()
}

#[test]
fn the_prompt_and_the_tools_follow_the_composed_role() {
    let endpoint = FakeEndpoint::start().unwrap();
    simulate(&llm_fixture("court.toml"), &one_connection(&endpoint, ""), 1);
    let request = endpoint.received().remove(0).body;
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "exactly two messages: {request}");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    let system = messages[0]["content"].as_str().unwrap();
    for expected in [
        "You are @clerk",
        "You are in /court",
        "Roles you wear now: clerk.",
        "The time is 2026-01-01T00:00:10.000Z.",
        "[capabilities]\nsee: /court, /hall\nsummon: @ada, @ben\n",
        "[docket]\n{",
        "[role]\nYou are the clerk of the court in court.",
    ] {
        assert!(system.contains(expected), "the system message lacks {expected:?}:\n{system}");
    }
    assert_eq!(messages[1]["content"], "Tick 1: time has passed; nothing else woke you.");
    // The clerk's canDo is empty: no do tool, and no be tool either.
    assert_eq!(tool_names(&request), ["see", "summon"]);
    let see = tool(&request, "see");
    assert_eq!(see["function"]["parameters"]["properties"]["address"]["enum"], json!(["/court", "/hall"]));
    let summon = tool(&request, "summon");
    assert_eq!(summon["function"]["parameters"]["properties"]["target"]["enum"], json!(["@ada", "@ben"]));
    // Not woken by a summon: the target must be named.
    assert_eq!(summon["function"]["parameters"]["required"], json!(["target", "content"]));
    assert_eq!(request["model"], "fake-model");
    assert_eq!(request["tool_choice"], "auto");
}

#[test]
fn a_being_in_the_library_hears_the_library_voice_and_is_offered_its_actions() {
    let endpoint = FakeEndpoint::start().unwrap();
    let run = simulate(&llm_fixture("library.toml"), &one_connection(&endpoint, "tool_choice = \"do\""), 1);
    let request = endpoint.received().remove(0).body;
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("keep your words few and soft"), "{system}");
    assert!(system.contains("library-voice"), "{system}");
    assert!(system.contains("Roles you wear now: reader (stacked: library-voice)."), "{system}");
    assert_eq!(tool_names(&request), ["see", "do"]);
    assert_eq!(tool(&request, "do")["function"]["parameters"]["properties"]["action"]["enum"], json!(["move"]));
    assert_eq!(request["tool_choice"], json!({ "type": "function", "function": { "name": "do" } }));
    // The fake's default answer (move, no target) reaches the verb layer.
    let reader = run.moments_of("reader-7");
    assert!(reader[0]["outcome"].as_str().unwrap().starts_with("failure in decide: do move"), "{}", reader[0]);
}

#[test]
fn the_connection_comes_from_the_being_then_the_role_then_the_land() {
    let endpoint = FakeEndpoint::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let connections = ["a", "b", "c"]
        .iter()
        .map(|name| format!("[connection.{name}]\nbase_url = \"{}\"\nmodel = \"model-{name}\"\n", endpoint.base_url()))
        .collect::<Vec<_>>()
        .join("\n");
    let connections = format!("default = \"a\"\n{connections}");
    let cases = [
        ("", "model-a"),
        ("[config]\nllm_connection = \"c\"\n", "model-c"),
        ("[config]\nllm_connection = \"c\"\n[[being]]\nname = \"router\"\ncognition = \"llm\"\nhome = \"/hall\"\ndefault_role = \"routed-clerk\"\nwake_every = 1\n", "model-b"),
        ("[config]\nllm_connection = \"c\"\n[[being]]\nname = \"router\"\ncognition = \"llm\"\nhome = \"/hall\"\ndefault_role = \"routed-clerk\"\nwake_every = 1\nqualities = { llm = \"a\" }\n", "model-a"),
    ];
    for (extra, expected) in cases {
        let fixture = fixture_variant(dir.path(), "court.toml", extra);
        let before = endpoint.received().len();
        simulate(&fixture, &connections, 1);
        let received = endpoint.received();
        let name = if extra.contains("router") { "@router" } else { "@clerk" };
        let request = received[before..]
            .iter()
            .find(|request| {
                request.body["messages"][0]["content"].as_str().unwrap().contains(&format!("You are {name},"))
            })
            .unwrap();
        assert_eq!(request.body["model"], expected, "{extra}");
    }
}

#[test]
fn a_connection_that_is_down_fails_over_to_the_next() {
    let endpoint = FakeEndpoint::start().unwrap();
    // Port 9 on loopback: nothing listens there.
    let connections = format!(
        "default = \"down\"\n[connection.down]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"gone\"\nretries_max = 1\n\
         backoff_base_ms = 10\nfailover = [\"fake\"]\n{}",
        one_connection(&endpoint, "")
    );
    let run = simulate(&llm_fixture("court.toml"), &connections, 1);
    let clerk = run.moments_of("clerk");
    assert_eq!(clerk[0]["outcome"], "act: see");
    assert_eq!(clerk[0]["llm"]["connection"], "fake");
    assert_eq!(clerk[0]["llm"]["attempts"], 3, "two tries on the dead connection, then the failover");
    assert_replays_clean(&run.land, &llm_fixture("court.toml"));
}

#[test]
fn the_land_wide_cap_bounds_calls_in_flight() {
    let endpoint = FakeEndpoint::start().unwrap();
    endpoint.push(vec![Reply::Hang { ms: 150 }; 6]);
    let dir = tempfile::tempdir().unwrap();
    let crowd = "[[generate]]\ncount = 6\nhomes = [\"/hall\"]\n[generate.template]\nname = \"scribe-{i}\"\ncognition = \"llm\"\nhome = \"/hall\"\ndefault_role = \"clerk\"\nwake_every = 1\n";
    let fixture = fixture_variant(dir.path(), "court.toml", crowd);
    let run = simulate(&fixture, &format!("concurrency_max = 2\n{}", one_connection(&endpoint, "")), 1);
    assert_eq!(run.summary.llm_calls, 7, "six scribes and the clerk");
    assert_eq!(endpoint.in_flight_max(), 2, "two calls at once, never more");
}

/// The land's call limits (`[config]` of the fixture, folded like any key)
/// bound what the connection asks for: the smaller holds, and the message
/// names the limit that held.
#[test]
fn the_lands_call_limits_bound_what_a_connection_asks_for() {
    let endpoint = FakeEndpoint::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let check = |config: &str, connection: &str, replies: Vec<Reply>, expected: &str, attempts: u64| {
        let fixture = fixture_variant(dir.path(), "court.toml", &format!("[config]\n{config}"));
        endpoint.push(replies.clone());
        let run = simulate(&fixture, &one_connection(&endpoint, connection), 1);
        let clerk = &run.moments_of("clerk")[0];
        let outcome = clerk["outcome"].as_str().unwrap();
        assert!(outcome.contains(expected), "{config} / {connection}: expected {expected:?} in {outcome:?}");
        assert_eq!(clerk["llm"]["attempts"], attempts, "{config} / {connection}: {clerk}");
        assert_replays_clean(&run.land, &fixture);
    };
    let hang = || vec![Reply::Hang { ms: 1500 }];
    check("llm_call_timeout_ms = 200", "timeout_ms = 800", hang(), "timed out after 200 ms (llm_call_timeout_ms)", 1);
    check("llm_call_timeout_ms = 800", "timeout_ms = 200", hang(), "timed out after 200 ms (timeout_ms)", 1);
    // Exactly the replies each call takes, so none is left for the next case.
    let errors = |count: usize| vec![Reply::ServerError; count];
    check("llm_call_retries_max = 1", "", errors(2), "fake: status 500", 2);
    check("llm_call_retries_max = 0", "", errors(1), "fake: status 500", 1);
    // The connection's own three retries hold under the land's default.
    check("inbox_depth_max = 64", "", errors(4), "fake: status 500", 4);

    // In flight: the file allows eight, the land one.
    let endpoint = FakeEndpoint::start().unwrap();
    endpoint.push(vec![Reply::Hang { ms: 100 }; 6]);
    let crowd = "[[generate]]\ncount = 6\nhomes = [\"/hall\"]\n[generate.template]\nname = \"scribe-{i}\"\ncognition = \"llm\"\nhome = \"/hall\"\ndefault_role = \"clerk\"\nwake_every = 1\n";
    let fixture =
        fixture_variant(dir.path(), "court.toml", &format!("{crowd}\n[config]\nllm_calls_in_flight_max = 1\n"));
    let run = simulate(&fixture, &format!("concurrency_max = 8\n{}", one_connection(&endpoint, "")), 1);
    assert_eq!(run.summary.llm_calls, 7, "six scribes and the clerk");
    assert_eq!(endpoint.in_flight_max(), 1, "one call at once: the land's key, below the file's eight");
}

#[test]
fn bad_connection_files_are_refused_with_the_field() {
    let base = Path::new(".");
    let check = |text: &str, expected: &str| {
        let error = Connections::parse(text, "llm.toml", base, &|name| (name == "SET").then(|| "k".to_string()))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{text:?}: expected {expected:?} in {error:?}");
    };
    let ok = "base_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n";
    check("", "connection: no connections");
    check(&format!("[connection.a]\n{ok}bogus = 1\n"), "unknown field `bogus`");
    check("[connection.a]\nbase_url = \"ftp://x/v1\"\nmodel = \"m\"\n", "connection.a.base_url: scheme \"ftp\"");
    check("[connection.a]\nbase_url = \"http://user:pw@x/v1\"\nmodel = \"m\"\n", "put credentials in api_key_env");
    check(&format!("[connection.a]\n{ok}api_key_env = \"UNSET\"\n"), "the environment variable UNSET is not set");
    check(&format!("[connection.a]\n{ok}api_key_file = \"/nonexistent/key\"\n"), "connection.a.api_key_file");
    check(&format!("[connection.a]\n{ok}tool_choice = \"sing\"\n"), "connection.a.tool_choice");
    check(&format!("[connection.a]\n{ok}failover = [\"b\"]\n"), "connection.a.failover[0]: no connection named \"b\"");
    check(&format!("[connection.a]\n{ok}[connection.b]\n{ok}"), "default: several connections");
    check(&format!("default = \"z\"\n[connection.a]\n{ok}"), "default: no connection named \"z\"");
    check(&format!("concurrency_max = 0\n[connection.a]\n{ok}"), "concurrency_max: must be at least 1");
    check(&format!("[connection.Bad_Name]\n{ok}"), "connection.Bad_Name");
    let parsed = Connections::parse(&format!("[connection.a]\n{ok}api_key_env = \"SET\"\n"), "llm.toml", base, &|_| {
        Some("sk-very-secret".into())
    })
    .unwrap();
    assert!(!format!("{parsed:?}").contains("sk-very-secret"), "Debug shows no key");
}

/// Every file under `dir`, as bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    found
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[test]
fn keys_never_appear_in_facts_traces_or_logs() {
    let key = "sk-seed-test-4f1c9e0b7d2a";
    let endpoint = FakeEndpoint::start().unwrap();
    // The first call is refused (401), the second answered: both paths print.
    endpoint.push([Reply::Raw { status: 401, body: "bad key".into() }]);
    let dir = tempfile::tempdir().unwrap();
    let connections = dir.path().join("llm.toml");
    std::fs::write(&connections, one_connection(&endpoint, "api_key_env = \"SEED_TEST_LLM_KEY\"")).unwrap();
    let land = dir.path().join("land");
    let trace = dir.path().join("trace.jsonl");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(&land)
        .args(["sim", llm_fixture("court.toml").to_str().unwrap(), "--ticks", "2", "--llm"])
        .arg(&connections)
        .arg("--trace")
        .arg(&trace)
        .env("SEED_TEST_LLM_KEY", key)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // The key was sent, as a bearer token, to the endpoint...
    assert!(endpoint.received().iter().all(|r| r.authorization.as_deref() == Some(&format!("Bearer {key}"))));
    // ...and is nowhere else: not in the land (store, keys, definitions), the trace, stdout or stderr.
    let mut places = files_under(&land);
    places.push((trace.clone(), std::fs::read(&trace).unwrap()));
    places.push(("stdout".into(), output.stdout.clone()));
    places.push(("stderr".into(), output.stderr.clone()));
    for reel in ["@clerk", "@ada"] {
        places.push((reel.into(), common::seed(&land, &["reel", reel, "--json"]).stdout));
    }
    places.push(("replay".into(), common::seed(&land, &["replay", "@clerk", "--json"]).stdout));
    for (place, bytes) in &places {
        assert!(!contains(bytes, key.as_bytes()), "the key appears in {}", place.display());
    }
    let trace_text = std::fs::read_to_string(&trace).unwrap();
    assert!(trace_text.contains("status 401"), "the refusal was traced");
    // And replay verifies the LLM acts without calling the model again.
    let calls_before = endpoint.count();
    let replay = common::seed(&land, &["replay", "@clerk"]);
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stdout));
    assert_eq!(endpoint.count(), calls_before, "replay never calls the model");
}

#[test]
fn replay_rebuilds_the_request_and_names_a_changed_prompt() {
    let endpoint = FakeEndpoint::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let land = dir.path().join("land");
    let connections = dir.path().join("llm.toml");
    std::fs::write(&connections, one_connection(&endpoint, "")).unwrap();
    let fixture = llm_fixture("court.toml");
    let output = common::seed(
        &land,
        &["sim", fixture.to_str().unwrap(), "--ticks", "2", "--llm", connections.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let clean = common::seed(&land, &["replay", "@clerk", "--json"]);
    assert!(clean.status.success());
    // The clerk's role, edited after the fact: the face and the request change.
    let roles = dir.path().join("edited-roles");
    std::fs::create_dir(&roles).unwrap();
    std::fs::write(
        roles.join("clerk.toml"),
        std::fs::read_to_string(repo().join("tests/fixtures/llm/roles/clerk.toml"))
            .unwrap()
            .replace("Keep the record", "Shout"),
    )
    .unwrap();
    let edited = fixture_variant(dir.path(), "court.toml", "");
    let text = std::fs::read_to_string(&edited).unwrap();
    let text =
        text.replace(&repo().join("tests/fixtures/llm/roles").display().to_string(), &roles.display().to_string());
    std::fs::write(&edited, text).unwrap();
    let diverged = common::seed(&land, &["replay", "@clerk", "--fixture", edited.to_str().unwrap(), "--json"]);
    assert!(!diverged.status.success());
    // JSON lines: one per moment, then the summary.
    let text = String::from_utf8_lossy(&diverged.stdout).to_string();
    assert!(text.contains("llm.request"), "the request digest is named: {text}");
    assert!(text.contains("definition"), "classified as a definition change: {text}");
}

/// A clerk that remembers (the `recollecting` modifier: orientation `half`)
/// is offered an optional `importance` on every tool, and the prompt carries
/// what it recalls; the importance the model gives is recorded in the act,
/// one off its range fails the moment naming it, and the land replays clean
/// without the model. A forward clerk's tools have no such argument.
#[test]
fn a_remembering_model_may_say_how_important_an_act_is_and_it_is_recorded() {
    let endpoint = FakeEndpoint::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture_variant(dir.path(), "court.toml", "");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let remembering = text.replace(
        "flow = [{ role = \"clerk\" }]",
        "flow = [{ role = \"clerk\" }, { stack = true, role = \"recollecting\" }]",
    );
    assert_ne!(remembering, text, "the clerk's flow was found");
    std::fs::write(&fixture, remembering).unwrap();
    endpoint.push([
        Reply::tool("see", json!({"address": "/court", "importance": 7})),
        Reply::tool("see", json!({"address": "/hall", "importance": 11})),
    ]);
    let run = simulate(&fixture, &one_connection(&endpoint, ""), 3);
    let clerk = run.moments_of("clerk");
    assert_eq!(clerk[0]["outcome"], "act: see", "{}", clerk[0]);
    let outcome = clerk[1]["outcome"].as_str().unwrap();
    assert!(outcome.contains("`importance` that is not 0 to 10: 11"), "{outcome}");
    let requests = endpoint.received();
    let clerk_request =
        requests.iter().find(|request| request.body.to_string().contains("clerk of the court")).unwrap();
    assert_eq!(tool(&clerk_request.body, "see")["function"]["parameters"]["properties"]["importance"]["maximum"], 10);
    let system = clerk_request.body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("[recall]"), "{system}");
    let reel = common::seed(&run.land, &["reel", "@clerk", "--json"]);
    let reel: Json = serde_json::from_slice(&reel.stdout).unwrap();
    let acts: Vec<&Json> = reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "act").collect();
    assert_eq!(acts[0]["body"]["importance"], 7, "{}", acts[0]);
    assert_replays_clean(&run.land, &fixture);
    // The forward court's clerk is offered no importance.
    let forward = FakeEndpoint::start().unwrap();
    simulate(&llm_fixture("court.toml"), &one_connection(&forward, ""), 1);
    let request = &forward.received()[0].body;
    assert!(tool(request, "see")["function"]["parameters"]["properties"].get("importance").is_none(), "{request}");
}

/// The court with a second LLM being, the scribe, wearing the clerk's role,
/// and `budgets` as given (TOML appended to the fixture).
fn court_with_budgets(dir: &Path, budgets: &str) -> PathBuf {
    let scribe = "[[being]]\nname = \"scribe\"\ncognition = \"llm\"\nhome = \"/court\"\n\
                  default_role = \"clerk\"\nwake_every = 1\nflow = [{ role = \"clerk\" }]\n";
    fixture_variant(dir, "court.toml", &format!("{scribe}\n{budgets}"))
}

/// Each moment's outcome, as `call` (a model was called), `summon` (no
/// call: the owner summoned) or `budget` (no call, no act).
fn budget_outcomes(run: &Run, name: &str) -> Vec<&'static str> {
    run.moments_of(name)
        .iter()
        .map(|moment| {
            let outcome = moment["outcome"].as_str().unwrap();
            match (moment["llm"]["request"].is_string(), outcome) {
                (true, _) => "call",
                (false, "act: summon") => "summon",
                (false, outcome) if outcome.contains("no model call: budget budgets.") => "budget",
                (false, other) => panic!("@{name}: {other}: {moment}"),
            }
        })
        .collect()
}

#[test]
fn a_spent_budget_stops_the_calls_summons_the_owner_once_and_replays() {
    struct Case {
        budgets: &'static str,
        clerk: [&'static str; 4],
        scribe: [&'static str; 4],
        /// What the clerk's summons and failures name.
        budget: &'static str,
    }
    // The fake reports 110 tokens a call. A round's moments read one world,
    // so the land's budget is crossed by the round that spends it.
    let cases = [
        Case {
            budgets: "[config.budgets.beings.clerk]\ntokens_per_hour = 200\n",
            clerk: ["call", "call", "summon", "budget"],
            scribe: ["call", "call", "call", "call"],
            budget: "budget budgets.beings.clerk.tokens_per_hour is spent: 220 of 200 this hour",
        },
        Case {
            budgets: "[config.budgets.land]\ntokens_per_hour = 300\n",
            clerk: ["call", "call", "summon", "budget"],
            scribe: ["call", "call", "summon", "budget"],
            budget: "budget budgets.land.tokens_per_hour is spent: 440 of 300 this hour",
        },
        Case {
            budgets: "[config.budgets.roles.clerk]\ntokens_per_day = 400\n",
            clerk: ["call", "call", "summon", "budget"],
            scribe: ["call", "call", "summon", "budget"],
            budget: "budget budgets.roles.clerk.tokens_per_day is spent: 440 of 400 today",
        },
    ];
    for case in cases {
        let endpoint = FakeEndpoint::start().unwrap();
        // One call is answered in prose: it seals no act, and still counts.
        endpoint.push([Reply::Prose("Nothing to file.".into())]);
        let dir = tempfile::tempdir().unwrap();
        let fixture = court_with_budgets(dir.path(), case.budgets);
        let run = simulate(&fixture, &one_connection(&endpoint, ""), 4);
        assert_eq!(budget_outcomes(&run, "clerk"), case.clerk, "{}", case.budgets);
        assert_eq!(budget_outcomes(&run, "scribe"), case.scribe, "{}", case.budgets);
        let calls = [case.clerk, case.scribe].iter().flatten().filter(|outcome| **outcome == "call").count();
        assert_eq!(endpoint.count(), calls as u64, "no call past the budget: {}", case.budgets);
        let failure = run.moments_of("clerk")[3]["outcome"].as_str().unwrap().to_string();
        assert!(failure.contains(case.budget), "{failure}");
        // The owner (the operator, a person) was summoned once, naming the budget and how to raise it.
        let reel: Json =
            serde_json::from_slice(&common::seed(&run.land, &["reel", "@clerk", "--json"]).stdout).unwrap();
        let summons: Vec<&Json> =
            reel["facts"].as_array().unwrap().iter().filter(|fact| fact["body"]["budget"].is_object()).collect();
        assert_eq!(summons.len(), 1, "{reel}");
        let body = &summons[0]["body"];
        assert_eq!(body["call"]["target"], "@operator", "{body}");
        assert!(body["llm"].is_null(), "no model was called: {body}");
        let said = body["call"]["content"].as_str().unwrap();
        assert!(said.contains(case.budget) && said.contains("set-budget"), "{said}");
        // `seed beings --json` shows the spend against the budget.
        let beings: Json = serde_json::from_slice(&common::seed(&run.land, &["beings", "--json"]).stdout).unwrap();
        let clerk = beings.as_array().unwrap().iter().find(|being| being["name"] == "clerk").unwrap();
        let clerk_calls = case.clerk.iter().filter(|outcome| **outcome == "call").count() as u64;
        assert_eq!(clerk["spend"]["total"]["tokens"], clerk_calls * 110, "{clerk}");
        let spent = clerk["spend"]["budgets"].as_array().unwrap().iter().find(|line| line["isSpent"] == true);
        assert!(spent.is_some_and(|line| case.budget.contains(line["budget"].as_str().unwrap())), "{clerk}");
        let text = String::from_utf8(common::seed(&run.land, &["beings"]).stdout).unwrap();
        assert!(text.contains("spent: no calls until the next window"), "{text}");
        // The prose answer's spend fact is on a reel, and replay agrees with every moment.
        let spend_facts: usize = ["clerk", "scribe"]
            .iter()
            .map(|name| {
                let reel: Json =
                    serde_json::from_slice(&common::seed(&run.land, &["reel", &format!("@{name}"), "--json"]).stdout)
                        .unwrap();
                reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "spend").count()
            })
            .sum();
        assert_eq!(spend_facts, 1, "{}", case.budgets);
        assert_replays_clean(&run.land, &fixture);
        let verify = common::seed(&run.land, &["verify"]);
        assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    }
}

#[test]
fn a_budget_that_does_not_read_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = court_with_budgets(dir.path(), "[config.budgets.land]\ntokens_per_week = 5\n");
    let output = common::seed(&dir.path().join("land"), &["sim", fixture.to_str().unwrap(), "--ticks", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("config.budgets") && stderr.contains("unknown field `tokens_per_week`"), "{stderr}");
}

#[test]
fn the_being_page_shows_spend_against_its_budget_and_an_ancestor_raises_it_with_a_form() {
    let endpoint = FakeEndpoint::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A day's budget: the test cannot straddle its window's turn.
    let fixture = fixture_variant(dir.path(), "court.toml", "[config.budgets.beings.clerk]\ntokens_per_day = 200\n");
    let connections = dir.path().join("connections.toml");
    std::fs::write(&connections, one_connection(&endpoint, "")).unwrap();
    let up = common::portal::Up::start(&[
        "--fixture",
        fixture.to_str().unwrap(),
        "--llm",
        connections.to_str().unwrap(),
        "--round-ms",
        "100",
    ]);
    let spent = |being: &Json| being["spend"]["budgets"][0]["isSpent"] == true;
    let clerk = up.wait_for_being("clerk", std::time::Duration::from_secs(20), spent);
    assert_eq!(clerk["tokens"]["calls"], 2, "two calls spend 220 of 200: {clerk}");
    assert_eq!(clerk["spend"]["today"]["tokens"], 220, "{clerk}");
    assert_eq!(clerk["spend"]["budgets"][0]["budget"], "budgets.beings.clerk.tokens_per_day", "{clerk}");
    assert_eq!(clerk["youRaiseBudgetsAs"], "operator", "the operator is the clerk's ancestor: {clerk}");
    // The owner was summoned once; the page shows the spent budget and the form.
    let operator = up.wait_for_being("operator", std::time::Duration::from_secs(20), |operator| {
        operator["inbox"].as_array().is_some_and(|inbox| {
            inbox.iter().any(|summons| summons["content"].as_str().is_some_and(|text| text.contains("set-budget")))
        })
    });
    assert!(
        operator["spend"]["budgets"].as_array().is_some_and(Vec::is_empty),
        "no budget binds @operator: {operator}"
    );
    let (_, page) = up.page("/beings/clerk");
    assert!(page.contains("id=\"budgets\"") && page.contains("spent: no model calls until the next window"), "{page}");
    let offered = r#"{&quot;being&quot;:&quot;@clerk&quot;,&quot;tokens_per_day&quot;:400}"#;
    assert!(page.contains("id=\"raise-budget\"") && page.contains(offered), "{page}");
    // A limit that is not a whole number is refused, naming it, and stores nothing.
    let (cookie, csrf) = up.login();
    let form = |args: &str| json!({"csrf": csrf, "verb": "do", "action": "set-budget", "target": "/", "args": args});
    let refused =
        up.post_form(&cookie, "/beings/operator/act", &form(r#"{"being": "@clerk", "tokens_per_day": "lots"}"#));
    let refused = refused.text().unwrap();
    assert!(refused.contains("do set-budget: args.tokens_per_day must be an integer"), "{refused}");
    // A panel cannot be born by `be birth`: nothing would give it members.
    let (status, body) = up.post(
        "/api/v1/beings/operator/act",
        &json!({"verb": "be", "operation": "birth", "payload": {"name": "council", "cognition": "panel"}}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|text| text.contains("[being.panel]")), "{body}");
    let (status, body) = up.post(
        "/api/v1/beings/operator/act",
        &json!({"verb": "do", "action": "set-budget", "target": "/", "args": {"being": "@nobody", "tokens_per_day": 1}}),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|text| text.contains("nobody")), "{body}");
    assert_eq!(
        up.get("/api/v1/beings/clerk").1["spend"]["budgets"][0]["limit"],
        200,
        "a refused change leaves the budget as it was"
    );
    // The operator raises it with the page's form; the clerk calls again.
    if crate::opted_in("SEED_TEST_BROWSER", "the budget form in headless Chromium") {
        let screenshots = repo().join("target/portal-screenshots");
        let browser = common::webdriver::Browser::start(&screenshots);
        browser.log_in(&up.url, &up.token);
        browser.go(&format!("{}/beings/clerk", up.url));
        browser.wait_for_text("#budgets", "spent: no model calls until the next window");
        browser.scroll_to("#raise-budget");
        browser.screenshot("40-budget-spent");
        browser.click("#raise-budget button");
        browser.wait_for_text("#flash", "@operator: act: do");
        browser.go(&format!("{}/beings/clerk", up.url));
        browser.wait_for_text("#budgets", "400 per day");
        browser.scroll_to("#budgets");
        browser.screenshot("41-budget-raised");
    } else {
        let raised =
            up.post_form(&cookie, "/beings/operator/act", &form(r#"{"being": "@clerk", "tokens_per_day": 400}"#));
        assert_eq!(raised.status().as_u16(), 303);
    }
    let clerk = up.wait_for_being("clerk", std::time::Duration::from_secs(20), |clerk| {
        clerk["tokens"]["calls"] == 4 && spent(clerk)
    });
    assert_eq!(clerk["spend"]["budgets"][0]["limit"], 400, "{clerk}");
    let mut up = up;
    up.stop();
    let replay = common::seed(&up.land(), &["replay", "@clerk"]);
    assert!(replay.status.success(), "{}{}", common::stdout(&replay), common::stderr(&replay));
    let verify = common::seed(&up.land(), &["verify"]);
    assert!(verify.status.success(), "{}", common::stdout(&verify));
}

/// The panel court with `panel` (TOML of the bench's `[being.panel]`, where
/// `{dir}` is the folder of the panel's Rhai files).
fn panel_court(dir: &Path, panel: &str) -> PathBuf {
    let scripts = repo().join("tests/fixtures/llm/panel");
    fixture_variant(dir, "panel.toml", &panel.replace("{dir}", &scripts.display().to_string()))
}

fn summon_reply(target: &str, content: &str) -> Reply {
    Reply::tool("summon", json!({"target": target, "content": content}))
}

#[test]
fn a_panel_chooses_by_majority_rule_or_ruler_records_every_member_and_replays_without_a_model() {
    struct Case {
        name: &'static str,
        panel: &'static str,
        replies: Vec<Reply>,
        /// The chosen member, and the act's call (`None`: the moment failed with this text).
        chosen: Result<(&'static str, &'static str), &'static str>,
        /// Each proposer: its proposal's verb, or `!` and a word of its failure.
        members: &'static [(&'static str, &'static str)],
        calls: u64,
    }
    let llm = |name: &str| format!("{{ name = \"{name}\", kind = \"llm\" }}");
    let members = |names: &[&str]| names.iter().map(|name| llm(name)).collect::<Vec<_>>().join(", ");
    let two = format!("[being.panel]\nmembers = [{}]\n", members(&["north", "south"]));
    let with_script = format!(
        "[being.panel]\nmembers = [{}, {{ name = \"scribe\", kind = \"script\", script = \"{{dir}}/summon-ada.rhai\" }}]\n",
        members(&["north", "south"])
    );
    let ruled = format!(
        "[being.panel]\nmembers = [{}]\nchoose = \"ruler\"\nruler = \"judge\"\n",
        members(&["north", "south", "judge"])
    );
    let by_rule = format!(
        "[being.panel]\nmembers = [{}]\nchoose = \"rule\"\nrule = \"{{dir}}/last-proposer.rhai\"\n",
        members(&["north", "south"])
    );
    let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
    let cases = vec![
        Case {
            name: "a failing member does not vote; the script and the model agree",
            panel: leak(with_script),
            replies: vec![
                summon_reply("@ada", "The docket is ready."),
                Reply::ServerError,
                Reply::ServerError,
                Reply::ServerError,
                Reply::ServerError,
            ],
            chosen: Ok(("north", "summon")),
            members: &[("north", "summon"), ("south", "!no answer"), ("scribe", "summon")],
            calls: 1,
        },
        Case {
            name: "a tie goes to the earliest member",
            panel: leak(two.clone()),
            replies: vec![Reply::tool("see", json!({"address": "/hall"})), summon_reply("@ben", "Come to court.")],
            chosen: Ok(("north", "see")),
            members: &[("north", "see"), ("south", "summon")],
            calls: 2,
        },
        Case {
            name: "a ruler reads the proposals and chooses",
            panel: leak(ruled),
            replies: vec![
                Reply::tool("see", json!({"address": "/hall"})),
                summon_reply("@ben", "Come to court."),
                Reply::tool("choose", json!({"member": "south"})),
            ],
            chosen: Ok(("south", "summon")),
            members: &[("north", "see"), ("south", "summon")],
            calls: 3,
        },
        Case {
            name: "a rule chooses",
            panel: leak(by_rule),
            replies: vec![Reply::tool("see", json!({"address": "/hall"})), summon_reply("@ben", "Come to court.")],
            chosen: Ok(("south", "summon")),
            members: &[("north", "see"), ("south", "summon")],
            calls: 2,
        },
        Case {
            name: "no member proposes",
            panel: leak(two),
            replies: vec![Reply::Malformed, Reply::tool("fly", json!({}))],
            chosen: Err("no member of the panel proposed anything: north: the response is not JSON"),
            members: &[],
            calls: 2,
        },
    ];
    for case in cases {
        let endpoint = FakeEndpoint::start().unwrap();
        endpoint.push(case.replies.clone());
        let dir = tempfile::tempdir().unwrap();
        let fixture = panel_court(dir.path(), case.panel);
        let run = simulate(&fixture, &one_connection(&endpoint, ""), 1);
        let moment = run.moments_of("bench")[0];
        let reel: Json =
            serde_json::from_slice(&common::seed(&run.land, &["reel", "@bench", "--json"]).stdout).unwrap();
        let facts = reel["facts"].as_array().unwrap();
        match case.chosen {
            Ok((chosen, verb)) => {
                let act = facts
                    .iter()
                    .find(|fact| fact["kind"] == "act")
                    .unwrap_or_else(|| panic!("{}: {moment}", case.name));
                let panel = &act["body"]["panel"];
                assert_eq!(panel["chosen"], chosen, "{}: {panel}", case.name);
                assert_eq!(act["body"]["call"]["verb"], verb, "{}: {act}", case.name);
                let seen: Vec<(String, String)> = panel["members"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|member| {
                        let said = match member["proposal"]["call"]["verb"].as_str() {
                            Some(verb) => verb.to_string(),
                            None if member["no_answer"].is_string() => "!no answer".to_string(),
                            None => format!("!{}", member["failure"]),
                        };
                        (member["name"].as_str().unwrap().to_string(), said)
                    })
                    .collect();
                let expected: Vec<(String, String)> =
                    case.members.iter().map(|(name, said)| (name.to_string(), said.to_string())).collect();
                assert_eq!(seen, expected, "{}: {panel}", case.name);
                // Every answered call's request digest and answer are in the act.
                let llm_members =
                    panel["members"].as_array().unwrap().iter().filter(|member| member["llm"].is_object());
                assert!(llm_members.clone().all(|member| member["llm"]["request"].is_string()), "{panel}");
            }
            Err(failure) => {
                assert!(moment["outcome"].as_str().unwrap().contains(failure), "{}: {moment}", case.name);
                assert_eq!(facts.iter().filter(|fact| fact["kind"] == "spend").count() as u64, case.calls, "{reel}");
            }
        }
        // Every call is counted, sealed in the act or in spend facts.
        assert_eq!(reel["llm"]["calls"], case.calls, "{}: {}", case.name, reel["llm"]);
        let beings: Json = serde_json::from_slice(&common::seed(&run.land, &["beings", "--json"]).stdout).unwrap();
        let bench = beings.as_array().unwrap().iter().find(|being| being["name"] == "bench").unwrap();
        assert_eq!(bench["spend"]["total"]["calls"], case.calls, "{}: {bench}", case.name);
        // Replay answers each member from the record: no endpoint is running.
        drop(endpoint);
        assert_replays_clean(&run.land, &fixture);
        let verify = common::seed(&run.land, &["verify"]);
        assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    }
}

#[test]
fn a_panel_that_does_not_read_is_refused_at_its_line() {
    let check = |panel: &str, expected: &str| {
        let dir = tempfile::tempdir().unwrap();
        let fixture = panel_court(dir.path(), panel);
        let output = common::seed(&dir.path().join("land"), &["sim", fixture.to_str().unwrap(), "--ticks", "1"]);
        let stderr = common::stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{panel}: {stderr}");
        assert!(stderr.contains("being[2].panel") && stderr.contains(expected), "{panel}: {stderr}");
    };
    check("", "a panel being needs a `panel` quality");
    check("[being.panel]\nmembers = []\n", "1 to 8 members that propose, not 0");
    check("[being.panel]\nmembers = [{ name = \"a\", kind = \"oracle\" }]\n", "unknown variant `oracle`");
    check(
        "[being.panel]\nmembers = [{ name = \"a\", kind = \"llm\" }, { name = \"a\", kind = \"llm\" }]\n",
        "the name is used twice",
    );
    check("[being.panel]\nmembers = [{ name = \"a\", kind = \"script\" }]\n", "a script member needs `script`");
    check(
        "[being.panel]\nmembers = [{ name = \"a\", kind = \"llm\" }]\nchoose = \"ruler\"\nruler = \"b\"\n",
        "ruler \"b\" is not an llm member",
    );
    check(
        "[being.panel]\nmembers = [{ name = \"a\", kind = \"llm\" }]\nchoose = \"rule\"\n",
        "choose = \"rule\" needs `rule`",
    );
    check(
        "[being.panel]\nmembers = [{ name = \"a\", kind = \"script\", script = \"nowhere.rhai\" }]\n",
        "members[0].script: nowhere.rhai",
    );
}

#[test]
fn the_workshop_ruler_births_workers_hands_them_tasks_and_declares_the_work_done_when_both_answered() {
    let dir = tempfile::tempdir().unwrap();
    let land = dir.path().join("land");
    let fixture = repo().join("fixtures/workshop.toml");
    let output = common::seed(&land, &["sim", fixture.to_str().unwrap()]);
    assert!(output.status.success(), "{}", common::stderr(&output));
    let reel_of = |name: &str| -> Vec<Json> {
        let reel: Json = serde_json::from_slice(&common::seed(&land, &["reel", name, "--json"]).stdout).unwrap();
        reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "act").cloned().collect()
    };
    let ruler = reel_of("@ruler");
    let steps: Vec<(String, String)> = ruler
        .iter()
        .map(|act| {
            let call = &act["body"]["call"];
            let what = match call["verb"].as_str().unwrap() {
                "be" => format!("birth {}", call["payload"]["name"].as_str().unwrap()),
                "summon" => format!("summon {}", call["target"].as_str().unwrap()),
                "do" => format!("{} {}", call["action"].as_str().unwrap(), call["args"]["key"].as_str().unwrap()),
                other => other.to_string(),
            };
            (what, act["body"]["panel"]["chosen"].as_str().unwrap().to_string())
        })
        .collect();
    let expected = [
        ("birth worker-1", "planner"),
        ("birth worker-2", "planner"),
        ("summon @worker-1", "planner"),
        ("summon @worker-2", "planner"),
        ("publish-signal workshop.done", "auditor"),
    ];
    assert_eq!(steps, expected.map(|(what, who)| (what.to_string(), who.to_string())), "{ruler:?}");
    // Each act holds both members' proposals, chosen by the rule.
    for act in &ruler {
        let panel = &act["body"]["panel"];
        assert_eq!(panel["chosen_by"], "rule");
        let names: Vec<&str> =
            panel["members"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["planner", "auditor"], "{panel}");
        assert!(panel["members"].as_array().unwrap().iter().all(|m| m["output"].is_string()), "{panel}");
    }
    // The work was declared done only after both workers answered.
    for worker in ["@worker-1", "@worker-2"] {
        let answers = reel_of(worker);
        assert_eq!(answers.len(), 1, "{worker}: {answers:?}");
        assert!(answers[0]["body"]["call"]["content"].as_str().unwrap().starts_with("done: "), "{answers:?}");
        assert_eq!(answers[0]["body"]["call"]["target"], "@ruler");
    }
    let declared = &ruler[4]["body"]["effects"][0];
    assert_eq!(*declared, json!({"op": "set-signal", "key": "workshop.done", "value": true}));
    let answered_at = |worker: &str| reel_of(worker)[0]["landSeq"].as_u64().unwrap();
    let declared_at = ruler[4]["landSeq"].as_u64().unwrap();
    assert!(declared_at > answered_at("@worker-1") && declared_at > answered_at("@worker-2"));
    assert_replays_clean(&land, &fixture);
}

#[test]
fn the_moment_page_shows_each_panel_members_proposal_and_the_choice() {
    let fixture = repo().join("fixtures/workshop.toml");
    let up = common::portal::Up::start(&["--fixture", fixture.to_str().unwrap(), "--round-ms", "50"]);
    up.wait_for_being("ruler", std::time::Duration::from_secs(20), |ruler| ruler["acts"].as_u64() >= Some(5));
    // Seq 5 is the ruler's fifth act: declaring the work done, the auditor's word.
    let (status, moment) = up.get("/api/v1/beings/ruler/moments/5");
    assert_eq!(status, 200, "{moment}");
    let panel = &moment["panel"];
    assert_eq!(panel["chosen"], "auditor", "{panel}");
    assert_eq!(panel["chosenBy"], "rule", "{panel}");
    assert_eq!(panel["members"][0]["proposal"], "only look", "{panel}");
    assert!(panel["members"][1]["proposal"].as_str().unwrap().starts_with("did publish-signal at /"), "{panel}");
    assert_eq!(moment["matches"], true, "the moment replays: {moment}");
    let (_, page) = up.page("/beings/ruler/moments/5");
    assert!(
        page.contains("id=\"panel\"") && page.contains("chose <strong>auditor</strong>'s proposal by rule"),
        "{page}"
    );
    if crate::opted_in("SEED_TEST_BROWSER", "the panel on the moment page in headless Chromium") {
        let browser = common::webdriver::Browser::start(&repo().join("target/portal-screenshots"));
        browser.log_in(&up.url, &up.token);
        browser.go(&format!("{}/beings/ruler/moments/5", up.url));
        browser.wait_for_text("#panel-choice", "auditor");
        browser.scroll_to("#panel-choice");
        browser.screenshot("42-panel-moment");
    }
}

/// The market (fixtures/market.toml) with `extra` appended, its folders made absolute.
fn market_variant(dir: &Path, extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("fixtures/market.toml")).unwrap();
    let text = text
        .replace("\"../", &format!("\"{}/", repo().display()))
        .replace("\"roles\"]", &format!("\"{}\"]", repo().join("fixtures/roles").display()));
    let path = dir.join("market-variant.toml");
    std::fs::write(&path, format!("{text}\n{extra}\n")).unwrap();
    path
}

/// Each of `name`'s facts of `kind` on its reel.
fn facts_of(land: &Path, name: &str, kind: &str) -> Vec<Json> {
    let reel: Json = serde_json::from_slice(&common::seed(land, &["reel", name, "--json"]).stdout).unwrap();
    reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == kind).cloned().collect()
}

#[test]
fn with_an_embedding_connection_each_act_gets_a_vector_recall_weighs_similarity_and_replay_asks_nothing() {
    let endpoint = FakeEndpoint::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fixture = market_variant(dir.path(), "[config]\nembedding_connection = \"fake\"\n");
    let run = simulate(&fixture, &one_connection(&endpoint, ""), 40);
    let again = simulate(&fixture, &one_connection(&endpoint, ""), 40);
    assert_eq!(run.summary.world_hash, again.summary.world_hash, "the same vectors, the same land");
    let mut acts_in_all = 0;
    for name in ["@ada", "@fay", "@bo", "@cy"] {
        let acts = facts_of(&run.land, name, "act");
        let vectors = facts_of(&run.land, name, "embedding");
        // One vector per act, on the actor's own reel, sealed after it.
        let embedded: Vec<&Json> = vectors.iter().map(|vector| &vector["body"]["fact"]).collect();
        let act_ids: Vec<&Json> = acts.iter().map(|act| &act["id"]).collect();
        assert_eq!(embedded, act_ids, "{name}");
        for (act, vector) in acts.iter().zip(&vectors) {
            assert!(vector["landSeq"].as_u64() > act["landSeq"].as_u64(), "{name}: {vector}");
            assert_eq!(vector["body"]["model"], "fake-model");
        }
        acts_in_all += acts.len() as u64;
    }
    // @ada remembers (`half`): each of her summoned moments recorded its query's vector.
    let ada = facts_of(&run.land, "@ada", "act");
    let queried: Vec<&Json> = ada.iter().filter(|act| act["body"]["recall_query"].is_object()).collect();
    assert!(!queried.is_empty(), "{ada:?}");
    assert!(queried.iter().all(|act| act["body"]["recall_query"]["failure"].is_null()), "{queried:?}");
    // @fay is `forward`: no recall, no query.
    assert!(facts_of(&run.land, "@fay", "act").iter().all(|act| act["body"].get("recall_query").is_none()));
    assert!(endpoint.embedding_count() >= 2 * (acts_in_all + queried.len() as u64));
    // The query's vector and the items' are comparable: a summons @ada was
    // asked about resembles the act that sent it.
    let bytes = |value: &Json| -> Vec<i8> {
        let hex = value.as_str().unwrap();
        (0..hex.len()).step_by(2).map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap() as i8).collect()
    };
    let sent: Vec<Vec<i8>> = ["@bo", "@cy"]
        .iter()
        .flat_map(|name| facts_of(&run.land, name, "embedding"))
        .map(|f| bytes(&f["body"]["vector"]))
        .collect();
    let best = queried
        .iter()
        .map(|act| bytes(&act["body"]["recall_query"]["vector"]))
        .flat_map(|query| sent.iter().map(move |item| seed::embedding::similarity_milli(&query, item)))
        .max()
        .unwrap();
    assert!(best > 0, "a query resembles what was said: {best}");
    // The model is gone: replay gives every vector back from the facts,
    // of the whole land and of one being (which folds the others' vectors).
    drop(endpoint);
    assert_replays_clean(&run.land, &fixture);
    let one = common::seed(&run.land, &["replay", "@ada", "--fixture", fixture.to_str().unwrap()]);
    assert!(one.status.success() && common::stdout(&one).contains(" 0 divergence(s)"), "{}", common::stdout(&one));
    let verify = common::seed(&run.land, &["verify"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
}

#[test]
fn without_an_answer_the_act_records_why_recall_is_lexical_and_replay_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = market_variant(dir.path(), "[config]\nembedding_connection = \"gone\"\n");
    // A connection nothing answers (a port just closed), tried once.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let connections = format!(
        "[connection.gone]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"nothing\"\nretries_max = 0\ntimeout_ms = 500\n"
    );
    let run = simulate(&fixture, &connections, 12);
    for name in ["@ada", "@fay", "@bo", "@cy"] {
        assert!(facts_of(&run.land, name, "embedding").is_empty(), "{name}: no vector was given");
    }
    let ada = facts_of(&run.land, "@ada", "act");
    let queried: Vec<&Json> = ada.iter().filter(|act| act["body"]["recall_query"].is_object()).collect();
    assert!(!queried.is_empty(), "{ada:?}");
    for act in &queried {
        let failure = act["body"]["recall_query"]["failure"].as_str().unwrap();
        assert!(failure.contains("gone: cannot connect"), "{failure}");
    }
    assert_replays_clean(&run.land, &fixture);
}
