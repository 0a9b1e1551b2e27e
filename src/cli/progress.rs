//! How far a long command got, on stderr: a bar when stderr is a terminal,
//! otherwise a plain line every [`PROGRESS_LINE_INTERVAL_MS_DEFAULT`] (CI
//! logs, pipes). The library only counts ([`seed::progress::Progress`]);
//! stdout keeps the command's report (or its JSON) untouched.

use seed::progress::Progress;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Milliseconds between two plain progress lines when stderr is not a terminal.
pub const PROGRESS_LINE_INTERVAL_MS_DEFAULT: u64 = 5000;

/// Overrides [`PROGRESS_LINE_INTERVAL_MS_DEFAULT`] (0: a line at every step, for tests).
const PROGRESS_LINE_INTERVAL_MS_VARIABLE: &str = "SEED_PROGRESS_LINE_INTERVAL_MS";

/// The watcher for `command` (`"seed verify"`): a bar on a terminal, plain lines otherwise.
pub fn for_command(command: &'static str) -> Arc<dyn Progress> {
    if std::io::stderr().is_terminal() {
        return Arc::new(Bar::new(command));
    }
    let interval_ms = std::env::var(PROGRESS_LINE_INTERVAL_MS_VARIABLE)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(PROGRESS_LINE_INTERVAL_MS_DEFAULT);
    Arc::new(Lines::new(command, Duration::from_millis(interval_ms)))
}

/// An indicatif bar (a spinner while the total is not known).
struct Bar {
    bar: indicatif::ProgressBar,
}

impl Bar {
    fn new(command: &'static str) -> Bar {
        // Styled before it may draw, so no default bar flashes before the first stage.
        let bar = indicatif::ProgressBar::hidden();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix}") {
            bar.set_style(style);
        }
        bar.set_prefix(command);
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        Bar { bar }
    }
}

impl Progress for Bar {
    fn stage(&self, name: &'static str, total: u64, unit: &'static str) {
        let template = if total == 0 {
            format!("{{prefix}}: {{spinner}} {name} ({{pos}} {unit}, {{elapsed}})")
        } else {
            format!("{{prefix}}: {name} [{{bar:24}}] {{pos}}/{{len}} {unit} ({{eta}} left)")
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
            self.bar.set_style(style.progress_chars("=> "));
        }
        // The count restarts before the new total shows, so no stage opens full.
        self.bar.set_position(0);
        self.bar.set_length(total);
        if total == 0 {
            self.bar.enable_steady_tick(Duration::from_millis(120));
        } else {
            self.bar.disable_steady_tick();
        }
    }

    fn advance(&self, done: u64) {
        self.bar.inc(done);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A line such as `seed verify: checking reels, 51200 of 101006 facts (50%) after 12 s`
/// at most once per interval.
struct Lines {
    command: &'static str,
    interval: Duration,
    state: Mutex<LineState>,
}

struct LineState {
    stage: &'static str,
    unit: &'static str,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
}

impl Lines {
    fn new(command: &'static str, interval: Duration) -> Lines {
        let now = Instant::now();
        let state = LineState { stage: "", unit: "", total: 0, done: 0, started: now, last_line: now };
        Lines { command, interval, state: Mutex::new(state) }
    }
}

impl Progress for Lines {
    fn stage(&self, name: &'static str, total: u64, unit: &'static str) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.stage = name;
        state.unit = unit;
        state.total = total;
        state.done = 0;
    }

    fn advance(&self, done: u64) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.done += done;
        let now = Instant::now();
        if now.duration_since(state.last_line) < self.interval {
            return;
        }
        state.last_line = now;
        let elapsed_s = now.duration_since(state.started).as_secs();
        let LineState { stage, unit, total, done, .. } = *state;
        let line = match (done * 100).checked_div(total) {
            Some(percent) => {
                format!("{}: {stage}, {done} of {total} {unit} ({percent}%) after {elapsed_s} s", self.command)
            }
            None => format!("{}: {stage}, {done} {unit} after {elapsed_s} s", self.command),
        };
        eprintln!("{line}");
    }
}
