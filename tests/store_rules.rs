//! The chain rules the store enforces on append, fork proofs, the land log,
//! and reindex rebuilding the derived indexes identically.

use crate::common;

use common::{note, plant, plant_on, spec, Backend};
use seed::check::{verify_land, ProblemKind, SignatureMode};
use seed::fact::body::{NoteBody, KIND_NOTE};
use seed::fact::body::{RotateKeyBody, KIND_ROTATE_KEY};
use seed::fact::{Fact, FactId};
use seed::keys::KeyRing;
use seed::land::Land;
use seed::land::LandError;
use seed::store::StoreError;

const MODE: SignatureMode = SignatureMode::Batch { batch_facts: 64 };

/// A worker with one note after its genesis, and the worker's signing key.
fn worker_with_a_note(land: &seed::land::Land) -> (seed::fact::BeingId, seed::land::Sealed, ed25519_dalek::SigningKey) {
    let worker = land.create_being(spec("worker")).expect("worker").being;
    let first = note(land, &worker, "one");
    let key = land.keys().load(&worker).expect("key");
    (worker, first, key)
}

fn note_body(text: &str) -> Vec<u8> {
    seed::canonical::to_canonical_bytes(&NoteBody { text: text.into() }).expect("body")
}

fn a_fork_is_kept_as_proof_and_the_head_does_not_advance(backend: Backend) {
    let test = plant_on(backend);
    let (worker, first, key) = worker_with_a_note(&test.land);
    let store = test.land.store();
    let head_before = store.head(&worker).expect("head").expect("present");

    // A rival fact for seq 1, properly signed by the same key.
    let genesis_id = store.reel(&worker, 0, 1).expect("reel")[0].fact.id();
    let rival =
        Fact::seal(worker, 1, genesis_id, first.stored_time_ms, KIND_NOTE, note_body("rival"), &key).expect("seal");
    let rival_id = rival.id();
    match store.append(rival) {
        Err(StoreError::Fork { seq: 1, kept, rival, .. }) => {
            assert_eq!(kept, first.id);
            assert_eq!(rival, rival_id);
        }
        other => panic!("expected a fork, got {other:?}"),
    }
    assert_eq!(store.head(&worker).expect("head"), Some(head_before), "the head did not move");
    let proofs = store.fork_proofs(Some(&worker)).expect("proofs");
    assert_eq!(proofs.len(), 1);
    assert_eq!((proofs[0].seq, proofs[0].kept, proofs[0].rival), (1, first.id, rival_id));
    assert_eq!(Fact::decode_envelope(&proofs[0].rival_envelope).expect("proof decodes").id(), rival_id);

    // Neither branch is extended silently.
    let next = Fact::seal(worker, 2, first.id, first.stored_time_ms, KIND_NOTE, note_body("two"), &key).expect("seal");
    assert!(matches!(store.append(next), Err(StoreError::BeingForked { .. })));
    assert!(matches!(
        test.land.seal(&worker, KIND_NOTE, note_body("three")),
        Err(LandError::Store(StoreError::BeingForked { .. }))
    ));
    let report = verify_land(store, MODE, 1, common::core_rules()).expect("verify");
    assert!(
        report
            .problems
            .iter()
            .any(|problem| problem.seq == Some(1) && matches!(problem.kind, ProblemKind::Fork { .. })),
        "{:?}",
        report.problems
    );
}

fn the_fork_proof_survives_reopening_and_reindex(backend: Backend) {
    let test = plant_on(backend);
    let (worker, first, key) = worker_with_a_note(&test.land);
    let genesis_id = test.land.store().reel(&worker, 0, 1).expect("reel")[0].fact.id();
    let rival =
        Fact::seal(worker, 1, genesis_id, first.stored_time_ms, KIND_NOTE, note_body("rival"), &key).expect("seal");
    assert!(test.land.store().append(rival).is_err());
    let path = test.path();
    test.land.close().expect("close");
    let land = seed::land::Land::open(&path).expect("reopen");
    land.store().reindex().expect("reindex");
    let next = Fact::seal(worker, 2, first.id, first.stored_time_ms, KIND_NOTE, note_body("two"), &key).expect("seal");
    assert!(matches!(land.store().append(next), Err(StoreError::BeingForked { .. })));
    assert_eq!(land.store().fork_proofs(None).expect("proofs").len(), 1);
}

