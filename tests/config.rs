//! The land's configuration (docs/config.md): every key read back with its
//! default, set by an act and cited by its fact, refused when the key or
//! the value is wrong (nothing sealed), in force from the next moment, and
//! replayed with the limit that held at each moment's cursor.

use crate::common::portal::Up;
use crate::common::{seed, stderr, stdout};
use serde_json::{json, Value};

fn config_of(land: &std::path::Path) -> Value {
    let output = seed(land, &["config", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).expect("JSON")
}

fn key<'a>(config: &'a Value, name: &str) -> &'a Value {
    config["keys"].as_array().expect("keys").iter().find(|key| key["key"] == name).expect("the key")
}

/// Which fact last set each key, read off the whole land log (every act's
/// and every world fact's `set-config` effects): the reference the world's
/// folded `config_set_by`, which `seed config` and the config page cite, is
/// held to.
fn check_set_by_is_the_land_logs(land: &std::path::Path) {
    use seed::world::body::{Effect, WorldBody, KIND_ACT, KIND_WORLD};
    let opened = seed::land::Land::open_read_only(land).expect("the land opens");
    let store = opened.store();
    let mut expected = std::collections::BTreeMap::new();
    for (entry, envelope) in store.land_log_with_envelopes(0, store.land_len().expect("length")).expect("the log") {
        let fact = seed::fact::Fact::decode_envelope(&envelope).expect("a fact");
        let effects = match fact.kind() {
            KIND_ACT => fact.body_as::<seed::world::ActBody>().expect("an act").effects,
            KIND_WORLD => fact.body_as::<WorldBody>().expect("a world body").effects,
            _ => continue,
        };
        for effect in effects {
            if let Effect::SetConfig { key, .. } = effect {
                expected.insert(key, (fact.id(), entry.land_seq, fact.header.being, fact.header.stored_time_ms));
            }
        }
    }
    let world = seed::engine::world_at_end(&opened).expect("the world");
    let folded: std::collections::BTreeMap<_, _> = world
        .config_set_by
        .iter()
        .map(|(key, by)| (key.clone(), (by.fact, by.land_seq, by.being, by.time_ms)))
        .collect();
    assert!(!expected.is_empty(), "the land log sets keys");
    assert_eq!(folded, expected);
    crate::common::assert_configuration_folds_as_the_worlds(land);
}

/// `seed config set KEY VALUE` on a stopped land: what it prints and its exit.
fn check_set(land: &std::path::Path, key: &str, value: &str, expected: Result<&str, &str>) {
    let output = seed(land, &["config", "set", key, value]);
    match expected {
        Ok(printed) => {
            assert!(output.status.success(), "{key} {value}: {}", stderr(&output));
            assert!(stdout(&output).contains(printed), "{key} {value}: {}", stdout(&output));
        }
        Err(error) => {
            assert_eq!(output.status.code(), Some(1), "{key} {value}: {}", stdout(&output));
            assert_eq!(stderr(&output).trim(), format!("error: {error}"), "{key} {value}");
        }
    }
}

#[test]
fn a_key_is_set_by_an_act_read_back_with_its_fact_and_every_mistake_is_named_sealing_nothing() {
    let scratch = tempfile::tempdir().expect("a folder");
    let land = scratch.path().join("land");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/court.toml");
    assert!(seed(&land, &["sim", fixture, "--ticks", "2"]).status.success());

    let before = config_of(&land);
    let inbox = key(&before, "inbox_depth_max");
    assert_eq!(
        (inbox["value"].clone(), inbox["default"].clone(), inbox["isDefault"].clone(), inbox["setBy"].clone()),
        (json!(64), json!(64), json!(true), Value::Null)
    );
    let cursor = before["landSeq"].clone();

    let cases: &[(&str, &str, Result<&str, &str>)] = &[
        ("inbox_depth", "5", Err("there is no configuration key \"inbox_depth\" (did you mean inbox_depth_max?)")),
        ("inbox_depth_max", "0", Err("inbox_depth_max = 0 is out of range: 1 to 1000000 summons")),
        ("inbox_depth_max", "4k", Err("inbox_depth_max is a whole number of summons, not \"4k\"")),
        ("inbox_depth_max", "-3", Err("inbox_depth_max is a whole number of summons, not \"-3\"")),
        ("budgets", "1", Err("budgets is not set with set-config: it is set with `do set-budget` (docs/llm.md)")),
    ];
    for (name, value, expected) in cases {
        check_set(&land, name, value, *expected);
    }
    assert_eq!(config_of(&land)["landSeq"], cursor, "a refused change seals nothing");

    check_set(&land, "inbox_depth_max", "1_000", Ok("inbox_depth_max = 1000 summons (was 64), sealed by @operator"));
    let after = config_of(&land);
    let inbox = key(&after, "inbox_depth_max");
    assert_eq!((inbox["value"].clone(), inbox["isDefault"].clone()), (json!(1000), json!(false)));
    assert_eq!(inbox["setBy"]["being"], "operator");
    assert_eq!(inbox["setBy"]["landSeq"], cursor, "the act sealed at the next land seq");
    assert_eq!(inbox["setBy"]["fact"].as_str().map(str::len), Some(64));
    check_set(&land, "inbox_depth_max", "default", Ok("inbox_depth_max = 64 summons, its default (was 1000)"));
    let back = config_of(&land);
    assert_eq!(
        (key(&back, "inbox_depth_max")["value"].clone(), key(&back, "inbox_depth_max")["isDefault"].clone()),
        (json!(64), json!(true))
    );

    // Both changes are acts of the operator: the land verifies and replays.
    check_set_by_is_the_land_logs(&land);
    crate::common::assert_verifies_and_replays_clean(&land);
}

