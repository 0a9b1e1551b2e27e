//! What a receiving land remembers about requests from other lands, to
//! refuse a replayed request, a flood from one land and more first
//! contacts than the land accepts. Memory only and bounded: it is the
//! edge's, never a fact. Every method takes the time it is asked at, so
//! the rules are tested without a clock.

use crate::fact::BeingId;
use seed_format::canopy::CANOPY_REQUEST_WINDOW_MS;
use std::collections::{BTreeMap, BTreeSet};

/// Nonces remembered at most, across every land: past it, a new request
/// is refused until older nonces leave the window (a land flooded with
/// validly signed requests refuses, it never forgets a nonce early).
pub const CANOPY_NONCES_KEPT_MAX: usize = 200_000;

/// Why a request was refused by the guard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardRefusal {
    #[error("this request was seen before (its nonce was used at the same time): a replay")]
    Replayed,
    #[error("the request was signed at {timestamp_ms} ms, before this land started ({started_ms} ms): a request from before a restart is not accepted again")]
    BeforeStart { timestamp_ms: u64, started_ms: u64 },
    #[error("this land remembers {most} recent requests and is full: try again in a minute")]
    NoncesFull { most: usize },
    #[error("land {land} sent more than {most} requests in a minute (canopy_requests_per_peer_per_minute_max)")]
    TooMany { land: BeingId, most: u64 },
    #[error("this land accepts {most} first contacts an hour (canopy_first_contacts_per_hour_max){detail}")]
    FirstContacts { most: u64, detail: &'static str },
}

/// The nonces of requests seen within the window, with when they were signed.
#[derive(Debug)]
pub struct NonceMemory {
    started_ms: u64,
    by_time: BTreeSet<(u64, BeingId, [u8; 16])>,
    seen: BTreeSet<(BeingId, [u8; 16])>,
}

impl NonceMemory {
    /// Memory of a land that started at `started_ms` (wall clock): a
    /// request signed before then may have been seen by the process before
    /// the restart, whose memory is gone, so it is refused.
    pub fn new(started_ms: u64) -> NonceMemory {
        NonceMemory { started_ms, by_time: BTreeSet::new(), seen: BTreeSet::new() }
    }

    /// Remembers a request's nonce, or refuses it as a replay. Call only
    /// after its signature was verified: an unsigned guess fills nothing.
    pub fn admit(
        &mut self,
        from: BeingId,
        nonce: [u8; 16],
        timestamp_ms: u64,
        now_ms: u64,
    ) -> Result<(), GuardRefusal> {
        if timestamp_ms < self.started_ms {
            return Err(GuardRefusal::BeforeStart { timestamp_ms, started_ms: self.started_ms });
        }
        // What is older than the window is refused as stale before it
        // gets here: it need not be remembered.
        let horizon = now_ms.saturating_sub(CANOPY_REQUEST_WINDOW_MS);
        while let Some(&(at, land, old)) = self.by_time.first() {
            if at >= horizon {
                break;
            }
            self.by_time.pop_first();
            self.seen.remove(&(land, old));
        }
        if self.seen.contains(&(from, nonce)) {
            return Err(GuardRefusal::Replayed);
        }
        if self.seen.len() >= CANOPY_NONCES_KEPT_MAX {
            return Err(GuardRefusal::NoncesFull { most: CANOPY_NONCES_KEPT_MAX });
        }
        self.seen.insert((from, nonce));
        self.by_time.insert((timestamp_ms, from, nonce));
        Ok(())
    }
}

/// Requests per land, as a bucket per land that holds at most `most`
/// requests and fills at `most` a minute: a land may send a burst of
/// `most`, then `most` a minute, and no boundary of a clock's minute lets
/// it send twice that (integer arithmetic: a request is 60,000 units, a
/// millisecond adds `most` units).
#[derive(Debug, Default)]
pub struct PeerRates {
    buckets: BTreeMap<BeingId, (u64, u64)>,
}

/// Units of one request in a bucket (one minute, in milliseconds).
const REQUEST_UNITS: u64 = 60_000;

impl PeerRates {
    /// Counts one request from `land` at `now_ms`, or refuses it past `most` a minute.
    pub fn admit(&mut self, land: BeingId, most: u64, now_ms: u64) -> Result<(), GuardRefusal> {
        let full = most.saturating_mul(REQUEST_UNITS);
        let (level, last_ms) = self.buckets.entry(land).or_insert((full, now_ms));
        let filled = now_ms.saturating_sub(*last_ms).saturating_mul(most);
        *level = level.saturating_add(filled).min(full);
        *last_ms = (*last_ms).max(now_ms);
        if *level < REQUEST_UNITS {
            return Err(GuardRefusal::TooMany { land, most });
        }
        *level -= REQUEST_UNITS;
        Ok(())
    }