fn appends_that_break_the_chain_are_refused_and_nothing_is_written(backend: Backend) {
    let test = plant_on(backend);
    let (worker, first, key) = worker_with_a_note(&test.land);
    let store = test.land.store();
    let land_len = store.land_len().expect("len");
    let time = first.stored_time_ms;
    type Case = (&'static str, Fact, fn(&StoreError) -> bool);
    let cases: Vec<Case> = vec![
        ("gap", Fact::seal(worker, 3, first.id, time, KIND_NOTE, note_body("x"), &key).unwrap(), |e| {
            matches!(e, StoreError::Gap { expected: 2, got: 3, .. })
        }),
        ("wrong prev", Fact::seal(worker, 2, FactId([9; 32]), time, KIND_NOTE, note_body("x"), &key).unwrap(), |e| {
            matches!(e, StoreError::PrevMismatch { seq: 2, .. })
        }),
        ("time backwards", Fact::seal(worker, 2, first.id, time - 1, KIND_NOTE, note_body("x"), &key).unwrap(), |e| {
            matches!(e, StoreError::TimeWentBackwards { .. })
        }),
        (
            "unknown being without genesis",
            Fact::seal(seed::fact::BeingId([7; 32]), 0, FactId::ZERO, time, KIND_NOTE, note_body("x"), &key).unwrap(),
            |e| matches!(e, StoreError::NotGenesis { .. }),
        ),
    ];
    for (name, fact, expected) in cases {
        let error = store.append(fact).expect_err(name);
        assert!(expected(&error), "{name}: got {error:?}");
    }
    assert_eq!(store.land_len().expect("len"), land_len, "nothing was appended");
    assert!(verify_land(store, MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}

fn the_same_fact_appended_twice_is_acknowledged_once(backend: Backend) {
    let test = plant_on(backend);
    let (worker, first, key) = worker_with_a_note(&test.land);
    let store = test.land.store();
    let genesis_id = store.reel(&worker, 0, 1).expect("reel")[0].fact.id();
    let again =
        Fact::seal(worker, 1, genesis_id, first.stored_time_ms, KIND_NOTE, note_body("one"), &key).expect("seal");
    assert_eq!(again.id(), first.id, "same content, same id");
    let appended = store.append(again).expect("idempotent");
    assert!(appended.duplicate);
    assert_eq!(appended.land_seq, first.land_seq);
    assert!(store.fork_proofs(None).expect("proofs").is_empty());
}

fn names_are_unique_and_ended_beings_take_nothing_more(backend: Backend) {
    let test = plant_on(backend);
    let error = test.land.create_being(spec("operator")).expect_err("name taken");
    assert!(matches!(error, LandError::Store(StoreError::NameTaken { .. })), "{error:?}");
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    test.land
        .seal_body(&worker, seed::fact::body::KIND_END, &seed::fact::body::EndBody { reason: "done".into() })
        .expect("end");
    assert!(matches!(test.land.seal(&worker, KIND_NOTE, note_body("late")), Err(LandError::Ended { .. })));
}

fn oversized_bodies_are_refused_before_signing(backend: Backend) {
    let test = plant_on(backend);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    let huge = "x".repeat(test.land.limits().fact_body_bytes_max + 1);
    let error = test.land.seal_body(&worker, KIND_NOTE, &NoteBody { text: huge }).expect_err("too large");
    assert!(matches!(error, LandError::BodyTooLarge { .. }), "{error:?}");
    assert_eq!(test.land.store().head(&worker).expect("head").expect("present").seq, 0);
}

fn the_land_log_numbers_every_fact_once_in_arrival_order(backend: Backend) {
    let test = plant_on(backend);
    let a = test.land.create_being(spec("a")).expect("a").being;
    let b = test.land.create_being(spec("b")).expect("b").being;
    let mut expected = Vec::new();
    for index in 0..5 {
        let sealed = note(&test.land, if index % 2 == 0 { &a } else { &b }, "tick");
        expected.push((sealed.land_seq, sealed.being, sealed.seq));
    }
    let store = test.land.store();
    let len = store.land_len().expect("len");
    let log = store.land_log(0, len).expect("log");
    assert_eq!(log.len() as u64, len);
    for (index, entry) in log.iter().enumerate() {
        assert_eq!(entry.land_seq, index as u64, "gap-free");
    }
    for (land_seq, being, seq) in expected {
        let entry = log[land_seq as usize];
        assert_eq!((entry.being, entry.seq), (being, seq));
    }
}

fn a_reel_seq_is_found_from_a_land_seq_as_a_scan_of_the_reel_finds_it(backend: Backend) {
    // Two reels interleaved unevenly, so a reel's land seqs have gaps of every size.
    let test = plant_on(backend);
    let a = test.land.create_being(spec("a")).expect("a").being;
    let b = test.land.create_being(spec("b")).expect("b").being;
    for index in 0..23 {
        note(&test.land, if index % 3 == 0 { &a } else { &b }, "tick");
    }
    let store = test.land.store();
    let land_len = store.land_len().expect("len");
    for being in [a, b] {
        let reel = store.reel(&being, 0, u64::MAX).expect("reel");
        for (seq, stored) in reel.iter().enumerate() {
            assert_eq!(store.land_seq_of(&being, seq as u64).expect("read"), Some(stored.land_seq));
        }
        assert_eq!(store.land_seq_of(&being, reel.len() as u64).expect("read"), None, "past the head");
        for land_seq in 0..=land_len + 1 {
            let scanned = reel.iter().position(|stored| stored.land_seq >= land_seq).unwrap_or(reel.len()) as u64;
            let searched =
                seed::store::reel_seq_at_land_seq(store, &being, reel.len() as u64, land_seq).expect("search");
            assert_eq!(searched, scanned, "land seq {land_seq}");
        }
    }
}

fn reindex_rebuilds_the_derived_indexes_identically(backend: Backend) {
    let test = plant_on(backend);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..20 {
        note(&test.land, &worker, &format!("n{index}"));
    }
    test.land.rotate_key(&worker).expect("rotate");
    note(&test.land, &worker, "after");
    let store = test.land.store();
    let before = store.derived_index_digest().expect("digest");
    let report = store.reindex().expect("reindex");
    assert_eq!(report.facts, store.land_len().expect("len"));
    assert!(report.unreadable_records.is_empty());
    assert_eq!(store.derived_index_digest().expect("digest"), before);

    match backend {
        Backend::Folder => damage_the_land_index_and_reindex(test, before),
        Backend::Postgres => damage_the_derived_tables_and_reindex(test, before),
    }
    let _ = ProblemKind::Signature;
}

fn damage_the_land_index_and_reindex(test: common::TestLand, before: seed::fact::Hash32) {
    let store = test.land.store();
    // Damage the land index under an open store: the read that meets the
    // damaged record names the file, and reindex rebuilds it exactly.
    let index = test.path().join("log").join("land.index");
    let original = std::fs::read(&index).expect("index");
    let mut damaged = original.clone();
    damaged[3 * 28 + 9] ^= 0x10;
    std::fs::write(&index, &damaged).expect("damage");
    let error = store.land_log(0, 10).expect_err("a damaged record is refused");
    assert!(error.to_string().contains("land.index") && error.to_string().contains("seed reindex"), "{error}");
    store.reindex().expect("reindex");
    assert_eq!(store.derived_index_digest().expect("digest"), before);
    assert_eq!(std::fs::read(&index).expect("index"), original, "the rebuilt index is the one written as facts came");
    assert!(verify_land(store, MODE, 1, common::core_rules()).expect("verify").problems.is_empty());

    // Damaged while the land is closed: the next open reads the log from the
    // damaged record on and answers as before.
    let path = test.path();
    test.land.close().expect("close");
    std::fs::write(&index, &damaged).expect("damage");
    let land = Land::open(&path).expect("reopen");
    assert_eq!(land.store().derived_index_digest().expect("digest"), before);
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}

/// Derived rows deleted and changed behind the store's back: verification
/// names each index, and reindex rebuilds the tables exactly.
fn damage_the_derived_tables_and_reindex(test: common::TestLand, before: seed::fact::Hash32) {
    let store = test.land.store();
    let url = match test.land.store_location() {
        seed::land::StoreLocation::Postgres { url } => url,
        other => panic!("not on PostgreSQL: {other:?}"),
    };
    common::postgres::psql_url(
        &url,
        "DELETE FROM seed_names WHERE name = 'worker'; DELETE FROM seed_forked; \
         UPDATE seed_reel_keys SET public_key = '\\x00' WHERE being = (SELECT being FROM seed_names WHERE name = 'birther')",
    );
    assert_ne!(store.derived_index_digest().expect("digest"), before);
    let report = verify_land(store, MODE, 1, common::core_rules()).expect("verify");
    let problems: Vec<String> = report.problems.iter().map(|problem| problem.to_string()).collect();
    assert!(problems.iter().any(|problem| problem.contains("name index \"worker\" is missing")), "{problems:?}");
    assert!(problems.iter().any(|problem| problem.contains("key index entry of")), "{problems:?}");
    store.reindex().expect("reindex");
    assert_eq!(store.derived_index_digest().expect("digest"), before);
    assert!(verify_land(store, MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}

fn an_interrupted_rotation_is_finished_or_discarded_on_open(backend: Backend) {
    let test = plant_on(backend);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    let path = test.path();
    let ring = KeyRing::open(&path.join("keys")).expect("ring");
    // A key staged for a rotation that never sealed is discarded on open.
    ring.stage_next(&worker, &KeyRing::generate().expect("key")).expect("stage");
    test.land.close().expect("close");
    let land = Land::open(&path).expect("reopen");
    note(&land, &worker, "still the old key");
    assert!(ring.staged_next(&worker).expect("read").is_none());
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());

    // A rotation whose fact sealed but whose key was never promoted (a crash
    // between the two) is finished when the land next opens.
    let new_key = KeyRing::generate().expect("key");
    ring.stage_next(&worker, &new_key).expect("stage");
    let body = RotateKeyBody { new_public_key: seed::fact::PublicKeyBytes::of(&new_key) };
    land.seal_body(&worker, KIND_ROTATE_KEY, &body).expect("rotate-key fact");
    land.close().expect("close");
    let land = Land::open(&path).expect("reopen");
    note(&land, &worker, "signed by the new key");
    assert_eq!(ring.load(&worker).expect("key").to_bytes(), new_key.to_bytes(), "the staged key was promoted");
    assert!(ring.staged_next(&worker).expect("read").is_none());
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}

fn heads_follow_the_last_fact_and_the_key_of_the_last_rotation_across_reopening(backend: Backend) {
    let test = plant_on(backend);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    let last = note(&test.land, &worker, "one");
    note(&test.land, &worker, "two");
    let head = test.land.store().head(&worker).expect("head").expect("a reel");
    assert_eq!(head.seq, last.seq + 1);
    assert!(!head.ended);
    test.land.rotate_key(&worker).expect("rotate");
    let rotated = test.land.store().head(&worker).expect("head").expect("a reel");
    assert_ne!(rotated.public_key, head.public_key);
    note(&test.land, &worker, "signed with the new key");
    let before = test.land.store().head(&worker).expect("head").expect("a reel");
    assert_eq!(before.public_key, rotated.public_key);
    let path = test.path();
    test.land.close().expect("close");
    let land = Land::open(&path).expect("reopen");
    assert_eq!(land.store().head(&worker).expect("head"), Some(before), "a head is read back from the log");
    // Heads read in one request agree with heads read one at a time, in the
    // order asked, with `None` for a being without a reel and repeats kept.
    let stranger = seed::fact::BeingId([0xEE; 32]);
    let mut asked = land.store().beings().expect("beings");
    asked.reverse();
    asked.extend([stranger, worker]);
    let one_at_a_time: Vec<_> = asked.iter().map(|being| land.store().head(being).expect("head")).collect();
    assert_eq!(land.store().heads(&asked).expect("heads"), one_at_a_time);
    assert_eq!(one_at_a_time[one_at_a_time.len() - 2], None);
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}

/// The envelope of each of the first `len` facts of the land log, in order.
fn envelopes_in_land_order(store: &dyn seed::store::Store, len: u64) -> Vec<Vec<u8>> {
    let entries = store.land_log(0, len).expect("log");
    entries.iter().map(|entry| store.fact_at(entry).expect("read").expect("stored").fact.encode_envelope()).collect()
}

#[test]
fn a_land_of_an_earlier_build_in_a_sled_store_is_migrated_once_byte_for_byte() {
    let test = plant();
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..5 {
        note(&test.land, &worker, &format!("note {index}"));
    }
    test.land.rotate_key(&worker).expect("rotate");
    note(&test.land, &worker, "after the rotation");
    let path = test.path();
    let store = test.land.store();
    let len = store.land_len().expect("length");
    let facts = envelopes_in_land_order(store, len);
    let digest = store.derived_index_digest().expect("digest");
    test.land.close().expect("close");
    common::rewrite_as_sled_land(&path);
    // An index of the old layout, which the sled store rebuilds on open.
    {
        let sled = seed::store::SledStore::open(&path.join("store"), None, &Default::default()).expect("sled");
        let mut legacy_key = vec![b'h'];
        legacy_key.extend_from_slice(worker.as_bytes());
        sled.raw_tree().insert(legacy_key, vec![0u8; 81]).expect("legacy entry");
        sled.close().expect("close");
    }

    let land = Land::open(&path).expect("the old land opens");
    assert!(!path.join("store").exists() && path.join("log").is_dir(), "migrated once into log/");
    let store = land.store();
    assert_eq!(store.land_len().expect("length"), len);
    let migrated = envelopes_in_land_order(store, len);
    assert_eq!(migrated, facts, "every fact at its land seq, byte for byte");
    assert_eq!(store.derived_index_digest().expect("digest"), digest);
    note(&land, &worker, "after the migration");
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}

#[test]
fn a_sled_snapshot_left_half_written_by_a_kill_does_not_keep_an_old_land_from_migrating() {
    let test = plant();
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    note(&test.land, &worker, "before the kill");
    let path = test.path();
    let facts_before = test.land.store().land_len().expect("land length");
    test.land.close().expect("close");
    common::rewrite_as_sled_land(&path);
    // What a SIGKILL during sled's snapshot write leaves: a torn file whose
    // name sorts after every finished snapshot.
    let unfinished = path.join("store").join("snap.FFFFFFFFFFFFFFFF.generating");
    std::fs::write(&unfinished, b"torn snapshot bytes").expect("write the torn snapshot");
    let land = Land::open(&path).expect("the land opens despite the torn snapshot");
    assert_eq!(land.store().land_len().expect("land length"), facts_before);
    note(&land, &worker, "after the kill");
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}

/// Verification reads the land a slice of whole beings at a time: whatever
/// the slice, the report is the one reading everything at once gives, on a
/// clean land and on one with a tampered fact, a dropped index entry and a
/// land seq claimed twice.
#[test]
fn verifying_in_slices_of_any_size_reports_what_verifying_whole_reports() {
    use seed::check::{
        verify_land_in_slices, verify_land_in_slices_trusting, CheckpointRefused, HowToVerify, LandReport,
    };
    use seed::progress::NoProgress;
    let test = plant();
    let workers: Vec<_> =
        (0..6).map(|index| test.land.create_being(spec(&format!("worker-{index}"))).expect("worker").being).collect();
    for round in 0..3 {
        for worker in &workers {
            note(&test.land, worker, &format!("round {round}"));
        }
    }
    let store = test.land.store();
    let check = |what: &str| {
        let how = |progress| HowToVerify { mode: MODE, threads: 2, rules: common::core_rules(), progress };
        let whole = verify_land_in_slices(store, how(&seed::progress::NoProgress), usize::MAX).expect("verify");
        for slice in [1, 2, 5, 17] {
            let sliced = verify_land_in_slices(store, how(&seed::progress::NoProgress), slice).expect("verify");
            assert_eq!(sliced, whole, "{what}, slices of {slice}");
        }
        whole
    };
    let clean = check("clean");
    assert!(clean.problems.is_empty() && clean.verified_digest.is_some(), "{clean:?}");
    assert_eq!(verify_land(store, MODE, 1, common::core_rules()).expect("verify"), clean);
    // With a checkpoint over the clean land, any slice vouches for every
    // signature it covers; the report is otherwise the one without it.
    let (facts, digest) = clean.verified_digest.expect("a clean land's digest");
    let checkpoint = test.land.write_verified_checkpoint(facts, digest).expect("checkpoint");
    let trusted = seed::check::checkpoint::TrustedCheckpoint { checkpoint: &checkpoint, root: test.land.root() };
    let trusting = |trusted: Option<_>, slice| {
        let how = HowToVerify { mode: MODE, threads: 2, rules: common::core_rules(), progress: &NoProgress };
        verify_land_in_slices_trusting(store, trusted, how, slice).expect("verify")
    };
    for slice in [1, 2, 5, 17, usize::MAX] {
        let vouched = trusting(Some(trusted), slice);
        assert_eq!(vouched.signatures_covered, facts, "slices of {slice}: {vouched:?}");
        assert_eq!(vouched.checkpoint_refused, None, "slices of {slice}");
        let without = LandReport { signatures_covered: 0, verified_digest: clean.verified_digest, ..vouched };
        assert_eq!(without, clean, "slices of {slice}");
    }
    let log = test.land.surgery();
    // A flipped body byte of worker-2's second fact and of worker-4's third.
    for (worker, seq) in [(&workers[2], 1), (&workers[4], 2)] {
        let mut envelope = log.stored_envelope(worker, seq).expect("read").expect("stored");
        let at = envelope.len() - 70;
        envelope[at] ^= 0x01;
        log.overwrite_envelope_unchecked(worker, seq, &envelope).expect("write");
    }
    let damaged = check("damaged");
    assert!(damaged.problems.len() >= 2 && damaged.verified_digest.is_none(), "{damaged:?}");
    // The checkpoint no longer holds: every signature is checked, and the
    // report says why, whatever the slice.
    for slice in [1, 2, 5, 17, usize::MAX] {
        let refused = trusting(Some(trusted), slice);
        // Two facts no longer decode, so fewer are readable than it covers.
        let fewer = Some(CheckpointRefused::CoversMore { covered: facts, readable: facts as usize - 2 });
        assert_eq!(refused.checkpoint_refused, fewer, "slices of {slice}");
        let without = LandReport { checkpoint_refused: None, ..refused };
        assert_eq!(without, trusting(None, slice), "slices of {slice}");
        assert_eq!(LandReport { verified_digest: None, ..without }, damaged, "slices of {slice}");
    }
}

on_every_backend!(
    a_fork_is_kept_as_proof_and_the_head_does_not_advance,
    the_fork_proof_survives_reopening_and_reindex,
    appends_that_break_the_chain_are_refused_and_nothing_is_written,
    the_same_fact_appended_twice_is_acknowledged_once,
    names_are_unique_and_ended_beings_take_nothing_more,
    oversized_bodies_are_refused_before_signing,
    the_land_log_numbers_every_fact_once_in_arrival_order,
    a_reel_seq_is_found_from_a_land_seq_as_a_scan_of_the_reel_finds_it,
    reindex_rebuilds_the_derived_indexes_identically,
    an_interrupted_rotation_is_finished_or_discarded_on_open,
    heads_follow_the_last_fact_and_the_key_of_the_last_rotation_across_reopening,
);

/// A land whose `land.index` was written before its records were checked
/// by a CRC-32 (each checked by a keyed BLAKE3 prefix) opens on those
/// records as they are: a writing open keeps them byte for byte, and the
/// records of the facts it adds are checked by the CRC.
#[test]
fn a_land_index_checked_by_blake3_is_read_as_it_is_and_grows_by_records_checked_by_crc() {
    const RECORD_BYTES: usize = 28;
    const CHECKED_BY_CRC: u32 = 1 << 31;
    let test = plant_on(Backend::Folder);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..12 {
        note(&test.land, &worker, &format!("before {index}"));
    }
    let before = test.land.store().derived_index_digest().expect("digest");
    let path = test.path();
    test.land.close().expect("close");

    // Every record as a build before the CRC wrote it.
    let index = path.join("log").join("land.index");
    let mut records = std::fs::read(&index).expect("index");
    assert_eq!(records.len() % RECORD_BYTES, 0);
    for (land_seq, record) in records.chunks_exact_mut(RECORD_BYTES).enumerate() {
        let flags = u32::from_le_bytes(record[20..24].try_into().expect("4 bytes"));
        assert_ne!(flags & CHECKED_BY_CRC, 0, "land seq {land_seq} is written checked by the CRC");
        record[20..24].copy_from_slice(&(flags & !CHECKED_BY_CRC).to_le_bytes());
        let mut hasher = blake3::Hasher::new_derive_key("seed land index record v1");
        hasher.update(&(land_seq as u64).to_le_bytes());
        hasher.update(&record[..24]);
        let check = hasher.finalize();
        record[24..].copy_from_slice(&check.as_bytes()[..4]);
    }
    std::fs::write(&index, &records).expect("write the old records");

    let land = Land::open(&path).expect("reopen");
    assert_eq!(land.store().derived_index_digest().expect("digest"), before);
    for index in 0..5 {
        note(&land, &worker, &format!("after {index}"));
    }
    let len = land.store().land_len().expect("len") as usize;
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
    land.close().expect("close");
    let grown = std::fs::read(&index).expect("index");
    assert_eq!(grown.len(), len * RECORD_BYTES, "a record for every fact");
    assert_eq!(&grown[..records.len()], &records[..], "the old records are kept as they were");
    for (land_seq, record) in grown.chunks_exact(RECORD_BYTES).enumerate().skip(records.len() / RECORD_BYTES) {
        let flags = u32::from_le_bytes(record[20..24].try_into().expect("4 bytes"));
        assert_ne!(flags & CHECKED_BY_CRC, 0, "land seq {land_seq}, added, is checked by the CRC");
    }
}

/// A land whose segments a build before the CRC wrote (every frame closed
/// by a keyed BLAKE3, magic `SLF1`) opens on them, verifies, and grows by
/// frames closed by the CRC, keeping the frames it had byte for byte.
#[test]
fn segments_checked_by_blake3_are_read_as_they_are_and_grow_by_frames_checked_by_crc() {
    const HEAD_BYTES: usize = 16;
    let test = plant_on(Backend::Folder);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..12 {
        note(&test.land, &worker, &format!("before {index}"));
    }
    let before = test.land.store().land_log_with_envelopes(0, u64::MAX).expect("land log");
    let path = test.path();
    test.land.close().expect("close");

    // Every frame as a build before the CRC wrote it; the derived indexes,
    // whose offsets no longer hold, rebuilt by the next open.
    let segment = path.join("log").join("segments").join("00000000000000000000.log");
    let frames = std::fs::read(&segment).expect("segment");
    let (mut old, mut at) = (Vec::new(), 0);
    while at < frames.len() {
        assert_eq!(&frames[at..at + 4], b"SLF2", "byte {at} starts a frame checked by the CRC");
        let len = u32::from_le_bytes(frames[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        let envelope = &frames[at + HEAD_BYTES..at + HEAD_BYTES + len];
        let mut hasher = blake3::Hasher::new_derive_key("seed segment frame v1");
        hasher.update(&frames[at + 4..at + HEAD_BYTES]);
        hasher.update(envelope);
        old.extend_from_slice(b"SLF1");
        old.extend_from_slice(&frames[at + 4..at + HEAD_BYTES + len]);
        old.extend_from_slice(&hasher.finalize().as_bytes()[..8]);
        at += HEAD_BYTES + len + 4;
    }
    std::fs::write(&segment, &old).expect("write the old frames");
    for derived in ["land.index", "beings.index"] {
        std::fs::remove_file(path.join("log").join(derived)).expect("remove");
    }

    let land = Land::open(&path).expect("reopen");
    assert_eq!(land.store().land_log_with_envelopes(0, u64::MAX).expect("land log"), before);
    for index in 0..5 {
        note(&land, &worker, &format!("after {index}"));
    }
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
    land.close().expect("close");
    let grown = std::fs::read(&segment).expect("segment");
    assert_eq!(&grown[..old.len()], &old[..], "the old frames are kept as they were");
    assert_eq!(&grown[old.len()..old.len() + 4], b"SLF2", "an added frame is checked by the CRC");
    let land = Land::open(&path).expect("reopen");
    assert_eq!(land.store().land_len().expect("len"), before.len() as u64 + 5);
    assert!(verify_land(land.store(), MODE, 1, common::core_rules()).expect("verify").problems.is_empty());
}
