//! Signing a fact before its place on the reel is settled: each act is
//! signed on the thread its moment ran on (a round's, simulated or live, a
//! pool worker's claim), against the head its being has then, and the in-order
//! seal (a pool's turn) takes that signature when the fact it prepares is
//! the same one.
//!
//! Ed25519 signing is deterministic: the same key over the same header
//! bytes gives the same signature. A fact's id is the hash of its header
//! bytes, and the header carries the body's hash, so a fact signed ahead
//! whose id and key are those of the fact prepared at the turn *is* that
//! fact, byte for byte. Where anything differs (the seal-time rules changed
//! the body, another fact reached the reel first, the clock or the key
//! moved), the signature made ahead is set aside and the fact is signed as
//! before. Signing ahead never changes a writer: the turn's
//! [`Land::prepare_canonical_ahead`] is still what places each fact.
//!
//! The turn compares the fact signed ahead with the one it would prepare
//! field by field (reel, place, time, kind, body bytes and key) and, where
//! they are the same, takes it whole: its header is not encoded, nor its
//! header and body hashed, a second time.

use super::{Land, Prepared, SignedFact, Writer};
use crate::fact::{BeingId, CanonicalBody, Fact, FactError, KeyPair, UnsignedFact};
use std::sync::{Arc, Mutex};

/// A fact signed ahead of its turn, with the public half of the key that
/// signed it: the turn takes it whole where it is the turn's own fact
/// ([`Land::prepare_canonical_ahead`]).
pub struct Presigned {
    fact: Fact,
    public_key: [u8; 32],
}

impl Presigned {
    /// Whether this is the fact `being`'s next would be, prepared now by
    /// `writer` at `stored_time_ms` with `kind` and `body`: the same header
    /// fields and body bytes give the same header bytes, hence the same
    /// id, and the same key's signature over them.
    pub(super) fn is_next_fact(
        &self,
        being: &BeingId,
        writer: &Writer,
        stored_time_ms: u64,
        kind: &str,
        body: &CanonicalBody,
    ) -> bool {
        let header = &self.fact.header;
        header.being == *being
            && header.seq == writer.next_seq
            && header.prev == writer.prev
            && header.stored_time_ms == stored_time_ms
            && header.kind == kind
            && self.public_key == writer.key.public_key()
            && self.fact.body() == body.as_bytes()
    }

    pub(super) fn into_fact(self) -> Fact {
        self.fact
    }
}

/// A being's writer as it stands, for signing its next fact ahead on
/// another thread ([`Land::writer_handles`]).
#[derive(Clone)]
pub struct WriterHandle {
    writer: Arc<Mutex<Writer>>,
}

impl WriterHandle {
    /// Signs the fact `kind` with `body` would be if `being`'s next fact
    /// were prepared now (this is its writer), with the clock at `now_ms`:
    /// `None` if the writer must reload first or has ended. The writer is
    /// read, never advanced.
    pub fn presign(
        &self,
        being: &BeingId,
        kind: &str,
        body: CanonicalBody,
        now_ms: u64,
    ) -> Result<Option<Presigned>, FactError> {
        Ok(self.prepare_ahead(being, kind, body, now_ms)?.and_then(|ahead| sign_ahead(vec![ahead]).pop()))
    }

    /// [`WriterHandle::presign`] up to the signature: the fact, with its
    /// key, for [`sign_ahead`] to sign together with others.
    pub fn prepare_ahead(
        &self,
        being: &BeingId,
        kind: &str,
        body: CanonicalBody,
        now_ms: u64,
    ) -> Result<Option<UnsignedAhead>, FactError> {
        let (key, next_seq, prev, stored_time_ms) = {
            let writer = self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if writer.stale || writer.ended {
                return Ok(None);
            }
            (writer.key.clone(), writer.next_seq, writer.prev, now_ms.max(writer.last_time_ms))
        };
        let unsigned = UnsignedFact::from_canonical(*being, next_seq, prev, stored_time_ms, kind, body)?;
        Ok(Some(UnsignedAhead { unsigned, key }))
    }
}

/// A fact prepared ahead of its turn ([`WriterHandle::prepare_ahead`]),
/// not signed yet.
pub struct UnsignedAhead {
    unsigned: UnsignedFact,
    key: KeyPair,
}

