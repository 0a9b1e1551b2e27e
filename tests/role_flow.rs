//! The roleFlow walk and the stack composer on the seed document's examples,
//! role loading, and properties: the walk is total and deterministic; the
//! composer is order-stable and idempotent on duplicates.

use proptest::prelude::*;
use seed::fact::body::Cognition;
use seed::roles::definition::{Role, RoleFormat, RoleRegistry};
use seed::roles::flow::{ClauseOutcome, PrimarySource};
use seed::roles::when::Failure;
use seed::roles::{compose, CanEntry, OpenContext, RoleFlow};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

fn registry() -> RoleRegistry {
    let dirs = [PathBuf::from("roles"), PathBuf::from("extensions/emotions/roles"), PathBuf::from("fixtures/roles")];
    let (registry, report) = RoleRegistry::load_dirs(&dirs);
    assert!(report.errors.is_empty(), "shipped roles load cleanly: {:?}", report.errors);
    registry
}

/// The seed document's court flow.
fn court_flow() -> Value {
    json!([
        { "when": { "verb": "summon", "caller.role": "human" }, "role": "human-conversationalist" },
        { "when": { "space.name": "court", "world.court.in-session": true }, "role": "judge" },
        { "role": "court-watcher" },
        { "stack": true, "when": { "time.sinceLastMoment": { "gte": 60 } }, "role": "emotions:bored" },
        { "stack": true, "when": { "world.court.recent-disturbance": true }, "role": "emotions:alert" }
    ])
}

/// Walks `flow` in `context` and compares the primary and the stack.
fn check(flow: &Value, context: Value, cognition: Cognition, primary: &str, stack: &[&str]) {
    let bound = RoleFlow::from_json(flow).expect("flow").bind(&registry(), Some("idle")).expect("bind");
    let context = OpenContext::from_json(&context).expect("context");
    let walk = bound.walk(&context, cognition);
    let composed = compose(walk.primary.as_ref(), &walk.modifiers);
    assert_eq!(composed.primary.as_deref(), Some(primary), "primary in {context:?}");
    let names: Vec<&str> = composed.stack.iter().map(|name| name.as_ref()).collect();
    assert_eq!(names, stack, "stack in {context:?}");
}

#[test]
fn the_court_flow_of_the_seed_document() {
    let flow = court_flow();
    let llm = Cognition::Llm;
    // A person summons: the conversationalist needs human cognition.
    check(&flow, json!({"verb": "summon", "caller.role": "human"}), Cognition::Human, "human-conversationalist", &[]);
    check(
        &flow,
        json!({"verb": "summon", "caller.role": "human", "space.name": "court", "world.court.in-session": true}),
        llm,
        "judge",
        &[],
    );
    // The judge appears only in the court and only in session.
    check(&flow, json!({"space.name": "court", "world.court.in-session": true}), llm, "judge", &[]);
    check(&flow, json!({"space.name": "court", "world.court.in-session": false}), llm, "court-watcher", &[]);
    check(&flow, json!({"space.name": "hall", "world.court.in-session": true}), llm, "court-watcher", &[]);
    check(&flow, json!({"space.name": "court"}), llm, "court-watcher", &[]);
    // Bored after 60 s idle, alert on disturbance, both stacked in order.
    check(&flow, json!({"time.sinceLastMoment": 59}), llm, "court-watcher", &[]);
    check(&flow, json!({"time.sinceLastMoment": 60}), llm, "court-watcher", &["emotions:bored"]);
    check(
        &flow,
        json!({"time.sinceLastMoment": 3600, "world.court.recent-disturbance": true, "space.name": "court", "world.court.in-session": true}),
        llm,
        "judge",
        &["emotions:bored", "emotions:alert"],
    );
}

