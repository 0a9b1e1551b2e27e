//! The portal's JSON API against a real `seed up` process: every 400, 401,
//! 403 path names what is wrong, hostile input is refused or escaped, and a
//! refused request writes nothing.

use crate::common;

use common::portal::Up;
use serde_json::{json, Value};
use std::time::Duration;

/// One request and what it must answer: status, error code, field.
struct Case {
    what: &'static str,
    method: &'static str,
    path: &'static str,
    body: String,
    status: u16,
    code: &'static str,
    field: Option<&'static str>,
}

fn case(
    what: &'static str,
    method: &'static str,
    path: &'static str,
    body: Value,
    status: u16,
    code: &'static str,
    field: Option<&'static str>,
) -> Case {
    Case { what, method, path, body: body.to_string(), status, code, field }
}

fn check(up: &Up, cases: &[Case]) {
    for case in cases {
        let before = up.cursor();
        let url = format!("{}{}", up.url, case.path);
        let request = match case.method {
            "GET" => up.http.get(url),
            _ => up.http.post(url).body(case.body.clone()),
        };
        let response = request.bearer_auth(&up.token).send().expect("answered");
        let status = response.status().as_u16();
        let body: Value = response.json().unwrap_or(Value::Null);
        assert_eq!(status, case.status, "{}: {body}", case.what);
        assert_eq!(body["error"]["code"], json!(case.code), "{}: {body}", case.what);
        assert_eq!(body["error"]["field"], json!(case.field), "{}: {body}", case.what);
        assert!(!body["error"]["message"].as_str().unwrap_or_default().is_empty(), "{}: a message", case.what);
        assert_eq!(up.cursor(), before, "{}: a refused request wrote nothing", case.what);
    }
}

#[test]
fn unauthenticated_requests_get_401() {
    let up = Up::start(&[]);
    let bare = |method: &str, path: &str, headers: &[(&str, &str)]| {
        let url = format!("{}{path}", up.url);
        let mut request = if method == "GET" { up.http.get(url) } else { up.http.post(url).body("{}") };
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().expect("answered");
        (response.status().as_u16(), response.json::<Value>().unwrap_or(Value::Null))
    };
    /// (method, path, headers sent)
    type Unauthenticated<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Unauthenticated; 6] = [
        ("GET", "/api/v1/world", &[]),
        ("GET", "/api/v1/beings/ada", &[("authorization", "Bearer seed-op-not-the-token")]),
        ("GET", "/api/v1/moments", &[("cookie", "seed_session=forged")]),
        ("POST", "/api/v1/signals", &[]),
        ("POST", "/api/v1/birth", &[("cookie", "seed_session=0000")]),
        ("GET", "/api/v1/events", &[]),
    ];
    for (method, path, headers) in cases {
        let (status, body) = bare(method, path, headers);
        assert_eq!(status, 401, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], "unauthenticated", "{method} {path}");
    }
    let (status, body) = {
        let response =
            up.http.post(format!("{}/api/v1/login", up.url)).body(r#"{"token":"wrong"}"#).send().expect("answered");
        (response.status().as_u16(), response.json::<Value>().unwrap_or(Value::Null))
    };
    assert_eq!((status, body["error"]["field"].clone()), (401, json!("token")));
    // Pages send a browser to the login page instead.
    let response = up.http.get(format!("{}/world", up.url)).send().expect("answered");
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(response.headers()["location"], "/login");
}

#[test]
fn malformed_input_gets_400_naming_the_field() {
    let up = Up::start(&[]);
    let (status, _) = up
        .post("/api/v1/birth", &json!({"name": "kid", "cognition": "human", "defaultRole": "human-conversationalist"}));
    assert_eq!(status, 201);
    let cases = [
        case("a body that is not JSON", "POST", "/api/v1/signals", json!("not an object"), 400, "bad-request", None),
        case(
            "a signal without a key",
            "POST",
            "/api/v1/signals",
            json!({"value": true}),
            400,
            "bad-field",
            Some("key"),
        ),
        case(
            "a signal key without a namespace",
            "POST",
            "/api/v1/signals",
            json!({"key": "loose", "value": 1}),
            400,
            "bad-field",
            Some("key"),
        ),
        case(
            "a fractional signal value",
            "POST",
            "/api/v1/signals",
            json!({"key": "court.x", "value": 1.5}),
            400,
            "bad-field",
            Some("value"),
        ),
        case(
            "a birth without a name",
            "POST",
            "/api/v1/birth",
            json!({"cognition": "human"}),
            400,
            "bad-field",
            Some("name"),
        ),
        case(
            "a birth with a bad name",
            "POST",
            "/api/v1/birth",
            json!({"name": "Bad Name", "cognition": "human"}),
            400,
            "bad-field",
            Some("name"),
        ),
        case(
            "a birth with an unknown cognition",
            "POST",
            "/api/v1/birth",
            json!({"name": "kid-b", "cognition": "psychic"}),
            400,
            "bad-field",
            Some("cognition"),
        ),
        case(
            "a birth with a broken roleFlow",
            "POST",
            "/api/v1/birth",
            json!({"name": "kid-c", "cognition": "human", "roleFlow": [{"when": {"verb": {"bogus": 1}}, "role": "idle"}]}),
            400,
            "bad-field",
            Some("roleFlow"),
        ),
        case(
            "a taken name",
            "POST",
            "/api/v1/birth",
            json!({"name": "ada", "cognition": "human"}),
            409,
            "conflict",
            Some("name"),
        ),
        case(
            "an unknown verb",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "fly"}),
            400,
            "bad-field",
            Some("verb"),
        ),
        case(
            "a see without an address",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "see"}),
            400,
            "bad-field",
            Some("address"),
        ),
        case(
            "a summon without content",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "summon", "target": "@operator"}),
            400,
            "bad-field",
            Some("content"),
        ),
        case(
            "args that are not an object",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "do", "action": "move", "args": [1]}),
            400,
            "bad-field",
            Some("args"),
        ),
        case(
            "a wake that is not a fact id",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "see", "address": "/", "wake": "xyz"}),
            400,
            "bad-field",
            Some("wake"),
        ),
        case(
            "a wake not in the inbox",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "see", "address": "/", "wake": "00".repeat(32)}),
            400,
            "bad-field",
            Some("wake"),
        ),
        case(
            "a role without a name",
            "POST",
            "/api/v1/roles",
            json!({"definition": {"prompt": "x"}}),
            400,
            "bad-field",
            Some("definition.name"),
        ),
        case(
            "a role with an unknown field",
            "POST",
            "/api/v1/roles",
            json!({"definition": {"name": "r", "canFly": ["x"]}}),
            400,
            "bad-field",
            Some("definition.canFly"),
        ),
        case(
            "a role that is not an object",
            "POST",
            "/api/v1/roles",
            json!({"definition": "r"}),
            400,
            "bad-field",
            Some("definition"),
        ),
        case(
            "a flow that is not a list",
            "POST",
            "/api/v1/beings/kid/flow",
            json!({"flow": {"role": "idle"}}),
            400,
            "bad-field",
            Some("flow"),
        ),
        case(
            "a flow naming an unknown role",
            "POST",
            "/api/v1/beings/kid/flow",
            json!({"flow": [{"role": "no-such-role"}]}),
            400,
            "bad-field",
            Some("flow"),
        ),
        case(
            "a preview without a flow",
            "POST",
            "/api/v1/beings/kid/flow/preview",
            json!({}),
            400,
            "bad-field",
            Some("flow"),
        ),
        case("an unknown being", "GET", "/api/v1/beings/nobody", json!({}), 404, "not-found", None),
        case("an unknown route", "GET", "/api/v1/nothing-here", json!({}), 404, "not-found", None),
    ];
    check(&up, &cases);
}

#[test]
fn acting_for_a_being_one_may_not_drive_gets_403() {
    let up = Up::start(&[]);
    assert_eq!(up.post("/api/v1/birth", &json!({"name": "kid", "cognition": "human"})).0, 201);
    let cases = [
        case(
            "driving a scripted being not inhabited",
            "POST",
            "/api/v1/beings/ada/act",
            json!({"verb": "see", "address": "/court"}),
            403,
            "forbidden",
            None,
        ),
        case(
            "inhabiting a being the operator is not an ancestor of",
            "POST",
            "/api/v1/beings/birther/inhabit",
            json!({}),
            403,
            "forbidden",
            None,
        ),
        case(
            "editing the flow of a being the operator is not an ancestor of",
            "POST",
            "/api/v1/beings/role-manager/flow",
            json!({"flow": []}),
            403,
            "forbidden",
            None,
        ),
        case(
            "a summon outside canSummon",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "summon", "target": "@ada", "content": "hi"}),
            403,
            "forbidden",
            None,
        ),
        case(
            "a do outside canDo",
            "POST",
            "/api/v1/beings/kid/act",
            json!({"verb": "do", "action": "rule", "target": "/court"}),
            403,
            "forbidden",
            None,
        ),
    ];
    check(&up, &cases);
    // The refused inhabit is in the moment trace.
    let (_, moments) = up.get("/api/v1/moments");
    let refused = moments["recent"].as_array().expect("recent moments").iter().any(|trace| {
        trace["name"] == "operator"
            && trace["outcome"].as_str().is_some_and(|o| o.contains("not an ancestor of @birther"))
    });
    assert!(refused, "the refused inhabit is traced: {moments}");
}

