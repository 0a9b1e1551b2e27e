//! An in-process OpenAI-compatible endpoint (axum on 127.0.0.1) for tests and
//! benchmarks: it answers `POST /v1/chat/completions` from a queue of
//! scripted replies and injects faults (429 with Retry-After, 500, a hang,
//! malformed JSON, an empty choice list, bad tool arguments, a tool that was
//! not offered). With the queue empty it answers at once with a call of the
//! first offered tool, arguments taken from the tool's schema. It stops when
//! dropped.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A tool call with these arguments (a JSON text, sent as given), and prose beside it.
    Tool { name: String, arguments: String, prose: Option<String> },
    /// Prose and no tool call.
    Prose(String),
    /// A 429 with `Retry-After: seconds`.
    TooManyRequests { retry_after_s: u64 },
    /// A 500.
    ServerError,
    /// Waits this long before answering (as the default would).
    Hang { ms: u64 },
    /// A 200 whose body is not JSON.
    Malformed,
    /// A 200 with `"choices": []`.
    EmptyChoices,
    /// Anything: a status and a body.
    Raw { status: u16, body: String },
}

impl Reply {
    pub fn tool(name: &str, arguments: Json) -> Reply {
        Reply::Tool { name: name.into(), arguments: arguments.to_string(), prose: None }
    }
}

/// What the endpoint received: the body and whether a bearer key came with it.
#[derive(Debug, Clone)]
pub struct Received {
    pub body: Json,
    pub authorization: Option<String>,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
    /// Keep received bodies (tests) or only count them (benchmarks).
    keep_bodies: bool,
    count: std::sync::atomic::AtomicU64,
    /// Embedding requests (not counted in `count`).
    embeddings: std::sync::atomic::AtomicU64,
    in_flight: std::sync::atomic::AtomicU64,
    in_flight_max: std::sync::atomic::AtomicU64,
}

/// The running endpoint.
pub struct FakeEndpoint {
    shared: Arc<Shared>,
    address: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeEndpoint {
    /// Starts on a free port of 127.0.0.1, keeping every request it receives.
    pub fn start() -> std::io::Result<FakeEndpoint> {
        FakeEndpoint::start_with(true)
    }

    /// Starts without keeping request bodies (for benchmarks).
    pub fn start_counting() -> std::io::Result<FakeEndpoint> {
        FakeEndpoint::start_with(false)
    }

    fn start_with(keep_bodies: bool) -> std::io::Result<FakeEndpoint> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared { keep_bodies, ..Shared::default() });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let thread = std::thread::Builder::new().name("fake-llm".into()).spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                let app = Router::new()
                    .route("/v1/chat/completions", post(complete))
                    .route("/v1/embeddings", post(embed))
                    .with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = stopped.await;
                    })
                    .await;
            });
        })?;
        Ok(FakeEndpoint { shared, address, stop: Some(stop), thread: Some(thread) })
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Queues replies, answered in order.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.replies.lock().unwrap_or_else(|p| p.into_inner()).extend(replies);
    }

    /// Every request received so far (empty when started counting only).
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> u64 {
        self.shared.count.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many embedding requests arrived.
    pub fn embedding_count(&self) -> u64 {
        self.shared.embeddings.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The most requests it was answering at once.
    pub fn in_flight_max(&self) -> u64 {
        self.shared.in_flight_max.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Dimensions of the fake's embeddings.
pub const FAKE_EMBEDDING_DIMENSIONS: usize = 64;

/// The fake's embedding of a text: each lowercase word adds 1 to the
/// dimension its BLAKE3 names, so texts sharing words are similar (a
/// stand-in for meaning that every run computes alike).
pub fn fake_embedding(text: &str) -> Vec<f64> {
    let mut vector = vec![0.0; FAKE_EMBEDDING_DIMENSIONS];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()) {
        let hash = blake3::hash(word.to_lowercase().as_bytes());
        vector[usize::from(hash.as_bytes()[0]) % FAKE_EMBEDDING_DIMENSIONS] += 1.0;
    }
    vector
}

async fn embed(State(shared): State<Arc<Shared>>, body: axum::body::Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    shared.embeddings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Ok(request) = serde_json::from_slice::<Json>(&body) else {
        return (axum::http::StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let text = request["input"].as_str().unwrap_or_default();
    let vector = fake_embedding(text);
    axum::Json(serde_json::json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": vector}],
        "model": request["model"]}))
    .into_response()
}

impl Drop for FakeEndpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn completion(message: Json) -> Json {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{ "index": 0, "message": message, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110 },
    })
}

