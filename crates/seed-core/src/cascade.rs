//! Cascade: message passing between spaces (docs/cascade.md).
//!
//! A space whose `cascade` quality is `true` is marked for cascade. When an
//! applied act writes there (a world signal published by a being standing
//! there, matter put there by a DO operation, a summons to a being standing
//! there), the write is announced as a **cascade signal**, and the
//! extensions' cascade handlers (Rhai, `[[provides.cascade]]`) deliver it to
//! other spaces: each handler is given the signal and the space it is at
//! (its parent, children, siblings and ancestors) and returns the spaces to
//! deliver to. A delivery into a space that is itself marked runs the
//! handlers again there, one hop deeper. Every signal and every delivery is
//! a `world` fact sealed right after the act on the actor's reel, and one
//! that is not made (too deep, too many, too large, too often, a handler
//! that failed) is sealed too, saying why: inbound is never refused
//! silently.
//!
//! What this module decides, purely: which writes of an act announce
//! ([`announcements`]), and what one signal delivers where
//! ([`propagate`]), under the land's limits (configuration keys read at the
//! world the act left). What it does not know: fact ids, keys and sealing
//! (the engine's), nor who wakes (the engine's scheduler reads
//! [`CascadeState::arrivals`]).

use crate::fact::{BeingId, FactId};
use crate::script::ScriptEngine;
use crate::world::{ActBody, Effect, VerbCall, World};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The space quality that marks a space for cascade (`true`).
pub const CASCADE_QUALITY: &str = "cascade";
/// Hops a signal may travel, unless the land's `cascade_depth_max` says otherwise.
pub const CASCADE_DEPTH_MAX: u64 = 50;
/// Bytes of a signal's payload (canonical CBOR), unless `cascade_payload_bytes_max` says otherwise.
pub const CASCADE_PAYLOAD_BYTES_MAX: u64 = 51_200;
/// Signals one space announces per minute of stored time, unless
/// `cascade_signals_per_space_per_minute_max` says otherwise.
pub const CASCADE_SIGNALS_PER_SPACE_PER_MINUTE_MAX: u64 = 60;
/// Deliveries one signal makes, unless `cascade_deliveries_per_signal_max` says otherwise.
pub const CASCADE_DELIVERIES_PER_SIGNAL_MAX: u64 = 500;
/// Deliveries the land records per day of stored time, unless
/// `cascade_deliveries_per_day_max` says otherwise.
pub const CASCADE_DELIVERIES_PER_DAY_MAX: u64 = 10_000;
/// Operations one run of a cascade handler may take, unless the land's
/// `cascade_handler_operations_max` says otherwise.
pub const CASCADE_HANDLER_OPERATIONS_MAX: u64 = 10_000;
/// The most the land's `cascade_handler_operations_max` may allow.
pub const CASCADE_HANDLER_OPERATIONS_CEILING: u64 = 1_000_000;
/// Spaces one run of a handler may name.
pub const CASCADE_HANDLER_TARGETS_MAX: usize = 10_000;
/// Arrivals the world keeps per space (the latest), for the beings there to wake on.
pub const CASCADE_ARRIVALS_KEPT_PER_SPACE: usize = 64;
/// Signals the world keeps (the latest), for their deliveries to name.
pub const CASCADE_SIGNALS_KEPT: usize = 64;
/// Characters of a drop's detail (a handler's error is cut there).
pub const CASCADE_DROP_DETAIL_CHARS_MAX: usize = 512;

const MINUTE_MS: u64 = 60_000;
const DAY_MS: u64 = 86_400_000;

impl Arrival {
    /// As a being's face and the portal show it.
    pub fn to_json(&self, world: &World) -> Json {
        json!({
            "kind": "cascade", "arrival": self.fact.to_hex(), "signal": self.signal.to_hex(),
            "origin": self.origin, "write": self.kind.as_str(), "depth": self.depth,
            "from": self.writer.and_then(|writer| world.name_of(&writer)).map(|name| format!("@{name}")),
            "payload": self.payload,
        })
    }
}

/// What kind of write a signal announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteKind {
    Signal,
    Matter,
    Summon,
}

