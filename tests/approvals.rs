//! Approval gates end to end on `tests/fixtures/approvals` (docs/approvals.md):
//! a teller's gated calls wait as requests, the manager approves, denies or
//! edits them through the approvals API, an intern named by no gate is
//! refused, an unanswered request expires, a decision cannot be turned on
//! another request, two scripted auditors race to decide one request, a
//! request survives a restart of `seed up`; and every act replays byte for
//! byte with `seed replay --all`.

use crate::common::portal::Up;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/approvals/approvals.toml").display().to_string()
}

fn start() -> Up {
    Up::start(&["--fixture", &fixture(), "--round-ms", "50"])
}

/// The teller calls `publish-signal` KEY = VALUE: (status, answer).
fn teller_publishes(up: &Up, key: &str, value: Value) -> (u16, Value) {
    up.post(
        "/api/v1/beings/teller/act",
        &json!({"verb": "do", "target": "/", "action": "publish-signal",
                                                   "args": {"key": key, "value": value}}),
    )
}

fn signal(up: &Up, key: &str) -> Value {
    up.get("/api/v1/world").1["signals"][key].clone()
}

fn approvals(up: &Up) -> Vec<Value> {
    let (status, body) = up.get("/api/v1/approvals");
    assert_eq!(status, 200, "{body}");
    body["approvals"].as_array().cloned().unwrap_or_default()
}

/// The request the teller's latest call made (the newest waiting one).
fn newest_request(up: &Up) -> Value {
    approvals(up).into_iter().max_by_key(|request| request["requestedAtSeq"].as_u64()).expect("a waiting request")
}

fn decide(up: &Up, request: &Value, body: Value) -> (u16, Value) {
    up.post(&format!("/api/v1/approvals/{}", request["request"].as_str().expect("an id")), &body)
}

