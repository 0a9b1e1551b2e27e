//! Cascade end to end (docs/cascade.md): a write at a marked space is
//! announced, the extensions' handler delivers it, every delivery and drop is
//! a fact `seed cascade` draws, the beings it reaches wake on it, and the land
//! verifies and replays. The limits, one table row each, in force from the
//! fixture's `[config]`; the unit tables in `seed_core::cascade` cover the
//! propagation rules themselves.

use crate::common::{assert_verifies_and_replays_clean, seed, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `tests/fixtures/cascade` with `config` lines as its `[config]`, written in `dir`.
fn world_with_config(dir: &Path, config: &str) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cascade");
    for shared in ["roles", "extensions"] {
        std::os::unix::fs::symlink(fixture.join(shared), dir.join(shared)).expect("linked");
    }
    let world = std::fs::read_to_string(fixture.join("world.toml")).expect("the world");
    let path = dir.join("world.toml");
    std::fs::write(&path, format!("{world}\n[config]\n{config}\n")).expect("written");
    path
}

fn json_of(output: &std::process::Output) -> Value {
    assert!(output.status.success(), "{}{}", stdout(output), stderr(output));
    serde_json::from_str(&stdout(output)).expect("JSON")
}

/// Plays the world with `config` and returns the land and the id of the
/// writer's first act.
fn played(dir: &Path, config: &str) -> (PathBuf, String) {
    let world = world_with_config(dir, config);
    let land = dir.join("land");
    let sim = seed(Path::new("."), &["sim", world.to_str().expect("utf-8"), "--land", land.to_str().expect("utf-8")]);
    assert!(sim.status.success(), "{}{}", stdout(&sim), stderr(&sim));
    let reel = json_of(&seed(&land, &["reel", "@writer", "--json"]));
    let first_act = reel["facts"].as_array().expect("facts").iter().find(|fact| fact["kind"] == "act").expect("an act");
    (land, first_act["id"].as_str().expect("an id").to_string())
}

/// Each delivery as `to@depth`, each drop as `reason:to`, depth first through the tree.
fn flattened(node: &Value, out: &mut Vec<String>) {
    for child in node["children"].as_array().expect("children") {
        match child["dropped"]["reason"].as_str() {
            None => out.push(format!("{}@{}", child["space"].as_str().expect("space"), child["depth"])),
            Some(reason) => out.push(format!("{reason}:{}", child["space"].as_str().expect("space"))),
        }
        flattened(child, out);
    }
}

struct Case {
    config: &'static str,
    /// The first signal's drop reason, or `None` when announced.
    signal_dropped: Option<&'static str>,
    delivered: u64,
    dropped: u64,
    /// The tree, depth first (the first levels at least).
    tree_starts: &'static [&'static str],
}