/// Every key of the registry, one by one: set at an end of its range and
/// read back with the fact that set it, refused one past each end (nothing
/// sealed), and returned to its default; the land then verifies and replays.
#[test]
fn every_key_is_set_read_back_refused_past_its_range_and_returned_to_its_default() {
    let scratch = tempfile::tempdir().expect("a folder");
    let land = scratch.path().join("land");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/court.toml");
    assert!(seed(&land, &["sim", fixture, "--ticks", "1"]).status.success());
    for key in seed::config::CONFIG_KEYS {
        // An end of the range that leaves the land able to act: a health
        // threshold at its most (its floor at its least), anything else at
        // its least, unless its least is its default (a value set to its
        // default reads as set, not as the default).
        let health = key.name.starts_with("health_");
        let value = if (health && !key.name.ends_with("_min")) || key.min == key.default { key.max } else { key.min };
        let cursor = config_of(&land)["landSeq"].clone();
        let past = key.min.checked_sub(1).into_iter().chain(key.max.checked_add(1));
        for outside in past {
            let refused = format!("{} = {outside} is out of range: {} to {} {}", key.name, key.min, key.max, key.unit);
            check_set(&land, key.name, &outside.to_string(), Err(&refused));
        }
        assert_eq!(config_of(&land)["landSeq"], cursor, "{}: a refused value seals nothing", key.name);
        check_set(&land, key.name, &value.to_string(), Ok(&format!("{} = {value} {}", key.name, key.unit)));
        let set = config_of(&land);
        let read = self::key(&set, key.name);
        assert_eq!((read["value"].clone(), read["isDefault"].clone()), (json!(value), json!(value == key.default)));
        assert_eq!((read["setBy"]["being"].clone(), read["setBy"]["landSeq"].clone()), (json!("operator"), cursor));
        check_set(&land, key.name, "default", Ok(&format!("{} = {} {}, its default", key.name, key.default, key.unit)));
        assert_eq!(self::key(&config_of(&land), key.name)["isDefault"], json!(true), "{}", key.name);
    }
    check_set_by_is_the_land_logs(&land);
    crate::common::assert_verifies_and_replays_clean(&land);
}

#[test]
fn a_limit_set_at_the_portal_holds_from_the_next_moment_and_replay_reads_the_one_that_held() {
    let mut up = Up::start(&[]);
    let summon = |content: &str| {
        up.post("/api/v1/beings/operator/act", &json!({"verb": "summon", "target": "@ada", "content": content}))
    };
    let long = "a summons of thirty characters";
    let (status, answer) = summon(long);
    assert_eq!(status, 200, "{answer}");

    // Each mistake is a 400 naming its field; nothing is sealed.
    let cursor = up.cursor();
    let cases = [
        (json!({"key": "summon_chars", "value": 5}), "key", "there is no configuration key \"summon_chars\""),
        (json!({"key": "summon_content_chars_max", "value": 0}), "value", "out of range: 1 to 1000000 characters"),
        (json!({"key": "summon_content_chars_max", "value": "20"}), "value", "a whole number of characters"),
        (json!({"key": "summon_content_chars_max", "value": 20, "why": "x"}), "why", "not a field"),
        (json!({"value": 20}), "key", "key"),
    ];
    for (request, field, needle) in cases {
        let (status, answer) = up.post("/api/v1/config", &request);
        assert_eq!(status, 400, "{request}: {answer}");
        assert_eq!(answer["error"]["field"], field, "{request}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap_or_default().contains(needle), "{request}: {answer}");
    }
    assert_eq!(up.cursor(), cursor, "a refused change seals nothing");

    let (status, answer) = up.post("/api/v1/config", &json!({"key": "summon_content_chars_max", "value": 20}));
    assert_eq!(status, 200, "{answer}");
    let (status, config) = up.get("/api/v1/config");
    assert_eq!(status, 200);
    let limit = key(&config, "summon_content_chars_max");
    assert_eq!((limit["value"].clone(), limit["setBy"]["being"].clone()), (json!(20), json!("operator")), "{limit}");

    // In force from the next moment: the same summons is now refused.
    let (status, answer) = summon(long);
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap_or_default().contains("20"), "{answer}");
    let (status, answer) = summon("short enough");
    assert_eq!(status, 200, "{answer}");

    // The page shows the key, its value and the fact that set it.
    let (status, page) = up.page("/config");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"key-summon_content_chars_max\"") && page.contains("@operator at land seq"), "{page}");

    // Replay recomputes the long summons with the limit of its cursor (4000),
    // not today's (20): no divergence.
    up.stop();
    let replayed = seed(&up.land(), &["replay", "--all", "--json"]);
    let replayed: Value = serde_json::from_str(&stdout(&replayed)).expect("JSON");
    assert_eq!(replayed["divergences"], 0, "{replayed}");
}

