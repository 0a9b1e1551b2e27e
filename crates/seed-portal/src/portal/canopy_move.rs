//! A being moving here from a peer land (`seed move @name --to URL` on
//! that land; docs/canopy.md "Moving a being"). Two signed routes:
//!
//! - `POST /canopy/v1/moves/key {being, name}`: this land mints the key
//!   the being will sign with here (or gives the one it minted before) and
//!   says how much of its reel it has taken. The other land's `move` fact
//!   names that key, so no private key ever travels between lands.
//! - `POST /canopy/v1/moves/facts {being, from, facts}`: the being's reel,
//!   a batch at a time, from its genesis. Each batch is checked as a
//!   mirror checks what it follows (`seed_store::mirror`) and kept in a
//!   staging mirror, `LAND/arrivals/<being id>`. When the reel ends in a
//!   `move` naming this land and the key it minted, the being is taken
//!   (`Engine::take_moving_being`): its history appended to this land's
//!   log, then its `moved-in` sealed with that key.
//!
//! Only a peer this land's operator added may move a being here, and the
//! being's name must be free on this land.

use super::canopy_routes::{admit_peer, answer_signed, body_json, CanopyRefusal};
use super::Portal;
use crate::fact::body::{MoveBody, KIND_MOVE};
use crate::fact::{BeingId, Fact};
use crate::limits::Limits;
use crate::mirror::{read_cursor, Mirror};
use crate::world::World;
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a moving being's reel is kept while it arrives.
pub fn arrival_dir(land_dir: &Path, being: &BeingId) -> PathBuf {
    land_dir.join("arrivals").join(being.to_hex())
}

fn refuse(reason: impl Into<String>) -> CanopyRefusal {
    CanopyRefusal::NotMovable { reason: reason.into() }
}

fn bad(reason: &str) -> CanopyRefusal {
    CanopyRefusal::BadBody { what: "a move", reason: reason.to_string() }
}

/// A move is taken only from a peer this land's operator added.
fn from_added_peer(world: &World, from: BeingId) -> Result<(), CanopyRefusal> {
    if !world.canopy.added_by_operator(&from) {
        return Err(refuse(format!(
            "land {from} came by first contact: only a land this land's operator added may move a being here"
        )));
    }
    Ok(())
}

/// Whether `being`, named `name`, may move here: `Ok(true)` when it has
/// moved here already.
fn room_for(world: &World, being: &BeingId, name: &str) -> Result<bool, CanopyRefusal> {
    if world.canopy.moved_in.contains_key(being) && !world.canopy.arriving.contains_key(being) {
        return Ok(true);
    }
    if let Some(problem) = crate::names::being_name_problem(name) {
        return Err(refuse(format!("{name:?} is not a being name: {problem}")));
    }
    if world.beings.contains_key(being) && !world.canopy.arriving.contains_key(being) {
        return Err(refuse(format!("being {being} has a reel on this land already")));
    }
    if world.being_named(name).is_some_and(|row| row.id != *being) {
        return Err(refuse(format!("a being named @{name} lives on this land already")));
    }
    Ok(false)
}

fn being_of(asked: &Json) -> Result<BeingId, CanopyRefusal> {
    asked["being"].as_str().and_then(BeingId::from_hex).ok_or_else(|| bad("`being` is not a being id"))
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CanopyRefusal> + Send + 'static,
) -> Result<T, CanopyRefusal> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| CanopyRefusal::Unavailable { reason: format!("the task stopped: {error}") })?
}

/// `POST /canopy/v1/moves/key {being, name}`.
pub(super) async fn key(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        admit_peer(&portal, &canopy, &signed, &body).await?;
        let world = portal.live.world();
        from_added_peer(&world, signed.request.from)?;
        let asked = body_json(&body)?;
        let being = being_of(&asked)?;
        let name = asked["name"].as_str().ok_or_else(|| bad("`name` is not the being's name"))?;
        if room_for(&world, &being, name)? {
            return Ok(json!({"movedIn": true}));
        }
        let live = portal.live.clone();
        let key = blocking(move || {
            live.arrival_key(being).map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() })
        })
        .await?;
        let taken = read_cursor(&arrival_dir(portal.live.land_dir(), &being)).map_or(0, |cursor| cursor.taken);
        Ok(json!({"publicKey": key.to_hex(), "taken": taken, "movedIn": false}))
    })
    .await
}