#[test]
fn a_signal_fans_out_loops_to_the_depth_limit_and_every_limit_records_its_drop() {
    let cases = [
        // /a echoes to /b and its rooms; /b back to /a, to depth 2; deeper is dropped, one record a target.
        Case {
            config: "cascade_depth_max = 2",
            signal_dropped: None,
            delivered: 5,
            dropped: 4,
            tree_starts: &[
                "/b@1",
                "/a@2",
                "depth:/b",
                "depth:/a/x",
                "depth:/a/y",
                "depth:/a/z",
                "/a/x@1",
                "/a/y@1",
                "/a/z@1",
            ],
        },
        // The fan-out limit: three made, one record for the rest, and no further.
        Case {
            config: "cascade_deliveries_per_signal_max = 3",
            signal_dropped: None,
            delivered: 3,
            dropped: 1,
            tree_starts: &["/b@1", "/a/x@1", "/a/y@1", "fan-out:/a/z"],
        },
        // The land's daily limit likewise.
        Case {
            config: "cascade_deliveries_per_day_max = 2",
            signal_dropped: None,
            delivered: 2,
            dropped: 1,
            tree_starts: &["/b@1", "/a/x@1", "per-day:/a/y"],
        },
        // Too large a payload: the signal itself is dropped, saying why.
        Case {
            config: "cascade_payload_bytes_max = 0",
            signal_dropped: Some("payload"),
            delivered: 0,
            dropped: 0,
            tree_starts: &[],
        },
    ];
    for case in cases {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (land, act) = played(dir.path(), case.config);
        let trees = json_of(&seed(&land, &["cascade", &act, "--json"]));
        let tree = &trees["signals"][0];
        assert_eq!(tree["signal"]["dropped"]["reason"].as_str(), case.signal_dropped, "{}: {tree}", case.config);
        assert_eq!(
            (tree["delivered"].as_u64(), tree["dropped"].as_u64()),
            (Some(case.delivered), Some(case.dropped)),
            "{}",
            case.config
        );
        let mut drawn = Vec::new();
        flattened(&tree["tree"], &mut drawn);
        assert!(
            drawn.starts_with(&case.tree_starts.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
            "{}: {drawn:?}",
            case.config
        );
        assert_verifies_and_replays_clean(&land);
    }
}

#[test]
fn the_loop_between_two_marked_spaces_ends_at_the_default_depth_and_the_listener_wakes_on_arrivals() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (land, act) = played(dir.path(), "");
    let trees = json_of(&seed(&land, &["cascade", &act, "--json"]));
    let tree = &trees["signals"][0];
    let mut drawn = Vec::new();
    flattened(&tree["tree"], &mut drawn);
    let deepest =
        drawn.iter().filter_map(|line| line.rsplit_once('@')).filter_map(|(_, depth)| depth.parse::<u64>().ok()).max();
    assert_eq!(deepest, Some(50), "the default depth is 50 hops");
    assert!(drawn.iter().any(|line| line.starts_with("depth:")), "the loop ends with a recorded drop: {drawn:?}");
    // The text form draws the same tree.
    let text = stdout(&seed(&land, &["cascade", &act]));
    assert!(text.contains("by @writer at /a") && text.contains("├─ /b (echo/cascade-0"), "{text}");
    assert!(text.contains("✗ /b dropped, depth: /b would be 51 hops deep, over 50 (cascade_depth_max)"), "{text}");
    // The listener woke on the arrivals at /a/x and noted each, depth and all.
    let reel = json_of(&seed(&land, &["reel", "@listener", "--json"]));
    let acts: Vec<&Value> =
        reel["facts"].as_array().expect("facts").iter().filter(|fact| fact["kind"] == "act").collect();
    assert_eq!(acts.len(), 2, "one arrival a round: {reel}");
    for act in acts {
        assert_eq!(act["body"]["wake"]["kind"], "cascade", "{act}");
        assert_eq!(act["body"]["call"]["args"]["fields"]["origin"], "/a", "{act}");
        assert_eq!(act["body"]["call"]["args"]["fields"]["from"], "@writer", "{act}");
    }
    assert_verifies_and_replays_clean(&land);
}

#[test]
fn the_rate_limit_drops_a_spaces_signals_past_its_most_in_a_minute_and_zero_turns_cascade_off() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // A round is ten seconds: the writer's second signal is in the same minute.
    let (land, _) = played(dir.path(), "cascade_signals_per_space_per_minute_max = 1\ncascade_depth_max = 1");
    let reel = json_of(&seed(&land, &["reel", "@writer", "--json"]));
    let signals: Vec<&Value> = reel["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .filter(|fact| fact["kind"] == "world" && fact["body"]["effects"][0]["op"] == "cascade-signal")
        .collect();
    assert_eq!(signals.len(), 3, "{reel}");
    assert_eq!(signals[0]["body"]["effects"][0]["signal"]["dropped"], Value::Null);
    assert_eq!(signals[1]["body"]["effects"][0]["signal"]["dropped"]["reason"], "rate");
    assert_eq!(signals[2]["body"]["effects"][0]["signal"]["dropped"]["reason"], "rate");
    let second = signals[1]["id"].as_str().expect("an id");
    let text = stdout(&seed(&land, &["cascade", second]));
    assert!(text.contains("not announced: rate: /a announced 1 signals in the last minute"), "{text}");
    assert_verifies_and_replays_clean(&land);

    let off = tempfile::tempdir().expect("a temporary folder");
    let (land, act) = played(off.path(), "cascade_signals_per_space_per_minute_max = 0");
    let none = seed(&land, &["cascade", &act]);
    assert!(!none.status.success());
    assert!(stderr(&none).contains("wrote nowhere marked for cascade: it announced no signal"), "{}", stderr(&none));
}

