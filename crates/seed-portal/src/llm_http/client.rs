//! The real model client: one HTTP POST to `{base_url}/chat/completions` (or
//! `{base_url}/embeddings`) per attempt, retries on 429 (honouring Retry-After) and 5xx with exponential
//! backoff and seeded jitter, a per-call timeout, failover along the
//! connection's chain, and a land-wide cap on calls in flight. The land's
//! `llm_call_timeout_ms`, `llm_call_retries_max` and
//! `llm_calls_in_flight_max` (read at the calling moment's world, carried in
//! the question) bound what a connection asks for: the smaller holds. Moments run on
//! blocking threads; `answer` hands the call to the client's own runtime and
//! waits for it.

use super::connections::{Connection, Connections};
use crate::embedding;
use crate::in_flight::InFlight;
use crate::llm::{
    Answer, CallLimits, EmbedQuestion, Embedded, LanguageModel, NoAnswer, Question, LLM_RESPONSE_BYTES_MAX,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Threads of the client's own runtime (it only waits on sockets).
pub const LLM_CLIENT_THREADS: usize = 1;

/// Calls language models over HTTP.
pub struct LlmClient {
    inner: Arc<Inner>,
    runtime: tokio::runtime::Runtime,
}

struct Inner {
    connections: Connections,
    http: reqwest::Client,
    /// Calls in flight, capped at each attempt by the smaller of the
    /// connections file's `concurrency_max` and the land's `llm_calls_in_flight_max`.
    in_flight: InFlight,
}

/// Why one attempt failed, and whether another attempt may help.
enum AttemptError {
    /// Retry on the same connection after this many milliseconds (or the backoff).
    Retry { reason: String, after_ms: Option<u64> },
    /// Give up on this connection (try the failover chain).
    GiveUp(String),
}

/// Why the client could not start.
#[derive(Debug, thiserror::Error)]
pub enum LlmClientError {
    #[error("the LLM client's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the LLM client's HTTP client: {0}")]
    Http(reqwest::Error),
}

impl LlmClient {
    pub fn new(connections: Connections) -> Result<LlmClient, LlmClientError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(LLM_CLIENT_THREADS)
            .thread_name("seed-llm")
            .enable_all()
            .build()
            .map_err(LlmClientError::Runtime)?;
        let http = crate::tls::http_client_builder().build().map_err(LlmClientError::Http)?;
        Ok(LlmClient { inner: Arc::new(Inner { connections, http, in_flight: InFlight::default() }), runtime })
    }
}

impl LanguageModel for LlmClient {
    fn answer(&self, question: &Question<'_>) -> Result<Answer, NoAnswer> {
        let first = question.connection.unwrap_or(&self.inner.connections.default).to_string();
        if !self.inner.connections.connections.contains_key(&first) {
            return Err(NoAnswer { reason: format!("no LLM connection named {first:?}"), attempts: 0 });
        }
        let prompt = question.prompt.clone();
        let (seed, limits) = (question.seed, question.limits);
        let called = self.wait(move |inner| async move {
            inner.call(&first, CHAT_PATH, |connection| prompt.request_body(&connection.params), seed, limits).await
        })?;
        Ok(Answer {
            connection: called.connection.name.clone(),
            params: called.connection.params.clone(),
            prices: called.connection.prices,
            response: called.response,
            attempts: called.attempts,
            latency_us: called.latency_us,
        })
    }

    fn embed(&self, question: &EmbedQuestion<'_>) -> Result<Embedded, NoAnswer> {
        let first = question.connection.to_string();
        if !self.inner.connections.connections.contains_key(&first) {
            return Err(NoAnswer { reason: format!("no embedding connection named {first:?}"), attempts: 0 });
        }
        let text = question.text.to_string();
        let (seed, limits) = (question.seed, question.limits);
        let called = self.wait(move |inner| async move {
            inner
                .call(
                    &first,
                    EMBEDDINGS_PATH,
                    |connection| embedding::request_body(&connection.embedding_model, &text),
                    seed,
                    limits,
                )
                .await
        })?;
        let vector = embedding::read_response(&called.response)
            .map_err(|error| NoAnswer { reason: error.to_string(), attempts: called.attempts })?;
        Ok(Embedded {
            connection: called.connection.name.clone(),
            model: called.connection.embedding_model.clone(),
            vector,
        })
    }

    fn concurrency(&self) -> usize {
        self.inner.connections.concurrency_max
    }
}

impl LlmClient {
    /// Runs `call` on the client's runtime and waits for it: moments run on
    /// blocking threads (or a test's thread), never inside this runtime.
    fn wait<F, Fut>(&self, call: F) -> Result<Called, NoAnswer>
    where
        F: FnOnce(Arc<Inner>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<Called, NoAnswer>> + Send + 'static,
    {
        let inner = self.inner.clone();
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = send.send(call(inner).await);
        });
        receive
            .recv()
            .unwrap_or_else(|_| Err(NoAnswer { reason: "the LLM client stopped mid-call".into(), attempts: 0 }))
    }
}

/// Where chat completions and embeddings are asked for, under `base_url`,
/// and the most bytes of an answer read from each.
const CHAT_PATH: (&str, usize, &str) = ("chat/completions", LLM_RESPONSE_BYTES_MAX, "llm_response_bytes_max");
const EMBEDDINGS_PATH: (&str, usize, &str) =
    ("embeddings", embedding::EMBEDDING_RESPONSE_BYTES_MAX, "EMBEDDING_RESPONSE_BYTES_MAX");

