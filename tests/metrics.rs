//! `/metrics` (docs/portal.md, "Metrics"): the operator's only; after the
//! land has run moments, every family the portal promises is there, and
//! (with `SEED_TEST_PROMETHEUS=1`) the scrape is read by the Prometheus
//! project's own parser (`prometheus_client`, installed by
//! `scripts/prometheus-parse` under ~/.cache/seed), which must accept all
//! of it and find the counts the land's moments made.

use crate::common::portal::Up;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

/// GET /metrics with `token` (none: no Authorization header).
fn scrape(up: &Up, token: Option<&str>) -> (u16, String, String) {
    let mut request = up.http.get(format!("{}/metrics", up.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().expect("/metrics answered");
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    (status, kind, response.text().unwrap_or_default())
}

/// The scrape as the Prometheus client library parses it.
fn parsed(text: &str) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/prometheus-parse");
    let mut child = Command::new(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scripts/prometheus-parse runs");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("the scrape written");
    let output = child.wait_with_output().expect("the parser ends");
    assert!(output.status.success(), "the parser refused the scrape: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("the parser's JSON")
}

fn sample_value(families: &Value, sample: &str, labels: &Value) -> Option<f64> {
    families["families"]
        .as_array()?
        .iter()
        .flat_map(|family| family["samples"].as_array().into_iter().flatten())
        .find_map(|found| {
            let fits = found["name"] == sample
                && labels
                    .as_object()
                    .is_none_or(|wanted| wanted.iter().all(|(key, value)| &found["labels"][key] == value));
            fits.then(|| found["value"].as_f64()).flatten()
        })
}

#[test]
fn the_operator_scrapes_the_lands_metrics_and_a_prometheus_parser_reads_them() {
    let up = Up::start(&["--round-ms", "100"]);
    // A few moments: two acts of the operator, one refused.
    for content in ["one", "two"] {
        let (status, answer) =
            up.post("/api/v1/beings/operator/act", &json!({"verb": "summon", "target": "@ada", "content": content}));
        assert_eq!(status, 200, "{answer}");
    }
    let (status, _) =
        up.post("/api/v1/beings/operator/act", &json!({"verb": "do", "target": "/", "action": "no-such-operation"}));
    assert!(status >= 400);

    // Only the operator: no token 401, a wrong one 401, a person's 403.
    assert_eq!(scrape(&up, None).0, 401);
    assert_eq!(scrape(&up, Some("seed-op-0000")).0, 401);
    let (status, invited) = up.post("/api/v1/accounts", &json!({"account": "ann"}));
    assert_eq!(status, 201, "{invited}");
    let (status, _, body) = scrape(&up, invited["token"].as_str());
    assert_eq!(status, 403, "{body}");

    let before = up.cursor();
    let (status, kind, text) = scrape(&up, Some(&up.token));
    let after = up.cursor();
    assert_eq!(status, 200, "{text}");
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    for family in [
        "seed_moments_total",
        "seed_moment_beat_seconds_bucket",
        "seed_facts_sealed_total",
        "seed_land_facts",
        "seed_store_appends_waiting",
        "seed_health_score_permille",
        "seed_land_tripped",
        "seed_beings",
        "seed_inbox_summons",
        "seed_approvals_waiting",
        "seed_hook_breakers_open",
        "seed_store_bytes",
    ] {
        assert!(text.lines().any(|line| line.starts_with(family)), "{family} in:\n{text}");
    }
    assert!(!text.contains(&up.token), "the token never appears");

    if !crate::opted_in("SEED_TEST_PROMETHEUS", "parsing /metrics with the Prometheus client library") {
        return;
    }
    let families = parsed(&text);
    let acts = sample_value(&families, "seed_moments_total", &json!({"outcome": "act"})).expect("acts counted");
    assert!(acts >= 2.0, "{acts}");
    let failures = sample_value(&families, "seed_moments_total", &json!({"outcome": "failure"})).expect("failures");
    assert!(failures >= 1.0, "{failures}");
    let facts = sample_value(&families, "seed_land_facts", &Value::Null).expect("facts");
    assert!((before..=after).contains(&(facts as u64)), "the land log's length: {facts} in {before}..={after}");
    // This process sealed every act and failure-free moment's fact since it started.
    let sealed = sample_value(&families, "seed_facts_sealed_total", &Value::Null).expect("facts sealed");
    assert!(sealed >= acts && sealed <= facts, "{sealed} sealed, {acts} acts, {facts} in the land");
    let waiting = sample_value(&families, "seed_store_appends_waiting", &Value::Null).expect("appends waiting");
    assert!(waiting < 1024.0, "{waiting}");
    assert_eq!(sample_value(&families, "seed_land_tripped", &Value::Null), Some(0.0));
    let score = sample_value(&families, "seed_health_score_permille", &Value::Null).expect("a score");
    assert!((0.0..=1000.0).contains(&score), "a healthy land's score: {score}");
    let beings = sample_value(&families, "seed_beings", &Value::Null).expect("beings");
    assert!(beings >= 5.0, "{beings}");
    assert!(sample_value(&families, "seed_store_bytes", &Value::Null).expect("bytes") > 0.0);
    // A histogram: its +Inf bucket counts every observation of the beat.
    let total_count =
        sample_value(&families, "seed_moment_beat_seconds_count", &json!({"beat": "total"})).expect("count");
    let inf = sample_value(&families, "seed_moment_beat_seconds_bucket", &json!({"beat": "total", "le": "+Inf"}))
        .expect("+Inf bucket");
    assert_eq!(total_count, inf);
    assert!(total_count >= acts + failures, "{total_count}");
}
