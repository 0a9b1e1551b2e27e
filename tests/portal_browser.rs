//! The portal in a real headless Chromium, driven over WebDriver: log in,
//! birth a child, inhabit it in a new tab and summon as it, close the tab
//! and see it released, author a role (and see a field's error), preview a
//! roleFlow, publish a signal and see a court-watcher become judge. Each
//! step leaves a screenshot in target/portal-screenshots/.

use crate::common;

use common::portal::Up;
use common::webdriver::Browser;
use serde_json::{json, Value};
use std::path::PathBuf;

/// A browser logged in as the operator of `up`, saving its screenshots in
/// `target/portal-screenshots/`.
fn operator_browser(up: &Up) -> Browser {
    let browser = Browser::start(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/portal-screenshots"));
    browser.log_in(&up.url, &up.token);
    browser
}
use std::time::Duration;

#[test]
fn a_person_births_inhabits_configures_and_watches_the_world() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let up = Up::start(&["--round-ms", "300", "--release-grace-ms", "1000"]);
    let screenshots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/portal-screenshots");
    let browser = Browser::start(&screenshots);

    // Wrong tokens slow this browser down, and the right one still logs in.
    browser.go(&format!("{}/world", up.url));
    let throttled = (0..30).any(|_| {
        browser.go(&format!("{}/login", up.url));
        browser.clear_and_type("#token", "a-wrong-token");
        browser.click("#login");
        std::thread::sleep(Duration::from_millis(100));
        browser.try_text("#error").is_some_and(|text| text.contains("too many failed logins from this address"))
    });
    assert!(throttled, "repeated wrong tokens were answered 429");
    browser.screenshot("00-login-throttled");
    // Log in with the operator's token.
    browser.go(&format!("{}/login", up.url));
    browser.clear_and_type("#token", &up.token);
    browser.screenshot("01-login");
    browser.click("#login");
    browser.wait_for_text("h1", "World");
    browser.wait_for_text("#spaces", "@ada");
    browser.screenshot("02-world");

    // Birth a child at @birther: the operator is its parent.
    browser.click("nav a[href='/beings/birther']");
    browser.clear_and_type("#birth-name", "wren");
    browser.select("#birth-cognition", "scripted");
    browser.screenshot("03-birth-form");
    browser.click("#birth");
    browser.wait_for_text("h1", "@wren");
    assert_eq!(browser.text("#row-parent"), "@operator");
    assert_eq!(browser.text("#row-effectiveCognition"), "scripted");
    browser.screenshot("04-born");

    // Inhabit it in a new tab: its effective cognition becomes human.
    let first = browser.window();
    browser.click("#inhabit");
    let started = std::time::Instant::now();
    while browser.windows().len() < 2 {
        assert!(started.elapsed() < Duration::from_secs(10), "the inhabit tab never opened");
        std::thread::sleep(Duration::from_millis(100));
    }
    let second = browser.windows().into_iter().find(|handle| *handle != first).expect("a second tab");
    browser.switch_to(&second);
    browser.wait_for_text("#presence-state", "You are driving @wren");
    let wren = up.wait_for_being("wren", Duration::from_secs(5), |wren| wren["effectiveCognition"] == "human");
    assert_eq!(wren["inhabitedBy"], "@operator");
    browser.screenshot("05-inhabited");

    // Summon another being as the child.
    browser.select("#summon-target", "@operator");
    browser.clear_and_type("#summon-content", "Hello from inside wren.");
    browser.scroll_to("#do-summon");
    browser.click("#do-summon");
    browser.wait_for_text("#flash", "act: summon");
    browser.wait_for_text("#presence-state", "You are driving @wren");
    browser.screenshot("06-summoned-as-child");
    let operator = up.get("/api/v1/beings/operator").1;
    let inbox: Vec<&Value> = operator["inbox"].as_array().expect("an inbox").iter().collect();
    assert!(
        inbox.iter().any(|summon| summon["from"] == "@wren" && summon["content"] == "Hello from inside wren."),
        "the summon reached @operator: {inbox:?}"
    );

    // The operator answers: the reply appears in the open tab without a
    // reload, under the summon it answers; the child answers back in place.
    let asked = up.get("/api/v1/beings/wren/conversation").1["messages"][0]["summon"].clone();
    let answer = json!({"verb": "summon", "target": "@wren", "content": "Welcome, wren.", "wake": asked});
    assert_eq!(up.post("/api/v1/beings/operator/act", &answer).0, 200);
    let asked = asked.as_str().expect("a summon id").to_string();
    browser.wait_for_text(&format!("#reply-{asked}"), "Welcome, wren.");
    let talk = up.get("/api/v1/beings/wren/conversation").1;
    let waiting = talk["messages"][1]["summon"].as_str().expect("the operator's summon").to_string();
    browser.scroll_to(&format!("#answer-{waiting}"));
    browser.screenshot("06b-reply-arrived-live");
    browser.clear_and_type(&format!("#answer-text-{waiting}"), "Thank you!");
    browser.click(&format!("#answer-send-{waiting}"));
    browser.wait_for_text("#flash", "act: summon");
    browser.wait_for_text(&format!("#reply-{waiting}"), "Thank you!");
    browser.wait_for_text("#presence-state", "You are driving @wren");
    browser.screenshot("06c-answered-in-place");

    // Close the tab: after the grace period the child is released.
    browser.close_window();
    browser.switch_to(&first);
    let wren = up.wait_for_being("wren", Duration::from_secs(10), |wren| wren["inhabitedBy"].is_null());
    assert_eq!(wren["effectiveCognition"], "scripted");
    browser.go(&format!("{}/beings/wren", up.url));
    browser.wait_for_text("#row-effectiveCognition", "scripted");
    browser.screenshot("07-released");
    // The tab of a being no longer inhabited says why it is not shown.
    browser.go(&format!("{}/inhabit/wren", up.url));
    browser.wait_for_text("h1", "403 forbidden");
    browser.wait_for_text("#error", "you do not inhabit @wren: use the Inhabit button");
    browser.screenshot("07b-not-inhabited-403");
    // The operator's memory: its acts (the birth, the inhabiting, the summon) and a recall.
    browser.go(&format!("{}/beings/operator/memory?query=wren", up.url));
    browser.wait_for_text("h1", "Memory of @operator");
    browser.wait_for_text("#recall", "wren");
    browser.screenshot("07c-memory");
    browser.go(&format!("{}/beings/wren", up.url));
    let operator = up.get("/api/v1/beings/operator").1;
    let reel: Vec<&str> =
        operator["reel"].as_array().expect("reel").iter().filter_map(|f| f["summary"].as_str()).collect();
    assert!(reel.iter().any(|line| line.starts_with("be connect")), "connect is a fact: {reel:?}");
    assert!(reel.iter().any(|line| line.starts_with("be release")), "release is a fact: {reel:?}");

    // Author a role; a bad name is shown next to its field.
    browser.click("nav a[href='/roles']");
    browser.clear_and_type("#role-name", "Night Owl");
    browser.clear_and_type("#role-canSummon", "@operator");
    browser.clear_and_type("#role-prompt", "Hoot softly at {{me.name}}.");
    browser.click("#save-role");
    browser.wait_for_text("#error-name", "");
    browser.screenshot("08-role-field-error");
    browser.clear_and_type("#role-name", "night-owl");
    // A picker adds a known entry; the change shows as a diff with its digest first.
    browser.select("#pick-canSummon", "@ada");
    browser.click("#preview-role");
    browser.wait_for_text("#role-diff", "night-owl");
    assert!(browser.page_source().contains("value=\"@operator, @ada\""), "the picked being is in the form");
    browser.screenshot("08b-role-change");
    browser.click("#save-role");
    browser.wait_for_text("#flash", "role night-owl saved");
    browser.wait_for_text("#role-night-owl", "authored by @operator");
    browser.scroll_to("#role-night-owl");
    browser.screenshot("09-role-authored");

    // A file role with a script and a pattern token, opened in the form and
    // saved unchanged, is the same role: its digest does not move.
    let judge_digest = |up: &Up| {
        let roles = up.get("/api/v1/roles").1;
        let judge = roles["roles"].as_array().expect("roles").iter().find(|r| r["name"] == "judge").cloned();
        let judge = judge.expect("the judge");
        (judge["digest"].clone(), judge["origin"].clone())
    };
    let (before, _) = judge_digest(&up);
    browser.go(&format!("{}/roles?edit=judge", up.url));
    browser.wait_for_text("#role-script", "");
    browser.scroll_to("#save-role");
    browser.screenshot("09b-judge-in-the-form");
    browser.click("#save-role");
    browser.wait_for_text("#flash", "role judge saved");
    let (after, origin) = judge_digest(&up);
    assert_eq!(after, before, "the judge saved unchanged keeps its digest");
    assert_eq!(origin, "authored by @operator");

    // Edit the child's roleFlow: the live preview follows the text.
    browser.go(&format!("{}/beings/wren/flow", up.url));
    browser.wait_for_text("#preview", "it would wear");
    browser.clear_and_type("#flow", r#"[{"role": "night-owl"}]"#);
    browser.wait_for_text("#preview", "it would wear: night-owl");
    browser.wait_for_text("#preview-clauses", "held (no condition)");
    browser.screenshot("10-flow-preview");
    browser.clear_and_type("#flow", r#"[{"when": {"wrold.court.in-session": true}, "role": "night-owl"}]"#);
    browser.wait_for_text("#preview-warnings", "did you mean `world.court.in-session`");
    browser.screenshot("10b-flow-warning");
    browser.clear_and_type("#flow", r#"[{"role": "night-owl"}]"#);
    browser.wait_for_text("#preview", "it would wear: night-owl");
    browser.click("#save-flow");
    browser.wait_for_text("#flash", "roleFlow saved");
    up.wait_for_being("wren", Duration::from_secs(5), |wren| wren["now"]["primary"] == "night-owl");

    // Publish a signal: @ada's flow reads it, and she becomes judge.
    browser.go(&format!("{}/world", up.url));
    browser.wait_for_text("#role-ada", "court-watcher");
    browser.screenshot("11-before-signal");
    browser.clear_and_type("#signal-key", "court.in-session");
    browser.clear_and_type("#signal-value", "true");
    browser.click("#publish");
    browser.wait_for_text("#signal-court\\.in-session", "true");
    browser.wait_for_text("#role-ada", "judge");
    browser.scroll_to("#role-ada");
    browser.screenshot("12-ada-is-judge");

    // In session the judge rules: the ruling appears on the court's page,
    // with who made it.
    browser.go(&format!("{}/spaces?path=%2Fcourt", up.url));
    let started = std::time::Instant::now();
    while !browser.page_source().contains("id=\"space-matter\"") {
        assert!(started.elapsed() < Duration::from_secs(20), "no ruling appeared on the court's page");
        std::thread::sleep(Duration::from_millis(300));
        browser.go(&format!("{}/spaces?path=%2Fcourt", up.url));
    }
    browser.wait_for_text("#space-matter", "ruling");
    browser.wait_for_text("#space-matter", "@ada");
    browser.screenshot("12b-ruling-on-the-court");

    // The replay view of the child: its moments, all matching.
    browser.go(&format!("{}/beings/wren/replay", up.url));
    browser.wait_for_text("#verdict", "every moment matches");
    browser.screenshot("13-replay");

    // The timeline: @ada's lane turns from watcher to judge; her latest
    // mark opens that moment, with the value the judge clause read.
    browser.go(&format!("{}/timeline?being=ada", up.url));
    browser.wait_for_text("#timeline-legend", "judge");
    browser.screenshot("14-timeline");
    browser.click("#lane-ada a.mark-link:last-of-type");
    browser.wait_for_text("#moment-act", "wearing judge");
    browser.wait_for_text("#moment-clauses", "world.court.in-session = true");
    browser.screenshot("15-moment");
    for step in
        ["01-login", "04-born", "06-summoned-as-child", "12-ada-is-judge", "13-replay", "14-timeline", "15-moment"]
    {
        assert!(screenshots.join(format!("{step}.png")).is_file());
    }
}

/// Two people in two browser profiles: the operator invites Ann, who logs
/// in with her token, sets a password and logs in with it, births a child
/// of her own, and talks with the operator: each sees the other's words
/// arrive live. Another's being shows Ann only its public row.
#[test]
fn two_people_each_live_in_the_land_with_their_own_beings() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let up = Up::start(&["--round-ms", "300"]);
    let screenshots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/portal-screenshots");
    let operator = Browser::start(&screenshots);
    operator.log_in(&up.url, &up.token);

    // The operator invites Ann: the token is shown once.
    operator.go(&format!("{}/accounts", up.url));
    operator.clear_and_type("#invite-account", "ann");
    operator.click("#invite-send");
    let token = operator.wait_for_text("#issued-token", "");
    assert_eq!(token.len(), 64, "{token}");
    assert_eq!(operator.text("#issued-account"), "ann");
    operator.screenshot("p01-invited");

    // Ann, in her own browser profile, logs in with it and sets a password.
    let ann = Browser::start(&screenshots);
    ann.log_in(&up.url, &token);
    ann.go(&format!("{}/accounts", up.url));
    ann.wait_for_text("#you", "ann");
    ann.clear_and_type("#new-password", "short");
    ann.click("#set-password");
    ann.wait_for_text("#error-password", "at least");
    ann.clear_and_type("#new-password", "ann's long password");
    ann.click("#set-password");
    ann.wait_for_text("#done", "password set");
    ann.screenshot("p02-password-set");
    ann.click("#logout");
    ann.wait_for_text("h1", "Log in");
    ann.clear_and_type("#account", "ann");
    ann.clear_and_type("#password", "ann's long password");
    ann.click("#login");
    ann.wait_for_text("h1", "World");

    // Her own being: she births a child of her own there.
    ann.go(&format!("{}/beings/ann", up.url));
    ann.clear_and_type("#birth-name", "annkid");
    ann.click("#birth");
    ann.wait_for_text("h1", "@annkid");
    assert_eq!(ann.text("#row-parent"), "@ann");
    ann.screenshot("p03-child-born");

    // Ann summons the operator from her being; the operator's page shows it live.
    ann.go(&format!("{}/beings/ann", up.url));
    ann.select("#summon-target", "@operator");
    ann.clear_and_type("#summon-content", "Hello, operator. Ann here.");
    ann.scroll_to("#do-summon");
    ann.click("#do-summon");
    ann.wait_for_text("#flash", "act: summon");
    operator.go(&format!("{}/beings/operator", up.url));
    operator.wait_for_text("#conversation", "Hello, operator. Ann here.");
    let asked = up.get("/api/v1/beings/operator").1["inbox"][0]["summon"].as_str().expect("a summon").to_string();
    operator.scroll_to(&format!("#answer-{asked}"));
    operator.clear_and_type(&format!("#answer-text-{asked}"), "Welcome, Ann.");
    operator.click(&format!("#answer-send-{asked}"));
    operator.wait_for_text(&format!("#reply-{asked}"), "Welcome, Ann.");
    operator.screenshot("p04-operator-answered");
    ann.wait_for_text(&format!("#reply-{asked}"), "Welcome, Ann.");
    ann.scroll_to(&format!("#reply-{asked}"));
    ann.screenshot("p05-reply-arrived-live");

    // Another's being: its public row only; its replay and act routes refuse.
    ann.go(&format!("{}/beings/operator", up.url));
    ann.wait_for_text("#private", "not yours");
    assert!(!ann.page_source().contains("Welcome, Ann."), "no conversation of another's being");
    ann.screenshot("p06-not-yours");
    ann.go(&format!("{}/beings/operator/replay", up.url));
    ann.wait_for_text("body", "is not yours");
    ann.screenshot("p07-replay-refused");
}

/// A second `seed up` on a land on PostgreSQL follows the land: a person
/// logs in there, sees the world the runner keeps moving, and an act is
/// answered with a page naming the runner.
#[test]
fn a_following_portal_shows_the_land_and_names_its_runner_when_a_person_acts() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") || !crate::postgres::postgres_opted_in()
    {
        return;
    }
    use std::io::BufRead;
    let store = common::postgres::fresh_database();
    let runner = Up::start_with_env(&["--round-ms", "300", "--runner-lease-ms", "1000"], &[("SEED_STORE", &store)]);
    let mut follower = common::seed_command(&runner.land(), &["up", "--addr", "127.0.0.1:0", "--lifetime-s", "120"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("a second seed up");
    let mut lines = std::io::BufReader::new(follower.stdout.take().expect("stdout")).lines();
    let mut printed = Vec::new();
    while !printed.iter().any(|line: &String| line.starts_with("following the land")) {
        printed.push(lines.next().expect("the follower's start lines").expect("readable"));
    }
    std::thread::spawn(move || for _ in lines {});
    let url = printed
        .iter()
        .find_map(|line| line.strip_prefix("seed is up: "))
        .expect("its URL")
        .trim_end_matches('/')
        .to_string();
    let screenshots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/portal-screenshots");
    let browser = Browser::start(&screenshots);
    browser.go(&format!("{url}/world"));
    browser.clear_and_type("#token", &runner.token);
    browser.click("#login");
    browser.wait_for_text("h1", "World");
    browser.wait_for_text("#spaces", "@ada");
    browser.screenshot("30-follower-world");
    // A birth on the runner shows up at the follower.
    let (status, body) = runner.post("/api/v1/birth", &json!({"name": "opal", "cognition": "human"}));
    assert_eq!(status, 201, "{body}");
    let started = std::time::Instant::now();
    loop {
        browser.go(&format!("{url}/world"));
        if browser.page_source().contains("@opal") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the follower never showed @opal");
        std::thread::sleep(Duration::from_millis(200));
    }
    browser.screenshot("31-follower-sees-the-runners-birth");
    // Acting here is refused, naming where to act.
    browser.click("nav a[href='/beings/birther']");
    browser.clear_and_type("#birth-name", "quill");
    browser.click("#birth");
    let said = browser.wait_for_text("body", "this portal follows the land");
    assert!(said.contains(&runner.url), "{said}");
    browser.screenshot("32-follower-refuses-an-act");
    let _ = follower.kill();
    let _ = follower.wait();
}

/// The approvals inbox: a teller's payout over its gate's threshold waits
/// there; an edit that is not JSON is refused beside the request; the
/// manager approves it edited, and the teller's next moment applies it;
/// another is denied with a reason.
#[test]
fn a_person_approves_edits_and_denies_gated_calls_in_the_approvals_inbox() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/approvals/approvals.toml");
    let up = Up::start(&["--fixture", fixture.to_str().expect("utf-8"), "--round-ms", "100"]);
    let browser = operator_browser(&up);
    browser.go(&format!("{}/approvals", up.url));
    browser.wait_for_text("#no-approvals", "Nothing is waiting");
    browser.screenshot("a01-approvals-empty");

    let payout = |value: i64| {
        let call = json!({"verb": "do", "target": "/", "action": "publish-signal",
                          "args": {"key": "bank.payout", "value": value}});
        let (status, answer) = up.post("/api/v1/beings/teller/act", &call);
        assert_eq!(status, 200, "{answer}");
        let waiting = up.get("/api/v1/approvals").1["approvals"].as_array().cloned().unwrap_or_default();
        let newest = waiting.into_iter().max_by_key(|request| request["requestedAtSeq"].as_u64()).expect("waiting");
        newest["request"].as_str().expect("an id")[..12].to_string()
    };
    let first = payout(500);
    browser.go(&format!("{}/approvals", up.url));
    browser.wait_for_text(&format!("#request-{first} h2"), "do publish-signal on /");
    browser.screenshot("a02-request-waiting");

    // An edit that is not JSON: refused beside the request, nothing sealed.
    let cursor = up.cursor();
    browser.clear_and_type(&format!("#edit-{first}"), "{value: 300");
    browser.click(&format!("#approve-{first}"));
    browser.wait_for_text(&format!("#error-{first}"), "must be JSON");
    assert_eq!(up.cursor(), cursor);
    browser.screenshot("a03-edit-refused");

    // Approved as edited, as the manager: the teller applies it.
    browser.go(&format!("{}/approvals", up.url));
    browser.select(&format!("#as-{first}"), "@manager");
    browser.clear_and_type(&format!("#edit-{first}"), r#"{"key": "bank.payout", "value": 300}"#);
    browser.clear_and_type(&format!("#reason-{first}"), "three hundred for now");
    browser.click(&format!("#approve-{first}"));
    browser.wait_for_text("#done", "approved");
    browser.screenshot("a04-approved");
    let started = std::time::Instant::now();
    while up.get("/api/v1/world").1["signals"]["bank.payout"] != json!(300) {
        assert!(started.elapsed() < Duration::from_secs(20), "the approved payout never applied");
        std::thread::sleep(Duration::from_millis(100));
    }
    browser.go(&format!("{}/beings/teller", up.url));
    browser.wait_for_text("#reel", "approved (request");
    browser.scroll_to("#reel");
    browser.screenshot("a05-applied-on-the-reel");
    // The moment that applied it, replayed: woken by the approval, matching.
    browser.go(&format!("{}/beings/teller/moments/2", up.url));
    browser.wait_for_text("body", "approval");
    browser.screenshot("a05b-applying-moment-replayed");

    // Denied with a reason.
    let second = payout(900);
    browser.go(&format!("{}/approvals", up.url));
    browser.clear_and_type(&format!("#reason-{second}"), "over the day's limit");
    browser.click(&format!("#deny-{second}"));
    browser.wait_for_text("#done", "denied");
    // The teller seals the denial in its next moment, a round later; the
    // reel page shows the land as it was when it loaded, so load it again
    // until that act is there (CI once loaded it in between).
    let started = std::time::Instant::now();
    loop {
        browser.go(&format!("{}/beings/teller", up.url));
        let reel = browser.try_text("#reel").unwrap_or_default();
        if reel.contains("not done, denied") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the teller never sealed the denial: {reel}");
        std::thread::sleep(Duration::from_millis(200));
    }
    browser.scroll_to("#reel");
    browser.screenshot("a06-denied-on-the-reel");

    // The audit: every step, newest first, each citing its fact; a filter
    // and a bad one.
    browser.go(&format!("{}/audit", up.url));
    browser.wait_for_text("#audit", "approved by @manager");
    browser.wait_for_text("#audit", "not done, denied");
    browser.screenshot("a07-audit");
    browser.clear_and_type("#audit-being", "manager");
    browser.click("#audit-go");
    browser.wait_for_text("#audit", "approves request");
    assert!(!browser.text("#audit").contains("publish-signal /"), "only the manager's lines");
    browser.screenshot("a08-audit-filtered");
    browser.go(&format!("{}/audit?since=soon", up.url));
    browser.wait_for_text("body", "neither an RFC 3339 time");
    browser.screenshot("a09-audit-bad-since");
}

#[test]
fn an_operator_reads_and_sets_the_lands_configuration_on_its_page() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let up = Up::start(&[]);
    let browser = operator_browser(&up);
    browser.go(&format!("{}/config", up.url));
    browser.wait_for_text("#key-inbox_depth_max", "its default");
    browser.screenshot("c01-config-defaults");

    // A value out of range is refused naming it; nothing changes.
    browser.clear_and_type("#value-inbox_depth_max", "0");
    browser.click("#set-inbox_depth_max");
    browser.wait_for_text("body", "inbox_depth_max = 0 is out of range: 1 to 1000000 summons");
    browser.screenshot("c02-config-out-of-range");

    browser.go(&format!("{}/config", up.url));
    browser.clear_and_type("#value-inbox_depth_max", "12");
    browser.click("#set-inbox_depth_max");
    browser.wait_for_text("#config-done", "inbox_depth_max set");
    let row = browser.text("#key-inbox_depth_max");
    assert!(row.contains("12") && row.contains("@operator at land seq"), "{row}");
    browser.screenshot("c03-config-set");
    let (_, config) = up.get("/api/v1/config");
    let key = config["keys"].as_array().expect("keys").iter().find(|key| key["key"] == "inbox_depth_max").cloned();
    assert_eq!(key.expect("the key")["value"], 12);

    // Back to its default by typing `default`.
    browser.clear_and_type("#value-inbox_depth_max", "default");
    browser.click("#set-inbox_depth_max");
    browser.wait_for_text("#config-done", "inbox_depth_max set");
    assert!(browser.text("#key-inbox_depth_max").contains("its default"));
    browser.screenshot("c04-config-back-to-default");
}

/// The health breaker in the browser (docs/health.md): a running land's
/// health page, the banner every page carries once it trips, the page
/// naming the sign, an act refused while tripped, and the operator's revival.
#[test]
fn an_operator_sees_the_tripped_land_on_every_page_and_revives_it_from_the_health_page() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let up = Up::start(&[]);
    let browser = operator_browser(&up);
    browser.go(&format!("{}/health", up.url));
    browser.wait_for_text("#health-state", "Running");
    browser.screenshot("h01-health-running");

    // Two refused moments against a threshold of one trip the land.
    let (status, answer) = up.post("/api/v1/config", &json!({"key": "health_failures_per_hour_max", "value": 1}));
    assert_eq!(status, 200, "{answer}");
    for _ in 0..2 {
        let (status, _) = up
            .post("/api/v1/beings/operator/act", &json!({"verb": "do", "target": "/", "action": "no-such-operation"}));
        assert!(status >= 400);
    }
    browser.go(&format!("{}/world", up.url));
    browser.wait_for_text("#tripped-banner", "The land is tripped");
    browser.screenshot("h02-world-tripped-banner");
    browser.go(&format!("{}/health", up.url));
    browser.wait_for_text("#health-state", "Tripped by failures_per_hour");
    assert!(browser.text("#sign-failures_per_hour").contains('2'));
    browser.screenshot("h03-health-tripped");

    // An act from a page is refused, naming the sign and the way out.
    browser.go(&format!("{}/config", up.url));
    browser.clear_and_type("#value-inbox_depth_max", "12");
    browser.click("#set-inbox_depth_max");
    browser.wait_for_text("body", "tripped by its health breaker (failures_per_hour is 2");
    browser.screenshot("h04-act-refused-while-tripped");

    browser.go(&format!("{}/health", up.url));
    browser.click("#revive");
    browser.wait_for_text("#health-done", "the land is revived");
    assert!(browser.text("#revived").contains("after a trip by failures_per_hour"));
    browser.screenshot("h05-health-revived");
    let (_, health) = up.get("/api/v1/health");
    assert_eq!(health["tripped"], false, "{health}");
}

/// Cascade in the browser (docs/cascade.md): a marked space's page lists
/// the signals that arrived, a click draws a signal's tree, a drop is shown
/// with its reason, and a bad id is a page saying what is wrong.
#[test]
fn a_visitor_follows_a_cascade_from_a_space_to_its_tree() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let relay = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/relay.toml");
    let up = Up::start(&["--fixture", relay.to_str().expect("utf-8 path"), "--round-ms", "200"]);
    let browser = operator_browser(&up);
    // The kitchen is not marked; news from the hall arrives there.
    let arrived = |space: &str| {
        let (_, page) = up.get(&format!("/api/v1/spaces?path={space}"));
        page["cascade"]["arrivals"].as_array().is_some_and(|arrivals| !arrivals.is_empty())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !arrived("/house/kitchen") {
        assert!(std::time::Instant::now() < deadline, "no cascade reached the kitchen");
        std::thread::sleep(Duration::from_millis(200));
    }
    browser.go(&format!("{}/spaces?path=/house/kitchen", up.url));
    browser.wait_for_text("#cascade-marked", "Not marked for cascade");
    browser.screenshot("k01-kitchen-arrivals");
    let arrivals = browser.text("#arrivals");
    assert!(arrivals.contains("/house") && arrivals.contains("@crier"), "{arrivals}");
    browser.click("#arrivals a[href^='/cascade/']");
    browser.wait_for_text("#cascade-counts", "3 delivered, 0 dropped");
    let tree = browser.text("#cascade-tree");
    assert!(
        tree.contains("/house/attic") && tree.contains("/house/attic/loft") && tree.contains("/house/kitchen"),
        "{tree}"
    );
    browser.screenshot("k02-signal-tree");

    // One hop only: the attic's onward delivery to the loft is dropped, saying why.
    let (status, answer) = up.post("/api/v1/config", &json!({"key": "cascade_depth_max", "value": 1}));
    assert_eq!(status, 200, "{answer}");
    let dropped_tree = || {
        let (_, page) = up.get("/api/v1/spaces?path=/house");
        let signals: Vec<String> = page["cascade"]["arrivals"]
            .as_array()
            .map(|arrivals| {
                arrivals.iter().filter_map(|arrival| arrival["signal"].as_str().map(str::to_string)).collect()
            })
            .unwrap_or_default();
        signals.into_iter().find(|signal| up.get(&format!("/api/v1/cascade/{signal}")).1["signals"][0]["dropped"] == 1)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let signal = loop {
        if let Some(signal) = dropped_tree() {
            break signal;
        }
        assert!(std::time::Instant::now() < deadline, "no signal was cut at the depth limit");
        std::thread::sleep(Duration::from_millis(200));
    };
    browser.go(&format!("{}/cascade/{signal}", up.url));
    browser.wait_for_text("#cascade-tree", "dropped, depth: /house/attic/loft would be 2 hops deep, over 1");
    browser.screenshot("k03-signal-tree-with-a-drop");
    // The next round, the listeners the arrivals reached wake; the tree names
    // them. The tree reads the live land, and each woken act is sealed on its
    // own, so a page asked for between @cook's act and @ghost's names only the
    // first: wait for both (CI once caught the page in that gap).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        browser.go(&format!("{}/cascade/{signal}", up.url));
        let tree = browser.text("#cascade-tree");
        if tree.contains("woke @cook") && tree.contains("woke @ghost") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the tree never named both @cook and @ghost as woken: {tree}");
        std::thread::sleep(Duration::from_millis(200));
    }
    browser.click("a.woke");
    browser.wait_for_text("body", "cascade");
    browser.screenshot("k03b-a-woken-moment");

    browser.go(&format!("{}/cascade/not-a-fact", up.url));
    browser.wait_for_text("body", "\"not-a-fact\" is not a fact id");
    browser.screenshot("k04-bad-id");
}

/// Ownership and scoping on a space's page (docs/ownership.md): the
/// operator hands the court to @ada, names @ben a contributor and blocks an
/// extension there through the page's forms, each an act; a refused change
/// is a page saying why.
#[test]
fn an_operator_hands_a_space_over_names_a_contributor_and_blocks_an_extension_from_its_page() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let up = Up::start(&[]);
    let browser = operator_browser(&up);
    browser.go(&format!("{}/spaces?path=/court", up.url));
    browser.wait_for_text("#owner", "Unowned: any being may write here.");
    browser.screenshot("o01-court-unowned");
    browser.select("#owner-action", "set-owner");
    browser.clear_and_type("#owner-being", "@ada");
    browser.click("#owner-submit");
    browser.wait_for_text("#rules-done", "set-owner done at /court");
    assert!(browser.text("#owner").contains("Owned by @ada (named here)"));
    browser.select("#owner-action", "add-contributor");
    browser.clear_and_type("#owner-being", "ben");
    browser.click("#owner-submit");
    browser.wait_for_text("#contributors", "@ben");
    browser.clear_and_type("#scope-extension", "court");
    browser.select("#scope-value", "blocked");
    browser.click("#scope-submit");
    browser.wait_for_text("#scopes", "blocked");
    browser.screenshot("o02-court-owned-with-a-contributor-and-a-block");
    let (_, space) = up.get("/api/v1/spaces?path=/court");
    assert_eq!(space["ownership"]["owner"], "@ada", "{space}");
    assert_eq!(space["ownership"]["scopes"][0]["extension"], "court", "{space}");
    // The land's root is nobody's to hand over.
    browser.go(&format!("{}/spaces?path=/", up.url));
    browser.select("#owner-action", "set-owner");
    browser.clear_and_type("#owner-being", "ada");
    browser.click("#owner-submit");
    browser.wait_for_text("body", "set-owner refuses the land's system space /");
    browser.screenshot("o03-root-refused");
}