#[test]
fn the_other_examples_of_the_seed_document() {
    let friendly = json!([{ "when": { "caller.cognition": "human" }, "role": "friendly" }]);
    check(&friendly, json!({"caller.cognition": "human"}), Cognition::Llm, "friendly", &[]);
    check(&friendly, json!({"caller.cognition": "llm"}), Cognition::Llm, "idle", &[]);

    let bored = json!([{ "stack": true, "when": { "time.sinceLastMoment": { "gte": 60 } }, "role": "emotions:bored" }]);
    check(&bored, json!({"time.sinceLastMoment": 61}), Cognition::Scripted, "idle", &["emotions:bored"]);
    check(&bored, json!({"time.sinceLastMoment": 5}), Cognition::Scripted, "idle", &[]);

    let dancer = json!([{ "when": { "world.harmony.tick.alive": true }, "role": "dancer" }]);
    check(&dancer, json!({"world.harmony.tick.alive": true}), Cognition::Scripted, "dancer", &[]);
    check(&dancer, json!({"world.harmony.tick.alive": false}), Cognition::Scripted, "idle", &[]);

    // The library's tone stacks library-voice on every being inside, and only inside.
    let library = json!({"defaultRole": "factory-worker", "flow": [
        { "stack": true, "when": { "space.quality.ambient.tone": "quiet" }, "role": "library-voice" }
    ]});
    check(
        &library,
        json!({"space.name": "library", "space.quality.ambient.tone": "quiet"}),
        Cognition::Llm,
        "factory-worker",
        &["library-voice"],
    );
    check(&library, json!({"space.name": "street"}), Cognition::Llm, "factory-worker", &[]);

    // The operator examples.
    let hours = json!([{ "when": { "time.hour": { "gte": 9, "lt": 17 } }, "role": "factory-worker" }]);
    check(&hours, json!({"time.hour": 9}), Cognition::Llm, "factory-worker", &[]);
    check(&hours, json!({"time.hour": 17}), Cognition::Llm, "idle", &[]);
    let away = json!([{ "when": { "not": { "inHomeSpace": true } }, "role": "friendly" }]);
    check(&away, json!({"inHomeSpace": false}), Cognition::Llm, "friendly", &[]);
    check(&away, json!({"inHomeSpace": true}), Cognition::Llm, "idle", &[]);
    let verbs = json!([{ "when": { "or": [{ "verb": "do" }, { "verb": "be" }] }, "role": "friendly" }]);
    check(&verbs, json!({"verb": "be"}), Cognition::Llm, "friendly", &[]);
    check(&verbs, json!({"verb": "see"}), Cognition::Llm, "idle", &[]);
    let broken = json!([{ "when": { "world.factory.broken": { "present": true } }, "role": "friendly" }]);
    check(&broken, json!({"world.factory.broken": "lathe 3"}), Cognition::Llm, "friendly", &[]);
    check(&broken, json!({}), Cognition::Llm, "idle", &[]);
}

#[test]
fn the_trace_says_which_clause_held_and_on_which_key_the_others_failed() {
    let bound = RoleFlow::from_json(&court_flow()).unwrap().bind(&registry(), None).unwrap();
    let context = OpenContext::from_json(
        &json!({"verb": "summon", "caller.role": "human", "space.name": "court", "world.court.in-session": false}),
    )
    .unwrap();
    let walk = bound.walk(&context, Cognition::Llm);
    let outcomes: Vec<ClauseOutcome> = walk.trace.iter().map(|entry| entry.outcome).collect();
    assert_eq!(outcomes[0], ClauseOutcome::SkippedCognition(Cognition::Human));
    let ClauseOutcome::Failed(Failure::Key(key)) = outcomes[1] else { panic!("{outcomes:?}") };
    assert_eq!(bound.flow.paths.path(key), "world.court.in-session");
    assert_eq!(outcomes[2], ClauseOutcome::Held);
    assert!(matches!(outcomes[3], ClauseOutcome::Failed(Failure::Key(_))));
    assert_eq!(walk.primary_source, PrimarySource::Clause(2));
    let explained = bound.explain(&walk);
    assert_eq!(explained[1], "[1] primary judge: failed: `world.court.in-session`");
    assert_eq!(explained[2], "[2] primary court-watcher: held (no condition)");
}

#[test]
fn the_default_role_is_the_floor_and_a_mismatched_default_gives_no_primary() {
    let flow =
        json!({"defaultRole": "human-conversationalist", "flow": [{ "when": { "verb": "do" }, "role": "judge" }]});
    let bound = RoleFlow::from_json(&flow).unwrap().bind(&registry(), Some("idle")).unwrap();
    let context = OpenContext::from_json(&json!({"verb": "see"})).unwrap();
    let human = bound.walk(&context, Cognition::Human);
    assert_eq!(human.primary_source, PrimarySource::Default);
    assert_eq!(human.primary.as_ref().map(|r| r.name.as_ref()), Some("human-conversationalist"));
    let llm = bound.walk(&context, Cognition::Llm);
    assert_eq!(llm.primary_source, PrimarySource::None);
    assert!(llm.primary.is_none());
}