impl WriteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteKind::Signal => "signal",
            WriteKind::Matter => "matter",
            WriteKind::Summon => "summon",
        }
    }
}

/// Why a signal or a delivery was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    /// The signal's space announced its most signals this minute.
    Rate,
    /// The payload is over `cascade_payload_bytes_max`.
    Payload,
    /// The delivery would be deeper than `cascade_depth_max`.
    Depth,
    /// The signal made its most deliveries.
    FanOut,
    /// The land recorded its most deliveries today.
    PerDay,
    /// A handler named a space that does not exist.
    NoSpace,
    /// A handler failed (threw, ran out of operations, returned garbage).
    Handler,
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Rate => "rate",
            DropReason::Payload => "payload",
            DropReason::Depth => "depth",
            DropReason::FanOut => "fan-out",
            DropReason::PerDay => "per-day",
            DropReason::NoSpace => "no-space",
            DropReason::Handler => "handler",
        }
    }
}

/// A signal or delivery not made, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CascadeDrop {
    pub reason: DropReason,
    /// What a person reads: the limit and the number, or the handler's error.
    pub detail: String,
    /// How many deliveries this record stands for (1, or every target a
    /// handler named past the fan-out or daily limit).
    pub targets: u64,
}

/// A cascade signal as its `world` fact carries it (`Effect::CascadeSignal`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CascadeSignal {
    /// The space written at (marked for cascade).
    pub space: String,
    pub kind: WriteKind,
    /// What was written: the signal's key and value, the matter, the summons.
    pub payload: Json,
    /// The act whose write this announces.
    pub cause: FactId,
    /// The act's stored time.
    pub at_ms: u64,
    pub dropped: Option<CascadeDrop>,
}

/// One delivery of a signal (`Effect::CascadeDelivery`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CascadeDelivery {
    /// The signal's fact.
    pub signal: FactId,
    /// The route from the signal's space to `to`, both included: the
    /// delivery's depth is its length less one.
    pub path: Vec<String>,
    /// The handler that named `to` (`extension/index`).
    pub handler: String,
    /// The signal's stored time.
    pub at_ms: u64,
    pub dropped: Option<CascadeDrop>,
}

impl CascadeDelivery {
    /// Where it was delivered (or would have been).
    pub fn to(&self) -> &str {
        self.path.last().map_or("/", String::as_str)
    }

    pub fn depth(&self) -> u64 {
        self.path.len().saturating_sub(1) as u64
    }
}

/// A signal that arrived at a space (the announcement at its own space, a
/// delivery at another), as the beings there read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arrival {
    /// The fact that brought it: the signal's, or the delivery's.
    pub fact: FactId,
    pub land_seq: u64,
    pub signal: FactId,
    /// The space the signal was written at.
    pub origin: String,
    pub kind: WriteKind,
    pub depth: u64,
    /// The being whose act wrote it (it does not wake on its own write).
    pub writer: Option<BeingId>,
    pub payload: Json,
}

/// What the world keeps of cascades (folded from the cascade facts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CascadeState {
    /// The latest arrivals per space, oldest first.
    pub arrivals: BTreeMap<String, VecDeque<Arrival>>,
    /// Stored times of the signals each space announced in the last minute.
    pub recent_signals: BTreeMap<String, VecDeque<u64>>,
    /// The day (of stored time) `delivered_in_day` counts.
    pub day: u64,
    pub delivered_in_day: u64,
    /// The latest signals (their fact, writer and signal), for their
    /// deliveries' arrivals.
    pub latest_signals: VecDeque<(FactId, Option<BeingId>, CascadeSignal)>,
}

impl CascadeState {
    pub fn is_empty(&self) -> bool {
        self.arrivals.is_empty() && self.recent_signals.is_empty() && self.delivered_in_day == 0
    }

