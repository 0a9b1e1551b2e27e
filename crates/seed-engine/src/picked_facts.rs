//! Reading the land log for a view that concerns a few of its facts (one
//! being's memory, the audit's tool calls and approvals): the log is read
//! as stored, nothing checked or decoded, and only the facts the view picks
//! from their kind and body as stored are read again, checked and decoded.
//!
//! A view that decoded every fact of a land of a million beings took as long
//! as opening it (13 s for one being's memory page); reading the log as
//! stored is a fraction of that. What a view picks must include every fact
//! that can change it: the pick only leaves out, and every fact picked is
//! read as [`FactsRead::Every`] reads it, so a view reads the same either
//! way (each view's tests hold the two readings to each other). A fact left
//! out is never checked: naming damage is `seed verify`'s.

use crate::engine::{read_land_log, refuse_a_land_log_hole, EngineError, FOLD_LAND_LOG_CHUNK_ENTRIES};
use crate::fact::Fact;
use crate::store::{LandEntry, LandLogRead, Store};

/// How a view reads the land log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactsRead {
    /// Every fact checked and decoded (the reading each view is held to).
    Every,
    /// Only the facts the view picks from how they are stored.
    Picked,
}

/// Picked facts in one chunk above which the whole chunk is read in one
/// request rather than fact by fact.
const PICKED_READ_ONE_BY_ONE_MAX: usize = 64;

/// Hands `visit` the facts at land seqs `from..end` that `picks` chooses
/// (all of them when `how` is [`FactsRead::Every`]), checked and decoded,
/// in land order. `picks` is asked with each fact's entry, kind and body as
/// stored; an envelope that does not read in place is picked (decoded, it
/// fails as reading every fact would). A hole in the land log is an error
/// either way.
pub fn for_each_picked_fact(
    store: &dyn Store,
    from: u64,
    end: u64,
    how: FactsRead,
    picks: impl Fn(&LandEntry, &str, &[u8]) -> bool,
    mut visit: impl FnMut(u64, Fact),
) -> Result<(), EngineError> {
    let mut read = LandLogRead::default();
    let mut next = from;
    while next < end {
        let to = end.min(next + FOLD_LAND_LOG_CHUNK_ENTRIES);
        let picked: Vec<LandEntry> = match how {
            FactsRead::Every => Vec::new(),
            FactsRead::Picked => {
                store.land_log_with_envelopes_unverified(next, to, &mut read)?;
                refuse_a_land_log_hole(read.iter().map(|(entry, _)| entry.land_seq), next, to)?;
                let picked_as_stored =
                    |(entry, envelope): &(&LandEntry, &[u8])| match Fact::peek_kind_and_body(envelope) {
                        Some((kind, body)) => picks(entry, kind, body),
                        None => true,
                    };
                read.iter().filter(picked_as_stored).map(|(entry, _)| *entry).collect()
            }
        };
        if how == FactsRead::Every || picked.len() > PICKED_READ_ONE_BY_ONE_MAX {
            let mut wanted = picked.iter().map(|entry| entry.land_seq).peekable();
            for (land_seq, fact) in read_land_log(store, next, to)? {
                if how == FactsRead::Picked {
                    if wanted.peek() != Some(&land_seq) {
                        continue;
                    }
                    wanted.next();
                }
                visit(land_seq, fact);
            }
        } else {
            for entry in picked {
                for (land_seq, fact) in read_land_log(store, entry.land_seq, entry.land_seq + 1)? {
                    visit(land_seq, fact);
                }
            }
        }
        next = to;
    }
    Ok(())
}

/// Each fact at `land_seqs` (a list a world keeps for a view, in land
/// order), checked and decoded as [`FactsRead::Every`] reads it, fact by
/// fact: a view the world keeps a list for reads those facts and no other.
pub fn for_each_listed_fact(
    store: &dyn Store,
    land_seqs: impl IntoIterator<Item = u64>,
    mut visit: impl FnMut(u64, Fact),
) -> Result<(), EngineError> {
    for land_seq in land_seqs {
        for (land_seq, fact) in read_land_log(store, land_seq, land_seq + 1)? {
            visit(land_seq, fact);
        }
    }
    Ok(())
}

/// Whether `needle` occurs in `body`: what a view picks by, as stored, when
/// the facts that concern it must hold some bytes (a name, a key).
pub fn body_holds(body: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(body, needle).is_some()
}