#[test]
fn flows_that_name_missing_roles_or_are_malformed_are_refused_with_a_path() {
    let cases = [
        (json!([{ "role": "nobody" }]), "[0].role: no role named \"nobody\" is defined"),
        (json!({"defaultRole": "ghost", "flow": []}), "defaultRole: no role named \"ghost\" is defined"),
        (json!([{ "rolle": "judge" }]), "[0].rolle: unknown field"),
        (json!([{ "role": "judge", "stack": "yes" }]), "[0].stack: must be true or false"),
        (json!([{ "when": { "verb": "do" } }]), "[0].role: missing"),
        (json!({"flow": [], "extra": 1}), "extra: unknown field"),
        (json!("judge"), "(flow): a flow is an array"),
        (
            json!([{ "role": "judge", "when": { "time.hour": { "gtee": 1 } } }]),
            "[0].when.time.hour.gtee: unknown operator",
        ),
    ];
    for (flow, expected) in cases {
        let error =
            RoleFlow::from_json(&flow).and_then(|flow| flow.bind(&registry(), None)).expect_err("refused").to_string();
        assert!(error.starts_with(expected), "{flow}: {error}");
    }
}

fn role(name: &str, fields: &str) -> Arc<Role> {
    Arc::new(Role::parse(&format!("name = \"{name}\"\n{fields}"), RoleFormat::Toml, name).expect("role"))
}

#[test]
fn the_composer_unites_lists_in_order_frames_prompts_and_settles_flags() {
    let primary =
        role("judge", "canSee = [\"/court\", \"/hall\"]\ncanDo = [\"rule\"]\nprompt = \"Rule.\"\nselfContinue = false");
    let bored = role("emotions:bored", "canSee = [\"/hall\", \"/yard\"]\ncanDo = [\"stretch\", \"rule\"]\nprompt = \"Bored.\"\nselfContinue = true\ndefaultOrientation = \"half\"");
    let alert = role("emotions:alert", "canSummon = [{ rel = \"parent\" }]\nprompt = \"Alert.\"\nselfContinue = false");
    let composed = compose(Some(&primary), &[bored.clone(), alert.clone()]);
    let literal = |text: &str| CanEntry::Literal(Arc::from(text));
    assert_eq!(composed.can_see, vec![literal("/court"), literal("/hall"), literal("/yard")]);
    assert_eq!(composed.can_do, vec![literal("rule"), literal("stretch")]);
    assert_eq!(composed.can_summon, vec![CanEntry::Rel(Arc::from("parent"))]);
    assert_eq!(
        composed.prompt,
        "Rule.\n\nAdditionally, you are currently in this mode — emotions:bored: Bored.\n\nAdditionally, you are currently in this mode — emotions:alert: Alert."
    );
    // The last explicit setting wins: alert sets selfContinue back to false.
    assert!(!composed.self_continue);
    assert_eq!(composed.orientation, seed::roles::Orientation::Half);
    let without_alert = compose(Some(&primary), std::slice::from_ref(&bored));
    assert!(without_alert.self_continue);
    // Same inputs, same bytes; a different order, a different composition.
    assert_eq!(compose(Some(&primary), &[bored.clone(), alert.clone()]).digest(), composed.digest());
    assert_ne!(compose(Some(&primary), &[alert, bored]).digest(), composed.digest());
}

