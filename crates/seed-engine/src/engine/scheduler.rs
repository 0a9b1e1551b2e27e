//! The scheduler: which beings wake in a round. A summon not yet delivered,
//! a self-continue, a cascade signal that arrived at its space (when its
//! roleFlow reads one), a signal the being's flow reads that changed, or its
//! `wake_every` tick; each being is subscribed to the signals its roleFlow
//! reads.

use crate::fact::{BeingId, FactId};
use crate::world::{Wake, World};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

/// What the scheduler remembers between rounds (derived, not truth: a run
/// that resumes reads it from its checkpoint, `resume.rs`).
#[derive(Default, serde::Serialize, serde::Deserialize)]
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

impl Scheduler {
    /// Subscribes a being to the signals its flow reads.
    pub(super) fn subscribe(&mut self, world: &World, being: BeingId, flow: &Json) {
        let keys: Vec<String> = crate::roles::RoleFlow::from_json(flow)
            .map(|flow| {
                flow.world_subscriptions().iter().map(|key| key.trim_start_matches("world.").to_string()).collect()
            })
            .unwrap_or_default();
        // A being whose flow reads no signal has nothing seen to keep (a
        // crowd of a million has no signal to read).
        match keys.is_empty() {
            true => self.seen_signals.remove(&being),
            false => self.seen_signals.insert(being, Scheduler::signals_now(world, &keys)),
        };
        self.subscriptions.insert(being, keys);
        let reads_cascade = crate::roles::RoleFlow::from_json(flow).is_ok_and(|flow| flow.reads_cascade());
        match reads_cascade {
            true => {
                let from = self.cascade_from.get(&being).copied().unwrap_or(world.cursor);
                self.cascade_from.insert(being, from);
            }
            false => {
                self.cascade_from.remove(&being);
            }
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
