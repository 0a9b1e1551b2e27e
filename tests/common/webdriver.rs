//! A small W3C WebDriver client over chromedriver (JSON over HTTP): enough to
//! drive headless Chromium through the portal and take screenshots.
#![allow(dead_code)]

use base64::Engine;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The key W3C WebDriver names an element reference with.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long waits for the page may take at most.
pub const BROWSER_WAIT_MS: u64 = 15_000;

/// Whether a WebDriver error says the element was replaced by the page (a
/// live fragment fetched again) between finding it and using it: then it is
/// found again, up to `BROWSER_WAIT_MS`.
fn replaced(error: &str) -> bool {
    error.contains("stale element") || error.contains("element not interactable")
}

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::blocking::Client,
    _profile: tempfile::TempDir,
    pub screenshots: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("bound").port()
}

fn find(candidates: &[&str]) -> Option<PathBuf> {
    candidates.iter().map(PathBuf::from).find(|path| path.is_file())
}

impl Browser {
    /// Starts chromedriver and a fresh headless Chromium with its own profile.
    pub fn start(screenshots: &Path) -> Browser {
        let chromedriver = find(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"])
            .expect("chromedriver is installed (Debian: apt-get install chromium-driver; .ci/run does)");
        let chromium = find(&["/usr/bin/chromium", "/usr/lib/chromium/chromium"])
            .expect("chromium is installed (Debian: apt-get install chromium; .ci/run does)");
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let base = format!("http://127.0.0.1:{port}");
        let http = crate::common::blocking_http().timeout(Duration::from_secs(60)).build().expect("client");
        let started = Instant::now();
        while http.get(format!("{base}/status")).send().map(|r| !r.status().is_success()).unwrap_or(true) {
            assert!(started.elapsed() < Duration::from_secs(20), "chromedriver did not come up");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().expect("a profile folder");
        let arguments = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1200,1000".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": arguments},
        }}});
        let answer: Value =
            http.post(format!("{base}/session")).json(&capabilities).send().expect("a session").json().expect("JSON");
        let session =
            answer["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {answer}")).to_string();
        std::fs::create_dir_all(screenshots).expect("the screenshot folder");
        Browser { driver, base, session, http, _profile: profile, screenshots: screenshots.to_path_buf() }
    }

    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body.unwrap_or_else(|| json!({}))),
        };
        let answer: Value = request.send().expect("chromedriver answered").json().expect("JSON");
        match answer["value"].get("error") {
            Some(error) => Err(format!("WebDriver {method} {path}: {error}: {}", answer["value"]["message"])),
            None => Ok(answer["value"].clone()),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body).unwrap_or_else(|error| panic!("{error}"))
    }

    /// Finds the element and calls `path` on it, finding it again if the
    /// page replaced it in between (a live fragment).
    fn on_element(&self, css: &str, method: &str, path: &str, body: Option<Value>) -> Value {
        let started = Instant::now();
        loop {
            let element = self.find(css);
            match self.try_call(method, &format!("/element/{element}{path}"), body.clone()) {
                Ok(value) => return value,
                Err(error) if replaced(&error) => {
                    assert!(started.elapsed() < Duration::from_millis(BROWSER_WAIT_MS), "{error}");
                }
                Err(error) => panic!("{error}"),
            }
        }
    }

    pub fn go(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url})));
    }

    /// Logs in at the portal at `url` with `token` and waits for the world page.
    pub fn log_in(&self, url: &str, token: &str) {
        self.go(&format!("{url}/login"));
        self.clear_and_type("#token", token);
        self.click("#login");
        self.wait_for_text("h1", "World");
    }

    pub fn current_url(&self) -> String {
        self.call("GET", "/url", None).as_str().unwrap_or_default().to_string()
    }

    fn try_find(&self, css: &str) -> Option<String> {
        let url = format!("{}/session/{}/element", self.base, self.session);
        let answer: Value = self
            .http
            .post(url)
            .json(&json!({"using": "css selector", "value": css}))
            .send()
            .expect("answered")
            .json()
            .expect("JSON");
        answer["value"][ELEMENT_KEY].as_str().map(str::to_string)
    }

    /// The element matching `css`, waiting for it to appear.
    pub fn find(&self, css: &str) -> String {
        let started = Instant::now();
        loop {
            if let Some(element) = self.try_find(css) {
                return element;
            }
            assert!(
                started.elapsed() < Duration::from_millis(BROWSER_WAIT_MS),
                "no element {css} on {}",
                self.current_url()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn click(&self, css: &str) {
        self.on_element(css, "POST", "/click", None);
    }

    pub fn clear_and_type(&self, css: &str, text: &str) {
        self.on_element(css, "POST", "/clear", None);
        self.on_element(css, "POST", "/value", Some(json!({"text": text})));
    }

    /// Picks the `<option>` with this value in a `<select>`.
    pub fn select(&self, select_css: &str, value: &str) {
        self.click(&format!("{select_css} option[value=\"{value}\"]"));
    }

    pub fn text(&self, css: &str) -> String {
        self.on_element(css, "GET", "/text", None).as_str().unwrap_or_default().to_string()
    }

    /// The element's text, or `None` if it is not there (or was replaced
    /// between finding and reading it: live pages swap their fragments).
    pub fn try_text(&self, css: &str) -> Option<String> {
        let element = self.try_find(css)?;
        let url = format!("{}/session/{}/element/{element}/text", self.base, self.session);
        let answer: Value = self.http.get(url).send().ok()?.json().ok()?;
        answer["value"].as_str().map(str::to_string)
    }

    /// Waits until the element's text contains `needle`.
    pub fn wait_for_text(&self, css: &str, needle: &str) -> String {
        let started = Instant::now();
        loop {
            let text = self.try_text(css);
            if let Some(text) = &text {
                if text.contains(needle) {
                    return text.clone();
                }
            }
            assert!(
                started.elapsed() < Duration::from_millis(BROWSER_WAIT_MS),
                "{css} never showed {needle:?}; it shows {text:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn page_source(&self) -> String {
        self.call("GET", "/source", None).as_str().unwrap_or_default().to_string()
    }

    pub fn windows(&self) -> Vec<String> {
        self.call("GET", "/window/handles", None)
            .as_array()
            .map(|handles| handles.iter().filter_map(|h| h.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }

    pub fn window(&self) -> String {
        self.call("GET", "/window", None).as_str().unwrap_or_default().to_string()
    }

    pub fn switch_to(&self, handle: &str) {
        self.call("POST", "/window", Some(json!({"handle": handle})));
    }

    /// Closes the current window (tab).
    pub fn close_window(&self) {
        self.call("DELETE", "/window", None);
    }

    /// Scrolls the element into the middle of the window (before a screenshot).
    /// A live fragment may replace the element in between: it is found again.
    pub fn scroll_to(&self, css: &str) {
        let started = Instant::now();
        loop {
            let element = self.find(css);
            let script =
                json!({"script": "arguments[0].scrollIntoView({block: 'center'});", "args": [{ELEMENT_KEY: element}]});
            match self.try_call("POST", "/execute/sync", Some(script)) {
                Ok(_) => return,
                Err(error) if replaced(&error) => {
                    assert!(started.elapsed() < Duration::from_millis(BROWSER_WAIT_MS), "{error}");
                }
                Err(error) => panic!("{error}"),
            }
        }
    }

    /// Saves a PNG of the current window as `NAME.png`; returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let encoded = self.call("GET", "/screenshot", None);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().unwrap_or_default())
            .expect("a base64 PNG");
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG screenshot");
        let path = self.screenshots.join(format!("{name}.png"));
        std::fs::write(&path, bytes).expect("the screenshot is written");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.http.delete(format!("{}/session/{}", self.base, self.session)).send();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
