//! Where log lines go: stderr, as text or one JSON object a line, filtered by
//! `RUST_LOG` (default: info). The library emits spans and events through
//! `tracing`; only the binary decides whether and how they are written.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// What is logged when `RUST_LOG` is not set.
pub const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line (fields, span, level, target).
    Json,
}

/// Installs the subscriber. A `RUST_LOG` that does not parse is named on
/// stderr and the default filter is used instead.
pub fn init(format: LogFormat) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) => EnvFilter::try_new(&directives).unwrap_or_else(|error| {
            eprintln!("warning: RUST_LOG={directives:?} does not parse ({error}); logging at {DEFAULT_LOG_FILTER}");
            EnvFilter::new(DEFAULT_LOG_FILTER)
        }),
        Err(_) => EnvFilter::new(DEFAULT_LOG_FILTER),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // Another subscriber already installed (never, from `main`) is kept.
    let _ = match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => builder.json().with_current_span(true).with_span_list(false).try_init(),
    };
}