#[test]
fn cookie_sessions_need_the_csrf_token_on_every_write() {
    let up = Up::start(&[]);
    let (cookie, csrf) = up.login();
    let post = |csrf_header: Option<&str>| {
        let mut request = up
            .http
            .post(format!("{}/api/v1/signals", up.url))
            .header("cookie", &cookie)
            .body(json!({"key": "court.in-session", "value": true}).to_string());
        if let Some(token) = csrf_header {
            request = request.header("x-csrf-token", token);
        }
        let response = request.send().expect("answered");
        (response.status().as_u16(), response.json::<Value>().unwrap_or(Value::Null))
    };
    let before = up.cursor();
    for forged in [None, Some("forged"), Some(&"0".repeat(64)[..])] {
        let (status, body) = post(forged);
        assert_eq!(
            (status, body["error"]["code"].clone(), body["error"]["field"].clone()),
            (403, json!("csrf"), json!("csrf")),
            "{forged:?}"
        );
    }
    assert_eq!(up.cursor(), before, "forged writes wrote nothing");
    let (status, body) = post(Some(&csrf));
    assert_eq!(status, 200, "{body}");
    // A form without the token is refused the same way.
    let response = up
        .http
        .post(format!("{}/signals", up.url))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("key=court.x&value=1&csrf=forged")
        .send()
        .expect("answered");
    assert_eq!(response.status().as_u16(), 403);
    // Reads need no token; the cookie is HttpOnly and SameSite.
    let response = up
        .http
        .post(format!("{}/api/v1/login", up.url))
        .body(json!({"token": up.token}).to_string())
        .send()
        .expect("answered");
    let set_cookie = response.headers()["set-cookie"].to_str().expect("text").to_string();
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"), "{set_cookie}");
}