/// Canopy's peers page (docs/canopy.md): an operator adds a land by URL
/// and sees it greeted and up, sees a refusal's reason, and removes it.
#[test]
fn an_operator_adds_a_land_as_a_peer_watches_it_and_removes_it_from_the_peers_page() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let (up, other) = (Up::start(&[]), Up::start(&[]));
    let other_id = other.get("/canopy/v1/land").1["land"].as_str().expect("a land id").to_string();
    let short: String = other_id.chars().take(12).collect();
    let browser = operator_browser(&up);
    browser.go(&format!("{}/peers", up.url));
    browser.wait_for_text("#no-peers", "No peers yet");
    assert!(browser.text("#this-land-url").starts_with("http://127.0.0.1:"), "this land's URL is shown");
    browser.screenshot("p01-peers-none");

    // A URL that is no land is refused naming why; nothing is recorded.
    browser.clear_and_type("#peer-url", "http://127.0.0.1:9");
    browser.click("#add");
    browser.wait_for_text("body", "did not answer");
    browser.screenshot("p02-peers-unreachable");
    assert!(up.get("/api/v1/peers").1["peers"].as_array().is_some_and(Vec::is_empty));

    // The other land does not take first contact: added, not greeted, with the reason.
    browser.go(&format!("{}/peers", up.url));
    browser.clear_and_type("#peer-url", &other.url);
    browser.click("#add");
    browser.wait_for_text("#peers-done", "did not answer the greeting yet");
    let row = browser.text(&format!("#peer-{short}"));
    assert!(row.contains("down") && row.contains("canopy_first_contacts_per_hour_max"), "{row}");
    browser.screenshot("p03-peers-added-refused");

    // The other operator adds this land back: the greeting makes it up here.
    let (status, added) = other.post("/api/v1/peers", &json!({"url": up.url}));
    assert_eq!(status, 200, "{added}");
    browser.go(&format!("{}/peers", up.url));
    browser.wait_for_text(&format!("#peer-{short}"), "up");
    browser.screenshot("p04-peers-up");

    browser.click(&format!("#remove-{short}"));
    browser.wait_for_text("#peers-done", "removed");
    browser.wait_for_text("#no-peers", "No peers yet");
    browser.screenshot("p05-peers-removed");
}

