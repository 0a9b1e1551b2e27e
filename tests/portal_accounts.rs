//! Accounts for several people against a real `seed up`: the operator
//! invites people, each drives a human being of their own and its
//! descendants and nothing else, logs in with a token or a password, and
//! every grant and revocation is an act on the operator's reel.

use crate::common;

use common::portal::Up;
use serde_json::{json, Value};

/// A person's bearer token at one portal.
struct Person<'a> {
    up: &'a Up,
    token: String,
}

impl Person<'_> {
    fn get(&self, path: &str) -> (u16, Value) {
        let response =
            self.up.http.get(format!("{}{path}", self.up.url)).bearer_auth(&self.token).send().expect("answered");
        (response.status().as_u16(), response.json().unwrap_or(Value::Null))
    }

    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self
            .up
            .http
            .post(format!("{}{path}", self.up.url))
            .bearer_auth(&self.token)
            .body(body.to_string())
            .send()
            .expect("answered");
        (response.status().as_u16(), response.json().unwrap_or(Value::Null))
    }
}

/// Invites `account` (born under `parent`, or the operator's being).
fn invite<'a>(up: &'a Up, account: &str, parent: Option<&str>) -> Person<'a> {
    let mut request = json!({"account": account});
    if let Some(parent) = parent {
        request["parent"] = json!(parent);
    }
    let (status, issued) = up.post("/api/v1/accounts", &request);
    assert_eq!(status, 201, "inviting {account}: {issued}");
    assert_eq!(issued["being"], json!(format!("@{account}")));
    let token = issued["token"].as_str().expect("a token").to_string();
    assert_eq!(token.len(), 64, "256 random bits as hex");
    Person { up, token }
}

/// (status, error code, field) of an answer.
fn refusal(answer: (u16, Value)) -> (u16, Value, Value) {
    (answer.0, answer.1["error"]["code"].clone(), answer.1["error"]["field"].clone())
}

