//! What this process read of the land log that other processes committed,
//! kept for its committer as a head step per fact (`chain::HeadStep`): at
//! its next commit the heads it keeps move along these steps instead of
//! being read from the database again (`committer::lock_land`). A pool's
//! worker folds the other workers' turns before each of its own, so what
//! its committer needs was read already. At most
//! `KEPT_HEADS_CATCH_UP_FACTS_MAX` steps are kept, the latest.

use crate::fact::{BeingId, Fact};
use crate::store::chain::HeadStep;
use crate::store::Head;
use std::collections::{HashMap, VecDeque};

/// Moves the head `heads` keeps for a step's being along a step read
/// (`Ok`), or drops the head of a being whose fact's step could not be
/// read (`Err`).
pub(crate) fn follow_read_step(step: &Result<HeadStep, BeingId>, heads: &mut HashMap<BeingId, Head>) {
    match step {
        Ok(step) => step.follow(heads),
        Err(being) => {
            heads.remove(being);
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct FollowedTail {
    /// The land seq of the first step kept.
    first_land_seq: u64,
    /// A step per fact from `first_land_seq` on, in land order; for a fact
    /// whose step cannot be read, its being, whose kept head is dropped.
    steps: VecDeque<Result<HeadStep, BeingId>>,
}

impl FollowedTail {
    fn end(&self) -> u64 {
        self.first_land_seq + self.steps.len() as u64
    }

    /// Adds the steps of `facts` (land seq and fact, in land order),
    /// keeping the latest `max`. A fact that does not come right after the
    /// last one kept starts the tail again from it.
    pub(crate) fn push(&mut self, facts: &[(u64, Fact)], max: usize) {
        for (land_seq, fact) in facts {
            if *land_seq != self.end() {
                self.steps.clear();
                self.first_land_seq = *land_seq;
            }
            self.steps.push_back(HeadStep::of(fact).map_err(|_| fact.header.being));
        }
        while self.steps.len() > max {
            self.steps.pop_front();
            self.first_land_seq += 1;
        }
    }

    /// The steps of land seqs `from..to`, where every one of them is kept.
    pub(crate) fn steps(&self, from: u64, to: u64) -> Option<impl Iterator<Item = &Result<HeadStep, BeingId>>> {
        if from < self.first_land_seq || to > self.end() || from > to {
            return None;
        }
        let start = (from - self.first_land_seq) as usize;
        Some(self.steps.range(start..start + (to - from) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::{FactId, PublicKeyBytes, UnsignedFact};
    use crate::store::chain::next_head;

    /// `count` notes of `being` from seq 1, each linked to the one before,
    /// the first to `genesis_id`.
    fn notes(being: BeingId, genesis_id: FactId, count: u64) -> Vec<Fact> {
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        let mut prev = genesis_id;
        (1..=count)
            .map(|seq| {
                let fact =
                    UnsignedFact::new(being, seq, prev, 1_000 + seq, "note", vec![0xa0]).expect("a note").sign(&key);
                prev = fact.id();
                fact
            })
            .collect()
    }

    /// A genesis head, and its id.
    fn head_at_genesis() -> (Head, FactId) {
        let id = FactId([9; 32]);
        (Head { seq: 0, id, stored_time_ms: 1_000, public_key: PublicKeyBytes([5; 32]), ended: false }, id)
    }

    /// The kept head moved along the tail's steps of `from..to` (none: not
    /// every step is kept).
    fn followed(tail: &FollowedTail, being: BeingId, head: Head, from: u64, to: u64) -> Option<Option<Head>> {
        let mut heads = HashMap::from([(being, head)]);
        for step in tail.steps(from, to)? {
            follow_read_step(step, &mut heads);
        }
        Some(heads.get(&being).copied())
    }

    #[test]
    fn a_head_moved_along_the_steps_kept_is_the_head_the_facts_fold_to() {
        let ada = BeingId([1; 32]);
        let (genesis_head, genesis_id) = head_at_genesis();
        let facts = notes(ada, genesis_id, 6);
        let folded = facts.iter().try_fold(genesis_head, |head, fact| next_head(Some(&head), fact)).expect("fold");
        // Read in two chunks at land seqs 10.., as a worker's fold reads them.
        let at: Vec<(u64, Fact)> = facts.iter().cloned().enumerate().map(|(i, fact)| (10 + i as u64, fact)).collect();
        let mut tail = FollowedTail::default();
        tail.push(&at[..2], 64);
        tail.push(&at[2..], 64);
        assert_eq!(followed(&tail, ada, genesis_head, 10, 16), Some(Some(folded)), "every step");
        // A head already past the first steps: they do not extend it.
        let after_two = next_head(Some(&next_head(Some(&genesis_head), &facts[0]).unwrap()), &facts[1]).unwrap();
        assert_eq!(followed(&tail, ada, after_two, 12, 16), Some(Some(folded)), "the rest");
        assert_eq!(followed(&tail, ada, after_two, 10, 16), Some(None), "not extended: dropped");
        // Not kept: before the tail, past it, or cut by the bound.
        assert_eq!(followed(&tail, ada, genesis_head, 9, 16), None);
        assert_eq!(followed(&tail, ada, genesis_head, 10, 17), None);
        let mut bounded = FollowedTail::default();
        bounded.push(&at, 4);
        assert_eq!(followed(&bounded, ada, genesis_head, 10, 16), None, "the first two went");
        assert_eq!(followed(&bounded, ada, after_two, 12, 16), Some(Some(folded)));
        // A chunk that does not follow the last starts the tail again.
        let mut restarted = FollowedTail::default();
        restarted.push(&at[..2], 64);
        restarted.push(&at[3..], 64);
        assert_eq!(followed(&restarted, ada, genesis_head, 10, 16), None);
        assert!(restarted.steps(13, 16).is_some());
        // Another being's steps leave this being's head alone.
        let bo = BeingId([2; 32]);
        let others: Vec<(u64, Fact)> =
            notes(bo, genesis_id, 2).into_iter().enumerate().map(|(i, fact)| (16 + i as u64, fact)).collect();
        tail.push(&others, 64);
        assert_eq!(followed(&tail, ada, folded, 16, 18), Some(Some(folded)));
    }
}
