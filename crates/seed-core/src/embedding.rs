//! Embeddings, optional and recorded (docs/memory.md, "Embeddings").
//!
//! A land that names an embedding connection (the configuration key
//! [`EMBEDDING_CONNECTION_CONFIG_KEY`]) gets one vector per act: computed
//! after the act is sealed (never on its write path) and sealed on the
//! actor's reel in an `embedding` fact of its own ([`EmbeddingBody`]),
//! quantised to `i8`. A `half` or `inward` moment's recall query is embedded
//! too, and the vector recorded in the act ([`QueryVector`]). Similarity is
//! an integer dot product ([`similarity_milli`]), so replay never calls the
//! model and every CPU ranks alike. Reading a model's floats into integers
//! ([`quantise`]) happens once, when the answer arrives; what is stored and
//! compared are the integers.

use crate::fact::FactId;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// The fact kind of an act's vector.
pub const KIND_EMBEDDING: &str = "embedding";
/// The land configuration key naming the embedding connection.
pub const EMBEDDING_CONNECTION_CONFIG_KEY: &str = "embedding_connection";
/// The most dimensions a vector may have.
pub const EMBEDDING_DIMENSIONS_MAX: usize = 4096;
/// The most characters of an act's text that are embedded.
pub const EMBEDDING_TEXT_CHARS_MAX: usize = 2_000;
/// The largest embedding response read, in bytes (a server answering one
/// vector per token sends far more than its vector).
pub const EMBEDDING_RESPONSE_BYTES_MAX: usize = 8 * 1024 * 1024;
/// The largest component of a quantised unit vector.
pub const QUANTISED_ONE: i32 = 127;

/// The body of an `embedding` fact: the vector of the act `fact` of the
/// same reel. Fields in canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingBody {
    /// The act embedded.
    pub fact: FactId,
    /// Its unit vector, each component times [`QUANTISED_ONE`], as bytes
    /// (two's complement `i8`).
    #[serde(with = "serde_bytes")]
    pub vector: Vec<u8>,
    pub connection: String,
    pub model: String,
}

/// A recall query's vector, as the act records it (replay gives it back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryVector {
    pub connection: String,
    pub model: String,
    /// The vector (as in [`EmbeddingBody`]); empty when no answer came.
    #[serde(with = "serde_bytes")]
    pub vector: Vec<u8>,
    /// Why no vector came (recall was lexical only).
    pub failure: Option<String>,
}

/// A vector as the world keeps it (shared by every clone of the world),
/// written to a snapshot as a byte string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVector(pub std::sync::Arc<[i8]>);

impl Serialize for StoredVector {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&to_bytes(&self.0))
    }
}

impl<'de> Deserialize<'de> for StoredVector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<StoredVector, D::Error> {
        let bytes = serde_bytes::ByteBuf::deserialize(deserializer)?;
        Ok(StoredVector(from_bytes(&bytes).into()))
    }
}

/// Why a model's embedding answer does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbeddingError {
    #[error("the embedding response is not JSON ({reason})")]
    NotJson { reason: String },
    #[error("the embedding response has no data[0].embedding array of numbers")]
    NoVector,
    #[error("the embedding has {dimensions} dimensions, over {EMBEDDING_DIMENSIONS_MAX}")]
    TooLong { dimensions: usize },
    #[error("the embedding is all zeros")]
    Zero,
}

/// The request body for embedding `text` with `model`.
pub fn request_body(model: &str, text: &str) -> Vec<u8> {
    let text: String = text.chars().take(EMBEDDING_TEXT_CHARS_MAX).collect();
    serde_json::to_vec(&serde_json::json!({"input": text, "model": model})).expect("a JSON value always serialises")
}

