//! `seed export` / `seed import`: a self-verifying bundle moves a reel between
//! lands; every damaged, forked or foreign bundle is refused and nothing is written.

use crate::common;

use ciborium::value::Value;
use common::{note, plant, seed, spec, stderr, stdout};
use ed25519_dalek::SigningKey;
use seed::bundle::{Bundle, BundleError};
use seed::fact::body::{NoteBody, KIND_GENESIS, KIND_NOTE, KIND_ROTATE_KEY};
use seed::fact::{BeingId, Fact, FactId};
use seed::world::body::{KIND_ACT, KIND_WORLD};
use std::path::Path;

fn note_body(text: &str) -> Vec<u8> {
    seed::canonical::to_canonical_bytes(&NoteBody { text: text.into() }).expect("body")
}

/// `land` verifies, every body held to every schema of this build.
fn assert_verifies(land: &seed::land::Land, context: &str) {
    let mode = seed::check::SignatureMode::Strict;
    let report = seed::check::verify_land(land.store(), mode, 1, common::core_rules()).expect("verify");
    assert!(report.problems.is_empty(), "{context}: {:?}", report.problems);
}

/// Imports `file` into `land` through the CLI and expects a refusal naming `needle`,
/// with the land's store unchanged.
fn check_import_refused(land: &common::TestLand, file: &Path, needle: &str) {
    let store = land.land.store();
    let length = store.land_len().expect("len");
    let digest = store.derived_index_digest().expect("digest");
    let error = match seed::bundle::import(&land.land, file, &seed::world::CoreSchemas::new()) {
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
    assert_eq!(
        seed::bundle::export(&source.land, &worker, &file, &seed::world::CoreSchemas::new()).expect("export"),
        8
    );

    let target = plant();
    let report = seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new()).expect("import");
    assert_eq!((report.imported, report.already_present, report.name.as_str()), (8, 0, "traveller"));
    let moved: Vec<_> = target.land.store().reel(&worker, 0, 8).expect("reel").into_iter().map(|s| s.fact).collect();
    let original: Vec<_> = source.land.store().reel(&worker, 0, 8).expect("reel").into_iter().map(|s| s.fact).collect();
    assert_eq!(moved, original, "byte-identical facts");
    let again = seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new()).expect("re-import");
    assert_eq!((again.imported, again.already_present), (0, 8));

    // The reel grows at the source; a new export brings only the new facts.
    note(&source.land, &worker, "later");
    seed::bundle::export(&source.land, &worker, &file, &seed::world::CoreSchemas::new()).expect("export");
    let grown = seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new()).expect("import");
    assert_eq!((grown.imported, grown.already_present), (1, 8));
    assert_verifies(&target.land, "the target");
}

/// A land with @traveller and three notes on its reel, exported: the land,
/// the being, the bundle file and its bytes.
fn exported_traveller() -> (common::TestLand, BeingId, std::path::PathBuf, Vec<u8>) {
    let source = plant();
    let worker = source.land.create_being(spec("traveller")).expect("being").being;
    for index in 0..3 {
        note(&source.land, &worker, &format!("step {index}"));
    }
    let file = source.dir.path().join("good.bundle");
    seed::bundle::export(&source.land, &worker, &file, &seed::world::CoreSchemas::new()).expect("export");
    let bytes = std::fs::read(&file).expect("read");
    (source, worker, file, bytes)
}

