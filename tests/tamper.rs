//! Flipping any single byte of any stored fact is caught by verification,
//! which names the fact.

use crate::common;

use common::{note, plant, seed, spec, stdout};
use seed::check::{verify_land, ProblemKind, SignatureMode};
use seed::fact::BeingId;

/// The sled key of one stored fact: prefix `f`, being (32), seq (8, big-endian).
fn fact_record_key(being: &BeingId, seq: u64) -> Vec<u8> {
    let mut key = vec![b'f'];
    key.extend_from_slice(being.as_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// Record keys of stored facts: prefix `f`, being (32), seq (8, big-endian).
fn fact_keys(tree: &sled::Tree) -> Vec<(Vec<u8>, BeingId, u64)> {
    tree.scan_prefix([b'f'])
        .map(|entry| {
            let (key, _) = entry.expect("read");
            let being = BeingId::from_slice(&key[1..33]).expect("being");
            let seq = u64::from_be_bytes(key[33..41].try_into().expect("seq"));
            (key.to_vec(), being, seq)
        })
        .collect()
}

#[test]
fn every_single_byte_flip_of_every_stored_fact_is_caught_and_named() {
    let test = plant();
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    note(&test.land, &worker, "first");
    test.land.rotate_key(&worker).expect("rotate");
    note(&test.land, &worker, "after rotation");
    let store = test.land.store();
    let tree = test.land.sled_store().raw_tree();
    let mode = SignatureMode::Batch { batch_facts: 64 };
    assert!(
        verify_land(store, mode, 1, common::core_rules()).expect("verify").problems.is_empty(),
        "a fresh land verifies"
    );

    let mut flips = 0;
    for (key, being, seq) in fact_keys(tree) {
        let original = tree.get(&key).expect("read").expect("present").to_vec();
        for index in 0..original.len() {
            for flip in [0x01u8, 0x80] {
                let mut tampered = original.clone();
                tampered[index] ^= flip;
                tree.insert(&key, tampered).expect("tamper");
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
        tree.insert(&key, original).expect("restore");
    }
    assert!(flips > 2_000, "the sweep covered {flips} flips");
    assert!(
        verify_land(store, mode, 1, common::core_rules()).expect("verify").problems.is_empty(),
        "restored land verifies again"
    );
}

#[test]
fn seed_verify_names_a_tampered_fact_and_exits_1() {
    let test = plant();
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    note(&test.land, &worker, "the original words");
    let tree = test.land.sled_store().raw_tree();
    let key = fact_record_key(&worker, 1);
    let mut value = tree.get(&key).expect("read").expect("present").to_vec();
    let at = value.windows(8).position(|window| window == b"original").expect("body text is stored");
    value[at] = b'O';
    tree.insert(&key, value).expect("tamper");
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

#[test]
fn a_forged_signature_is_found_by_the_batch_path_and_named() {
    let test = plant();
    let worker = test.land.create_being(spec("worker")).expect("worker").being;
    for index in 0..40 {
        note(&test.land, &worker, &format!("note {index}"));
    }
    let tree = test.land.sled_store().raw_tree();
    let key = fact_record_key(&worker, 17);
    let mut value = tree.get(&key).expect("read").expect("present").to_vec();
    // The signature is the last 64 bytes of the record; flip a bit of s.
    let last = value.len() - 1;
    value[last - 10] ^= 0x04;
    tree.insert(&key, value).expect("tamper");
    let report = verify_land(test.land.store(), SignatureMode::Batch { batch_facts: 256 }, 2, common::core_rules())
        .expect("verify");
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_eq!(report.problems[0].seq, Some(17));
    assert_eq!(report.problems[0].kind, ProblemKind::Signature);
}
