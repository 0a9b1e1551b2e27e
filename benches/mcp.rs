//! Tool calls through the MCP edge against the same verb through the
//! portal's JSON API, in the same run: `seed up` on the MCP fixture
//! (tests/fixtures/mcp), `@pilot` calling `see @crew`, each call one moment
//! sealed on its reel and durable before it is answered. The reference is
//! `POST /api/v1/beings/pilot/act`; the measured is `tools/call` of the
//! `see` tool at `/mcp`, both ways a client of the SDK speaks: an
//! `initialize` session of protocol 2025-11-25 per client (its answers read
//! off the event stream the SDK sends) and stateless requests of 2026-07-28
//! (each carrying its revision; answered as plain JSON). One client calling
//! in a loop gives the rate; 20 clients at once the latency under load
//! (p50, p99). The three ways are measured in interleaved one-second slices
//! (API, then each `/mcp` way, ten times over), so the machine's drift
//! during a run (disk syncs, other work) falls on all three alike and the
//! ratios compare like with like. Figures go in docs/performance.md.

#[path = "common/up.rs"]
mod up;

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use up::Up;

/// A benchmark measures on the allocator the `seed` binary uses.
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

/// How long one slice of one way of calling lasts.
const SLICE_MS: u64 = 1_000;
/// Slices of each way of calling, interleaved: a multiple of the three
/// ways, so each way opens as many rounds as the others.
const SLICES: usize = 24;
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

/// A client of an `initialize` session (protocol 2025-11-25).
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
        (session, answer_of(&response.text().unwrap_or_default()))
    }
}

/// The JSON-RPC answer in a body: plain JSON, or the `data:` line of an
/// event stream that carries an `id`.
fn answer_of(text: &str) -> Value {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text))
        .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok().filter(|value| value.get("id").is_some()))
        .unwrap_or(Value::Null)
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

/// A client of the stateless revision (2026-07-28): no handshake, each
/// request carrying its revision and capabilities (`_meta`) and the
/// standard headers that name its method and tool.
struct StatelessCaller {
    http: reqwest::blocking::Client,
    endpoint: String,
    token: String,
    next_id: u64,
}

impl Caller for StatelessCaller {
    fn call(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "see", "arguments": {"address": "@crew"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }}});
        let response = self
            .http
            .post(&self.endpoint)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "see")
            .body(message.to_string())
            .send()
            .expect("/mcp answered");
        let status = response.status();
        let text = response.text().unwrap_or_default();
        assert!(status.is_success(), "/mcp: {status} {text}");
        let answer = answer_of(&text);
        assert_eq!(answer["result"]["isError"], false, "{text}");
    }
}

struct Measured {
    calls_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// Each way's callers (the same count for each way) calling in
/// interleaved slices, `SLICES` rounds of one slice per way. Each round
/// starts one way later than the one before (API, session, stateless;
/// then session, stateless, API; …): every call seals a fact, so the land
/// grows through a round, and a fixed order would always measure the same
/// way on the largest land. What each way achieved over its slices.
fn measure_interleaved(mut ways: Vec<Vec<Box<dyn Caller>>>) -> Vec<Measured> {
    let mut latencies: Vec<Vec<Duration>> = vec![Vec::new(); ways.len()];
    let mut elapsed = vec![Duration::ZERO; ways.len()];
    let way_count = ways.len();
    for round in 0..SLICES {
        for turn in 0..way_count {
            let way = (round + turn) % way_count;
            let callers = &mut ways[way];
            let started = Instant::now();
            let until = started + Duration::from_millis(SLICE_MS);
            let slice: Vec<Duration> = std::thread::scope(|scope| {
                let threads: Vec<_> = callers
                    .iter_mut()
                    .map(|caller| {
                        scope.spawn(move || {
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
                threads.into_iter().flat_map(|thread| thread.join().expect("a caller")).collect()
            });
            elapsed[way] += started.elapsed();
            latencies[way].extend(slice);
        }
    }
    latencies
        .into_iter()
        .zip(elapsed)
        .map(|(mut latencies, elapsed)| {
            latencies.sort_unstable();
            let quantile = |q: f64| {
                let index = ((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1));
                latencies.get(index).map_or(f64::NAN, |latency| latency.as_secs_f64() * 1000.0)
            };
            Measured {
                calls_per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
                p50_ms: quantile(0.50),
                p99_ms: quantile(0.99),
            }
        })
        .collect()
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
    let ways = |clients: usize| -> Vec<Vec<Box<dyn Caller>>> {
        let api = (0..clients)
            .map(|_| Box::new(ApiCaller { http: http(), url: land.url.clone(), token: land.token.clone() }) as _)
            .collect();
        let session = (0..clients).map(|_| Box::new(McpCaller::open(&land.url, &land.token)) as _).collect();
        let stateless = (0..clients)
            .map(|_| {
                Box::new(StatelessCaller {
                    http: http(),
                    endpoint: format!("{}/mcp?being=pilot", land.url),
                    token: land.token.clone(),
                    next_id: 1,
                }) as _
            })
            .collect();
        vec![api, session, stateless]
    };
    println!("a verb sealed per call (see @crew), {SLICES} interleaved slices of {SLICE_MS} ms per way");
    for clients in [1, CONCURRENT_CLIENTS] {
        let measured = measure_interleaved(ways(clients));
        let reference = measured[0].calls_per_second;
        report(&format!("JSON API, {clients} client(s) (reference)"), &measured[0], reference);
        report(&format!("/mcp 2025-11-25 session, {clients} client(s)"), &measured[1], reference);
        report(&format!("/mcp 2026-07-28 stateless, {clients} client(s)"), &measured[2], reference);
    }
}