#[test]
fn damaged_forked_and_foreign_bundles_are_refused() {
    let (source, worker, _file, good) = exported_traveller();
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
        assert!(
            seed::bundle::import(&target.land, &path, &seed::world::CoreSchemas::new()).is_err(),
            "flip at {position} imported"
        );
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
    let (source, worker, file, good) = exported_traveller();
    let bundle = Bundle::decode(&good).expect("decodes");
    let target = plant();
    seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new()).expect("the good bundle imports");

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
    let error = seed::bundle::import(&target.land, &rival_file, &seed::world::CoreSchemas::new())
        .expect_err("a fork is refused");
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
    let again =
        seed::bundle::import(&target.land, &rival_file, &seed::world::CoreSchemas::new()).expect_err("still refused");
    assert!(matches!(again, BundleError::AlreadyForked { seq: 2, .. }), "{again}");
    note(&source.land, &worker, "later");
    seed::bundle::export(&source.land, &worker, &file, &seed::world::CoreSchemas::new()).expect("export");
    assert!(
        seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new()).is_err(),
        "a forked reel is not extended"
    );
    assert_eq!(store.land_len().expect("len"), length, "nothing was written");
    assert_eq!(store.fork_proofs(None).expect("proofs").len(), 1, "one proof, kept once");
}

#[test]
fn a_bundle_for_a_name_already_taken_is_refused() {
    let source = plant();
    let file = source.dir.path().join("op.bundle");
    seed::bundle::export(&source.land, &source.land.operator(), &file, &seed::world::CoreSchemas::new())
        .expect("export");
    let target = plant();
    check_import_refused(&target, &file, "@operator is taken");
    let error = seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new()).expect_err("refused");
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

/// When every forged fact is stored: 2026-01-01T00:00:00Z.
const FORGED_TIME_MS: u64 = 1_767_225_600_000;

fn text(text: &str) -> Value {
    Value::Text(text.to_string())
}

fn canonical(value: &Value) -> Vec<u8> {
    seed::canonical::encode_value(value).expect("canonical")
}

/// A genesis body's fields as the land writes them, with a clause in the flow.
fn genesis_fields(name: &str, public_key: [u8; 32]) -> Vec<(&'static str, Value)> {
    let clause = Value::Map(vec![(text("role"), text("worker")), (text("stack"), Value::Bool(true))]);
    vec![
        ("name", text(name)),
        ("parent", Value::Null),
        ("cognition", text("scripted")),
        ("public_key", Value::Bytes(public_key.to_vec())),
        ("role_flow", Value::Array(vec![clause])),
        ("default_role", text("worker")),
        ("home_space", text("/")),
        ("nonce", Value::Bytes(vec![7; 16])),
    ]
}