#[test]
fn role_files_report_every_error_with_file_field_and_reason_and_bad_files_spare_the_others() {
    let dir = tempfile::tempdir().expect("folder");
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    write("good.toml", "name = \"good\"\ncanSee = [\"/\"]\nprompt = \"Fine.\"\n");
    write("good-json.json", "{\"name\": \"good-json\", \"canDo\": [\"rule\"], \"prompt\": \"Also fine.\"}");
    write("typo.toml", "name = \"typo\"\ncanSe = [\"/\"]\n");
    write("bad-name.toml", "name = \"Bad Name\"\n");
    write("bad-rel.toml", "name = \"bad-rel\"\ncanSummon = [\"@x\", { rel = \"cousin\" }]\n");
    write("bad-pattern.toml", "name = \"bad-pattern\"\ncanSee = [{ pattern = \"no-at-sign\" }]\n");
    write("bad-token.toml", "name = \"bad-token\"\ncanSee = [{ relation = \"parent\" }]\n");
    write("bad-prompt.toml", "name = \"bad-prompt\"\nprompt = \"Hello {{me.name\"\n");
    write("bad-syntax.toml", "name = \"bad-syntax\nprompt = 1\n");
    write("bad-cognition.toml", "name = \"bad-cognition\"\nrequiredCognition = \"robot\"\n");
    write("twice.toml", "name = \"good\"\n");
    write("bad-recall-kind.toml", "name = \"bad-recall-kind\"\n[recall]\nkinds = [\"act\", \"dream\", \"act\"]\n");
    write("bad-recall-count.toml", "name = \"bad-recall-count\"\n[recall]\ncount = 0\nquery = \"{{caller.name\"\n");
    write("bad-importance.toml", "name = \"bad-importance\"\nactImportance = 11\n");
    write("bad-recall-field.toml", "name = \"bad-recall-field\"\n[recall]\nhow_many = 3\n");
    write(
        "good-recall.toml",
        "name = \"good-recall\"\ndefaultOrientation = \"half\"\n[recall]\nquery = \"{{caller.name}}\"\n",
    );
    let (registry, report) = RoleRegistry::load_dirs(&[dir.path().to_path_buf()]);
    assert!(registry.get("good").is_some() && registry.get("good-json").is_some());
    let loaded: Vec<&str> = registry.iter().map(|r| r.name.as_ref()).collect();
    assert_eq!(loaded, vec!["good", "good-json", "good-recall"], "only the good files load");
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    let expect = |file: &str, field: &str, reason: &str| {
        assert!(
            report.errors.iter().any(|e| e.file.ends_with(file) && e.field == field && e.reason.contains(reason)),
            "{file} {field} {reason:?} in {errors:#?}"
        );
    };
    expect("typo.toml", "canSe", "unknown field `canSe`");
    expect("bad-name.toml", "name", "lowercase");
    expect("bad-rel.toml", "canSummon[1]", "unknown relation \"cousin\"");
    expect("bad-pattern.toml", "canSee[0]", "pattern \"no-at-sign\"");
    expect("bad-token.toml", "canSee[0]", "unknown token key `relation`");
    expect("bad-prompt.toml", "prompt", "never closed");
    expect("bad-syntax.toml", "(file)", "");
    expect("bad-cognition.toml", "requiredCognition", "unknown variant `robot`");
    expect("twice.toml", "name", "already defined");
    expect("bad-recall-kind.toml", "recall.kinds[1]", "no kind \"dream\" (known: act, summons, note)");
    expect("bad-recall-kind.toml", "recall.kinds[2]", "\"act\" is named twice");
    expect("bad-recall-count.toml", "recall.count", "0 is not from 1 to 32");
    expect("bad-recall-count.toml", "recall.query", "never closed");
    expect("bad-recall-field.toml", "recall.how_many", "unknown field `how_many`");
    expect("bad-importance.toml", "actImportance", "11 is not from 0 to 10");
    assert_eq!(report.errors.len(), 15, "{errors:#?}");
}

#[test]
fn a_later_folder_overrides_an_earlier_one() {
    let first = tempfile::tempdir().expect("folder");
    let second = tempfile::tempdir().expect("folder");
    std::fs::write(first.path().join("a.toml"), "name = \"greeter\"\nprompt = \"one\"\n").unwrap();
    std::fs::write(second.path().join("a.toml"), "name = \"greeter\"\nprompt = \"two\"\n").unwrap();
    let (registry, report) = RoleRegistry::load_dirs(&[first.path().into(), second.path().into()]);
    assert_eq!(registry.get("greeter").unwrap().prompt.as_ref(), "two");
    assert_eq!(report.overridden.len(), 1);
}

// ---- properties ----

const KEYS: &[&str] = &["verb", "space.name", "time.hour", "world.a.b", "me.quality.x.y", "inHomeSpace"];

fn json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..30).prop_map(|n| json!(n)),
        (-5.0f64..30.0).prop_map(|n| json!(n)),
        prop::sample::select(vec!["do", "see", "court", "quiet", ""]).prop_map(|s| json!(s)),
        prop::collection::vec((0i64..3).prop_map(|n| json!(n)), 0..3).prop_map(Value::Array),
    ]
}

