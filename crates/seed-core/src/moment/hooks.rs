//! Hooks: Rhai handlers extensions attach to the verbs.
//!
//! `before:<verb>` (or `before:*`) handlers run in order when an act is about
//! to seal, after the verb layer accepted it; each may cancel it (return
//! `false`, a reason string, or `#{cancel: "reason"}`; `()` or `true`
//! allows). `after:<verb>` handlers run once the act is durable and can never
//! undo or block it. Each handler runs with its own operation budget
//! (`HOOK_OPERATIONS_MAX`); a handler that fails (throws, loops, returns
//! garbage) is skipped for that act — a broken extension does not stop the
//! world — and after `HOOK_FAILURES_BEFORE_BREAK` consecutive failures its
//! circuit breaker opens and it is not run again in this process.
//!
//! Hooks run on the sealing path, one act after another, so the breakers'
//! state evolves in the same order on every run.

use super::refusal::Refusal;
use crate::script::{ScriptEngine, ScriptError};
use crate::world::{VerbCall, World};
use serde_json::{json, Value as Json};
use std::sync::{Arc, Mutex};

/// Operations one hook handler may take per run, unless the land's
/// `hook_operations_max` says otherwise (`crate::config`).
pub const HOOK_OPERATIONS_MAX: u64 = 10_000;
/// The most the land's `hook_operations_max` may allow.
pub const HOOK_OPERATIONS_CEILING: u64 = 1_000_000;
/// Consecutive failures after which a handler's breaker opens, unless the
/// land's `hook_breaker_failures_max` says otherwise (`crate::config`).
pub const HOOK_FAILURES_BEFORE_BREAK: u32 = 3;
/// Handlers run at one hook point for one act, unless the land's
/// `hook_handlers_per_point_max` says otherwise (`crate::config`): those
/// past it (in load order) are not run, each leaving an incident.
pub const HOOK_HANDLERS_PER_POINT_MAX: usize = 16;
/// The most the land's `hook_handlers_per_point_max` may allow.
pub const HOOK_HANDLERS_PER_POINT_CEILING: usize = 1_024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Before,
    After,
}

/// Where a handler attaches: `before:do`, `after:*`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookPoint {
    pub phase: Phase,
    /// `None` for `*` (every verb).
    pub verb: Option<String>,
}

/// A hook point that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookPointError {
    #[error("{given:?} is not `before:VERB` or `after:VERB`")]
    NotAPoint { given: String },
    #[error("{given:?} is not `before` or `after`")]
    NotAPhase { given: String },
    #[error("{given:?} is not a verb (see, do, summon, be) or *")]
    NotAVerb { given: String },
}

impl HookPoint {
    pub fn parse(text: &str) -> Result<HookPoint, HookPointError> {
        let (phase, verb) =
            text.split_once(':').ok_or_else(|| HookPointError::NotAPoint { given: text.to_string() })?;
        let phase = match phase {
            "before" => Phase::Before,
            "after" => Phase::After,
            other => return Err(HookPointError::NotAPhase { given: other.to_string() }),
        };
        let verb = match verb {
            "*" => None,
            "see" | "do" | "summon" | "be" => Some(verb.to_string()),
            other => return Err(HookPointError::NotAVerb { given: other.to_string() }),
        };
        Ok(HookPoint { phase, verb })
    }

    fn matches(&self, phase: Phase, verb: &str) -> bool {
        self.phase == phase && self.verb.as_deref().is_none_or(|own| own == verb)
    }
}

#[derive(Debug, Clone)]
pub struct HookSpec {
    /// `extension/index`, for reports.
    pub name: String,
    pub point: HookPoint,
    pub source: Arc<str>,
}

#[derive(Debug, Default)]
struct BreakerState {
    consecutive_failures: u32,
    open: bool,
    /// Its last act passed it by (past `hook_handlers_per_point_max`), and
    /// an incident said so: not said again until it runs.
    skip_noted: bool,
}

/// A failure or an opened breaker, for the run's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookIncident {
    pub handler: String,
    pub reason: String,
    pub breaker_opened: bool,
}

pub struct Hooks {
    engine: ScriptEngine,
    handlers: Vec<(HookSpec, Mutex<BreakerState>)>,
    incidents: Mutex<Vec<HookIncident>>,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks::new(Vec::new())
    }
}

fn call_json(call: &VerbCall) -> Json {
    serde_json::to_value(call).unwrap_or(Json::Null)
}

