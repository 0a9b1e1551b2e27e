//! The timeline across beings and a moment's page against a real `seed up`
//! on a land simulated with an LLM clerk (the in-process fake endpoint, with
//! prices): lanes, marks, filters, windows, and a mark's moment with its
//! stack, clause trace and values, the prompt sent, tokens and cost.

use crate::common;

use common::portal::Up;
use seed::llm_http::fake::{FakeEndpoint, Reply};
use serde_json::{json, Value};

/// The LLM court simulated for 3 ticks (the clerk summons @ada once, with
/// prose), opened in the portal.
fn simulated_llm_court() -> Up {
    simulated_llm_court_with(&FakeEndpoint::start().expect("the fake endpoint"), false)
}

/// `simulated_llm_court` against `endpoint`; `live_llm` lets the portal's
/// rounds call it too.
fn simulated_llm_court_with(endpoint: &FakeEndpoint, live_llm: bool) -> Up {
    endpoint.push([Reply::Tool {
        name: "summon".into(),
        arguments: json!({ "target": "@ada", "content": "Case 1 is ready." }).to_string(),
        prose: Some("Filed the first case.".into()),
    }]);
    let dir = tempfile::tempdir().expect("temporary folder");
    let connections = dir.path().join("connections.toml");
    std::fs::write(
        &connections,
        format!(
            "[connection.fake]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries_max = 0\n\
             prompt_micros_per_mtok = 2000000\ncompletion_micros_per_mtok = 4000000\n",
            endpoint.base_url()
        ),
    )
    .expect("connections file");
    let land = dir.path().join("land");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm/court.toml");
    let simulated = common::seed(
        &land,
        &["sim", fixture.to_str().expect("utf-8"), "--ticks", "3", "--llm", connections.to_str().expect("utf-8")],
    );
    assert_eq!(simulated.status.code(), Some(0), "{}", common::stderr(&simulated));
    let issued = common::seed(&land, &["token", "--json"]);
    let token: Value = serde_json::from_slice(&issued.stdout).expect("token JSON");
    let token = token["token"].as_str().expect("a token").to_string();
    let mut arguments = vec!["--fixture", fixture.to_str().expect("utf-8")];
    if live_llm {
        arguments.extend(["--llm", connections.to_str().expect("utf-8"), "--round-ms", "200"]);
    }
    Up::open_with(dir, token, &arguments)
}

fn lane<'a>(timeline: &'a Value, name: &str) -> &'a Value {
    timeline["lanes"].as_array().expect("lanes").iter().find(|lane| lane["name"] == name).expect("the being's lane")
}

fn names(timeline: &Value) -> Vec<&str> {
    timeline["lanes"].as_array().expect("lanes").iter().map(|lane| lane["name"].as_str().expect("a name")).collect()
}

