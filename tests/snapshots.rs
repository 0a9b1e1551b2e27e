//! World snapshots: a replay that starts from them reports exactly what a
//! replay folding from genesis reports, on every demo world and on a
//! tampered land (and so does one passing over other beings' acts that
//! change only their own activity); only snapshots a clean verification vouched for are used;
//! `--paranoid` and `replay --all` catch a snapshot whose world is wrong.

use crate::common;

use common::{seed, stderr, stdout};
use seed::engine::fixture::Fixture;
use seed::fact::BeingId;
use seed::land::Land;
use seed::moment::Substrate;
use seed::replay::{KeptWorlds, ReplayOptions, ReplayReport, Replayer};
use seed::snapshots::{SnapshotUse, VouchedWorlds};
use std::path::{Path, PathBuf};

/// Facts between two snapshots in these tests: several per demo world.
const TEST_SNAPSHOT_EVERY_FACTS: u64 = 5;

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

/// Simulates `fixture` with frequent snapshots, then verifies the land (so
/// its snapshots are vouched for); returns the folder and the substrate.
fn simulated(fixture: &str, ticks: u64) -> (tempfile::TempDir, PathBuf, Substrate) {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let loaded = Fixture::load(&fixture_path(fixture)).expect("fixture");
    let every = TEST_SNAPSHOT_EVERY_FACTS.to_string();
    let path = fixture_path(fixture);
    let arguments =
        ["sim", path.to_str().expect("utf-8"), "--ticks", &ticks.to_string(), "--snapshot-every-facts", &every];
    let sim = seed(&land, &arguments);
    assert!(sim.status.success(), "{}", stderr(&sim));
    let verify = seed(&land, &["verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    assert!(stdout(&verify).contains("vouched for"), "{fixture}: {}", stdout(&verify));
    let (substrate, _) = seed::engine::substrate_for(&loaded, &[]).expect("substrate");
    (dir, land, substrate)
}

/// The beings of `land` (at most `most`, spread over the id order).
fn beings(land: &Path, most: usize) -> Vec<BeingId> {
    let opened = Land::open(land).expect("open");
    let beings = opened.store().beings().expect("beings");
    opened.close().expect("close");
    let step = beings.len().div_ceil(most).max(1);
    beings.into_iter().step_by(step).collect()
}

/// Beings replayed per world: all of a demo world's but the town's.
const TEST_BEINGS_MAX: usize = 40;

/// Facts the replays of these tests passed over, in all (so that a test can
/// tell passing over was exercised).
static PASSED_OVER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Replays of these tests that took their world from kept worlds.
static KEPT_WORLDS_TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Chunks of the land log the replays of these tests read whole at once,
/// after a chunk that folded most of its facts.
static CHUNKS_READ_WHOLE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Chunks of the land log the replays of these tests read whole on the
/// thread reading ahead of the fold.
static CHUNKS_READ_AHEAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Land-log entries a replay reads at once in these tests: the demo worlds
/// span many such chunks, geneses and acts, so reading chunks whole and
/// planning them first take turns.
const TEST_CHUNK_ENTRIES: u64 = 6;

/// The report of one replay with the land's vouched snapshots (`paranoid`:
/// each re-derived) and which snapshots it used, beside the report folding
/// from genesis.
fn both_ways(
    land: &Path,
    substrate: &Substrate,
    being: BeingId,
    options: ReplayOptions,
    paranoid: bool,
    kept: &KeptWorlds,
) -> (ReplayReport, ReplayReport, SnapshotUse) {
    let opened = Land::open(land).expect("open");
    let store = opened.store();
    let folded =
        Replayer::new(store, substrate, being, options).expect("replayer").folding_every_fact().run().expect("replays");
    // Passing over other beings' acts that change only their own activity
    // changes nothing reported either.
    let mut passing_over = Replayer::new(store, substrate, being, options).expect("replayer");
    while passing_over.next_moment().expect("replays").is_some() {}
    assert_eq!(passing_over.report(), &folded, "passing over other beings' acts changed the report");
    PASSED_OVER.fetch_add(passing_over.facts_passed_over(), std::sync::atomic::Ordering::Relaxed);
    // Nor does reading in short chunks, each read whole or planned first.
    let mut in_short_chunks =
        Replayer::new(store, substrate, being, options).expect("replayer").reading_chunks_of(TEST_CHUNK_ENTRIES);
    in_short_chunks.run_in_place().expect("replays");
    assert_eq!(in_short_chunks.report(), &folded, "reading in short chunks changed the report");
    CHUNKS_READ_WHOLE.fetch_add(in_short_chunks.chunks_read_whole(), std::sync::atomic::Ordering::Relaxed);
    CHUNKS_READ_AHEAD.fetch_add(in_short_chunks.chunks_read_ahead(), std::sync::atomic::Ordering::Relaxed);
    // Nor does reading chunks on a thread ahead of the fold (a run, as
    // above) rather than each when the fold comes to it (stepping): both
    // folding every fact, so that every chunk is read whole.
    let mut stepping = Replayer::new(store, substrate, being, options)
        .expect("replayer")
        .folding_every_fact()
        .reading_chunks_of(TEST_CHUNK_ENTRIES);
    while stepping.next_moment().expect("replays").is_some() {}
    assert_eq!(stepping.chunks_read_ahead(), 0, "a replay stepping read ahead");
    assert_eq!(stepping.report(), &folded, "reading in short chunks, folding every fact, changed the report");
    let mut reading_ahead = Replayer::new(store, substrate, being, options)
        .expect("replayer")
        .folding_every_fact()
        .reading_chunks_of(TEST_CHUNK_ENTRIES);
    reading_ahead.run_in_place().expect("replays");
    assert_eq!(reading_ahead.report(), stepping.report(), "reading ahead of the fold changed the report");
    CHUNKS_READ_AHEAD.fetch_add(reading_ahead.chunks_read_ahead(), std::sync::atomic::Ordering::Relaxed);
    // Nor does starting from the worlds earlier replays of this land left
    // in memory (and leaving more there), or passing over, unread, the
    // facts they learnt it may (in short chunks, so that they plan many).
    let mut from_kept = Replayer::new(store, substrate, being, options)
        .expect("replayer")
        .with_kept_worlds(kept)
        .reading_chunks_of(TEST_CHUNK_ENTRIES);
    from_kept.run_in_place().expect("replays");
    assert_eq!(from_kept.report(), &folded, "starting from kept worlds changed the report");
    KEPT_WORLDS_TAKEN.fetch_add(from_kept.kept_worlds_taken(), std::sync::atomic::Ordering::Relaxed);
    // Any skip, however short: these worlds are small.
    let worlds = VouchedWorlds::open(land, store, opened.root(), paranoid).expect("snapshots").skipping_at_least(0);
    let started = Replayer::new(store, substrate, being, options)
        .expect("replayer")
        .with_snapshots(&worlds)
        .run()
        .expect("replays");
    let usage = worlds.usage();
    drop(worlds);
    // Nor does starting from whichever is nearer, a kept world or a
    // snapshot (the portal has both).
    let worlds = VouchedWorlds::open(land, store, opened.root(), paranoid).expect("snapshots");
    let from_either = Replayer::new(store, substrate, being, options)
        .expect("replayer")
        .with_snapshots(&worlds)
        .with_kept_worlds(kept)
        .run()
        .expect("replays");
    assert_eq!(from_either, folded, "starting from kept worlds or snapshots changed the report");
    drop(worlds);
    opened.close().expect("close");
    (folded, started, usage)
}

/// A replay with kept worlds and vouched snapshots both (the portal's)
/// takes the kept world and passes over the acts its keeper learnt it may,
/// rather than read a snapshot standing farther on, when what is left to
/// fold is less than reading the snapshot costs; with nothing learnt past
/// the kept world, it reads the snapshot. Either way the same report.
#[test]
fn a_replay_passes_over_from_a_kept_world_rather_than_read_a_snapshot_that_costs_more() {
    // 10,008 geneses and four rounds of 10,000 acts, a snapshot after each
    // round: the last round's moments open at one, three rounds past the
    // world kept at the first act.
    let (_dir, land, substrate) = simulated("crowd.toml", 4);
    let opened = Land::open(&land).expect("open");
    let store = opened.store();
    for name in ["@walker-77", "@walker-5000"] {
        let being = opened.resolve(name).expect("a walker");
        let last = store.head(&being).expect("reads").expect("a reel").seq;
        let options = ReplayOptions { from_seq: last, to_seq: last, keep_going: false };
        let folded = Replayer::new(store, &substrate, being, options)
            .expect("replayer")
            .folding_every_fact()
            .run()
            .expect("replays");
        assert_eq!(folded.moments.len(), 1, "{}: the last fact is not an act", folded.name);
        for learnt in [true, false] {
            let kept = KeptWorlds::new();
            let definitions = seed::replay::ReplayDefinitions::files(store, &substrate, None);
            let kept_at = seed::replay::kept_worlds::keep_world_at_first_act(store, definitions, &kept);
            assert!(kept_at.expect("replays").is_some(), "no world kept at the first act");
            if learnt {
                seed::replay::kept_worlds::learn_passable_facts(store, &kept).expect("reads");
            }
            let worlds = VouchedWorlds::open(&land, store, opened.root(), false).expect("snapshots");
            let mut replayer = Replayer::new(store, &substrate, being, options)
                .expect("replayer")
                .with_snapshots(&worlds)
                .with_kept_worlds(&kept);
            replayer.run_in_place().expect("replays");
            let what = format!("{}, passable acts learnt: {learnt}", folded.name);
            assert_eq!(replayer.report(), &folded, "{what}");
            let usage = worlds.usage();
            assert!(usage.set_aside.is_empty(), "{what}: {:?}", usage.set_aside);
            if learnt {
                assert!(usage.used.is_empty(), "{what}: read the snapshot at {:?}", usage.used);
                assert_eq!(replayer.kept_worlds_taken(), 1, "{what}");
                assert!(replayer.facts_passed_over() >= 20_000, "{what}: {}", replayer.facts_passed_over());
            } else {
                assert_eq!(usage.used.len(), 1, "{what}: read no snapshot");
            }
        }
    }
    opened.close().expect("close");
}

/// Every being of `land`, replayed whole and from the middle of its reel,
/// with and without snapshots: the same reports. Returns how many replays
/// took a world from a snapshot.
fn check_every_being(land: &Path, substrate: &Substrate, keep_going: bool, paranoid: bool) -> usize {
    let mut started_from_snapshots = 0;
    let kept = KeptWorlds::new();
    for being in beings(land, TEST_BEINGS_MAX) {
        for from_seq in [0, 3] {
            let options = ReplayOptions { from_seq, keep_going, ..ReplayOptions::default() };
            let (folded, started, usage) = both_ways(land, substrate, being, options, paranoid, &kept);
            assert_eq!(started, folded, "{} from seq {from_seq}: snapshots changed the report", folded.name);
            assert!(usage.set_aside.is_empty(), "{}: {:?}", folded.name, usage.set_aside);
            started_from_snapshots += usize::from(!usage.used.is_empty());
        }
    }
    started_from_snapshots
}

#[test]
fn replay_reports_are_the_same_with_and_without_snapshots_in_every_demo_world() {
    for (fixture, ticks) in [
        ("court.toml", 12),
        ("factory.toml", 16),
        ("library.toml", 6),
        ("dance.toml", 8),
        ("town.toml", 11),
        // Traders who recall what was said to them: snapshots carry memories.
        ("market.toml", 40),
        // Beings that summon one another: replays cross summons sent and answered.
        ("../tests/fixtures/worlds/ring/world.toml", 12),
    ] {
        let (_dir, land, substrate) = simulated(fixture, ticks);
        let used = check_every_being(&land, &substrate, false, false);
        assert!(used > 0, "{fixture}: no replay started from a snapshot");
    }
    assert!(PASSED_OVER.load(std::sync::atomic::Ordering::Relaxed) > 0, "no replay passed over a fact");
    assert!(CHUNKS_READ_WHOLE.load(std::sync::atomic::Ordering::Relaxed) > 0, "no replay read a chunk whole");
    assert!(CHUNKS_READ_AHEAD.load(std::sync::atomic::Ordering::Relaxed) > 0, "no replay read a chunk ahead");
    assert!(KEPT_WORLDS_TAKEN.load(std::sync::atomic::Ordering::Relaxed) > 0, "no replay started from a kept world");
    // Paranoid: each snapshot re-derived from the one before it (its
    // memories too), the same reports.
    for (fixture, ticks) in [("factory.toml", 16), ("market.toml", 40)] {
        let (_dir, land, substrate) = simulated(fixture, ticks);
        assert!(check_every_being(&land, &substrate, false, true) > 0, "{fixture}");
    }
}

/// Every world a replay leaves in memory for the next is the fold of the
/// facts before its cursor: one that passed over another being's act
/// before a moment's opening (its world lags that being's activity) leaves
/// none there, one folding every fact leaves one at each opening, and the
/// world kept at the land's first act is the fold up to that act's opening.
#[test]
fn every_world_left_for_other_replays_is_the_fold_of_the_facts_before_it() {
    let (_dir, land, substrate) = simulated("town.toml", 11);
    let replayed = beings(&land, 8);
    let opened = Land::open(&land).expect("open");
    let store = opened.store();
    // One fact at a time, on this thread: the reference for the folds that
    // read ahead on threads of their own.
    let folded_to = |cursor: u64| folded_one_fact_at_a_time(store, cursor);
    let check_kept = |kept: &KeptWorlds, what: &str| {
        for cursor in kept.cursors() {
            let (at, world) = kept.latest_at_or_before(cursor).expect("kept");
            assert_eq!(at, cursor);
            assert!(*world == folded_to(cursor), "{what}: the world kept at {cursor} is not the fold");
        }
    };
    let mut withheld = 0;
    for &being in &replayed {
        for (from_seq, folding_every_fact) in [(0, false), (0, true), (3, false), (3, true)] {
            let what = format!("{being} from seq {from_seq}, folding every fact: {folding_every_fact}");
            let kept = KeptWorlds::new();
            let options = ReplayOptions { from_seq, ..ReplayOptions::default() };
            let replayer = Replayer::new(store, &substrate, being, options).expect("replayer").with_kept_worlds(&kept);
            let mut replayer = if folding_every_fact { replayer.folding_every_fact() } else { replayer };
            replayer.run_in_place().expect("replays");
            check_kept(&kept, &what);
            let openings: Vec<u64> = replayer.report().moments.iter().map(|moment| moment.act.cursor).collect();
            if folding_every_fact {
                assert_eq!(replayer.worlds_left_kept(), &openings[..], "{what}");
            } else if replayer.worlds_left_kept().len() < openings.len() {
                withheld += 1;
            }
        }
    }
    assert!(withheld > 0, "no replay passing over acts withheld a world");
    // What the replays learnt of which facts they may pass over is what
    // reading the whole land log tells.
    let learnt = KeptWorlds::new();
    let mut in_short_chunks = Replayer::new(store, &substrate, replayed[0], ReplayOptions::default())
        .expect("replayer")
        .with_kept_worlds(&learnt)
        .reading_chunks_of(TEST_CHUNK_ENTRIES);
    in_short_chunks.run_in_place().expect("replays");
    let known = learnt.passable_known();
    assert!(known > 0, "the replay learnt nothing");
    let read_whole = KeptWorlds::new();
    seed::replay::kept_worlds::learn_passable_facts(store, &read_whole).expect("reads");
    assert_eq!(read_whole.passable_known(), store.land_len().expect("reads"));
    assert_eq!(learnt.passable(0, known), read_whole.passable(0, known));
    assert!(read_whole.passable(0, known).expect("known").contains(&true), "nothing to pass over");
    let kept = KeptWorlds::new();
    let first = seed::replay::kept_worlds::first_act(store).expect("reads").expect("an act");
    let act = store.fact_at(&first).expect("reads").expect("held").fact;
    let opened_at = act.body_as::<seed::world::ActBody>().expect("an act").cursor;
    let definitions = seed::replay::ReplayDefinitions::files(store, &substrate, None);
    let kept_at = seed::replay::kept_worlds::keep_world_at_first_act(store, definitions, &kept).expect("replays");
    assert_eq!(kept_at, Some(opened_at));
    check_kept(&kept, "the first act");
    // An engine opening the land from genesis keeps the same world there,
    // unless the act's moment opened before the chunk the act is read in,
    // and learns what reading the whole land log tells.
    let land_len = store.land_len().expect("reads");
    for chunk_entries in [1, 2, 3, seed::engine::FOLD_LAND_LOG_CHUNK_ENTRIES] {
        let what = format!("the opening fold in chunks of {chunk_entries}");
        let at_open = KeptWorlds::new();
        let mut world = seed::world::World::new();
        seed::engine::fold_from_genesis_keeping_for_replays(store, &mut world, land_len, &at_open, chunk_entries)
            .expect("folds");
        assert!(world == folded_to(land_len), "{what}: not the fold of the whole log");
        let chunk_start = first.land_seq - first.land_seq % chunk_entries;
        let expected = if opened_at >= chunk_start { vec![opened_at] } else { vec![] };
        assert_eq!(at_open.cursors(), expected, "{what}");
        check_kept(&at_open, &what);
        assert_eq!(at_open.passable_known(), land_len, "{what}");
        assert_eq!(at_open.passable(0, land_len), read_whole.passable(0, land_len), "{what}");
    }
    opened.close().expect("close");
}

/// The world folded from genesis up to `cursor`, one fact read, decoded
/// and folded at a time.
fn folded_one_fact_at_a_time(store: &dyn seed::store::Store, cursor: u64) -> seed::world::World {
    let mut world = seed::world::World::new();
    for land_seq in 0..cursor {
        let read = store.land_log_with_envelopes(land_seq, land_seq + 1).expect("reads");
        let (entry, envelope) = read.first().expect("no hole");
        let stored = seed::store::decode_entry_envelope(entry, envelope).expect("decodes");
        world.apply(land_seq, &stored.fact);
    }
    world
}

/// The fold's readers on a land with a damaged fact: in short chunks or
/// long, the fold stops with the damaged fact's error (no hang, no panic)
/// after folding every fact before the chunk it is in, and `fold_until`
/// gives the same error.
#[test]
fn a_fold_reading_ahead_stops_at_a_damaged_fact_with_its_error() {
    let (_dir, land, _) = simulated("factory.toml", 16);
    common::flip_stored_byte(&land, "@worker-a", 2, 70);
    let opened = Land::open(&land).expect("open");
    let store = opened.store();
    let land_len = store.land_len().expect("reads");
    let worker = opened.resolve("@worker-a").expect("being");
    let damaged = store.land_seq_of(&worker, 2).expect("reads").expect("indexed");
    let mut whole = seed::world::World::new();
    let expected = seed::engine::fold_until(store, &mut whole, land_len).expect_err("a damaged fact").to_string();
    assert!(expected.contains("seq 2"), "{expected}");
    for chunk_entries in [1, 2, 3, seed::engine::FOLD_LAND_LOG_CHUNK_ENTRIES] {
        let mut world = seed::world::World::new();
        let kept = KeptWorlds::new();
        let folded =
            seed::engine::fold_from_genesis_keeping_for_replays(store, &mut world, land_len, &kept, chunk_entries);
        let error = folded.expect_err("a damaged fact").to_string();
        assert_eq!(error, expected, "in chunks of {chunk_entries}");
        let chunk_start = damaged - damaged % chunk_entries;
        assert_eq!(world.cursor, chunk_start, "in chunks of {chunk_entries}: not folded up to the damaged chunk");
        assert!(world == folded_one_fact_at_a_time(store, chunk_start), "in chunks of {chunk_entries}");
    }
    opened.close().expect("close");
}

#[test]
fn on_a_tampered_land_the_reports_are_the_same_and_a_failed_verification_withdraws_the_vouches() {
    let (_dir, land, substrate) = simulated("factory.toml", 16);
    // Inside the body, before the signature.
    common::flip_stored_byte(&land, "@worker-a", 2, 70);
    // Vouched before the tamper: still used, and still the same reports.
    for keep_going in [false, true] {
        check_every_being(&land, &substrate, keep_going, false);
    }
    let verify = seed(&land, &["verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stdout(&verify));
    assert!(stdout(&verify).contains("no longer vouched for"), "{}", stdout(&verify));
    assert!(!land.join("snapshots/vouched").exists());
    let used = check_every_being(&land, &substrate, true, false);
    assert_eq!(used, 0, "nothing is vouched for any more");
}

/// The cursors of the snapshots on the land's shelf.
fn shelf(land: &Path) -> Vec<u64> {
    seed::snapshot::SnapshotShelf::of_land(land).cursors().expect("cursors")
}

#[test]
fn an_altered_snapshot_file_is_set_aside_and_the_report_does_not_change() {
    let (_dir, land, substrate) = simulated("court.toml", 12);
    let cursors = shelf(&land);
    assert!(cursors.len() >= 2, "{cursors:?}");
    let path = seed::snapshot::SnapshotShelf::of_land(&land).path_of(cursors[0]);
    let mut bytes = std::fs::read(&path).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&path, bytes).expect("write");
    let mut set_aside = 0;
    for being in beings(&land, TEST_BEINGS_MAX) {
        let (folded, started, usage) =
            both_ways(&land, &substrate, being, ReplayOptions::default(), false, &KeptWorlds::new());
        assert_eq!(started, folded);
        set_aside += usage.set_aside.iter().filter(|(cursor, _)| *cursor == cursors[0]).count();
        for (_, reason) in &usage.set_aside {
            assert!(reason.contains("not the one a verification vouched for"), "{reason}");
        }
    }
    assert!(set_aside > 0, "the altered snapshot was never considered");
    // The next verification refuses to vouch for it, and says why.
    let verify = seed(&land, &["verify"]);
    assert!(
        stdout(&verify).contains(&format!("snapshot at cursor {} not vouched for", cursors[0])),
        "{}",
        stdout(&verify)
    );
}

#[test]
fn a_snapshot_whose_world_is_wrong_is_caught_by_paranoid_replay_and_by_replay_all() {
    check_a_wrong_snapshot_is_caught("a forged signal", |world| {
        world.signals.insert("test.forged".into(), serde_json::json!(1));
    });
}

/// The memories a snapshot carries are checked as its state is: a world
/// whose memory lost a being is caught the same way.
#[test]
fn a_snapshot_whose_memories_are_wrong_is_caught_by_paranoid_replay_and_by_replay_all() {
    check_a_wrong_snapshot_is_caught("a lost memory", |world| {
        let being = *world.memories.keys().next().expect("a being remembers something");
        world.memories.remove(&being);
    });
}

fn check_a_wrong_snapshot_is_caught(forgery: &str, forge: impl Fn(&mut seed::world::World)) {
    let (_dir, land, substrate) = simulated("factory.toml", 16);
    // The one before the last: the last may follow every act, so no replay
    // would start from it (paranoid replay holds each snapshot to the fold
    // from the one before it, which is left as written).
    let cursors = shelf(&land);
    let cursor = *cursors.iter().rev().nth(1).expect("two snapshots");
    // A land that wrote a wrong world (a bug), signed and vouched for like a good one.
    {
        let opened = Land::open(&land).expect("open");
        let (snapshot, _) = opened.snapshots().read(cursor).expect("reads");
        let mut world = seed::world::World::from_snapshot_bytes(&snapshot.world).expect("world");
        forge(&mut world);
        let bytes = world.snapshot_bytes().expect("bytes");
        let signer = opened.snapshot_signer().expect("the root's key");
        signer.write(cursor, snapshot.claim.last_fact, world.snapshot_digest(), bytes).expect("writes");
        let mut vouched = opened.snapshots().vouched().expect("reads").expect("vouched").files;
        let (_, digest) = opened.snapshots().read(cursor).expect("reads");
        vouched.insert(cursor, digest);
        opened.write_vouched_snapshots(vouched).expect("vouches");
        opened.close().expect("close");
    }
    let mut caught = 0;
    for being in beings(&land, TEST_BEINGS_MAX) {
        let (folded, started, usage) =
            both_ways(&land, &substrate, being, ReplayOptions::default(), true, &KeptWorlds::new());
        assert_eq!(started, folded, "paranoid replay uses the fold, not the wrong world");
        caught += usage.set_aside.iter().filter(|(at, reason)| *at == cursor && reason.contains("differs")).count();
    }
    assert!(caught > 0, "{forgery}: paranoid replay never re-derived the wrong snapshot");
    let all = seed(&land, &["replay", "--all"]);
    assert_eq!(all.status.code(), Some(1), "{}", stdout(&all));
    assert!(
        stdout(&all).contains(&format!("the world snapshot at cursor {cursor} does not hold")),
        "{forgery}: {}{}",
        stdout(&all),
        stderr(&all)
    );
}

/// A snapshot an earlier build wrote, of an earlier world format, claims
/// its world as that build digested it: `replay --all` does not call it
/// wrong for not holding this build's digest, says it was not checked, and
/// a replay does not use it.
#[test]
fn a_snapshot_of_an_earlier_world_format_is_not_checked_rather_than_called_wrong() {
    let (_dir, land, _) = simulated("library.toml", 6);
    let cursor = *shelf(&land).first().expect("a snapshot");
    let version = seed::world::snapshot::WORLD_SNAPSHOT_FORMAT_VERSION;
    {
        let opened = Land::open(&land).expect("open");
        let (snapshot, _) = opened.snapshots().read(cursor).expect("reads");
        // The world record ends with its version, a small unsigned integer.
        let mut bytes = snapshot.world.to_vec();
        assert_eq!(bytes.last().copied(), u8::try_from(version).ok());
        *bytes.last_mut().expect("bytes") = u8::try_from(version - 1).expect("small");
        assert_eq!(seed::world::snapshot::snapshot_format_version(&bytes), Some(version - 1));
        // What the earlier build claimed: its digest of its world, not this build's.
        let signer = opened.snapshot_signer().expect("the root's key");
        signer.write(cursor, snapshot.claim.last_fact, seed::fact::Hash32([7; 32]), bytes).expect("writes");
        opened.close().expect("close");
    }
    let all = seed(&land, &["replay", "--all"]);
    assert_eq!(all.status.code(), Some(0), "{}{}", stdout(&all), stderr(&all));
    let note = format!(
        "the world snapshot at cursor {cursor} was not checked: it is of world format {}, written by another build",
        version - 1
    );
    assert!(stdout(&all).contains(&note), "{}", stdout(&all));
    assert!(!stdout(&all).contains("does not hold"), "{}", stdout(&all));
    let json = seed(&land, &["replay", "--all", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(json["snapshotsNotChecked"], serde_json::json!([{"cursor": cursor, "format": version - 1}]));
    // A snapshot of this format whose claim is wrong is still called wrong.
    {
        let opened = Land::open(&land).expect("open");
        let (snapshot, _) = opened.snapshots().read(cursor).expect("reads");
        let mut bytes = snapshot.world.to_vec();
        *bytes.last_mut().expect("bytes") = u8::try_from(version).expect("small");
        let signer = opened.snapshot_signer().expect("the root's key");
        signer.write(cursor, snapshot.claim.last_fact, seed::fact::Hash32([7; 32]), bytes).expect("writes");
        opened.close().expect("close");
    }
    let all = seed(&land, &["replay", "--all"]);
    assert_eq!(all.status.code(), Some(1), "{}", stdout(&all));
    assert!(stdout(&all).contains(&format!("the world snapshot at cursor {cursor} does not hold")), "{}", stdout(&all));
}

#[test]
fn an_engine_opens_at_the_world_the_whole_fold_gives() {
    let (_dir, land, _) = simulated("library.toml", 6);
    let opened = Land::open(&land).expect("open");
    let mut folded = seed::world::World::new();
    seed::engine::fold_to_end(opened.store(), &mut folded).expect("folds");
    let worlds = VouchedWorlds::open(&land, opened.store(), opened.root(), false).expect("snapshots");
    use seed::snapshots::WorldSnapshots;
    let latest = worlds.at_or_before(folded.cursor).expect("a vouched snapshot");
    assert!(latest > 0);
    assert_eq!(seed::engine::world_at_end(&opened).expect("opens"), folded);
    drop(worlds);
    opened.close().expect("close");
}

/// A snapshot is written by a thread of its own while the next round
/// runs: an engine dropped without `finish` still leaves every snapshot it
/// began on the shelf, whole, and a verification vouches for each.
#[test]
fn an_engine_dropped_unfinished_leaves_every_snapshot_it_began_whole() {
    let dir = tempfile::tempdir().expect("folder");
    let land = dir.path().join("land");
    let fixture = Fixture::load(&fixture_path("court.toml")).expect("fixture");
    // One at the end of every round that seals a fact.
    let options = seed::engine::EngineOptions {
        snapshot_every_facts: Some(1),
        snapshot_spacing_step_bytes: None,
        threads: 2,
        ..common::simulation_options(land.clone())
    };
    let mut engine = seed::engine::Engine::plant(&fixture, &options).expect("plants");
    for _ in 0..4 {
        engine.round().expect("a round");
    }
    let end = engine.world.cursor;
    drop(engine);
    let written = shelf(&land);
    assert!(written.len() >= 4, "{written:?}");
    assert_eq!(written.last(), Some(&end), "the last round's snapshot, begun as the engine stopped");
    let verify = seed(&land, &["verify", "--json"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    let report: serde_json::Value = serde_json::from_str(&stdout(&verify)).expect("json");
    assert_eq!(report["snapshots"]["vouched"].as_array().map(Vec::len), Some(written.len()), "{report}");
}

/// Town's snapshots are 0.4–0.8 MB and its rounds about 1,000 facts: with
/// a snapshot due every 500 facts and the spacing growing by one more for
/// each 250,000 bytes of the snapshot before, the run skips rounds.
const SPACED_EVERY_FACTS: u64 = 500;
const SPACED_STEP_BYTES: u64 = 250_000;
const SPACED_ROUNDS: u64 = 30;

/// Where the snapshot after the one at `last` is due, by the shelf's files.
fn due_after(land: &Path, written: &[u64], k: usize) -> u64 {
    let before =
        if k == 0 { 0 } else { std::fs::metadata(shelf_path(land, written[k - 1])).expect("a snapshot").len() };
    seed::snapshots::next_snapshot_at(written[k], written[k], SPACED_EVERY_FACTS, before, SPACED_STEP_BYTES)
}

fn shelf_path(land: &Path, cursor: u64) -> PathBuf {
    seed::snapshot::SnapshotShelf::of_land(land).path_of(cursor)
}

#[test]
fn snapshots_are_spaced_by_the_size_of_the_one_before_and_a_resumed_run_spaces_them_alike() {
    let dir = tempfile::tempdir().expect("folder");
    let fixture = Fixture::load(&fixture_path("town.toml")).expect("fixture");
    let options = |land: PathBuf| seed::engine::EngineOptions {
        ticks: Some(SPACED_ROUNDS),
        snapshot_every_facts: Some(SPACED_EVERY_FACTS),
        snapshot_spacing_step_bytes: Some(SPACED_STEP_BYTES),
        threads: 2,
        ..common::simulation_options(land)
    };
    // The run nobody stopped, its rounds' ends noted.
    let whole = dir.path().join("whole");
    let mut engine = seed::engine::Engine::plant(&fixture, &options(whole.clone())).expect("plants");
    engine.keep_resume_checkpoints();
    let mut round_ends = Vec::new();
    while engine.tick < SPACED_ROUNDS {
        engine.round().expect("a round");
        round_ends.push(engine.world.cursor);
    }
    engine.finish().expect("finishes");
    let written = shelf(&whole);
    // Each snapshot is at the first round's end at or past where it was due.
    for k in 1..written.len() {
        let due = due_after(&whole, &written, k - 1);
        let first_end = round_ends.iter().copied().find(|&end| end >= due);
        assert_eq!(first_end, Some(written[k]), "the snapshot after {} was due at {due}: {written:?}", written[k - 1]);
    }
    // And none was due after the last.
    let due = due_after(&whole, &written, written.len() - 1);
    assert!(round_ends.iter().all(|&end| end < due), "a snapshot due at {due} is missing: {written:?}");
    // The spacing grew: some snapshot skipped a round's end it would have
    // been written at with the land's spacing alone.
    let skipped = written.windows(2).any(|pair| {
        let plain = (pair[0] / SPACED_EVERY_FACTS + 1) * SPACED_EVERY_FACTS;
        round_ends.iter().any(|&end| end >= plain && end < pair[1])
    });
    assert!(skipped, "no spacing grew past the land's: {written:?} among {round_ends:?}");

    // Stopped right after the round that wrote the second snapshot (as a
    // kill leaves it, the snapshot in writing finished), where the next is
    // due by the size of the first, and resumed: the same snapshots.
    let second_written_by = round_ends.iter().position(|&end| end == written[1]).expect("a round wrote it") + 1;
    let stopped = dir.path().join("stopped");
    let mut engine = seed::engine::Engine::plant(&fixture, &options(stopped.clone())).expect("plants");
    engine.keep_resume_checkpoints();
    while engine.tick < second_written_by as u64 {
        engine.round().expect("a round");
    }
    drop(engine);
    assert_eq!(shelf(&stopped), written[..2], "stopped after the second snapshot");
    seed::engine::resume_simulation(&fixture, &options(stopped.clone())).expect("resumes");
    assert_eq!(shelf(&stopped), written, "resumed after the second snapshot");
}

#[test]
fn replay_says_which_snapshot_it_started_from_and_bad_snapshot_flags_are_refused() {
    let (_dir, land, _) = simulated("court.toml", 12);
    let output = seed(&land, &["replay", "@ada", "--from", "6"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("world taken from the snapshot at cursor"), "{}", stdout(&output));
    let output = seed(&land, &["replay", "@ada", "--from", "6", "--no-snapshots"]);
    assert!(!stdout(&output).contains("world taken from the snapshot"), "{}", stdout(&output));
    let output = seed(&land, &["replay", "@ada", "--paranoid", "--no-snapshots"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("cannot be used with"), "{}", stderr(&output));
    let output = seed(&land, &["replay", "--all", "--paranoid"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn reindex_folds_the_memories_again_and_writes_again_a_snapshot_that_lost_them() {
    let (_dir, land, _) = simulated("market.toml", 16);
    let reindex = |land: &Path| -> serde_json::Value {
        let output = seed(land, &["reindex", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).expect("reindex JSON")
    };
    let first = reindex(&land);
    assert!(first["memories"]["items"].as_u64() > Some(0), "{first}");
    assert!(!first["snapshots"]["agreed"].as_array().expect("agreed").is_empty(), "{first}");
    assert_eq!(first["snapshots"]["rebuilt"], serde_json::json!([]), "{first}");
    // A snapshot that lost a being's memory (a bug wrote it), vouched for.
    let cursor = *shelf(&land).last().expect("a snapshot");
    {
        let opened = Land::open(&land).expect("open");
        let (snapshot, _) = opened.snapshots().read(cursor).expect("reads");
        let mut world = seed::world::World::from_snapshot_bytes(&snapshot.world).expect("world");
        let being = *world.memories.keys().next().expect("a being remembers something");
        world.memories.remove(&being);
        let bytes = world.snapshot_bytes().expect("bytes");
        let signer = opened.snapshot_signer().expect("the root's key");
        signer.write(cursor, snapshot.claim.last_fact, world.snapshot_digest(), bytes).expect("writes");
        opened.close().expect("close");
    }
    let second = reindex(&land);
    assert_eq!(second["snapshots"]["rebuilt"], serde_json::json!([cursor]), "{second}");
    assert_eq!(second["memories"], first["memories"], "the same memories, from the same facts");
    let verify = seed(&land, &["verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    let all = seed(&land, &["replay", "--all"]);
    assert_eq!(all.status.code(), Some(0), "the rebuilt snapshot holds: {}", stdout(&all));
    // With no snapshot at all, the fold gives the same index again.
    std::fs::remove_dir_all(land.join("snapshots")).expect("snapshots removed");
    let third = reindex(&land);
    assert_eq!(third["memories"], first["memories"]);
    assert_eq!(third["snapshots"], serde_json::json!({"agreed": [], "rebuilt": []}));
}

/// A round signs its acts ahead with the writers' handles of the round
/// before where the same beings wake and no loaded writer changed; once one
/// did, it takes them again. In the library the same beings wake every
/// round; every writer is forgotten after the first round and loaded again
/// by the second's: a third round signing with the first round's handles
/// (forgotten writers, their heads two rounds behind) would sign its acts
/// again at the seal.
#[test]
fn a_round_keeps_the_writers_handles_of_the_round_before_until_a_loaded_writer_changes() {
    let dir = tempfile::tempdir().expect("folder");
    let fixture = Fixture::load(&fixture_path("library.toml")).expect("fixture");
    let options = seed::engine::EngineOptions { threads: 2, ..common::simulation_options(dir.path().join("land")) };
    let mut engine = seed::engine::Engine::plant(&fixture, &options).expect("plants");
    engine.round().expect("the first round");
    let beings: Vec<BeingId> = engine.world.beings.keys().copied().collect();
    engine.land.forget_writers(&beings);
    for round in 2..=4 {
        engine.round().expect("a round");
        let signed = engine.facts_signed();
        assert_eq!(signed.at_seal, 0, "round {round} signed acts at the seal: {} ahead", signed.ahead);
    }
    assert!(engine.facts_signed().ahead > 0, "no act was signed ahead");
}
