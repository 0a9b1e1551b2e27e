//! `seed export` / `seed import`: a self-verifying bundle moves a reel between
//! lands; every damaged, forked or foreign bundle is refused and nothing is written.

mod common;

use common::{note, plant, seed, spec, stderr, stdout};
use seed::bundle::{Bundle, BundleError};
use seed::fact::body::{NoteBody, KIND_NOTE};
use seed::fact::Fact;
use std::path::Path;

fn note_body(text: &str) -> Vec<u8> {
    seed::canonical::to_canonical_bytes(&NoteBody { text: text.into() }).expect("body")
}

/// Imports `file` into `land` through the CLI and expects a refusal naming `needle`,
/// with the land's store unchanged.
fn check_import_refused(land: &common::TestLand, file: &Path, needle: &str) {
    let store = land.land.store();
    let length = store.land_len().expect("len");
    let digest = store.derived_index_digest().expect("digest");
    let error = match seed::bundle::import(&land.land, file) {
        Ok(report) => panic!("import of {} should fail, imported {report:?}", file.display()),
        Err(error) => error.to_string(),
    };
    assert!(error.contains(needle), "expected {needle:?} in {error:?}");
    assert_eq!(store.land_len().expect("len"), length, "nothing written");
    assert_eq!(store.derived_index_digest().expect("digest"), digest, "nothing written");
}

#[test]
fn a_reel_moves_between_lands_and_imports_only_what_is_new() {
    let source = plant();
    let worker = source.land.create_being(spec("traveller")).expect("being").being;
    for index in 0..5 {
        note(&source.land, &worker, &format!("step {index}"));
    }
    source.land.rotate_key(&worker).expect("rotate");
    note(&source.land, &worker, "after rotation");
    let file = source.dir.path().join("traveller.bundle");
    assert_eq!(seed::bundle::export(&source.land, &worker, &file).expect("export"), 8);

    let target = plant();
    let report = seed::bundle::import(&target.land, &file).expect("import");
    assert_eq!((report.imported, report.already_present, report.name.as_str()), (8, 0, "traveller"));
    let moved: Vec<_> = target.land.store().reel(&worker, 0, 8).expect("reel").into_iter().map(|s| s.fact).collect();
    let original: Vec<_> = source.land.store().reel(&worker, 0, 8).expect("reel").into_iter().map(|s| s.fact).collect();
    assert_eq!(moved, original, "byte-identical facts");
    let again = seed::bundle::import(&target.land, &file).expect("re-import");
    assert_eq!((again.imported, again.already_present), (0, 8));

    // The reel grows at the source; a new export brings only the new facts.
    note(&source.land, &worker, "later");
    seed::bundle::export(&source.land, &worker, &file).expect("export");
    let grown = seed::bundle::import(&target.land, &file).expect("import");
    assert_eq!((grown.imported, grown.already_present), (1, 8));
    let verify =
        seed::check::verify_land(target.land.store(), seed::check::SignatureMode::Strict, 1, common::core_rules())
            .expect("verify");
    assert!(verify.problems.is_empty(), "{:?}", verify.problems);
}

#[test]
fn damaged_forked_and_foreign_bundles_are_refused() {
    let source = plant();
    let worker = source.land.create_being(spec("traveller")).expect("being").being;
    for index in 0..3 {
        note(&source.land, &worker, &format!("step {index}"));
    }
    let file = source.dir.path().join("good.bundle");
    seed::bundle::export(&source.land, &worker, &file).expect("export");
    let good = std::fs::read(&file).expect("read");
    let bundle = Bundle::decode(&good).expect("decodes");
    let target = plant();
    let write = |name: &str, bytes: &[u8]| {
        let path = target.dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    };

    // Truncated anywhere: refused.
    for cut in [1, good.len() / 3, good.len() - 1] {
        check_import_refused(&target, &write("cut.bundle", &good[..cut]), "truncated");
    }
    // A flipped byte anywhere: refused (framing, digest or signature).
    for position in (0..good.len()).step_by(37) {
        let mut flipped = good.clone();
        flipped[position] ^= 0x20;
        let path = write("flipped.bundle", &flipped);
        assert!(seed::bundle::import(&target.land, &path).is_err(), "flip at {position} imported");
    }
    // Re-framed with a tampered fact and a recomputed digest: the signature catches it.
    let mut tampered = bundle.clone();
    let mut envelope = tampered.envelopes[2].clone();
    let at = envelope.windows(6).position(|w| w == b"step 1").expect("text");
    envelope[at + 5] = b'9';
    tampered.envelopes[2] = envelope;
    check_import_refused(&target, &write("tampered.bundle", &tampered.encode()), "fails verification");
    // Internally forked: two facts claiming seq 2.
    let key = source.land.keys().load(&worker).expect("key");
    let first = Fact::decode_envelope(&bundle.envelopes[1]).expect("fact");
    let rival = Fact::seal(worker, 2, first.id(), first.header.stored_time_ms, KIND_NOTE, note_body("rival"), &key)
        .expect("seal");
    let mut forked = bundle.clone();
    forked.envelopes.insert(3, rival.encode_envelope());
    forked.head_seq += 1;
    check_import_refused(&target, &write("forked.bundle", &forked.encode()), "fails verification");
    // Foreign formats.
    check_import_refused(
        &target,
        &write("json.bundle", b"{\"format\": \"seed-reel-bundle\"}"),
        "not a seed reel bundle",
    );
    let other = seed::canonical::encode_value(&ciborium::value::Value::Map(vec![(
        ciborium::value::Value::Text("format".into()),
        ciborium::value::Value::Text("other-tool-archive".into()),
    )]))
    .expect("encode");
    check_import_refused(&target, &write("other.bundle", &other), "foreign format");
    check_import_refused(&target, &write("empty.bundle", b""), "the file is empty");
}

