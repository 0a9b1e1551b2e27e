//! The integration tests, linked as one binary (`autotests = false` in
//! Cargo.toml): each file of this folder is a module, so a newcomer's
//! `cargo test` links one test binary instead of eighteen.
//!
//! Five kinds of test need what a plain checkout does not have and run only
//! when asked (`.ci/run` asks for all, so every CI run runs them):
//!
//! - `SEED_TEST_BROWSER=1`: `portal_browser` drives Debian's `chromium`
//!   through `chromedriver`;
//! - `SEED_TEST_LOCAL_LLM=1`: `local_llm` serves a real model through
//!   `scripts/local-llm`, which builds a Python environment with llama.cpp
//!   under `~/.cache/seed` the first time (about six minutes);
//! - `SEED_TEST_MCP=1`: `mcp` drives a land with the official Python MCP
//!   client, and `mcp_tools` calls the protocol's reference server (which
//!   `scripts/mcp-servers` installs from npm under `~/.cache/seed`, seconds);
//!   the client `scripts/mcp-client` installs from PyPI under
//!   `~/.cache/seed` the first time (seconds);
//! - `SEED_TEST_PROMETHEUS=1`: `metrics` reads a `/metrics` scrape with the
//!   Prometheus client library's own parser, which `scripts/prometheus-parse`
//!   installs from PyPI under `~/.cache/seed` the first time (seconds);
//! - `SEED_TEST_POSTGRES=1`: `postgres`, `pool`, and the PostgreSQL halves
//!   of `store_rules`, `tamper`, `crash`, `replay` (the corpus),
//!   `json_schemas` and `portal_browser`, start a throwaway cluster from
//!   Debian's `postgresql`.
//!
//! Without the variable such a test passes at once, saying on stderr what it
//! skipped and how to run it.

/// Each test named runs on the land folder's own store and on PostgreSQL
/// (when `SEED_TEST_POSTGRES=1`): the chain rules are the store's promise,
/// whatever keeps the facts.
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn in_the_land_folder() {
                super::$name(crate::common::Backend::Folder);
            }

            #[test]
            fn on_postgres() {
                if crate::postgres::postgres_opted_in() {
                    super::$name(crate::common::Backend::Postgres);
                }
            }
        }
    )*};
}

mod common;

mod approvals;
mod authoring;
mod bundle;
mod canopy;
mod cascade;
mod cli;
mod cli_help;
mod code_rules;
mod config;
mod crash;
mod definitions;
mod fact_props;
mod first_world;
mod flow_cli;
mod health;
mod hostile;
mod json_schemas;
mod llm;
mod local_llm;
mod mcp;
mod mcp_tools;
mod memory;
mod metrics;
mod ownership;
mod pool;
mod portal_accounts;
mod portal_api;
mod portal_browser;
mod portal_editors;
mod portal_timeline;
mod postgres;
mod read_only;
mod reel_format_doc;
mod replay;
mod resume;
mod role_flow;
mod script_cli;
mod sim_cli;
mod snapshots;
mod store_damage;
mod store_rules;
mod tamper;
mod when_language;
mod worlds;

/// Whether the opt-in test named by `variable` should run; if not, says so.
pub fn opted_in(variable: &str, what: &str) -> bool {
    if std::env::var(variable).is_ok_and(|value| value == "1") {
        return true;
    }
    eprintln!("skipped: {what} (set {variable}=1 to run it; .ci/run does)");
    false
}
