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

/// Each act of `being` in a land: (land seq, fact id, target, content) of its summons.
fn summons_sent(land: &std::path::Path, being: &str) -> Vec<(u64, String, String, String)> {
    let reel = seed_json(land, &["reel", being, "--json"]);
    let facts = reel["facts"].as_array().expect("facts");
    facts
        .iter()
        .filter(|fact| fact["kind"] == "act" && fact["body"]["call"]["verb"] == "summon")
        .map(|fact| {
            let call = &fact["body"]["call"];
            let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
            (
                fact["landSeq"].as_u64().expect("a land seq"),
                text(&fact["id"]),
                text(&call["target"]),
                text(&call["content"]),
            )
        })
        .collect()
}

/// The market world: @bo takes grain without paying. @ada wears the
/// `remembering` modifier (orientation `half`, recall of what each caller
/// said): once bo has cheated her she deals with him no more, and she
/// keeps dealing with @cy, who pays. @fay is `forward`: she deals with bo
/// every time he asks. Every moment replays byte for byte, and ada's faces
/// cite the very fact of bo's refusal to pay.
#[test]
fn a_trader_who_remembers_stops_dealing_with_a_cheat_and_a_forward_one_does_not() {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/market.toml");
    simulate(&land, &fixture, 40);
    let cheats = summons_sent(&land, "@bo");
    for trader in ["@ada", "@fay"] {
        let first_cheat = cheats
            .iter()
            .find(|(_, _, target, content)| target == trader && content.starts_with("not paying"))
            .unwrap_or_else(|| panic!("bo cheated {trader}: {cheats:?}"))
            .0;
        let answers = summons_sent(&land, trader);
        let after = |who: &str, answer: &str| {
            answers
                .iter()
                .filter(|(seq, _, target, content)| *seq > first_cheat && target == who && content.starts_with(answer))
                .count()
        };
        match trader {
            "@ada" => {
                assert_eq!(after("@bo", "deal"), 0, "ada dealt with bo after he cheated her: {answers:?}");
                assert!(after("@bo", "no deal") >= 2, "ada refused bo: {answers:?}");
                assert!(after("@cy", "deal") >= 2, "ada keeps dealing with cy, who pays: {answers:?}");
            }
            _ => {
                assert!(after("@bo", "deal") >= 2, "fay forgets and deals with bo again: {answers:?}");
                assert_eq!(after("@bo", "no deal"), 0, "fay never refuses: {answers:?}");
            }
        }
    }
    // Every moment replays byte for byte; ada's faces carry what she
    // recalled, each item citing its fact, and fay's faces have no recall.
    let lines = |being: &str| -> Vec<Value> {
        let output = crate::common::seed(&land, &["replay", being, "--json"]);
        assert_eq!(output.status.code(), Some(0), "{being}: {}", crate::common::stdout(&output));
        crate::common::stdout(&output).lines().map(|line| serde_json::from_str(line).expect("json")).collect()
    };
    let first_cheat_of_ada = cheats
        .iter()
        .find(|(_, _, target, content)| target == "@ada" && content.starts_with("not paying"))
        .expect("a cheat");
    let mut refusals_citing_the_cheat = 0;
    for moment in lines("@ada").iter().filter(|line| line.get("face").is_some()) {
        assert_eq!(moment["matches"], true, "{moment}");
        if moment["primary"] == "reflecting" {
            // Her reflections look inward: acts, summons and notes.
            assert_eq!(moment["face"]["recall"]["kinds"], json!(["act", "summons", "note"]), "{moment}");
            continue;
        }
        let recall = &moment["face"]["recall"];
        assert_eq!(recall["kinds"], json!(["summons"]), "the role's kinds, within what `half` allows: {recall}");
        for item in recall["items"].as_array().expect("items") {
            assert!(
                item["landSeq"].as_u64() < moment["cursor"].as_u64(),
                "recalled only from before the cursor: {item}"
            );
            assert_eq!(item["fact"].as_str().map(str::len), Some(64), "{item}");
        }
        let refused = moment["act"]["call"]["content"].as_str().is_some_and(|content| content.starts_with("no deal"));
        if refused {
            assert_eq!(recall["query"], "bo not paying", "the role's template, filled: {recall}");
            assert_eq!(recall["items"][0]["fact"], first_cheat_of_ada.1.as_str(), "the refusal cites bo's: {recall}");
            refusals_citing_the_cheat += 1;
        }
    }
    assert!(refusals_citing_the_cheat >= 2, "ada's refusals recalled the cheat");
    for moment in lines("@fay").iter().filter(|line| line.get("face").is_some()) {
        assert!(moment["face"].get("recall").is_none(), "a forward face has no recall: {moment}");
    }
    // Importance: the trader's role gives every answer 2, her script gives
    // a refusal 8; memory ranks by what the act recorded.
    let memory = seed_json(&land, &["memory", "@ada", "--json"]);
    let acts: Vec<&Value> =
        memory["items"].as_array().expect("items").iter().filter(|item| item["kind"] == "act").collect();
    assert!(!acts.is_empty(), "{memory}");
    for act in acts {
        let refusal = act["text"].as_str().is_some_and(|text| text.contains("no deal"));
        assert_eq!(act["importance"], if refusal { 8 } else { 2 }, "{act}");
    }
    // Her reflections name the cheat (the later ones carrying forward what
    // the earlier found) and cite what they cover; nothing is a problem.
    assert_eq!(memory["problems"], json!([]), "{memory}");
    let reflections: Vec<&Value> =
        memory["items"].as_array().expect("items").iter().filter(|item| item["reflection"] == true).collect();
    assert!(reflections.len() >= 2, "ada reflected: {memory}");
    for reflection in reflections {
        assert!(reflection["text"].as_str().is_some_and(|text| text.contains("without paying: @bo")), "{reflection}");
        assert!(!reflection["covers"].as_array().expect("covers").is_empty(), "{reflection}");
    }
    let all = seed_json(&land, &["replay", "--all", "--json"]);
    assert_eq!(all["divergences"], 0, "{all}");
}

