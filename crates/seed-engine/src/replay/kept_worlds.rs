//! Worlds kept in memory between replays of one land's beings.
//!
//! A replay of one being starts by folding the land up to its first moment.
//! On a land of a million beings planted at once, that is a million geneses
//! folded again for every being asked for, seconds each time, while the
//! world where the land's first act opened is the same for every replay.
//! A process that replays many beings of one land (the portal) keeps such
//! worlds here: a replay leaves a copy of its world where it stood at a
//! moment's opening if that world is whole (every fact before it folded:
//! nothing passed over, no snapshot read with one being's memory), and the
//! next replay starts from the latest kept world at or before where it must
//! begin. A kept world is the fold of the facts before its cursor, which
//! never change, so it is never stale; rows and memories are shared behind
//! pointers, so taking one copies the maps' structure, not the beings.
//!
//! Past its first moment, such a replay passes over the acts of other
//! beings that change nothing but their actor's activity, and to tell them
//! it reads each act's bytes: on the million land, three million acts read
//! for every being asked for. Whether a fact is one of those depends on its
//! bytes alone, which never change, so the same keeper remembers it, one
//! bit a land seq (`passable`), as replays learn it: the next replay reads
//! only the facts it folds.
//!
//! [`keep_world_at_first_act`] folds that first world ahead of any request
//! and [`learn_passable_facts`] reads the rest of the land log once (the
//! portal does both on a thread of its own as it opens a land).

use super::{ReplayDefinitions, ReplayError, ReplayOptions, Replayer, REPLAY_LAND_LOG_CHUNK_ENTRIES};
use crate::fact::Fact;
use crate::store::{LandEntry, LandLogRead, Store};
use crate::world::body::KIND_ACT;
use crate::world::World;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Worlds a [`KeptWorlds`] holds at most: the least recently used goes
/// first. Each may be as large as the land's live world (about 1 GB at a
/// million beings), and a land has one first act.
pub const REPLAY_WORLDS_KEPT_MAX: usize = 2;

/// Whole worlds of one land, by cursor, for its replays to start from. The
/// owner keeps one per store: a world kept from one land is nothing to
/// another's replays.
#[derive(Default)]
pub struct KeptWorlds {
    held: Mutex<Held>,
    /// How many worlds are being folded to be kept ([`KeptWorlds::warming`]).
    warming: Mutex<usize>,
    /// Held by whoever reads the land log to learn passable facts
    /// ([`learn_passable_facts`]): another reader meanwhile leaves it to them.
    learning: Mutex<()>,
    warming_done: std::sync::Condvar,
}

/// A world being folded to be kept: replays that wait for it
/// ([`KeptWorlds::wait_while_warming`]) go on when this is dropped.
pub struct Warming {
    kept: Arc<KeptWorlds>,
}

impl Drop for Warming {
    fn drop(&mut self) {
        let mut warming = self.kept.warming.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *warming = warming.saturating_sub(1);
        self.kept.warming_done.notify_all();
    }
}

#[derive(Default)]
struct Held {
    /// By cursor: the world and when it was last kept or taken.
    worlds: BTreeMap<u64, (Arc<World>, u64)>,
    /// Counts keeps and takes: the order of use, for eviction.
    uses: u64,
    /// Bit `land_seq` (of the first `passable_known`): whether that fact
    /// changes nothing but its actor's activity
    /// (`world::reach::changes_only_its_actors_activity`).
    passable: Vec<u64>,
    passable_known: u64,
}