/// One answered request: the connection that answered, and the body.
struct Called {
    connection: Connection,
    response: String,
    attempts: u32,
    latency_us: u64,
}

/// Exponential backoff with jitter seeded by the moment and the attempt (no
/// unseeded randomness): base · 2^retry, capped, plus up to half of it again.
pub fn backoff_ms(connection: &Connection, retry: u32, seed: u64) -> u64 {
    let exponential = connection.backoff_base_ms.saturating_mul(1u64 << retry.min(20)).min(connection.backoff_max_ms);
    let mut input = seed.to_be_bytes().to_vec();
    input.extend_from_slice(&retry.to_be_bytes());
    let random = u64::from_be_bytes(blake3::hash(&input).as_bytes()[..8].try_into().expect("8 of 32 bytes"));
    let jitter = if exponential < 2 { 0 } else { random % (exponential / 2) };
    (exponential + jitter).min(connection.backoff_max_ms)
}

impl Inner {
    /// POSTs `body_of(connection)` to `{base_url}/{path}` along `first`'s
    /// failover chain, retrying as the connection says within the land's
    /// `limits` (the smaller of the two holds).
    async fn call(
        &self,
        first: &str,
        path: (&str, usize, &str),
        body_of: impl Fn(&Connection) -> Vec<u8>,
        seed: u64,
        limits: CallLimits,
    ) -> Result<Called, NoAnswer> {
        let started = Instant::now();
        let mut attempts = 0u32;
        let mut reasons: Vec<String> = Vec::new();
        for connection in self.connections.chain(first) {
            let body = body_of(connection);
            let mut retry = 0u32;
            loop {
                attempts += 1;
                match self.attempt(connection, path, &body, limits).await {
                    Ok(response) => {
                        return Ok(Called {
                            connection: connection.clone(),
                            response,
                            attempts,
                            latency_us: started.elapsed().as_micros() as u64,
                        })
                    }
                    Err(AttemptError::Retry { reason, after_ms })
                        if retry < connection.retries_max.min(limits.retries_max) =>
                    {
                        let wait = after_ms.map_or_else(
                            || backoff_ms(connection, retry, seed),
                            |after| after.min(connection.backoff_max_ms),
                        );
                        reasons.push(format!("{}: {reason}, retried after {wait} ms", connection.name));
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                        retry += 1;
                    }
                    Err(AttemptError::Retry { reason, .. }) | Err(AttemptError::GiveUp(reason)) => {
                        reasons.push(format!("{}: {reason}", connection.name));
                        break;
                    }
                }
            }
        }
        Err(NoAnswer { reason: reasons.join("; "), attempts })
    }

    async fn attempt(
        &self,
        connection: &Connection,
        (path, bytes_max, limit_name): (&str, usize, &str),
        body: &[u8],
        limits: CallLimits,
    ) -> Result<String, AttemptError> {
        // Held for the attempt only: a being waiting out a backoff takes no slot.
        let _slot = self.in_flight.acquire(self.connections.concurrency_max.min(limits.in_flight_max)).await;
        let (timeout_ms, timeout_name) = limits.timeout_ms_within(connection.timeout_ms, "llm_call_timeout_ms");
        let timeout = Duration::from_millis(timeout_ms);
        let mut request = self
            .http
            .post(format!("{}/{path}", connection.base_url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(timeout)
            .body(body.to_vec());
        if let Some(key) = &connection.key {
            request = request.bearer_auth(key.expose());
        }
        let timed_out = || AttemptError::GiveUp(format!("timed out after {timeout_ms} ms ({timeout_name})"));
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(error) if error.is_timeout() => return Err(timed_out()),
            // Refused or reset: the server may be starting or restarting.
            Err(error) if error.is_connect() => {
                return Err(AttemptError::Retry {
                    reason: format!("cannot connect ({})", plain(&error)),
                    after_ms: None,
                })
            }
            Err(error) => return Err(AttemptError::GiveUp(format!("request failed ({})", plain(&error)))),
        };
        let status = response.status();
        if status.as_u16() == 429 {
            let after_ms = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|text| text.trim().parse::<u64>().ok())
                .map(|seconds| seconds.saturating_mul(1000));
            return Err(AttemptError::Retry { reason: "429 too many requests".into(), after_ms });
        }
        if status.is_server_error() {
            return Err(AttemptError::Retry { reason: format!("status {status}"), after_ms: None });
        }
        if !status.is_success() {
            return Err(AttemptError::GiveUp(format!("status {status}")));
        }
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > bytes_max {
                        return Err(AttemptError::GiveUp(format!(
                            "the response is larger than {bytes_max} bytes ({limit_name})"
                        )));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(error) if error.is_timeout() => return Err(timed_out()),
                Err(error) => {
                    return Err(AttemptError::GiveUp(format!("reading the response failed ({})", plain(&error))))
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| AttemptError::GiveUp("the response is not UTF-8".into()))
    }
}

/// An HTTP error without its URL's query (a key must never ride in a URL,
/// but a reason printed into traces should not carry one if it did).
fn plain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        let mut shown = url.clone();
        shown.set_query(None);
        text = text.replace(url.as_str(), shown.as_str());
    }
    text
}