/// Waits until `check` holds, or fails saying `what`.
fn wait_until(what: &str, check: impl Fn() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < WAIT, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The teller's reel entries whose gate is in `state`, newest first.
fn teller_gates(up: &Up, state: &str) -> Vec<Value> {
    let (_, teller) = up.get("/api/v1/beings/teller");
    let reel = teller["reel"].as_array().cloned().unwrap_or_default();
    reel.into_iter().filter(|fact| fact["gate"]["state"] == state).collect()
}

fn message(answer: &Value) -> String {
    answer["error"]["message"].as_str().unwrap_or_default().to_string()
}

#[test]
fn gated_calls_wait_for_a_named_approver_and_every_outcome_is_a_fact_that_replays() {
    let mut up = start();

    // Under the gate's threshold: applied at once.
    let (status, answer) = teller_publishes(&up, "bank.payout", json!(50));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(signal(&up, "bank.payout"), json!(50));
    assert!(approvals(&up).is_empty());

    // Over it: sealed as a request, nothing applied, the approvers summoned.
    let (status, answer) = teller_publishes(&up, "bank.payout", json!(500));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(signal(&up, "bank.payout"), json!(50), "a request applies nothing");
    let first = newest_request(&up);
    assert_eq!(first["requester"], "@teller");
    assert_eq!(first["rule"], "teller#0");
    assert_eq!(first["approvers"], json!(["@manager", "@deputy"]));
    assert_eq!(first["mayDecideAs"], json!(["@deputy", "@manager"]));
    let (_, manager) = up.get("/api/v1/beings/manager");
    assert!(manager["inbox"]
        .as_array()
        .is_some_and(|inbox| inbox.iter().any(|summon| summon["summon"] == first["request"])));

    // An approver the gate does not name, and the requester itself, are refused;
    // nothing is sealed.
    let before = up.cursor();
    let (status, answer) = decide(&up, &first, json!({"as": "intern", "decision": "approve"}));
    assert_eq!(status, 403, "{answer}");
    assert!(message(&answer).contains("@intern may not decide request"), "{answer}");
    assert!(message(&answer).contains("@manager, @deputy"), "{answer}");
    let (status, answer) = decide(&up, &first, json!({"as": "teller", "decision": "approve"}));
    assert_eq!(status, 403, "{answer}");
    // Bad decisions name what is wrong.
    for (body, needle) in [
        (json!({"as": "manager", "decision": "maybe"}), "\"approve\" or \"deny\""),
        (
            json!({"as": "manager", "decision": "deny", "args": {"key": "bank.payout", "value": 1}}),
            "a denial edits nothing",
        ),
        (json!({"as": "manager", "decision": "approve", "content": "x"}), "the request is a do call"),
        (json!({"as": "manager", "decision": "approve", "amount": 3}), "`amount` is not a field"),
    ] {
        let (status, answer) = decide(&up, &first, body.clone());
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(message(&answer).contains(needle), "{body}: {answer}");
    }
    assert_eq!(up.cursor(), before, "refused decisions sealed nothing");

    // Edit and approve: the teller's next moment applies the edited call.
    let (status, answer) = decide(
        &up,
        &first,
        json!({"as": "manager", "decision": "approve", "reason": "half now",
                                    "args": {"key": "bank.payout", "value": 250}}),
    );
    assert_eq!(status, 200, "{answer}");
    wait_until("the edited payout applies", || signal(&up, "bank.payout") == json!(250));
    let applied = teller_gates(&up, "applied");
    assert_eq!(applied.len(), 1, "{applied:?}");
    assert_eq!(applied[0]["gate"]["request"], first["request"]);
    assert!(approvals(&up).is_empty(), "an applied request no longer waits");

    // The same decision again, or turned on another request, is refused.
    let (status, answer) = decide(&up, &first, json!({"as": "deputy", "decision": "approve"}));
    assert_eq!(status, 404, "{answer}");
    let (status, _) = teller_publishes(&up, "bank.payout", json!(700));
    assert_eq!(status, 200);
    let second = newest_request(&up);
    let replayed = json!({"verb": "be", "operation": "approve",
                          "payload": {"request": first["request"], "decision": "approve"}});
    let (status, answer) = up.post("/api/v1/beings/manager/act", &replayed);
    assert_eq!(status, 404, "a decision names its one request: {answer}");
    assert_eq!(approvals(&up).len(), 1, "the other request still waits");

    // Deny: closed as a fact on the teller's reel, nothing applied.
    let (status, answer) = decide(&up, &second, json!({"as": "deputy", "decision": "deny", "reason": "too much"}));
    assert_eq!(status, 200, "{answer}");
    wait_until("the denial closes the request", || !teller_gates(&up, "closed").is_empty());
    let closed = &teller_gates(&up, "closed")[0]["gate"];
    assert_eq!(closed["outcome"], "denied");
    assert!(closed["reason"].as_str().is_some_and(|reason| reason.contains("@deputy: too much")), "{closed}");
    assert_eq!(signal(&up, "bank.payout"), json!(250));

    // An urgent notice nobody answers expires at its time-to-live, as a fact.
    let (status, _) = teller_publishes(&up, "bank.urgent", json!("fire drill"));
    assert_eq!(status, 200);
    wait_until("the urgent notice expires", || {
        teller_gates(&up, "closed").iter().any(|fact| fact["gate"]["outcome"] == "expired")
    });
    assert!(signal(&up, "bank.urgent").is_null());
    let expired = approvals(&up);
    assert!(expired.is_empty(), "{expired:?}");

    // A ledger entry waits for whoever wears `auditor`: both scripted
    // checkers are summoned in one round and both approve; the first sealed
    // decides and the other is refused at the seal.
    let entry = json!({"verb": "do", "target": "/bank#entry-1", "action": "create-matter",
                       "args": {"kind": "entry", "fields": {"amount": 20}}});
    let (status, answer) = up.post("/api/v1/beings/teller/act", &entry);
    assert_eq!(status, 200, "{answer}");
    wait_until("an auditor's approval applies the entry", || {
        teller_gates(&up, "applied")
            .iter()
            .any(|fact| fact["summary"].as_str().is_some_and(|s| s.contains("create-matter")))
    });
    let decisions: usize = ["checker-a", "checker-b"]
        .iter()
        .map(|name| {
            let (_, checker) = up.get(&format!("/api/v1/beings/{name}"));
            checker["reel"]
                .as_array()
                .map_or(0, |reel| reel.iter().filter(|fact| fact["gate"]["state"] == "decided").count())
        })
        .sum();
    assert_eq!(decisions, 1, "exactly one auditor's decision is sealed");

    // A gated summons and a gated birth wait like the rest; the birth
    // happens once approved.
    let (status, _) =
        up.post("/api/v1/beings/teller/act", &json!({"verb": "summon", "target": "@vault", "content": "open up"}));
    assert_eq!(status, 200);
    let summons = newest_request(&up);
    assert_eq!(summons["call"]["verb"], "summon");
    let (_, vault) = up.get("/api/v1/beings/vault");
    assert_eq!(vault["inbox"], json!([]), "a summons waiting for approval is not delivered");
    let (status, answer) =
        decide(&up, &summons, json!({"as": "manager", "decision": "approve", "content": "open up, please"}));
    assert_eq!(status, 200, "{answer}");
    let (status, _) = up.post(
        "/api/v1/beings/teller/act",
        &json!({"verb": "be", "operation": "birth", "payload": {"name": "cashier", "cognition": "human", "defaultRole": "teller"}}),
    );
    assert_eq!(status, 200);
    assert_eq!(up.get("/api/v1/beings/cashier").0, 404, "no birth before the approval");

    // A restart while the birth waits: still waiting after it, then approved.
    up.restart(&["--fixture", &fixture(), "--round-ms", "50"]);
    // (The approved summons may be waiting too, decided, to be applied.)
    let waiting = approvals(&up);
    let birth: Vec<&Value> = waiting.iter().filter(|request| request["call"]["operation"] == "birth").collect();
    assert_eq!(birth.len(), 1, "{waiting:?}");
    assert!(birth[0]["decision"].is_null(), "{waiting:?}");
    let (status, answer) = decide(&up, birth[0], json!({"as": "manager", "decision": "approve"}));
    assert_eq!(status, 200, "{answer}");
    wait_until("the approved birth happens", || up.get("/api/v1/beings/cashier").0 == 200);
    wait_until("the summons reached the vault's memory", || {
        teller_gates(&up, "applied")
            .iter()
            .any(|fact| fact["summary"].as_str().is_some_and(|s| s.contains("open up, please")))
    });

    // The portal's audit: every step, newest first, each citing its fact.
    let (status, audit) = up.get("/api/v1/audit?tool=publish-signal");
    assert_eq!(status, 200, "{audit}");
    let kinds: Vec<&str> =
        audit["lines"].as_array().expect("lines").iter().filter_map(|line| line["kind"].as_str()).collect();
    for kind in ["call", "request", "decision", "applied", "closed"] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    for (query, field) in [("?since=soon", "since"), ("?who=me", "who"), ("?being=nobody", "")] {
        let (status, refused) = up.get(&format!("/api/v1/audit{query}"));
        assert!(status == 400 || status == 404, "{query}: {refused}");
        assert!(message(&refused).contains(field), "{query}: {refused}");
    }

    // Every case replays byte for byte; the land verifies.
    up.stop();
    let land = up.land();
    let run = |arguments: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(&land)
            .args(arguments)
            .output()
            .expect("seed runs");
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "{arguments:?}: {text}");
        text
    };
    run(&["verify"]);

    // `seed audit`: the payout edited by the manager, cited both ways.
    let audit: Value =
        serde_json::from_str(&run(&["audit", "--json", "--being", "@teller", "--tool", "publish-signal"]))
            .expect("JSON");
    assert_eq!(audit["verified"], true, "{audit}");
    let lines = audit["lines"].as_array().expect("lines");
    let applied: Vec<&Value> = lines.iter().filter(|line| line["kind"] == "applied").collect();
    assert_eq!(applied.len(), 1, "{audit}");
    assert_eq!(applied[0]["approvedBy"], "@manager");
    assert_eq!(applied[0]["call"]["args"], json!({"key": "bank.payout", "value": 250}));
    assert_eq!(applied[0]["effects"][0]["value"], json!(250), "what came back");
    let decision = lines.iter().find(|line| line["fact"] == applied[0]["decision"]).expect("the decision is listed");
    assert_eq!((decision["being"].clone(), decision["reason"].clone()), (json!("@manager"), json!("half now")));
    assert!(lines.iter().any(|line| line["kind"] == "closed" && line["outcome"] == "expired"), "{audit}");
    assert!(lines.iter().all(|line| line["kind"] != "request" || line["tool"] == "publish-signal"), "{audit}");
    let later: Value =
        serde_json::from_str(&run(&["audit", "--json", "--since", "2100-01-01T00:00:00Z"])).expect("JSON");
    assert_eq!(later["lines"], json!([]));
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(&land)
        .args(["audit", "--since", "last tuesday"])
        .output()
        .expect("seed runs");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--since \"last tuesday\" is neither"), "{bad:?}");

    // The same audit from exported bundles alone, verified, with no land.
    let bundles = up.dir.path().join("bundles");
    std::fs::create_dir_all(&bundles).expect("a folder");
    let mut from_bundles = vec!["audit".to_string(), "--json".into(), "--tool".into(), "publish-signal".into()];
    for being in ["teller", "manager", "deputy"] {
        let file = bundles.join(format!("{being}.bundle")).display().to_string();
        run(&["export", &format!("@{being}"), "-o", &file]);
        from_bundles.extend(["--bundle".to_string(), file]);
    }
    let output =
        std::process::Command::new(env!("CARGO_BIN_EXE_seed")).args(&from_bundles).output().expect("seed runs");
    assert!(output.status.success(), "{output:?}");
    let offline: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(offline["verified"], true);
    let offline_applied: Vec<&Value> =
        offline["lines"].as_array().expect("lines").iter().filter(|line| line["kind"] == "applied").collect();
    assert_eq!(offline_applied.len(), 1, "{offline}");
    assert_eq!(
        (offline_applied[0]["fact"].clone(), offline_applied[0]["approvedBy"].clone()),
        (applied[0]["fact"].clone(), json!("@manager"))
    );
    assert_eq!(offline_applied[0]["landSeq"], Value::Null, "a bundle holds no land order");
    // A bundle altered after export is refused, naming it.
    let teller_bundle = bundles.join("teller.bundle");
    let mut bytes = std::fs::read(&teller_bundle).expect("the bundle");
    let at = bytes.windows(11).position(|window| window == b"bank.payout").expect("a payout in the bundle");
    bytes[at] = b'B';
    std::fs::write(&teller_bundle, bytes).expect("rewrite");
    let altered = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["audit", "--bundle", &teller_bundle.display().to_string()])
        .output()
        .expect("seed runs");
    assert!(!altered.status.success());
    assert!(String::from_utf8_lossy(&altered.stderr).contains("teller.bundle"), "{altered:?}");
    let replay: Value = serde_json::from_str(&run(&["replay", "--all", "--json"])).expect("JSON");
    assert_eq!(replay["divergences"], json!(0), "{replay}");
    // A land whose stored signature was altered: the audit says it cannot be trusted.
    crate::common::flip_stored_byte(&land, "@manager", 1, 10);
    let tampered = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(&land)
        .arg("audit")
        .output()
        .expect("seed runs");
    assert_eq!(tampered.status.code(), Some(1), "{tampered:?}");
    assert!(String::from_utf8_lossy(&tampered.stderr).contains("does not verify"), "{tampered:?}");
}