/// Following a land from the peers page: the Follow button starts the
/// pull, the row shows the mirror catching up, the mirror's pages list the
/// followed land's beings and a reel fact by fact, and Stop following keeps
/// the mirror.
#[test]
fn an_operator_follows_a_land_from_the_peers_page_and_reads_its_mirror() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let (up, other) = (Up::start(&[]), Up::start(&[]));
    for (from, to) in [(&up, &other), (&other, &up)] {
        let (status, added) = from.post("/api/v1/peers", &json!({"url": to.url}));
        assert_eq!(status, 200, "{added}");
    }
    let other_id = other.get("/canopy/v1/land").1["land"].as_str().expect("a land id").to_string();
    let short: String = other_id.chars().take(12).collect();
    let browser = operator_browser(&up);
    browser.go(&format!("{}/peers", up.url));
    browser.wait_for_text(&format!("#peer-{short}"), "none");
    browser.click(&format!("#follow-{short}"));
    browser.wait_for_text("#peers-done", "following land");
    let started = std::time::Instant::now();
    loop {
        browser.go(&format!("{}/peers", up.url));
        if browser.text(&format!("#peer-{short}")).contains("caught-up") {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the mirror never caught up");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    assert!(browser.text(&format!("#peer-{short}")).contains("Stop following"));
    browser.screenshot("p08-peers-following");

    browser.click(&format!("#mirror-{short}"));
    browser.wait_for_text("#mirror-facts", "facts");
    assert!(browser.text("#mirror-beings").contains("@ada"), "the followed land's beings are listed");
    browser.screenshot("p09-mirror");
    browser.go(&format!("{}/mirrors/{other_id}/beings/@reality", up.url));
    browser.wait_for_text("#mirror-reel-facts", "genesis");
    browser.screenshot("p10-mirror-reel");

    // One being of the land alone, by its name there.
    browser.go(&format!("{}/peers", up.url));
    browser.clear_and_type(&format!("#follow-being-{short}"), "@ada");
    browser.click(&format!("#follow-being-button-{short}"));
    browser.wait_for_text("#peers-done", "following being");
    let started = std::time::Instant::now();
    loop {
        browser.go(&format!("{}/peers", up.url));
        if browser.text(&format!("#peer-{short}")).contains("facts, caught-up") {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "@ada's mirror never caught up");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    browser.screenshot("p12-peers-following-a-being");

    browser.click(&format!("#follow-{short}"));
    browser.wait_for_text("#peers-done", "its mirror stays");
    assert!(browser.text(&format!("#peer-{short}")).contains("Follow"));
    browser.screenshot("p11-peers-unfollowed");
}

/// Canopy's summons on the peers page: a summons waiting for a stopped
/// peer is listed in the outbox, and a summons for no being of the other
/// land shows there among the summons refused, with the reason.
#[test]
fn the_peers_page_shows_summons_waiting_for_a_peer_and_summons_refused_with_why() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let world = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/canopy/world.toml");
    let start = || Up::start(&["--fixture", world.to_str().expect("utf-8 path")]);
    let (up, mut other) = (start(), start());
    for (from, to) in [(&up, &other), (&other, &up)] {
        let (status, added) = from.post("/api/v1/peers", &json!({"url": to.url}));
        assert_eq!(status, 200, "{added}");
    }
    let other_id = other.get("/canopy/v1/land").1["land"].as_str().expect("a land id").to_string();
    // Nobody is @nobody over there: the other land refuses it and says why.
    let (status, sent) = up.post(
        "/api/v1/beings/ada/act",
        &json!({"verb": "summon", "target": format!("@nobody@{}", &other_id[..10]), "content": "anyone?"}),
    );
    assert_eq!(status, 200, "{sent}");
    let browser = Browser::start(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/portal-screenshots"));
    browser.log_in(&other.url, &other.token);
    let started = std::time::Instant::now();
    loop {
        browser.go(&format!("{}/peers", other.url));
        if browser.text("body").contains("no being @nobody") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the refusal never showed");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(browser.text("#summons-refused").contains("no being @nobody"));
    browser.screenshot("p06-peers-summons-refused");

    // The other land stops: a summons for @bo there waits in this land's outbox.
    other.stop();
    let (status, sent) = up.post(
        "/api/v1/beings/ada/act",
        &json!({"verb": "summon", "target": format!("@bo@{other_id}"), "content": "are you there?"}),
    );
    assert_eq!(status, 200, "{sent}");
    let browser = operator_browser(&up);
    browser.go(&format!("{}/peers", up.url));
    browser.wait_for_text("#outbox", "@ada to");
    assert!(browser.text("#outbox").contains(&format!("@bo@{other_id}")));
    browser.screenshot("p07-peers-outbox");
}

/// A being that moved (`seed move`): its page on the land it left says
/// where it went, and its page on the land it moved to says where it came
/// from, and that it lives there.
#[test]
fn a_moved_beings_pages_say_where_it_went_and_where_it_came_from() {
    if !crate::opted_in("SEED_TEST_BROWSER", "the portal in headless Chromium") {
        return;
    }
    let fixture = |name: &str| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/canopy").join(name).display().to_string()
    };
    let (travellers, correspondents) = (fixture("travellers.toml"), fixture("world.toml"));
    let (mut old_home, new_home) = (Up::start(&["--fixture", &travellers]), Up::start(&["--fixture", &correspondents]));
    for (from, to) in [(&old_home, &new_home), (&new_home, &old_home)] {
        let (status, added) = from.post("/api/v1/peers", &json!({"url": to.url}));
        assert_eq!(status, 200, "{added}");
    }
    old_home.stop();
    let moved = common::seed(&old_home.land(), &["move", "@cy", "--to", &new_home.url]);
    assert!(moved.status.success(), "{}", common::stderr(&moved));
    assert!(common::stdout(&moved).contains("@cy moved to land"), "{}", common::stdout(&moved));
    old_home.restart_at_same_port(&["--fixture", &travellers]);

    let browser = operator_browser(&old_home);
    browser.go(&format!("{}/beings/cy", old_home.url));
    browser.wait_for_text("#row-moved", "to land");
    assert_eq!(browser.text("#row-ended"), "true");
    browser.screenshot("p13-being-moved-away");

    let browser = operator_browser(&new_home);
    browser.go(&format!("{}/beings/cy", new_home.url));
    browser.wait_for_text("#row-moved", "here from land");
    assert_eq!(browser.text("#row-parent"), "@operator");
    browser.screenshot("p14-being-moved-in");
}
