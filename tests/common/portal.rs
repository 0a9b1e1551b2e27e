//! A `seed up` process on a fresh land, on a free loopback port.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running portal; killed when dropped.
pub struct Up {
    pub child: Child,
    pub url: String,
    pub token: String,
    pub dir: tempfile::TempDir,
    pub http: reqwest::blocking::Client,
}

/// Where a test's `seed up` writes its stderr, in its temporary folder.
pub const UP_LOG_FILE: &str = "seed-up.log";

/// How long a test's portal may live at most (it stops by itself after).
pub const TEST_PORTAL_LIFETIME_S: u64 = 600;

/// The tests' HTTP client: redirects are answers to check, not to follow.
fn test_client() -> reqwest::blocking::Client {
    crate::common::blocking_http()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client")
}

impl Up {
    pub fn start(extra: &[&str]) -> Up {
        Up::start_with_env(extra, &[])
    }

    /// `start` with environment variables set for the process (`RUST_LOG`
    /// is `debug` unless given here).
    pub fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Up {
        let dir = tempfile::tempdir().expect("temporary folder");
        let (child, url, token) = Up::spawn(&dir, extra, None, env);
        let http = test_client();
        Up { child, url, token, dir, http }
    }

    /// `seed up` on a land already in `dir` (as `dir/land`), whose operator
    /// token the caller knows (from `seed token`).
    pub fn open(dir: tempfile::TempDir, token: String) -> Up {
        Up::open_with(dir, token, &[])
    }

    /// `open` with more arguments for `seed up` (`--fixture FILE`).
    pub fn open_with(dir: tempfile::TempDir, token: String, extra: &[&str]) -> Up {
        let (child, url, token) = Up::spawn(&dir, extra, Some(token), &[]);
        let http = test_client();
        Up { child, url, token, dir, http }
    }

    /// Sets the land's configuration key `key` to `value` as the operator
    /// (`POST /api/v1/config`): in force from the next request or moment.
    pub fn set_config(&self, key: &str, value: u64) {
        let (status, answer) = self.post("/api/v1/config", &serde_json::json!({"key": key, "value": value}));
        assert_eq!(status, 200, "{key} = {value}: {answer}");
    }

    /// Stops the process and starts `seed up` again on the same land.
    pub fn restart(&mut self, extra: &[&str]) {
        self.stop();
        let (child, url, _) = Up::spawn(&self.dir, extra, Some(self.token.clone()), &[]);
        self.child = child;
        self.url = url;
    }

    fn spawn(
        dir: &tempfile::TempDir,
        extra: &[&str],
        known_token: Option<String>,
        env: &[(&str, &str)],
    ) -> (Child, String, String) {
        let land = dir.path().join("land");
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/court.toml");
        let lifetime = TEST_PORTAL_LIFETIME_S.to_string();
        let mut arguments = vec!["--land", land.to_str().expect("utf-8 path"), "up"];
        // The court unless the caller names a fixture (or leaves it to the
        // land's recorded one with `--fixture` of its own).
        if !extra.contains(&"--fixture") {
            arguments.extend(["--fixture", fixture.to_str().expect("utf-8 path")]);
        }
        // A free port unless the caller names the address (a land that must
        // come back where its peers know it).
        if !extra.contains(&"--addr") {
            arguments.extend(["--addr", "127.0.0.1:0"]);
        }
        arguments.extend(["--lifetime-s", &lifetime]);
        arguments.extend_from_slice(extra);
        // Its log lines, kept for the tests that read them (and printed if
        // the test fails); appended to across restarts.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join(UP_LOG_FILE))
            .expect("a log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_seed"))
            .args(&arguments)
            .env("RUST_LOG", "debug")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("seed up starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let (mut url, mut token) = (None, known_token);
        while url.is_none() || token.is_none() {
            let line = lines.next().expect("seed up printed its URL and token").expect("readable stdout");
            if let Some(rest) = line.strip_prefix("seed is up: ") {
                url = Some(rest.trim_end_matches('/').to_string());
            }
            if let Some(rest) = line.strip_prefix("operator token (shown once, keep it): ") {
                token = Some(rest.to_string());
            }
        }
        // Keep draining stdout so the process never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        (child, url.expect("url"), token.expect("token"))
    }

