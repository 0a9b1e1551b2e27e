//! Facts of a step on their way to the store: prepared in order, signed in
//! parallel, submitted in order, each at the land seq the world folded it at,
//! and waited for before the step ends.

use super::EngineError;
use crate::fact::BeingId;
use crate::land::{Land, PendingSeal, Prepared, SignedFact, StagedKey};

/// Prepared facts signed and submitted together while a round is sealing.
pub(super) const SEAL_FLUSH_FACTS: usize = 1024;

/// Facts left to sign at a flush (none signed ahead) from which they are
/// signed on the step's threads rather than on the sealing thread alone.
pub(super) const FLUSH_SIGNED_ON_THREADS_FACTS_MIN: u64 = 16;

/// Facts of a round on their way to the store, with the land seq each will
/// get (the simulation is the land's only writer, so land seqs follow
/// submission order). Facts are prepared in order, signed in parallel, and
/// submitted in order.
pub(super) struct Sealing {
    prepared: Vec<(u64, Prepared)>,
    /// Submitted and not yet answered, in land order (the answered ones at
    /// its front are taken off as the step goes: a million-moment round
    /// held a seal for each of its facts until its end).
    pending: std::collections::VecDeque<(u64, PendingSeal)>,
    /// The first failure among the seals already taken off `pending`.
    settled_failure: Option<EngineError>,
    pub(super) next_land_seq: u64,
    threads: usize,
    /// A pool worker's turn: signed facts are held here, not submitted, and
    /// sealed together through the wake queue (`pool.rs`).
    held: Option<Vec<(u64, SignedFact)>>,
    /// Key rotations prepared in a held turn, finished once it is sealed.
    pub(super) rotations: Vec<(BeingId, StagedKey)>,
    /// A resumed run's catch-up (`resume.rs`): facts prepared at land seqs
    /// below it are the land's already, compared with the stored ones and
    /// never submitted.
    pub(super) catch_up_until: u64,
    /// What stops anything more being submitted: the first prepared fact
    /// that differed from the stored one, or the round's resume checkpoint
    /// that could not be written.
    stopped: Option<EngineError>,
    /// The round's resume checkpoint, still being written: waited for
    /// before the first fact is submitted (`resume.rs`).
    resume_checkpoint: Option<super::resume::CheckpointInWriting>,
    /// How many facts took a signature made ahead where their moments ran
    /// (`Land::prepare_canonical_ahead`), how many were signed here, and
    /// how many facts signed ahead were not the fact their turn prepared.
    pub(super) signed_ahead: u64,
    pub(super) signed_here: u64,
    pub(super) unused_ahead: u64,
}

/// Whether each prepared fact is the one the land holds at its land seq
/// (a resumed run's catch-up): the first that is not is the error.
pub(super) fn same_as_stored(land: &Land, prepared: &[(u64, Prepared)]) -> Result<(), EngineError> {
    let (Some((first, _)), Some((last, _))) = (prepared.first(), prepared.last()) else { return Ok(()) };
    let stored = land.store().land_log_with_envelopes(*first, last + 1)?;
    for ((land_seq, fact), (entry, envelope)) in prepared.iter().zip(&stored) {
        let held = crate::store::decode_entry_envelope(entry, envelope)?.fact.id();
        let computed = fact.unsigned.id();
        if entry.land_seq != *land_seq || held != computed {
            return Err(EngineError::ResumeDiverged { land_seq: *land_seq, stored: held, computed });
        }
    }
    if (stored.len() as u64) < last + 1 - first {
        return Err(EngineError::Internal(format!("the land holds no fact at land seq {last} to compare")));
    }
    Ok(())
}

impl Sealing {
    pub(super) fn new(next_land_seq: u64, threads: usize) -> Sealing {
        Sealing {
            prepared: Vec::new(),
            pending: std::collections::VecDeque::new(),
            settled_failure: None,
            next_land_seq,
            threads,
            held: None,
            rotations: Vec::new(),
            catch_up_until: 0,
            stopped: None,
            resume_checkpoint: None,
            signed_ahead: 0,
            signed_here: 0,
            unused_ahead: 0,
        }
    }

    /// A pool worker's sealing: facts are signed and held for one turn.
    pub(super) fn holding(next_land_seq: u64, threads: usize) -> Sealing {
        Sealing { held: Some(Vec::new()), ..Sealing::new(next_land_seq, threads) }
    }

    pub(super) fn is_holding(&self) -> bool {
        self.held.is_some()
    }