/// The request limits are the land's keys, read at each request: a body
/// the default takes is refused once the key is lowered, and the flood is
/// limited at the lowered rate.
#[test]
fn oversized_bodies_and_floods_are_refused() {
    let up = Up::start(&[]);
    let huge = json!({"key": "court.big", "value": "x".repeat(10_000)});
    let (status, body) = up.post("/api/v1/signals", &huge);
    assert_eq!(status, 200, "under the default portal_body_bytes_max: {body}");
    up.set_config("portal_body_bytes_max", 4096);
    up.set_config("portal_requests_per_minute_max", 40);
    let before = up.cursor();
    let (status, body) = up.post("/api/v1/signals", &huge);
    assert_eq!((status, body["error"]["code"].clone()), (413, json!("too-large")), "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("portal_body_bytes_max = 4096 bytes"), "{message}");
    let (status, _) = up.post("/api/v1/roles", &json!({"definition": {"name": "big", "prompt": "p".repeat(20_000)}}));
    assert_eq!(status, 413);
    assert_eq!(up.cursor(), before);
    let mut limited = None;
    for attempt in 0..60 {
        let (status, body) = up.get("/api/v1/world");
        if status == 429 {
            limited = Some((attempt, body));
            break;
        }
    }
    let (attempt, body) = limited.expect("the flood was limited");
    assert!(attempt <= 40, "limited after the budget, at request {attempt}");
    assert_eq!(body["error"]["code"], "rate-limited");
}

#[test]
fn hostile_text_is_escaped_on_every_page() {
    let up = Up::start(&[]);
    let (cookie, _) = up.login();
    assert_eq!(
        up.post(
            "/api/v1/birth",
            &json!({"name": "kid", "cognition": "human", "defaultRole": "human-conversationalist"})
        )
        .0,
        201
    );
    let hostile = "<script>alert('pwned')</script>\"><img src=x onerror=alert(1)>";
    let (status, body) =
        up.post("/api/v1/beings/kid/act", &json!({"verb": "summon", "target": "@operator", "content": hostile}));
    assert_eq!(status, 200, "{body}");
    let (status, body) = up.post("/api/v1/signals", &json!({"key": "court.note", "value": hostile}));
    assert_eq!(status, 200, "{body}");
    let (status, body) = up.post("/api/v1/roles", &json!({"definition": {"name": "sly", "prompt": hostile}}));
    assert_eq!(status, 201, "{body}");
    // A name with markup is refused outright.
    assert_eq!(up.post("/api/v1/birth", &json!({"name": "<script>", "cognition": "human"})).0, 400);
    for page in ["/world", "/beings/operator", "/beings/kid", "/roles", "/moments", "/beings/kid/replay", "/world/live"]
    {
        let response = up.http.get(format!("{}{page}", up.url)).header("cookie", &cookie).send().expect("answered");
        assert_eq!(response.status().as_u16(), 200, "{page}");
        let text = response.text().expect("html");
        assert!(!text.contains("<script>alert"), "{page} shows the script unescaped");
        assert!(!text.contains("<img src=x"), "{page} shows the tag unescaped");
    }
    let response =
        up.http.get(format!("{}/beings/operator", up.url)).header("cookie", &cookie).send().expect("answered");
    assert!(
        response.text().expect("html").contains("&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;"),
        "the inbox shows the text, escaped"
    );
}

#[test]
fn every_change_is_an_act_that_replays() {
    let mut up = Up::start(&["--round-ms", "200", "--release-grace-ms", "300"]);
    let steps = [
        ("/api/v1/birth", json!({"name": "kid", "cognition": "scripted", "defaultRole": "human-conversationalist"})),
        ("/api/v1/beings/kid/inhabit", json!({})),
        ("/api/v1/beings/kid/act", json!({"verb": "summon", "target": "@operator", "content": "hello from inside"})),
        ("/api/v1/beings/kid/release", json!({})),
        (
            "/api/v1/roles",
            json!({"definition": {"name": "greeter", "canSummon": ["@ada"], "prompt": "Greet {{me.name}}."}}),
        ),
        ("/api/v1/beings/kid/flow", json!({"flow": [{"role": "greeter"}]})),
        ("/api/v1/signals", json!({"key": "court.in-session", "value": true})),
    ];
    for (path, body) in &steps {
        let (status, answer) = up.post(path, body);
        assert!(status == 200 || status == 201, "{path}: {answer}");
    }
    let kid = up.wait_for_being("kid", Duration::from_secs(5), |kid| kid["now"]["primary"] == "greeter");
    assert_eq!(kid["inhabitedBy"], Value::Null);
    assert_eq!(kid["now"]["can"]["summon"], json!(["@ada"]), "the authored role applies at the next moment");
    let operator = up.get("/api/v1/beings/operator").1;
    let summaries: Vec<&str> =
        operator["reel"].as_array().expect("reel").iter().filter_map(|fact| fact["summary"].as_str()).collect();
    for expected in ["be birth", "be connect", "be release", "do author-role", "do edit-role-flow", "do publish-signal"]
    {
        assert!(
            summaries.iter().any(|line| line.starts_with(expected)),
            "{expected} on the operator's reel: {summaries:?}"
        );
    }
    // The judge appears once the signal is read.
    up.wait_for_being("ada", Duration::from_secs(10), |ada| ada["reel"][0]["primary"] == "judge");
    let (_, replay) = up.get("/api/v1/beings/kid/replay");
    assert_eq!(replay["clean"], true, "{replay}");
    up.stop();
    let seed = |args: &[&str]| {
        let land = up.land();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
            .arg("--land")
            .arg(&land)
            .args(args)
            .output()
            .expect("seed runs");
        assert!(
            output.status.success(),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    seed(&["verify"]);
    let replayed = seed(&["replay", "--all"]);
    assert!(replayed.contains("every moment matches"), "{replayed}");
}

#[test]
fn a_being_inhabited_when_the_land_stopped_is_released_after_a_restart() {
    let mut up = Up::start(&[]);
    assert_eq!(up.post("/api/v1/birth", &json!({"name": "kid", "cognition": "scripted"})).0, 201);
    assert_eq!(up.post("/api/v1/beings/kid/inhabit", &json!({})).0, 200);
    assert_eq!(up.get("/api/v1/beings/kid").1["inhabitedBy"], "@operator");
    // No tab holds it after the restart: released after the grace period (plus the first-hold wait).
    up.restart(&["--release-grace-ms", "0"]);
    let kid = up.wait_for_being("kid", Duration::from_secs(20), |kid| kid["inhabitedBy"].is_null());
    assert_eq!(kid["effectiveCognition"], "scripted");
    let operator = up.get("/api/v1/beings/operator").1;
    assert!(operator["reel"][0]["summary"].as_str().is_some_and(|line| line.starts_with("be release")), "{operator}");
}

#[test]
fn a_body_over_the_land_fact_limit_is_413_naming_the_field_not_500() {
    // The request limit is raised far past the land's fact body limit
    // (64 KiB), so the land's limit is the one that refuses.
    let up = Up::start(&[]);
    up.set_config("portal_body_bytes_max", 400_000);
    let big = "x".repeat(131_000);
    let cases = [
        case(
            "a signal value",
            "POST",
            "/api/v1/signals",
            json!({"key": "court.big", "value": big}),
            413,
            "too-large",
            Some("value"),
        ),
        case(
            "a signal value through the act route",
            "POST",
            "/api/v1/beings/operator/act",
            json!({"verb": "do", "action": "publish-signal", "args": {"key": "court.big", "value": big}}),
            413,
            "too-large",
            Some("value"),
        ),
        case(
            "a summon's content",
            "POST",
            "/api/v1/beings/operator/act",
            json!({"verb": "summon", "target": "@ada", "content": big}),
            413,
            "too-large",
            Some("content"),
        ),
        case(
            "a role's prompt (its own, smaller limit names it first)",
            "POST",
            "/api/v1/roles",
            json!({"definition": {"name": "big", "prompt": big}}),
            400,
            "bad-field",
            Some("definition.prompt"),
        ),
        // Each field fits, the act's whole body does not: the seal refuses it.
        case(
            "an act whose whole body is over the limit",
            "POST",
            "/api/v1/beings/operator/act",
            json!({"verb": "do", "action": "publish-signal", "args": {"key": "court.big", "value": "y".repeat(65_300)}}),
            413,
            "too-large",
            None,
        ),
    ];
    check(&up, &cases);
    // The land goes on: a small act still seals.
    let (status, body) = up.post("/api/v1/signals", &json!({"key": "court.small", "value": 1}));
    assert!(status < 300, "{body}");
}

#[test]
fn a_signal_key_has_one_rule_on_every_route() {
    let up = Up::start(&[]);
    let long_key = format!("court.{}", "k".repeat(1_000));
    let cases = [
        case(
            "a long key",
            "POST",
            "/api/v1/signals",
            json!({"key": long_key, "value": 1}),
            400,
            "bad-field",
            Some("key"),
        ),
        case(
            "a long key through the act route",
            "POST",
            "/api/v1/beings/operator/act",
            json!({"verb": "do", "action": "publish-signal", "args": {"key": long_key, "value": 1}}),
            400,
            "refused",
            None,
        ),
        case(
            "a key without a namespace through the act route",
            "POST",
            "/api/v1/beings/operator/act",
            json!({"verb": "do", "action": "publish-signal", "args": {"key": "loose", "value": 1}}),
            400,
            "refused",
            None,
        ),
        case(
            "a nested fraction through the act route",
            "POST",
            "/api/v1/beings/operator/act",
            json!({"verb": "do", "action": "publish-signal", "args": {"key": "court.x", "value": {"a": [1.5]}}}),
            400,
            "refused",
            None,
        ),
        case(
            "a nested fraction on the signal route",
            "POST",
            "/api/v1/signals",
            json!({"key": "court.x", "value": {"a": [1.5]}}),
            400,
            "bad-field",
            Some("value"),
        ),
    ];
    check(&up, &cases);
}

#[test]
fn the_operator_cannot_take_away_its_own_means_to_undo_a_change() {
    let up = Up::start(&[]);
    let cases = [
        case(
            "its own roleFlow to a role without edit-role-flow",
            "POST",
            "/api/v1/beings/operator/flow",
            json!({"flow": [{"role": "birther"}]}),
            400,
            "refused",
            None,
        ),
        case(
            "the operator role re-authored without author-role",
            "POST",
            "/api/v1/roles",
            json!({"definition": {"name": "operator", "canDo": ["edit-role-flow"], "canSee": ["/"]}}),
            400,
            "refused",
            None,
        ),
        case(
            "the operator role re-authored without edit-role-flow, through the act route",
            "POST",
            "/api/v1/beings/operator/act",
            json!({"verb": "do", "action": "edit-role-flow",
                   "args": {"being": "@operator", "flow": [{"role": "court-watcher"}]}}),
            400,
            "refused",
            None,
        ),
    ];
    check(&up, &cases);
    let (_, refused) = up.post("/api/v1/beings/operator/flow", &json!({"flow": [{"role": "birther"}]}));
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("nothing could undo it") && message.contains("edit-role-flow"), "{message}");
    // A change that keeps the means goes through: the operator's own role,
    // re-authored with a new prompt and every operation it had.
    let (status, body) = up.post(
        "/api/v1/roles",
        &json!({"definition": {"name": "operator", "canSee": ["/", {"pattern": "@*"}],
                "canDo": ["publish-signal", "author-role", "edit-role-flow"], "canSummon": [{"pattern": "@*"}],
                "canBe": ["birth", "connect", "release", "rotate-key"], "prompt": "Still the operator."}}),
    );
    assert_eq!(status, 201, "{body}");
}

/// The role form's fields for `role` as the portal shows them, sent back
/// unchanged as a browser would (text areas with CRLF).
fn form_of_role(up: &Up, role: &str, csrf: &str) -> Vec<(String, String)> {
    let roles = up.get("/api/v1/roles").1;
    let definition = roles["roles"].as_array().expect("roles").iter().find(|r| r["name"] == role).expect("the role")
        ["definition"]
        .clone();
    let mut form: Vec<(String, String)> = seed::portal::role_form::values_of_definition(&definition)
        .into_iter()
        .map(|(name, value)| {
            let sent = if seed::portal::role_form::is_text_area(&name) { value.replace('\n', "\r\n") } else { value };
            (name, sent)
        })
        .collect();
    form.push(("csrf".into(), csrf.into()));
    form
}

fn role_digest(up: &Up, role: &str) -> (String, String) {
    let roles = up.get("/api/v1/roles").1;
    let role = roles["roles"].as_array().expect("roles").iter().find(|r| r["name"] == role).expect("the role").clone();
    (role["digest"].as_str().expect("digest").to_string(), role["origin"].as_str().expect("origin").to_string())
}

#[test]
fn a_file_role_saved_unchanged_through_the_form_keeps_its_digest() {
    let up = Up::start(&[]);
    let (cookie, csrf) = up.login();
    let post_form = |form: &[(String, String)]| {
        up.http
            .post(format!("{}/roles", up.url))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).expect("a form"))
            .send()
            .expect("answered")
    };
    // The judge has a script, a see-resolver-free canSee with a pattern
    // token; the operator has patterns in two lists.
    for role in ["judge", "operator", "court-watcher"] {
        let (digest, origin) = role_digest(&up, role);
        assert!(!origin.starts_with("authored"), "{role} comes from a file");
        let response = post_form(&form_of_role(&up, role, &csrf));
        assert_eq!(response.status().as_u16(), 303, "{role}: {}", response.text().unwrap_or_default());
        let (after, origin) = role_digest(&up, role);
        assert_eq!(after, digest, "{role} saved unchanged keeps its digest");
        assert_eq!(origin, "authored by @operator");
    }
    // A token typed as JSON is a token; a broken one is an error naming the field.
    let mut form = form_of_role(&up, "court-watcher", &csrf);
    form.iter_mut().find(|(name, _)| name == "name").expect("name").1 = "watcher-two".into();
    form.iter_mut().find(|(name, _)| name == "canSummon").expect("canSummon").1 = r#"{"rel":"parent"}"#.into();
    assert_eq!(post_form(&form).status().as_u16(), 303);
    let roles = up.get("/api/v1/roles").1;
    let saved = roles["roles"].as_array().expect("roles").iter().find(|r| r["name"] == "watcher-two").expect("saved")
        ["definition"]["canSummon"]
        .clone();
    assert_eq!(saved, json!([{"rel": "parent"}]));
    let before = up.cursor();
    form.iter_mut().find(|(name, _)| name == "canSummon").expect("canSummon").1 = "{rel: parent}".into();
    let response = post_form(&form);
    assert_eq!(response.status().as_u16(), 400);
    let page = response.text().expect("a page");
    assert!(page.contains("id=\"error-canSummon\"") && page.contains("is not a token"), "{page}");
    assert_eq!(up.cursor(), before, "the refused form wrote nothing");
}