#[test]
fn seed_cascade_names_what_is_wrong_with_the_id_it_is_given() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (land, _) = played(dir.path(), "cascade_depth_max = 1");
    let reel = json_of(&seed(&land, &["reel", "@writer", "--json"]));
    let genesis = reel["facts"][0]["id"].as_str().expect("an id").to_string();
    for (given, message) in [
        ("xyz", "\"xyz\" is not a fact id: give its hex digits (at least 12"),
        ("abc", "\"abc\" is not a fact id"),
        ("000000000000", "no fact of the land has an id beginning 000000000000"),
        (genesis.as_str(), "is a genesis fact, not a cascade signal, a delivery or an act that announced one"),
    ] {
        let output = seed(&land, &["cascade", given]);
        assert_eq!(output.status.code(), Some(1), "{given}");
        assert!(stderr(&output).contains(message), "{given}: {}", stderr(&output));
    }
}

#[test]
fn the_relay_carries_the_criers_news_down_the_house_and_the_attics_note_on_to_the_loft() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let land = dir.path().join("land");
    let relay = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/relay.toml");
    let sim = seed(Path::new("."), &["sim", relay.to_str().expect("utf-8"), "--land", land.to_str().expect("utf-8")]);
    assert!(sim.status.success(), "{}{}", stdout(&sim), stderr(&sim));
    // Each listener's acts: (where the news was written, how deep it came).
    let heard = |name: &str| -> Vec<(String, u64)> {
        let reel = json_of(&seed(&land, &["reel", &format!("@{name}"), "--json"]));
        reel["facts"]
            .as_array()
            .expect("facts")
            .iter()
            .filter(|fact| fact["kind"] == "act")
            .map(|act| {
                let fields = &act["body"]["call"]["args"]["fields"];
                (fields["origin"].as_str().expect("origin").to_string(), fields["depth"].as_u64().expect("depth"))
            })
            .collect()
    };
    let hall = |depth| ("/house".to_string(), depth);
    assert_eq!(heard("cook"), [hall(1), hall(1)]);
    assert_eq!(heard("ghost"), [hall(1), hall(1)]);
    // The bat hears the hall's news two hops down, and the ghost's notes one hop down from the attic.
    let bat = heard("bat");
    assert!(bat.contains(&hall(2)) && bat.contains(&("/house/attic".to_string(), 1)), "{bat:?}");
    // The crier's first signal names who each arrival woke, and by which act.
    let crier = json_of(&seed(&land, &["reel", "@crier", "--json"]));
    let act = crier["facts"][1]["id"].as_str().expect("the crier's act").to_string();
    let trees = json_of(&seed(&land, &["cascade", &act, "--json"]));
    let tree = &trees["signals"][0]["tree"];
    let woke_at = |space: &str| -> Vec<String> {
        fn find<'a>(node: &'a Value, space: &str) -> Option<&'a Value> {
            if node["space"] == space {
                return Some(node);
            }
            node["children"].as_array()?.iter().find_map(|child| find(child, space))
        }
        let node = find(tree, space).unwrap_or_else(|| panic!("{space} in {tree}"));
        node["woke"]
            .as_array()
            .expect("woke")
            .iter()
            .map(|entry| entry["being"].as_str().expect("a being").to_string())
            .collect()
    };
    assert_eq!(woke_at("/house/kitchen"), ["@cook"]);
    assert_eq!(woke_at("/house/attic"), ["@ghost"]);
    assert_eq!(woke_at("/house/attic/loft"), ["@bat"]);
    assert_eq!(woke_at("/house"), Vec::<String>::new(), "the crier does not wake on its own write");
    let text = stdout(&seed(&land, &["cascade", &act]));
    assert!(text.contains("; woke @cook (act "), "{text}");
    assert_verifies_and_replays_clean(&land);
}