    /// Forgets lands whose buckets are full again (they hold nothing to
    /// remember), so the memory stays bounded by the lands heard lately.
    pub fn forget_full(&mut self, most: u64, now_ms: u64) {
        let full = most.saturating_mul(REQUEST_UNITS);
        self.buckets.retain(|_, (level, last_ms)| {
            level.saturating_add(now_ms.saturating_sub(*last_ms).saturating_mul(most)) < full
        });
    }
}

/// First contacts accepted in the current hour.
#[derive(Debug, Default)]
pub struct FirstContacts {
    hour: u64,
    accepted: u64,
}

impl FirstContacts {
    /// Whether one more first contact may be accepted at `now_ms`; counts it.
    pub fn admit(&mut self, most: u64, now_ms: u64) -> Result<(), GuardRefusal> {
        if most == 0 {
            return Err(GuardRefusal::FirstContacts {
                most,
                detail: ": it takes only the lands its operator added (`seed peer add`, the peers page)",
            });
        }
        let hour = now_ms / 3_600_000;
        if hour != self.hour {
            (self.hour, self.accepted) = (hour, 0);
        }
        if self.accepted >= most {
            return Err(GuardRefusal::FirstContacts { most, detail: ", and this hour's are taken" });
        }
        self.accepted += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START_MS: u64 = 1_800_000_000_000;

    fn land(byte: u8) -> BeingId {
        BeingId([byte; 32])
    }

    #[test]
    fn a_nonce_is_admitted_once_within_the_window_and_never_from_before_the_start() {
        let mut memory = NonceMemory::new(START_MS);
        let check =
            |memory: &mut NonceMemory, from: u8, nonce: u8, at: u64, now: u64, expected: Result<(), GuardRefusal>| {
                assert_eq!(memory.admit(land(from), [nonce; 16], at, now), expected, "{from} {nonce} {at} {now}");
            };
        check(&mut memory, 1, 1, START_MS + 10, START_MS + 10, Ok(()));
        check(&mut memory, 1, 1, START_MS + 10, START_MS + 20, Err(GuardRefusal::Replayed));
        // The same nonce from another land is another request.
        check(&mut memory, 2, 1, START_MS + 10, START_MS + 20, Ok(()));
        check(
            &mut memory,
            1,
            2,
            START_MS - 1,
            START_MS + 20,
            Err(GuardRefusal::BeforeStart { timestamp_ms: START_MS - 1, started_ms: START_MS }),
        );
        // Once the window has passed, the nonce is forgotten (a request that
        // old is refused as stale before the memory is asked).
        let later = START_MS + 10 + CANOPY_REQUEST_WINDOW_MS + 1;
        check(&mut memory, 1, 1, later, later, Ok(()));
        assert_eq!(memory.seen.len(), 1, "the old nonces left");
    }

    #[test]
    fn a_land_gets_its_requests_per_minute_and_first_contacts_their_hour() {
        let mut rates = PeerRates::default();
        for _ in 0..3 {
            assert_eq!(rates.admit(land(1), 3, START_MS), Ok(()));
        }
        assert_eq!(rates.admit(land(1), 3, START_MS), Err(GuardRefusal::TooMany { land: land(1), most: 3 }));
        assert_eq!(rates.admit(land(2), 3, START_MS), Ok(()), "another land has its own bucket");
        // A third of a minute later, one more request (3 a minute) fits.
        assert_eq!(rates.admit(land(1), 3, START_MS + 19_999), Err(GuardRefusal::TooMany { land: land(1), most: 3 }));
        assert_eq!(rates.admit(land(1), 3, START_MS + 20_000), Ok(()));
        assert_eq!(rates.admit(land(1), 3, START_MS + 20_000), Err(GuardRefusal::TooMany { land: land(1), most: 3 }));
        // A whole minute fills the bucket again, never past its size.
        for _ in 0..3 {
            assert_eq!(rates.admit(land(1), 3, START_MS + 600_000), Ok(()));
        }
        assert!(rates.admit(land(1), 3, START_MS + 600_000).is_err());
        rates.forget_full(3, START_MS + 10_000_000);
        assert!(rates.buckets.is_empty(), "full buckets are forgotten");
        let mut contacts = FirstContacts::default();
        assert!(matches!(contacts.admit(0, START_MS), Err(GuardRefusal::FirstContacts { most: 0, .. })));
        assert_eq!(contacts.admit(2, START_MS), Ok(()));
        assert_eq!(contacts.admit(2, START_MS), Ok(()));
        assert!(matches!(contacts.admit(2, START_MS), Err(GuardRefusal::FirstContacts { most: 2, .. })));
        assert_eq!(contacts.admit(2, START_MS + 3_600_000), Ok(()), "the next hour");
    }
}