    /// Folds a signal's fact. Cannot fail.
    pub fn fold_signal(&mut self, fact: FactId, land_seq: u64, writer: Option<BeingId>, signal: &CascadeSignal) {
        if signal.dropped.is_some() {
            return;
        }
        let times = self.recent_signals.entry(signal.space.clone()).or_default();
        while times.front().is_some_and(|at| at.saturating_add(MINUTE_MS) <= signal.at_ms) {
            times.pop_front();
        }
        times.push_back(signal.at_ms);
        self.arrive(
            &signal.space,
            Arrival {
                fact,
                land_seq,
                signal: fact,
                origin: signal.space.clone(),
                kind: signal.kind,
                depth: 0,
                writer,
                payload: signal.payload.clone(),
            },
        );
        self.latest_signals.push_back((fact, writer, signal.clone()));
        if self.latest_signals.len() > CASCADE_SIGNALS_KEPT {
            self.latest_signals.pop_front();
        }
    }

    /// Folds a delivery's fact. Cannot fail: a delivery of a signal no
    /// longer kept arrives without its payload.
    pub fn fold_delivery(&mut self, fact: FactId, land_seq: u64, delivery: &CascadeDelivery) {
        if delivery.dropped.is_some() {
            return;
        }
        let day = delivery.at_ms / DAY_MS;
        if day != self.day {
            self.day = day;
            self.delivered_in_day = 0;
        }
        self.delivered_in_day += 1;
        let signal = self.latest_signals.iter().rev().find(|(id, _, _)| *id == delivery.signal);
        let arrival = Arrival {
            fact,
            land_seq,
            signal: delivery.signal,
            origin: delivery.path.first().cloned().unwrap_or_default(),
            kind: signal.map_or(WriteKind::Signal, |(_, _, signal)| signal.kind),
            depth: delivery.depth(),
            writer: signal.and_then(|(_, writer, _)| *writer),
            payload: signal.map_or(Json::Null, |(_, _, signal)| signal.payload.clone()),
        };
        let to = delivery.to().to_string();
        self.arrive(&to, arrival);
    }

    fn arrive(&mut self, space: &str, arrival: Arrival) {
        let arrivals = self.arrivals.entry(space.to_string()).or_default();
        arrivals.push_back(arrival);
        if arrivals.len() > CASCADE_ARRIVALS_KEPT_PER_SPACE {
            arrivals.pop_front();
        }
    }

    /// The arrival a `cascade` wake names, looked for first at `space`.
    pub fn arrival(&self, space: &str, fact: &FactId) -> Option<&Arrival> {
        fn find<'a>(arrivals: &'a VecDeque<Arrival>, fact: &FactId) -> Option<&'a Arrival> {
            arrivals.iter().find(|arrival| arrival.fact == *fact)
        }
        self.arrivals
            .get(space)
            .and_then(|arrivals| find(arrivals, fact))
            .or_else(|| self.arrivals.values().find_map(|arrivals| find(arrivals, fact)))
    }

    /// Deliveries the land may still record today (at `now_ms`), under `most`.
    fn deliveries_left_today(&self, now_ms: u64, most: u64) -> u64 {
        let used = if now_ms / DAY_MS == self.day { self.delivered_in_day } else { 0 };
        most.saturating_sub(used)
    }
}

/// The land's cascade limits, as the world at a cursor holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CascadeLimits {
    pub depth_max: u64,
    pub payload_bytes_max: u64,
    pub signals_per_space_per_minute_max: u64,
    pub deliveries_per_signal_max: u64,
    pub deliveries_per_day_max: u64,
}

impl CascadeLimits {
    pub fn of(world: &World) -> CascadeLimits {
        CascadeLimits {
            depth_max: world.config_u64("cascade_depth_max", CASCADE_DEPTH_MAX),
            payload_bytes_max: world.config_u64("cascade_payload_bytes_max", CASCADE_PAYLOAD_BYTES_MAX),
            signals_per_space_per_minute_max: world
                .config_u64("cascade_signals_per_space_per_minute_max", CASCADE_SIGNALS_PER_SPACE_PER_MINUTE_MAX),
            deliveries_per_signal_max: world
                .config_u64("cascade_deliveries_per_signal_max", CASCADE_DELIVERIES_PER_SIGNAL_MAX),
            deliveries_per_day_max: world.config_u64("cascade_deliveries_per_day_max", CASCADE_DELIVERIES_PER_DAY_MAX),
        }
    }
}

