//! One cascade signal's flow as a person reads it (`seed cascade`, the
//! portal's cascade page): the signal, then every delivery and drop it
//! made as a tree by route, each citing its fact.
//!
//! The signal is found by its fact id (or a prefix of at least
//! [`FACT_ID_PREFIX_HEX_MIN`] hex digits: the newest fact it begins),
//! looked for from the land's end backwards, a window at a time, so a
//! recent signal is found after reading little. Its deliveries are the facts that follow it on the same
//! reel (the engine seals them there, one after another), so building the
//! tree reads the tree and nothing else. The acts each arrival woke are read
//! from the facts after the signal, at most [`CASCADE_WAKES_SCAN_FACTS_MAX`]
//! of them (the answer says where it stopped). An act's id may be given
//! too: its signals are shown, each as its own tree.

use crate::cascade::{CascadeDelivery, CascadeDrop, CascadeSignal};
use crate::engine::EngineError;
use crate::fact::{BeingId, Fact, FactId};
use crate::store::Store;
use crate::world::body::{Effect, WorldBody, KIND_ACT, KIND_WORLD};
use serde_json::{json, Value as Json};

/// Fewest hex digits of a fact id `seed cascade` takes (the reel view shows twelve).
pub const FACT_ID_PREFIX_HEX_MIN: usize = 12;
/// Land log entries read at a time while looking for a fact.
const SEARCH_WINDOW_ENTRIES: u64 = 4_096;
/// Reel facts read at a time while gathering a signal's deliveries.
const REEL_WINDOW_FACTS: u64 = 1_024;
/// Facts after a signal read for the acts its arrivals woke.
pub const CASCADE_WAKES_SCAN_FACTS_MAX: u64 = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum CascadeViewError {
    #[error("{given:?} is not a fact id: give its hex digits (at least {FACT_ID_PREFIX_HEX_MIN}, as `seed reel` shows them)")]
    BadId { given: String },
    #[error("no fact of the land has an id beginning {given}")]
    NotFound { given: String },
    #[error("{given} begins the ids of more than one fact ({first} and {second}): give more digits")]
    Ambiguous { given: String, first: String, second: String },
    #[error("fact {fact} is a {kind} fact, not a cascade signal, a delivery or an act that announced one")]
    NotACascade { fact: String, kind: String },
    #[error("act {fact} wrote nowhere marked for cascade: it announced no signal")]
    NoSignals { fact: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// A fact of the tree: where it is in the land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cited {
    pub fact: FactId,
    pub land_seq: u64,
    pub being: BeingId,
    pub seq: u64,
}

impl Cited {
    fn of(fact: &Fact, land_seq: u64) -> Cited {
        Cited { fact: fact.id(), land_seq, being: fact.header.being, seq: fact.header.seq }
    }

    fn to_json(&self) -> Json {
        json!({"fact": self.fact.to_hex(), "landSeq": self.land_seq, "reelSeq": self.seq})
    }
}

/// One signal and what it delivered, in the order they were sealed.
#[derive(Debug, Clone)]
pub struct SignalTree {
    pub cited: Cited,
    /// The writer's name (the reel's being).
    pub writer: String,
    pub signal: CascadeSignal,
    pub deliveries: Vec<(Cited, CascadeDelivery)>,
    /// The acts each arrival (the signal's own fact, or a delivery's) woke:
    /// the being's name and the act.
    pub woke: std::collections::BTreeMap<FactId, Vec<(String, Cited)>>,
    /// Land seqs read for them, and whether the land went on past the last.
    pub woke_scanned: (u64, u64, bool),
}

impl SignalTree {
    /// Deliveries made and dropped, and the targets the drops stand for.
    pub fn counts(&self) -> (usize, usize, u64) {
        let made = self.deliveries.iter().filter(|(_, delivery)| delivery.dropped.is_none()).count();
        let dropped: Vec<&CascadeDrop> =
            self.deliveries.iter().filter_map(|(_, delivery)| delivery.dropped.as_ref()).collect();
        (made, dropped.len(), dropped.iter().map(|drop| drop.targets.max(1)).sum())
    }

    /// The index of each delivery's parent in `deliveries` (`None`: the
    /// signal itself): the latest made delivery before it whose route is
    /// its route less its last space.
    fn parents(&self) -> Vec<Option<usize>> {
        let mut parents = Vec::with_capacity(self.deliveries.len());
        for (index, (_, delivery)) in self.deliveries.iter().enumerate() {
            let route = &delivery.path[..delivery.path.len().saturating_sub(1)];
            let parent = (0..index).rev().find(|earlier| {
                let (_, earlier) = &self.deliveries[*earlier];
                earlier.dropped.is_none() && earlier.path == route
            });
            parents.push(parent);
        }
        parents
    }

    fn children_of(&self, parents: &[Option<usize>], parent: Option<usize>) -> Vec<usize> {
        (0..self.deliveries.len()).filter(|index| parents[*index] == parent).collect()
    }

    pub fn to_json(&self) -> Json {
        let parents = self.parents();
        let (made, dropped, targets_dropped) = self.counts();
        json!({
            "signal": {
                "fact": self.cited.to_json(),
                "writer": format!("@{}", self.writer),
                "space": self.signal.space,
                "write": self.signal.kind.as_str(),
                "payload": self.signal.payload,
                "cause": self.signal.cause.to_hex(),
                "atMs": self.signal.at_ms,
                "dropped": drop_json(self.signal.dropped.as_ref()),
            },
            "delivered": made,
            "dropped": dropped,
            "targetsDropped": targets_dropped,
            "wokeScanned": {"from": self.woke_scanned.0, "to": self.woke_scanned.1, "cut": self.woke_scanned.2},
            "tree": {
                "space": self.signal.space,
                "woke": self.woke_json(&self.cited.fact),
                "children": self.children_of(&parents, None).into_iter().map(|child| self.node_json(&parents, child)).collect::<Vec<_>>(),
            },
        })
    }

    fn woke_json(&self, arrival: &FactId) -> Json {
        let woke = self.woke.get(arrival).map(Vec::as_slice).unwrap_or_default();
        Json::Array(
            woke.iter().map(|(being, act)| json!({"being": format!("@{being}"), "act": act.to_json()})).collect(),
        )
    }

    fn woke_line(&self, arrival: &FactId) -> String {
        let woke = self.woke.get(arrival).map(Vec::as_slice).unwrap_or_default();
        if woke.is_empty() {
            return String::new();
        }
        let names: Vec<String> =
            woke.iter().map(|(being, act)| format!("@{being} (act {})", act.fact.short())).collect();
        format!("; woke {}", names.join(", "))
    }

    fn node_json(&self, parents: &[Option<usize>], index: usize) -> Json {
        let (cited, delivery) = &self.deliveries[index];
        json!({
            "woke": self.woke_json(&cited.fact),
            "space": delivery.to(),
            "depth": delivery.depth(),
            "path": delivery.path,
            "handler": delivery.handler,
            "fact": cited.to_json(),
            "dropped": drop_json(delivery.dropped.as_ref()),
            "children": self.children_of(parents, Some(index)).into_iter().map(|child| self.node_json(parents, child)).collect::<Vec<_>>(),
        })
    }

    /// The tree drawn in text, one line a delivery.
    pub fn to_text(&self) -> String {
        let parents = self.parents();
        let (made, dropped, targets_dropped) = self.counts();
        let mut out = format!(
            "signal {} by @{} at {} ({} {}), land seq {}\n",
            self.cited.fact.to_hex(),
            self.writer,
            self.signal.space,
            self.signal.kind.as_str(),
            compact(&self.signal.payload),
            self.cited.land_seq,
        );
        if let Some(drop) = &self.signal.dropped {
            out.push_str(&format!("  not announced: {}: {}\n", drop.reason.as_str(), drop.detail));
            return out;
        }
        out.push_str(&format!(
            "{made} delivered, {dropped} dropped{}\n",
            if targets_dropped > dropped as u64 { format!(" ({targets_dropped} targets)") } else { String::new() }
        ));
        out.push_str(&self.signal.space);
        out.push_str(&self.woke_line(&self.cited.fact));
        out.push('\n');
        self.draw(&parents, None, "", &mut out);
        out
    }

    fn draw(&self, parents: &[Option<usize>], parent: Option<usize>, indent: &str, out: &mut String) {
        let children = self.children_of(parents, parent);
        for (position, child) in children.iter().enumerate() {
            let last = position + 1 == children.len();
            let (cited, delivery) = &self.deliveries[*child];
            let (branch, deeper) = if last { ("└─ ", "   ") } else { ("├─ ", "│  ") };
            let line = match &delivery.dropped {
                None => format!(
                    "{} ({}, fact {}){}",
                    delivery.to(),
                    delivery.handler,
                    cited.fact.short(),
                    self.woke_line(&cited.fact)
                ),
                Some(drop) => format!(
                    "✗ {} dropped, {}: {} (fact {})",
                    delivery.to(),
                    drop.reason.as_str(),
                    drop.detail,
                    cited.fact.short()
                ),
            };
            out.push_str(&format!("{indent}{branch}{line}\n"));
            self.draw(parents, Some(*child), &format!("{indent}{deeper}"), out);
        }
    }
}

fn compact(value: &Json) -> String {
    let text = value.to_string();
    if text.chars().count() <= 80 {
        return text;
    }
    let mut cut: String = text.chars().take(80).collect();
    cut.push('…');
    cut
}

fn drop_json(drop: Option<&CascadeDrop>) -> Json {
    drop.map_or(
        Json::Null,
        |drop| json!({"reason": drop.reason.as_str(), "detail": drop.detail, "targets": drop.targets}),
    )
}

/// What a `world` fact of the cascade holds, if it is one.
enum CascadeFact {
    Signal(CascadeSignal),
    Delivery(CascadeDelivery),
}

fn cascade_fact(fact: &Fact) -> Option<CascadeFact> {
    if fact.kind() != KIND_WORLD {
        return None;
    }
    let body = fact.body_as::<WorldBody>().ok()?;
    match body.effects.into_iter().next()? {
        Effect::CascadeSignal { signal } => Some(CascadeFact::Signal(signal)),
        Effect::CascadeDelivery { delivery } => Some(CascadeFact::Delivery(delivery)),
        _ => None,
    }
}

/// The trees of the fact `given` names (a signal, one of its deliveries, or
/// an act that announced signals).
pub fn trees_of(store: &dyn Store, given: &str) -> Result<Vec<SignalTree>, CascadeViewError> {
    let given = given.trim().to_ascii_lowercase();
    if given.len() < FACT_ID_PREFIX_HEX_MIN || given.len() > 64 || !given.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(CascadeViewError::BadId { given });
    }
    let (found, land_seq) = find_fact(store, &given)?;
    let name = being_name(store, &found.header.being)?;
    let after = |seq: u64| reel_after(store, &found.header.being, seq);
    match (found.kind(), cascade_fact(&found)) {
        (_, Some(CascadeFact::Signal(signal))) => {
            let deliveries = deliveries_after(&found, &after(found.header.seq)?)?;
            let mut tree = SignalTree {
                cited: Cited::of(&found, land_seq),
                writer: name,
                signal,
                deliveries,
                woke: Default::default(),
                woke_scanned: (0, 0, false),
            };
            find_woken(store, &mut tree)?;
            Ok(vec![tree])
        }
        (_, Some(CascadeFact::Delivery(delivery))) => {
            let hex = delivery.signal.to_hex();
            trees_of(store, &hex)
        }
        (KIND_ACT, None) => {
            let mut trees = Vec::new();
            let following = after(found.header.seq)?;
            let mut rest = following.as_slice();
            while let Some(((fact, land_seq), tail)) = rest.split_first() {
                match cascade_fact(fact) {
                    Some(CascadeFact::Signal(signal)) if signal.cause == found.id() => {
                        let deliveries = deliveries_after(fact, tail)?;
                        let skip = deliveries.len();
                        let mut tree = SignalTree {
                            cited: Cited::of(fact, *land_seq),
                            writer: name.clone(),
                            signal,
                            deliveries,
                            woke: Default::default(),
                            woke_scanned: (0, 0, false),
                        };
                        find_woken(store, &mut tree)?;
                        trees.push(tree);
                        rest = &tail[skip.min(tail.len())..];
                    }
                    _ => break,
                }
            }
            if trees.is_empty() {
                return Err(CascadeViewError::NoSignals { fact: found.id().to_hex() });
            }
            Ok(trees)
        }
        (kind, None) => Err(CascadeViewError::NotACascade { fact: found.id().to_hex(), kind: kind.to_string() }),
    }
}