impl Hooks {
    pub fn new(handlers: Vec<HookSpec>) -> Hooks {
        Hooks {
            engine: ScriptEngine::following_land_limit(HOOK_OPERATIONS_MAX, HOOK_OPERATIONS_CEILING),
            handlers: handlers.into_iter().map(|spec| (spec, Mutex::new(BreakerState::default()))).collect(),
            incidents: Mutex::new(Vec::new()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.handlers.is_empty()
    }

    /// Incidents so far (failures and opened breakers), in order.
    pub fn incidents(&self) -> Vec<HookIncident> {
        self.incidents.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether any handler attaches where an act of this verb is in this
    /// phase: where none does, running the point does nothing at all.
    pub fn attends(&self, phase: Phase, verb: &str) -> bool {
        self.handlers.iter().any(|(spec, _)| spec.point.matches(phase, verb))
    }

    fn run(&self, phase: Phase, actor: &str, call: &VerbCall, world: &World, seed: u64) -> Result<(), Refusal> {
        let verb = call.verb();
        // Most lands attach no handler to most verbs; the inputs below (the
        // call and the signals as JSON, the actor's row) are built for none.
        if !self.attends(phase, verb) {
            return Ok(());
        }
        let call = call_json(call);
        // Where the actor stands decides which extensions' handlers run (`crate::ownership`).
        let location = world.being_named(actor).map(|row| row.location.clone()).unwrap_or_default();
        let actor = json!(actor);
        let view = json!({ "signals": world.signals });
        let limits = crate::script::RunLimits::of(world, "hook_operations_max", HOOK_OPERATIONS_MAX);
        let handlers_max = world.config_u64("hook_handlers_per_point_max", HOOK_HANDLERS_PER_POINT_MAX as u64);
        let mut at_point = 0u64;
        for (spec, state) in self.handlers.iter().filter(|(spec, _)| spec.point.matches(phase, verb)) {
            let extension = spec.name.split('/').next().unwrap_or_default();
            if crate::ownership::is_blocked(world, extension, &location) {
                continue;
            }
            at_point += 1;
            let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
            if at_point > handlers_max {
                // Said once while it keeps being passed by: a live land's
                // incidents must not grow with every act.
                if !state.skip_noted {
                    state.skip_noted = true;
                    let point = format!("{}:{verb}", if phase == Phase::Before { "before" } else { "after" });
                    self.incidents.lock().unwrap_or_else(|p| p.into_inner()).push(HookIncident {
                        handler: spec.name.clone(),
                        reason: format!(
                            "not run: {point} has more than {handlers_max} handlers for this act (hook_handlers_per_point_max)"
                        ),
                        breaker_opened: false,
                    });
                }
                continue;
            }
            state.skip_noted = false;
            if state.open {
                continue;
            }
            let inputs: [(&str, &Json); 3] = [("actor", &actor), ("request", &call), ("world", &view)];
            let outcome = crate::script::within_limits(limits, || self.engine.run(&spec.source, &inputs, seed));
            let verdict = match outcome {
                Ok(Json::Null) | Ok(Json::Bool(true)) => Ok(None),
                Ok(Json::Bool(false)) => Ok(Some("cancelled".to_string())),
                Ok(Json::String(reason)) => Ok(Some(reason)),
                Ok(Json::Object(map)) if map.get("cancel").is_some_and(Json::is_string) => {
                    Ok(Some(map["cancel"].as_str().unwrap_or_default().to_string()))
                }
                Ok(other) => Err(ScriptError::Output {
                    reason: format!("a hook returns (), true, false, a reason or #{{cancel}}; got {other}"),
                }),
                Err(error) => Err(error),
            };
            match verdict {
                Ok(cancel) => {
                    state.consecutive_failures = 0;
                    if let (Phase::Before, Some(reason)) = (phase, cancel) {
                        return Err(Refusal::HookCancelled { hook: spec.name.clone(), reason });
                    }
                }
                Err(error) => {
                    state.consecutive_failures += 1;
                    // The land's `hook_breaker_failures_max` at this act's world.
                    let most = world.config_u64("hook_breaker_failures_max", u64::from(HOOK_FAILURES_BEFORE_BREAK));
                    state.open = u64::from(state.consecutive_failures) >= most;
                    self.incidents.lock().unwrap_or_else(|p| p.into_inner()).push(HookIncident {
                        handler: spec.name.clone(),
                        reason: error.to_string(),
                        breaker_opened: state.open,
                    });
                }
            }
        }
        Ok(())
    }

    /// Runs the `before:` handlers for an act about to seal; `Err` cancels it.
    pub fn before(&self, actor: &str, call: &VerbCall, world: &World, seed: u64) -> Result<(), Refusal> {
        self.run(Phase::Before, actor, call, world, seed)
    }

    /// Runs the `after:` handlers for a durable act; nothing they do undoes it.
    pub fn after(&self, actor: &str, call: &VerbCall, world: &World, seed: u64) {
        let _ = self.run(Phase::After, actor, call, world, seed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `before:do` handler counting 2,000 times, run on an act in a world
    /// whose `hook_operations_max` is `limit`: the incident it leaves, if any.
    fn incidents_with(limit: Option<u64>) -> Vec<String> {
        let hooks = Hooks::new(vec![HookSpec {
            name: "test/0".into(),
            point: HookPoint::parse("before:do").expect("a point"),
            source: Arc::from("let n = 0; for i in 0..2000 { n += 1; } true"),
        }]);
        let mut world = World::default();
        if let Some(limit) = limit {
            world.config.insert("hook_operations_max".into(), json!(limit));
        }
        let call = VerbCall::Do { target: "/".into(), action: "ring".into(), args: json!({}) };
        hooks.before("ada", &call, &world, 7).expect("a failing handler never cancels");
        hooks.incidents().into_iter().map(|incident| incident.reason).collect()
    }

    /// Three `before:do` handlers (the third cancels) under a land whose
    /// `hook_handlers_per_point_max` is `limit`: the act's verdict and the incidents.
    fn verdict_with_handlers_max(limit: Option<u64>) -> (Option<String>, Vec<String>) {
        let handler = |index: usize, source: &str| HookSpec {
            name: format!("test/{index}"),
            point: HookPoint::parse("before:do").expect("a point"),
            source: Arc::from(source),
        };
        let hooks = Hooks::new(vec![handler(0, "true"), handler(1, "()"), handler(2, "\"closed\"")]);
        let mut world = World::default();
        if let Some(limit) = limit {
            world.config.insert("hook_handlers_per_point_max".into(), json!(limit));
        }
        let call = VerbCall::Do { target: "/".into(), action: "ring".into(), args: json!({}) };
        let verdict = hooks.before("ada", &call, &world, 7).err().map(|refusal| refusal.to_string());
        // A second act passes the same handlers by: nothing more is said.
        let again = hooks.before("ada", &call, &world, 8).err().map(|refusal| refusal.to_string());
        assert_eq!(again, verdict, "the same verdict for the same act");
        (
            verdict,
            hooks
                .incidents()
                .into_iter()
                .map(|incident| format!("{}: {}", incident.handler, incident.reason))
                .collect(),
        )
    }

    #[test]
    fn handlers_past_the_hook_handlers_per_point_max_in_force_are_not_run_and_say_so() {
        type Case<'a> = (Option<u64>, Option<&'a str>, &'a [&'a str]);
        let cases: &[Case] = &[
            (None, Some("closed"), &[]),
            (Some(3), Some("closed"), &[]),
            (
                Some(2),
                None,
                &["test/2: not run: before:do has more than 2 handlers for this act (hook_handlers_per_point_max)"],
            ),
            (
                Some(1),
                None,
                &[
                    "test/1: not run: before:do has more than 1 handlers for this act (hook_handlers_per_point_max)",
                    "test/2: not run: before:do has more than 1 handlers for this act (hook_handlers_per_point_max)",
                ],
            ),
        ];
        for (limit, verdict, incidents) in cases {
            let (seen, seen_incidents) = verdict_with_handlers_max(*limit);
            match (&seen, verdict) {
                (None, None) => {}
                (Some(refusal), Some(needle)) => assert!(refusal.contains(needle), "{limit:?}: {refusal}"),
                _ => panic!("{limit:?}: got {seen:?}, expected {verdict:?}"),
            }
            assert_eq!(seen_incidents, *incidents, "{limit:?}");
        }
    }

    /// A cancelling handler at `point` meets an act of `verb` in `phase`:
    /// whether the hooks say they attend, and whether the act is cancelled.
    fn check_attending(point: &str, phase: Phase, verb: &str, attends: bool, cancelled: bool) {
        let hooks = Hooks::new(vec![HookSpec {
            name: "test/0".into(),
            point: HookPoint::parse(point).expect("a point"),
            source: Arc::from("\"closed\""),
        }]);
        let call = match verb {
            "see" => VerbCall::See { address: "/".into() },
            "do" => VerbCall::Do { target: "/".into(), action: "ring".into(), args: json!({}) },
            "summon" => VerbCall::Summon { target: "@ada".into(), content: "hello".into(), in_reply_to: None },
            _ => VerbCall::Be { operation: "rest".into(), payload: json!({}) },
        };
        let world = World::default();
        let verdict = match phase {
            Phase::Before => hooks.before("ada", &call, &world, 7).is_err(),
            Phase::After => {
                hooks.after("ada", &call, &world, 7);
                false
            }
        };
        assert_eq!(hooks.attends(phase, verb), attends, "{point} attending {phase:?}:{verb}");
        assert_eq!(verdict, cancelled, "{point} meeting {phase:?}:{verb}");
    }

    #[test]
    fn hooks_attend_only_the_points_their_handlers_name() {
        let cases = [
            // (point, phase, verb, attends, cancelled)
            ("before:do", Phase::Before, "do", true, true),
            ("before:do", Phase::Before, "see", false, false),
            ("before:do", Phase::After, "do", false, false),
            ("before:*", Phase::Before, "see", true, true),
            ("before:*", Phase::Before, "summon", true, true),
            ("before:see", Phase::Before, "be", false, false),
            ("after:do", Phase::Before, "do", false, false),
            // An `after:` handler runs but never cancels.
            ("after:do", Phase::After, "do", true, false),
        ];
        for (point, phase, verb, attends, cancelled) in cases {
            check_attending(point, phase, verb, attends, cancelled);
        }
    }

    #[test]
    fn a_hook_runs_within_the_hook_operations_max_in_force_at_the_act() {
        assert_eq!(incidents_with(None), Vec::<String>::new(), "within the default 10,000");
        let failed = incidents_with(Some(1_000));
        assert!(failed.len() == 1 && failed[0].contains("more than 1000 operations"), "{failed:?}");
        assert_eq!(incidents_with(Some(100_000)), Vec::<String>::new());
    }
}
