//! The `when` language, case by case: every operator, every combinator,
//! missing keys, type mismatches, numbers, nesting, and compile errors with
//! the path of the offending element.

use seed::roles::context::OpenContext;
use seed::roles::when::{check_key, compile, Lookup, PathTable, WHEN_NESTING_DEPTH_MAX};
use serde_json::{json, Value};

fn context() -> OpenContext {
    OpenContext::from_json(&json!({
        "verb": "summon",
        "caller": { "role": "human", "cognition": "human", "name": "ann" },
        "space.name": "court",
        "inHomeSpace": false,
        "time": { "hour": 10, "dayOfWeek": 3, "sinceLastMoment": 61.5 },
        "world.court.in-session": true,
        "world.harmony.tick.alive": true,
        "world.factory.count": 3,
        "space.quality.ambient.tone": "quiet",
        "me.quality.mood.level": 0.25,
        "list": [1, 2],
        "nothing": null
    }))
    .expect("context")
}

/// Evaluates `when` against the shared context and compares with `expected`.
fn check(when: Value, expected: bool) {
    let mut paths = PathTable::default();
    let condition = compile(&when, &mut paths, "when").unwrap_or_else(|error| panic!("{when}: {error}"));
    let context = context();
    let mut lookup = Lookup::new(&context, &paths);
    assert_eq!(condition.eval(&mut lookup).is_ok(), expected, "when {when}");
}

#[test]
fn bare_values_mean_equals() {
    check(json!({"verb": "summon"}), true);
    check(json!({"verb": "do"}), false);
    check(json!({"inHomeSpace": false}), true);
    check(json!({"world.court.in-session": true}), true);
    check(json!({"time.hour": 10}), true);
    check(json!({"time.hour": 10.0}), true);
    check(json!({"list": [1, 2]}), true);
    check(json!({"list": [2, 1]}), false);
}

#[test]
fn every_operator() {
    let cases = [
        (json!({"time.hour": {"eq": 10}}), true),
        (json!({"time.hour": {"ne": 10}}), false),
        (json!({"time.hour": {"ne": 11}}), true),
        (json!({"time.hour": {"gt": 9}}), true),
        (json!({"time.hour": {"gt": 10}}), false),
        (json!({"time.hour": {"gte": 10}}), true),
        (json!({"time.hour": {"lt": 10}}), false),
        (json!({"time.hour": {"lt": 10.5}}), true),
        (json!({"time.hour": {"lte": 10}}), true),
        (json!({"time.hour": {"gte": 9, "lt": 17}}), true),
        (json!({"time.hour": {"gte": 11, "lt": 17}}), false),
        (json!({"space.name": {"in": ["court", "library"]}}), true),
        (json!({"space.name": {"in": ["library"]}}), false),
        (json!({"world.factory.count": {"in": [1, 3.0]}}), true),
        (json!({"world.court.in-session": {"present": true}}), true),
        (json!({"world.factory.broken": {"present": true}}), false),
        (json!({"world.factory.broken": {"present": false}}), true),
        (json!({"me.quality.mood.level": {"lt": 0.5}}), true),
        (json!({"time.sinceLastMoment": {"gte": 60}}), true),
    ];
    for (when, expected) in cases {
        check(when, expected);
    }
}

#[test]
fn combinators() {
    check(json!({"not": {"inHomeSpace": true}}), true);
    check(json!({"not": {"inHomeSpace": false}}), false);
    check(json!({"or": [{"verb": "do"}, {"verb": "be"}]}), false);
    check(json!({"or": [{"verb": "do"}, {"verb": "summon"}]}), true);
    check(json!({"and": [{"verb": "summon"}, {"space.name": "court"}]}), true);
    check(json!({"and": [{"verb": "summon"}, {"space.name": "library"}]}), false);
    check(json!({"verb": "summon", "space.name": "court", "time.hour": {"lt": 12}}), true);
    check(json!({"verb": "summon", "space.name": "library"}), false);
    check(json!({"not": {"or": [{"verb": "do"}, {"not": {"space.name": "court"}}]}}), true);
    check(json!({}), true);
}