fn tool_message(name: &str, arguments: &str, prose: Option<&str>) -> Json {
    json!({
        "role": "assistant",
        "content": prose,
        "tool_calls": [{ "id": "call-1", "type": "function", "function": { "name": name, "arguments": arguments } }],
    })
}

/// The default answer: call the first offered tool, each required argument
/// the first entry of its enum (or a plain value of its type).
fn default_answer(request: &Json) -> Json {
    // A forced tool (`tool_choice` naming a function) is the one called.
    let forced = request["tool_choice"]["function"]["name"].as_str();
    let tools = request["tools"].as_array();
    let chosen = match forced {
        Some(name) => tools.and_then(|tools| tools.iter().find(|tool| tool["function"]["name"] == name)),
        None => tools.and_then(|tools| tools.first()),
    };
    let Some(tool) = chosen else {
        return completion(json!({ "role": "assistant", "content": "Nothing to do." }));
    };
    let function = &tool["function"];
    let mut arguments = serde_json::Map::new();
    let properties = &function["parameters"]["properties"];
    for required in function["parameters"]["required"].as_array().into_iter().flatten() {
        let Some(name) = required.as_str() else { continue };
        let schema = &properties[name];
        let value = match schema["enum"].as_array().and_then(|entries| entries.first()) {
            Some(first) => first.clone(),
            None if schema["type"] == "object" => json!({}),
            None => json!("hello"),
        };
        arguments.insert(name.to_string(), value);
    }
    let arguments = Json::Object(arguments).to_string();
    completion(tool_message(function["name"].as_str().unwrap_or("see"), &arguments, None))
}

async fn complete(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    use std::sync::atomic::Ordering;
    shared.count.fetch_add(1, Ordering::Relaxed);
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.in_flight_max.fetch_max(now, Ordering::SeqCst);
    let response = answer(&shared, &headers, &body).await;
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn answer(shared: &Shared, headers: &HeaderMap, body: &str) -> Response {
    let request: Json = serde_json::from_str(body).unwrap_or(Json::Null);
    if shared.keep_bodies {
        let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
        shared
            .received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Received { body: request.clone(), authorization });
    }
    let reply = shared.replies.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
    let json_response = |value: Json| (StatusCode::OK, [("content-type", "application/json")], value.to_string());
    match reply {
        None => json_response(default_answer(&request)).into_response(),
        Some(Reply::Tool { name, arguments, prose }) => {
            json_response(completion(tool_message(&name, &arguments, prose.as_deref()))).into_response()
        }
        Some(Reply::Prose(text)) => {
            json_response(completion(json!({ "role": "assistant", "content": text }))).into_response()
        }
        Some(Reply::TooManyRequests { retry_after_s }) => {
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", retry_after_s.to_string())], "slow down").into_response()
        }
        Some(Reply::ServerError) => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        Some(Reply::Hang { ms }) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            json_response(default_answer(&request)).into_response()
        }
        Some(Reply::Malformed) => {
            (StatusCode::OK, [("content-type", "application/json")], "{\"choices\": [").into_response()
        }
        Some(Reply::EmptyChoices) => {
            json_response(json!({ "id": "x", "object": "chat.completion", "choices": [] })).into_response()
        }
        Some(Reply::Raw { status, body }) => {
            (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body).into_response()
        }
    }
}
