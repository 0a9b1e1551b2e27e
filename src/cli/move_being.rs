//! `seed move @name --to URL` (docs/canopy.md "Moving a being"): a being
//! of this stopped land moves to a peer land that is up. The peer mints the
//! key the being will sign with there; this land seals the being's `move`
//! (signed by its key now, naming the peer and that key) and forgets its
//! own key for it; then it sends the being's reel to the peer, a batch at
//! a time, until the peer has checked all of it and sealed its `moved-in`.
//! A run cut short is finished by running the command again: the move is
//! sealed once, and the reel is sent from where the peer stopped.

use super::print_json;
use anyhow::{anyhow, bail, Context, Result};
use seed::canopy::{normalize_peer_url, CanopyLimits};
use seed::canopy_http::client::{http_client, signed_post, Call, Signer};
use seed::canopy_http::{CANOPY_MOVE_FACTS_PATH, CANOPY_MOVE_KEY_PATH};
use seed::fact::body::MoveBody;
use seed::fact::PublicKeyBytes;
use serde_json::{json, Value as Json};
use std::path::Path;
use std::process::ExitCode;

/// Hex bytes of facts sent in one request (the peer's
/// `canopy_request_bytes_max` is 1 MiB unless it says otherwise).
pub const MOVE_FACTS_HEX_BYTES_PER_REQUEST_MAX: usize = 512 * 1024;
/// Facts of the reel read from the store at once while a batch is made.
const MOVE_FACTS_READ_AT_ONCE: u64 = 256;
/// Bytes of the peer's answer to one request of a move.
const MOVE_ANSWER_BYTES_MAX: usize = 64 * 1024;

pub fn move_being(
    land_dir: &Path,
    store: &seed::land::StoreLocation,
    named: &str,
    to: &str,
    json: bool,
) -> Result<ExitCode> {
    let url = normalize_peer_url(to)?;
    let mut engine = super::up::stopped_land_engine(land_dir, store, "a being moves from a stopped land")?;
    let being = engine.land.resolve(named)?;
    let (peer_land, peer_key) = engine
        .world
        .canopy
        .peer_at(&url)
        .map(|(land, peer)| (*land, peer.key))
        .ok_or_else(|| anyhow!("{url} is not a peer of this land: add it first (`seed peer add {url}`)"))?;
    if being == engine.land.root() || being == engine.land.operator() {
        bail!("{named} is this land's reality root or operator: they stay with their land");
    }
    let row =
        engine.world.beings.get(&being).cloned().ok_or_else(|| anyhow!("{named} has no row in this land's world"))?;
    let moved = engine.world.canopy.moved_away.get(&being).cloned();
    match &moved {
        Some(moved) if moved.land != peer_land => {
            bail!("@{} moved to land {} ({}) already", row.name, moved.land.to_hex(), moved.url)
        }
        None if row.ended => bail!("@{} has ended: an ended being does not move", row.name),
        _ => {}
    }
    let limits = CanopyLimits::in_world(&engine.world);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting a runtime")?;
    let client = http_client()?;
    let signer = Signer { land: engine.land.root(), key: engine.land.root_signing_key()?, url: String::new() };
    let timeout = std::time::Duration::from_millis(limits.peer_timeout_ms);
    let call = |path| Call {
        to: peer_land,
        url: &url,
        path,
        timeout,
        answer_bytes_max: MOVE_ANSWER_BYTES_MAX,
        answer_key: peer_key.0,
    };
    let asked = json!({"being": being.to_hex(), "name": row.name});
    let answer = runtime
        .block_on(signed_post(&client, &signer, call(CANOPY_MOVE_KEY_PATH), &asked))
        .with_context(|| format!("asking {url} to take @{}", row.name))?;
    let mut moved_in = answer["movedIn"] == Json::Bool(true);
    let mut taken = answer["taken"].as_u64().unwrap_or(0);
    let mut moved_in_at: Option<u64> = None;
    let move_seq = match (&moved, moved_in) {
        (Some(moved), _) => moved.seq,
        (None, true) => bail!("{url} says @{} lives there already, but it never moved from this land", row.name),
        (None, false) => {
            let new_public_key = answer["publicKey"]
                .as_str()
                .and_then(PublicKeyBytes::from_hex)
                .ok_or_else(|| anyhow!("{url} answered no key for @{}", row.name))?;
            let qualities =
                row.qualities.iter().map(|(name, value)| (name.clone(), seed::world::json_to_cbor(value))).collect();
            let body = MoveBody { to_land: peer_land, to_url: url.clone(), new_public_key, qualities };
            let sealed = engine.land.seal_move(&being, &body)?;
            seed::engine::fold_to_end(engine.land.store(), &mut engine.world)?;
            sealed.seq
        }
    };
    // The reel, from where the peer stopped, a batch at a time.
    while !moved_in {
        let mut facts = Vec::new();
        let mut hex_bytes = 0;
        let mut next = taken;
        'batch: while next <= move_seq {
            let read = engine.land.store().reel(&being, next, (next + MOVE_FACTS_READ_AT_ONCE).min(move_seq + 1))?;
            if read.is_empty() {
                break;
            }
            for stored in read {
                let hex = hex::encode(stored.fact.encode_envelope());
                if !facts.is_empty() && hex_bytes + hex.len() > MOVE_FACTS_HEX_BYTES_PER_REQUEST_MAX {
                    break 'batch;
                }
                hex_bytes += hex.len();
                facts.push(Json::String(hex));
                next += 1;
            }
        }
        if facts.is_empty() {
            bail!("{url} holds the whole reel of @{} but has not taken it; run this command again", row.name);
        }
        let sent = json!({"being": being.to_hex(), "from": taken, "facts": facts});
        let answer = runtime
            .block_on(signed_post(&client, &signer, call(CANOPY_MOVE_FACTS_PATH), &sent))
            .with_context(|| {
                format!(
                    "sending the reel of @{} to {url} from seq {taken} (its move is sealed here: run this command again to go on)",
                    row.name
                )
            })?;
        taken = answer["taken"].as_u64().unwrap_or(next);
        if let Some(land_seq) = answer["movedIn"].as_u64() {
            moved_in = true;
            moved_in_at = Some(land_seq);
        }
    }
    engine.close()?;
    if json {
        print_json(&json!({
            "ok": true,
            "being": being.to_hex(),
            "name": row.name,
            "to": peer_land.to_hex(),
            "url": url,
            "moveSeq": move_seq,
            "factsSent": taken,
            "movedInLandSeq": moved_in_at,
        }))?;
    } else {
        println!(
            "@{} moved to land {} at {url}: its reel ends here in its move (seq {move_seq}) and goes on there{}; summons for it are sent there",
            row.name,
            peer_land.to_hex(),
            moved_in_at.map(|land_seq| format!(" (moved in at its land seq {land_seq})")).unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}