#[test]
fn missing_keys_never_equal_anything() {
    check(json!({"caller.mood": "happy"}), false);
    check(json!({"caller.mood": {"eq": "happy"}}), false);
    check(json!({"caller.mood": {"ne": "happy"}}), true);
    check(json!({"caller.mood": {"in": ["happy"]}}), false);
    check(json!({"caller.mood": {"gt": 0}}), false);
    check(json!({"caller.mood": {"lte": 0}}), false);
    check(json!({"caller.mood": {"present": false}}), true);
    check(json!({"nothing": {"present": false}}), true);
    check(json!({"nothing": {"present": true}}), false);
}

#[test]
fn type_mismatches_are_false_not_errors() {
    check(json!({"time.hour": "10"}), false);
    check(json!({"space.name": {"gt": 3}}), false);
    check(json!({"inHomeSpace": 0}), false);
    check(json!({"verb": {"in": [1, true]}}), false);
    check(json!({"list": {"lt": 3}}), false);
}

fn compile_error(when: Value) -> String {
    let mut paths = PathTable::default();
    compile(&when, &mut paths, "[0].when").expect_err("should not compile").to_string()
}

#[test]
fn bad_conditions_name_the_offending_element() {
    let cases = [
        (json!({"time.hour": {"gtee": 9}}), "[0].when.time.hour.gtee: unknown operator `gtee`"),
        (json!({"time.hour": {"gte": "nine"}}), "[0].when.time.hour.gte: `gte` needs a number"),
        (json!({"space.name": {"in": "court"}}), "[0].when.space.name.in: `in` needs an array"),
        (json!({"x": {"present": 1}}), "[0].when.x.present: `present` needs true or false"),
        (json!({"or": {"verb": "do"}}), "[0].when.or: `or` needs an array"),
        (json!({"and": []}), "[0].when.and: `and` needs at least one"),
        (json!({"not": [1]}), "[0].when.not: a `when` must be an object"),
        (json!(["verb"]), "[0].when: a `when` must be an object"),
        (json!({"x": {}}), "[0].when.x: empty operator object"),
        (json!({"x": null}), "[0].when.x: null never matches"),
        (json!({"a..b": 1}), "[0].when.a..b: \"a..b\" is not a dotted context path"),
    ];
    for (when, expected) in cases {
        let error = compile_error(when.clone());
        assert!(error.starts_with(expected), "{when}: {error}");
    }
    assert!(compile_error(json!({"time.hour": {"gtee": 9}})).contains("did you mean `gte`?"));
}

#[test]
fn nesting_deeper_than_the_limit_is_refused() {
    let mut when = json!({"verb": "do"});
    for _ in 0..WHEN_NESTING_DEPTH_MAX {
        when = json!({"not": when});
    }
    let mut paths = PathTable::default();
    assert!(compile(&when, &mut paths, "w").is_ok(), "exactly at the limit compiles");
    let deeper = json!({"not": when});
    let error = compile(&deeper, &mut paths, "w").expect_err("too deep").to_string();
    assert!(error.contains(&format!("nested deeper than {WHEN_NESTING_DEPTH_MAX} levels")), "{error}");
}

#[test]
fn the_validator_warns_about_unknown_keys_and_typos() {
    let cases = [
        ("space.name", None),
        ("world.court.in-session", None),
        ("space.quality.ambient.tone", None),
        ("me.quality.mood.level", None),
        ("space.nmae", Some("space.name")),
        ("time.sinceLastMomnet", Some("time.sinceLastMoment")),
        ("inHomespace", Some("inHomeSpace")),
        ("wrold.court.in-session", Some("world.court.in-session")),
        ("world.court", Some("world.<namespace>.<key>")),
    ];
    for (key, suggestion) in cases {
        let warning = check_key(key);
        match suggestion {
            None => assert_eq!(warning, None, "{key}"),
            Some(suggestion) => {
                let warning = warning.unwrap_or_else(|| panic!("{key} should warn"));
                assert_eq!(warning.suggestion.as_deref(), Some(suggestion), "{key}");
            }
        }
    }
    let unknown = check_key("colour").expect("warns");
    assert_eq!(unknown.suggestion, None);
}
