//! What a land sends to another: it fetches and proves the other's
//! identity (`GET /canopy/v1/land`, its key history verified here, never
//! taken on trust), and it sends signed requests (the headers of
//! `canopy::HEADER_*` over `seed_format::canopy::CanopyRequest`).

use super::{LandIdentity, PeerCallError, CANOPY_IDENTITY_BYTES_MAX, CANOPY_IDENTITY_PATH};
use super::{HEADER_FROM, HEADER_NONCE, HEADER_SIGNATURE, HEADER_TIMESTAMP_MS, HEADER_TO};
use crate::fact::BeingId;
use ed25519_dalek::SigningKey;
use seed_format::canopy::{verify_key_history, CanopyAnswer, CanopyRequest};
use serde_json::Value as Json;
use std::time::Duration;

/// The land that signs: its id, its current key and the URL it is reached at.
#[derive(Clone)]
pub struct Signer {
    pub land: BeingId,
    pub key: SigningKey,
    pub url: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never reaches a log.
        formatter.debug_struct("Signer").field("land", &self.land).field("url", &self.url).finish_non_exhaustive()
    }
}

/// An HTTP client for calls between lands.
pub fn http_client() -> Result<reqwest::Client, PeerCallError> {
    crate::tls::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| PeerCallError::Unreachable { url: String::new(), reason: error.to_string() })
}

/// Reads at most `max` bytes of a response's body.
async fn bounded_body(url: &str, mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, PeerCallError> {
    if response.content_length().is_some_and(|len| len > max as u64) {
        return Err(PeerCallError::TooLarge { url: url.to_string(), max });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| PeerCallError::Unreachable { url: url.to_string(), reason: error.to_string() })?
    {
        if body.len() + chunk.len() > max {
            return Err(PeerCallError::TooLarge { url: url.to_string(), max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A response read as JSON, or the refusal it carries (its message, from
/// the error document both the portal and the canopy routes answer with).
async fn answer(url: &str, response: reqwest::Response, max: usize) -> Result<Json, PeerCallError> {
    let status = response.status().as_u16();
    let body = bounded_body(url, response, max).await?;
    read_answer(url, status, &body)
}

fn read_answer(url: &str, status: u16, body: &[u8]) -> Result<Json, PeerCallError> {
    let json: Option<Json> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        let message = json
            .as_ref()
            .and_then(|json| json["error"]["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(300).collect());
        return Err(PeerCallError::Refused { url: url.to_string(), status, message });
    }
    json.ok_or_else(|| PeerCallError::Malformed { url: url.to_string(), reason: "the body is not JSON".into() })
}

fn unreachable(url: &str, error: reqwest::Error) -> PeerCallError {
    let reason = if error.is_timeout() { "no answer in time".to_string() } else { error.to_string() };
    PeerCallError::Unreachable { url: url.to_string(), reason }
}

/// Fetches the identity of the land at `url` and proves it: the key
/// history must verify from the genesis whose BLAKE3 is the land id it
/// claims. Nothing the other land says about its keys is believed unproven.
pub async fn fetch_identity(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<LandIdentity, PeerCallError> {
    let endpoint = format!("{url}{CANOPY_IDENTITY_PATH}");
    let response = client.get(&endpoint).timeout(timeout).send().await.map_err(|error| unreachable(url, error))?;
    let json = answer(url, response, CANOPY_IDENTITY_BYTES_MAX).await?;
    let malformed = |reason: &str| PeerCallError::Malformed { url: url.to_string(), reason: reason.to_string() };
    let land = json["land"]
        .as_str()
        .and_then(BeingId::from_hex)
        .ok_or_else(|| malformed("`land` is not a 64-digit hex land id"))?;
    let history = json["keyHistory"].as_array().ok_or_else(|| malformed("`keyHistory` is not a list"))?;
    let envelopes = history
        .iter()
        .map(|entry| entry.as_str().and_then(|hex| hex::decode(hex).ok()))
        .collect::<Option<Vec<Vec<u8>>>>()
        .ok_or_else(|| malformed("an entry of `keyHistory` is not hex"))?;
    let keys = verify_key_history(land, &envelopes).map_err(|source| PeerCallError::Unproven {
        url: url.to_string(),
        land,
        source: Box::new(source),
    })?;
    let operator = json["operator"].as_str().and_then(BeingId::from_hex);
    Ok(LandIdentity { land, url: url.to_string(), keys, operator })
}

/// Where a signed request goes and how long and how much of an answer is awaited.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The land it is for.
    pub to: BeingId,
    /// The land's URL (`http(s)://host[:port]`).
    pub url: &'a str,
    /// The route (`/canopy/v1/hello`).
    pub path: &'a str,
    pub timeout: Duration,
    pub answer_bytes_max: usize,
    /// The key the land it is for is known by: its answer must be signed
    /// by it, or it is not believed.
    pub answer_key: [u8; 32],
}

/// Sends `body` as `call` says, signed by `signer`, and reads its JSON answer.
pub async fn signed_post(
    client: &reqwest::Client,
    signer: &Signer,
    call: Call<'_>,
    body: &Json,
) -> Result<Json, PeerCallError> {
    let Call { to, url, path, timeout, answer_bytes_max, answer_key } = call;
    let bytes = serde_json::to_vec(body).map_err(|error| PeerCallError::Signing { reason: error.to_string() })?;
    let mut nonce = [0u8; 16];
    getrandom::getrandom(&mut nonce).map_err(|error| PeerCallError::Random { reason: error.to_string() })?;
    let request = CanopyRequest::new("POST", path, signer.land, to, super::wall_clock_ms(), nonce, &bytes);
    let signature = request.sign(&signer.key).map_err(|error| PeerCallError::Signing { reason: error.to_string() })?;
    let response = client
        .post(format!("{url}{path}"))
        .timeout(timeout)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(HEADER_FROM, signer.land.to_hex())
        .header(HEADER_TO, to.to_hex())
        .header(HEADER_TIMESTAMP_MS, request.timestamp_ms.to_string())
        .header(HEADER_NONCE, hex::encode(nonce))
        .header(HEADER_SIGNATURE, hex::encode(signature))
        .body(bytes)
        .send()
        .await
        .map_err(|error| unreachable(url, error))?;
    let status = response.status().as_u16();
    let signature = response
        .headers()
        .get(super::HEADER_ANSWER_SIGNATURE)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| hex::decode(text).ok())
        .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok());
    let body = bounded_body(url, response, answer_bytes_max).await?;
    let unsigned = || PeerCallError::UnsignedAnswer { url: url.to_string() };
    let key = ed25519_dalek::VerifyingKey::from_bytes(&answer_key).map_err(|_| unsigned())?;
    let signed = CanopyAnswer::new(to, signer.land, nonce, status, &body);
    signed.check(&key, &signature.ok_or_else(unsigned)?).map_err(|_| unsigned())?;
    read_answer(url, status, &body)
}