/// Signs the facts prepared ahead, all together (`UnsignedFact::sign_all`:
/// the signatures one by one signing makes, for less work), in order.
pub fn sign_ahead(facts: Vec<UnsignedAhead>) -> Vec<Presigned> {
    let public_keys: Vec<[u8; 32]> = facts.iter().map(|ahead| ahead.key.public_key()).collect();
    let signed = UnsignedFact::sign_all(facts.into_iter().map(|ahead| (ahead.unsigned, ahead.key)).collect());
    signed.into_iter().zip(public_keys).map(|(fact, public_key)| Presigned { fact, public_key }).collect()
}

impl Land {
    /// The writer of each of `beings` this land holds loaded (`None` for
    /// one it does not: [`Land::load_writers`] loads them), to sign ahead
    /// with on other threads. Nothing is loaded or changed.
    pub fn writer_handles<'b>(&self, beings: impl IntoIterator<Item = &'b BeingId>) -> Vec<Option<WriterHandle>> {
        let writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        beings
            .into_iter()
            .map(|being| writers.get(being).map(|writer| WriterHandle { writer: writer.clone() }))
            .collect()
    }

    /// A count that moves whenever a being's loaded writer is loaded,
    /// replaced or forgotten: while it stands still, handles taken from
    /// [`Land::writer_handles`] are still each being's writer (a round keeps
    /// its handles for the next one, the same beings waking, rather than
    /// looking them all up again).
    pub fn loaded_writers_changes(&self) -> u64 {
        self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).changes()
    }

    /// [`Land::writer_handles`], loading first the writers of those not
    /// loaded yet whose keys are plain ([`Land::load_plain_writers`]): what
    /// a round and a pool worker's claim sign ahead with. A being whose
    /// writer does not load that way has `None`, left to its act's seal,
    /// which loads it or says why. A being already loaded is looked up once.
    pub fn plain_writer_handles(&self, beings: &[BeingId], threads: usize) -> Vec<Option<WriterHandle>> {
        let mut handles = self.writer_handles(beings);
        let missing: Vec<BeingId> =
            beings.iter().zip(&handles).filter(|(_, handle)| handle.is_none()).map(|(being, _)| *being).collect();
        if missing.is_empty() {
            return handles;
        }
        let _left_to_the_seal = self.load_plain_writers(&missing, threads);
        let writers = self.writers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for (being, handle) in beings.iter().zip(&mut handles).filter(|(_, handle)| handle.is_none()) {
            *handle = writers.get(being).map(|writer| WriterHandle { writer: writer.clone() });
        }
        handles
    }
}

impl Prepared {
    /// Signs each fact, taking the signature made ahead where the fact
    /// prepared has one ([`Land::prepare_canonical_ahead`]); the rest are
    /// signed all together (`UnsignedFact::sign_all`), for less work. The
    /// facts are the same bytes either way, in order.
    pub fn sign_all(facts: Vec<Prepared>) -> Vec<SignedFact> {
        let mut signed: Vec<Option<SignedFact>> = Vec::with_capacity(facts.len());
        let mut to_sign: Vec<(usize, Prepared)> = Vec::new();
        for prepared in facts {
            match prepared.signature_ahead {
                Some(_) => signed.push(Some(prepared.sign())),
                None => {
                    to_sign.push((signed.len(), prepared));
                    signed.push(None);
                }
            }
        }
        let (places, prepared): (Vec<usize>, Vec<Prepared>) = to_sign.into_iter().unzip();
        let mut rest = Vec::with_capacity(prepared.len());
        let unsigned: Vec<(UnsignedFact, KeyPair)> = prepared
            .into_iter()
            .map(|Prepared { unsigned, key, being, seq, stored_time_ms, writer, signature_ahead: _ }| {
                rest.push((being, seq, stored_time_ms, writer));
                (unsigned, key)
            })
            .collect();
        let facts = UnsignedFact::sign_all(unsigned);
        for ((place, fact), (being, seq, stored_time_ms, writer)) in places.into_iter().zip(facts).zip(rest) {
            signed[place] = Some(SignedFact { fact, being, seq, stored_time_ms, writer });
        }
        signed.into_iter().map(|fact| fact.expect("every fact is signed, ahead or together")).collect()
    }

