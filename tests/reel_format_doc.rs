//! The worked example in docs/reel-format.md is true: the hex shown there is
//! what this build produces for the example genesis fact, it decodes, its id
//! and being id are the BLAKE3 values shown, and its signature verifies.
//!
//! Run with SEED_PRINT_EXAMPLE=1 to print the blocks for the document.

use crate::common;

use ed25519_dalek::SigningKey;
use seed::canonical::to_canonical_bytes;
use seed::fact::body::{Cognition, GenesisBody, KIND_GENESIS};
use seed::fact::{BeingId, Fact, FactId};

const DOC: &str = include_str!("../docs/reel-format.md");
const EXAMPLE_KEY_SEED: [u8; 32] = [7; 32];
const EXAMPLE_TIME_MS: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

fn example() -> (Fact, Vec<u8>, SigningKey) {
    let key = SigningKey::from_bytes(&EXAMPLE_KEY_SEED);
    let mut nonce = [0u8; 16];
    for (index, byte) in nonce.iter_mut().enumerate() {
        *byte = index as u8;
    }
    let genesis = GenesisBody {
        name: "example".into(),
        parent: None,
        cognition: Cognition::Scripted,
        public_key: seed::fact::PublicKeyBytes::of(&key),
        role_flow: Vec::new(),
        default_role: "worker".into(),
        home_space: "/".into(),
        nonce,
    };
    let body = to_canonical_bytes(&genesis).expect("canonical");
    let being = BeingId(*blake3::hash(&body).as_bytes());
    let fact = Fact::seal(being, 0, FactId::ZERO, EXAMPLE_TIME_MS, KIND_GENESIS, body.clone(), &key).expect("seal");
    (fact, body, key)
}

fn spaced(bytes: &[u8]) -> String {
    bytes
        .chunks(32)
        .map(|line| line.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hex inside the fenced block whose info string is `hex LABEL`.
fn block(label: &str) -> Vec<u8> {
    let opening = format!("```hex {label}\n");
    let start =
        DOC.find(&opening).unwrap_or_else(|| panic!("docs/reel-format.md has no ```hex {label} block")) + opening.len();
    let end = start + DOC[start..].find("```").expect("closing fence");
    let digits: String = DOC[start..end].chars().filter(|c| c.is_ascii_hexdigit()).collect();
    hex::decode(digits).expect("hex")
}

#[test]
fn the_worked_example_in_the_format_document_is_true() {
    let (fact, body, key) = example();
    let envelope = fact.encode_envelope();
    if std::env::var_os("SEED_PRINT_EXAMPLE").is_some() {
        for (label, bytes) in [
            ("public-key", key.verifying_key().to_bytes().to_vec()),
            ("body", body.clone()),
            ("being-id", fact.header.being.0.to_vec()),
            ("header", fact.header_bytes().to_vec()),
            ("fact-id", fact.id().0.to_vec()),
            ("signature", fact.signature().to_vec()),
            ("envelope", envelope.clone()),
        ] {
            println!("```hex {label}\n{}\n```\n", spaced(&bytes));
        }
    }
    assert_eq!(block("public-key"), key.verifying_key().to_bytes());
    assert_eq!(block("body"), body);
    assert_eq!(block("being-id"), blake3::hash(&block("body")).as_bytes());
    assert_eq!(block("being-id"), fact.header.being.0);
    assert_eq!(block("header"), fact.header_bytes());
    assert_eq!(block("fact-id"), blake3::hash(&block("header")).as_bytes());
    assert_eq!(block("signature"), fact.signature());
    assert_eq!(block("envelope"), envelope);
    // The document's bytes, taken on their own, decode and verify.
    let decoded = Fact::decode_envelope(&block("envelope")).expect("the documented envelope decodes");
    let public =
        ed25519_dalek::VerifyingKey::from_bytes(&block("public-key").try_into().expect("32 bytes")).expect("key");
    assert!(decoded.verify_signature(&public));
}

/// The keys in the first column of the table that follows `marker` in the
/// document, in the order the table lists them.
fn table_keys(marker: &str) -> Vec<String> {
    let start = DOC.find(marker).unwrap_or_else(|| panic!("docs/reel-format.md has no {marker:?}"));
    DOC[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2) // the heading and the rule below it
        .map(|line| line.split('`').nth(1).expect("a key in backticks").to_string())
        .collect()
}

/// The text keys of a canonical CBOR map, in the order they are encoded.
fn encoded_keys(bytes: &[u8]) -> Vec<String> {
    match seed::canonical::decode_canonical(bytes).expect("canonical") {
        ciborium::value::Value::Map(entries) => entries
            .into_iter()
            .map(|(key, _)| match key {
                ciborium::value::Value::Text(key) => key,
                other => panic!("a text key, not {other:?}"),
            })
            .collect(),
        other => panic!("a map, not {other:?}"),
    }
}

#[test]
fn the_bundle_fields_are_documented_in_the_order_they_are_encoded() {
    let (fact, _, _) = example();
    let bundle = seed::bundle::Bundle {
        being: fact.header.being,
        head_seq: 0,
        head_id: fact.id(),
        envelopes: vec![fact.encode_envelope()],
    };
    assert_eq!(table_keys("## A reel bundle"), encoded_keys(&bundle.encode()));
}

#[test]
fn the_act_body_keys_are_documented_in_the_order_they_are_encoded() {
    // An act with an importance, a spent budget, a panel and a recall query's
    // vector (only such an act has those keys).
    let budget = seed::spend::BudgetSpent {
        budget: "budgets.land.tokens_per_hour".into(),
        per: seed::spend::Per::Hour,
        window: 1,
        limit: 10,
        spent: 11,
    };
    let panel = seed::moment::panel::PanelRecord {
        members: Vec::new(),
        chosen_by: "majority".into(),
        chosen: "a".into(),
        ruler: None,
    };
    let recall_query =
        seed::embedding::QueryVector { connection: "c".into(), model: "m".into(), vector: vec![1, 2], failure: None };
    let act = seed::world::ActBody {
        importance: Some(3),
        budget: Some(budget),
        panel: Some(panel),
        recall_query: Some(recall_query),
        ..common::act_body()
    };
    let body = to_canonical_bytes(&act).expect("canonical");
    // `llm` leads the table; an act of another cognition has no `llm` key.
    let documented = table_keys("**The `act` body**");
    assert_eq!(documented.first().map(String::as_str), Some("llm"));
    assert_eq!(documented[1..], encoded_keys(&body)[..]);
}
