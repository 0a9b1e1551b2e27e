//! Canopy (docs/canopy.md): lands on loopback, each a `seed up` of its own,
//! peering by a signed handshake, keeping heartbeats, following a peer's
//! proven key rotation, and refusing a hostile land's requests with a
//! reason while nothing stored is harmed. After each test every land
//! verifies and replays clean with no peer reachable.

use crate::common::portal::Up;
use crate::common::{assert_verifies_and_replays_clean, seed, stderr, stdout};
use ed25519_dalek::SigningKey;
use seed::fact::BeingId;
use seed_format::canopy::CanopyRequest;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Heartbeats this often in these tests, in milliseconds.
const TEST_HEARTBEAT_MS: u64 = 1_000;
/// How long a test waits for a peer's record to change.
const PEER_WAIT: Duration = Duration::from_secs(30);

fn land_id(up: &Up) -> String {
    let (status, identity) = up.get("/canopy/v1/land");
    assert_eq!(status, 200, "{identity}");
    identity["land"].as_str().expect("a land id").to_string()
}

/// The peer `land` as `up` records it (null when it is not a peer).
fn peer_of(up: &Up, land: &str) -> Value {
    let (status, view) = up.get("/api/v1/peers");
    assert_eq!(status, 200, "{view}");
    view["peers"]
        .as_array()
        .and_then(|peers| peers.iter().find(|peer| peer["land"] == land).cloned())
        .unwrap_or(Value::Null)
}

