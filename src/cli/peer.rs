//! `seed peer list|add|remove` (docs/canopy.md): the lands this land speaks
//! with. Listing reads the land as it is (running or not); adding and
//! removing are the operator's changes, sealed as `world` facts of the
//! root on a stopped land, as `seed config set` is (a running land changes
//! its peers on its portal's peers page). Adding proves the other land
//! first: its key history must verify from its genesis; the greeting
//! (a signed hello) is sent when this land is up. Following a peer (its
//! facts pulled into a read-only mirror while this land is up) is set the
//! same way.

use super::print_json;
use anyhow::{Context, Result};
use seed::canopy::{decide_added, normalize_peer_url, peer_json, peer_named, CanopyLimits, PeerOrigin};
use seed::fact::PublicKeyBytes;
use seed::land::Land;
use seed::world::Effect;
use serde_json::{json, Value as Json};
use std::path::Path;
use std::process::ExitCode;

/// This land as other lands know it: its id, its key now and the seq of
/// the root's fact that set the key.
fn this_land(land: &Land) -> Result<Json> {
    let history = land.root_key_history()?;
    let proven = seed_format::canopy::verify_key_history(land.root(), &history)?;
    let (key, key_seq) = proven.current();
    Ok(json!({"land": land.root().to_hex(), "key": PublicKeyBytes(key).to_hex(), "keySeq": key_seq}))
}

/// The mirror this land keeps of `peer`, if any: where, and how many of
/// the peer's facts it has taken.
fn mirror_json(land_dir: &Path, peer: &seed::fact::BeingId) -> Json {
    let dir = seed::mirror::mirror_dir(land_dir, peer);
    if !dir.is_dir() {
        return Json::Null;
    }
    let taken = seed::mirror::read_cursor(&dir).map(|cursor| cursor.taken).unwrap_or_default();
    json!({"dir": dir.display().to_string(), "taken": taken})
}

