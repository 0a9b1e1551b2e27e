//! The MCP edge driven by a real MCP client we did not write: the official
//! Python SDK (`mcp` from PyPI, in a cached environment that
//! `scripts/mcp-client` builds once), over streamable HTTP at `/mcp` (both
//! an `initialize` connection of 2025-11-25 and a stateless 2026-07-28 one
//! with `subscriptions/listen`) and over stdio (`seed mcp`). The client's
//! transcript (tests/mcp/client.py) is held here to what the land must have
//! done, and every act it caused replays byte for byte.

use crate::common::portal::Up;
use crate::common::stderr;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn mcp_fixture() -> PathBuf {
    repo().join("tests/fixtures/mcp/mcp.toml")
}

/// Runs the Python client with `arguments`, its transcript as JSON.
fn client(arguments: &[&str], env: &[(&str, &str)]) -> Value {
    let output = Command::new(repo().join("scripts/mcp-client"))
        .arg("run")
        .args(arguments)
        .envs(env.iter().copied())
        .output()
        .expect("scripts/mcp-client runs");
    assert!(
        output.status.success(),
        "the MCP client failed ({:?}):\n{}\n{}",
        arguments,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!("the client's transcript is not JSON ({error}): {}", String::from_utf8_lossy(&output.stdout))
    })
}