fn when_strategy() -> impl Strategy<Value = Value> {
    let leaf = (prop::sample::select(KEYS.to_vec()), json_value(), 0..9usize).prop_map(|(key, value, op)| {
        let number = if value.is_number() { value.clone() } else { json!(3) };
        let test = match op {
            0 if !value.is_null() => value,
            1 => json!({"eq": value}),
            2 => json!({"ne": value}),
            3 => json!({"gt": number}),
            4 => json!({"gte": number, "lt": 20}),
            5 => json!({"in": [value, 1, "do"]}),
            6 => json!({"present": true}),
            7 => json!({"present": false}),
            _ => json!({"lte": number}),
        };
        json!({ key: test })
    });
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|w| json!({"not": w})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|ws| json!({"or": ws})),
            prop::collection::vec(inner, 1..3).prop_map(|ws| json!({"and": ws})),
        ]
    })
}

const ROLES: &[&str] = &[
    "judge",
    "court-watcher",
    "friendly",
    "human-conversationalist",
    "emotions:bored",
    "emotions:alert",
    "library-voice",
    "dancer",
];

fn flow_strategy() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        (any::<bool>(), prop::option::of(when_strategy()), prop::sample::select(ROLES.to_vec())),
        0..8,
    )
    .prop_map(|clauses| {
        Value::Array(
            clauses
                .into_iter()
                .map(|(stack, when, role)| match when {
                    Some(when) => json!({"stack": stack, "when": when, "role": role}),
                    None => json!({"stack": stack, "role": role}),
                })
                .collect(),
        )
    })
}

fn context_strategy() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(prop::sample::select(KEYS.to_vec()), json_value(), 0..6)
        .prop_map(|map| Value::Object(map.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_walk_is_total_and_deterministic(flow in flow_strategy(), context in context_strategy(), human in any::<bool>()) {
        let registry = registry();
        let bound = RoleFlow::from_json(&flow).expect("generated flows compile").bind(&registry, Some("idle")).expect("bind");
        let context = OpenContext::from_json(&context).expect("context");
        let cognition = if human { Cognition::Human } else { Cognition::Llm };
        let first = bound.walk(&context, cognition);
        let second = bound.walk(&context, cognition);
        prop_assert_eq!(&first.trace, &second.trace);
        let a = compose(first.primary.as_ref(), &first.modifiers);
        let b = compose(second.primary.as_ref(), &second.modifiers);
        prop_assert_eq!(a.canonical_bytes(), b.canonical_bytes());
        prop_assert_eq!(first.trace.len(), bound.flow.clauses.len());
        // Every held stacked clause is in the stack, in order.
        let held: Vec<&str> = first.trace.iter()
            .filter(|t| t.outcome == ClauseOutcome::Held && bound.flow.clauses[t.clause].stack)
            .map(|t| bound.flow.clauses[t.clause].role.as_str()).collect();
        let stack: Vec<&str> = a.stack.iter().map(|n| n.as_ref()).collect();
        prop_assert_eq!(held, stack);
    }

    #[test]
    fn the_composer_is_order_stable_and_idempotent_on_duplicates(picks in prop::collection::vec(prop::sample::select(ROLES.to_vec()), 1..6)) {
        let registry = registry();
        let roles: Vec<Arc<Role>> = picks.iter().map(|name| registry.get(name).expect("role").clone()).collect();
        let once = compose(Some(&roles[0]), &roles[1..]);
        let mut doubled = roles[1..].to_vec();
        doubled.extend(roles[1..].iter().cloned());
        let twice = compose(Some(&roles[0]), &doubled);
        prop_assert_eq!(&once.can_see, &twice.can_see);
        prop_assert_eq!(&once.can_do, &twice.can_do);
        prop_assert_eq!(&once.can_summon, &twice.can_summon);
        prop_assert_eq!(&once.can_be, &twice.can_be);
        prop_assert_eq!(&once.see, &twice.see);
        // Order-stable: each list is the first-occurrence union in stack order.
        let mut expected: Vec<CanEntry> = Vec::new();
        for role in &roles {
            for entry in &role.can_see {
                if !expected.contains(entry) { expected.push(entry.clone()); }
            }
        }
        prop_assert_eq!(&once.can_see, &expected);
    }
}