#[test]
fn the_timeline_draws_each_beings_facts_and_a_mark_opens_its_moment_with_prompt_tokens_and_cost() {
    let up = simulated_llm_court();
    let (status, timeline) = up.get("/api/v1/timeline");
    assert_eq!(status, 200, "{timeline}");
    let cursor = up.cursor();
    assert_eq!(timeline["window"], json!({"from": 0, "to": cursor, "cursor": cursor}));
    assert_eq!(timeline["lanesTotal"].as_u64(), Some(names(&timeline).len() as u64));
    assert!(names(&timeline).windows(2).all(|pair| pair[0] < pair[1]), "lanes by name: {:?}", names(&timeline));
    // Every fact of every lane is a mark, in land order, born first.
    let mut drawn = 0;
    for lane in timeline["lanes"].as_array().unwrap() {
        let marks = lane["marks"].as_array().unwrap();
        assert_eq!(marks[0]["kind"], "genesis", "{lane}");
        assert!(marks.windows(2).all(|pair| pair[0]["landSeq"].as_u64() < pair[1]["landSeq"].as_u64()));
        drawn += marks.len() as u64;
    }
    assert_eq!(drawn, cursor, "every fact of the land is drawn once");
    let clerk = lane(&timeline, "clerk");
    let summon = clerk["marks"].as_array().unwrap().iter().find(|mark| mark["verb"] == "summon").expect("the summon");
    assert_eq!(summon["wake"], "tick");
    assert!(summon["summary"].as_str().unwrap().contains("Case 1 is ready."), "{summon}");
    let legend: Vec<&str> = timeline["legend"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(legend.contains(&summon["primary"].as_str().unwrap()), "{legend:?}");

    // The page links the mark to its moment.
    let seq = summon["seq"].as_u64().unwrap();
    let (status, page) = up.page("/timeline");
    assert_eq!(status, 200);
    assert!(page.contains(&format!("href=\"/beings/clerk/moments/{seq}\"")), "{page}");
    assert!(page.contains("id=\"timeline-legend\""));

    // The moment: stack, clause trace with values, the prompt sent, tokens, cost.
    let (status, moment) = up.get(&format!("/api/v1/beings/clerk/moments/{seq}"));
    assert_eq!(status, 200, "{moment}");
    assert_eq!(moment["matches"], true, "{moment}");
    assert_eq!(moment["verb"], "summon");
    assert_eq!(moment["landSeq"], summon["landSeq"]);
    assert_eq!(moment["wake"]["kind"], "tick");
    assert_eq!(moment["stack"][0]["name"], summon["primary"]);
    assert_eq!(moment["stack"][0]["digest"].as_str().map(str::len), Some(64), "a hex digest");
    assert!(!moment["clauses"].as_array().unwrap().is_empty(), "{moment}");
    let llm = &moment["llm"];
    assert_eq!((llm["promptTokens"].as_u64(), llm["completionTokens"].as_u64()), (Some(100), Some(10)));
    assert_eq!(llm["costMicros"], 240, "100 tokens at 2 per million units + 10 at 4: {llm}");
    assert!(llm["prompt"]["system"].as_str().unwrap().starts_with("You are @clerk"), "{llm}");
    assert!(llm["prompt"]["user"].as_str().unwrap().starts_with("Tick "), "{llm}");
    let (status, page) = up.page(&format!("/beings/clerk/moments/{seq}"));
    assert_eq!(status, 200);
    for part in ["id=\"moment-stack\"", "id=\"moment-clauses\"", "id=\"llm-system\"", "You are @clerk", "cost 0.000240"]
    {
        assert!(page.contains(part), "{part} on the moment page:\n{page}");
    }

    // A clause that read keys shows the value each had.
    let (_, ada) = up.get("/api/v1/timeline?being=ada");
    let act = ada["lanes"][0]["marks"].as_array().unwrap().iter().find(|mark| mark["kind"] == "act").expect("an act");
    let (status, moment) = up.get(&format!("/api/v1/beings/ada/moments/{}", act["seq"]));
    assert_eq!(status, 200, "{moment}");
    let keys: Vec<&Value> =
        moment["clauses"].as_array().unwrap().iter().flat_map(|c| c["keys"].as_array().unwrap()).collect();
    let in_session = keys.iter().find(|key| key["key"] == "world.court.in-session").expect("the judge clause's key");
    assert_eq!(in_session["value"], true, "{moment}");
    assert!(moment["llm"].is_null(), "a scripted moment has no model call");
}

#[test]
fn the_timeline_filters_pages_and_windows_its_lanes() {
    let up = simulated_llm_court();
    let (_, every) = up.get("/api/v1/timeline");
    // (query, the lanes expected)
    for (query, expected) in [
        ("being=CLE", vec!["clerk"]),
        ("being=a", vec!["ada", "operator", "reality", "role-manager"]),
        ("space=/hall", vec!["ben"]),
        ("being=nobody-at-all", vec![]),
    ] {
        let (status, found) = up.get(&format!("/api/v1/timeline?{query}"));
        assert_eq!(status, 200, "{query}: {found}");
        let expected: Vec<&str> = expected.into_iter().filter(|name| names(&every).contains(name)).collect();
        assert_eq!(names(&found), expected, "{query}");
    }
    // The role filter takes the role worn at the last act.
    let role = lane(&every, "clerk")["marks"].as_array().unwrap().iter().rev().find_map(|m| m["primary"].as_str());
    let (_, worn) = up.get(&format!("/api/v1/timeline?role={}", role.expect("the clerk acted")));
    assert_eq!(names(&worn), ["clerk"], "{role:?}");
    // A window holds exactly the facts inside it.
    let cursor = up.cursor();
    let (from, to) = (cursor / 3, 2 * cursor / 3);
    let (_, window) = up.get(&format!("/api/v1/timeline?from={from}&to={to}"));
    let mut inside = 0;
    for lane in window["lanes"].as_array().unwrap() {
        for mark in lane["marks"].as_array().unwrap() {
            let land_seq = mark["landSeq"].as_u64().unwrap();
            assert!((from..to).contains(&land_seq), "{land_seq} outside {from}..{to}");
            inside += 1;
        }
    }
    assert_eq!(inside, to - from, "every fact in the window, once");
    assert_eq!(window["axis"][0]["landSeq"], from);
    // Wrong requests name what is wrong; nothing is written.
    for (path, status, says) in [
        ("/api/v1/timeline?page=0", 400, "page"),
        ("/api/v1/timeline?page=2", 400, "past the last page"),
        ("/api/v1/timeline?from=9&to=3", 400, "from must be below to"),
        ("/api/v1/timeline?from=x", 400, "not a land seq"),
        ("/api/v1/timeline?zoom=2", 400, "unknown parameter"),
        ("/api/v1/beings/clerk/moments/first", 400, "not a reel seq"),
        ("/api/v1/beings/clerk/moments/0", 404, "genesis fact, not an act"),
        ("/api/v1/beings/clerk/moments/99999", 404, "has no fact #99999"),
        ("/api/v1/beings/nobody/moments/1", 404, "no being @nobody"),
    ] {
        let (found, body) = up.get(path);
        assert_eq!(found, status, "{path}: {body}");
        assert!(body["error"]["message"].as_str().unwrap_or_default().contains(says), "{path}: {body}");
    }
    assert_eq!(up.cursor(), cursor, "reading wrote nothing");
    for path in ["/api/v1/timeline", "/api/v1/beings/clerk/moments/1"] {
        let response = up.http.get(format!("{}{path}", up.url)).send().expect("answered");
        assert_eq!(response.status().as_u16(), 401, "{path} without a login");
    }
}

#[test]
fn the_moments_page_says_why_a_moment_only_looked_and_links_each_act_to_its_moment() {
    let endpoint = FakeEndpoint::start().expect("the fake endpoint");
    let up = simulated_llm_court_with(&endpoint, true);
    // The clerk's next live moments: the model answers in prose only, then
    // calls a tool once, then only talks (so nothing more seals).
    let mut replies = vec![Reply::Prose("All quiet in court.".into()); 3];
    replies.push(Reply::Tool {
        name: "summon".into(),
        arguments: json!({ "target": "@ada", "content": "Case 2 is ready." }).to_string(),
        prose: None,
    });
    replies.extend(vec![Reply::Prose("Still quiet.".into()); 500]);
    endpoint.push(replies);
    let tokens = |up: &Up| up.get("/api/v1/beings/clerk").1["tokens"].clone();
    let before = tokens(&up);
    assert!(before["calls"].as_u64() >= Some(1), "the simulated run's sealed call: {before}");
    let started = std::time::Instant::now();
    let seen = loop {
        let (_, sees) = up.get("/api/v1/moments?being=clerk&outcome=see");
        if let Some(trace) = sees["recent"].as_array().and_then(|recent| recent.first()).cloned() {
            break trace;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the clerk never only looked");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(seen["seeReason"], "the model answered without calling a tool", "{seen}");
    assert_eq!(seen["llm"]["prose"], "All quiet in court.", "{seen}");
    assert!(seen["seq"].is_null(), "a see seals nothing: {seen}");
    // The being page's totals are the whole reel's: its acts' calls and its spend facts.
    let started = std::time::Instant::now();
    while up.get("/api/v1/moments?being=clerk&verb=summon").1["recent"].as_array().is_none_or(Vec::is_empty) {
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "the clerk never summoned live");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let after = tokens(&up);
    assert!(after["calls"].as_u64() > before["calls"].as_u64(), "{before} then {after}");
    assert_eq!(tokens(&up), after, "asking again adds nothing");
    // A person's act links to the moment it sealed.
    let (status, _) = up.post("/api/v1/beings/operator/act", &json!({"verb": "see", "address": "/court"}));
    assert_eq!(status, 200);
    let (_, acts) = up.get("/api/v1/moments?being=operator&outcome=act");
    let seq = acts["recent"][0]["seq"].as_u64().expect("the sealed act's seq");
    assert_eq!(up.get(&format!("/api/v1/beings/operator/moments/{seq}")).1["verb"], "see");
    let (_, page) = up.page("/moments");
    assert!(page.contains("the model answered without calling a tool <q>All quiet in court.</q>"), "{page}");
    assert!(page.contains(&format!("href=\"/beings/operator/moments/{seq}\"")), "{page}");
    let mut up = up;
    up.stop();
    let reel = common::seed(&up.land(), &["reel", "@clerk", "--json"]);
    let reel: Value = serde_json::from_slice(&reel.stdout).expect("the reel as JSON");
    // Rounds went on between the tally read above and the stop (each
    // prose answer seals a spend fact), so the page is read again on the
    // same land reopened with no rounds and no model: it shows exactly the
    // reel's count.
    assert!(reel["llm"]["calls"].as_u64() >= after["calls"].as_u64(), "{reel} after {after}");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm/court.toml");
    up.restart(&["--fixture", fixture.to_str().expect("utf-8"), "--round-ms", "86400000"]);
    assert_eq!(tokens(&up), reel["llm"], "the tally is the whole reel's count");
}
