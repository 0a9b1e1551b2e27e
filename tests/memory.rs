//! A being's memory end to end: notes written through the portal as `be
//! note` acts, a later note superseding an earlier one without removing
//! it, `seed memory` showing the memory as it stood at any cursor and what
//! recall ranks first, and the land replaying clean.

use crate::common::portal::Up;
use serde_json::{json, Value};

fn seed_json(land: &std::path::Path, arguments: &[&str]) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(land)
        .args(arguments)
        .output()
        .expect("seed runs");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{arguments:?}: {text}{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("{arguments:?} printed JSON: {text}"))
}

/// The id of the fact `being` sealed at `land_seq`, from its page's reel.
fn fact_at(up: &Up, being: &str, land_seq: &Value) -> String {
    let (_, page) = up.get(&format!("/api/v1/beings/{being}"));
    let reel = page["reel"].as_array().expect("a reel");
    let fact = reel.iter().find(|fact| fact["landSeq"] == *land_seq).expect("the act is on the reel");
    fact["id"].as_str().expect("an id").to_string()
}

#[test]
fn a_later_note_supersedes_an_earlier_one_and_both_stay_in_memory_at_every_cursor() {
    let mut up = Up::start(&[]);
    let diarist = json!({"definition": {"name": "diarist", "canBe": ["note"], "prompt": "Keep notes."}});
    assert_eq!(up.post("/api/v1/roles", &diarist).0, 201);
    let (status, born) =
        up.post("/api/v1/birth", &json!({"name": "kid", "cognition": "human", "defaultRole": "diarist"}));
    assert_eq!(status, 201, "{born}");
    let note = |payload: Value| {
        up.post("/api/v1/beings/kid/act", &json!({"verb": "be", "operation": "note", "payload": payload}))
    };
    let (status, first) = note(json!({"text": "bob cheated me at the grain stall", "importance": 8}));
    assert_eq!(status, 200, "{first}");
    let first_fact = fact_at(&up, "kid", &first["landSeq"]);
    // Bad notes are refused by the verb layer, naming what is wrong, and seal nothing.
    let before = up.cursor();
    for (payload, needle) in [
        (json!({"text": ""}), "needs `text`"),
        (json!({"text": "x", "importance": 11}), "`importance`"),
        (json!({"text": "x", "supersedes": "not-a-fact"}), "`supersedes`"),
        (json!({"text": "x", "mood": "sad"}), "no field `mood`"),
    ] {
        let (status, refused) = note(payload.clone());
        assert_eq!(status, 400, "{payload}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("be note") && message.contains(needle), "{payload}: {message}");
    }
    assert_eq!(up.cursor(), before, "refused notes sealed nothing");
    let (status, second) = note(json!({
        "text": "bob paid back every coin", "importance": 6, "supersedes": first_fact, "why": "he returned the coins"
    }));
    assert_eq!(status, 200, "{second}");
    let second_fact = fact_at(&up, "kid", &second["landSeq"]);
    let second_seq = second["landSeq"].as_u64().expect("a land seq");
    // The portal shows the same memory, at any cursor, to whoever may see inside the being.
    let (status, shown) = up.get("/api/v1/beings/kid/memory?query=bob&count=3");
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["recall"]["items"][0]["fact"], second_fact.as_str(), "{shown:#}");
    let (status, earlier) = up.get(&format!("/api/v1/beings/kid/memory?at={second_seq}"));
    assert_eq!((status, earlier["items"].as_array().map(Vec::len)), (200, Some(1)), "{earlier:#}");
    for (query, field) in
        [("at=soon", "at"), ("at=999999", "at"), ("count=0", "count"), ("count=x", "count"), ("mood=1", "mood")]
    {
        let (status, refused) = up.get(&format!("/api/v1/beings/kid/memory?{query}"));
        assert_eq!((status, refused["error"]["field"].clone()), (400, json!(field)), "{query}: {refused}");
    }
    let (cookie, _) = up.login();
    let page = up.http.get(format!("{}/beings/kid/memory?query=bob", up.url)).header("cookie", &cookie).send();
    let page = page.expect("answered").text().expect("a page");
    assert!(page.contains("Memory of @kid") && page.contains("he returned the coins"), "{page}");
    assert!(page.contains("bob paid back every coin") && page.contains("superseded"), "{page}");
    up.stop();

    let land = up.land();
    let now = seed_json(&land, &["memory", "@kid", "--json", "--query", "what did bob do", "--count", "4"]);
    let notes: Vec<&Value> = now["items"].as_array().expect("items").iter().filter(|i| i["kind"] == "note").collect();
    assert_eq!(notes.len(), 2, "both notes stay: {now:#}");
    assert_eq!(notes[0]["fact"], first_fact.as_str());
    assert_eq!(notes[0]["supersededBy"]["fact"], second_fact.as_str());
    assert_eq!(notes[0]["supersededBy"]["why"], "he returned the coins");
    assert_eq!(notes[1]["supersedes"], first_fact.as_str());
    // Recall shows the newest note, never the superseded one.
    let recalled: Vec<&str> =
        now["recall"]["items"].as_array().expect("recalled").iter().filter_map(|item| item["fact"].as_str()).collect();
    assert!(recalled.contains(&second_fact.as_str()) && !recalled.contains(&first_fact.as_str()), "{now:#}");
    // As the memory stood before the second note: the first, not superseded.
    let at = second_seq.to_string();
    let then = seed_json(&land, &["memory", "@kid", "--json", "--at", &at, "--query", "bob"]);
    let notes: Vec<&Value> = then["items"].as_array().expect("items").iter().filter(|i| i["kind"] == "note").collect();
    assert_eq!(notes.len(), 1, "{then:#}");
    assert_eq!(notes[0]["supersededBy"], Value::Null);
    assert_eq!(then["recall"]["items"][0]["fact"], first_fact.as_str(), "{then:#}");
    // Notes are acts like any other: the land verifies and replays clean.
    let replayed = seed_json(&land, &["replay", "--all", "--json"]);
    assert_eq!((replayed["divergences"].clone(), replayed["problems"].clone()), (json!(0), json!([])), "{replayed:#}");
    assert!(replayed["moments"].as_u64().is_some_and(|moments| moments >= 4), "{replayed:#}");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .arg("--land")
        .arg(&land)
        .args(["replay", "@kid", "--json"])
        .output()
        .expect("seed runs");
    let lines = String::from_utf8_lossy(&output.stdout).to_string();
    let summary: Value = serde_json::from_str(lines.lines().last().expect("a summary line")).expect("JSON");
    assert_eq!(
        (summary["summary"]["moments"].clone(), summary["summary"]["divergences"].clone()),
        (json!(2), json!([]))
    );
}