#[test]
fn a_person_acts_for_inhabits_and_reads_only_their_own_beings() {
    let up = Up::start(&[]);
    let ann = invite(&up, "ann", None);
    // Bob's being is born under Ann's: still Bob's, not Ann's.
    let bob = invite(&up, "bob", Some("ann"));
    assert_eq!(up.get("/api/v1/beings/bob").1["parent"], json!("@ann"));

    let (_, mine) = ann.get("/api/v1/accounts");
    assert_eq!(mine["you"], json!({"account": "ann", "being": "@ann", "operator": false}), "{mine}");
    assert_eq!(mine["accounts"].as_array().map(Vec::len), Some(1), "a person sees only their own account: {mine}");

    // Ann births and inhabits a child of her own.
    let (status, born) = ann.post("/api/v1/birth", &json!({"name": "annkid", "cognition": "human"}));
    assert_eq!((status, born["parent"].clone()), (201, json!("ann")), "{born}");
    assert_eq!(ann.post("/api/v1/beings/annkid/inhabit", &json!({})).0, 200);
    assert_eq!(up.get("/api/v1/beings/annkid").1["inhabitedBy"], json!("@ann"));

    // Ann summons Bob; only Bob reads it and answers it.
    let (status, sent) =
        ann.post("/api/v1/beings/ann/act", &json!({"verb": "summon", "target": "@bob", "content": "hello bob"}));
    assert_eq!(status, 200, "{sent}");
    let (_, bob_sees) = bob.get("/api/v1/beings/bob");
    let waiting = bob_sees["inbox"].as_array().expect("Bob's inbox").first().cloned().expect("the summon");
    assert_eq!(waiting["content"], json!("hello bob"));
    let (status, outside) = ann.get("/api/v1/beings/bob");
    assert_eq!(status, 200);
    assert_eq!(outside["private"], json!(true), "{outside}");
    assert!(outside.get("inbox").is_none() && outside.get("reel").is_none(), "{outside}");
    let answer = json!({"verb": "summon", "content": "hi ann", "wake": waiting["summon"]});
    assert_eq!(bob.post("/api/v1/beings/bob/act", &answer).0, 200);
    let (_, talk) = ann.get("/api/v1/beings/ann/conversation");
    assert!(talk.to_string().contains("hi ann"), "the answer is in Ann's conversation: {talk}");

    let refused = [
        (
            "Ann acts for Bob's being, though she is its ancestor",
            ann.post("/api/v1/beings/bob/act", &json!({"verb": "see", "address": "/"})),
        ),
        ("Ann inhabits Bob's being", ann.post("/api/v1/beings/bob/inhabit", &json!({}))),
        ("Ann reads Bob's conversation", ann.get("/api/v1/beings/bob/conversation")),
        ("Ann replays Bob's being", ann.get("/api/v1/beings/bob/replay")),
        ("Ann opens a moment of Bob's being", ann.get("/api/v1/beings/bob/moments/1")),
        ("Ann edits Bob's roleFlow", ann.post("/api/v1/beings/bob/flow", &json!({"flow": []}))),
        ("Bob acts for Ann's being", bob.post("/api/v1/beings/ann/act", &json!({"verb": "see", "address": "/"}))),
        ("Bob inhabits Ann's child", bob.post("/api/v1/beings/annkid/inhabit", &json!({}))),
        ("Bob releases Ann's child", bob.post("/api/v1/beings/annkid/release", &json!({}))),
        ("Bob reads Ann's conversation", bob.get("/api/v1/beings/ann/conversation")),
        (
            "Bob acts for the operator's birther",
            bob.post("/api/v1/beings/birther/act", &json!({"verb": "see", "address": "/"})),
        ),
        ("Ann invites someone", ann.post("/api/v1/accounts", &json!({"account": "eve"}))),
        ("Ann gives Bob a new token", ann.post("/api/v1/accounts/bob/token", &json!({}))),
        ("Ann ends Bob's account", ann.post("/api/v1/accounts/bob/revoke", &json!({}))),
    ];
    let cursor = up.cursor();
    for (what, answer) in refused {
        assert_eq!(refusal(answer.clone()), (403, json!("forbidden"), Value::Null), "{what}: {}", answer.1);
    }
    assert_eq!(up.cursor(), cursor, "refused requests wrote nothing");
    assert!(up.get("/api/v1/beings/eve").0 == 404, "no being was born for a refused invitation");

    // The moments a person sees are their own beings'.
    let (_, moments) = bob.get("/api/v1/moments");
    let names: Vec<&str> =
        moments["recent"].as_array().expect("recent").iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.is_empty() && names.iter().all(|name| *name == "bob"), "{names:?}");
    // So are the lanes of the timeline, and Ann's moment pages are hers.
    let (_, timeline) = ann.get("/api/v1/timeline");
    let lanes: Vec<&str> =
        timeline["lanes"].as_array().expect("lanes").iter().filter_map(|l| l["name"].as_str()).collect();
    assert_eq!(lanes, ["ann", "annkid"], "{timeline}");
    let act = timeline["lanes"][0]["marks"].as_array().expect("marks").iter().find(|m| m["kind"] == "act").cloned();
    let seq = act.expect("Ann's summon")["seq"].as_u64().expect("a seq");
    assert_eq!(ann.get(&format!("/api/v1/beings/ann/moments/{seq}")).0, 200);

    // Grants and revocations are acts on the operator's reel; no token is in one.
    let bob_token = bob.token.clone();
    assert_eq!(up.post("/api/v1/accounts/bob/revoke", &json!({})).0, 200);
    assert_eq!(bob.get("/api/v1/world").0, 401, "a revoked account's token stops working");
    let (_, operator) = up.get("/api/v1/beings/operator");
    let summaries = operator["reel"].to_string();
    assert_eq!(summaries.matches("grant-account").count(), 2, "{summaries}");
    assert_eq!(summaries.matches("revoke-account").count(), 1, "{summaries}");
    let ann_token = ann.token.clone();
    let mut up = up;
    up.stop();
    let reel = common::seed(&up.land(), &["reel", "@operator", "--json"]);
    let text = common::stdout(&reel);
    assert!(text.contains("grant-account"), "{text}");
    assert!(!text.contains(&ann_token) && !text.contains(&bob_token), "no token reaches a fact");
    let verified = common::seed(&up.land(), &["verify"]);
    assert!(verified.status.success(), "{}", common::stderr(&verified));
}

/// Logs in through the API: (status, the session cookie, the JSON answer).
fn login(up: &Up, body: Value) -> (u16, Option<String>, Value) {
    let response = up.http.post(format!("{}/api/v1/login", up.url)).body(body.to_string()).send().expect("answered");
    let status = response.status().as_u16();
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or_default().to_string());
    (status, cookie, response.json().unwrap_or(Value::Null))
}

/// A JSON POST with a session cookie and its CSRF token.
fn with_cookie(up: &Up, cookie: &str, csrf: &str, path: &str, body: Value) -> (u16, Value) {
    let response = up
        .http
        .post(format!("{}{path}", up.url))
        .header("cookie", cookie)
        .header("x-csrf-token", csrf)
        .body(body.to_string())
        .send()
        .expect("answered");
    (response.status().as_u16(), response.json::<Value>().unwrap_or(Value::Null))
}

fn world_with_cookie(up: &Up, cookie: &str) -> u16 {
    up.http.get(format!("{}/api/v1/world", up.url)).header("cookie", cookie).send().expect("answered").status().as_u16()
}