    /// Whether the fact signed ahead was taken: this fact is signed already.
    pub fn is_signed_ahead(&self) -> bool {
        self.signature_ahead.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::spec;
    use super::super::{KeySource, StoreLocation};
    use super::*;
    use crate::clock::LogicalClock;
    use crate::fact::body::{NoteBody, KIND_NOTE};
    use crate::limits::Limits;
    use std::sync::Arc;

    /// A land whose clock the test moves, with two beings, `ada` and `bo`.
    fn land_with_two_beings(dir: &std::path::Path) -> (Land, Arc<LogicalClock>, BeingId, BeingId) {
        let clock = Arc::new(LogicalClock::starting_at(1_000));
        let source = KeySource::Seeded([7; 32]);
        let land =
            Land::plant_in(dir, clock.clone(), Limits::default(), source, &StoreLocation::Folder).expect("plant").0;
        let [ada, bo] = ["ada", "bo"]
            .map(|name| land.submit_being(spec(&land, name)).expect("submit").wait().expect("sealed").being);
        (land, clock, ada, bo)
    }

    /// `being`'s note `text` signed ahead at `now_ms`, through its writer's
    /// handle (`None` where no writer is loaded, or it must reload).
    fn presign(land: &Land, being: &BeingId, text: &str, now_ms: u64) -> Option<Presigned> {
        presign_kind(land, being, KIND_NOTE, text, now_ms)
    }

    fn presign_kind(land: &Land, being: &BeingId, kind: &str, text: &str, now_ms: u64) -> Option<Presigned> {
        let handle = land.writer_handles([being]).pop().flatten()?;
        handle.presign(being, kind, note(text), now_ms).expect("presign")
    }

    fn note(text: &str) -> CanonicalBody {
        CanonicalBody::encode(&NoteBody { text: text.into() }).expect("a note encodes")
    }

    /// What each case signs ahead, against the note "hello" that `ada`'s
    /// turn prepares at `NOW_MS`.
    enum Ahead {
        /// The same fact, by the same key.
        Same,
        /// Another body.
        OtherBody,
        /// Another time.
        OtherTime,
        /// The same body on another being's reel, by its key.
        OtherBeing,
        /// The same body as another kind of fact.
        OtherKind,
        /// The same fact, signed before another fact of `ada` was sealed.
        BeforeAnotherFact,
        /// The turn's fact with one field of its header changed (made by
        /// hand: no writer signs such a fact ahead), each compared apart.
        Forged(Field),
    }

    /// The field [`Ahead::Forged`] changes.
    #[derive(Clone, Copy)]
    enum Field {
        /// `bo`'s reel, at `ada`'s place.
        Being,
        /// One place farther, after the same fact.
        Seq,
        /// After another fact, at the same place.
        Prev,
        /// Signed by `bo`'s key.
        Key,
    }

    /// `ada`'s next note "hello" at `NOW_MS` as her writer stands, with
    /// `field` changed, signed as [`sign_ahead`] signs.
    fn forged(land: &Land, ada: &BeingId, bo: &BeingId, field: Field) -> Presigned {
        let writer_of = |being: &BeingId| {
            let handle = land.writer_handles([being]).pop().flatten().expect("loaded");
            let writer = handle.writer.lock().expect("writer");
            (writer.key.clone(), writer.next_seq, writer.prev)
        };
        let ((key, seq, prev), (bo_key, _, _)) = (writer_of(ada), writer_of(bo));
        let (being, seq, prev, key) = match field {
            Field::Being => (*bo, seq, prev, key),
            Field::Seq => (*ada, seq + 1, prev, key),
            Field::Prev => (*ada, seq, crate::fact::FactId([9; 32]), key),
            Field::Key => (*ada, seq, prev, bo_key),
        };
        let unsigned =
            UnsignedFact::from_canonical(being, seq, prev, NOW_MS, KIND_NOTE, note("hello")).expect("a fact");
        sign_ahead(vec![UnsignedAhead { unsigned, key }]).pop().expect("signed")
    }

    const NOW_MS: u64 = 5_000;

    /// The turn's fact, prepared given what was signed ahead, is the bytes
    /// the same fact prepared without it on a land planted the same way
    /// gives, and verifies, in every case; `taken` is whether the fact
    /// signed ahead was the turn's (and so taken whole).
    fn check(ahead: Ahead, taken: bool) {
        let (dir, plain_dir) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
        let (land, clock, ada, bo) = land_with_two_beings(dir.path());
        let (plain_land, plain_clock, plain_ada, _) = land_with_two_beings(plain_dir.path());
        assert_eq!(ada, plain_ada, "the two lands are planted alike");
        land.load_writers(&[ada, bo], 1).expect("writers");
        let presigned = match ahead {
            Ahead::Same | Ahead::BeforeAnotherFact => presign(&land, &ada, "hello", NOW_MS),
            Ahead::OtherBody => presign(&land, &ada, "hullo", NOW_MS),
            Ahead::OtherTime => presign(&land, &ada, "hello", NOW_MS + 1),
            Ahead::OtherBeing => presign(&land, &bo, "hello", NOW_MS),
            Ahead::OtherKind => presign_kind(&land, &ada, "jotting", "hello", NOW_MS),
            Ahead::Forged(field) => Some(forged(&land, &ada, &bo, field)),
        }
        .expect("the writer is loaded");
        if let Ahead::BeforeAnotherFact = ahead {
            for land in [&land, &plain_land] {
                land.seal_body(&ada, KIND_NOTE, &NoteBody { text: "first".into() }).expect("sealed");
            }
        }
        clock.advance_to(NOW_MS);
        plain_clock.advance_to(NOW_MS);
        let prepared = land.prepare_canonical_ahead(&ada, KIND_NOTE, note("hello"), Some(presigned)).expect("prepared");
        assert_eq!(prepared.is_signed_ahead(), taken, "whether the fact signed ahead is the turn's");
        let key = prepared.key.signing_key().verifying_key();
        let signed = prepared.sign();
        let plain = plain_land.prepare_canonical(&ada, KIND_NOTE, note("hello")).expect("prepared").sign();
        assert_eq!(signed.fact.encode_envelope(), plain.fact.encode_envelope(), "the same bytes either way");
        assert!(signed.fact.verify_signature(&key), "the signature is ada's over the fact");
    }

    #[test]
    fn a_fact_signed_ahead_is_taken_only_when_it_is_the_turns_fact_and_the_bytes_never_differ() {
        check(Ahead::Same, true);
        check(Ahead::OtherBody, false);
        check(Ahead::OtherTime, false);
        check(Ahead::OtherBeing, false);
        check(Ahead::OtherKind, false);
        check(Ahead::BeforeAnotherFact, false);
        for field in [Field::Being, Field::Seq, Field::Prev, Field::Key] {
            check(Ahead::Forged(field), false);
        }
    }

    #[test]
    fn facts_signed_together_are_the_bytes_each_signed_alone_gives_with_or_without_a_signature_ahead() {
        let dir = tempfile::tempdir().expect("dir");
        let (land, clock, ada, bo) = land_with_two_beings(dir.path());
        land.load_writers(&[ada, bo], 1).expect("writers");
        // Signed ahead together, as a simulation's moment thread does: one
        // is the turn's fact, one is not (another body).
        let handles = land.writer_handles([&ada, &bo]);
        let ahead: Vec<UnsignedAhead> = [(&ada, "hello"), (&bo, "not the turn's")]
            .into_iter()
            .zip(&handles)
            .map(|((being, text), handle)| {
                let handle = handle.as_ref().expect("loaded");
                handle.prepare_ahead(being, KIND_NOTE, note(text), NOW_MS).expect("prepared").expect("a writer")
            })
            .collect();
        let mut presigned = sign_ahead(ahead).into_iter();
        clock.advance_to(NOW_MS);
        let facts: Vec<Prepared> = [(&ada, "hello"), (&bo, "hi"), (&ada, "again"), (&bo, "bye")]
            .into_iter()
            .map(|(being, text)| {
                land.prepare_canonical_ahead(being, KIND_NOTE, note(text), presigned.next()).expect("prepared")
            })
            .collect();
        let taken: Vec<bool> = facts.iter().map(Prepared::is_signed_ahead).collect();
        assert_eq!(taken, [true, false, false, false], "only ada's hello was signed ahead as the turn's");
        let alone: Vec<Vec<u8>> = facts
            .iter()
            .map(|prepared| prepared.unsigned.clone().sign(&prepared.key.signing_key()).encode_envelope())
            .collect();
        let together: Vec<Vec<u8>> =
            Prepared::sign_all(facts).into_iter().map(|signed| signed.fact.encode_envelope()).collect();
        assert_eq!(together, alone);
    }

    #[test]
    fn nothing_is_signed_ahead_for_a_writer_not_loaded_or_stale() {
        let dir = tempfile::tempdir().expect("dir");
        let (land, _clock, ada, _bo) = land_with_two_beings(dir.path());
        land.forget_writers(&[ada]);
        assert!(presign(&land, &ada, "hello", NOW_MS).is_none(), "not loaded");
        land.load_writers(&[ada], 1).expect("writers");
        let prepared = land.prepare_canonical(&ada, KIND_NOTE, note("hello")).expect("prepared");
        land.abandon(prepared);
        assert!(presign(&land, &ada, "hello", NOW_MS).is_none(), "stale");
    }
}