impl KeptWorlds {
    pub fn new() -> KeptWorlds {
        KeptWorlds::default()
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Marks a world as being folded to be kept, until the mark is dropped.
    pub fn warming(self: &Arc<KeptWorlds>) -> Warming {
        *self.warming.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        Warming { kept: self.clone() }
    }

    /// Waits until no world is being folded to be kept: a replay asked
    /// meanwhile would fold the same facts beside it, slower than waiting.
    pub fn wait_while_warming(&self) {
        let mut warming = self.warming.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while *warming > 0 {
            warming = self.warming_done.wait(warming).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// The latest kept world whose cursor is at most `cursor`.
    pub fn latest_at_or_before(&self, cursor: u64) -> Option<(u64, Arc<World>)> {
        let mut held = self.held();
        held.uses += 1;
        let uses = held.uses;
        let (at, (world, last_used)) = held.worlds.range_mut(..=cursor).next_back()?;
        *last_used = uses;
        Some((*at, world.clone()))
    }

    /// Keeps a copy of `world` (which must be the whole fold of the facts
    /// before its cursor), unless one at its cursor is kept already.
    pub fn keep(&self, world: &World) {
        let mut held = self.held();
        held.uses += 1;
        let uses = held.uses;
        if let Some((_, last_used)) = held.worlds.get_mut(&world.cursor) {
            *last_used = uses;
            return;
        }
        while held.worlds.len() >= REPLAY_WORLDS_KEPT_MAX {
            let least_recent = held.worlds.iter().min_by_key(|(_, (_, last_used))| *last_used).map(|(at, _)| *at);
            match least_recent {
                Some(at) => held.worlds.remove(&at),
                None => break,
            };
        }
        held.worlds.insert(world.cursor, (Arc::new(world.clone()), uses));
    }

    /// The cursors of the worlds kept, in order.
    pub fn cursors(&self) -> Vec<u64> {
        self.held().worlds.keys().copied().collect()
    }

    /// Whether each fact at land seqs `from..to` changes nothing but its
    /// actor's activity, if all of them were learnt.
    pub fn passable(&self, from: u64, to: u64) -> Option<Vec<bool>> {
        let held = self.held();
        (from <= to && to <= held.passable_known).then(|| {
            (from..to).map(|land_seq| held.passable[(land_seq / 64) as usize] >> (land_seq % 64) & 1 == 1).collect()
        })
    }

    /// The first land seq from `from` (below `limit`) not learnt to change
    /// nothing but its actor's activity (or not learnt at all); `from` if
    /// that one is not, `limit` if all up to it are. Read a word at a time.
    pub fn passable_run_end(&self, from: u64, limit: u64) -> u64 {
        let held = self.held();
        let end = limit.min(held.passable_known);
        let mut land_seq = from;
        while land_seq < end {
            let offset = land_seq % 64;
            let ones = u64::from((held.passable[(land_seq / 64) as usize] >> offset).trailing_ones()).min(64 - offset);
            land_seq += ones;
            if ones < 64 - offset {
                break;
            }
        }
        land_seq.min(end).max(from)
    }

    /// How many facts at land seqs `from..to` a replay passing over what is
    /// learnt would still fold: those not learnt to change nothing but their
    /// actor's activity, and those not learnt at all. Counted a word at a
    /// time (a million land seqs are about 16,000 words).
    pub fn facts_to_fold(&self, from: u64, to: u64) -> u64 {
        let held = self.held();
        let known_end = to.min(held.passable_known).max(from);
        let mut passable = 0;
        let mut land_seq = from;
        while land_seq < known_end {
            let offset = land_seq % 64;
            let span = (64 - offset).min(known_end - land_seq);
            let bits = held.passable[(land_seq / 64) as usize] >> offset;
            let bits = if span == 64 { bits } else { bits & ((1 << span) - 1) };
            passable += u64::from(bits.count_ones());
            land_seq += span;
        }
        to.saturating_sub(from) - passable
    }

    /// How many land seqs, from the first, are learnt.
    pub fn passable_known(&self) -> u64 {
        self.held().passable_known
    }

    /// Learns, for each `(land_seq, passable)`, whether that fact changes
    /// nothing but its actor's activity: kept if the land seqs run on one
    /// after another (a read with a hole teaches nothing) and follow what is
    /// known (what is known already is not read again).
    pub fn learn_passable(&self, learnt: impl IntoIterator<Item = (u64, bool)>) {
        let learnt: Vec<(u64, bool)> = learnt.into_iter().collect();
        let Some(&(from, _)) = learnt.first() else { return };
        if !learnt.iter().zip(from..).all(|((land_seq, _), expected)| *land_seq == expected) {
            return;
        }
        let mut held = self.held();
        let known = held.passable_known;
        let end = from + learnt.len() as u64;
        if from > known || end <= known {
            return;
        }
        for land_seq in known..end {
            let word = (land_seq / 64) as usize;
            if word == held.passable.len() {
                held.passable.push(0);
            }
            if learnt[(land_seq - from) as usize].1 {
                held.passable[word] |= 1 << (land_seq % 64);
            }
        }
        held.passable_known = end;
    }
}

/// Reads the land log from what `kept` knows to the land's end, as stored,
/// and learns which facts change nothing but their actor's activity (unless
/// another thread is reading it for `kept` already: then nothing).
pub fn learn_passable_facts(store: &dyn Store, kept: &KeptWorlds) -> Result<(), crate::store::StoreError> {
    let Ok(_learning) = kept.learning.try_lock() else { return Ok(()) };
    let land_len = store.land_len()?;
    let mut read = LandLogRead::default();
    let mut from = kept.passable_known();
    while from < land_len {
        let to = land_len.min(from + REPLAY_LAND_LOG_CHUNK_ENTRIES);
        store.land_log_with_envelopes_unverified(from, to, &mut read)?;
        if read.iter().count() as u64 == to - from {
            let changes_only_activity = crate::world::reach::changes_only_its_actors_activity;
            kept.learn_passable(read.iter().map(|(entry, envelope)| (entry.land_seq, changes_only_activity(envelope))));
        }
        if kept.passable_known() < to {
            // A hole in the log: replays read this stretch themselves.
            return Ok(());
        }
        from = to;
    }
    Ok(())
}

/// Whether the envelope holds an act (its kind read in place, as stored).
pub(crate) fn is_act(envelope: &[u8]) -> bool {
    Fact::peek_kind_and_body(envelope).is_some_and(|(kind, _)| kind == KIND_ACT)
}

/// The land log's first act: its entry. `None` on a land where nothing
/// acted yet. Read as stored (the kind is all that is read); the replay
/// that follows reads what it folds checked.
pub fn first_act(store: &dyn Store) -> Result<Option<LandEntry>, crate::store::StoreError> {
    let land_len = store.land_len()?;
    let mut read = LandLogRead::default();
    let mut from = 0;
    while from < land_len {
        let to = land_len.min(from + REPLAY_LAND_LOG_CHUNK_ENTRIES);
        store.land_log_with_envelopes_unverified(from, to, &mut read)?;
        let found = read.iter().find(|(_, envelope)| is_act(envelope));
        if let Some((entry, _)) = found {
            return Ok(Some(*entry));
        }
        from = to;
    }
    Ok(None)
}

/// Folds the world where the land's first act opened and keeps it in
/// `kept` (by replaying that act: its replay leaves the world there).
/// Returns the cursor kept, `None` on a land where nothing acted yet (or
/// whose first act's replay could not leave a whole world: a fact before it
/// does not read).
pub fn keep_world_at_first_act(
    store: &dyn Store,
    definitions: ReplayDefinitions<'_>,
    kept: &KeptWorlds,
) -> Result<Option<u64>, ReplayError> {
    let Some(entry) = first_act(store)? else { return Ok(None) };
    // Going on past problems: one in the being's reel does not keep the
    // fold from reaching the act's opening, and what the replay reports is
    // not read here.
    let options = ReplayOptions { from_seq: entry.seq, to_seq: entry.seq, keep_going: true };
    let mut replayer = Replayer::with_definitions(store, definitions, entry.being, options)?.with_kept_worlds(kept);
    replayer.run_in_place()?;
    Ok(replayer.worlds_left_kept().first().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Learns each `(from, passable)` in turn, then checks what is known.
    fn check(lessons: &[(u64, &[bool])], known: u64, expected: &[bool]) {
        let kept = KeptWorlds::new();
        for (from, passable) in lessons {
            kept.learn_passable(passable.iter().zip(*from..).map(|(passable, land_seq)| (land_seq, *passable)));
        }
        assert_eq!(kept.passable_known(), known, "{lessons:?}");
        assert_eq!(kept.passable(0, known).as_deref(), Some(expected), "{lessons:?}");
        assert_eq!(kept.passable(0, known + 1), None, "{lessons:?}: asked past what is known");
    }

    #[test]
    fn what_is_learnt_follows_what_is_known_and_is_never_learnt_again() {
        let (t, f) = (true, false);
        check(&[], 0, &[]);
        check(&[(0, &[t, f])], 2, &[t, f]);
        check(&[(0, &[t, f]), (2, &[t])], 3, &[t, f, t]);
        // A gap is not learnt: what lies between is unknown.
        check(&[(0, &[t, f]), (3, &[t])], 2, &[t, f]);
        check(&[(1, &[t])], 0, &[]);
        // A read with a hole in it teaches nothing.
        let kept = KeptWorlds::new();
        kept.learn_passable([(0, t), (2, t)]);
        assert_eq!(kept.passable_known(), 0, "learnt across a hole");
        // Overlapping: only what follows is taken.
        check(&[(0, &[t, f]), (1, &[t, f, t])], 4, &[t, f, f, t]);
        check(&[(0, &[t, f, t]), (0, &[f, f])], 3, &[t, f, t]);
        // Across words of 64 bits.
        let long: Vec<bool> = (0..130).map(|land_seq| land_seq % 3 == 0).collect();
        check(&[(0, &long[..70]), (70, &long[70..])], 130, &long);
    }

    #[test]
    fn a_replay_waits_while_a_world_is_folded_to_be_kept_and_goes_on_after() {
        let kept = Arc::new(KeptWorlds::new());
        // Nothing warming: no wait.
        kept.wait_while_warming();
        let warming = kept.warming();
        let (waited, done) = std::sync::mpsc::channel();
        let waiting = kept.clone();
        let replay = std::thread::spawn(move || {
            waiting.wait_while_warming();
            let _ = waited.send(());
        });
        // A replay that did not wait would have answered long before this.
        let early = done.recv_timeout(std::time::Duration::from_millis(300));
        assert_eq!(early, Err(std::sync::mpsc::RecvTimeoutError::Timeout), "went on while warming");
        drop(warming);
        assert_eq!(done.recv_timeout(std::time::Duration::from_secs(30)), Ok(()), "still waiting after the warm-up");
        replay.join().expect("joins");
    }

    #[test]
    fn the_facts_to_fold_are_those_not_learnt_passable_and_those_not_learnt() {
        let learnt: Vec<bool> =
            (0..300u64).map(|land_seq| land_seq % 7 != 3 && !(100..140).contains(&land_seq)).collect();
        let kept = KeptWorlds::new();
        kept.learn_passable(learnt[..250].iter().copied().zip(0..).map(|(passable, land_seq)| (land_seq, passable)));
        for from in [0, 1, 3, 63, 64, 65, 100, 127, 128, 200, 249, 250, 260] {
            for to in [0, 1, 3, 64, 65, 128, 129, 191, 192, 249, 250, 251, 300] {
                let not_passable = (from..to).filter(|land_seq| *land_seq >= 250 || !learnt[*land_seq as usize]);
                assert_eq!(kept.facts_to_fold(from, to), not_passable.count() as u64, "from {from} to {to}");
            }
        }
    }

    #[test]
    fn a_run_of_passable_facts_ends_at_the_first_that_is_not_or_is_not_known() {
        let mut learnt = [true; 200];
        learnt[5] = false;
        learnt[130] = false;
        let kept = KeptWorlds::new();
        kept.learn_passable(learnt[..190].iter().copied().zip(0..).map(|(passable, land_seq)| (land_seq, passable)));
        for (from, limit, expected) in [
            (0, 200, 5),
            (5, 200, 5),
            (6, 200, 130),
            (6, 100, 100),
            (64, 200, 130),
            (63, 64, 64),
            (131, 1000, 190),
            (190, 1000, 190),
            (250, 1000, 250),
            (7, 7, 7),
        ] {
            assert_eq!(kept.passable_run_end(from, limit), expected, "from {from} below {limit}");
        }
    }
}
