//! The scheduler: which beings wake in a round. A summon not yet delivered,
//! a self-continue, a cascade signal that arrived at its space (when its
//! roleFlow reads one), a signal the being's flow reads that changed, or its
//! `wake_every` tick; each being is subscribed to the signals its roleFlow
//! reads.

use crate::fact::{BeingId, FactId, Hash32};
use crate::world::{Wake, World};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

/// What the scheduler remembers between rounds (derived, not truth: a run
/// that resumes reads it from its checkpoint, `resume.rs`).
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Scheduler {
    /// Summons delivered, by the being they woke: one request for
    /// approval is one fact in several approvers' inboxes.
    delivered: BTreeSet<(BeingId, FactId)>,
    pub(super) continuing: BTreeSet<BeingId>,
    seen_signals: BTreeMap<BeingId, BTreeMap<String, Option<Json>>>,
    subscriptions: BTreeMap<BeingId, Vec<String>>,
    pub(super) wake_every: BTreeMap<BeingId, u64>,
    /// Beings whose flow reads a cascade arrival, each with the land seq
    /// from which an arrival at its space is new to it.
    cascade_from: BTreeMap<BeingId, u64>,
}

/// What a roleFlow has the scheduler watch for its being: the world
/// signals it reads (keys without `world.`) and whether it reads cascade
/// arrivals. A flow that does not read watches nothing.
#[derive(Default)]
struct FlowReads {
    signals: Vec<String>,
    reads_cascade: bool,
}

impl FlowReads {
    fn of(flow: &Json) -> FlowReads {
        let Ok(flow) = crate::roles::RoleFlow::from_json(flow) else { return FlowReads::default() };
        let signals = flow.world_subscriptions();
        FlowReads {
            signals: signals.iter().map(|key| key.trim_start_matches("world.").to_string()).collect(),
            reads_cascade: flow.reads_cascade(),
        }
    }
}

impl Scheduler {
    /// Subscribes a being to the signals its flow reads.
    pub(super) fn subscribe(&mut self, world: &World, being: BeingId, flow: &Json) {
        self.subscribe_reading(world, being, &FlowReads::of(flow));
    }

    /// [`Scheduler::subscribe`], its flow already read.
    fn subscribe_reading(&mut self, world: &World, being: BeingId, reads: &FlowReads) {
        // A being whose flow reads no signal has nothing seen to keep (a
        // crowd of a million has no signal to read).
        match reads.signals.is_empty() {
            true => self.seen_signals.remove(&being),
            false => self.seen_signals.insert(being, Scheduler::signals_now(world, &reads.signals)),
        };
        self.subscriptions.insert(being, reads.signals.clone());
        match reads.reads_cascade {
            true => {
                let from = self.cascade_from.get(&being).copied().unwrap_or(world.cursor);
                self.cascade_from.insert(being, from);
            }
            false => {
                self.cascade_from.remove(&being);
            }
        }
    }

    /// A scheduler with every being of `world` subscribed, as
    /// [`Scheduler::subscribe`] leaves a new one subscribing them one at a
    /// time, and with the `wake_every` of each being `wake_every_of` knows by
    /// name.
    ///
    /// Built for a whole land at once: rows planted from one template share
    /// one flow, read once (by its digest). Subscribing a million beings one
    /// at a time, reading each one's flow twice, took seconds of `seed up`'s
    /// opening.
    pub(super) fn subscribing_every_being(world: &World, wake_every_of: impl Fn(&str) -> Option<u64>) -> Scheduler {
        let mut reads_by_flow: BTreeMap<Hash32, FlowReads> = BTreeMap::new();
        // Each map is built whole from its entries in id order (the order
        // the world holds its beings in), which is linear: inserted one at
        // a time, each insert searched the map from its root, and a million
        // beings' took over a second of `seed up`'s opening.
        let mut seen_signals = Vec::new();
        let mut subscriptions = Vec::with_capacity(world.beings.len());
        let mut wake_every = Vec::with_capacity(world.beings.len());
        let mut cascade_from = Vec::new();
        for (id, row) in &world.beings {
            let read_now;
            let reads = match row.role_flow_digest {
                Some(digest) => reads_by_flow.entry(digest).or_insert_with(|| FlowReads::of(&row.role_flow)),
                None => {
                    read_now = FlowReads::of(&row.role_flow);
                    &read_now
                }
            };
            // What `subscribe_reading` does for a being a new scheduler does not know yet.
            if !reads.signals.is_empty() {
                seen_signals.push((*id, Scheduler::signals_now(world, &reads.signals)));
            }
            subscriptions.push((*id, reads.signals.clone()));
            if reads.reads_cascade {
                cascade_from.push((*id, world.cursor));
            }
            if let Some(every) = wake_every_of(&row.name) {
                wake_every.push((*id, every));
            }
        }
        Scheduler {
            seen_signals: BTreeMap::from_iter(seen_signals),
            subscriptions: BTreeMap::from_iter(subscriptions),
            wake_every: BTreeMap::from_iter(wake_every),
            cascade_from: BTreeMap::from_iter(cascade_from),
            ..Scheduler::default()
        }
    }