#[test]
fn a_new_token_or_an_end_retires_the_old_token_password_and_sessions() {
    let up = Up::start(&[]);
    let ann = invite(&up, "ann", None);
    let (status, cookie, session) = login(&up, json!({"token": ann.token}));
    assert_eq!((status, session["account"].clone()), (200, json!("ann")), "{session}");
    let (cookie, csrf) = (cookie.expect("a cookie"), session["csrf"].as_str().expect("csrf").to_string());

    // Setting a password: too short, then right; only its hash is kept.
    let short = with_cookie(&up, &cookie, &csrf, "/api/v1/password", json!({"password": "short"}));
    assert_eq!(refusal(short), (400, json!("bad-field"), json!("password")));
    let password = "a long enough password";
    assert_eq!(with_cookie(&up, &cookie, &csrf, "/api/v1/password", json!({"password": password})).0, 200);
    let stored = std::fs::read_to_string(up.land().join("passwords.toml")).expect("the password file");
    assert!(stored.contains("$argon2id$") && !stored.contains(password), "{stored}");
    let operator_password = up.post("/api/v1/password", &json!({"password": password}));
    assert_eq!(refusal(operator_password), (400, json!("bad-field"), json!("password")));

    let (status, password_cookie, _) = login(&up, json!({"account": "ann", "password": password}));
    assert_eq!(status, 200);
    let password_cookie = password_cookie.expect("a cookie");
    for (what, wrong) in [
        ("a wrong password", json!({"account": "ann", "password": "not the password"})),
        ("an unknown account", json!({"account": "nobody", "password": password})),
        ("the operator by password", json!({"account": "operator", "password": password})),
    ] {
        let (status, _, body) = login(&up, wrong);
        assert_eq!((status, body["error"]["field"].clone()), (401, json!("password")), "{what}: {body}");
    }

    // A new token retires the old one, the password and both sessions.
    let (status, renewed) = up.post("/api/v1/accounts/ann/token", &json!({}));
    assert_eq!(status, 200, "{renewed}");
    let new_token = renewed["token"].as_str().expect("a new token").to_string();
    assert_eq!(ann.get("/api/v1/world").0, 401, "the old token");
    assert_eq!(world_with_cookie(&up, &cookie), 401, "the token session");
    assert_eq!(world_with_cookie(&up, &password_cookie), 401, "the password session");
    assert_eq!(login(&up, json!({"account": "ann", "password": password})).0, 401, "the old password");
    let renewed_ann = Person { up: &up, token: new_token.clone() };
    assert_eq!(renewed_ann.get("/api/v1/world").0, 200);
    drop((renewed_ann, ann));

    // Accounts are facts: a restart rebuilds them.
    let mut up = up;
    up.restart(&[]);
    let again = Person { up: &up, token: new_token };
    assert_eq!(again.get("/api/v1/accounts").1["you"]["account"], json!("ann"));

    // Logging out ends the session.
    let (_, cookie, session) = login(&up, json!({"token": again.token}));
    let (cookie, csrf) = (cookie.expect("a cookie"), session["csrf"].as_str().expect("csrf").to_string());
    let response = up
        .http
        .post(format!("{}/logout", up.url))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}"))
        .send()
        .expect("answered");
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(world_with_cookie(&up, &cookie), 401, "logged out");
}

#[test]
fn bad_invitations_name_what_is_wrong_and_write_nothing() {
    let up = Up::start(&[]);
    invite(&up, "ann", None);
    let cases = [
        ("a bad account name", json!({"account": "Ann!"}), 400, "bad-field", Some("account")),
        ("no account", json!({}), 400, "bad-field", Some("account")),
        ("the operator's name", json!({"account": "operator", "being": "someone"}), 400, "bad-field", Some("account")),
        ("an account that exists", json!({"account": "ann"}), 409, "conflict", Some("account")),
        (
            "a parent that does not exist",
            json!({"account": "cy", "parent": "nobody"}),
            404,
            "not-found",
            Some("parent"),
        ),
        ("a parent that is no one's", json!({"account": "cy", "parent": "ada"}), 400, "bad-field", Some("parent")),
        ("a being of scripted cognition", json!({"account": "cy", "being": "ada"}), 400, "refused", None),
        ("a being another account drives", json!({"account": "cy", "being": "ann"}), 409, "conflict", None),
    ];
    for (what, request, status, code, field) in cases {
        let cursor = up.cursor();
        let answer = up.post("/api/v1/accounts", &request);
        assert_eq!(refusal(answer.clone()), (status, json!(code), json!(field)), "{what}: {}", answer.1);
        assert_eq!(up.cursor(), cursor, "{what} wrote nothing");
    }
    for path in ["/api/v1/accounts/nobody/token", "/api/v1/accounts/nobody/revoke"] {
        assert_eq!(refusal(up.post(path, &json!({}))), (404, json!("not-found"), Value::Null), "{path}");
    }
    let unauthenticated = up.http.get(format!("{}/api/v1/accounts", up.url)).send().expect("answered");
    assert_eq!(unauthenticated.status().as_u16(), 401);
}