/// The acts woken by the tree's arrivals, read from the facts after the
/// signal (at most [`CASCADE_WAKES_SCAN_FACTS_MAX`] of them).
fn find_woken(store: &dyn Store, tree: &mut SignalTree) -> Result<(), CascadeViewError> {
    let arrivals: std::collections::BTreeSet<FactId> = std::iter::once(tree.cited.fact)
        .chain(tree.deliveries.iter().filter(|(_, delivery)| delivery.dropped.is_none()).map(|(cited, _)| cited.fact))
        .collect();
    let from = tree.cited.land_seq + 1;
    let land_len = store.land_len()?;
    let to = land_len.min(from.saturating_add(CASCADE_WAKES_SCAN_FACTS_MAX));
    let mut woken: Vec<(FactId, BeingId, Cited)> = Vec::new();
    crate::engine::for_each_land_fact(store, from.min(to), to, |land_seq, fact| {
        if fact.kind() != KIND_ACT {
            return;
        }
        if let Ok(act) = fact.body_as::<crate::world::ActBody>() {
            if let crate::world::Wake::Cascade { arrival } = act.wake {
                if arrivals.contains(&arrival) {
                    woken.push((arrival, fact.header.being, Cited::of(&fact, land_seq)));
                }
            }
        }
    })?;
    let mut names: std::collections::BTreeMap<BeingId, String> = std::collections::BTreeMap::new();
    for (arrival, being, act) in woken {
        let name = match names.get(&being) {
            Some(name) => name.clone(),
            None => {
                let name = being_name(store, &being)?;
                names.insert(being, name.clone());
                name
            }
        };
        tree.woke.entry(arrival).or_default().push((name, act));
    }
    tree.woke_scanned = (from, to, to < land_len);
    Ok(())
}