/// Reads an OpenAI-compatible embedding response into a quantised unit
/// vector. A server that answers one vector per token (a list of lists) is
/// pooled by the mean.
pub fn read_response(response: &str) -> Result<Vec<i8>, EmbeddingError> {
    let value: Json =
        serde_json::from_str(response).map_err(|error| EmbeddingError::NotJson { reason: error.to_string() })?;
    let embedding = value["data"][0]["embedding"].as_array().ok_or(EmbeddingError::NoVector)?;
    let numbers = |list: &[Json]| -> Option<Vec<f64>> { list.iter().map(Json::as_f64).collect() };
    let vector = match embedding.first() {
        Some(Json::Array(_)) => {
            let rows: Vec<Vec<f64>> = embedding
                .iter()
                .map(|row| row.as_array().and_then(|row| numbers(row)))
                .collect::<Option<_>>()
                .ok_or(EmbeddingError::NoVector)?;
            let width = rows[0].len();
            if rows.iter().any(|row| row.len() != width) {
                return Err(EmbeddingError::NoVector);
            }
            (0..width).map(|at| rows.iter().map(|row| row[at]).sum::<f64>() / rows.len() as f64).collect()
        }
        _ => numbers(embedding).ok_or(EmbeddingError::NoVector)?,
    };
    quantise(&vector)
}

/// A vector scaled to unit length, each component times [`QUANTISED_ONE`]
/// and rounded: the integers every later step works with.
pub fn quantise(vector: &[f64]) -> Result<Vec<i8>, EmbeddingError> {
    if vector.is_empty() {
        return Err(EmbeddingError::NoVector);
    }
    if vector.len() > EMBEDDING_DIMENSIONS_MAX {
        return Err(EmbeddingError::TooLong { dimensions: vector.len() });
    }
    let length = vector.iter().map(|x| x * x).sum::<f64>().sqrt();
    if !length.is_finite() || length == 0.0 {
        return Err(EmbeddingError::Zero);
    }
    let scale = f64::from(QUANTISED_ONE) / length;
    Ok(vector.iter().map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8).collect())
}

/// A quantised vector as the bytes a fact stores, and back.
pub fn to_bytes(vector: &[i8]) -> Vec<u8> {
    vector.iter().map(|x| *x as u8).collect()
}

pub fn from_bytes(bytes: &[u8]) -> Vec<i8> {
    bytes.iter().map(|x| *x as i8).collect()
}

/// The similarity of two quantised unit vectors in thousandths: their dot
/// product over [`QUANTISED_ONE`]², 0 when it is negative or the lengths
/// differ (vectors of different models are not compared).
pub fn similarity_milli(a: &[i8], b: &[i8]) -> u64 {
    if a.len() != b.len() || a.is_empty() {
        return 0;
    }
    let dot: i64 = a.iter().zip(b).map(|(x, y)| i64::from(*x) * i64::from(*y)).sum();
    let one = i64::from(QUANTISED_ONE * QUANTISED_ONE);
    (dot.max(0) * 1_000 / one).min(1_000) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_read_into_quantised_unit_vectors() {
        let check = |response: &str, expected: Result<Vec<i8>, EmbeddingError>| {
            assert_eq!(read_response(response), expected, "{response}");
        };
        check(r#"{"data":[{"embedding":[3.0,4.0]}]}"#, Ok(vec![76, 102]));
        check(r#"{"data":[{"embedding":[0,0,2]}]}"#, Ok(vec![0, 0, 127]));
        // One vector per token: the mean, then unit length.
        check(r#"{"data":[{"embedding":[[1.0,0.0],[0.0,1.0]]}]}"#, Ok(vec![90, 90]));
        check(r#"{"data":[{"embedding":[[1.0],[0.0,1.0]]}]}"#, Err(EmbeddingError::NoVector));
        check(r#"{"data":[{"embedding":[0,0]}]}"#, Err(EmbeddingError::Zero));
        check(r#"{"data":[{"embedding":["a"]}]}"#, Err(EmbeddingError::NoVector));
        check(r#"{"data":[]}"#, Err(EmbeddingError::NoVector));
        check("nope", Err(EmbeddingError::NotJson { reason: "expected ident at line 1 column 2".into() }));
    }

    #[test]
    fn similarity_is_an_integer_dot_product_of_unit_vectors() {
        assert_eq!(similarity_milli(&[127, 0], &[127, 0]), 1_000);
        assert_eq!(similarity_milli(&[127, 0], &[0, 127]), 0);
        assert_eq!(similarity_milli(&[90, 90], &[127, 0]), 708);
        assert_eq!(similarity_milli(&[127, 0], &[-127, 0]), 0, "opposites count as unrelated");
        assert_eq!(similarity_milli(&[127], &[127, 0]), 0, "another model's vector");
        let vector = vec![-5i8, 0, 127, -128];
        assert_eq!(from_bytes(&to_bytes(&vector)), vector);
    }
}