/// SPEC §3.3: two facts at one (being, seq), both signed by the being's key,
/// are a fork; the land keeps both and extends the reel no further.
#[test]
fn a_bundle_that_conflicts_with_the_land_is_kept_as_a_fork_proof_and_freezes_the_reel() {
    let source = plant();
    let worker = source.land.create_being(spec("traveller")).expect("being").being;
    for index in 0..3 {
        note(&source.land, &worker, &format!("step {index}"));
    }
    let file = source.dir.path().join("good.bundle");
    seed::bundle::export(&source.land, &worker, &file).expect("export");
    let bundle = Bundle::decode(&std::fs::read(&file).expect("read")).expect("decodes");
    let target = plant();
    seed::bundle::import(&target.land, &file).expect("the good bundle imports");

    // The same being's key signs another past from seq 2 on.
    let key = source.land.keys().load(&worker).expect("key");
    let first = Fact::decode_envelope(&bundle.envelopes[1]).expect("fact");
    let rival =
        Fact::seal(worker, 2, first.id(), first.header.stored_time_ms, KIND_NOTE, note_body("another past"), &key)
            .expect("seal");
    let mut rival_history = bundle.clone();
    rival_history.envelopes[2] = rival.encode_envelope();
    rival_history.envelopes.truncate(3);
    rival_history.head_seq = 2;
    rival_history.head_id = rival.id();
    let rival_file = target.dir.path().join("rival.bundle");
    std::fs::write(&rival_file, rival_history.encode()).expect("write");

    let store = target.land.store();
    let length = store.land_len().expect("len");
    let reel_before = store.reel(&worker, 0, u64::MAX).expect("reel");
    let error = seed::bundle::import(&target.land, &rival_file).expect_err("a fork is refused");
    assert!(matches!(error, BundleError::Fork { seq: 2, .. }), "{error}");
    assert!(error.to_string().contains("kept as a fork proof"), "{error}");
    assert_eq!(store.land_len().expect("len"), length, "no fact of the bundle was imported");
    assert_eq!(store.reel(&worker, 0, u64::MAX).expect("reel"), reel_before, "the reel is as it was");
    let proofs = store.fork_proofs(Some(&worker)).expect("proofs");
    let stored_at_2 = reel_before[2].fact.id();
    assert_eq!(
        proofs.iter().map(|proof| (proof.seq, proof.kept, proof.rival)).collect::<Vec<_>>(),
        [(2, stored_at_2, rival.id())],
        "the rival is kept beside the stored fact"
    );
    let verify = seed::check::verify_being(store, &worker, seed::check::SignatureMode::Strict, common::core_rules())
        .expect("verify");
    assert!(
        verify.problems.iter().any(|problem| problem.seq == Some(2)
            && matches!(problem.kind, seed::check::ProblemKind::Fork { rival: named, .. } if named == rival.id())),
        "{:?}",
        verify.problems
    );

    // Frozen: the reel takes nothing more, from the same bundle again or
    // from a later export of the honest history.
    let again = seed::bundle::import(&target.land, &rival_file).expect_err("still refused");
    assert!(matches!(again, BundleError::AlreadyForked { seq: 2, .. }), "{again}");
    note(&source.land, &worker, "later");
    seed::bundle::export(&source.land, &worker, &file).expect("export");
    assert!(seed::bundle::import(&target.land, &file).is_err(), "a forked reel is not extended");
    assert_eq!(store.land_len().expect("len"), length, "nothing was written");
    assert_eq!(store.fork_proofs(None).expect("proofs").len(), 1, "one proof, kept once");
}

#[test]
fn a_bundle_for_a_name_already_taken_is_refused() {
    let source = plant();
    let file = source.dir.path().join("op.bundle");
    seed::bundle::export(&source.land, &source.land.operator(), &file).expect("export");
    let target = plant();
    check_import_refused(&target, &file, "@operator is taken");
    let error = seed::bundle::import(&target.land, &file).expect_err("refused");
    assert!(matches!(error, BundleError::NameTaken { .. }));
}

#[test]
fn export_and_import_through_the_cli() {
    let source = plant();
    let worker = source.land.create_being(spec("walker")).expect("being").being;
    note(&source.land, &worker, "hello");
    let common::TestLand { dir, land, .. } = source;
    land.close().expect("close");
    let source_path = dir.path().join("land");
    let file = dir.path().join("walker.bundle");
    let exported = seed(&source_path, &["export", "@walker", "-o", file.to_str().expect("utf-8")]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    let target = tempfile::tempdir().expect("folder");
    let land = target.path().join("land");
    assert!(seed(&land, &["plant"]).status.success());
    let imported = seed(&land, &["import", file.to_str().expect("utf-8")]);
    assert!(stdout(&imported).contains("imported @walker"), "{}", stderr(&imported));
    assert!(stdout(&seed(&land, &["reel", "@walker"])).contains("hello"));
    std::fs::write(&file, b"garbage").expect("write");
    let refused = seed(&land, &["import", file.to_str().expect("utf-8")]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("not a seed reel bundle"), "{}", stderr(&refused));
}