/// `fields` with `key` set to `value`.
fn with(mut fields: Vec<(&'static str, Value)>, key: &str, value: Value) -> Vec<(&'static str, Value)> {
    fields.iter_mut().filter(|(known, _)| *known == key).for_each(|(_, slot)| *slot = value.clone());
    fields
}

/// An act body's entries, changed by `change`.
fn act_entries(change: impl FnOnce(&mut Vec<(Value, Value)>)) -> Vec<u8> {
    let bytes = seed::canonical::to_canonical_bytes(&common::act_body()).expect("canonical");
    let Value::Map(mut entries) = seed::canonical::decode_canonical(&bytes).expect("decodes") else {
        panic!("an act body is a map")
    };
    change(&mut entries);
    canonical(&Value::Map(entries))
}

/// A reel signed by `key` alone: a genesis of `fields`, then `later`
/// (kind, body) facts, each linked to the one before it.
fn forged_reel(key: &SigningKey, fields: Vec<(&'static str, Value)>, later: Vec<(&str, Vec<u8>)>) -> Vec<Fact> {
    let body = canonical(&Value::Map(fields.into_iter().map(|(key, value)| (text(key), value)).collect()));
    let being = BeingId(*blake3::hash(&body).as_bytes());
    let mut facts = vec![Fact::seal(being, 0, FactId::ZERO, FORGED_TIME_MS, KIND_GENESIS, body, key).expect("genesis")];
    for (seq, (kind, body)) in (1u64..).zip(later) {
        let prev = facts.last().expect("a genesis").id();
        facts.push(Fact::seal(being, seq, prev, FORGED_TIME_MS, kind, body, key).expect("fact"));
    }
    facts
}

fn bundle_of(facts: &[Fact]) -> Bundle {
    let last = facts.last().expect("facts");
    Bundle {
        being: last.header.being,
        head_seq: last.header.seq,
        head_id: last.id(),
        envelopes: facts.iter().map(Fact::encode_envelope).collect(),
    }
}

/// The first encoding (from y = 2 up) that is no point of the curve.
fn not_a_point() -> [u8; 32] {
    (2u8..)
        .map(|y| {
            let mut bytes = [0u8; 32];
            bytes[0] = y;
            bytes
        })
        .find(|bytes| ed25519_dalek::VerifyingKey::from_bytes(bytes).is_err())
        .expect("some y is not on the curve")
}

/// One forged reel: what it guards against, its facts, the seq at fault and
/// the words naming the problem.
struct Forgery {
    guards: &'static str,
    facts: Vec<Fact>,
    seq: u64,
    named: String,
}

/// A forgery before it is signed: what it guards against, its genesis
/// fields, its later (kind, body) facts, the seq at fault, the words.
type ForgeryRow = (&'static str, Vec<(&'static str, Value)>, Vec<(&'static str, Vec<u8>)>, u64, String);

/// Validly signed reels whose bodies the core never writes, one per rule.
fn forgeries() -> Vec<Forgery> {
    // The identity point: small order, and its own y is 1.
    let mut small_order = [0u8; 32];
    small_order[0] = 1;
    let long_name = "a".repeat(200);
    let genesis_named = |name: &str| genesis_fields(name, [0; 32]);
    let mut cases: Vec<ForgeryRow> = Vec::new();
    for (guards, name) in [
        ("an empty name", ""),
        ("a name with capitals", "Ada"),
        ("a name with a space", "two words"),
        ("a name with the address sign", "@ada"),
        ("a name with a slash", "a/b"),
        ("a 200-character name", long_name.as_str()),
    ] {
        let named = format!("name {name:?} is not a being name");
        cases.push((guards, genesis_named(name), Vec::new(), 0, named));
    }
    let schema = |kind: &str, words: &str| format!("body of kind {kind:?} does not match its schema: {words}");
    for (guards, kind, body, words) in [
        ("an act body that is a number", KIND_ACT, Value::Integer(5.into()), "invalid type: integer `5`"),
        ("an empty act body", KIND_ACT, Value::Map(Vec::new()), "missing field `call`"),
        ("a world body that is a number", KIND_WORLD, Value::Integer(5.into()), "invalid type: integer `5`"),
        ("an empty world body", KIND_WORLD, Value::Map(Vec::new()), "missing field `effects`"),
    ] {
        let later = vec![(kind, canonical(&body))];
        cases.push((guards, genesis_named(&format!("{kind}-{}", cases.len())), later, 1, schema(kind, words)));
    }
    let rows: Vec<ForgeryRow> = vec![
        (
            "an act body with a field acts do not have",
            genesis_named("act-extra"),
            vec![(KIND_ACT, act_entries(|entries| entries.push((text("extra"), Value::Bool(true)))))],
            1,
            schema("act", "field `extra` is not one it has"),
        ),
        (
            "an act body without a field every act writes",
            genesis_named("act-short"),
            vec![(KIND_ACT, act_entries(|entries| entries.retain(|(key, _)| *key != text("content"))))],
            1,
            schema("act", "field `content` is missing"),
        ),
        (
            "a roleFlow of numbers",
            with(
                genesis_named("flow-numbers"),
                "role_flow",
                Value::Array(vec![Value::Integer(1.into()), Value::Integer(2.into())]),
            ),
            Vec::new(),
            0,
            schema("genesis", "`role_flow` [0]: a clause is an object"),
        ),
        (
            "a roleFlow clause naming its role in bytes",
            with(
                genesis_named("flow-bytes"),
                "role_flow",
                Value::Array(vec![Value::Map(vec![(text("role"), Value::Bytes(b"worker".to_vec()))])]),
            ),
            Vec::new(),
            0,
            schema("genesis", "`role_flow` is not a list of JSON values"),
        ),
        (
            "a roleFlow clause with a field clauses do not have",
            with(
                genesis_named("flow-field"),
                "role_flow",
                Value::Array(vec![Value::Map(vec![(text("role"), text("worker")), (text("then"), text("x"))])]),
            ),
            Vec::new(),
            0,
            schema("genesis", "`role_flow` [0].then: unknown field"),
        ),
        (
            "a home that is no space",
            with(genesis_named("homeless"), "home_space", text("north")),
            Vec::new(),
            0,
            schema("genesis", "`home_space` invalid address \"north\""),
        ),
        (
            "a default role that is no role name",
            with(genesis_named("roleless"), "default_role", text("Worker")),
            Vec::new(),
            0,
            schema("genesis", "`default_role` \"Worker\" is not a role name"),
        ),
        (
            "a 1 MiB body on a land whose limit is 64 KiB",
            genesis_named("heavy"),
            vec![(KIND_NOTE, note_body(&"x".repeat(1024 * 1024 - 16)))],
            1,
            "over the land's limit of 65536 bytes (fact_body_bytes_max)".to_string(),
        ),
        (
            "a rotation to a small-order key",
            genesis_named("weak-rotation"),
            vec![(
                KIND_ROTATE_KEY,
                canonical(&Value::Map(vec![(text("new_public_key"), Value::Bytes(small_order.to_vec()))])),
            )],
            1,
            schema("rotate-key", "`new_public_key` is a small-order (weak) public key"),
        ),
        (
            "a rotation to a key that is no curve point",
            genesis_named("pointless-rotation"),
            vec![(
                KIND_ROTATE_KEY,
                canonical(&Value::Map(vec![(text("new_public_key"), Value::Bytes(not_a_point().to_vec()))])),
            )],
            1,
            schema("rotate-key", "`new_public_key` is not an Ed25519 public key"),
        ),
        (
            "a genesis with a small-order key",
            genesis_fields("weak-genesis", small_order),
            Vec::new(),
            0,
            "the being's public key is weak (small order)".to_string(),
        ),
    ];
    cases.extend(rows);
    cases
        .into_iter()
        .enumerate()
        .map(|(index, (guards, mut fields, later, seq, named))| {
            let key = SigningKey::from_bytes(&[u8::try_from(index + 1).expect("few cases"); 32]);
            // Signed by the fresh key, which the genesis names unless the
            // case is about that key.
            if !guards.contains("genesis with") {
                fields = with(fields, "public_key", Value::Bytes(key.verifying_key().to_bytes().to_vec()));
            }
            Forgery { guards, facts: forged_reel(&key, fields, later), seq, named }
        })
        .collect()
}

/// Every body the core writes has a schema import checks: a validly signed
/// reel holding a body the core never writes is refused, named, and leaves
/// the land as it was.
#[test]
fn import_refuses_each_forged_body_the_core_never_writes_and_stores_nothing() {
    let target = plant();
    for (index, forgery) in forgeries().into_iter().enumerate() {
        let file = target.dir.path().join(format!("forged-{index}.bundle"));
        std::fs::write(&file, bundle_of(&forgery.facts).encode()).expect("write");
        let being = forgery.facts[0].header.being;
        // The problem names the being and the seq, as `seed verify` does.
        let at = format!("({}) seq {}: ", being.short(), forgery.seq);
        let error = seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new())
            .map(|_| ())
            .expect_err(forgery.guards)
            .to_string();
        for words in [forgery.named.as_str(), at.as_str()] {
            assert!(error.contains(words), "{}: expected {words:?} in {error:?}", forgery.guards);
        }
        check_import_refused(&target, &file, &forgery.named);
        assert_eq!(target.land.store().head(&being).expect("head"), None, "{}: no reel", forgery.guards);
    }
}

/// The control row: a forged reel whose every body is as the core writes it
/// imports, so the refusals above are the rules', not the forging's.
#[test]
fn a_forged_reel_written_as_the_core_writes_imports_and_verifies() {
    let key = SigningKey::from_bytes(&[99; 32]);
    let world = seed::world::WorldBody {
        effects: vec![seed::world::Effect::SetSignal {
            key: "weather.sky".into(),
            value: Some(serde_json::json!("grey")),
        }],
    };
    let later = vec![
        (KIND_ACT, seed::canonical::to_canonical_bytes(&common::act_body()).expect("act")),
        (KIND_WORLD, seed::canonical::to_canonical_bytes(&world).expect("world")),
        (KIND_NOTE, note_body("fine")),
    ];
    let facts = forged_reel(&key, genesis_fields("honest", key.verifying_key().to_bytes()), later);
    let target = plant();
    let file = target.dir.path().join("honest.bundle");
    std::fs::write(&file, bundle_of(&facts).encode()).expect("write");
    let report = seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new()).expect("imports");
    assert_eq!((report.imported, report.name.as_str()), (4, "honest"));
    assert_verifies(&target.land, "the target");
}

/// `seed verify` holds a land's facts to the rules import holds a bundle
/// to: every forged reel, written straight into a store, is named there with
/// its being, its seq and the same words.
#[test]
fn seed_verify_names_each_forged_body_in_a_land_as_import_does() {
    let common::TestLand { dir, land, .. } = plant();
    let forgeries = forgeries();
    for forgery in &forgeries {
        for fact in &forgery.facts {
            land.store().submit(fact.clone()).wait().unwrap_or_else(|error| panic!("{}: {error}", forgery.guards));
        }
    }
    land.close().expect("close");
    let verify = seed(&dir.path().join("land"), &["verify", "--no-checkpoint"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stderr(&verify));
    let report = stdout(&verify);
    for forgery in &forgeries {
        let at = format!("{}) seq {}: ", forgery.facts[0].header.being.short(), forgery.seq);
        assert!(
            report.lines().any(|line| line.contains(&at) && line.contains(&forgery.named)),
            "{}: no line with {at:?} and {:?} in\n{report}",
            forgery.guards,
            forgery.named
        );
    }
}

/// Everything the demo worlds write verifies under every schema, exports,
/// and imports into another land byte for byte.
#[test]
fn every_reel_the_demo_worlds_write_verifies_and_moves_to_another_land() {
    let planted = ["reality", "operator", "birther", "role-manager"];
    for fixture in ["court", "dance", "factory", "library", "town"] {
        let dir = tempfile::tempdir().expect("folder");
        let land_dir = dir.path().join("land");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(format!("{fixture}.toml"));
        let simulated = seed(&land_dir, &["sim", path.to_str().expect("utf-8 path"), "--ticks", "6"]);
        assert!(simulated.status.success(), "{fixture}: {}", stderr(&simulated));
        let source = seed::land::Land::open(&land_dir).expect("open");
        assert_verifies(&source, fixture);
        let target = plant();
        let mut moved = 0;
        for being in source.store().beings().expect("beings") {
            let name = source.genesis(&being).expect("genesis").name;
            if planted.contains(&name.as_str()) {
                continue;
            }
            let file = dir.path().join(format!("{name}.bundle"));
            seed::bundle::export(&source, &being, &file, &seed::world::CoreSchemas::new()).expect("export");
            seed::bundle::import(&target.land, &file, &seed::world::CoreSchemas::new())
                .unwrap_or_else(|error| panic!("{fixture} @{name}: {error}"));
            let reel = |land: &seed::land::Land| {
                let stored = land.store().reel(&being, 0, u64::MAX).expect("reel");
                stored.into_iter().map(|stored| stored.fact).collect::<Vec<_>>()
            };
            assert_eq!(reel(&target.land), reel(&source), "{fixture} @{name}: byte-identical");
            moved += 1;
        }
        assert!(moved > 0, "{fixture}: beings moved");
        assert_verifies(&target.land, fixture);
    }
}