/// What the scenario must have seen, whichever the transport and protocol.
fn check_scenario(seen: &Value, protocol: &str) {
    assert_eq!(seen["protocol"], protocol, "{seen}");
    // The pilot's verbs (it may see, do and summon, not be), then the read tools.
    assert_eq!(seen["tools"], json!(["see", "do", "summon", "list_beings", "read_reel", "face", "replay", "what_if"]));
    assert_eq!(seen["doActions"], json!(["publish-signal"]), "allowed entries are the tool's enum");
    assert_eq!(seen["see"]["isError"], false, "{seen}");
    assert_eq!(seen["see"]["structured"]["outcome"], "act: see");
    // An entry the role does not offer: the verb layer's refusal, as a tool error.
    assert_eq!(seen["offList"]["isError"], true);
    assert_eq!(seen["offList"]["structured"]["error"]["code"], "forbidden");
    assert!(seen["offList"]["text"].as_str().unwrap().contains("not within canDo"), "{seen}");
    let facts = seen["reel"]["structured"]["facts"].as_array().expect("facts");
    let last = facts.last().expect("a fact");
    assert_eq!(last["kind"], "act", "the see is the reel's latest fact: {last}");
    assert_eq!(last["landSeq"], seen["see"]["structured"]["landSeq"]);
    assert_eq!(seen["faceResource"]["being"], "pilot");
    assert_eq!(seen["faceResource"]["primary"], "pilot");
    let resources = seen["resources"].as_array().unwrap();
    assert!(resources.contains(&json!("seed://beings/pilot/reel")), "{seen}");
    assert!(resources.contains(&json!("seed://roles/captain")), "{seen}");
    // Opening the deck makes the pilot a captain: its tools changed, and the
    // client was told, as it was of the reel's new fact.
    assert_eq!(seen["open"]["isError"], false, "{seen}");
    let events: Vec<&str> = seen["events"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let told = |what: &[&str]| what.iter().any(|name| events.contains(name));
    assert!(told(&["notifications/tools/list_changed", "ToolsListChanged"]), "no list_changed: {events:?}");
    assert!(told(&["notifications/resources/updated", "ResourceUpdated"]), "no resource update: {events:?}");
    assert_eq!(seen["doActionsAfter"], json!(["publish-signal", "create-matter"]));
    assert_eq!(seen["captain"]["isError"], false, "the captain's verb is sealed: {seen}");
    assert_eq!(seen["captain"]["structured"]["outcome"], "act: do");
    // A tool never listed is the protocol's error, not a tool result.
    assert_eq!(seen["unknownTool"]["code"], -32602, "{seen}");
}

/// A raw POST to `/mcp` with `token` (or none): its status and headers.
fn post_mcp(up: &Up, query: &str, token: Option<&str>) -> (u16, String, Value) {
    let mut request = up
        .http
        .post(format!("{}/mcp{query}", up.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        );
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().expect("POST /mcp answered");
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    (status, challenge, response.json().unwrap_or(Value::Null))
}

fn set_deck(up: &Up, open: bool) {
    let (status, body) = up.post("/api/v1/signals", &json!({"key": "deck.open", "value": open}));
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_real_mcp_client_drives_a_being_over_http_and_stdio_and_every_act_replays() {
    if !crate::opted_in("SEED_TEST_MCP", "a real MCP client (scripts/mcp-client)") {
        return;
    }
    let fixture = mcp_fixture();
    let mut up = Up::start(&["--fixture", fixture.to_str().unwrap()]);
    let endpoint = format!("{}/mcp?being=pilot", up.url);

    let legacy = client(&["http", &endpoint, &up.token, "legacy"], &[]);
    check_scenario(&legacy, "2025-11-25");
    set_deck(&up, false);
    let modern = client(&["http", &endpoint, &up.token, "modern"], &[]);
    check_scenario(&modern, "2026-07-28");
    set_deck(&up, false);

    // The protected-resource metadata, and the spec's answer to each bad token.
    let (status, metadata) = up.get("/.well-known/oauth-protected-resource/mcp");
    assert_eq!(status, 200);
    assert_eq!(metadata["resource"], format!("{}/mcp", up.url));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    let (status, challenge, body) = post_mcp(&up, "", None);
    assert_eq!(status, 401, "{body}");
    assert!(challenge.starts_with("Bearer resource_metadata=\""), "{challenge}");
    assert!(challenge.contains("/.well-known/oauth-protected-resource/mcp"), "{challenge}");
    let (status, challenge, _) = post_mcp(&up, "", Some("seed-op-not-a-token"));
    assert_eq!(status, 401);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // A person's token drives the person's own being, not the pilot.
    let (status, invited) = up.post("/api/v1/accounts", &json!({"account": "rin"}));
    assert_eq!(status, 201, "{invited}");
    let first_token = invited["token"].as_str().unwrap().to_string();
    let (status, challenge, body) = post_mcp(&up, "?being=pilot", Some(&first_token));
    assert_eq!(status, 403, "{body}");
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    assert!(body["error"]["message"].as_str().unwrap().contains("@pilot"), "{body}");
    let (status, _, body) = post_mcp(&up, "", Some(&first_token));
    assert_eq!(status, 200, "the person's own being: {body}");
    let refused = client(&["refused", "http", &endpoint, &first_token], &[]);
    // The client cannot connect (it reports the 403 as an error response).
    assert_eq!(refused["connected"], false, "{refused}");
    // A new token expires the first.
    let (status, renewed) = up.post("/api/v1/accounts/rin/token", &json!({}));
    assert_eq!(status, 200, "{renewed}");
    let (status, challenge, _) = post_mcp(&up, "", Some(&first_token));
    assert_eq!(status, 401, "an expired token");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    let person_token = renewed["token"].as_str().unwrap().to_string();
    up.stop();

    // Over stdio, the same scenario on the same land (now served by `seed mcp`).
    let land = up.land();
    let binary = env!("CARGO_BIN_EXE_seed");
    let over_stdio = client(&["stdio", binary, land.to_str().unwrap(), "pilot"], &[]);
    check_scenario(&over_stdio, "2025-11-25");
    // A person's token may not drive the pilot over stdio either.
    let refused = Command::new(binary)
        .args(["--land", land.to_str().unwrap(), "mcp", "--being", "pilot"])
        .env("SEED_MCP_TOKEN", &person_token)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let told = stderr(&refused);
    assert!(told.contains("pilot may not be driven over MCP") && told.contains("@pilot"), "{told}");
    assert!(refused.stdout.is_empty(), "stdout is the protocol's: nothing else is written there");
    let refused = Command::new(binary)
        .args(["--land", land.to_str().unwrap(), "mcp"])
        .env("SEED_MCP_TOKEN", &first_token)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("SEED_MCP_TOKEN is not a current token"), "{}", stderr(&refused));

    // Three scenarios' acts (sees, refusals sealed nowhere, signals, matter) replay.
    crate::common::assert_verifies_and_replays_clean(&land);
}
