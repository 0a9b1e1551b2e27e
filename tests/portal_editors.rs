//! The editors against a real `seed up`: the role form shows its change as
//! a diff with the digest before saving, offers pickers, shows every
//! problem at once and keeps what was typed; an authored role reverts to
//! its file definition as an act; the roleFlow editor warns about unknown
//! keys and is offered only where saving could succeed.

use crate::common;

use common::portal::Up;
use serde_json::{json, Value};

/// The role form's values for `role`, as the portal fills them in.
fn form_of(up: &Up, role: &str, csrf: &str) -> Vec<(String, String)> {
    let roles = up.get("/api/v1/roles").1;
    let found = roles["roles"].as_array().expect("roles").iter().find(|r| r["name"] == role).expect("the role");
    let mut form: Vec<(String, String)> =
        seed::portal::role_form::values_of_definition(&found["definition"]).into_iter().collect();
    form.push(("csrf".into(), csrf.into()));
    form
}

fn set(form: &mut [(String, String)], field: &str, value: &str) {
    form.iter_mut().find(|(name, _)| name == field).expect("a field of the form").1 = value.into();
}

fn role(up: &Up, name: &str) -> Value {
    let roles = up.get("/api/v1/roles").1;
    roles["roles"].as_array().expect("roles").iter().find(|r| r["name"] == name).cloned().unwrap_or(Value::Null)
}

#[test]
fn the_role_form_shows_the_change_and_its_digest_before_saving_and_every_problem_at_once() {
    let up = Up::start(&[]);
    let (cookie, csrf) = up.login();
    let post = |form: &[(String, String)]| {
        let response = up.post_form(&cookie, "/roles", &form);
        (response.status().as_u16(), response.text().unwrap_or_default())
    };
    // The pickers offer beings, tokens, spaces, operations.
    let (_, page) = up.page("/roles?edit=court-watcher");
    for option in [
        "<option value=\"@ada\">",
        "<option value=\"{&quot;rel&quot;:&quot;parent&quot;}\">",
        "<option value=\"/court\">",
        "<option value=\"publish-signal\">",
    ] {
        assert!(page.contains(option), "{option} is offered");
    }
    // Show the change: a diff and the digest, nothing written.
    let before = up.cursor();
    let mut form = form_of(&up, "court-watcher", &csrf);
    set(&mut form, "prompt", "You watch the court closely.");
    form.push(("intent".into(), "preview".into()));
    let (status, page) = post(&form);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("id=\"role-diff\""), "{page}");
    assert!(
        page.contains("<span class=\"added\">+   &quot;prompt&quot;: &quot;You watch the court closely.&quot;"),
        "{page}"
    );
    assert!(page.contains("<span class=\"removed\">-   &quot;prompt&quot;"), "{page}");
    assert!(page.contains("id=\"role-digest\""));
    assert!(
        page.contains("value=\"You watch the court closely.\"")
            || page.contains(">\nYou watch the court closely.</textarea>"),
        "kept as typed"
    );
    assert_eq!(up.cursor(), before, "showing the change writes nothing");
    // Unchanged, it says so.
    let mut same = form_of(&up, "court-watcher", &csrf);
    same.push(("intent".into(), "preview".into()));
    let (_, page) = post(&same);
    assert!(page.contains("id=\"role-unchanged\""), "{page}");
    // Two problems at once, each beside its field, the typed values kept.
    let mut broken = form_of(&up, "court-watcher", &csrf);
    set(&mut broken, "canSummon", "{rel: parent}");
    set(&mut broken, "requiredCognition", "telepathic");
    broken.push(("intent".into(), "save".into()));
    let (status, page) = post(&broken);
    assert_eq!(status, 400);
    assert!(page.contains("id=\"error-canSummon\"") && page.contains("id=\"error-requiredCognition\""), "{page}");
    assert!(page.contains("value=\"telepathic\""), "what was typed is kept");
    assert_eq!(up.cursor(), before);
    // Saved, the role has the digest the change showed; success is on the page.
    let shown = {
        let (_, page) = post(&form);
        let at = page.find("id=\"role-digest\">").expect("the digest") + "id=\"role-digest\">".len();
        page[at..at + 64].to_string()
    };
    form.pop();
    form.push(("intent".into(), "save".into()));
    let response = up.post_form(&cookie, "/roles", &form);
    assert_eq!(response.status().as_u16(), 303);
    let location = response.headers()["location"].to_str().expect("a location").to_string();
    let (_, page) = up.page(&location);
    assert!(page.contains("id=\"flash\">role court-watcher saved"), "{page}");
    assert_eq!(role(&up, "court-watcher")["digest"], json!(shown));
}