/// The market with `recall_face_chars_max` set low: ada's faces cannot hold
/// all she recalls, so the texts shown stay within the budget and every
/// item left out is listed with the reflection that covers it, if one does.
/// Her reflections cite what they cover, her memory says so, and every
/// moment replays byte for byte.
#[test]
fn a_face_short_of_room_keeps_to_its_budget_and_names_what_it_left_out_and_what_covers_it() {
    const BUDGET_CHARS: usize = 100;
    let dir = tempfile::tempdir().expect("folder");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(repo.join("fixtures/market.toml")).expect("fixture");
    let text = text
        .replace(
            "roles = [\"../roles\", \"roles\"]",
            &format!("roles = [{:?}, {:?}]", repo.join("roles"), repo.join("fixtures/roles")),
        )
        .replace("extensions = \"../extensions\"", &format!("extensions = {:?}", repo.join("extensions")));
    let fixture = dir.path().join("market.toml");
    std::fs::write(&fixture, format!("{text}\n[config]\nrecall_face_chars_max = {BUDGET_CHARS}\n")).expect("write");
    let land = dir.path().join("land");
    simulate(&land, &fixture, 40);
    // Her reflections, and what they cover.
    let memory = seed_json(&land, &["memory", "@ada", "--json"]);
    assert_eq!(memory["problems"], json!([]), "{memory}");
    let items = memory["items"].as_array().expect("items");
    let reflections: Vec<&Value> = items.iter().filter(|item| item["reflection"] == true).collect();
    assert!(reflections.len() >= 2, "ada reflected: {memory}");
    for reflection in &reflections {
        assert_eq!(reflection["kind"], "note");
        for covered in reflection["covers"].as_array().expect("covers") {
            let item = items.iter().find(|item| item["fact"] == *covered).expect("a covered item is in memory");
            let by = item["coveredBy"]["landSeq"].as_u64().expect("covered");
            assert!(by >= reflection["landSeq"].as_u64().expect("seq"), "the latest reflection covers it: {item}");
        }
    }
    // Her faces within the budget, naming what they left out.
    let mut left_out_covered = 0;
    for recall in recall_blocks_within(&land, "@ada", BUDGET_CHARS) {
        for left in recall["leftOut"].as_array().expect("left out") {
            assert_eq!(left["fact"].as_str().map(str::len), Some(64), "{left}");
            if left["coveredBy"].is_string() {
                left_out_covered += 1;
            }
        }
    }
    // Which reflections stand in is table-tested (`moment::recall::compact`);
    // here every face keeps to its budget and names what it left out.
    assert!(left_out_covered > 0, "no item left out named its reflection");
    let all = seed_json(&land, &["replay", "--all", "--json"]);
    assert_eq!(all["divergences"], 0, "{all}");
}