    /// What a held turn signed, each with the land seq it was folded at.
    pub(super) fn take_held(&mut self) -> Vec<(u64, SignedFact)> {
        self.held.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Holds the step's first submission until `checkpoint` is written.
    pub(super) fn resume_checkpoint_first(&mut self, checkpoint: Option<super::resume::CheckpointInWriting>) {
        self.resume_checkpoint = checkpoint;
    }

    /// Waits for the resume checkpoint, if one is being written; if it
    /// could not be, nothing more is submitted and that is the step's failure.
    fn wait_for_resume_checkpoint(&mut self) {
        if let Some(checkpoint) = self.resume_checkpoint.take() {
            if let Err(error) = checkpoint.wait() {
                self.stopped.get_or_insert(error);
            }
        }
    }

    /// Waits for every fact handed to the store, each at the land seq the
    /// world folded it at. Waits for all of them even after a failure, so
    /// that nothing is still on its way to the store when the caller reloads
    /// the writers from it; returns the first failure.
    pub(super) fn wait_all(&mut self) -> Result<(), EngineError> {
        self.wait_for_resume_checkpoint();
        let mut first_failure = self.stopped.take().or(self.settled_failure.take());
        for (expected, seal) in std::mem::take(&mut self.pending) {
            if let Some(failure) = failure_of(expected, seal.wait()) {
                first_failure.get_or_insert(failure);
            }
        }
        first_failure.map_or(Ok(()), Err)
    }

    /// Takes off the front of `pending` the seals the store has answered,
    /// keeping the first failure for [`Sealing::wait_all`]; never waits.
    fn settle_answered(&mut self) {
        while let Some((expected, seal)) = self.pending.front_mut() {
            let expected = *expected;
            let Some(answer) = seal.try_wait() else { return };
            self.pending.pop_front();
            if let Some(failure) = failure_of(expected, answer) {
                self.settled_failure.get_or_insert(failure);
            }
        }
    }

    pub(super) fn push(&mut self, prepared: Prepared) {
        self.prepared.push((self.next_land_seq, prepared));
        self.next_land_seq += 1;
    }

    /// Whether enough is prepared to sign and hand to the committer now, so
    /// that committing overlaps the rest of the round.
    pub(super) fn ripe(&self) -> bool {
        self.prepared.len() >= SEAL_FLUSH_FACTS
    }

    /// Signs what is prepared on `threads` threads, then submits it in order.
    pub(super) fn flush(&mut self, land: &Land) {
        let mut prepared = std::mem::take(&mut self.prepared);
        self.wait_for_resume_checkpoint();
        if self.stopped.is_some() {
            return;
        }
        let again = prepared.iter().take_while(|(land_seq, _)| *land_seq < self.catch_up_until).count();
        if again > 0 {
            let fresh = prepared.split_off(again);
            if let Err(diverged) = same_as_stored(land, &prepared) {
                self.stopped = Some(diverged);
                return;
            }
            prepared = fresh;
        }
        if prepared.is_empty() {
            return;
        }
        let ahead = prepared.iter().filter(|(_, fact)| fact.is_signed_ahead()).count() as u64;
        let to_sign = prepared.len() as u64 - ahead;
        self.signed_ahead += ahead;
        self.signed_here += to_sign;
        // Signing is shared out over the threads only where there is some to
        // share: attaching signatures made ahead is less work than starting
        // a thread (a round's flushes started two threads each to do only that).
        let threads = match to_sign < FLUSH_SIGNED_ON_THREADS_FACTS_MIN {
            true => 1,
            false => self.threads.max(1),
        };
        let sign = |part: Vec<(u64, Prepared)>| {
            let (land_seqs, facts): (Vec<u64>, Vec<Prepared>) = part.into_iter().unzip();
            land_seqs.into_iter().zip(Prepared::sign_all(facts)).collect::<Vec<_>>()
        };
        if threads == 1 {
            let signed = sign(prepared);
            self.submit(land, signed);
            return;
        }
        let chunk = prepared.len().div_ceil(threads);
        let mut chunks: Vec<Vec<(u64, Prepared)>> = Vec::new();
        let mut rest = prepared;
        while rest.len() > chunk {
            let tail = rest.split_off(chunk);
            chunks.push(rest);
            rest = tail;
        }
        chunks.push(rest);
        let signed: Vec<Vec<(u64, SignedFact)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunks.into_iter().map(|part| scope.spawn(move || sign(part))).collect();
            handles.into_iter().map(|handle| handle.join().unwrap_or_default()).collect()
        });
        self.submit(land, signed.into_iter().flatten().collect());
    }

    /// Hands signed facts to the store in order (or holds them: a pool
    /// worker's turn).
    fn submit(&mut self, land: &Land, signed: Vec<(u64, SignedFact)>) {
        if let Some(held) = self.held.as_mut() {
            held.extend(signed);
            return;
        }
        self.settle_answered();
        for (land_seq, fact) in signed {
            self.pending.push_back((land_seq, land.submit_signed(fact)));
        }
    }
}

/// The failure a seal's answer is, if any: refused, or sealed at another
/// land seq than the world folded it at.
fn failure_of(expected: u64, answer: Result<crate::land::Sealed, crate::land::LandError>) -> Option<EngineError> {
    match answer {
        Ok(done) if done.land_seq == expected => None,
        Ok(done) => {
            Some(EngineError::Internal(format!("land seq {} sealed where {expected} was folded", done.land_seq)))
        }
        Err(error) => Some(error.into()),
    }
}
