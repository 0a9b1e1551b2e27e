//! Tool calls through the MCP edge against the same verb through the
//! portal's JSON API, in the same run: `seed up` on the MCP fixture
//! (tests/fixtures/mcp), `@pilot` calling `see @crew`, each call one moment
//! sealed on its reel and durable before it is answered. The reference is
//! `POST /api/v1/beings/pilot/act`; the measured is `tools/call` of the
//! `see` tool at `/mcp` (an `initialize` session of protocol 2025-11-25 per
//! client, its answers read off the SSE stream the SDK sends). One client
//! calling in a loop gives the rate; 20 clients at once the latency under
//! load (p50, p99). Figures go in docs/performance.md.

#[path = "common/up.rs"]
mod up;

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use up::Up;

/// A benchmark measures on the allocator the `seed` binary uses.
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

/// How long each measurement calls for.
const CALL_SECONDS: u64 = 10;
/// The clients calling at once for the latency under load.
const CONCURRENT_CLIENTS: usize = 20;

fn http() -> reqwest::blocking::Client {
    seed_portal::tls::install_crypto_provider();
    reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().expect("an HTTP client")
}

/// One way of calling the verb: a client's setup, then one call.
trait Caller: Send {
    fn call(&mut self);
}

struct ApiCaller {
    http: reqwest::blocking::Client,
    url: String,
    token: String,
}

impl Caller for ApiCaller {
    fn call(&mut self) {
        let response = self
            .http
            .post(format!("{}/api/v1/beings/pilot/act", self.url))
            .bearer_auth(&self.token)
            .body(json!({"verb": "see", "address": "@crew"}).to_string())
            .send()
            .expect("the API answered");
        assert_eq!(response.status().as_u16(), 200, "{:?}", response.text());
    }
}

struct McpCaller {
    http: reqwest::blocking::Client,
    endpoint: String,
    token: String,
    session: String,
    next_id: u64,
}

impl McpCaller {
    fn open(url: &str, token: &str) -> McpCaller {
        let http = http();
        let endpoint = format!("{url}/mcp?being=pilot");
        let mut caller = McpCaller { http, endpoint, token: token.to_string(), session: String::new(), next_id: 1 };
        let (session, _) = caller.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}));
        caller.session = session;
        caller.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        caller
    }

    /// POSTs one message: the session id and the answer (from a JSON body
    /// or the `data:` line of an SSE stream).
    fn post(&self, message: &Value) -> (String, Value) {
        let mut request = self
            .http
            .post(&self.endpoint)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session).header("mcp-protocol-version", "2025-11-25");
        }
        let response = request.send().expect("/mcp answered");
        assert!(response.status().is_success(), "/mcp: {}", response.status());
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .unwrap_or(&self.session)
            .to_string();
        let text = response.text().unwrap_or_default();
        let answer = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .chain(std::iter::once(text.as_str()))
            .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok().filter(|value| value.get("id").is_some()))
            .unwrap_or(Value::Null);
        (session, answer)
    }
}

impl Caller for McpCaller {
    fn call(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let (_, answer) = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "see", "arguments": {"address": "@crew"}}}));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
}

struct Measured {
    calls_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// `clients` callers calling for `CALL_SECONDS` at once.
fn measure(callers: Vec<Box<dyn Caller>>) -> Measured {
    let started = Instant::now();
    let until = started + Duration::from_secs(CALL_SECONDS);
    let threads: Vec<_> = callers
        .into_iter()
        .map(|mut caller| {
            std::thread::spawn(move || {
                let mut latencies = Vec::new();
                while Instant::now() < until {
                    let call = Instant::now();
                    caller.call();
                    latencies.push(call.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> =
        threads.into_iter().flat_map(|thread| thread.join().expect("a caller")).collect();
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let quantile = |q: f64| {
        let index = ((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1));
        latencies.get(index).map_or(f64::NAN, |latency| latency.as_secs_f64() * 1000.0)
    };
    Measured { calls_per_second: latencies.len() as f64 / elapsed, p50_ms: quantile(0.50), p99_ms: quantile(0.99) }
}

fn report(name: &str, measured: &Measured, reference: f64) {
    println!(
        "{name:<40} {:>8.0} calls/s ({:>5.1}% of the API)  p50 {:>7.2} ms  p99 {:>7.2} ms",
        measured.calls_per_second,
        100.0 * measured.calls_per_second / reference,
        measured.p50_ms,
        measured.p99_ms
    );
}

fn main() {
    seed::configure_allocator();
    // `cargo bench` passes --bench; `cargo test --benches` runs us too: only call under --bench.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let land = Up::start(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp/mcp.toml"), Stdio::null());
    let api = |land: &Up| -> Box<dyn Caller> {
        Box::new(ApiCaller { http: http(), url: land.url.clone(), token: land.token.clone() })
    };
    let mcp = |land: &Up| -> Box<dyn Caller> { Box::new(McpCaller::open(&land.url, &land.token)) };
    println!("a verb sealed per call (see @crew), {CALL_SECONDS} s per measurement");
    let api_one = measure(vec![api(&land)]);
    let mcp_one = measure(vec![mcp(&land)]);
    let api_many = measure((0..CONCURRENT_CLIENTS).map(|_| api(&land)).collect());
    let mcp_many = measure((0..CONCURRENT_CLIENTS).map(|_| mcp(&land)).collect());
    report("JSON API, 1 client (reference)", &api_one, api_one.calls_per_second);
    report("/mcp tools/call, 1 client", &mcp_one, api_one.calls_per_second);
    report(&format!("JSON API, {CONCURRENT_CLIENTS} clients"), &api_many, api_many.calls_per_second);
    report(&format!("/mcp tools/call, {CONCURRENT_CLIENTS} clients"), &mcp_many, api_many.calls_per_second);
}
