//! Flipping any single byte of any stored fact is caught by verification,
//! which names the fact.

use crate::common;

use common::{note, plant_on, seed, spec, stdout, Backend};
use seed::check::{verify_land, ProblemKind, SignatureMode};
use seed::fact::BeingId;

/// Every stored fact's being and seq, in land order.
fn stored_facts(store: &dyn seed::store::Store) -> Vec<(BeingId, u64)> {
    let len = store.land_len().expect("length");
    store.land_log(0, len).expect("land log").into_iter().map(|entry| (entry.being, entry.seq)).collect()
}

fn every_single_byte_flip_of_every_stored_fact_is_caught_and_named(backend: Backend) {
    let test = plant_on(backend);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    note(&test.land, &worker, "first");
    test.land.rotate_key(&worker).expect("rotate");
    note(&test.land, &worker, "after rotation");
    let store = test.land.store();
    let log = test.land.surgery();
    let mode = SignatureMode::Batch { batch_facts: 64 };
    assert!(
        verify_land(store, mode, 1, common::core_rules()).expect("verify").problems.is_empty(),
        "a fresh land verifies"
    );

    let mut flips = 0;
    for (being, seq) in stored_facts(store) {
        let original = log.stored_envelope(&being, seq).expect("read").expect("present");
        for index in 0..original.len() {
            for flip in [0x01u8, 0x80] {
                let mut tampered = original.clone();
                tampered[index] ^= flip;
                log.overwrite_envelope_unchecked(&being, seq, &tampered).expect("tamper");
                let report = verify_land(store, mode, 1, common::core_rules()).expect("verify");
                let named =
                    report.problems.iter().any(|problem| problem.being == Some(being) && problem.seq == Some(seq));
                assert!(
                    named,
                    "flipping bit {flip:#x} of byte {index} of being {} seq {seq} went unnamed: {:?}",
                    being.short(),
                    report.problems
                );
                flips += 1;
            }
        }
        log.overwrite_envelope_unchecked(&being, seq, &original).expect("restore");
    }
    assert!(flips > 2_000, "the sweep covered {flips} flips");
    assert!(
        verify_land(store, mode, 1, common::core_rules()).expect("verify").problems.is_empty(),
        "restored land verifies again"
    );
}

fn seed_verify_names_a_tampered_fact_and_exits_1(backend: Backend) {
    let test = plant_on(backend);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    note(&test.land, &worker, "the original words");
    let log = test.land.surgery();
    let mut value = log.stored_envelope(&worker, 1).expect("read").expect("present");
    let at = value.windows(8).position(|window| window == b"original").expect("body text is stored");
    value[at] = b'O';
    log.overwrite_envelope_unchecked(&worker, 1, &value).expect("tamper");
    test.land.close().expect("close");

    let output = seed(&test.dir.path().join("land"), &["verify"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "being @worker ({}) seq 1: undecodable: body hash does not match the header",
            worker.short()
        )),
        "{text}"
    );
    let strict = seed(&test.dir.path().join("land"), &["verify", "--strict", "--being", "@worker"]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(stdout(&strict).contains("seq 1: undecodable"), "{}", stdout(&strict));
}

fn a_forged_signature_is_found_by_the_batch_path_and_named(backend: Backend) {
    let test = plant_on(backend);
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..40 {
        note(&test.land, &worker, &format!("note {index}"));
    }
    let log = test.land.surgery();
    let mut value = log.stored_envelope(&worker, 17).expect("read").expect("present");
    // The signature is the last 64 bytes of the envelope; flip a bit of s.
    let last = value.len() - 1;
    value[last - 10] ^= 0x04;
    log.overwrite_envelope_unchecked(&worker, 17, &value).expect("tamper");
    let report = verify_land(test.land.store(), SignatureMode::Batch { batch_facts: 256 }, 2, common::core_rules())
        .expect("verify");
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].seq, Some(17));
    assert_eq!(report.problems[0].kind, ProblemKind::Signature);
}

on_every_backend!(
    every_single_byte_flip_of_every_stored_fact_is_caught_and_named,
    seed_verify_names_a_tampered_fact_and_exits_1,
    a_forged_signature_is_found_by_the_batch_path_and_named,
);