/// The deliveries of `signal_fact` among `following` (the reel's facts
/// after it): those that name it, up to the first that does not.
fn deliveries_after(
    signal_fact: &Fact,
    following: &[(Fact, u64)],
) -> Result<Vec<(Cited, CascadeDelivery)>, CascadeViewError> {
    let id = signal_fact.id();
    let mut deliveries = Vec::new();
    for (fact, land_seq) in following {
        match cascade_fact(fact) {
            Some(CascadeFact::Delivery(delivery)) if delivery.signal == id => {
                deliveries.push((Cited::of(fact, *land_seq), delivery));
            }
            _ => break,
        }
    }
    Ok(deliveries)
}

/// The facts of `being`'s reel after `seq`, up to the first that is not a
/// cascade fact, read a window at a time.
fn reel_after(store: &dyn Store, being: &BeingId, seq: u64) -> Result<Vec<(Fact, u64)>, CascadeViewError> {
    let Some(head) = store.head(being)? else { return Ok(Vec::new()) };
    let mut facts = Vec::new();
    let mut next = seq + 1;
    while next <= head.seq {
        let to = (next + REEL_WINDOW_FACTS).min(head.seq + 1);
        for stored in store.reel(being, next, to)? {
            if cascade_fact(&stored.fact).is_none() {
                return Ok(facts);
            }
            facts.push((stored.fact, stored.land_seq));
        }
        next = to;
    }
    Ok(facts)
}

