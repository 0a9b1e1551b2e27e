//! The operator's calls to a `seed up` the benchmarks start (`up.rs`):
//! a JSON request with its token, its answer read as JSON.

use super::up::Up;
use serde_json::Value;
use std::time::Duration;

pub fn http() -> reqwest::blocking::Client {
    seed_portal::tls::install_crypto_provider();
    reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().expect("an HTTP client")
}

/// POSTs `body` as the operator; panics unless it succeeds.
pub fn post(up: &Up, path: &str, body: &Value) -> Value {
    let response = http().post(format!("{}{path}", up.url)).bearer_auth(&up.token).json(body).send().expect("answered");
    let status = response.status();
    let answer: Value = response.json().unwrap_or(Value::Null);
    assert!(status.is_success(), "{path}: {status} {answer}");
    answer
}

pub fn get(up: &Up, path: &str) -> Value {
    http().get(format!("{}{path}", up.url)).bearer_auth(&up.token).send().expect("answered").json().expect("JSON")
}