/// `tests/fixtures/worlds/treasury` in `seed sim`: a scripted clerk's gated
/// payouts are approved, approved as edited, denied, or left to expire by a
/// scripted boss; the same world hash on one thread and two, no warning
/// that the boss (summoned only by the gate) never wakes, every outcome in
/// the audit, and the land replays byte for byte.
#[test]
fn a_simulation_approves_edits_denies_and_expires_the_same_way_on_any_thread_count() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/worlds/treasury/world.toml");
    let scratch = tempfile::tempdir().expect("a folder");
    let seed = |land: &std::path::Path, arguments: &[&str]| -> Value {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(land)
            .args(arguments)
            .output()
            .expect("seed runs");
        assert!(output.status.success(), "{arguments:?}: {}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).expect("JSON")
    };
    let fixture = fixture.display().to_string();
    let one = scratch.path().join("one");
    let two = scratch.path().join("two");
    let first = seed(&one, &["sim", &fixture, "--threads", "1", "--json"]);
    let second = seed(&two, &["sim", &fixture, "--threads", "2", "--json"]);
    assert_eq!(first["worldHash"], second["worldHash"]);
    assert_eq!(first["failures"], 0, "{first}");
    assert_eq!(first["warnings"], json!([]), "the boss is summoned by the gate: {first}");
    let audit = seed(&one, &["audit", "--json", "--being", "@clerk"]);
    assert_eq!(audit["verified"], true);
    let outcomes: Vec<(String, Value)> = audit["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .filter(|line| line["kind"] == "applied" || line["kind"] == "closed")
        .map(|line| (line["outcome"].as_str().unwrap_or("applied").to_string(), line["call"]["args"]["value"].clone()))
        .collect();
    let expected: Vec<(String, Value)> = [
        ("applied", 150),
        ("applied", 180),
        ("denied", 350),
        ("denied", 400),
        ("expired", 550),
        ("expired", 600),
        ("expired", 650),
    ]
    .into_iter()
    .map(|(outcome, value)| (outcome.to_string(), json!(value)))
    .collect();
    assert_eq!(outcomes, expected);
    let replayed = seed(&one, &["replay", "--all", "--json"]);
    assert_eq!(replayed["divergences"], json!(0), "{replayed}");
}

/// The audit read from the acts that can make a line (the land log read as
/// stored, only the acts whose bodies hold the verb `do` or the key `gate`
/// decoded, and their beings' geneses), and the audit read from the acts a
/// world lists (the portal's page), are the audit read from every fact:
/// the same lines, said the same way, for the treasury's gated payouts and
/// the market's trades, with and without filters.
#[test]
fn the_audit_read_from_the_acts_that_can_make_a_line_is_the_audit_read_from_every_fact() {
    use seed::audit::{audit_land_listed, audit_land_reading, AuditFilter};
    use seed::picked_facts::FactsRead;
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().expect("a folder");
    let mut lines_read = 0;
    for (name, world) in [("treasury", "tests/fixtures/worlds/treasury/world.toml"), ("market", "fixtures/market.toml")]
    {
        let land = scratch.path().join(name);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(&land)
            .args(["sim", &repo.join(world).display().to_string(), "--ticks", "20"])
            .output()
            .expect("seed runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let land = seed::land::Land::open_read_only(&land).expect("the land opens");
        let store = land.store();
        let clerk = land.resolve("@clerk").ok();
        let filters = [
            AuditFilter::default(),
            AuditFilter { being: clerk, ..AuditFilter::default() },
            AuditFilter { tool: Some("publish-signal".into()), ..AuditFilter::default() },
        ];
        // The worlds the portal's page reads the acts listed in: the whole
        // fold, one halfway (the rest of the log picked as stored), and the
        // whole fold read back from a snapshot's bytes.
        let land_len = store.land_len().expect("reads");
        let mut whole = seed::world::World::new();
        seed::engine::fold_to_end(store, &mut whole).expect("folds");
        let mut halfway = seed::world::World::new();
        seed::engine::fold_until(store, &mut halfway, land_len / 2).expect("folds");
        let read_back =
            seed::world::World::from_snapshot_bytes(&whole.snapshot_bytes().expect("writes")).expect("reads");
        assert_eq!(read_back.audit_acts, whole.audit_acts, "{name}: the snapshot lost the acts listed");
        let every_line = audit_land_reading(store, &AuditFilter::default(), FactsRead::Every).expect("the audit");
        assert_eq!(whole.audit_acts.len(), every_line.lines.len(), "{name}: an act listed for each line");
        for filter in filters {
            let picked = audit_land_reading(store, &filter, FactsRead::Picked).expect("the audit");
            let every = audit_land_reading(store, &filter, FactsRead::Every).expect("the audit");
            assert_eq!(picked.to_json(), every.to_json(), "{name}: {filter:?}");
            let texts =
                |audit: &seed::audit::Audit| audit.lines.iter().map(|line| audit.line_text(line)).collect::<Vec<_>>();
            assert_eq!(texts(&picked), texts(&every), "{name}: {filter:?}");
            for (world, which) in [(&whole, "whole"), (&halfway, "halfway"), (&read_back, "read back")] {
                let listed = audit_land_listed(store, world, &filter).expect("the audit");
                assert_eq!(listed.to_json(), every.to_json(), "{name}, the world {which}: {filter:?}");
                assert_eq!(texts(&listed), texts(&every), "{name}, the world {which}: {filter:?}");
            }
            lines_read += every.lines.len();
        }
    }
    assert!(lines_read > 10, "the treasury's payouts make lines ({lines_read})");
}