pub fn list(land: &Land, json: bool) -> Result<ExitCode> {
    let world = seed::engine::world_at_end(land)?;
    let this = this_land(land)?;
    let peers: Vec<Json> = world
        .canopy
        .peers
        .iter()
        .map(|(id, peer)| {
            let mut json = peer_json(id, peer);
            json["mirror"] = mirror_json(land.dir(), id);
            json
        })
        .collect();
    let outbox = seed::canopy::outbox_json(&world);
    let outbox = outbox.as_array().cloned().unwrap_or_default();
    let refused: Vec<Json> = world
        .canopy
        .refused
        .iter()
        .rev()
        .map(
            |(land_seq, refusal)| json!({"landSeq": land_seq, "land": refusal.land.to_hex(), "reason": refusal.reason}),
        )
        .collect();
    if json {
        print_json(&json!({
            "landSeq": world.cursor,
            "this": this,
            "peers": peers,
            "outbox": outbox,
            "summonsRefused": refused,
            "forksShown": seed::canopy::forks_shown_json(&world.canopy),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "this land {} (key {}, set at its root's seq {})",
        this["land"].as_str().unwrap_or_default(),
        this["key"].as_str().unwrap_or_default(),
        this["keySeq"]
    );
    if peers.is_empty() {
        println!("no peers at land seq {} (`seed peer add URL`)", world.cursor);
    }
    for peer in &peers {
        let reason = peer["heartbeats"]
            .as_array()
            .and_then(|records| records.last())
            .and_then(|record| record["reason"].as_str())
            .map(|reason| format!(": {reason}"))
            .unwrap_or_default();
        println!(
            "{}  {:<5} {:<13} {}  {} answered, {} missed{}",
            &peer["land"].as_str().unwrap_or_default()[..12],
            peer["status"].as_str().unwrap_or_default(),
            peer["origin"].as_str().unwrap_or_default(),
            peer["url"].as_str().unwrap_or_default(),
            peer["answered"],
            peer["missed"],
            reason
        );
        if peer["following"] == Json::Bool(true) || !peer["mirror"].is_null() {
            println!(
                "    {}mirror {}: {} of its facts taken",
                if peer["following"] == Json::Bool(true) { "following; " } else { "not following; " },
                peer["mirror"]["dir"].as_str().unwrap_or("not made yet"),
                peer["mirror"]["taken"].as_u64().unwrap_or(0)
            );
        }
    }
    if !outbox.is_empty() {
        println!(
            "{} summons waiting to be delivered (the oldest: {} to {})",
            outbox.len(),
            outbox[0]["from"].as_str().unwrap_or("?"),
            outbox[0]["to"].as_str().unwrap_or_default()
        );
    }
    for refusal in refused.iter().take(5) {
        println!(
            "refused a summons from land {} at land seq {}: {}",
            &refusal["land"].as_str().unwrap_or_default()[..12],
            refusal["landSeq"],
            refusal["reason"].as_str().unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn add(land_dir: &Path, store: &seed::land::StoreLocation, url: &str, json: bool) -> Result<ExitCode> {
    // The URL is checked before anything is opened or fetched.
    let url = normalize_peer_url(url)?;
    let mut engine = super::up::stopped_land_engine(land_dir, store, "add the peer from its portal's peers page")?;
    let limits = CanopyLimits::in_world(&engine.world);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting a runtime")?;
    let client = seed::canopy_http::client::http_client()?;
    let timeout = std::time::Duration::from_millis(limits.peer_timeout_ms);
    let identity = runtime
        .block_on(seed::canopy_http::client::fetch_identity(&client, &url, timeout))
        .with_context(|| format!("proving the land at {url}"))?;
    let root = engine.land.root();
    let own_key = PublicKeyBytes(engine.land.root_signing_key()?.verifying_key().to_bytes());
    let added =
        decide_added(&engine.world.canopy, root, &own_key, &identity.keys, &url, PeerOrigin::Added, limits.peers_max)?;
    let land = added.land;
    engine.seal_change(vec![Effect::PeerAdded { peer: added }])?;
    let land_seq = engine.world.cursor.saturating_sub(1);
    let peer = engine.world.canopy.peers.get(&land).map(|peer| peer_json(&land, peer)).unwrap_or(Json::Null);
    engine.close()?;
    if json {
        print_json(&json!({"ok": true, "peer": peer, "landSeq": land_seq}))?;
    } else {
        println!(
            "land {} at {url} proven (key set at its seq {}) and added at land seq {land_seq}; it is greeted when this land is up",
            land.to_hex(),
            peer["keySeq"]
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn remove(land_dir: &Path, store: &seed::land::StoreLocation, named: &str, json: bool) -> Result<ExitCode> {
    let mut engine = super::up::stopped_land_engine(land_dir, store, "remove the peer from its portal's peers page")?;
    let land = peer_named(&engine.world.canopy, named)?;
    let url = engine.world.canopy.peers.get(&land).map(|peer| peer.url.clone()).unwrap_or_default();
    engine.seal_change(vec![Effect::PeerRemoved { land }])?;
    let land_seq = engine.world.cursor.saturating_sub(1);
    engine.close()?;
    if json {
        print_json(&json!({"ok": true, "removed": land.to_hex(), "url": url, "landSeq": land_seq}))?;
    } else {
        println!(
            "land {} at {url} removed at land seq {land_seq}: nothing from it is accepted from now on",
            land.to_hex()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn set_following(
    land_dir: &Path,
    store: &seed::land::StoreLocation,
    named: &str,
    being: Option<&str>,
    following: bool,
    json: bool,
) -> Result<ExitCode> {
    let being = match being {
        None => None,
        Some(given) => Some(seed::fact::BeingId::from_hex(given).ok_or_else(|| {
            anyhow::anyhow!(
                "--being {given:?} is not a being id (64 hex digits; the peer's portal and its mirror pages show them)"
            )
        })?),
    };
    let mut engine =
        super::up::stopped_land_engine(land_dir, store, "follow or stop following it on its portal's peers page")?;
    let land = peer_named(&engine.world.canopy, named)?;
    let already = engine.world.canopy.peers.get(&land).is_some_and(|peer| match &being {
        None => peer.following == following,
        Some(being) => peer.following_beings.contains(being) == following,
    });
    let land_seq = match already {
        true => None,
        false => {
            engine.seal_change(vec![Effect::PeerFollowed { land, following, being }])?;
            Some(engine.world.cursor.saturating_sub(1))
        }
    };
    engine.close()?;
    let mirror = match &being {
        None => seed::mirror::mirror_dir(land_dir, &land),
        Some(being) => seed::mirror::being_mirror_dir(land_dir, being),
    };
    let what = match &being {
        None => format!("land {}", land.to_hex()),
        Some(being) => format!("being {} of land {}", being.to_hex(), land.to_hex()),
    };
    if json {
        print_json(&json!({"ok": true, "land": land.to_hex(), "being": being.map(|being| being.to_hex()),
            "following": following, "landSeq": land_seq, "mirror": mirror.display().to_string()}))?;
        return Ok(ExitCode::SUCCESS);
    }
    match (following, land_seq) {
        (true, Some(land_seq)) => println!(
            "following {what} from land seq {land_seq}: while this land is up, its facts are checked and mirrored into {}",
            mirror.display()
        ),
        (false, Some(land_seq)) => {
            println!("no longer following {what} from land seq {land_seq}; its mirror {} stays as it is", mirror.display())
        }
        (true, None) => println!("{what} is followed already (its mirror: {})", mirror.display()),
        (false, None) => println!("{what} is not followed"),
    }
    Ok(ExitCode::SUCCESS)
}