/// Whether `space` is marked for cascade.
pub fn is_marked(world: &World, space: &str) -> bool {
    world.spaces.get(space).and_then(|space| space.qualities.get(CASCADE_QUALITY)) == Some(&Json::Bool(true))
}

/// A write at a marked space, to be announced.
#[derive(Debug, Clone, PartialEq)]
pub struct Announcement {
    pub space: String,
    pub kind: WriteKind,
    pub payload: Json,
}

/// The writes of an applied act (folded into `world` already) at spaces
/// marked for cascade, in the act's order: a signal it published (at its
/// actor's space), matter it put (at the matter's space), a summons it sent
/// (at the summoned being's space). Nothing while the land's cascade is off
/// (`cascade_signals_per_space_per_minute_max` = 0).
pub fn announcements(world: &World, actor: &BeingId, act: &ActBody) -> Vec<Announcement> {
    if CascadeLimits::of(world).signals_per_space_per_minute_max == 0
        || !crate::approval::Gate::call_applied(act.gate.as_ref())
    {
        return Vec::new();
    }
    let location = |being: &BeingId| world.beings.get(being).map(|row| row.location.clone());
    let mut found = Vec::new();
    for effect in &act.effects {
        let written = match effect {
            Effect::SetSignal { key, value } => {
                location(actor).map(|space| (space, WriteKind::Signal, json!({"key": key, "value": value})))
            }
            Effect::PutMatter { address, kind, fields } => {
                let space = address.split_once('#').map_or(address.as_str(), |(space, _)| space).to_string();
                Some((space, WriteKind::Matter, json!({"address": address, "kind": kind, "fields": fields})))
            }
            _ => None,
        };
        found.extend(written);
    }
    if let VerbCall::Summon { target, content, .. } = &act.call {
        if let Some(row) = world.being_named(target.trim_start_matches('@')) {
            found.push((row.location.clone(), WriteKind::Summon, json!({"to": target, "content": content})));
        }
    }
    found
        .into_iter()
        .filter(|(space, _, _)| is_marked(world, space))
        .map(|(space, kind, payload)| Announcement { space, kind, payload })
        .collect()
}

/// The signal an announcement is sealed as: dropped when its space
/// announced its most this minute, or its payload is too large.
pub fn signal_of(world: &World, announcement: Announcement, cause: FactId, at_ms: u64) -> CascadeSignal {
    let limits = CascadeLimits::of(world);
    let recent = world
        .cascade
        .recent_signals
        .get(&announcement.space)
        .map_or(0, |times| times.iter().filter(|at| at.saturating_add(MINUTE_MS) > at_ms).count() as u64);
    let payload_bytes =
        crate::canonical::encode_json(&announcement.payload).map_or(u64::MAX, |bytes| bytes.len() as u64);
    let dropped = if recent >= limits.signals_per_space_per_minute_max {
        Some(CascadeDrop {
            reason: DropReason::Rate,
            detail: format!(
                "{} announced {recent} signals in the last minute, its most (cascade_signals_per_space_per_minute_max)",
                announcement.space
            ),
            targets: 0,
        })
    } else if payload_bytes > limits.payload_bytes_max {
        Some(CascadeDrop {
            reason: DropReason::Payload,
            detail: format!(
                "the payload is {payload_bytes} bytes, over {} (cascade_payload_bytes_max)",
                limits.payload_bytes_max
            ),
            targets: 0,
        })
    } else {
        None
    };
    CascadeSignal {
        space: announcement.space,
        kind: announcement.kind,
        payload: announcement.payload,
        cause,
        at_ms,
        dropped,
    }
}

/// One extension's cascade handler.
#[derive(Debug, Clone)]
pub struct CascadeHandler {
    /// `extension/index`.
    pub name: String,
    /// The extension it belongs to.
    pub extension: String,
    pub source: Arc<str>,
}

/// The land's cascade handlers, in extension order, and the engine they run on.
pub struct CascadeHandlers {
    handlers: Vec<CascadeHandler>,
    engine: ScriptEngine,
}

impl Default for CascadeHandlers {
    fn default() -> Self {
        CascadeHandlers::new(Vec::new())
    }
}