#[test]
fn get_requests_never_change_the_land() {
    let up = Up::start(&[]);
    let (cookie, csrf) = up.login();
    assert_eq!(up.post("/api/v1/birth", &json!({"name": "kid", "cognition": "scripted"})).0, 201);
    let before = up.cursor();
    let get = |path: &str| {
        let response = up.http.get(format!("{}{path}", up.url)).header("cookie", &cookie).send().expect("answered");
        (response.status().as_u16(), response.text().unwrap_or_default())
    };
    let (status, page) = get("/inhabit/kid");
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("use the Inhabit button"), "{page}");
    let (status, stream) = get("/api/v1/beings/kid/presence");
    assert_eq!(status, 403, "{stream}");
    assert!(stream.contains("\"forbidden\"") && stream.contains("use the Inhabit button"), "{stream}");
    // A being the operator may not inhabit at all says so, with the same status.
    let (status, page) = get("/inhabit/birther");
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("you may not inhabit @birther") && page.contains("ancestors"), "{page}");
    assert_eq!(up.cursor(), before, "no GET sealed anything");
    assert_eq!(up.get("/api/v1/beings/kid").1["inhabitedBy"], Value::Null);
    // The POST with the CSRF token connects, and then the tab is shown.
    let response = up
        .http
        .post(format!("{}/inhabit/kid", up.url))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}"))
        .send()
        .expect("answered");
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(up.get("/api/v1/beings/kid").1["inhabitedBy"], "@operator");
    let (status, page) = get("/inhabit/kid");
    assert_eq!(status, 200, "{page}");
    // Without the token the POST is refused and writes nothing.
    let before = up.cursor();
    let response = up
        .http
        .post(format!("{}/inhabit/kid", up.url))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("csrf=forged")
        .send()
        .expect("answered");
    assert_eq!(response.status().as_u16(), 403);
    assert_eq!(up.cursor(), before);
}