/// The diary (tests/fixtures/worlds/diary): a diarist writes a note a round
/// and reflects every third, its faces holding 160 characters of recalled
/// text. Older notes give way to the reflection that covers them: the
/// reflection is shown, marked `standsIn`, the notes it covers are listed as
/// left out with it, none of them is shown beside it, and every face keeps
/// to its budget and replays byte for byte.
#[test]
fn older_notes_give_way_to_the_reflection_that_covers_them() {
    const BUDGET_CHARS: usize = 160;
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let world = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/worlds/diary/world.toml");
    simulate(&land, &world, 16);
    let memory = seed_json(&land, &["memory", "@dee", "--json"]);
    assert_eq!(memory["problems"], json!([]), "{memory}");
    let mut stood_in = 0;
    for recall in recall_blocks_within(&land, "@dee", BUDGET_CHARS) {
        let items = recall["items"].as_array().expect("items");
        let left_out = recall["leftOut"].as_array().expect("left out");
        for stand_in in items.iter().filter(|item| item["standsIn"] == true) {
            stood_in += 1;
            let covered: Vec<&Value> = left_out.iter().filter(|left| left["coveredBy"] == stand_in["fact"]).collect();
            assert!(!covered.is_empty(), "a stand-in stands in for something left out: {recall}");
            for left in covered {
                assert!(
                    items.iter().all(|item| item["fact"] != left["fact"]),
                    "a covered item beside its stand-in: {recall}"
                );
            }
        }
    }
    assert!(stood_in >= 3, "reflections stood in for the notes they cover ({stood_in} times)");
    let all = seed_json(&land, &["replay", "--all", "--json"]);
    assert_eq!(all["divergences"], 0, "{all}");
}