impl std::fmt::Debug for CascadeHandlers {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_list().entries(self.handlers.iter().map(|handler| &handler.name)).finish()
    }
}

impl CascadeHandlers {
    pub fn new(handlers: Vec<CascadeHandler>) -> CascadeHandlers {
        let engine =
            ScriptEngine::following_land_limit(CASCADE_HANDLER_OPERATIONS_MAX, CASCADE_HANDLER_OPERATIONS_CEILING);
        CascadeHandlers { handlers, engine }
    }

    pub fn is_empty(&self) -> bool {
        self.handlers.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &CascadeHandler> {
        self.handlers.iter()
    }
}

/// `space`'s place in the tree, as a handler reads it.
fn here_json(world: &World, space: &str) -> Json {
    // The walk up from `space` (itself first) gives its parent and ancestors.
    let ancestors: Vec<&str> = crate::ownership::walk_up(space).skip(1).collect();
    let parent = ancestors.first().copied();
    let children = children_of(world, space);
    let siblings: Vec<String> = match parent {
        Some(parent) => children_of(world, parent).into_iter().filter(|child| child != space).collect(),
        None => Vec::new(),
    };
    let (kind, qualities) =
        world.spaces.get(space).map_or((Json::Null, Json::Null), |space| (json!(space.kind), json!(space.qualities)));
    json!({
        "path": space, "kind": kind, "qualities": qualities, "parent": parent,
        "children": children, "siblings": siblings, "ancestors": ancestors,
    })
}

/// The spaces directly below `space`, in path order.
fn children_of(world: &World, space: &str) -> Vec<String> {
    let prefix = if space == "/" { "/".to_string() } else { format!("{space}/") };
    world
        .spaces
        .range(prefix.clone()..)
        .take_while(|(path, _)| path.starts_with(&prefix))
        .filter(|(path, _)| path.len() > prefix.len() && !path[prefix.len()..].contains('/'))
        .map(|(path, _)| path.clone())
        .collect()
}

/// Why a handler's run named no usable spaces.
#[derive(Debug, thiserror::Error)]
pub enum HandlerFailure {
    #[error(transparent)]
    Script(#[from] crate::script::ScriptError),
    #[error("a cascade handler returns (), a space or an array of spaces; got {got}")]
    NotSpaces { got: String },
    #[error("a cascade handler named {count} spaces, over {CASCADE_HANDLER_TARGETS_MAX}")]
    TooMany { count: usize },
    #[error("a cascade handler's spaces are strings; got {got}")]
    NotAString { got: String },
    #[error(transparent)]
    Address(#[from] crate::world::address::AddressError),
}

/// What a handler's output names, or why it names nothing usable.
fn targets_of(output: Json) -> Result<Vec<String>, HandlerFailure> {
    let items = match output {
        Json::Null => return Ok(Vec::new()),
        Json::String(one) => vec![Json::String(one)],
        Json::Array(items) => items,
        other => return Err(HandlerFailure::NotSpaces { got: other.to_string() }),
    };
    if items.len() > CASCADE_HANDLER_TARGETS_MAX {
        return Err(HandlerFailure::TooMany { count: items.len() });
    }
    let mut targets: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Json::String(text) = item else {
            return Err(HandlerFailure::NotAString { got: item.to_string() });
        };
        let space = crate::world::address::parse_space(&text)?;
        if !targets.contains(&space) {
            targets.push(space);
        }
    }
    Ok(targets)
}

fn cut(detail: String) -> String {
    if detail.chars().count() <= CASCADE_DROP_DETAIL_CHARS_MAX {
        return detail;
    }
    let mut cut: String = detail.chars().take(CASCADE_DROP_DETAIL_CHARS_MAX).collect();
    cut.push('…');
    cut
}

/// Every delivery (and every drop) of a signal sealed as `signal_fact`,
/// breadth first from its space: the handlers run at the signal's space
/// and at every space a delivery reaches that is itself marked, each
/// handler's targets in the order it named them. Stops at the per-signal
/// and per-day limits (one drop record for the targets past them);
/// deeper than the depth limit is one drop record per branch.
pub fn propagate(
    world: &World,
    handlers: &CascadeHandlers,
    signal_fact: FactId,
    writer: Option<&str>,
    signal: &CascadeSignal,
) -> Vec<CascadeDelivery> {
    let mut made = Vec::new();
    if signal.dropped.is_some() || handlers.is_empty() {
        return made;
    }
    let limits = CascadeLimits::of(world);
    let mut left_today = world.cascade.deliveries_left_today(signal.at_ms, limits.deliveries_per_day_max);
    let mut delivered: u64 = 0;
    let seed = u64::from_be_bytes(signal_fact.0[..8].try_into().expect("32 bytes"));
    let signal_json = |path: &[String]| {
        json!({
            "origin": signal.space, "kind": signal.kind.as_str(), "payload": signal.payload,
            "from": writer.map(|name| format!("@{name}")), "depth": path.len() - 1, "path": path,
        })
    };
    let record = |path: Vec<String>, handler: &str, dropped: Option<CascadeDrop>| CascadeDelivery {
        signal: signal_fact,
        path,
        handler: handler.to_string(),
        at_ms: signal.at_ms,
        dropped,
    };
    // Each entry: the route to a space whose handlers run.
    let mut queue: VecDeque<Vec<String>> = VecDeque::from([vec![signal.space.clone()]]);
    while let Some(route) = queue.pop_front() {
        let here = route.last().expect("a route has its space").clone();
        let inputs_here = here_json(world, &here);
        let inputs_signal = signal_json(&route);
        for handler in handlers.iter().filter(|handler| !crate::ownership::is_blocked(world, &handler.extension, &here))
        {
            let inputs: [(&str, &Json); 2] = [("signal", &inputs_signal), ("here", &inputs_here)];
            let run_limits =
                crate::script::RunLimits::of(world, "cascade_handler_operations_max", CASCADE_HANDLER_OPERATIONS_MAX);
            let output =
                crate::script::within_limits(run_limits, || handlers.engine.run(&handler.source, &inputs, seed))
                    .map_err(HandlerFailure::from)
                    .and_then(targets_of);
            let targets = match output {
                Ok(targets) => targets,
                Err(error) => {
                    let detail = cut(format!("{} at {here} failed: {error}", handler.name));
                    made.push(record(route.clone(), &handler.name, Some(drop(DropReason::Handler, detail, 0))));
                    continue;
                }
            };
            for (index, target) in targets.iter().enumerate() {
                let mut path = route.clone();
                path.push(target.clone());
                let depth = path.len() as u64 - 1;
                let rest = (targets.len() - index) as u64;
                if delivered >= limits.deliveries_per_signal_max {
                    let detail = format!(
                        "the signal made {delivered} deliveries, its most (cascade_deliveries_per_signal_max); \
                         {rest} more not made and propagation stopped"
                    );
                    made.push(record(path, &handler.name, Some(drop(DropReason::FanOut, detail, rest))));
                    return made;
                }
                if left_today == 0 {
                    let detail = format!(
                        "the land recorded {} deliveries today, its most (cascade_deliveries_per_day_max); \
                         {rest} more not made and propagation stopped",
                        limits.deliveries_per_day_max
                    );
                    made.push(record(path, &handler.name, Some(drop(DropReason::PerDay, detail, rest))));
                    return made;
                }
                if depth > limits.depth_max {
                    let detail =
                        format!("{target} would be {depth} hops deep, over {} (cascade_depth_max)", limits.depth_max);
                    made.push(record(path, &handler.name, Some(drop(DropReason::Depth, detail, 1))));
                    continue;
                }
                if !world.spaces.contains_key(target) {
                    let detail = format!("{} named {target}, which is no space of the land", handler.name);
                    made.push(record(path, &handler.name, Some(drop(DropReason::NoSpace, detail, 1))));
                    continue;
                }
                delivered += 1;
                left_today -= 1;
                made.push(record(path.clone(), &handler.name, None));
                if is_marked(world, target) {
                    queue.push_back(path);
                }
            }
        }
    }
    made
}

fn drop(reason: DropReason, detail: String, targets: u64) -> CascadeDrop {
    CascadeDrop { reason, detail, targets }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::Space;

    fn world_of(spaces: &[(&str, bool)]) -> World {
        let mut world = World::new();
        for (path, marked) in spaces {
            let mut qualities = BTreeMap::new();
            if *marked {
                qualities.insert(CASCADE_QUALITY.to_string(), Json::Bool(true));
            }
            world.spaces.insert(path.to_string(), Space { kind: "room".into(), qualities });
        }
        world
    }

    fn handlers(sources: &[&str]) -> CascadeHandlers {
        CascadeHandlers::new(
            sources
                .iter()
                .enumerate()
                .map(|(index, source)| CascadeHandler {
                    name: format!("test/{index}"),
                    extension: "test".into(),
                    source: Arc::from(*source),
                })
                .collect(),
        )
    }

    fn signal_at(space: &str) -> CascadeSignal {
        CascadeSignal {
            space: space.into(),
            kind: WriteKind::Signal,
            payload: json!({"key": "bell.rung", "value": 1}),
            cause: FactId([1; 32]),
            at_ms: 1_000,
            dropped: None,
        }
    }

    /// Each delivery as `to@depth` and each drop as `reason:to×targets`.
    fn summary(deliveries: &[CascadeDelivery]) -> Vec<String> {
        deliveries
            .iter()
            .map(|delivery| match &delivery.dropped {
                None => format!("{}@{}", delivery.to(), delivery.depth()),
                Some(dropped) => format!("{}:{}x{}", dropped.reason.as_str(), delivery.to(), dropped.targets),
            })
            .collect()
    }

    fn check(world: &World, config: &[(&str, u64)], sources: &[&str], origin: &str, expected: &[&str]) {
        let mut world = world.clone();
        for (key, value) in config {
            world.config.insert(key.to_string(), json!(value));
        }
        let made = propagate(&world, &handlers(sources), FactId([2; 32]), Some("ada"), &signal_at(origin));
        assert_eq!(summary(&made), expected, "from {origin} with {config:?}");
    }

    const CHILDREN: &str = "here.children";
    const SIBLINGS: &str = "here.siblings";
    const PARENT: &str = "if here.parent == () { [] } else { [here.parent] }";

    #[test]
    fn signals_fan_out_climb_and_stop_where_the_rules_say() {
        let tree = world_of(&[
            ("/hall", true),
            ("/hall/a", false),
            ("/hall/b", true),
            ("/hall/b/x", false),
            ("/hall/c", false),
            ("/yard", false),
        ]);
        // Children of a marked space; a marked child passes it on.
        check(&tree, &[], &[CHILDREN], "/hall", &["/hall/a@1", "/hall/b@1", "/hall/c@1", "/hall/b/x@2"]);
        // Ancestors: the root is no marked space, so it stops there.
        check(&tree, &[], &[PARENT], "/hall/b", &["/hall@1", "/@2"]);
        // A handler that returns nothing delivers nothing.
        check(&tree, &[], &["()"], "/hall", &[]);
        // Two handlers: each one's targets, in extension order.
        check(&tree, &[], &[r#""/yard""#, r#"["/hall/c"]"#], "/hall/b", &["/yard@1", "/hall/c@1"]);
        // The fan-out limit: one record for what is left, and it stops.
        check(
            &tree,
            &[("cascade_deliveries_per_signal_max", 2)],
            &[CHILDREN],
            "/hall",
            &["/hall/a@1", "/hall/b@1", "fan-out:/hall/cx1"],
        );
        // The land's daily limit likewise.
        check(
            &tree,
            &[("cascade_deliveries_per_day_max", 1)],
            &[CHILDREN],
            "/hall",
            &["/hall/a@1", "per-day:/hall/bx2"],
        );
    }

    #[test]
    fn a_loop_between_two_spaces_stops_at_the_depth_limit_with_a_record() {
        let pair = world_of(&[("/a", true), ("/b", true)]);
        let mut expected: Vec<String> =
            (1..=5).map(|depth| format!("{}@{depth}", if depth % 2 == 1 { "/b" } else { "/a" })).collect();
        expected.push("depth:/ax1".to_string());
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        let to_root_children = "if here.path == \"/a\" { [\"/b\"] } else { [\"/a\"] }";
        check(&pair, &[("cascade_depth_max", 5)], &[to_root_children], "/a", &expected);
        check(&pair, &[("cascade_depth_max", 5)], &[SIBLINGS], "/a", &expected);
    }

    #[test]
    fn a_failing_handler_or_a_missing_space_is_recorded_and_the_others_still_deliver() {
        let tree = world_of(&[("/hall", true), ("/hall/a", false)]);
        check(&tree, &[], &["throw \"no\"", CHILDREN], "/hall", &["handler:/hallx0", "/hall/a@1"]);
        check(&tree, &[], &["loop {}", CHILDREN], "/hall", &["handler:/hallx0", "/hall/a@1"]);
        // A handler counting 2,000 times: within the default budget, past a land's lower one.
        let counting = "let n = 0; for i in 0..2000 { n += 1; } here.children";
        check(&tree, &[], &[counting], "/hall", &["/hall/a@1"]);
        check(&tree, &[("cascade_handler_operations_max", 1_000)], &[counting], "/hall", &["handler:/hallx0"]);
        check(&tree, &[], &["42"], "/hall", &["handler:/hallx0"]);
        check(&tree, &[], &[r#"["Not A Space"]"#], "/hall", &["handler:/hallx0"]);
        check(&tree, &[], &[r#"["/nowhere", "/hall/a"]"#], "/hall", &["no-space:/nowherex1", "/hall/a@1"]);
    }

    #[test]
    fn the_rate_and_payload_limits_drop_the_signal_itself() {
        let mut world = world_of(&[("/hall", true)]);
        let announce = |world: &World, at_ms: u64, payload: Json| {
            signal_of(
                world,
                Announcement { space: "/hall".into(), kind: WriteKind::Signal, payload },
                FactId([3; 32]),
                at_ms,
            )
        };
        world.config.insert("cascade_signals_per_space_per_minute_max".into(), json!(2));
        for (index, at_ms) in [1_000, 2_000].into_iter().enumerate() {
            let signal = announce(&world, at_ms, json!(1));
            assert_eq!(signal.dropped, None);
            world.cascade.fold_signal(FactId([index as u8; 32]), index as u64, None, &signal);
        }
        let third = announce(&world, 3_000, json!(1));
        assert_eq!(third.dropped.map(|dropped| dropped.reason), Some(DropReason::Rate));
        // A minute after the first, there is room again.
        assert_eq!(announce(&world, 61_000, json!(1)).dropped, None);
        world.config.insert("cascade_payload_bytes_max".into(), json!(8));
        let large = announce(&world, 200_000, json!("a payload longer than eight bytes"));
        assert_eq!(large.dropped.map(|dropped| dropped.reason), Some(DropReason::Payload));
    }

    #[test]
    fn arrivals_are_kept_per_space_and_name_their_signal() {
        let mut state = CascadeState::default();
        let signal = signal_at("/hall");
        state.fold_signal(FactId([9; 32]), 10, Some(BeingId([4; 32])), &signal);
        let delivery = CascadeDelivery {
            signal: FactId([9; 32]),
            path: vec!["/hall".into(), "/hall/a".into()],
            handler: "test/0".into(),
            at_ms: 1_000,
            dropped: None,
        };
        state.fold_delivery(FactId([10; 32]), 11, &delivery);
        let arrival = state.arrival("/hall/a", &FactId([10; 32])).expect("arrived");
        assert_eq!((arrival.depth, arrival.writer, &arrival.origin), (1, Some(BeingId([4; 32])), &"/hall".to_string()));
        assert_eq!(arrival.payload, signal.payload);
        assert_eq!(state.delivered_in_day, 1);
        for seq in 0..(CASCADE_ARRIVALS_KEPT_PER_SPACE as u64 + 5) {
            state.fold_delivery(FactId([seq as u8; 32]), 100 + seq, &delivery);
        }
        assert_eq!(state.arrivals["/hall/a"].len(), CASCADE_ARRIVALS_KEPT_PER_SPACE);
    }
}