/// docs/config.md's table lists every key with its unit and default.
#[test]
fn the_config_doc_lists_every_key_with_its_unit_and_default() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/config.md")).expect("docs/config.md");
    let grouped = |number: u64| {
        let digits = number.to_string();
        let mut out = String::new();
        for (index, digit) in digits.chars().enumerate() {
            if index > 0 && (digits.len() - index).is_multiple_of(3) {
                out.push(',');
            }
            out.push(digit);
        }
        out
    };
    for key in seed::config::CONFIG_KEYS {
        let row = format!(
            "| `{}` | {} | {} | {} to {} |",
            key.name,
            key.unit,
            grouped(key.default),
            grouped(key.min),
            grouped(key.max)
        );
        assert!(doc.contains(&row), "docs/config.md lacks the row {row}");
    }
}

/// `act_body_bytes_max`, `role_flow_clauses_max` and `when_nesting_depth_max` (issue 48, item 4):
/// each refuses past its value at the moment's cursor, naming the key, and
/// holds from the next moment once set again; the land replays.
#[test]
fn the_act_body_and_roleflow_clause_limits_refuse_past_the_value_in_force_and_replay() {
    use seed::moment::PersonChoice;
    use seed::world::{VerbCall, Wake};
    let scratch = tempfile::tempdir().expect("a folder");
    let fixture_path = crate::common::court_with_config(
        scratch.path(),
        "act_body_bytes_max = 1024\nrole_flow_clauses_max = 1\nwhen_nesting_depth_max = 1",
    );
    let fixture = seed::engine::fixture::Fixture::load(&fixture_path).expect("the court");
    let land = scratch.path().join("land");
    let mut engine =
        seed::engine::Engine::plant(&fixture, &crate::common::simulation_options(land.clone())).expect("planted");
    let operator = engine.world.names["operator"];
    let act = |engine: &mut seed::engine::Engine, action: &str, args: Value| {
        let call = VerbCall::Do { target: "/".into(), action: action.into(), args };
        let done =
            engine.act_as_person(operator, Wake::Person, &PersonChoice { call, content: None, importance: None });
        done.expect("sealed or refused").failure.map(|failure| failure.to_string())
    };
    let big = "x".repeat(2_000);
    let two_clauses = json!([{"role": "operator"}, {"role": "person"}]);
    let nested_twice = json!([{"role": "operator", "when": {"not": {"not": {"me.name": "operator"}}}}]);
    let cases: &[(&str, Value, Option<&str>)] = &[
        (
            "publish-signal",
            json!({"key": "court.note", "value": big}),
            Some("over the land's act_body_bytes_max of 1024"),
        ),
        ("publish-signal", json!({"key": "court.note", "value": "short"}), None),
        (
            "edit-role-flow",
            json!({"being": "operator", "flow": two_clauses}),
            Some("args.flow has 2 clauses, over the land's role_flow_clauses_max of 1"),
        ),
        (
            "edit-role-flow",
            json!({"being": "operator", "flow": nested_twice}),
            Some("args.flow nests `when` 2 levels deep, over the land's when_nesting_depth_max of 1"),
        ),
        ("set-config", json!({"key": "when_nesting_depth_max", "value": null}), None),
        ("edit-role-flow", json!({"being": "operator", "flow": nested_twice}), None),
        ("set-config", json!({"key": "act_body_bytes_max", "value": 65_536}), None),
        ("set-config", json!({"key": "role_flow_clauses_max", "value": null}), None),
        // In force from the next moment.
        ("publish-signal", json!({"key": "court.note", "value": big}), None),
        ("edit-role-flow", json!({"being": "operator", "flow": two_clauses}), None),
    ];
    for (action, args, expected) in cases {
        let failure = act(&mut engine, action, args.clone());
        match expected {
            None => assert_eq!(failure, None, "{action} {args}"),
            Some(said) => assert!(failure.as_deref().is_some_and(|text| text.contains(said)), "{action}: {failure:?}"),
        }
    }
    engine.finish().expect("finished");
    let replayed = seed(&land, &["replay", "--all", "--json", "--fixture", fixture_path.to_str().expect("utf-8")]);
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let report: Value = serde_json::from_str(&String::from_utf8_lossy(&replayed.stdout)).expect("JSON");
    assert_eq!(report["divergences"], 0, "{report}");
}