#[test]
fn an_authored_role_reverts_to_its_file_definition_as_an_act() {
    let up = Up::start(&[]);
    let file = role(&up, "court-watcher");
    let mut definition = file["definition"].clone();
    definition["prompt"] = json!("Changed live.");
    assert_eq!(up.post("/api/v1/roles", &json!({"definition": definition})).0, 201);
    let authored = role(&up, "court-watcher");
    assert_eq!(
        (authored["origin"].as_str(), authored["revertible"].as_bool()),
        (Some("authored by @operator"), Some(true))
    );
    assert_ne!(authored["digest"], file["digest"]);
    let (_, page) = up.page("/roles");
    assert!(page.contains("id=\"revert-court-watcher\""), "a revert button on the authored role");
    let (status, answer) = up.post("/api/v1/roles/court-watcher/revert", &json!({}));
    assert_eq!(status, 200, "{answer}");
    let reverted = role(&up, "court-watcher");
    assert_eq!((&reverted["digest"], &reverted["origin"]), (&file["digest"], &file["origin"]));
    assert_eq!(reverted["revertible"], false);
    // Nothing to revert, or no file to revert to: refused, nothing written.
    let cursor = up.cursor();
    let (status, answer) = up.post("/api/v1/roles/court-watcher/revert", &json!({}));
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("is not an authored role"), "{answer}");
    assert_eq!(up.cursor(), cursor);
    // Only a being whose role may call revert-role may: a person may not; nobody unauthenticated.
    let (status, issued) = up.post("/api/v1/accounts", &json!({"account": "ann"}));
    assert_eq!(status, 201, "{issued}");
    let ann = issued["token"].as_str().expect("a token");
    let as_ann = up
        .http
        .post(format!("{}/api/v1/roles/court-watcher/revert", up.url))
        .bearer_auth(ann)
        .body("{}")
        .send()
        .expect("answered");
    assert_eq!(as_ann.status().as_u16(), 403);
    let anonymous = up.http.post(format!("{}/api/v1/roles/court-watcher/revert", up.url)).body("{}").send();
    assert_eq!(anonymous.expect("answered").status().as_u16(), 401);
    let mut new_role = file["definition"].clone();
    new_role["name"] = json!("brand-new");
    assert_eq!(up.post("/api/v1/roles", &json!({"definition": new_role})).0, 201);
    let cursor = up.cursor();
    let (status, answer) = up.post("/api/v1/roles/brand-new/revert", &json!({}));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("no role file defines"), "{answer}");
    assert_eq!(up.cursor(), cursor);
    // The revert is an act on the operator's reel, and the land replays clean.
    let operator = up.get("/api/v1/beings/operator").1;
    assert!(operator["reel"].to_string().contains("do revert-role"), "{operator}");
    let mut up = up;
    up.stop();
    let replayed = common::seed(&up.land(), &["replay", "--all"]);
    assert!(replayed.status.success(), "{}{}", common::stdout(&replayed), common::stderr(&replayed));
}

#[test]
fn the_flow_editor_warns_about_unknown_keys_and_is_offered_only_where_saving_could_succeed() {
    let up = Up::start(&[]);
    let flow = json!([{"when": {"wrold.court.in-session": true}, "role": "operator"}, {"role": "operator"}]);
    let (status, preview) = up.post("/api/v1/beings/operator/flow/preview", &json!({"flow": flow}));
    assert_eq!(status, 200, "{preview}");
    let warnings = preview["warnings"].to_string();
    assert!(
        warnings.contains(
            "clause [0] (operator): unknown key `wrold.court.in-session`; did you mean `world.court.in-session`?"
        ),
        "{warnings}"
    );
    let (_, page) = up.page("/beings/operator/flow");
    assert!(
        page.contains("id=\"preview-warnings\"") && page.contains("<code>world.court.in-session</code>")
            || page.contains("<code>space.name</code>"),
        "{page}"
    );
    assert!(page.contains("<code>court-watcher</code>"), "the roles it knows");
    // A being that is neither the operator's own nor a descendant of it: no editor.
    let beyond = ["reality", "ada", "ben", "birther", "role-manager"]
        .into_iter()
        .find(|name| up.get(&format!("/api/v1/beings/{name}")).1["youMayEditFlow"] == false)
        .expect("a being the operator may not edit the roleFlow of");
    let (_, being) = up.page(&format!("/beings/{beyond}"));
    assert!(!being.contains("id=\"edit-flow\""), "no editor link where saving would be refused");
    let (status, page) = up.page(&format!("/beings/{beyond}/flow"));
    assert_eq!(status, 403, "{page}");
    assert!(page.contains(&format!("only @{beyond} itself or one of its ancestors may edit its roleFlow")), "{page}");
    let (_, own) = up.page("/beings/operator");
    assert!(own.contains("id=\"edit-flow\""));
}

#[test]
fn a_refused_act_or_birth_shows_its_page_again_with_what_was_typed_and_why() {
    let up = Up::start(&[]);
    let (cookie, csrf) = up.login();
    let post = |path: &str, form: &[(&str, &str)]| {
        let mut form: Vec<(&str, &str)> = form.to_vec();
        form.push(("csrf", &csrf));
        let response = up.post_form(&cookie, path, &form);
        (response.status().as_u16(), response.text().unwrap_or_default())
    };
    let before = up.cursor();
    let message = "A long message <b>I would hate</b> to type again.";
    let (status, page) =
        post("/beings/operator/act", &[("verb", "summon"), ("target", "@nobody-here"), ("content", message)]);
    assert!((400..500).contains(&status), "{status}");
    assert!(page.contains("id=\"error-summon\""), "the reason beside the form: {page}");
    assert!(page.contains("A long message &lt;b&gt;I would hate&lt;/b&gt; to type again.</textarea>"), "kept, escaped");
    assert!(page.contains("id=\"row\""), "the being's own page, not a bare error page");
    let (status, page) = post(
        "/birth",
        &[("from", "birther"), ("name", "kit"), ("cognition", "scripted"), ("roleFlow", "[{\"role\": \"idle\"")],
    );
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("id=\"error-birth\"") && page.contains("`roleFlow` is not JSON"), "{page}");
    assert!(page.contains("id=\"birth-name\" value=\"kit\"") && page.contains("<option value=\"scripted\" selected>"));
    assert!(page.contains("[{&quot;role&quot;: &quot;idle&quot;</textarea>"), "the flow as typed");
    assert_eq!(up.cursor(), before, "nothing was written");
}
