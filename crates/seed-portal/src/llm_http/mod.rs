//! The LLM's I/O: [`client`] calls real OpenAI-compatible endpoints over
//! HTTP (the [`connections`] file says which), and [`fake`] is an in-process
//! endpoint for tests and benchmarks. Both sit behind the core's
//! `llm::LanguageModel` trait; everything a moment decides from a model's
//! answer is in the core's `llm`, which does no I/O. Documented in docs/llm.md.

pub mod client;
pub mod connections;
pub mod fake;