    /// Everything `seed up` logged so far (at debug level and above).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(UP_LOG_FILE)).unwrap_or_default()
    }

    pub fn land(&self) -> PathBuf {
        self.dir.path().join("land")
    }

    /// GET with the operator's token as a bearer: (status, JSON body).
    pub fn get(&self, path: &str) -> (u16, Value) {
        let response =
            self.http.get(format!("{}{path}", self.url)).bearer_auth(&self.token).send().expect("GET answered");
        let status = response.status().as_u16();
        (status, response.json().unwrap_or(Value::Null))
    }

    /// GET a page with the operator's token as a bearer: (status, HTML).
    pub fn page(&self, path: &str) -> (u16, String) {
        let response =
            self.http.get(format!("{}{path}", self.url)).bearer_auth(&self.token).send().expect("GET answered");
        (response.status().as_u16(), response.text().unwrap_or_default())
    }

    /// POST a url-encoded form (as a browser would) with a session cookie
    /// from [`Up::login`]; the form carries its own `csrf` field.
    pub fn post_form(&self, cookie: &str, path: &str, form: &impl serde::Serialize) -> reqwest::blocking::Response {
        self.http
            .post(format!("{}{path}", self.url))
            .header("cookie", cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).expect("a form"))
            .send()
            .expect("POST answered")
    }

    /// POST JSON with the operator's token as a bearer.
    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .body(body.to_string())
            .send()
            .expect("POST answered");
        let status = response.status().as_u16();
        (status, response.json().unwrap_or(Value::Null))
    }

    /// DELETE with the operator's token as a bearer.
    pub fn delete(&self, path: &str) -> (u16, Value) {
        let response =
            self.http.delete(format!("{}{path}", self.url)).bearer_auth(&self.token).send().expect("DELETE answered");
        let status = response.status().as_u16();
        (status, response.json().unwrap_or(Value::Null))
    }

    /// The port this portal listens on.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().and_then(|port| port.parse().ok()).expect("a port in the URL")
    }

    /// Stops the process and starts it again on the same land and port.
    pub fn restart_at_same_port(&mut self, extra: &[&str]) {
        let address = format!("127.0.0.1:{}", self.port());
        let mut arguments = vec!["--addr", address.as_str()];
        arguments.extend_from_slice(extra);
        self.restart(&arguments);
    }

    pub fn cursor(&self) -> u64 {
        self.get("/api/v1/world").1["cursor"].as_u64().expect("a cursor")
    }

    /// Waits until `check` holds for the being's JSON (or panics after `most`).
    pub fn wait_for_being(&self, name: &str, most: Duration, check: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, being) = self.get(&format!("/api/v1/beings/{name}"));
            if status == 200 && check(&being) {
                return being;
            }
            assert!(started.elapsed() < most, "@{name} never reached the expected state: {being}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the process (as ctrl-c would not reach it here: kill, then wait).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// A session cookie and its CSRF token, from the API login.
    pub fn login(&self) -> (String, String) {
        let response = self
            .http
            .post(format!("{}/api/v1/login", self.url))
            .body(json!({"token": self.token}).to_string())
            .send()
            .expect("login answered");
        assert_eq!(response.status().as_u16(), 200);
        let cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|value| value.to_str().ok())
            .expect("a session cookie")
            .to_string();
        let csrf = response.json::<Value>().expect("JSON")["csrf"].as_str().expect("a csrf token").to_string();
        (cookie.split(';').next().expect("name=value").to_string(), csrf)
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("--- seed up's log ---\n{}", self.log());
        }
    }
}
