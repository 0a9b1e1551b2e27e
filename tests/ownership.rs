//! Ownership and spatial scoping end to end (docs/ownership.md): the
//! operator delegates a space, names a contributor and blocks an extension
//! at a space, each a sealed act; the verb layer refuses writes into a space
//! a being may not write, an operation of a blocked extension, and its hook
//! is skipped there; the face leaves the blocked operation out; and the land
//! verifies and replays. The rules' tables are `seed_core::ownership`'s.

use crate::common::{seed, simulation_options, stderr, stdout};
use seed::engine::fixture::Fixture;
use seed::engine::Engine;
use seed::moment::PersonChoice;
use seed::world::{VerbCall, Wake};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The operator's `do ACTION TARGET ARGS`, as a person's moment: the failure's text, if refused.
fn operator_does(engine: &mut Engine, action: &str, target: &str, args: Value) -> Option<String> {
    let operator = engine.world.names["operator"];
    let call = VerbCall::Do { target: target.into(), action: action.into(), args };
    let choice = PersonChoice { call, content: None, importance: None };
    let done = engine.act_as_person(operator, Wake::Person, &choice).expect("sealed or refused");
    done.failure.map(|failure| failure.to_string())
}

/// One round's outcome for each being, by name.
fn round(engine: &mut Engine) -> BTreeMap<String, String> {
    engine.moment_log = Some(Vec::new());
    engine.round().expect("a round");
    engine.moment_log.take().expect("the log").into_iter().map(|record| (record.name, record.outcome)).collect()
}

fn assert_outcome(outcomes: &BTreeMap<String, String>, being: &str, expected: &str) {
    let outcome = outcomes.get(being).unwrap_or_else(|| panic!("@{being} had no moment: {outcomes:?}"));
    assert!(outcome.contains(expected), "@{being}: {outcome:?} does not say {expected:?}");
}

#[test]
fn owners_contributors_and_a_blocked_extension_decide_who_writes_what_where_and_it_all_replays() {
    let fixture = Fixture::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ownership/world.toml"))
        .expect("loads");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let land = dir.path().join("land");
    let mut engine = Engine::plant(&fixture, &simulation_options(land.clone())).expect("planted");

    // Unowned and unscoped: the planter plants, the fence's hook cancels the weed, the yard is watered.
    let outcomes = round(&mut engine);
    assert_outcome(&outcomes, "ada", "act: do");
    assert_outcome(&outcomes, "bo", "the fence keeps weeds out");
    assert_outcome(&outcomes, "cy", "act: do");

    // The operator hands /garden to @ada and blocks the fence in the bed and the yard.
    assert_eq!(operator_does(&mut engine, "set-owner", "/garden", json!({"being": "@ada"})), None);
    for space in ["/garden/bed", "/yard"] {
        let blocked = json!({"extension": "fence", "scope": "blocked"});
        assert_eq!(operator_does(&mut engine, "scope-extension", space, blocked), None);
    }
    // The system space is the operator's and nobody's to hand over.
    let refused = operator_does(&mut engine, "set-owner", "/", json!({"being": "ada"}));
    assert!(refused.is_some_and(|reason| reason.contains("set-owner refuses the land's system space /")));

    let outcomes = round(&mut engine);
    assert_outcome(&outcomes, "ada", "act: do");
    assert_outcome(&outcomes, "bo", "bo may not write into /garden/bed: it is @ada's");
    assert_outcome(&outcomes, "cy", "water is the fence extension's, and fence is blocked at /yard");
    // The face where the fence is blocked does not offer its operation.
    let world = engine.world.clone();
    let cy = world.names["cy"];
    let opened = seed::moment::open(&world, cy, Wake::Tick { tick: 99 }, 0);
    let assigned = seed::moment::assign(engine.substrate(), &world, &opened).expect("assigned");
    let face =
        seed::moment::build_face(engine.substrate(), &world, &opened, &assigned, &seed::llm::NoModel).expect("a face");
    assert!(face.can_do.is_empty(), "{:?}", face.can_do);

    // @bo named a contributor writes; the fence's hook is skipped in the bed, so the weed stays.
    assert_eq!(operator_does(&mut engine, "add-contributor", "/garden/bed", json!({"being": "bo"})), None);
    // Allowed again below a block: the nearest scope wins.
    let allowed = json!({"extension": "fence", "scope": "allowed"});
    assert_eq!(operator_does(&mut engine, "scope-extension", "/yard", allowed), None);
    let outcomes = round(&mut engine);
    assert_outcome(&outcomes, "bo", "act: do");
    assert_outcome(&outcomes, "cy", "act: do");
    let weeds = engine.world.matter.keys().filter(|address| address.starts_with("/garden/bed#weed-")).count();
    assert_eq!(weeds, 1, "one weed, planted where the fence is blocked");

    let summary = engine.finish().expect("finished");
    assert!(summary.failures >= 3, "{summary:?}");
    // Planted in process, the land names no definitions: replay is told the world's file.
    let world_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ownership/world.toml");
    let verified = seed(&land, &["verify"]);
    assert!(verified.status.success(), "{}{}", stdout(&verified), stderr(&verified));
    let replayed = seed(&land, &["replay", "--all", "--json", "--fixture", world_file.to_str().expect("utf-8")]);
    assert!(replayed.status.success(), "{}{}", stdout(&replayed), stderr(&replayed));
    let report: Value = serde_json::from_str(&stdout(&replayed)).expect("JSON");
    assert_eq!(report["divergences"], 0, "{report}");
}