/// The recall blocks of `being`'s replayed moments, each checked to match
/// byte for byte and to show at most `budget_chars` characters of text.
fn recall_blocks_within(land: &std::path::Path, being: &str, budget_chars: usize) -> Vec<Value> {
    let output = crate::common::seed(land, &["replay", being, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", crate::common::stdout(&output));
    let mut blocks = Vec::new();
    for line in crate::common::stdout(&output).lines() {
        let moment: Value = serde_json::from_str(line).expect("json");
        let Some(recall) = moment["face"].get("recall") else { continue };
        assert_eq!(moment["matches"], true, "{moment}");
        let items = recall["items"].as_array().expect("items");
        let chars: usize = items.iter().map(|item| item["text"].as_str().expect("text").chars().count()).sum();
        assert!(chars <= budget_chars, "{chars} characters shown: {recall}");
        blocks.push(recall.clone());
    }
    blocks
}

/// Simulates `world` for `ticks` rounds into `land`, which must succeed.
fn simulate(land: &std::path::Path, world: &std::path::Path, ticks: u64) {
    let output = crate::common::seed(land, &["sim", world.to_str().expect("utf-8"), "--ticks", &ticks.to_string()]);
    assert!(output.status.success(), "{}", crate::common::stderr(&output));
}

#[test]
fn a_person_gives_an_act_its_importance_and_a_bad_one_is_refused_naming_it() {
    let up = Up::start(&[]);
    let act = |importance: Value| {
        up.post("/api/v1/beings/operator/act", &json!({"verb": "see", "address": "/court", "importance": importance}))
    };
    for (given, expected) in [
        (json!(11), "`importance` is a whole number from 0 to 10, not 11"),
        (json!(-1), "`importance` is a whole number from 0 to 10, not -1"),
        (json!("high"), "`importance` is a whole number from 0 to 10, not \"high\""),
        (json!([7]), "`importance` is a whole number from 0 to 10, not [7]"),
    ] {
        let (status, body) = act(given.clone());
        assert_eq!(status, 400, "{given}: {body}");
        assert_eq!(body["error"]["field"], "importance", "{body}");
        assert_eq!(body["error"]["message"], expected, "{body}");
    }
    // A form sends it as text.
    let (status, body) = act(json!("7"));
    assert_eq!(status, 200, "{body}");
    let mut up = up;
    up.stop();
    let reel = seed_json(&up.land(), &["reel", "@operator", "--json"]);
    let acts: Vec<&Value> = reel["facts"].as_array().unwrap().iter().filter(|fact| fact["kind"] == "act").collect();
    assert_eq!(acts.len(), 1, "only the good importance sealed an act: {reel}");
    assert_eq!(acts[0]["body"]["importance"], 7, "{}", acts[0]);
    let memory = seed_json(&up.land(), &["memory", "@operator", "--json"]);
    let item = memory["items"].as_array().unwrap().iter().find(|item| item["kind"] == "act").unwrap();
    assert_eq!(item["importance"], 7, "{memory}");
    let replay = crate::common::seed(&up.land(), &["replay", "@operator"]);
    assert!(replay.status.success(), "{}", crate::common::stdout(&replay));
    assert!(crate::common::stdout(&replay).contains("0 divergence(s)"), "{}", crate::common::stdout(&replay));
}

/// One being's memory read from the facts that concern it (the land log
/// read as stored, only the being's own facts and the acts whose bodies
/// name it decoded) is its memory read from every fact: for every being of
/// a market whose traders summon each other and of a diary of notes and
/// reflections, at the land's end and halfway, with a recall. So is the
/// portal's reading, which reads the summonses a world folded to the end,
/// or to halfway, remembers and the land log past that world's cursor.
#[test]
fn a_memory_read_from_the_facts_that_concern_it_is_its_memory_read_from_every_fact() {
    use seed::memory_view::{memory_json_knowing, memory_json_reading, MemoryAsk, SummonsesKnown};
    use seed::picked_facts::FactsRead;
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (world, ticks, summonses_least) in
        [("fixtures/market.toml", 40, 10), ("tests/fixtures/worlds/diary/world.toml", 16, 0)]
    {
        let dir = tempfile::tempdir().expect("folder");
        let land = dir.path().join("land");
        simulate(&land, &repo.join(world), ticks);
        let land = seed::land::Land::open_read_only(&land).expect("the land opens");
        let store = land.store();
        let land_len = store.land_len().expect("its length");
        let mut halfway = seed::world::World::new();
        seed::engine::fold_until(store, &mut halfway, land_len / 2).expect("folds");
        let mut at_end = halfway.clone();
        seed::engine::fold_to_end(store, &mut at_end).expect("folds");
        let (mut beings_read, mut summonses, mut notes) = (0, 0, 0);
        for being in store.beings().expect("its beings") {
            let genesis = store.reel(&being, 0, 1).expect("a reel").into_iter().next().expect("a genesis");
            let name = genesis.fact.body_as::<seed::fact::body::GenesisBody>().expect("a genesis").name;
            for at in [None, Some(land_len / 2)] {
                let ask = MemoryAsk { at, query: Some("price deal note".into()), count: 5 };
                let picked = memory_json_reading(store, being, &name, &ask, FactsRead::Picked).expect("read");
                let every = memory_json_reading(store, being, &name, &ask, FactsRead::Every).expect("read");
                assert_eq!(picked, every, "{world}: @{name} at {at:?}");
                for (folded, folded_to) in [(&at_end, "the end"), (&halfway, "halfway")] {
                    let known = SummonsesKnown::in_world(folded, &being);
                    let knowing = memory_json_knowing(store, being, &name, &ask, &known).expect("read");
                    assert_eq!(knowing, every, "{world}: @{name} at {at:?}, knowing a world folded to {folded_to}");
                }
                let items = every["items"].as_array().expect("items");
                summonses += items.iter().filter(|item| item["kind"] == "summons").count();
                notes += items.iter().filter(|item| item["kind"] == "note").count();
            }
            beings_read += 1;
        }
        assert!(beings_read > 2, "{world}: {beings_read} beings");
        assert!(summonses >= summonses_least, "{world}: {summonses} summonses remembered");
        assert!(summonses + notes > 0, "{world}: memories of others' acts or of notes");
    }
}