/// `POST /canopy/v1/moves/facts {being, from, facts}`.
pub(super) async fn facts(State(portal): State<Arc<Portal>>, request: Request) -> Response {
    answer_signed(portal, request, |portal, canopy, signed, body| async move {
        admit_peer(&portal, &canopy, &signed, &body).await?;
        let from_land = signed.request.from;
        let world = portal.live.world();
        from_added_peer(&world, from_land)?;
        let asked = body_json(&body)?;
        let being = being_of(&asked)?;
        let from = asked["from"].as_u64().ok_or_else(|| bad("`from` is not a seq"))?;
        let envelopes = asked["facts"]
            .as_array()
            .ok_or_else(|| bad("`facts` is not a list"))?
            .iter()
            .map(|fact| fact.as_str().and_then(|hex| hex::decode(hex).ok()))
            .collect::<Option<Vec<Vec<u8>>>>()
            .ok_or_else(|| bad("a fact of `facts` is not hex"))?;
        let url = world.canopy.peers.get(&from_land).map(|peer| peer.url.clone()).unwrap_or_default();
        let this_land = canopy.land();
        let live = portal.live.clone();
        blocking(move || {
            let dir = arrival_dir(live.land_dir(), &being);
            let mut mirror = Mirror::open_being(&dir, from_land, being, &url, &Limits::default())
                .map_err(|error| refuse(error.to_string()))?;
            let taken = mirror.take(from, &envelopes).map_err(|error| refuse(error.to_string()))?;
            if let Some(fork) = taken.forks.first() {
                return Err(refuse(format!("the reel holds two facts at seq {} of being {}", fork.seq, fork.being)));
            }
            let cursor = mirror.cursor().taken;
            let head = mirror.store().head(&being).map_err(|error| refuse(error.to_string()))?;
            let history = match head {
                Some(head) => {
                    mirror.store().reel(&being, 0, head.seq + 1).map_err(|error| refuse(error.to_string()))?
                }
                None => Vec::new(),
            };
            mirror.close();
            let Some(last) = history.last().filter(|last| last.fact.kind() == KIND_MOVE) else {
                return Ok(json!({"taken": cursor, "movedIn": null}));
            };
            let moved: MoveBody =
                last.fact.body_as().map_err(|error| refuse(format!("its move does not read: {error}")))?;
            if moved.to_land != this_land {
                return Err(refuse(format!("its move is to land {}, not this land", moved.to_land)));
            }
            let world = live.world();
            let (name, genesis_home) = history
                .first()
                .and_then(|genesis| genesis.fact.body_as::<crate::fact::body::GenesisBodyFlowSkipped>().ok())
                .map(|genesis| (genesis.name, genesis.home_space))
                .ok_or_else(|| refuse("its genesis does not read"))?;
            if !room_for(&world, &being, &name)? {
                // Read, never minted here: a reel whose key was never asked
                // for names no key this land holds.
                let key = live
                    .minted_arrival_key(being)
                    .map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() })?;
                if key != Some(moved.new_public_key) {
                    return Err(refuse("its move names a key this land did not mint for it"));
                }
            }
            // It lives where it lived if this land has that space, at the
            // reality root's home otherwise.
            let root_home = world.root.and_then(|root| world.beings.get(&root)).map(|row| row.home_space.clone());
            let home_space = match world.spaces.contains_key(&genesis_home) {
                true => genesis_home,
                false => root_home.unwrap_or(genesis_home),
            };
            let arriving = crate::canopy::BeingArriving {
                being,
                name: name.clone(),
                from_land,
                through_seq: last.fact.header.seq,
                head: last.fact.id(),
            };
            let facts: Vec<Fact> = history.into_iter().map(|stored| stored.fact).collect();
            let moved_in = live
                .take_moving_being(arriving, facts, home_space.clone())
                .map_err(|error| CanopyRefusal::Unavailable { reason: error.to_string() })?;
            // Its reel is in this land's log now: the staging copy goes.
            let _ = std::fs::remove_dir_all(&dir);
            Ok(json!({"taken": cursor, "movedIn": moved_in, "name": name, "homeSpace": home_space}))
        })
        .await
    })
    .await
}