/// The fact whose id begins `given`, looked for from the land's end back.
fn find_fact(store: &dyn Store, given: &str) -> Result<(Fact, u64), CascadeViewError> {
    let mut end = store.land_len()?;
    let mut found: Option<(Fact, u64)> = None;
    while end > 0 {
        let from = end.saturating_sub(SEARCH_WINDOW_ENTRIES);
        let mut window = Vec::new();
        crate::engine::for_each_land_fact(store, from, end, |land_seq, fact| {
            if fact.id().to_hex().starts_with(given) {
                window.push((fact, land_seq));
            }
        })?;
        for (fact, land_seq) in window.into_iter().rev() {
            if let Some((first, _)) = &found {
                return Err(CascadeViewError::Ambiguous {
                    given: given.to_string(),
                    first: first.id().to_hex(),
                    second: fact.id().to_hex(),
                });
            }
            found = Some((fact, land_seq));
        }
        // Newest first: a prefix of twelve or more digits names one fact
        // in practice, and two in one window are told apart above.
        if found.is_some() {
            break;
        }
        end = from;
    }
    found.ok_or_else(|| CascadeViewError::NotFound { given: given.to_string() })
}

fn being_name(store: &dyn Store, being: &BeingId) -> Result<String, CascadeViewError> {
    let genesis = store.reel(being, 0, 1)?;
    let name = genesis
        .first()
        .and_then(|stored| stored.fact.body_as::<crate::fact::body::GenesisBody>().ok())
        .map_or_else(|| being.to_hex(), |genesis| genesis.name);
    Ok(name)
}