/// Waits until `check` holds for `up`'s record of `land`.
fn wait_for_peer(up: &Up, land: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let peer = peer_of(up, land);
        if check(&peer) {
            return peer;
        }
        assert!(started.elapsed() < PEER_WAIT, "{what} never happened: {peer}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn add_peer(from: &Up, to: &Up) -> Value {
    let (status, added) = from.post("/api/v1/peers", &json!({"url": to.url}));
    assert_eq!(status, 200, "{added}");
    added
}

#[test]
fn three_lands_peer_by_a_signed_handshake_keep_heartbeats_and_follow_a_proven_key_rotation() {
    let heartbeat = ["--round-ms", "200"];
    let (a, mut b, c) = (Up::start(&heartbeat), Up::start(&heartbeat), Up::start(&heartbeat));
    for up in [&a, &b, &c] {
        up.set_config("canopy_heartbeat_ms", TEST_HEARTBEAT_MS);
    }
    c.set_config("canopy_first_contacts_per_hour_max", 5);
    let (a_id, b_id, c_id) = (land_id(&a), land_id(&b), land_id(&c));
    assert!(a_id != b_id && b_id != c_id && a_id != c_id, "three lands, three ids");

    // A adds B; B takes no first contact: A's greeting is refused, and B
    // remembers why.
    let added = add_peer(&a, &b);
    assert_eq!(added["greeted"], false, "{added}");
    assert_eq!(added["peer"]["status"], "down", "{added}");
    let reason = added["reason"].as_str().expect("a reason");
    assert!(reason.contains("403") && reason.contains("canopy_first_contacts_per_hour_max"), "{reason}");
    let refused = b.get("/api/v1/peers").1["refused"].clone();
    assert!(
        refused
            .as_array()
            .is_some_and(|all| all.iter().any(|r| r["from"] == a_id.as_str() && r["path"] == "/canopy/v1/hello")),
        "{refused}"
    );
    // Adding it again is a conflict naming the peer.
    let (status, again) = a.post("/api/v1/peers", &json!({"url": b.url}));
    assert_eq!(status, 409, "{again}");

    // B adds A: the greeting is answered, and A hears it: B is up on both sides.
    let added = add_peer(&b, &a);
    assert_eq!((&added["greeted"], &added["peer"]["status"]), (&json!(true), &json!("up")), "{added}");
    wait_for_peer(&a, &b_id, "A recording B up", |peer| peer["status"] == "up");

    // A adds C, which accepts first contact: C records A as a peer that is up.
    let added = add_peer(&a, &c);
    assert_eq!(added["greeted"], true, "{added}");
    let a_at_c = peer_of(&c, &a_id);
    assert_eq!((&a_at_c["origin"], &a_at_c["status"]), (&json!("first-contact"), &json!("up")), "{a_at_c}");
    assert_eq!(a_at_c["url"], a.url.as_str());

    // C's facts are read whole by whoever follows it: A came by first
    // contact, so C refuses to be followed by it, and A says why.
    let (status, followed) = a.post(&format!("/api/v1/peers/{c_id}/following"), &json!({"following": true}));
    assert_eq!(status, 200, "{followed}");
    let started = Instant::now();
    loop {
        let pull = peer_of(&a, &c_id)["mirror"]["pull"].clone();
        if pull["state"] == "failed" {
            assert!(pull["reason"].as_str().is_some_and(|reason| reason.contains("first contact")), "{pull}");
            break;
        }
        assert!(started.elapsed() < PEER_WAIT, "A's pull of C never failed: {pull}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, _) = a.post(&format!("/api/v1/peers/{c_id}/following"), &json!({"following": false}));
    assert_eq!(status, 200);

    // Heartbeats are counted: A's record of C grows.
    wait_for_peer(&c, &a_id, "C hearing A's heartbeats", |peer| peer["answered"].as_u64() >= Some(1));

    // B stops: A records it down with the reason; B comes back at the same
    // URL: A records it up again.
    b.stop();
    let down = wait_for_peer(&a, &b_id, "A recording B down", |peer| peer["status"] == "down");
    let last = down["heartbeats"].as_array().and_then(|records| records.last()).cloned().unwrap_or_default();
    assert!(last["reason"].as_str().is_some_and(|reason| reason.contains("did not answer")), "{down}");
    b.restart_at_same_port(&heartbeat);
    wait_for_peer(&a, &b_id, "A recording B up again", |peer| peer["status"] == "up");

    // B's root key is rotated (signed by its old key) while it is stopped;
    // its next heartbeat to A is signed by the new key, and A proves the
    // rotation from B's key history before it believes it.
    let old_key = peer_of(&a, &b_id)["key"].clone();
    b.stop();
    let rotated = seed(&b.land(), &["rotate-key", "@reality"]);
    assert!(rotated.status.success(), "{}{}", stdout(&rotated), stderr(&rotated));
    b.restart_at_same_port(&heartbeat);
    let (_, identity) = b.get("/canopy/v1/land");
    assert!(identity["keySeq"].as_u64() > Some(0), "{identity}");
    assert_eq!(identity["keyHistory"].as_array().map(Vec::len), Some(2), "{identity}");
    let after = wait_for_peer(&a, &b_id, "A proving B's new key", |peer| peer["key"] != old_key);
    assert_eq!(after["key"], identity["key"], "{after}");
    assert_eq!(after["keySeq"], identity["keySeq"], "{after}");
    wait_for_peer(&a, &b_id, "A hearing B under its new key", |peer| peer["status"] == "up");

    // The peers page shows all of it to the operator.
    let (status, page) = a.page("/peers");
    assert_eq!(status, 200);
    for shown in [&b_id[..12], &c_id[..12], "Add a peer", "This land"] {
        assert!(page.contains(shown), "the peers page shows {shown}");
    }

    // A removes C: C's next heartbeat to A is refused, and A's record is gone.
    let (status, removed) = a.delete(&format!("/api/v1/peers/{}", &c_id[..12]));
    assert_eq!(status, 200, "{removed}");
    assert!(peer_of(&a, &c_id).is_null());

    // Every land verifies and replays clean with no peer reachable.
    let mut lands = vec![a, b, c];
    for up in &mut lands {
        up.stop();
    }
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
    // The record survives the restart, read by the CLI from the facts alone.
    let listed = seed(&lands[0].land(), &["peer", "list", "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed: Value = serde_json::from_str(&stdout(&listed)).expect("JSON");
    let peers = listed["peers"].as_array().expect("peers");
    assert_eq!(peers.len(), 1, "B stays, C was removed: {listed}");
    assert_eq!(peers[0]["land"], b_id.as_str());
    crate::json_schemas::holds_to("peer list", &listed, "peer-list.json");
}

/// A request signed as `from` with `key`, as a land sends it.
struct Forged {
    from: BeingId,
    to: BeingId,
    timestamp_ms: u64,
    nonce: [u8; 16],
    path: &'static str,
    body: Vec<u8>,
}

impl Forged {
    fn new(from: BeingId, to: BeingId, path: &'static str) -> Forged {
        let mut nonce = [0u8; 16];
        getrandom_nonce(&mut nonce);
        Forged { from, to, timestamp_ms: now_ms(), nonce, path, body: b"{\"url\":\"http://127.0.0.1:9\"}".to_vec() }
    }

    fn headers(&self, key: &SigningKey, signed_body: &[u8]) -> Vec<(&'static str, String)> {
        let request =
            CanopyRequest::new("POST", self.path, self.from, self.to, self.timestamp_ms, self.nonce, signed_body);
        let signature = request.sign(key).expect("signs");
        vec![
            ("seed-land-from", self.from.to_hex()),
            ("seed-land-to", self.to.to_hex()),
            ("seed-timestamp-ms", self.timestamp_ms.to_string()),
            ("seed-nonce", hex::encode(self.nonce)),
            ("seed-signature", hex::encode(signature)),
        ]
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_millis() as u64
}

fn getrandom_nonce(out: &mut [u8; 16]) {
    // Distinct per call within the test: a counter and the time suffice.
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    out[..8].copy_from_slice(&count.to_be_bytes());
    out[8..].copy_from_slice(&now_ms().to_be_bytes());
}

fn send(up: &Up, path: &str, headers: &[(&'static str, String)], body: Vec<u8>) -> (u16, Value) {
    let mut request = up.http.post(format!("{}{path}", up.url)).body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().expect("answered");
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

#[test]
fn a_hostile_lands_requests_are_refused_with_a_reason_and_harm_nothing() {
    let a = Up::start(&["--round-ms", "200"]);
    let mut h = Up::start(&["--round-ms", "200"]);
    let (a_id, h_id) = (land_id(&a), land_id(&h));
    let (a_land, h_land) = (BeingId::from_hex(&a_id).expect("hex"), BeingId::from_hex(&h_id).expect("hex"));
    // A knows H as a peer (H refuses the greeting: it takes no first contact).
    add_peer(&a, &h);
    a.set_config("canopy_requests_per_peer_per_minute_max", 10);
    a.set_config("canopy_request_bytes_max", 1_024);
    // The test holds H's root key from here on (its land stopped): the
    // hostile peer is a real land's key in the wrong hands.
    h.stop();
    let h_key = {
        let land = seed::land::Land::open(&h.land()).expect("H opens");
        land.root_signing_key().expect("H's root key")
    };
    let stranger = SigningKey::from_bytes(&[7; 32]);
    let before = a.cursor();

    // (what, request, expected status, expected code)
    let heartbeat = "/canopy/v1/heartbeat";
    let check = |what: &str, headers: Vec<(&'static str, String)>, body: Vec<u8>, status: u16, code: &str| {
        let (got, answer) = send(&a, heartbeat, &headers, body);
        assert_eq!(got, status, "{what}: {answer}");
        if !code.is_empty() {
            assert_eq!(answer["error"]["code"], code, "{what}: {answer}");
            assert!(answer["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: a reason");
        }
    };
    // A genuine heartbeat from H is answered (the control).
    let genuine = Forged::new(h_land, a_land, heartbeat);
    let genuine_headers = genuine.headers(&h_key, &genuine.body);
    check("a genuine heartbeat", genuine_headers.clone(), genuine.body.clone(), 200, "");
    // The answer is signed by A's key for this request: its nonce, its
    // status and its body (whoever sits between cannot forge or change it).
    let a_key = ed25519_dalek::VerifyingKey::from_bytes(
        &hex::decode(a.get("/canopy/v1/land").1["key"].as_str().expect("a key"))
            .expect("hex")
            .try_into()
            .expect("32 bytes"),
    )
    .expect("a key");
    let signed_answer = Forged::new(h_land, a_land, heartbeat);
    let mut request = a.http.post(format!("{}{heartbeat}", a.url)).body(signed_answer.body.clone());
    for (name, value) in signed_answer.headers(&h_key, &signed_answer.body) {
        request = request.header(name, value);
    }
    let response = request.send().expect("answered");
    let status = response.status().as_u16();
    let signature: [u8; 64] = hex::decode(response.headers()["seed-answer-signature"].to_str().expect("text"))
        .expect("hex")
        .try_into()
        .expect("64 bytes");
    let body = response.bytes().expect("a body");
    let answer = seed_format::canopy::CanopyAnswer::new(a_land, h_land, signed_answer.nonce, status, &body);
    assert_eq!(answer.check(&a_key, &signature), Ok(()), "the answer is A's, for this request");
    let other_nonce = seed_format::canopy::CanopyAnswer { nonce: [0; 16], ..answer };
    assert!(other_nonce.check(&a_key, &signature).is_err(), "and for no other");
    // The same request again, byte for byte: a replay.
    check("a replayed request", genuine_headers, genuine.body.clone(), 409, "replayed");
    // Signed by a key that is not H's.
    let forged = Forged::new(h_land, a_land, heartbeat);
    check("a forged signature", forged.headers(&stranger, &forged.body), forged.body.clone(), 401, "bad-signature");
    // The body changed after signing.
    let changed = Forged::new(h_land, a_land, heartbeat);
    check(
        "a changed body",
        changed.headers(&h_key, &changed.body),
        b"{\"url\":\"http://evil\"}".to_vec(),
        401,
        "bad-signature",
    );
    // Signed two minutes ago, or two minutes ahead.
    let mut stale = Forged::new(h_land, a_land, heartbeat);
    stale.timestamp_ms -= 120_000;
    check("a stale request", stale.headers(&h_key, &stale.body), stale.body.clone(), 401, "outside-window");
    let mut ahead = Forged::new(h_land, a_land, heartbeat);
    ahead.timestamp_ms += 120_000;
    check("a request from the future", ahead.headers(&h_key, &ahead.body), ahead.body.clone(), 401, "outside-window");
    // Addressed to another land.
    let elsewhere = Forged::new(h_land, BeingId([9; 32]), heartbeat);
    check(
        "a request for another land",
        elsewhere.headers(&h_key, &elsewhere.body),
        elsewhere.body.clone(),
        421,
        "other-land",
    );
    // From a land that is no peer.
    let unknown = Forged::new(BeingId([8; 32]), a_land, heartbeat);
    check("a stranger's heartbeat", unknown.headers(&stranger, &unknown.body), unknown.body.clone(), 403, "not-a-peer");
    // Larger than canopy_request_bytes_max.
    let mut oversized = Forged::new(h_land, a_land, heartbeat);
    oversized.body = vec![b' '; 2_048];
    check("an oversized body", oversized.headers(&h_key, &oversized.body), oversized.body.clone(), 413, "too-large");
    // Headers missing or malformed.
    check("no headers", Vec::new(), b"{}".to_vec(), 400, "bad-request");
    let mut bad = Forged::new(h_land, a_land, heartbeat).headers(&h_key, b"{}");
    bad[4].1 = "not hex".into();
    check("a signature that is not hex", bad, b"{}".to_vec(), 400, "bad-request");
    // A flood: the two genuine heartbeats counted two of ten; eight more pass, the next is refused.
    for sent in 0..8 {
        let request = Forged::new(h_land, a_land, heartbeat);
        check(
            &format!("heartbeat {sent} of the minute"),
            request.headers(&h_key, &request.body),
            request.body.clone(),
            200,
            "",
        );
    }
    let flood = Forged::new(h_land, a_land, heartbeat);
    check("a flood", flood.headers(&h_key, &flood.body), flood.body.clone(), 429, "rate-limited");

    // Every refusal is remembered with its reason; nothing was sealed for
    // them (the genuine heartbeats changed no record: H was down and a
    // heartbeat from it is not a hello).
    let refused = a.get("/api/v1/peers").1["refused"].as_array().cloned().unwrap_or_default();
    assert!(refused.len() >= 10, "{refused:?}");
    assert!(refused.iter().all(|r| r["reason"].as_str().is_some_and(|reason| !reason.is_empty())), "{refused:?}");
    let sealed_since = a.cursor() - before;
    assert!(sealed_since < 40, "only the land's own moments sealed since: {sealed_since}");
    let mut a = a;
    a.stop();
    assert_verifies_and_replays_clean(&a.land());
    assert_verifies_and_replays_clean(&h.land());
}

#[test]
fn peer_add_and_remove_on_a_stopped_land_prove_the_peer_first_and_name_every_mistake() {
    let b = Up::start(&[]);
    let b_id = land_id(&b);
    let scratch = tempfile::tempdir().expect("tempdir");
    let a = scratch.path().join("a");
    let planted = seed(&a, &["plant"]);
    assert!(planted.status.success(), "{}", stderr(&planted));
    let refused = |arguments: &[&str], expected: &str| {
        let output = seed(&a, arguments);
        assert_eq!(output.status.code(), Some(1), "{arguments:?}: {}", stdout(&output));
        assert!(stderr(&output).contains(expected), "{arguments:?}: {}", stderr(&output));
    };
    refused(&["peer", "add", "ftp://x"], "http:// or https://");
    refused(&["peer", "add", "http://127.0.0.1:9"], "did not answer");
    refused(&["peer", "remove", "http://127.0.0.1:9"], "no peer is");
    let added = seed(&a, &["peer", "add", &b.url, "--json"]);
    assert!(added.status.success(), "{}", stderr(&added));
    let added: Value = serde_json::from_str(&stdout(&added)).expect("JSON");
    assert_eq!((&added["peer"]["land"], &added["peer"]["status"]), (&json!(b_id), &json!("new")), "{added}");
    crate::json_schemas::holds_to("peer add", &added, "peer-add.json");
    refused(&["peer", "add", &b.url], "a peer already");
    let listed = seed(&a, &["peer", "list"]);
    assert!(stdout(&listed).contains(&b_id[..12]), "{}", stdout(&listed));
    // Following is recorded on the stopped land too (the pull starts when it is up).
    refused(&["peer", "follow", "abcdef12"], "no peer");
    refused(&["peer", "follow", &b_id[..10], "--being", "@ada"], "is not a being id");
    for (verb, following, changed) in
        [("follow", true, true), ("follow", true, false), ("unfollow", false, true), ("unfollow", false, false)]
    {
        let output = seed(&a, &["peer", verb, &b_id[..10], "--json"]);
        assert!(output.status.success(), "{verb}: {}", stderr(&output));
        let said: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
        crate::json_schemas::holds_to("peer follow", &said, "peer-follow.json");
        assert_eq!((said["following"].as_bool(), said["landSeq"].is_u64()), (Some(following), changed), "{said}");
    }
    seed(&a, &["peer", "follow", &b_id[..10]]);
    let listed = seed(&a, &["peer", "list", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&listed)).expect("JSON");
    crate::json_schemas::holds_to("peer list", &listed, "peer-list.json");
    assert_eq!((&listed["peers"][0]["following"], &listed["peers"][0]["mirror"]), (&json!(true), &Value::Null));
    let removed = seed(&a, &["peer", "remove", &b_id[..10], "--json"]);
    assert!(removed.status.success(), "{}", stderr(&removed));
    let removed: Value = serde_json::from_str(&stdout(&removed)).expect("JSON");
    crate::json_schemas::holds_to("peer remove", &removed, "peer-remove.json");
    assert_eq!(removed["removed"], b_id.as_str());
    assert_verifies_and_replays_clean(&a);
}

/// Canopy's test world, on a land of its own: @ada and @bo, people who may
/// summon anyone here and on a peer land.
fn correspondents() -> Up {
    let world = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/canopy/world.toml");
    Up::start(&["--fixture", world.to_str().expect("utf-8 path"), "--round-ms", "200"])
}

/// Two lands that peer with each other (each added the other).
fn peer_both(one: &Up, other: &Up) {
    add_peer(one, other);
    let added = add_peer(other, one);
    assert_eq!(added["greeted"], true, "{added}");
}

/// `name`'s inbox on `up`: each waiting summons with its sender and content.
fn inbox(up: &Up, name: &str) -> Vec<Value> {
    let (status, being) = up.get(&format!("/api/v1/beings/{name}"));
    assert_eq!(status, 200, "{being}");
    being["inbox"].as_array().cloned().unwrap_or_default()
}

fn wait_for_inbox(up: &Up, name: &str, what: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let waiting = inbox(up, name);
        if check(&waiting) {
            return waiting;
        }
        assert!(started.elapsed() < PEER_WAIT, "{what} never happened: {waiting:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `name` on `up` summons `target` (or answers `wake` when given, the target empty).
fn summon(up: &Up, name: &str, target: &str, content: &str, wake: Option<&str>) -> (u16, Value) {
    up.post(
        &format!("/api/v1/beings/{name}/act"),
        &json!({"verb": "summon", "target": target, "content": content, "wake": wake}),
    )
}

fn outbox(up: &Up) -> Vec<Value> {
    up.get("/api/v1/peers").1["outbox"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_summons_and_its_reply_cross_lands_and_summons_queued_for_a_stopped_peer_arrive_once_in_order() {
    let (a, mut b, c) = (correspondents(), correspondents(), correspondents());
    let (a_id, b_id, c_id) = (land_id(&a), land_id(&b), land_id(&c));
    peer_both(&a, &b);
    peer_both(&c, &a);

    // @ada of A summons @bo of B, naming B by the first digits of its id.
    let (status, sent) = summon(&a, "ada", &format!("@bo@{}", &b_id[..10]), "hello from A", None);
    assert_eq!(status, 200, "{sent}");
    let arrived = wait_for_inbox(&b, "bo", "the summons arriving at B", |waiting| !waiting.is_empty());
    assert_eq!(arrived.len(), 1, "{arrived:?}");
    assert_eq!(arrived[0]["from"], format!("@ada@{a_id}"), "{arrived:?}");
    assert_eq!(arrived[0]["content"], "hello from A");
    // A records the delivery once B has answered, as a fact of its own
    // (after any round A is playing): B's inbox may show it first.
    let started = Instant::now();
    while !outbox(&a).is_empty() {
        assert!(started.elapsed() < PEER_WAIT, "delivered, and recorded so: {:?}", outbox(&a));
        std::thread::sleep(Duration::from_millis(100));
    }

    // @bo answers it (no target: the summoner, on its land).
    let wake = arrived[0]["summon"].as_str().expect("the summons's fact").to_string();
    let (status, answered) = summon(&b, "bo", "", "hello back from B", Some(&wake));
    assert_eq!(status, 200, "{answered}");
    let replies = wait_for_inbox(&a, "ada", "the reply arriving at A", |waiting| !waiting.is_empty());
    assert_eq!(
        (&replies[0]["from"], &replies[0]["content"]),
        (&json!(format!("@bo@{b_id}")), &json!("hello back from B"))
    );
    assert!(inbox(&b, "bo").is_empty(), "the summons answered leaves @bo's inbox");

    // A third land's being reaches @ada too.
    let (status, sent) = summon(&c, "bo", &format!("@ada@{a_id}"), "hello from C", None);
    assert_eq!(status, 200, "{sent}");
    wait_for_inbox(&a, "ada", "C's summons arriving at A", |waiting| {
        waiting.iter().any(|summons| summons["from"] == format!("@bo@{c_id}"))
    });

    // A land that is no peer, and a being on a peer that is not there.
    let (status, refused) = summon(&b, "ada", &format!("@bo@{}", &c_id[..10]), "who?", None);
    assert!(status >= 400, "{refused}");
    assert!(refused.to_string().contains("no peer of this land"), "{refused}");
    let (status, _) = summon(&a, "ada", &format!("@nobody@{}", &b_id[..10]), "anyone?", None);
    assert_eq!(status, 200, "sealed here: only B knows its beings");
    let refused_at_b = wait_for_peer_view(&b, "B recording the refusal", |view| {
        view["summonsRefused"].as_array().is_some_and(|all| {
            all.iter().any(|r| r["reason"].as_str().is_some_and(|reason| reason.contains("no being @nobody")))
        })
    });
    assert_eq!(refused_at_b["summonsRefused"][0]["land"], a_id.as_str());
    let given_up = wait_for_peer_view(&a, "A recording the summons as undelivered", |view| {
        view["outbox"].as_array().is_some_and(Vec::is_empty)
    });
    assert!(given_up["outbox"].as_array().is_some_and(Vec::is_empty));

    // B stops; five summons wait in A's outbox; B comes back and each
    // arrives once, in order.
    b.stop();
    for n in 1..=5 {
        let (status, sent) = summon(&a, "ada", &format!("@bo@{b_id}"), &format!("queued {n}"), None);
        assert_eq!(status, 200, "{sent}");
    }
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(outbox(&a).len(), 5, "nothing is lost while B is down");
    b.restart_at_same_port(&[]);
    let started = Instant::now();
    while !outbox(&a).is_empty() {
        assert!(started.elapsed() < PEER_WAIT, "the queued summons were never delivered: {:?}", outbox(&a));
        std::thread::sleep(Duration::from_millis(100));
    }
    let arrived = inbox(&b, "bo");
    let contents: Vec<&str> = arrived.iter().filter_map(|summons| summons["content"].as_str()).collect();
    assert_eq!(contents, ["queued 1", "queued 2", "queued 3", "queued 4", "queued 5"], "once each, in order");

    let mut lands = vec![a, b, c];
    for up in &mut lands {
        up.stop();
    }
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
    // B's refusal is on its reel: `seed peer list` reads it with no land up.
    let listed = seed(&lands[1].land(), &["peer", "list", "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed: Value = serde_json::from_str(&stdout(&listed)).expect("JSON");
    crate::json_schemas::holds_to("peer list", &listed, "peer-list.json");
    assert!(
        listed["summonsRefused"][0]["reason"].as_str().is_some_and(|reason| reason.contains("no being @nobody")),
        "{listed}"
    );
    assert_eq!(listed["outbox"], json!([]), "B's answer was delivered: {listed}");
}

fn wait_for_peer_view(up: &Up, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let (_, view) = up.get("/api/v1/peers");
        if check(&view) {
            return view;
        }
        assert!(started.elapsed() < PEER_WAIT, "{what} never happened: {view}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The sealed fact at `seq` of `being` on the land at `dir`, and the
/// being's key history (genesis and rotations), as a land delivers them.
fn sealed_and_keys(dir: &std::path::Path, being: &BeingId, seq: u64) -> (seed::fact::Fact, Vec<String>) {
    let land = seed::land::Land::open_read_only(dir).expect("the land opens to read");
    let reel = land.store().reel(being, 0, seq + 1).expect("the reel reads");
    let keys = reel
        .iter()
        .filter(|stored| matches!(stored.fact.kind(), "genesis" | "rotate-key"))
        .map(|stored| hex::encode(stored.fact.encode_envelope()))
        .collect();
    (reel[seq as usize].fact.clone(), keys)
}

/// Delivers `fact` (envelope bytes) with `keys` to `to` as land `from`
/// signing with `key`, alone in a delivery to `/canopy/v1/summons`: the
/// request's status and what was answered for the summons (`taken`,
/// `duplicate`, `refused` or `wait`, with the answer).
fn deliver(
    to: &Up,
    from: BeingId,
    to_land: BeingId,
    key: &SigningKey,
    fact: &[u8],
    keys: &[String],
) -> (u16, &'static str, Value) {
    let path = "/canopy/v1/summons";
    let mut request = Forged::new(from, to_land, path);
    request.body = serde_json::to_vec(&json!({"summons": [{"fact": hex::encode(fact), "keys": keys}]})).expect("JSON");
    let (status, answer) = send(to, path, &request.headers(key, &request.body), request.body.clone());
    let result = answer["results"][0].clone();
    let outcome = match (&result["duplicate"], &result["refused"], &result["wait"]) {
        (Value::Bool(false), _, _) => "taken",
        (Value::Bool(true), _, _) => "duplicate",
        (_, Value::String(_), _) => "refused",
        (_, _, Value::String(_)) => "wait",
        _ => "none",
    };
    (status, outcome, if result.is_null() { answer } else { result })
}

#[test]
fn a_hostile_lands_summons_are_refused_with_a_recorded_reason_and_harm_nothing() {
    let (a, b, mut h) = (correspondents(), correspondents(), correspondents());
    let (a_id, h_id) = (land_id(&a), land_id(&h));
    let (a_land, h_land) = (BeingId::from_hex(&a_id).expect("hex"), BeingId::from_hex(&h_id).expect("hex"));
    peer_both(&a, &b);
    peer_both(&a, &h);
    // Honest summons first: B's @bo and H's @ada each reach A's @ada.
    for (up, name) in [(&b, "bo"), (&h, "ada")] {
        let (status, sent) = summon(up, name, &format!("@ada@{a_id}"), &format!("honest {name}"), None);
        assert_eq!(status, 200, "{sent}");
    }
    wait_for_inbox(&a, "ada", "the honest summons arriving", |waiting| waiting.len() == 2);
    let h_ada = BeingId::from_hex(h.get("/api/v1/beings/ada").1["id"].as_str().expect("an id")).expect("hex");
    let b_bo = BeingId::from_hex(b.get("/api/v1/beings/bo").1["id"].as_str().expect("an id")).expect("hex");
    // H's land stops: the test holds its root key and its beings' keys.
    h.stop();
    let h_key = seed::land::Land::open(&h.land()).expect("H opens").root_signing_key().expect("H's root key");
    let ada_key =
        seed::keys::KeyRing::open(&h.land().join("keys")).expect("H's key ring").load(&h_ada).expect("@ada's key");
    let (honest, ada_keys) = sealed_and_keys(&h.land(), &h_ada, 1);
    let (bos, bo_keys) = sealed_and_keys(&b.land(), &b_bo, 1);
    a.set_config("canopy_summons_bytes_max", 1_024);
    let before = a.cursor();

    // (what, the envelope, the keys, the outcome, what the answer says)
    type Case<'k> = (&'static str, Vec<u8>, &'k [String], &'static str, &'static str);
    let fork = {
        let mut act: seed::world::ActBody = honest.body_as().expect("an act");
        act.content = Some("a second fact at the same seq".into());
        let body = seed::canonical::to_canonical_bytes(&act).expect("encodes");
        let header = &honest.header;
        seed::fact::Fact::seal(header.being, header.seq, header.prev, header.stored_time_ms, "act", body, &ada_key)
            .expect("seals")
    };
    let forged = {
        let header = &honest.header;
        let stranger = SigningKey::from_bytes(&[5; 32]);
        seed::fact::Fact::seal(
            header.being,
            header.seq + 1,
            honest.id(),
            header.stored_time_ms + 1,
            "act",
            honest.body().to_vec(),
            &stranger,
        )
        .expect("seals")
    };
    // Later facts of H's @ada, validly signed by its key: seq 3 delivered
    // first (a gap is allowed: the facts between are not summons here),
    // then seq 2, which comes out of order.
    let later = |seq: u64, content: &str| {
        let mut act: seed::world::ActBody = honest.body_as().expect("an act");
        act.content = Some(content.into());
        let body = seed::canonical::to_canonical_bytes(&act).expect("encodes");
        let header = &honest.header;
        seed::fact::Fact::seal(header.being, seq, honest.id(), header.stored_time_ms + seq, "act", body, &ada_key)
            .expect("seals")
    };
    let (third, second) = (later(3, "the third"), later(2, "the second, late"));
    let envelope = honest.encode_envelope();
    let cases: Vec<Case> = vec![
        ("the same summons again", envelope.clone(), &ada_keys, "duplicate", "receipt"),
        ("a fork of it", fork.encode_envelope(), &ada_keys, "refused", "a fork"),
        ("a later summons, after a gap", third.encode_envelope(), &ada_keys, "taken", "receipt"),
        ("an earlier one after it", second.encode_envelope(), &ada_keys, "refused", "out of order"),
        ("a fact of a reel H does not own", bos.encode_envelope(), &bo_keys, "refused", "came from land"),
        (
            "a fact its being's key did not sign",
            forged.encode_envelope(),
            &ada_keys,
            "refused",
            "not signed by the key",
        ),
        ("a truncated envelope", envelope[..envelope.len() / 2].to_vec(), &ada_keys, "refused", "does not decode"),
        ("an oversized envelope", vec![0u8; 2_048], &ada_keys, "refused", "canopy_summons_bytes_max"),
        ("a key history that is not the being's", envelope.clone(), &bo_keys, "refused", "key history"),
    ];
    for (what, fact, keys, outcome, says) in cases {
        let (status, got, answer) = deliver(&a, h_land, a_land, &h_key, &fact, keys);
        assert_eq!((status, got), (200, outcome), "{what}: {answer}");
        assert!(answer.to_string().contains(says), "{what}: {answer}");
    }
    // @ada's key is rotated on H (signed by the old key). A summons signed
    // by the new key, with the rotation in its history, is taken; one
    // signed by the rotated-out key behind a history cut short is refused.
    let rotated = seed(&h.land(), &["rotate-key", "@ada"]);
    assert!(rotated.status.success(), "{}", stderr(&rotated));
    let (rotation, rotated_keys) = sealed_and_keys(&h.land(), &h_ada, 2);
    assert_eq!(rotation.kind(), "rotate-key");
    let new_key =
        seed::keys::KeyRing::open(&h.land().join("keys")).expect("H's key ring").load(&h_ada).expect("the new key");
    let signed_by = |seq: u64, key: &SigningKey| {
        let header = &honest.header;
        seed::fact::Fact::seal(
            header.being,
            seq,
            honest.id(),
            header.stored_time_ms + seq,
            "act",
            honest.body().to_vec(),
            key,
        )
        .expect("seals")
    };
    let (status, outcome, answer) =
        deliver(&a, h_land, a_land, &h_key, &signed_by(5, &new_key).encode_envelope(), &rotated_keys);
    assert_eq!((status, outcome), (200, "taken"), "{answer}");
    let (status, outcome, answer) =
        deliver(&a, h_land, a_land, &h_key, &signed_by(6, &ada_key).encode_envelope(), &ada_keys);
    assert_eq!((status, outcome), (200, "refused"), "{answer}");
    assert!(answer.to_string().contains("leaves out the key set at seq 2"), "{answer}");
    // A flood: past canopy_summons_per_peer_per_minute_max, summons wait and nothing is recorded.
    a.set_config("canopy_summons_per_peer_per_minute_max", 1);
    let flooded: Vec<&str> = (0..3).map(|_| deliver(&a, h_land, a_land, &h_key, &envelope, &ada_keys).1).collect();
    // The first is @ada's summons from before the rotation, delivered again
    // with the history up to it: still a duplicate, not a refusal.
    assert_eq!(flooded[0], "duplicate", "{flooded:?}");
    assert!(flooded.contains(&"wait"), "{flooded:?}");
    // A delivery of more summons than one may carry is refused whole.
    let path = "/canopy/v1/summons";
    let mut too_many = Forged::new(h_land, a_land, path);
    let one = json!({"fact": hex::encode(&envelope), "keys": ada_keys});
    too_many.body = serde_json::to_vec(&json!({"summons": vec![one; 65]})).expect("JSON");
    let (status, answer) = send(&a, path, &too_many.headers(&h_key, &too_many.body), too_many.body.clone());
    assert_eq!(status, 400, "{answer}");

    // Each refusal of a proven peer's summons is recorded with its reason;
    // @ada's inbox holds the two honest summons and the two later ones only.
    let (_, view) = a.get("/api/v1/peers");
    let refused = view["summonsRefused"].as_array().cloned().unwrap_or_default();
    assert_eq!(refused.len(), 8, "{refused:?}");
    assert!(refused
        .iter()
        .all(|r| r["land"] == h_id.as_str() && r["reason"].as_str().is_some_and(|reason| !reason.is_empty())));
    assert_eq!(inbox(&a, "ada").len(), 4);
    assert!(a.cursor() - before <= 14, "the refusals, two arrivals and the two config changes, nothing else");

    let mut lands = vec![a, b, h];
    for up in &mut lands {
        up.stop();
    }
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
}

/// How long a test waits for a follower to catch up on a large land.
const CATCH_UP_WAIT: Duration = Duration::from_secs(300);

/// `up`'s mirror of `land`, as its peers API shows it.
fn mirror_of(up: &Up, land: &str) -> Value {
    peer_of(up, land)["mirror"].clone()
}

/// Waits until `up`'s pull of `land` is `state` (failing early on another
/// state that will not change by itself).
fn wait_for_pull(up: &Up, land: &str, state: &str, most: Duration) -> Value {
    let started = Instant::now();
    loop {
        let mirror = mirror_of(up, land);
        if mirror["pull"]["state"] == state {
            return mirror;
        }
        assert!(mirror["pull"]["state"] != "failed", "the pull failed: {mirror}");
        assert!(started.elapsed() < most, "the pull never became {state}: {mirror}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn follow(up: &Up, land: &str) -> Value {
    let (status, followed) = up.post(&format!("/api/v1/peers/{land}/following"), &json!({"following": true}));
    assert_eq!(status, 200, "{followed}");
    followed
}

/// The land's facts (its world's cursor: the length of its land log).
fn land_len(up: &Up) -> u64 {
    up.cursor()
}

#[test]
fn a_follower_mirrors_a_land_of_100000_facts_checking_each_and_the_mirror_verifies_and_replays() {
    // B: a crowd of 10,000 scripted beings played for 9 rounds (100,008
    // facts), served with no rounds while it is followed.
    let dir = tempfile::tempdir().expect("temporary folder");
    let land = dir.path().join("land");
    let crowd = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/crowd.toml");
    let crowd = crowd.to_str().expect("utf-8 path");
    let simulated = seed(&land, &["sim", crowd, "--ticks", "9"]);
    assert!(simulated.status.success(), "{}", stderr(&simulated));
    let token = seed(&land, &["token", "--json"]);
    let token: Value = serde_json::from_str(stdout(&token).trim()).expect("seed token --json");
    let b = Up::open_with(
        dir,
        token["token"].as_str().expect("a token").to_string(),
        &["--fixture", crowd, "--round-ms", "86400000"],
    );
    let a = Up::start(&["--round-ms", "86400000"]);
    let b_id = land_id(&b);
    peer_both(&a, &b);

    // A follows B: its mirror takes every fact of B, each checked at A.
    let followed = follow(&a, &b_id);
    assert!(followed["mirror"].as_str().is_some_and(|dir| dir.ends_with(&format!("mirrors/{b_id}"))), "{followed}");
    let caught_up = wait_for_pull(&a, &b_id, "caught-up", CATCH_UP_WAIT);
    let taken = caught_up["taken"].as_u64().expect("taken");
    assert!(taken >= 100_008, "{caught_up}");
    assert_eq!(caught_up["pull"]["landLen"].as_u64(), Some(land_len(&b)), "{caught_up}");

    // The portal shows the mirror and its reels.
    let (status, mirror) = a.get(&format!("/api/v1/mirrors/{b_id}"));
    assert_eq!(status, 200, "{mirror}");
    assert_eq!(mirror["beings"].as_array().map(Vec::len), Some(10_004), "every being of B");
    let (status, reel) = a.get(&format!("/api/v1/mirrors/{b_id}/beings/walker-7"));
    assert_eq!(status, 200, "{reel}");
    assert_eq!(reel["reelLen"], 10, "a genesis and nine acts: {reel}");
    let (status, page) = a.page(&format!("/mirrors/{b_id}"));
    assert_eq!(status, 200);
    assert!(page.contains("walker-7") && page.contains(&format!("{taken} facts")), "the mirror page");
    let (status, missing) = a.get(&format!("/api/v1/mirrors/{}", "0".repeat(64)));
    assert_eq!(status, 404, "{missing}");

    // The mirror is a land folder: verified and replayed with no land up.
    let mirror_dir = a.land().join("mirrors").join(&b_id);
    let mut lands = vec![a, b];
    for up in &mut lands {
        up.stop();
    }
    let verified = seed(&mirror_dir, &["verify", "--json"]);
    assert!(verified.status.success(), "{}{}", stdout(&verified), stderr(&verified));
    let verified: Value = serde_json::from_str(&stdout(&verified)).expect("JSON");
    assert_eq!(verified["facts"].as_u64(), Some(taken), "{verified}");
    let replayed = seed(&mirror_dir, &["replay", "--all", "--json"]);
    assert!(replayed.status.success(), "{}{}", stdout(&replayed), stderr(&replayed));
    let replayed: Value = serde_json::from_str(&stdout(&replayed)).expect("JSON");
    assert_eq!((replayed["divergences"].as_u64(), replayed["moments"].as_u64()), (Some(0), Some(90_000)), "{replayed}");
    // Nothing can be sealed in a mirror.
    let sealed = seed(&mirror_dir, &["rotate-key", "@reality"]);
    assert!(!sealed.status.success());
    assert!(stderr(&sealed).contains("read-only mirror"), "{}", stderr(&sealed));
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
}

#[test]
fn a_follower_of_one_being_mirrors_its_reel_alone_which_verifies_but_does_not_replay() {
    let (a, b) = (correspondents(), correspondents());
    let b_id = land_id(&b);
    peer_both(&a, &b);
    let (status, refused) =
        a.post(&format!("/api/v1/peers/{b_id}/following"), &json!({"following": true, "being": "@nobody"}));
    assert_eq!(status, 400, "{refused}");
    assert!(refused.to_string().contains("no being @nobody"), "{refused}");
    let (status, followed) =
        a.post(&format!("/api/v1/peers/{b_id}/following"), &json!({"following": true, "being": "@ada"}));
    assert_eq!(status, 200, "{followed}");
    let ada = followed["being"].as_str().expect("@ada's id, as B said it").to_string();
    for said in ["one", "two"] {
        let (status, acted) = summon(&b, "ada", "@bo", said, None);
        assert_eq!(status, 200, "{acted}");
    }
    let started = Instant::now();
    let mirror = loop {
        let mirrors = peer_of(&a, &b_id)["beingMirrors"].clone();
        let mirror = mirrors.as_array().and_then(|all| all.first()).cloned().unwrap_or_default();
        if mirror["pull"]["state"] == "caught-up" && mirror["taken"] == 3 {
            break mirror;
        }
        assert!(mirror["pull"]["state"] != "failed", "{mirror}");
        assert!(started.elapsed() < PEER_WAIT, "@ada's reel never arrived: {mirror}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(mirror["being"], ada.as_str());
    let (status, reel) = a.get(&format!("/api/v1/mirrors/beings/{ada}"));
    assert_eq!(status, 200, "{reel}");
    assert_eq!((reel["name"].as_str(), reel["reelLen"].as_u64()), (Some("ada"), Some(3)), "{reel}");
    let (status, page) = a.page(&format!("/mirrors/beings/{ada}"));
    assert_eq!(status, 200);
    assert!(page.contains("one being of land") && page.contains("summon"), "the being's mirror page");

    let dir = a.land().join("mirrors").join("beings").join(&ada);
    let mut lands = vec![a, b];
    for up in &mut lands {
        up.stop();
    }
    let verified = seed(&dir, &["verify"]);
    assert!(verified.status.success(), "{}{}", stdout(&verified), stderr(&verified));
    let replayed = seed(&dir, &["replay", "--all"]);
    assert!(!replayed.status.success());
    assert!(stderr(&replayed).contains("mirrors one being of land"), "{}", stderr(&replayed));
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
}

/// Copies the folder `from` to `to`, file by file.
fn copy_folder(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("a folder");
    for entry in std::fs::read_dir(from).expect("readable").map(Result::unwrap) {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copied");
        }
    }
}

#[test]
fn a_land_put_back_from_an_older_copy_is_a_fork_kept_as_proof_on_both_sides_and_following_stops() {
    let (a, mut b) = (correspondents(), correspondents());
    let (a_id, b_id) = (land_id(&a), land_id(&b));
    peer_both(&a, &b);
    follow(&a, &b_id);
    let speak = |up: &Up, said: &str| {
        let (status, acted) = summon(up, "ada", "@bo", said, None);
        assert_eq!(status, 200, "{acted}");
    };
    speak(&b, "before the copy");
    wait_for_pull(&a, &b_id, "caught-up", PEER_WAIT);

    // B's operator copies its folder while it is stopped, B goes on, and
    // A's mirror takes what it sealed.
    b.stop();
    let copy = tempfile::tempdir().expect("temporary folder");
    copy_folder(&b.land(), copy.path());
    b.restart_at_same_port(&["--fixture", correspondents_world().as_str(), "--round-ms", "200"]);
    speak(&b, "one history");
    let before = land_len(&b);
    let started = Instant::now();
    while mirror_of(&a, &b_id)["taken"].as_u64() < Some(before) {
        assert!(started.elapsed() < PEER_WAIT, "A never took B's new facts: {}", mirror_of(&a, &b_id));
        std::thread::sleep(Duration::from_millis(200));
    }

    // The copy is put back and goes on differently: B's keys sign a second
    // history. A finds where both agree, meets the fork, keeps both facts
    // as a proof, shows B, and stops following.
    b.stop();
    std::fs::remove_dir_all(b.land()).expect("removed");
    copy_folder(copy.path(), &b.land());
    b.restart_at_same_port(&["--fixture", correspondents_world().as_str(), "--round-ms", "200"]);
    // The second history's first fact of @ada is a summons to A: A's
    // mirror holds the first history's fact at that seq, so A refuses it
    // and records why.
    let (status, sent) = summon(&b, "ada", &format!("@bo@{}", &a_id[..10]), "another history", None);
    assert_eq!(status, 200, "{sent}");
    // Its next does not continue @ada's reel as A's mirror holds it.
    let (status, sent) = summon(&b, "ada", &format!("@bo@{}", &a_id[..10]), "and more of it", None);
    assert_eq!(status, 200, "{sent}");
    let started = Instant::now();
    loop {
        let refused = a.get("/api/v1/peers").1["summonsRefused"].to_string();
        if refused.contains("signed two histories") && refused.contains("does not continue its reel") {
            break;
        }
        assert!(started.elapsed() < PEER_WAIT, "A never refused the second history's summons: {refused}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(inbox(&a, "bo").is_empty(), "nothing of the second history arrived");
    let forked = wait_for_pull(&a, &b_id, "forked", PEER_WAIT);
    let forks = forked["pull"]["forks"].as_array().cloned().unwrap_or_default();
    assert!(!forks.is_empty(), "{forked}");
    for fork in &forks {
        assert!(fork["shown"]["recordedAt"].is_u64(), "each fork is shown to B and recorded there: {forked}");
    }
    let shown = b.get("/api/v1/peers").1["forksShown"].clone();
    let shown = shown.as_array().cloned().unwrap_or_default();
    assert_eq!(shown.len(), forks.len(), "{shown:?}");
    assert!(shown.iter().all(|fork| fork["by"] == a_id.as_str()), "{shown:?}");
    for fork in &forks {
        assert!(
            shown.iter().any(|kept| kept["being"] == fork["being"] && kept["shown"] == fork["kept"]),
            "B keeps the fact A holds as the one shown: {shown:?}"
        );
    }
    let (status, page) = b.page("/peers");
    assert_eq!(status, 200);
    assert!(page.contains("Forks of this land's reels other lands showed"), "B's peers page shows the forks");
    let (status, page) = a.page("/peers");
    assert_eq!(status, 200);
    assert!(page.contains("forked") && page.contains("fork: being"), "A's peers page shows the fork");

    // The mirror holds the proof: its verification names the fork.
    let mirror_dir = a.land().join("mirrors").join(&b_id);
    let mut lands = vec![a, b];
    for up in &mut lands {
        up.stop();
    }
    let verified = seed(&mirror_dir, &["verify"]);
    assert!(!verified.status.success(), "a mirror with a fork proof does not verify clean");
    assert!(stdout(&verified).contains("fork"), "{}", stdout(&verified));
    // Both lands themselves verify and replay clean.
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
}

fn correspondents_world() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/canopy/world.toml")
        .to_str()
        .expect("utf-8 path")
        .to_string()
}

/// A land of the travellers' world (@cy, @dee), whose names no being of
/// the correspondents' world has.
fn travellers() -> Up {
    Up::start(&["--fixture", &travellers_world(), "--round-ms", "200"])
}

fn travellers_world() -> String {
    let world = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/canopy/travellers.toml");
    world.to_str().expect("utf-8 path").to_string()
}

/// The summons saying `content` in `name`'s inbox on `up`, once it arrived.
fn wait_for_summons(up: &Up, name: &str, content: &str) -> Value {
    let what = format!("{content:?} arriving in @{name}'s inbox");
    let waiting =
        wait_for_inbox(up, name, &what, |waiting| waiting.iter().any(|summons| summons["content"] == content));
    waiting.into_iter().find(|summons| summons["content"] == content).expect("it arrived")
}

fn being_view(up: &Up, name: &str) -> Value {
    let (status, being) = up.get(&format!("/api/v1/beings/{name}"));
    assert_eq!(status, 200, "{being}");
    being
}

#[test]
fn a_being_moves_to_another_land_goes_on_there_and_summons_to_its_old_home_follow_it() {
    let (mut a, b, c) = (travellers(), correspondents(), correspondents());
    let (a_id, b_id, c_id) = (land_id(&a), land_id(&b), land_id(&c));
    peer_both(&a, &b);
    peer_both(&c, &a);
    peer_both(&c, &b);
    // @cy has a history on A: it summons @dee, and @dee summons it.
    let (status, sent) = summon(&a, "cy", "@dee", "before I go", None);
    assert_eq!(status, 200, "{sent}");
    let (status, sent) = summon(&a, "dee", "@cy", "do not go", None);
    assert_eq!(status, 200, "{sent}");
    a.stop();

    // Mistakes first: each named, nothing changed.
    let moved = seed(&a.land(), &["move", "@cy", "--to", "http://127.0.0.1:9"]);
    assert!(!moved.status.success());
    assert!(stderr(&moved).contains("is not a peer of this land"), "{}", stderr(&moved));
    let moved = seed(&a.land(), &["move", "@reality", "--to", &b.url]);
    assert!(!moved.status.success());
    assert!(stderr(&moved).contains("stay with their land"), "{}", stderr(&moved));
    let moved = seed(&a.land(), &["move", "@nobody", "--to", &b.url]);
    assert!(!moved.status.success());
    assert!(stderr(&moved).contains("@nobody"), "{}", stderr(&moved));

    let moved = seed(&a.land(), &["move", "@cy", "--to", &b.url, "--json"]);
    assert!(moved.status.success(), "{}{}", stdout(&moved), stderr(&moved));
    let moved: Value = serde_json::from_str(&stdout(&moved)).expect("JSON");
    crate::json_schemas::holds_to("move", &moved, "move.json");
    assert_eq!((moved["name"].as_str(), moved["to"].as_str()), (Some("cy"), Some(b_id.as_str())), "{moved}");
    assert!(moved["movedInLandSeq"].is_u64(), "{moved}");
    // Run again, it finds the move done on both sides.
    let again = seed(&a.land(), &["move", "@cy", "--to", &b.url]);
    assert!(again.status.success(), "{}{}", stdout(&again), stderr(&again));
    // A can sign nothing more for @cy: its reel there is read-only.
    let rotated = seed(&a.land(), &["rotate-key", "@cy"]);
    assert!(!rotated.status.success());
    assert!(stderr(&rotated).contains("moved to another land"), "{}", stderr(&rotated));

    // On B, @cy lives, remembers its acts on A, and acts with B's key.
    let cy = being_view(&b, "cy");
    assert_eq!((&cy["ended"], &cy["acts"], &cy["parent"]), (&json!(false), &json!(1), &json!("@operator")), "{cy}");
    assert_eq!((&cy["movedFrom"], &cy["home"]), (&json!(a_id), &json!("/porch")), "{cy}");
    let (status, page) = b.page("/beings/cy");
    assert_eq!(status, 200);
    assert!(page.contains("here from land") && page.contains(&a_id), "B's page of @cy says where it came from");
    let (status, sent) = summon(&b, "cy", "@bo", "hello from my new home", None);
    assert_eq!(status, 200, "{sent}");
    let arrived = wait_for_inbox(&b, "bo", "@cy's summons on B", |waiting| !waiting.is_empty());
    assert_eq!(arrived[0]["from"], "@cy", "{arrived:?}");

    // Back on A: @cy has left; a summons for it goes to B.
    a.restart_at_same_port(&["--fixture", &travellers_world(), "--round-ms", "200"]);
    let cy_on_a = being_view(&a, "cy");
    assert_eq!(cy_on_a["ended"], true, "{cy_on_a}");
    assert_eq!(cy_on_a["movedTo"]["land"], b_id.as_str(), "{cy_on_a}");
    let (status, page) = a.page("/beings/cy");
    assert_eq!(status, 200);
    assert!(page.contains("row-moved") && page.contains(&b_id), "A's page of @cy says where it went");
    // A being of B that still writes to @cy at A is told where it went.
    let (status, sent) = summon(&b, "bo", &format!("@cy@{a_id}"), "are you there?", None);
    assert_eq!(status, 200, "{sent}");
    let told = wait_for_peer_view(&a, "A refusing the summons for @cy", |view| {
        view["summonsRefused"].as_array().is_some_and(|all| {
            all.iter().any(|r| r["reason"].as_str().is_some_and(|reason| reason.contains("@cy moved to land")))
        })
    });
    let reason = told["summonsRefused"][0]["reason"].as_str().unwrap_or_default().to_string();
    assert!(reason.contains(&format!("summon @cy@{b_id}")), "{reason}");
    // @cy writes home from B: A takes B's word for @cy now, as @cy's own
    // signed history (its move to B) says, though @cy's reel began on A.
    let (status, sent) = summon(&b, "cy", &format!("@dee@{a_id}"), "all is well here", None);
    assert_eq!(status, 200, "{sent}");
    let letter = wait_for_summons(&a, "dee", "all is well here");
    assert_eq!(letter["from"], format!("@cy@{b_id}"), "{letter}");
    // A third land writes to @cy at its old home: A refuses it naming B,
    // and C, a peer of B, sends it on there.
    let (status, sent) = summon(&c, "bo", &format!("@cy@{a_id}"), "found you", None);
    assert_eq!(status, 200, "{sent}");
    let found = wait_for_summons(&b, "cy", "found you");
    assert_eq!(found["from"], format!("@bo@{c_id}"), "{found}");
    wait_for_peer_view(&c, "C's outbox emptied", |view| view["outbox"].as_array().is_some_and(Vec::is_empty));

    let (status, sent) = summon(&a, "dee", "@cy", "wherever you are", None);
    assert_eq!(status, 200, "{sent}");
    let forwarded = wait_for_summons(&b, "cy", "wherever you are");
    assert_eq!(forwarded["from"], format!("@dee@{a_id}"), "{forwarded}");

    // @cy moves on, from B to C: its reel there holds its life on A and on
    // B, and C runs only its moments on C.
    let mut lands = vec![a, b, c];
    lands[1].stop();
    let moved_on = seed(&lands[1].land(), &["move", "@cy", "--to", &lands[2].url]);
    assert!(moved_on.status.success(), "{}{}", stdout(&moved_on), stderr(&moved_on));
    let cy_on_c = being_view(&lands[2], "cy");
    assert_eq!((&cy_on_c["movedFrom"], &cy_on_c["acts"]), (&json!(b_id), &json!(3)), "{cy_on_c}");
    let (status, sent) = summon(&lands[2], "cy", "@ada", "third home", None);
    assert_eq!(status, 200, "{sent}");

    for up in &mut lands {
        up.stop();
    }
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
    // Each land replays @cy alone too, only its moments there: one on A,
    // two on B, one on C.
    for (up, moments) in lands.iter().zip([1, 2, 1]) {
        let replayed = seed(&up.land(), &["replay", "@cy", "--json"]);
        assert!(replayed.status.success(), "{}{}", stdout(&replayed), stderr(&replayed));
        let text = stdout(&replayed);
        let report: Value = serde_json::from_str(text.lines().last().unwrap_or_default()).expect("JSON");
        let summary = &report["summary"];
        assert_eq!((&summary["divergences"], &summary["problems"]), (&json!([]), &json!([])), "{report}");
        assert_eq!(summary["moments"], moments, "{report}");
    }
}

#[test]
fn a_move_that_does_not_check_out_is_refused_with_its_reason_and_takes_nothing() {
    let (mut a, b) = (travellers(), correspondents());
    let (a_land, b_land) = (land_id(&a), land_id(&b));
    let (a_land, b_land) = (BeingId::from_hex(&a_land).expect("hex"), BeingId::from_hex(&b_land).expect("hex"));
    peer_both(&a, &b);
    a.stop();
    // The test speaks for A with A's root key, as `seed move` would.
    let land = seed::land::Land::open(&a.land()).expect("A opens");
    let a_key = land.root_signing_key().expect("A's root key");
    let (cy, dee) = (land.resolve("@cy").expect("@cy"), land.resolve("@dee").expect("@dee"));
    let ask = |path: &'static str, body: Value| {
        let mut request = Forged::new(a_land, b_land, path);
        request.body = serde_json::to_vec(&body).expect("JSON");
        send(&b, path, &request.headers(&a_key, &request.body), request.body.clone())
    };
    let refused = |(status, answer): (u16, Value), reason: &str| {
        assert_eq!((status, answer["error"]["code"].as_str()), (422, Some("move-refused")), "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{reason:?} in {message:?}");
    };
    let before = b.cursor();
    let key_path = "/canopy/v1/moves/key";
    let facts_path = "/canopy/v1/moves/facts";

    // A name a being of B holds, and a name that is none.
    refused(ask(key_path, json!({"being": cy.to_hex(), "name": "ada"})), "a being named @ada lives on this land");
    refused(ask(key_path, json!({"being": cy.to_hex(), "name": "Cy!"})), "is not a being name");
    // B mints @cy's key once: asked again, the same key.
    let (status, minted) = ask(key_path, json!({"being": cy.to_hex(), "name": "cy"}));
    assert_eq!((status, &minted["taken"]), (200, &json!(0)), "{minted}");
    let (_, again) = ask(key_path, json!({"being": cy.to_hex(), "name": "cy"}));
    assert_eq!(again["publicKey"], minted["publicKey"]);

    // A's move of @cy names a key B did not mint.
    let stranger = SigningKey::from_bytes(&[7; 32]);
    let body = seed::fact::body::MoveBody {
        to_land: b_land,
        to_url: b.url.clone(),
        new_public_key: seed::fact::PublicKeyBytes::of(&stranger),
        qualities: Default::default(),
    };
    land.seal_move(&cy, &body).expect("A seals it");
    let reel_of = |being: &BeingId| -> Vec<String> {
        let head = land.store().head(being).expect("reads").expect("a reel").seq;
        let reel = land.store().reel(being, 0, head + 1).expect("reads");
        reel.iter().map(|stored| hex::encode(stored.fact.encode_envelope())).collect()
    };
    let reel = reel_of(&cy);
    // A signature changed: the batch is refused whole.
    let mut changed = reel.clone();
    let last = changed[1].len();
    let flipped = if &changed[1][last - 2..] == "00" { "01" } else { "00" };
    changed[1].replace_range(last - 2.., flipped);
    refused(ask(facts_path, json!({"being": cy.to_hex(), "from": 0, "facts": changed})), "signature");
    // Another being's facts sent as @cy's.
    refused(ask(facts_path, json!({"being": cy.to_hex(), "from": 0, "facts": reel_of(&dee)})), "");
    // Facts out of order: the second first.
    refused(ask(facts_path, json!({"being": cy.to_hex(), "from": 0, "facts": [reel[1].clone()]})), "");
    // The whole reel: it checks, but its move names a key B did not mint.
    refused(ask(facts_path, json!({"being": cy.to_hex(), "from": 0, "facts": reel})), "a key this land did not mint");
    // Not hex, not a list: the body is refused before anything is read.
    let (status, answer) = ask(facts_path, json!({"being": cy.to_hex(), "from": 0, "facts": ["zz"]}));
    assert_eq!(status, 400, "{answer}");

    // Nothing of it reached B: no fact sealed, no @cy.
    assert_eq!(b.cursor(), before, "B sealed nothing");
    let (status, _) = b.get("/api/v1/beings/cy");
    assert_eq!(status, 404);
    drop(land);
    let mut lands = vec![a, b];
    for up in &mut lands {
        up.stop();
    }
    for up in &lands {
        assert_verifies_and_replays_clean(&up.land());
    }
}