    /// Whether `being` was subscribed (every being the world held at the
    /// start, and every one born since).
    pub(super) fn knows(&self, being: &BeingId) -> bool {
        self.subscriptions.contains_key(being)
    }

    /// Records the signal values a being has now seen.
    pub(super) fn saw(&mut self, world: &World, being: BeingId) {
        if let Some(keys) = self.subscriptions.get(&being).filter(|keys| !keys.is_empty()) {
            let now = Scheduler::signals_now(world, keys);
            self.seen_signals.insert(being, now);
        }
    }

    fn signals_now(world: &World, keys: &[String]) -> BTreeMap<String, Option<Json>> {
        keys.iter().map(|key| (key.clone(), world.signals.get(key).cloned())).collect()
    }

    /// Which wake (if any) each scheduled being gets this round, in id
    /// order. A request of the being's that was decided, or expired by
    /// `now_ms`, comes first, whatever its cognition: applying or closing it
    /// is the substrate's (`crate::approval`); one per being and round.
    pub(super) fn wakes(&mut self, world: &World, tick: u64, now_ms: u64) -> Vec<(BeingId, Wake)> {
        let mut resolving: BTreeMap<BeingId, Wake> = BTreeMap::new();
        for (request, pending) in &world.approvals {
            let Some(decision) = crate::approval::resolution_due(pending, now_ms) else { continue };
            if world.beings.get(&pending.requester).is_none_or(|row| row.ended) {
                continue;
            }
            resolving.entry(pending.requester).or_insert(Wake::Approval { request: *request, decision });
        }
        let mut wakes = Vec::new();
        for (id, row) in &world.beings {
            if let Some(wake) = resolving.remove(id) {
                wakes.push((*id, wake));
                continue;
            }
            // Scripted, LLM and panel beings have moments here; a human's wakes wait
            // for a person (the portal), and the reality root has none.
            use crate::fact::body::Cognition;
            if row.ended
                || !matches!(row.effective_cognition(), Cognition::Scripted | Cognition::Llm | Cognition::Panel)
            {
                continue;
            }
            if let Some(summon) =
                world.inbox.get(id).and_then(|inbox| inbox.values().find(|s| !self.delivered.contains(&(*id, s.fact))))
            {
                self.delivered.insert((*id, summon.fact));
                wakes.push((*id, Wake::Summon { fact: summon.fact, from: summon.from }));
                continue;
            }
            if self.continuing.remove(id) {
                wakes.push((*id, Wake::SelfContinue));
                continue;
            }
            if let Some(from) = self.cascade_from.get(id).copied() {
                let arrived = world.cascade.arrivals.get(&row.location).and_then(|arrivals| {
                    arrivals.iter().find(|arrival| arrival.land_seq >= from && arrival.writer != Some(*id))
                });
                if let Some(arrival) = arrived {
                    self.cascade_from.insert(*id, arrival.land_seq + 1);
                    wakes.push((*id, Wake::Cascade { arrival: arrival.fact }));
                    continue;
                }
            }
            if let Some(keys) = self.subscriptions.get(id).filter(|keys| !keys.is_empty()) {
                let now = Scheduler::signals_now(world, keys);
                let seen = self.seen_signals.get(id);
                if let Some(changed) = keys.iter().find(|key| seen.and_then(|seen| seen.get(*key)) != now.get(*key)) {
                    wakes.push((*id, Wake::Signal { key: changed.clone() }));
                    continue;
                }
            }
            if let Some(every) = self.wake_every.get(id).filter(|every| **every > 0) {
                if tick.is_multiple_of(*every) {
                    wakes.push((*id, Wake::Tick { tick }));
                }
            }
        }
        // The round holds its wakes to its end: no room to spare beside them.
        wakes.shrink_to_fit();
        wakes
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fact::body::Cognition;
    use crate::world::{role_flow_digest, BeingRow};
    use std::sync::Arc;

    /// A scripted being's row, `being-BYTE` in `/square`.
    pub(crate) fn row(byte: u8, flow: &Arc<Json>, digest_kept: bool) -> BeingRow {
        BeingRow {
            id: BeingId([byte; 32]),
            acts: 0,
            name: format!("being-{byte}"),
            ended: false,
            parent: None,
            location: "/square".into(),
            cognition: Cognition::Scripted,
            qualities: BTreeMap::new(),
            role_flow: flow.clone(),
            home_space: "/square".into(),
            last_act_ms: None,
            default_role: "idle".into(),
            inhabited_by: None,
            previous_role: None,
            role_flow_digest: digest_kept.then(|| role_flow_digest(flow)).flatten(),
        }
    }

    /// Every being subscribed one at a time, as the scheduler did before
    /// it was built for a whole land at once.
    fn subscribed_one_at_a_time(world: &World, wake_every_of: impl Fn(&str) -> Option<u64>) -> Scheduler {
        let mut scheduler = Scheduler::default();
        for (id, row) in &world.beings {
            scheduler.subscribe(world, *id, &row.role_flow);
            if let Some(every) = wake_every_of(&row.name) {
                scheduler.wake_every.insert(*id, every);
            }
        }
        scheduler
    }

    #[test]
    fn every_being_subscribed_at_once_is_every_being_subscribed_one_at_a_time() {
        let flow = |text: &str| Arc::new(serde_json::from_str::<Json>(text).expect("a flow"));
        let flows = [
            flow(r#"[{"when": {"world.court.in-session": true}, "role": "judge"}]"#),
            flow(r#"[{"when": {"world.court.in-session": true, "world.weather": "rain"}, "role": "judge"}]"#),
            flow(r#"[{"when": {"cascade.depth": {"gte": 1}}, "role": "listener"}]"#),
            flow(r#"[{"stack": true, "when": {"time.sinceLastMoment": {"gte": 60}}, "role": "emotions:bored"}]"#),
            flow(r#"[]"#),
            flow(r#"{"not": "a flow"}"#),
        ];
        let mut world = World::new();
        world.cursor = 41;
        world.signals.insert("court.in-session".into(), Json::Bool(true));
        // Beings in id order take the flows in turn, some sharing one flow's
        // copy, some with a copy of their own, some with no digest kept.
        for byte in 1..=60u8 {
            let shared = &flows[usize::from(byte) % flows.len()];
            let flow = if byte % 4 == 0 { Arc::new((**shared).clone()) } else { shared.clone() };
            let row = row(byte, &flow, byte % 5 != 0);
            world.beings.insert(row.id, Arc::new(row));
        }
        let wake_every_of = |name: &str| {
            let byte: u64 = name.trim_start_matches("being-").parse().expect("a number");
            (!byte.is_multiple_of(3)).then_some(byte % 4)
        };
        let at_once = Scheduler::subscribing_every_being(&world, wake_every_of);
        let one_at_a_time = subscribed_one_at_a_time(&world, wake_every_of);
        // As a resumed run's checkpoint keeps it.
        let bytes = |scheduler: &Scheduler| crate::canonical::to_canonical_bytes(scheduler).expect("encodes");
        assert_eq!(bytes(&at_once), bytes(&one_at_a_time));
        assert_eq!(at_once.seen_signals.len(), 20, "the beings whose flows read world signals");
        assert_eq!(at_once.cascade_from.values().collect::<BTreeSet<_>>(), BTreeSet::from([&41]));
        assert_eq!(at_once.wake_every.len(), 40);
    }
}