#[test]
fn every_answer_carries_the_security_headers() {
    let up = Up::start(&[]);
    up.set_config("portal_requests_per_minute_max", 30);
    let (cookie, _) = up.login();
    for path in ["/world", "/roles", "/beings/ada", "/login", "/api/v1/world", "/no-such-page"] {
        let response = up.http.get(format!("{}{path}", up.url)).header("cookie", &cookie).send().expect("answered");
        let headers = response.headers();
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let policy = header("content-security-policy");
        assert!(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"), "{path}: {policy}");
        assert!(!policy.contains("unsafe-inline"), "{path}: {policy}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(header("cache-control"), "no-store", "{path}");
        if path == "/world" {
            let page = response.text().expect("a page");
            assert!(!page.contains("<script>") && !page.contains("style=\""), "no inline script or style: {page}");
        }
    }
    for asset in ["/static/portal.js", "/static/portal.css"] {
        let response = up.http.get(format!("{}{asset}", up.url)).send().expect("answered");
        assert_eq!(response.status().as_u16(), 200, "{asset}");
    }
    let mut limited = None;
    for _ in 0..40 {
        let response = up.http.get(format!("{}/api/v1/world", up.url)).bearer_auth(&up.token).send().expect("answered");
        if response.status().as_u16() == 429 {
            limited = Some(response);
            break;
        }
    }
    let limited = limited.expect("the budget ran out");
    let retry = limited.headers().get("retry-after").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert!(retry.parse::<u64>().is_ok_and(|seconds| seconds > 0), "Retry-After: {retry:?}");
}

/// An HTTP client whose connections come from `address` (any address of
/// 127.0.0.0/8 is this machine's): a second client, as the throttle sees it.
fn client_from(address: &str) -> reqwest::blocking::Client {
    crate::common::blocking_http()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(address.parse::<std::net::IpAddr>().expect("an address"))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client")
}

/// `POST /api/v1/login` with `body` from `client`: (status, Retry-After, body).
fn login_from(up: &Up, client: &reqwest::blocking::Client, body: &Value) -> (u16, Option<u64>, Value) {
    let response = client.post(format!("{}/api/v1/login", up.url)).body(body.to_string()).send().expect("answered");
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    (status, retry, response.json::<Value>().unwrap_or(Value::Null))
}

#[test]
fn a_right_token_logs_in_after_a_thousand_wrong_ones_from_its_own_address_and_any_other() {
    use seed::portal::throttle::LOGIN_FAILURES_FREE_PER_CLIENT;
    let up = Up::start(&[]);
    let guesser = client_from("127.0.0.2");
    let mut answers = std::collections::BTreeMap::new();
    for attempt in 1..=1000u32 {
        let (status, retry, body) = login_from(&up, &guesser, &json!({"token": format!("{attempt:064x}")}));
        *answers.entry(status).or_insert(0u32) += 1;
        if status == 429 {
            assert_eq!(body["error"]["code"], "login-throttled", "{body}");
            assert!(retry.is_some_and(|seconds| seconds >= 1), "a 429 says when to come back");
        } else {
            assert_eq!((status, body["error"]["field"].clone()), (401, json!("token")), "attempt {attempt}: {body}");
        }
    }
    // The free failures and the one that starts the first wait are plain
    // 401s; every later guess came inside a wait.
    let plain = LOGIN_FAILURES_FREE_PER_CLIENT + 1;
    assert_eq!(answers, [(401u16, plain), (429, 1000 - plain)].into_iter().collect(), "{answers:?}");
    // The right token, from another address and from the guesser's own.
    let other = client_from("127.0.0.3");
    for (who, client) in [("another address", &other), ("the guessing address", &guesser)] {
        let (status, _, body) = login_from(&up, client, &json!({"token": up.token}));
        assert_eq!(status, 200, "{who}: {body}");
        assert_eq!(body["account"], "operator", "{who}");
        let form = client
            .post(format!("{}/login", up.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={}", up.token))
            .send()
            .expect("answered");
        assert_eq!(form.status().as_u16(), 303, "{who}: the login form");
        let bearer = client.get(format!("{}/api/v1/world", up.url)).bearer_auth(&up.token).send().expect("answered");
        assert_eq!(bearer.status().as_u16(), 200, "{who}: a bearer");
    }
    // Another address's wrong token is a plain 401: the guesser's waits are its own.
    assert_eq!(login_from(&up, &other, &json!({"token": "wrong"})).0, 401);
    // Wrong bearer tokens slow their client the same way; a right one passes.
    let bearer_guesser = client_from("127.0.0.4");
    let statuses: Vec<u16> = (0..LOGIN_FAILURES_FREE_PER_CLIENT + 3)
        .map(|_| {
            let response = bearer_guesser.get(format!("{}/api/v1/world", up.url)).bearer_auth("wrong").send();
            response.expect("answered").status().as_u16()
        })
        .collect();
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    let right = bearer_guesser.get(format!("{}/api/v1/world", up.url)).bearer_auth(&up.token).send();
    assert_eq!(right.expect("answered").status().as_u16(), 200);
}

#[test]
fn wrong_passwords_brake_the_account_but_never_its_token() {
    use seed::portal::throttle::PASSWORD_FAILURES_PER_ACCOUNT_MAX;
    let up = Up::start(&[]);
    let (status, invited) = up.post("/api/v1/accounts", &json!({"account": "ann"}));
    assert_eq!(status, 201, "{invited}");
    let ann_token = invited["token"].as_str().expect("a token").to_string();
    let ann = crate::common::blocking_http().build().expect("an HTTP client");
    let set = ann
        .post(format!("{}/api/v1/password", up.url))
        .bearer_auth(&ann_token)
        .body(json!({"password": "correct horse battery"}).to_string())
        .send()
        .expect("answered");
    assert!(set.status().is_success(), "{:?}", set.text());
    // Wrong passwords spread over many addresses, one each: no client waits,
    // but the account's brake engages.
    for index in 0..PASSWORD_FAILURES_PER_ACCOUNT_MAX {
        let client = client_from(&format!("127.0.1.{}", index + 1));
        let (status, _, body) =
            login_from(&up, &client, &json!({"account": "ann", "password": format!("guess {index:04}")}));
        assert_eq!(status, 401, "guess {index}: {body}");
    }
    let fresh = client_from("127.0.2.1");
    let (status, retry, body) =
        login_from(&up, &fresh, &json!({"account": "ann", "password": "correct horse battery"}));
    assert_eq!((status, body["error"]["code"].clone()), (429, json!("password-throttled")), "{body}");
    assert!(retry.is_some_and(|seconds| seconds >= 1), "{retry:?}");
    // Her token logs her in all the same, from anywhere.
    let (status, _, body) = login_from(&up, &fresh, &json!({"token": ann_token}));
    assert_eq!((status, body["account"].clone()), (200, json!("ann")), "{body}");
    // Made-up accounts are not braked (there is nothing to guess there),
    // and answer as a wrong password does.
    let (status, _, body) = login_from(&up, &fresh, &json!({"account": "nobody", "password": "whatever12345"}));
    assert_eq!((status, body["error"]["code"].clone()), (401, json!("unauthenticated")), "{body}");
}

#[test]
fn a_session_id_chosen_by_an_attacker_stays_invalid_after_a_login() {
    let up = Up::start(&[]);
    let chosen = "ab".repeat(32);
    let planted = format!("seed_session={chosen}");
    let response = up
        .http
        .post(format!("{}/api/v1/login", up.url))
        .header("cookie", &planted)
        .body(json!({"token": up.token}).to_string())
        .send()
        .expect("answered");
    assert_eq!(response.status().as_u16(), 200);
    let issued = response.headers()["set-cookie"].to_str().expect("text").to_string();
    assert!(issued.starts_with("seed_session=") && !issued.contains(&chosen), "a new id is issued: {issued}");
    let with_chosen = up.http.get(format!("{}/api/v1/world", up.url)).header("cookie", &planted).send();
    assert_eq!(with_chosen.expect("answered").status().as_u16(), 401, "the chosen id opens nothing");
    // Two logins never share a session id.
    let (first, _) = up.login();
    let (second, _) = up.login();
    assert_ne!(first, second);
}

/// Sends `request` raw on a new connection and reads until the server
/// closes it (or `most` passes): what came back, and whether it closed.
fn raw_exchange(up: &Up, request: &[u8], most: Duration) -> (String, bool) {
    use std::io::{Read, Write};
    let address = up.url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).expect("connects");
    stream.write_all(request).expect("sent");
    stream.set_read_timeout(Some(most)).expect("a read timeout");
    let mut answer = Vec::new();
    let closed = match stream.read_to_end(&mut answer) {
        Ok(_) => true,
        Err(error) => !matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    };
    (String::from_utf8_lossy(&answer).into_owned(), closed)
}

#[test]
fn a_slow_client_is_cut_off_by_the_header_and_body_timeouts() {
    let up = Up::start(&["--header-read-timeout-ms", "500", "--body-read-timeout-ms", "500"]);
    let (_, closed) = raw_exchange(&up, b"GET /api/v1/world HTTP/1.1\r\nHost: x\r\n", Duration::from_secs(10));
    assert!(closed, "a half-sent request's connection is closed");
    let request = format!(
        "POST /api/v1/signals HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: 100\r\n\r\n{{\"key\"",
        up.token
    );
    let (answer, closed) = raw_exchange(&up, request.as_bytes(), Duration::from_secs(10));
    assert!(closed, "a half-sent body's connection is closed: {answer}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[test]
fn an_interrupt_stops_seed_up_with_event_streams_open() {
    let mut up = Up::start(&["--round-ms", "100"]);
    let streams: Vec<_> = (0..2)
        .map(|_| {
            up.http
                .get(format!("{}/api/v1/events", up.url))
                .bearer_auth(&up.token)
                .timeout(Duration::from_secs(60))
                .send()
                .expect("a stream opens")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let pid = up.child.id() as i32;
    // SAFETY: kill(2) on a child process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = up.child.try_wait().expect("waitable") {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(8), "seed up did not stop within 8 s of ctrl-c");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "a clean stop: {status}");
    drop(streams);
    // The land is whole and opens again.
    let verified = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["--land", up.land().to_str().expect("utf-8"), "verify"])
        .output()
        .expect("verify runs");
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    up.restart(&[]);
    assert_eq!(up.get("/api/v1/world").0, 200);
}

#[test]
fn recover_operator_gives_back_the_roles_a_conditional_flow_took_away() {
    let mut up = Up::start(&[]);
    // Allowed: in this moment the operator still wears `operator`. Once the
    // signal is set it wears `birther`, which can neither edit a flow nor
    // publish a signal: no way back through the portal.
    let trap = json!({"flow": [{"when": {"world.court.locked": true}, "role": "birther"}, {"role": "operator"}]});
    assert_eq!(up.post("/api/v1/beings/operator/flow", &trap).0, 200);
    assert_eq!(up.post("/api/v1/signals", &json!({"key": "court.locked", "value": true})).0, 200);
    let (status, body) = up.post("/api/v1/beings/operator/flow", &json!({"flow": [{"role": "operator"}]}));
    assert_eq!(status, 403, "{body}");
    up.stop();
    let seed = |arguments: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_seed"));
        command.arg("--land").arg(up.land()).args(arguments);
        let output = command.output().expect("seed runs");
        (output.status.success(), String::from_utf8_lossy(&output.stdout).into_owned())
    };
    // The roles come back as the land recorded them: the file naming the
    // fixture on the disk is not needed (set aside, then put back).
    let named = up.land().join("definitions.toml");
    let aside = up.land().join("definitions.toml.aside");
    std::fs::rename(&named, &aside).expect("set aside");
    let (recovered, said) = seed(&["recover-operator"]);
    assert!(recovered && said.contains("wears its planted roleFlow again"), "{said}");
    std::fs::rename(&aside, &named).expect("put back");
    let (verified, said) = seed(&["verify"]);
    assert!(verified, "{said}");
    let (replayed, said) = seed(&["replay", "--all"]);
    assert!(replayed, "{said}");
    up.restart(&[]);
    let operator = up.get("/api/v1/beings/operator").1;
    assert_eq!(operator["now"]["primary"], "operator", "{operator}");
    assert_eq!(up.post("/api/v1/signals", &json!({"key": "court.locked", "value": false})).0, 200);
}

#[test]
fn the_log_names_every_request_and_refusal_and_no_secret() {
    let up = Up::start(&[]);
    let (cookie, csrf) = up.login();
    let session = cookie.split_once('=').expect("name=value").1.to_string();
    // A form login too, a cookie write with its CSRF token, a bearer read, a
    // refused act and a wrong token.
    let form_login = up
        .http
        .post(format!("{}/login", up.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}", up.token))
        .send()
        .expect("answered");
    assert_eq!(form_login.status().as_u16(), 303);
    let write = up
        .http
        .post(format!("{}/api/v1/signals?note=query-strings-are-not-logged", up.url))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .body(json!({"key": "court.in-session", "value": true}).to_string())
        .send()
        .expect("answered");
    assert_eq!(write.status().as_u16(), 200);
    assert_eq!(up.get("/api/v1/beings/ada").0, 200);
    let (status, _) =
        up.post("/api/v1/beings/operator/act", &json!({"verb": "summon", "target": "@nobody", "content": "x"}));
    assert_eq!(status, 403);
    let wrong = format!("{}0", up.token);
    let response = up.http.get(format!("{}/api/v1/world", up.url)).bearer_auth(&wrong).send().expect("answered");
    assert_eq!(response.status().as_u16(), 401);
    std::thread::sleep(Duration::from_millis(300));
    let log = up.log();
    for (what, secret) in [
        ("the token", up.token.as_str()),
        ("a wrong token", &wrong),
        ("the session id", &session),
        ("the CSRF token", &csrf),
    ] {
        assert!(!log.contains(secret), "{what} reached the log:\n{log}");
    }
    assert!(!log.contains("query-strings-are-not-logged"), "{log}");
    for expected in [
        "route=/api/v1/login",
        "route=/api/v1/signals",
        "route=/api/v1/beings/{name}",
        "status=401",
        "status=403",
        "summon @nobody is not within canSummon",
        "latency_us=",
    ] {
        assert!(log.contains(expected), "the log names {expected:?}:\n{log}");
    }
    let refused = log.lines().find(|line| line.contains("refused") && line.contains("@nobody")).expect("a refusal");
    assert!(refused.contains("INFO") && refused.contains("being=operator"), "{refused}");
}

#[test]
fn json_logs_are_one_object_a_line_with_the_request_and_moment_spans() {
    let up = Up::start(&["--log-format", "json", "--round-ms", "100"]);
    assert_eq!(up.get("/api/v1/world").0, 200);
    // The tests run `seed up` with RUST_LOG=debug: moments are logged too.
    let started = std::time::Instant::now();
    while !up.log().contains(r#""name":"moment""#) {
        assert!(started.elapsed() < Duration::from_secs(10), "no moment was logged: {}", up.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = up.log();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line:?}")))
        .collect();
    let request = lines
        .iter()
        .find(|line| line["span"]["route"] == "/api/v1/world")
        .unwrap_or_else(|| panic!("a request line: {log}"));
    assert_eq!(request["fields"]["status"], 200, "{request}");
    assert_eq!(request["level"], "INFO");
    let moment = lines.iter().find(|line| line["span"]["name"] == "moment").expect("a moment line");
    for field in ["being", "wake", "cursor"] {
        assert!(!moment["span"][field].is_null(), "the moment's span names its {field}: {moment}");
    }
    assert!(moment["fields"]["duration_us"].is_u64() && moment["fields"]["outcome"].is_string(), "{moment}");
}

#[test]
fn rust_log_filters_the_log() {
    // Warnings only: no request, no moment.
    let up = Up::start_with_env(&[], &[("RUST_LOG", "warn")]);
    assert_eq!(up.get("/api/v1/world").0, 200);
    std::thread::sleep(Duration::from_millis(300));
    let log = up.log();
    assert!(!log.contains("answered") && !log.contains("moment"), "{log}");
}

/// The token `seed token --json` printed, after checking it exited cleanly.
fn issued_token(output: &std::process::Output) -> String {
    assert_eq!(output.status.code(), Some(0), "seed token: {}", common::stderr(output));
    let printed: Value = serde_json::from_str(common::stdout(output).trim()).expect("seed token --json prints JSON");
    let token = printed["token"].as_str().expect("a token").to_string();
    assert!(token.starts_with("seed-op-") && token.len() > 40, "a fresh token: {token}");
    token
}

/// The status of `GET /api/v1/world` with `token` as the bearer.
fn world_status_with(up: &Up, token: &str) -> u16 {
    up.http.get(format!("{}/api/v1/world", up.url)).bearer_auth(token).send().expect("answered").status().as_u16()
}

#[test]
fn seed_token_replaces_a_lost_operator_token_and_the_old_one_stops_working() {
    let mut up = Up::start(&[]);
    let lost = up.token.clone();
    // While `seed up` holds the land, `seed token` is refused with the reason.
    let refused = common::seed(&up.land(), &["token"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(common::stderr(&refused).contains("locked"), "{}", common::stderr(&refused));
    up.stop();
    let fresh = issued_token(&common::seed(&up.land(), &["token", "--json"]));
    assert_ne!(fresh, lost);
    up.token = fresh.clone();
    up.restart(&[]);
    assert_eq!(world_status_with(&up, &fresh), 200);
    assert_eq!(world_status_with(&up, &lost), 401, "the replaced token no longer opens the land");
    up.stop();
    // The grant is a fact on the operator's reel, and the land verifies.
    let verified = common::seed(&up.land(), &["verify"]);
    assert_eq!(verified.status.code(), Some(0), "{}", common::stderr(&verified));
    let reel = common::stdout(&common::seed(&up.land(), &["reel", "@operator"]));
    assert_eq!(reel.matches("operator-token").count(), 2, "{reel}");
}

#[test]
fn a_simulated_land_opens_in_the_portal_with_a_token_from_seed_token() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let land = dir.path().join("land");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/court.toml");
    let simulated = common::seed(&land, &["sim", fixture.to_str().expect("utf-8 path"), "--ticks", "3"]);
    assert_eq!(simulated.status.code(), Some(0), "{}", common::stderr(&simulated));
    let token = issued_token(&common::seed(&land, &["token", "--json"]));
    let up = Up::open(dir, token.clone());
    assert_eq!(world_status_with(&up, &token), 200);
    let (status, world) = up.get("/api/v1/world");
    assert_eq!(status, 200);
    assert!(world.to_string().contains("ada"), "the simulated beings are there: {world}");
}

#[test]
fn seed_token_on_a_folder_that_is_not_a_land_says_so_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let missing = dir.path().join("nothing-here");
    let output = common::seed(&missing, &["token"]);
    assert_eq!(output.status.code(), Some(1));
    let error = common::stderr(&output);
    assert!(error.starts_with("error: ") && error.lines().count() == 1, "{error}");
    assert!(!missing.exists(), "nothing was created");
}

/// A court simulated for its fixture's ticks (the judge's rulings are
/// matter in /court), opened in the portal with a token from `seed token`.
fn simulated_court() -> Up {
    simulated_court_for(&[])
}

/// `simulated_court` with more arguments for `seed sim` (`--ticks N`).
fn simulated_court_for(extra: &[&str]) -> Up {
    let dir = tempfile::tempdir().expect("temporary folder");
    let land = dir.path().join("land");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/court.toml");
    let mut arguments = vec!["sim", fixture.to_str().expect("utf-8 path"), "--json"];
    arguments.extend_from_slice(extra);
    let simulated = common::seed(&land, &arguments);
    assert_eq!(simulated.status.code(), Some(0), "{}", common::stderr(&simulated));
    let token = issued_token(&common::seed(&land, &["token", "--json"]));
    Up::open(dir, token)
}

#[test]
fn the_world_api_and_page_show_matter_with_who_made_it_and_when_paged() {
    let up = simulated_court();

    let (status, world) = up.get("/api/v1/world");
    assert_eq!(status, 200);
    let matter = &world["matter"];
    let total = matter["total"].as_u64().expect("a total");
    assert!(total >= 2, "the court made rulings: {matter}");
    let first = &matter["items"][0];
    assert_eq!(first["address"], "/court#ruling-1", "{first}");
    assert_eq!(
        (&first["space"], &first["kind"], &first["creator"]),
        (&json!("/court"), &json!("ruling"), &json!("ada"))
    );
    assert_eq!(first["fields"]["verdict"], "upheld, ruling 1");
    assert!(first["madeAtSeq"].as_u64().expect("a land seq") < world["cursor"].as_u64().expect("a cursor"));
    let court =
        world["spaces"].as_array().expect("spaces").iter().find(|space| space["path"] == "/court").expect("/court");
    assert_eq!(court["matterCount"].as_u64(), Some(total), "every ruling is in the court");

    // Paged: one at a time, in address order, each page naming the next.
    let (mut after, mut seen) = (None::<String>, Vec::new());
    loop {
        let path = match &after {
            Some(address) => format!("/api/v1/world?matterLimit=1&matterAfter={}", address.replace('#', "%23")),
            None => "/api/v1/world?matterLimit=1".to_string(),
        };
        let (status, page) = up.get(&path);
        assert_eq!(status, 200, "{page}");
        let items = page["matter"]["items"].as_array().expect("items");
        assert_eq!(items.len(), 1, "{page}");
        seen.push(items[0]["address"].as_str().expect("address").to_string());
        match page["matter"]["next"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len() as u64, total);
    assert!(seen.windows(2).all(|pair| pair[0] < pair[1]), "{seen:?}");

    check(
        &up,
        &[
            case(
                "a zero page",
                "GET",
                "/api/v1/world?matterLimit=0",
                Value::Null,
                400,
                "bad-request",
                Some("matterLimit"),
            ),
            case(
                "a huge page",
                "GET",
                "/api/v1/world?matterLimit=5000",
                Value::Null,
                400,
                "bad-request",
                Some("matterLimit"),
            ),
            case(
                "a word for a limit",
                "GET",
                "/api/v1/world?matterLimit=all",
                Value::Null,
                400,
                "bad-request",
                Some("matterLimit"),
            ),
            case(
                "a misspelt parameter",
                "GET",
                "/api/v1/world?matterLimt=5",
                Value::Null,
                400,
                "bad-request",
                Some("matterLimt"),
            ),
        ],
    );

    // The world page lists the rulings under the court, escaped.
    let (cookie, _) = up.login();
    let page = up
        .http
        .get(format!("{}/world", up.url))
        .header("cookie", cookie)
        .send()
        .expect("answered")
        .text()
        .expect("a page");
    assert!(page.contains("id=\"matter-/court#ruling-1\""), "{page}");
    assert!(page.contains("by <a href=\"/beings/ada\">@ada</a>"), "{page}");
}

#[test]
fn the_world_page_shows_the_first_beings_of_each_space_and_the_space_page_pages_through_all() {
    let town = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/town.toml");
    let up = Up::start(&["--fixture", town.to_str().expect("utf-8")]);
    let (status, world) = up.get("/api/v1/world");
    assert_eq!(status, 200);
    let mut counted = 0;
    for space in world["spaces"].as_array().expect("spaces") {
        let shown: Vec<&str> =
            space["beings"].as_array().expect("beings").iter().map(|b| b["name"].as_str().unwrap()).collect();
        let count = space["beingCount"].as_u64().expect("a count") as usize;
        assert_eq!(shown.len(), count.min(50), "{}", space["path"]);
        assert!(shown.windows(2).all(|pair| pair[0] < pair[1]), "by name: {shown:?}");
        counted += count;
    }
    assert_eq!(counted as u64, world["beings"].as_u64().unwrap(), "every being counted in its space once");
    let (_, page) = up.page("/world");
    assert!(page.contains("more beings: <a href=\"/spaces?path=%2Fnorth\">the space's page</a>"), "a link to the rest");
    // The space page lists all of them, 200 at a time.
    let (_, first) = up.get("/api/v1/spaces?path=/north");
    let mut names: Vec<String> = Vec::new();
    let mut next = Some(String::new());
    while let Some(after) = next {
        let path = if after.is_empty() {
            "/api/v1/spaces?path=/north".to_string()
        } else {
            format!("/api/v1/spaces?path=/north&beingsAfter={after}")
        };
        let (status, space) = up.get(&path);
        assert_eq!(status, 200, "{space}");
        let beings = space["beings"].as_array().expect("beings");
        assert!(beings.len() <= 200);
        names.extend(beings.iter().map(|b| b["name"].as_str().unwrap().to_string()));
        next = space["beingsNext"].as_str().map(str::to_string);
    }
    assert_eq!(names.len() as u64, first["beingCount"].as_u64().unwrap(), "each once");
    assert!(names.windows(2).all(|pair| pair[0] < pair[1]));
    let (_, page) = up.page("/spaces?path=/north");
    assert!(page.contains("id=\"here-next\""), "a link to the next beings");
    assert_eq!(up.get("/api/v1/spaces?path=/north&after=x").0, 400, "an unknown parameter is named");
}

#[test]
fn a_conversation_shows_each_summon_with_its_answer_in_place_on_both_sides() {
    let up = Up::start(&[]);
    let steps = [
        ("/api/v1/birth", json!({"name": "kid", "cognition": "scripted", "defaultRole": "human-conversationalist"})),
        ("/api/v1/beings/kid/inhabit", json!({})),
        ("/api/v1/beings/kid/act", json!({"verb": "summon", "target": "@operator", "content": "hello from inside"})),
    ];
    for (path, body) in &steps {
        let (status, answer) = up.post(path, body);
        assert!(status == 200 || status == 201, "{path}: {answer}");
    }
    let (status, kid_talk) = up.get("/api/v1/beings/kid/conversation");
    assert_eq!(status, 200, "{kid_talk}");
    let asked = &kid_talk["messages"][0];
    assert_eq!(
        (&asked["from"], &asked["to"], &asked["direction"]),
        (&json!("@kid"), &json!("@operator"), &json!("out"))
    );
    assert_eq!(
        (&asked["content"], &asked["reply"], &asked["pending"]),
        (&json!("hello from inside"), &Value::Null, &json!(true))
    );

    // The operator answers it, woken by the summon: one act, in place.
    let summon = asked["summon"].as_str().expect("the summon's id").to_string();
    let (status, answer) = up.post(
        "/api/v1/beings/operator/act",
        &json!({"verb": "summon", "target": "@kid", "content": "hello back", "wake": summon}),
    );
    assert_eq!(status, 200, "{answer}");
    let kid_talk = up.get("/api/v1/beings/kid/conversation").1;
    let messages = kid_talk["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2, "{kid_talk}");
    let reply = &messages[0]["reply"];
    assert_eq!(
        (&reply["by"], &reply["verb"], &reply["content"]),
        (&json!("@operator"), &json!("summon"), &json!("hello back"))
    );
    assert_eq!(messages[0]["pending"], false);
    assert_eq!(
        (&messages[1]["from"], &messages[1]["direction"], &messages[1]["pending"]),
        (&json!("@operator"), &json!("in"), &json!(true))
    );
    // The operator sees the same exchange from its side.
    let operator_talk = up.get("/api/v1/beings/operator/conversation").1;
    let directions: Vec<&Value> =
        operator_talk["messages"].as_array().expect("messages").iter().map(|m| &m["direction"]).collect();
    assert_eq!(directions, [&json!("in"), &json!("out")], "{operator_talk}");

    // The inhabit tab shows the conversation first, with a one-field answer
    // to what waits; sending it seals the kid's answer in place.
    let (cookie, csrf) = up.login();
    let tab = up.http.get(format!("{}/inhabit/kid", up.url)).header("cookie", &cookie).send().expect("answered");
    let tab = tab.text().expect("a page");
    let waiting = messages[1]["summon"].as_str().expect("id");
    let (conversation_at, act_at) =
        (tab.find("id=\"conversation\"").expect("a conversation"), tab.find("<h2>Act</h2>").expect("act forms"));
    assert!(conversation_at < act_at, "the conversation comes first");
    assert!(tab.contains(&format!("id=\"answer-{waiting}\"")), "{tab}");
    let form = [
        ("csrf", csrf.as_str()),
        ("verb", "summon"),
        ("wake", waiting),
        ("target", "@operator"),
        ("content", "thanks"),
    ];
    let sent = up
        .http
        .post(format!("{}/inhabit/kid/act", up.url))
        .header("cookie", &cookie)
        .form(&form)
        .send()
        .expect("answered");
    assert_eq!(sent.status().as_u16(), 303, "{:?}", sent.text());
    let fragment = up
        .http
        .get(format!("{}/beings/kid/conversation?answer=inhabit", up.url))
        .header("cookie", &cookie)
        .send()
        .expect("answered")
        .text()
        .expect("a fragment");
    assert!(fragment.contains(&format!("id=\"reply-{waiting}\"")) && fragment.contains("thanks"), "{fragment}");

    check(
        &up,
        &[case("no such being", "GET", "/api/v1/beings/nobody/conversation", Value::Null, 404, "not-found", None)],
    );
    let anonymous = up.http.get(format!("{}/api/v1/beings/kid/conversation", up.url)).send().expect("answered");
    assert_eq!(anonymous.status().as_u16(), 401);
}

#[test]
fn the_moments_page_filters_by_being_verb_outcome_and_role_and_names_each_failure() {
    let up = Up::start(&["--round-ms", "200"]);
    // A refused act is a failure in the trace, with its reason.
    let (status, _) =
        up.post("/api/v1/beings/operator/act", &json!({"verb": "summon", "target": "@nobody-here", "content": "hi"}));
    assert!(status >= 400, "the summon is refused");
    assert_eq!(up.post("/api/v1/beings/operator/act", &json!({"verb": "see", "address": "/"})).0, 200);
    let failures = up.get("/api/v1/moments?being=operator&outcome=failure").1;
    let failed = failures["recent"].as_array().expect("recent");
    assert_eq!(failed.len(), 1, "{failures}");
    assert!(failed[0]["outcome"].as_str().expect("an outcome").starts_with("failure in "), "{failures}");
    assert!(failed[0]["time"].as_str().is_some_and(|time| time.ends_with('Z')), "a readable time: {failures}");
    let sees = up.get("/api/v1/moments?being=@operator&verb=see").1;
    assert_eq!(sees["recent"].as_array().expect("recent").len(), 1, "{sees}");
    assert_eq!(
        up.get("/api/v1/moments?being=operator&verb=summon").1["recent"],
        json!([]),
        "the refused summon sealed no act"
    );
    // Scripted beings' moments pass a filter by their being and role.
    let started = std::time::Instant::now();
    loop {
        let ada = up.get("/api/v1/moments?being=ada").1;
        let recent = ada["recent"].as_array().expect("recent").clone();
        if let Some(role) = recent.first().and_then(|trace| trace["primary"].as_str()) {
            assert!(recent.iter().all(|trace| trace["name"] == "ada"), "{ada}");
            let by_role = up.get(&format!("/api/v1/moments?being=ada&role={role}")).1;
            assert!(by_role["recent"].as_array().expect("recent").iter().all(|trace| trace["primary"] == role));
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "ada never woke");
        std::thread::sleep(Duration::from_millis(100));
    }
    check(
        &up,
        &[
            case("an unknown verb", "GET", "/api/v1/moments?verb=shout", Value::Null, 400, "bad-request", Some("verb")),
            case(
                "an unknown outcome",
                "GET",
                "/api/v1/moments?outcome=maybe",
                Value::Null,
                400,
                "bad-request",
                Some("outcome"),
            ),
            case(
                "an unknown parameter",
                "GET",
                "/api/v1/moments?colour=red",
                Value::Null,
                400,
                "bad-request",
                Some("colour"),
            ),
        ],
    );
    // The page keeps the filter, links each being, marks failures, and its
    // live part is fetched with the same filter.
    let (cookie, _) = up.login();
    let get = |path: &str| {
        up.http
            .get(format!("{}{path}", up.url))
            .header("cookie", &cookie)
            .send()
            .expect("answered")
            .text()
            .expect("text")
    };
    let page = get("/moments?being=operator&outcome=failure");
    assert!(page.contains("id=\"filter-being\" value=\"operator\""), "{page}");
    assert!(page.contains("data-live-moments=\"/moments/live?being=operator&amp;outcome=failure\""), "{page}");
    assert!(
        page.contains("<a href=\"/beings/operator\">@operator</a>") && page.contains("class=\"error\">failure in "),
        "{page}"
    );
    let unfiltered = get("/moments");
    assert!(unfiltered.contains("id=\"filter-being\" value=\"\""), "an unset filter is an empty field: {unfiltered}");
    let live = get("/moments/live?being=operator&outcome=failure");
    assert!(live.contains("failure in ") && !live.contains("<html"), "{live}");
}

#[test]
fn search_finds_beings_roles_spaces_and_matter_and_each_place_has_its_page() {
    let up = simulated_court();
    let found = up.get("/api/v1/search?q=%40AD").1;
    assert!(found["beings"].as_array().expect("beings").iter().any(|being| being["name"] == "ada"), "{found}");
    let found = up.get("/api/v1/search?q=court").1;
    assert!(found["spaces"].as_array().expect("spaces").contains(&json!("/court")), "{found}");
    assert!(found["roles"].as_array().expect("roles").contains(&json!("court-watcher")), "{found}");
    let rulings = up.get("/api/v1/search?q=ruling").1;
    assert!(
        rulings["matter"].as_array().expect("matter").iter().any(|m| m["address"] == "/court#ruling-1"),
        "{rulings}"
    );

    let (status, court) = up.get("/api/v1/spaces?path=/court");
    assert_eq!(status, 200, "{court}");
    assert_eq!((&court["kind"], &court["parent"]), (&json!("court"), &json!("/")));
    assert!(court["beings"].as_array().expect("beings").iter().any(|being| being["name"] == "ada"), "{court}");
    let total = up.get("/api/v1/world").1["matter"]["total"].clone();
    assert_eq!(court["matterCount"], total, "every ruling is in the court");
    let root = up.get("/api/v1/spaces?path=/").1;
    assert!(root["below"].as_array().expect("below").contains(&json!("/court")), "{root}");
    let (status, ruling) = up.get("/api/v1/matter?address=/court%23ruling-1");
    assert_eq!(status, 200, "{ruling}");
    assert_eq!(
        (&ruling["kind"], &ruling["creator"], &ruling["space"]),
        (&json!("ruling"), &json!("ada"), &json!("/court"))
    );
    assert_eq!(ruling["fields"]["verdict"], "upheld, ruling 1");

    let long = format!("/api/v1/search?q={}", "a".repeat(101));
    check(
        &up,
        &[
            case("a search without text", "GET", "/api/v1/search", Value::Null, 400, "bad-request", Some("q")),
            case("an empty search", "GET", "/api/v1/search?q=+", Value::Null, 400, "bad-request", Some("q")),
            case("a search twice", "GET", "/api/v1/search?q=a&q=b", Value::Null, 400, "bad-request", Some("q")),
            case(
                "a misspelt parameter",
                "GET",
                "/api/v1/spaces?pth=/court",
                Value::Null,
                400,
                "bad-request",
                Some("pth"),
            ),
            case("no such space", "GET", "/api/v1/spaces?path=/nowhere", Value::Null, 404, "not-found", None),
            case("no such matter", "GET", "/api/v1/matter?address=/court%23nope", Value::Null, 404, "not-found", None),
        ],
    );
    let (status, answer) = up.get(&long);
    assert_eq!((status, &answer["error"]["field"]), (400, &json!("q")), "{answer}");

    let (cookie, _) = up.login();
    let get = |path: &str| {
        let response = up.http.get(format!("{}{path}", up.url)).header("cookie", &cookie).send().expect("answered");
        (response.status().as_u16(), response.text().expect("text"))
    };
    let (_, world) = get("/world");
    assert!(
        world.contains("href=\"/spaces?path=%2Fcourt\"")
            && world.contains("href=\"/matter?address=%2Fcourt%23ruling-1\""),
        "{world}"
    );
    assert!(world.contains("id=\"search\""), "the search box is in the navigation");
    let (_, search) = get("/search?q=ada");
    assert!(search.contains("<a href=\"/beings/ada\">@ada</a>"), "{search}");
    let (_, space) = get("/spaces?path=%2Fcourt");
    assert!(
        space.contains("href=\"/matter?address=%2Fcourt%23ruling-1\"") && space.contains("id=\"parent-space\""),
        "{space}"
    );
    let (_, matter) = get("/matter?address=%2Fcourt%23ruling-1");
    assert!(matter.contains("upheld, ruling 1") && matter.contains("<a href=\"/beings/ada\">@ada</a>"), "{matter}");
    let (status, missing) = get("/spaces?path=%2Fnowhere");
    assert_eq!(status, 404, "{missing}");
    assert!(missing.contains("there is no space"), "a page names what is missing: {missing}");
}

#[test]
fn a_release_scheduled_before_a_reload_spares_the_tab_that_reloaded() {
    // Rounds every 100 ms keep the presence streams writing (world events),
    // so a closed tab is noticed at once; the grace is 3 s.
    let up = Up::start(&["--round-ms", "100", "--release-grace-ms", "3000"]);
    assert_eq!(up.post("/api/v1/birth", &json!({"name": "kid", "cognition": "scripted"})).0, 201);
    assert_eq!(up.post("/api/v1/beings/kid/inhabit", &json!({})).0, 200);
    let hold = || {
        let response = up.http.get(format!("{}/api/v1/beings/kid/presence", up.url)).bearer_auth(&up.token).send();
        let response = response.expect("a presence stream");
        assert_eq!(response.status().as_u16(), 200);
        response
    };
    let pause = |ms| std::thread::sleep(Duration::from_millis(ms));
    // A tab lets go at 0 s (its release is due at 3 s), reloads and lets go
    // again at 1.5 s (due at 4.5 s), and holds the being again at 3.75 s: when
    // the first release is due no tab holds the being, but one has held it
    // since, so the being stays; the second release finds it held.
    drop(hold());
    pause(1_500);
    drop(hold());
    pause(2_250);
    let back = hold();
    pause(1_500);
    assert_eq!(up.get("/api/v1/beings/kid").1["inhabitedBy"], "@operator", "the reloaded tab still drives it");
    // Once every tab is gone, the grace period ends the inhabiting.
    drop(back);
    let released = up.wait_for_being("kid", Duration::from_secs(10), |kid| kid["inhabitedBy"].is_null());
    assert_eq!(released["effectiveCognition"], "scripted");
}

#[test]
fn the_replay_view_pages_its_moments_newest_first() {
    let up = simulated_court_for(&["--ticks", "240"]);
    let (status, replay) = up.get("/api/v1/beings/ada/replay");
    assert_eq!(status, 200, "{replay}");
    let count = replay["moments"].as_array().expect("moments").len();
    assert!(count > 100, "enough moments for three pages: {count}");
    let newest = replay["moments"][count - 1]["seq"].clone();
    let oldest = replay["moments"][0]["seq"].clone();
    let (cookie, _) = up.login();
    let get = |path: &str| {
        let response = up.http.get(format!("{}{path}", up.url)).header("cookie", &cookie).send().expect("answered");
        (response.status().as_u16(), response.text().expect("text"))
    };
    let (status, first) = get("/beings/ada/replay");
    assert_eq!(status, 200);
    let pages = count.div_ceil(50);
    assert_eq!(first.matches("<details").count(), 50, "one page of moments");
    assert!(first.contains(&format!("page 1 of {pages}, newest first")), "{first}");
    assert!(first.contains(&format!("id=\"m{newest}\"")) && !first.contains(&format!("id=\"m{oldest}\"")));
    assert!(first.contains("href=\"/beings/ada/replay?page=2\" id=\"older\"") && !first.contains("id=\"newer\""));
    assert!(first.contains(&format!("href=\"?page={pages}#m{oldest}\"")), "every mark links to its page");
    let (status, last) = get(&format!("/beings/ada/replay?page={pages}"));
    assert_eq!(status, 200);
    assert!(
        last.contains(&format!("id=\"m{oldest}\"")) && last.contains("id=\"newer\"") && !last.contains("id=\"older\"")
    );
    for bad in ["0", &(pages + 1).to_string(), "two"] {
        let (status, page) = get(&format!("/beings/ada/replay?page={bad}"));
        assert_eq!(status, 400, "page {bad}: {page}");
        assert!(page.contains("is not a page of this replay"), "{page}");
    }
}

/// `seed --land LAND up` (no `--fixture`) run from `folder`, as an installed
/// `seed` would be: its process and the JSON line it printed on starting.
fn up_from_folder(land: &std::path::Path, folder: &std::path::Path) -> (std::process::Child, Value) {
    use std::io::BufRead;
    let lifetime = common::portal::TEST_PORTAL_LIFETIME_S.to_string();
    let land = land.to_str().expect("utf-8 path");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["--land", land, "up", "--addr", "127.0.0.1:0", "--lifetime-s", &lifetime, "--json"])
        .current_dir(folder)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("seed up starts");
    let stdout = child.stdout.take().expect("piped");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().expect("a start line").expect("readable");
    std::thread::spawn(move || for _ in lines {});
    (child, serde_json::from_str(&first).unwrap_or_else(|_| panic!("a JSON start line: {first}")))
}

#[test]
fn seed_up_plants_the_built_in_demo_world_from_any_folder() {
    let land_parent = tempfile::tempdir().expect("folder");
    let land = land_parent.path().join("demo-land");
    let (elsewhere, another) = (tempfile::tempdir().expect("folder"), tempfile::tempdir().expect("folder"));
    let (mut child, started) = up_from_folder(&land, elsewhere.path());
    assert_eq!(started["world"], "court", "{started}");
    let token = started["operatorToken"].as_str().expect("a new land's token").to_string();
    let http = crate::common::blocking_http().build().expect("an HTTP client");
    let world: Value = http
        .get(format!("{}api/v1/world", started["url"].as_str().expect("url")))
        .bearer_auth(&token)
        .send()
        .and_then(|response| response.json())
        .expect("the world");
    let text = world.to_string();
    assert!(text.contains("\"ada\"") && text.contains("/court"), "the court world: {text}");
    let _ = child.kill();
    let _ = child.wait();
    // The land keeps its own copy of the definitions and records it.
    let recorded = std::fs::read_to_string(land.join("definitions.toml")).expect("recorded definitions");
    let copy = land.canonicalize().expect("land").join("definitions/demo-world/fixtures/court.toml");
    assert!(recorded.contains(copy.to_str().expect("utf-8")), "{recorded}");
    assert!(!recorded.contains(env!("CARGO_MANIFEST_DIR")), "nothing of the checkout: {recorded}");
    // Opened again from another folder, and replayed from a third.
    let (mut child, started) = up_from_folder(&land, another.path());
    assert_eq!((started["world"].clone(), started["operatorToken"].clone()), (json!("court"), Value::Null));
    let _ = child.kill();
    let _ = child.wait();
    let replayed = std::process::Command::new(env!("CARGO_BIN_EXE_seed"))
        .args(["--land", land.to_str().expect("utf-8"), "replay", "@ada"])
        .current_dir(elsewhere.path())
        .output()
        .expect("replay runs");
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
}