/// `script_operations_max` (issue 48, item 4): a being's script past the
/// land's limit fails its moment as out of budget, naming the limit; set
/// higher by an act, the next moment's script runs; the land replays, each
/// moment under the limit that held at its cursor.
/// A being's script past the land's `key` (set to `low` by the fixture)
/// fails naming it; raised to `high` by an act, the script runs from the
/// next moment; the land verifies and replays with the limit each moment
/// read.
fn check_script_limit(key: &str, low: u64, high: u64, script: &str, needle: &str) {
    use seed::moment::PersonChoice;
    use seed::world::{VerbCall, Wake};
    let scratch = tempfile::tempdir().expect("a folder");
    let counter = "\n[[being]]\nname = \"counter\"\nhome = \"/court\"\ndefault_role = \"court-watcher\"\nwake_every = 1\nscript = \"counter.rhai\"\n";
    let fixture_path = crate::common::court_with_config(scratch.path(), &format!("{key} = {low}\n{counter}"));
    std::fs::write(
        scratch.path().join("fixtures/counter.rhai"),
        format!("{script}\n#{{ verb: \"see\", address: \"/court\" }}\n"),
    )
    .expect("written");
    let fixture = seed::engine::fixture::Fixture::load(&fixture_path).expect("the court");
    let land = scratch.path().join("land");
    let mut engine =
        seed::engine::Engine::plant(&fixture, &crate::common::simulation_options(land.clone())).expect("planted");
    let counter_id = engine.world.names["counter"];
    let acts_of =
        |engine: &seed::engine::Engine| engine.land.store().head(&counter_id).expect("head").map_or(0, |head| head.seq);
    engine.round().expect("a round");
    assert_eq!(acts_of(&engine), 0, "{key}: the script ran past the limit: nothing sealed");
    let operator = engine.world.names["operator"];
    let call =
        VerbCall::Do { target: "/".into(), action: "set-config".into(), args: json!({"key": key, "value": high}) };
    let raised = engine.act_as_person(operator, Wake::Person, &PersonChoice { call, content: None, importance: None });
    assert_eq!(raised.expect("sealed").failure.map(|failure| failure.to_string()), None, "{key}");
    engine.round().expect("a round");
    assert_eq!(acts_of(&engine), 1, "{key}: in force from the next moment: the script ran");
    let summary = engine.finish().expect("finished");
    assert_eq!(summary.failure_reasons.get("script"), Some(&1), "{key}: {:?}", summary.failure_reasons);
    let example = &summary.failure_examples["script"];
    assert!(example.being == "counter" && example.reason.contains(needle), "{key}: {example:?}");
    crate::common::assert_verifies_and_replays_clean(&land);
}

#[test]
fn a_script_past_a_lands_script_limit_fails_until_the_limit_is_raised_and_replay_agrees() {
    let cases = [
        (
            "script_operations_max",
            1_000,
            100_000,
            "let n = 0;\nfor i in 0..2000 { n += 1; }",
            "more than 1000 operations",
        ),
        (
            "script_array_items_max",
            100,
            4_096,
            "let a = [];\nfor i in 0..2000 { a.push(i); }",
            "over 100 items (script_array_items_max)",
        ),
        (
            "script_call_depth_max",
            4,
            64,
            "fn f(n) { if n == 0 { 0 } else { 1 + f(n - 1) } }\nf(10);",
            "deeper than 4 calls (script_call_depth_max)",
        ),
        (
            "script_string_bytes_max",
            64,
            100_000,
            "let s = \"\";\nfor i in 0..200 { s += \"x\"; }",
            "over 64 bytes (script_string_bytes_max)",
        ),
    ];
    for (key, low, high, script, needle) in cases {
        check_script_limit(key, low, high, script, needle);
    }
}
