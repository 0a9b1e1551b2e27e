//! The world: everything about a reality that is not a reel, folded from
//! reels. Spaces (a typed tree with qualities), matter, beings (their rows and
//! where they are), world signals, land configuration and inboxes.
//!
//! Decide, then apply: the rules live where facts are decided (the moment's
//! seal, planting); `World::apply` only folds a sealed fact in and cannot fail.
//! The world at cursor c is the fold of the first c facts of the land log.
//!
//! Reading a fact's body for the fold ([`FoldBody::read`]) is apart from folding
//! it in ([`World::apply_folded`]), so bodies can be read in parallel and the
//! fold's one thread only applies them; [`GenesisFlows`] lets the readings of
//! one replay share each distinct roleFlow, converted and digested once.

mod act_bytes;
pub mod snapshot;
pub(crate) use act_bytes::write_wake;
pub mod address;
pub mod body;
pub mod reach;
pub mod schema;

pub use body::{ActBody, Effect, RoleUse, VerbCall, Wake, WorldBody};
pub use schema::CoreSchemas;

use crate::canonical;
use crate::fact::body::{Cognition, GenesisBody, GenesisBodyFlowSkipped, KIND_END, KIND_GENESIS};
use crate::fact::{BeingId, Fact, FactHeader, FactId, Hash32};
use crate::memory::fold::{remember_own, remembered_of_act};
use crate::memory::BeingMemory;
use body::{KIND_ACT, KIND_WORLD};
use ciborium::value::Value as Cbor;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

/// Longest world signal key, in characters.
pub const SIGNAL_KEY_CHARS_MAX: usize = 128;

/// Why `key` is not a world signal key, or `None`: the one rule for a key,
/// wherever it enters (a fixture, the portal, a DO call, a script).
pub fn signal_key_problem(key: &str) -> Option<String> {
    if key.chars().count() > SIGNAL_KEY_CHARS_MAX {
        return Some(format!("signal key is {} characters, over {SIGNAL_KEY_CHARS_MAX}", key.chars().count()));
    }
    if key.split('.').count() < 2 || key.split('.').any(str::is_empty) {
        return Some(format!("signal key {key:?} must be `namespace.key`"));
    }
    None
}

/// Whether a value holds a fraction anywhere: facts carry integers only, so
/// a value with one is refused where it enters, never when it is encoded.
pub fn holds_fraction(value: &Json) -> bool {
    match value {
        Json::Number(number) => number.is_f64(),
        Json::Array(items) => items.iter().any(holds_fraction),
        Json::Object(map) => map.values().any(holds_fraction),
        Json::Null | Json::Bool(_) | Json::String(_) => false,
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Space {
    pub kind: String,
    pub qualities: BTreeMap<String, Json>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Matter {
    pub kind: String,
    pub fields: BTreeMap<String, Json>,
    /// The being whose act created it.
    pub creator: Option<BeingId>,
    /// The land seq of the fact that put it there, for showing when it was
    /// made. Not part of the canonical state (the world hash is over kind,
    /// fields and creator, as it always was): it is the land log's own
    /// information, repeated here so a reader need not search the log.
    pub made_at_seq: u64,
}

/// Fields in canonical CBOR order, as [`World`]'s (a snapshot writes a row per being).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BeingRow {
    pub id: BeingId,
    pub acts: u64,
    pub name: String,
    pub ended: bool,
    pub parent: Option<BeingId>,
    /// The space the being is in now.
    pub location: String,
    pub cognition: Cognition,
    pub qualities: BTreeMap<String, Json>,
    /// Shared by every row whose genesis carried the same flow (a million
    /// beings planted from one template hold one flow, not a million).
    pub role_flow: std::sync::Arc<Json>,
    pub home_space: String,
    /// Stored time of its last act.
    pub last_act_ms: Option<u64>,
    pub default_role: String,
    /// The being inhabiting it (its effective cognition is then human).
    pub inhabited_by: Option<BeingId>,
    /// The primary role of its last act.
    pub previous_role: Option<String>,
    /// [`role_flow_digest`] of `role_flow`, kept beside it so that a moment
    /// finds its compiled flow without encoding the flow again. Derived: not
    /// part of the world's canonical state (nor of a snapshot: recomputed).
    #[serde(skip)]
    pub role_flow_digest: Option<Hash32>,
}

/// BLAKE3 of a roleFlow's canonical encoding (`None` if it has none).
pub fn role_flow_digest(flow: &Json) -> Option<Hash32> {
    canonical::encode_json(flow).ok().map(|bytes| crate::fact::blake3_of(&bytes))
}

/// A fact's body as the fold needs it, decoded ahead of the fold: reading is
/// pure (so it can run in parallel, away from the fold's order), folding is
/// [`World::apply_folded`]. A body this build cannot read reads as `Nothing`.
#[derive(Debug, Clone, PartialEq)]
pub enum FoldBody {
    /// The row a genesis plants (its flow already converted and digested).
    Genesis(Box<BeingRow>),
    End,
    World(WorldBody),
    Act(Box<ActBody>),
    /// A model call whose moment sealed no act.
    Spend(Box<crate::spend::SpendBody>),
    /// An act's vector.
    Embedding(Box<crate::embedding::EmbeddingBody>),
    /// The being left for another land.
    Move(Box<seed_format::fact::body::MoveBody>),
    /// The being arrived from another land.
    MovedIn(Box<seed_format::fact::body::MovedInBody>),
    Nothing,
}

/// Distinct roleFlows a [`GenesisFlows`] keeps.
pub const GENESIS_FLOWS_CACHED_MAX: usize = 64;

/// The roleFlows genesis bodies carried, by their bytes, converted and
/// digested once: beings planted from one template share one flow, and
/// building it from CBOR is most of the cost of reading a genesis.
#[derive(Debug, Default)]
pub struct GenesisFlows {
    /// Each flow's canonical bytes, its JSON and its digest.
    flows: RwLock<Vec<KnownFlow>>,
}

/// A genesis roleFlow's canonical bytes, its JSON and its digest.
type KnownFlow = (Vec<u8>, std::sync::Arc<Json>, Option<Hash32>);

impl GenesisFlows {
    fn get(&self, bytes: &[u8]) -> Option<(std::sync::Arc<Json>, Option<Hash32>)> {
        // Nothing panics while the lock is held, so it is never poisoned.
        let flows = self.flows.read().unwrap_or_else(PoisonError::into_inner);
        flows.iter().find(|(known, _, _)| known == bytes).map(|(_, flow, digest)| (flow.clone(), *digest))
    }

    fn keep(&self, bytes: &[u8], flow: &std::sync::Arc<Json>, digest: Option<Hash32>) {
        let mut flows = self.flows.write().unwrap_or_else(PoisonError::into_inner);
        if flows.len() < GENESIS_FLOWS_CACHED_MAX && !flows.iter().any(|(known, _, _)| known == bytes) {
            flows.push((bytes.to_vec(), flow.clone(), digest));
        }
    }
}

/// The world's [`GenesisFlows`]: derived from the geneses folded (so never
/// stored, and no part of what two worlds compare), shared by the world's
/// clones.
#[derive(Debug, Default, Clone)]
pub struct SharedFlows(std::sync::Arc<GenesisFlows>);

impl PartialEq for SharedFlows {
    fn eq(&self, _: &SharedFlows) -> bool {
        true
    }
}

/// A genesis's roleFlow as the row holds it, and its digest.
fn converted_flow(flow: &[Cbor]) -> (std::sync::Arc<Json>, Option<Hash32>) {
    let role_flow = Json::Array(flow.iter().map(crate::canonical::cbor_to_json).collect());
    let digest = role_flow_digest(&role_flow);
    (std::sync::Arc::new(role_flow), digest)
}

impl FoldBody {
    pub fn read(header: &FactHeader, body: &[u8]) -> FoldBody {
        FoldBody::read_keeping_flows(header, body, &GenesisFlows::default())
    }

    /// [`FoldBody::read`], a genesis's roleFlow taken from `flows` when an
    /// earlier genesis carried the same bytes (and kept there otherwise).
    pub fn read_keeping_flows(header: &FactHeader, body: &[u8], flows: &GenesisFlows) -> FoldBody {
        let being = header.being;
        match header.kind.as_str() {
            KIND_GENESIS => {
                // A body read off its bytes hands over its flow's bytes: a flow
                // read before is taken as it was converted, a new one is
                // converted (exactly as within the body) and kept. Any other
                // body is read whole by serde and its flow not kept.
                let read = match GenesisBodyFlowSkipped::read_directly(body) {
                    Some((genesis, flow_bytes)) => flows
                        .get(flow_bytes)
                        .or_else(|| {
                            let flow = canonical::from_canonical_bytes::<Vec<Cbor>>(flow_bytes).ok()?;
                            let (role_flow, digest) = converted_flow(&flow);
                            flows.keep(flow_bytes, &role_flow, digest);
                            Some((role_flow, digest))
                        })
                        .map(|(role_flow, digest)| (genesis.with_flow(role_flow), digest)),
                    None => canonical::from_canonical_bytes::<GenesisBody>(body).ok().map(|genesis| {
                        let (role_flow, digest) = converted_flow(&genesis.role_flow);
                        (genesis.with_flow(role_flow), digest)
                    }),
                };
                match read {
                    Some((genesis, role_flow_digest)) => FoldBody::Genesis(Box::new(BeingRow {
                        id: being,
                        name: genesis.name,
                        parent: genesis.parent,
                        cognition: genesis.cognition,
                        role_flow_digest,
                        role_flow: genesis.role_flow,
                        default_role: genesis.default_role,
                        location: genesis.home_space.clone(),
                        home_space: genesis.home_space,
                        qualities: BTreeMap::new(),
                        ended: false,
                        inhabited_by: None,
                        last_act_ms: None,
                        previous_role: None,
                        acts: 0,
                    })),
                    None => FoldBody::Nothing,
                }
            }
            KIND_END => FoldBody::End,
            KIND_WORLD => canonical::from_canonical_bytes::<WorldBody>(body).map_or(FoldBody::Nothing, FoldBody::World),
            KIND_ACT => canonical::from_canonical_bytes::<ActBody>(body)
                .map_or(FoldBody::Nothing, |act| FoldBody::Act(Box::new(act))),
            crate::spend::KIND_SPEND => canonical::from_canonical_bytes::<crate::spend::SpendBody>(body)
                .map_or(FoldBody::Nothing, |spend| FoldBody::Spend(Box::new(spend))),
            crate::embedding::KIND_EMBEDDING => {
                canonical::from_canonical_bytes::<crate::embedding::EmbeddingBody>(body)
                    .map_or(FoldBody::Nothing, |embedding| FoldBody::Embedding(Box::new(embedding)))
            }
            seed_format::fact::body::KIND_MOVE => {
                canonical::from_canonical_bytes(body).map_or(FoldBody::Nothing, |moved| FoldBody::Move(Box::new(moved)))
            }
            seed_format::fact::body::KIND_MOVED_IN => canonical::from_canonical_bytes(body)
                .map_or(FoldBody::Nothing, |moved_in| FoldBody::MovedIn(Box::new(moved_in))),
            _ => FoldBody::Nothing,
        }
    }
}

impl BeingRow {
    pub fn effective_cognition(&self) -> Cognition {
        if self.inhabited_by.is_some() {
            Cognition::Human
        } else {
            self.cognition
        }
    }
}

/// A summon waiting in an inbox.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingSummon {
    pub fact: FactId,
    pub land_seq: u64,
    pub from: BeingId,
    pub content: String,
    /// The role the asker wore when it summoned.
    pub caller_role: Option<String>,
    /// The conversation this belongs to (the first summon's fact id).
    pub correlation: FactId,
    /// The sender's address when it is a being of another land (`from` is
    /// then its being id there, and `fact` its fact there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<crate::canopy::RemoteAddress>,
}

/// The fields a snapshot writes are declared in canonical CBOR order (by
/// name: shorter first, then bytewise), as a row's are: the encoder then
/// writes each in place, where a struct arriving out of order is copied
/// whole to be sorted (at the top of a snapshot, the whole world: most of
/// a gigabyte at a million beings). `world::snapshot`'s test holds it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct World {
    /// The reality root: the being whose genesis is the land's first fact.
    /// Its id is the land's id among lands.
    pub root: Option<BeingId>,
    /// Pending summons per being, by land seq (arrival order).
    pub inbox: BTreeMap<BeingId, BTreeMap<u64, PendingSummon>>,
    /// Persistent: the round's copy of the world shares it (births alone change it).
    pub names: imbl::OrdMap<String, BeingId>,
    /// Roles authored live, by name: their definitions as JSON and who wrote them.
    pub roles: BTreeMap<String, AuthoredRole>,
    /// What the land's model calls cost, by being, role and land, folded
    /// from acts' `llm` records and `spend` facts (`crate::spend`). Not part
    /// of the canonical state; a snapshot carries it.
    pub spend: crate::spend::SpendLedger,
    /// Each row behind its own pointer: the round's copy of the world
    /// copies pointers, and a row is copied only when an act changes it.
    /// Read back from a snapshot, rows with one roleFlow share it, as the
    /// fold's rows share their geneses' ([`snapshot::rows_sharing_flows`]).
    #[serde(deserialize_with = "snapshot::rows_sharing_flows")]
    pub beings: BTreeMap<BeingId, Arc<BeingRow>>,
    /// The lands this land peers with (`crate::canopy`), folded from the
    /// root's `world` facts.
    pub canopy: crate::canopy::CanopyState,
    pub config: BTreeMap<String, Json>,
    /// How many land-log facts are folded in.
    pub cursor: u64,
    pub matter: BTreeMap<String, Matter>,
    pub spaces: BTreeMap<String, Space>,
    /// Cascade signals and their deliveries as the beings at each space
    /// read them, and the counts the cascade's limits read
    /// (`crate::cascade`), folded from the cascade `world` facts.
    pub cascade: crate::cascade::CascadeState,
    pub signals: BTreeMap<String, Json>,
    /// People's accounts, by account name (`grant-account` effects).
    pub accounts: BTreeMap<String, Account>,
    /// Each being's memory (docs/memory.md): its acts, the summons sent to
    /// it and its notes, folded from the acts. Derived from the acts, so
    /// not part of the canonical state (the world hash is as it always
    /// was); a snapshot carries it. Persistent, each behind its own
    /// pointer: clones share them, and the fold copies the one an act changes.
    /// A replay of one being reads only that being's from a snapshot
    /// ([`World::from_snapshot_bytes_keeping_memory_of`]).
    #[serde(deserialize_with = "snapshot::memories_kept")]
    pub memories: imbl::OrdMap<BeingId, Arc<BeingMemory>>,
    /// Gated calls waiting for a decision or to be applied, by their
    /// request's fact id (`crate::approval`), folded from acts. Not part of
    /// the canonical state (the world hash is as it always was); a snapshot
    /// carries it.
    pub approvals: imbl::OrdMap<FactId, crate::approval::PendingApproval>,
    /// The land seqs of the acts the audit lists (each call of a DO
    /// operation, each step of an approval), in land order, folded from
    /// acts: the portal's audit page reads these facts rather than the land
    /// log. Not part of the canonical state; a snapshot carries it, and its
    /// claim covers it. Persistent: clones share it.
    pub audit_acts: imbl::Vector<u64>,
    /// Each act's vector, by the act's fact id, folded from `embedding`
    /// facts (`crate::embedding`). Not part of the canonical state; a
    /// snapshot carries it. Persistent: clones share it.
    pub embeddings: imbl::OrdMap<FactId, crate::embedding::StoredVector>,
    /// The definition files the land recorded and the set in force
    /// (`crate::definitions`), folded from their `world` facts.
    pub definitions: crate::definitions::RecordedDefinitions,
    /// Owners, contributors and extension scopes of spaces, by path
    /// (`crate::ownership`), folded from their effects.
    pub space_rules: BTreeMap<String, crate::ownership::SpaceRule>,
    /// The fact that last set each configuration key (or returned it to its
    /// default), folded from the `set-config` effects as `config` is: what
    /// the config page and `seed config` cite, without reading the land log.
    /// Not part of the canonical state; a snapshot carries it.
    pub config_set_by: BTreeMap<String, ConfigSetBy>,
    /// Stored times of each being's latest summons (at most
    /// `RECENT_SUMMONS_KEPT`), for the per-minute limit.
    pub recent_summons: BTreeMap<BeingId, Vec<u64>>,
    /// BLAKE3 of the authored definitions (zero while there are none): the
    /// key under which compiled flows and registries are cached. Derived:
    /// a snapshot recomputes it.
    #[serde(skip)]
    pub roles_digest: Hash32,
    /// The roleFlows of the geneses folded, converted once: the rows
    /// planted from one template share one flow.
    #[serde(skip)]
    pub genesis_flows: SharedFlows,
    /// The beings not ended, counted by the space each is in
    /// (`BeingRow::location`; a space with none has no entry). Derived from
    /// the rows and kept as they change, so a view can count a space's
    /// beings without walking every row; not part of the canonical state,
    /// nor written in a snapshot (reading one counts it again).
    #[serde(skip)]
    pub live_beings_by_space: BTreeMap<String, u64>,
}

/// Counts `row` into (`present`) or out of the space it is in, if it has
/// not ended: called around every change of a row's location or end.
fn count_live_being(counts: &mut BTreeMap<String, u64>, row: &BeingRow, present: bool) {
    if row.ended {
        return;
    }
    match (counts.get_mut(&row.location), present) {
        (Some(count), true) => *count += 1,
        (None, true) => {
            counts.insert(row.location.clone(), 1);
        }
        (Some(count), false) if *count > 1 => *count -= 1,
        (Some(_), false) => {
            counts.remove(&row.location);
        }
        (None, false) => debug_assert!(false, "a live being in {} was never counted", row.location),
    }
}

impl PendingSummon {
    /// Who sent it, as a summons would name them back: `@name`, or
    /// `@name@LAND` for a being of another land (none for a being gone).
    pub fn sender(&self, world: &World) -> Option<String> {
        match &self.remote {
            Some(remote) => Some(remote.to_target()),
            None => world.name_of(&self.from).map(|name| format!("@{name}")),
        }
    }
}

/// A person's account: the being it drives and its token's hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Account {
    pub being: BeingId,
    /// BLAKE3 of the login token, as 64 hex digits.
    pub token_hash: String,
    /// The land seq of the grant: a session or password from an earlier
    /// grant of the same account is retired by a later one.
    pub granted_at_seq: u64,
}

/// The fact whose `set-config` effect last set a configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConfigSetBy {
    pub fact: FactId,
    /// The being whose reel holds it.
    pub being: BeingId,
    pub time_ms: u64,
    pub land_seq: u64,
}

/// A role authored through the role-manager (a `put-role` effect).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AuthoredRole {
    pub definition: Json,
    /// The being whose act or world fact authored it.
    pub author: Option<BeingId>,
}

/// How many summon times the world remembers per being.
pub const RECENT_SUMMONS_KEPT: usize = 1024;

/// JSON (from facts, so never a float) to CBOR for hashing.
pub fn json_to_cbor(value: &Json) -> Cbor {
    match value {
        Json::Null => Cbor::Null,
        Json::Bool(flag) => Cbor::Bool(*flag),
        Json::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(signed), _) => Cbor::Integer(signed.into()),
            (_, Some(unsigned)) => Cbor::Integer(unsigned.into()),
            _ => Cbor::Text(number.to_string()),
        },
        Json::String(text) => Cbor::Text(text.clone()),
        Json::Array(items) => Cbor::Array(items.iter().map(json_to_cbor).collect()),
        Json::Object(map) => Cbor::Map(map.iter().map(|(k, v)| (Cbor::Text(k.clone()), json_to_cbor(v))).collect()),
    }
}

/// One being's entry in the world state: its id, and the row's fields a
/// world hash covers.
fn being_row_cbor(being: &BeingId, row: &BeingRow) -> (Cbor, Cbor) {
    let text = |s: &str| Cbor::Text(s.to_string());
    let row_value = Cbor::Map(vec![
        (text("name"), text(&row.name)),
        (text("location"), text(&row.location)),
        (text("qualities"), map_cbor(&row.qualities)),
        (text("roleFlow"), json_to_cbor(&row.role_flow)),
        (text("ended"), Cbor::Bool(row.ended)),
        (text("inhabitedBy"), row.inhabited_by.map(|by| Cbor::Bytes(by.0.to_vec())).unwrap_or(Cbor::Null)),
        (text("acts"), Cbor::Integer(row.acts.into())),
        (text("previousRole"), row.previous_role.as_deref().map(text).unwrap_or(Cbor::Null)),
    ]);
    (Cbor::Bytes(being.0.to_vec()), row_value)
}

fn map_cbor(map: &BTreeMap<String, Json>) -> Cbor {
    Cbor::Map(map.iter().map(|(k, v)| (Cbor::Text(k.clone()), json_to_cbor(v))).collect())
}

impl World {
    /// Counts [`World::live_beings_by_space`] again from every row: for a
    /// world read back from a snapshot, or built row by row in a test.
    pub fn recount_live_beings(&mut self) {
        let mut counts = BTreeMap::new();
        for row in self.beings.values() {
            count_live_being(&mut counts, row, true);
        }
        self.live_beings_by_space = counts;
    }

    pub fn new() -> World {
        let mut world = World::default();
        world.spaces.insert("/".to_string(), Space { kind: "root".into(), qualities: BTreeMap::new() });
        world
    }

    /// A configuration value folded from `set-config` effects, or `default`.
    pub fn config_u64(&self, key: &str, default: u64) -> u64 {
        self.config.get(key).and_then(Json::as_u64).unwrap_or(default)
    }

    /// How many summons `being` sealed in the minute before `now_ms`.
    pub fn summons_in_minute_before(&self, being: &BeingId, now_ms: u64) -> usize {
        let since = now_ms.saturating_sub(60_000);
        self.recent_summons.get(being).map_or(0, |times| times.iter().filter(|time| **time > since).count())
    }

    pub fn being_named(&self, name: &str) -> Option<&BeingRow> {
        self.names.get(name).and_then(|id| self.beings.get(id)).map(|row| &**row)
    }

    pub fn name_of(&self, being: &BeingId) -> Option<&str> {
        self.beings.get(being).map(|row| row.name.as_str())
    }

    /// Folds one sealed fact in. Never fails: a body this build cannot read
    /// changes nothing (verification reports it; the fold is not the judge).
    pub fn apply(&mut self, land_seq: u64, fact: &Fact) {
        self.apply_parts(land_seq, &fact.header, fact.id(), fact.body());
    }

    /// The same fold, from a fact's header, id and body (an unsigned fact
    /// folds the same as its signed self: the signature changes nothing).
    pub fn apply_parts(&mut self, land_seq: u64, header: &FactHeader, id: FactId, body: &[u8]) {
        let body = FoldBody::read_keeping_flows(header, body, &self.genesis_flows.0);
        self.apply_folded(land_seq, header, id, body);
    }

    /// Moves the cursor past the fact at `land_seq` without folding it: for
    /// a world that keeps every part but other beings' activity, passing an
    /// act that changes nothing else ([`reach::changes_only_its_actors_activity`]).
    pub fn move_past(&mut self, land_seq: u64) {
        self.cursor = self.cursor.max(land_seq + 1);
    }

    /// Folds a fact whose body [`FoldBody::read`] already decoded (from the
    /// same header and body): the same fold as [`World::apply_parts`].
    pub fn apply_folded(&mut self, land_seq: u64, header: &FactHeader, id: FactId, body: FoldBody) {
        self.cursor = self.cursor.max(land_seq + 1);
        let being = header.being;
        if self.canopy.is_arriving_history(&being, header.seq) {
            self.fold_arriving_history(land_seq, header, id, body);
            return;
        }
        match body {
            FoldBody::Genesis(row) => {
                if land_seq == 0 {
                    self.root = Some(being);
                }
                self.names.insert(row.name.clone(), being);
                count_live_being(&mut self.live_beings_by_space, &row, true);
                if let Some(replaced) = self.beings.insert(being, Arc::from(row)) {
                    count_live_being(&mut self.live_beings_by_space, &replaced, false);
                }
            }
            FoldBody::End => self.fold_end(being),
            FoldBody::Move(moved) => {
                // It lives on elsewhere: here it is over, and what is
                // summoned of it is sent where it went.
                self.fold_end(being);
                let away = crate::canopy::MovedAway { land: moved.to_land, url: moved.to_url, seq: header.seq };
                self.canopy.moved_away.insert(being, away);
            }
            FoldBody::MovedIn(moved_in) => {
                self.canopy.arriving.remove(&being);
                self.canopy.moved_in.insert(being, moved_in.from_land);
                if let Some(row) = self.beings.get_mut(&being).map(Arc::make_mut) {
                    count_live_being(&mut self.live_beings_by_space, row, false);
                    row.ended = false;
                    row.parent = Some(moved_in.parent);
                    row.location = moved_in.home_space.clone();
                    row.home_space = moved_in.home_space;
                    count_live_being(&mut self.live_beings_by_space, row, true);
                }
            }
            FoldBody::World(body) => {
                for effect in &body.effects {
                    match effect {
                        Effect::CascadeSignal { signal } => {
                            self.cascade.fold_signal(id, land_seq, Some(being), signal);
                        }
                        Effect::CascadeDelivery { delivery } => self.cascade.fold_delivery(id, land_seq, delivery),
                        Effect::DefinitionText { digest, .. } => self.definitions.fold_text(land_seq, *digest),
                        Effect::Definitions { set } => self.definitions.fold_set(land_seq, set),
                        // A land's peers are the root's to record: another
                        // being's world fact naming one changes nothing.
                        canopy if canopy.is_canopy_record() && self.root != Some(being) => {}
                        Effect::PeerAdded { peer } => self.canopy.fold_added(land_seq, peer),
                        Effect::PeerKey { land, key, key_seq } => self.canopy.fold_key(land, *key, *key_seq),
                        Effect::PeerHeartbeats { beats } => self.canopy.fold_heartbeats(land_seq, beats),
                        Effect::PeerRemoved { land } => self.canopy.fold_removed(land),
                        Effect::PeerFollowed { land, following, being } => {
                            self.canopy.fold_followed(land, *following, being.as_ref())
                        }
                        Effect::ForkShown { fork } => self.canopy.fold_fork_shown(land_seq, fork),
                        Effect::BeingArriving { arriving } => {
                            self.canopy.arriving.insert(arriving.being, arriving.clone());
                        }
                        Effect::SummonsDelivered { fact, .. } | Effect::SummonsUndelivered { fact, .. } => {
                            self.canopy.fold_settled(fact)
                        }
                        Effect::SummonsArrived { arrival } => self.fold_arrival(land_seq, arrival),
                        Effect::SummonsForwarded { fact, to, .. } => self.canopy.fold_forwarded(fact, *to),
                        Effect::SummonsRefused { refusal } => self.canopy.fold_refused(land_seq, refusal),
                        other => {
                            self.note_config_set(land_seq, header, id, other);
                            self.apply_effect(Some(being), land_seq, other)
                        }
                    }
                }
            }
            FoldBody::Act(act) => self.apply_act(land_seq, header, id, &act),
            FoldBody::Spend(spend) => {
                self.spend.fold(being, spend.primary.as_deref(), header.stored_time_ms, &spend.llm);
            }
            FoldBody::Embedding(embedding) => {
                let vector = crate::embedding::from_bytes(&embedding.vector);
                self.embeddings.insert(embedding.fact, crate::embedding::StoredVector(vector.into()));
            }
            FoldBody::Nothing => {}
        }
    }

    /// Folds an ended being: it has no more moments, its inbox is emptied,
    /// and its requests for approval leave (they will never be applied).
    fn fold_end(&mut self, being: BeingId) {
        if let Some(row) = self.beings.get_mut(&being).map(Arc::make_mut) {
            count_live_being(&mut self.live_beings_by_space, row, false);
            row.ended = true;
        }
        self.inbox.remove(&being);
        let asked: Vec<FactId> = self
            .approvals
            .iter()
            .filter(|(_, pending)| pending.requester == being)
            .map(|(request, _)| *request)
            .collect();
        for request in asked {
            if let Some(pending) = self.approvals.remove(&request) {
                self.forget_approval_summons(request, &pending.request.summoned);
            }
        }
    }

    /// Folds a fact of a moving being's history on the land it came from
    /// (`crate::canopy::BeingArriving`): it happened in that land's world,
    /// so here it only makes the being (its row, planted ended until its
    /// `moved-in`), counts its acts into its row and its own memory, and
    /// gives it the qualities its `move` carried. Nothing else of this
    /// world changes.
    fn fold_arriving_history(&mut self, land_seq: u64, header: &FactHeader, id: FactId, body: FoldBody) {
        let being = header.being;
        match body {
            FoldBody::Genesis(mut row) => {
                row.ended = true;
                self.names.insert(row.name.clone(), being);
                if let Some(replaced) = self.beings.insert(being, Arc::from(row)) {
                    count_live_being(&mut self.live_beings_by_space, &replaced, false);
                }
            }
            FoldBody::Act(act) => self.fold_arriving_act(land_seq, header, id, &act),
            FoldBody::Move(moved) => {
                if let Some(row) = self.beings.get_mut(&being).map(Arc::make_mut) {
                    row.qualities = moved
                        .qualities
                        .iter()
                        .map(|(name, value)| (name.clone(), crate::canonical::cbor_to_json(value)))
                        .collect();
                }
            }
            _ => {}
        }
    }

    /// Folds an act of a moving being's history on the land it came from:
    /// counted in its row and remembered by it, nothing more.
    fn fold_arriving_act(&mut self, land_seq: u64, header: &FactHeader, id: FactId, act: &ActBody) {
        let applied = crate::approval::Gate::call_applied(act.gate.as_ref());
        let Some(row) = self.beings.get_mut(&header.being).map(Arc::make_mut) else { return };
        if applied {
            row.last_act_ms = Some(header.stored_time_ms);
            row.acts += 1;
        }
        let remembered = remembered_of_act(land_seq, &row.name, id, act);
        let memory = Arc::make_mut(self.memories.entry(header.being).or_default());
        let _refused = remember_own(memory, remembered.by_actor, remembered.note.as_ref(), id, land_seq);
    }

    /// Folds a summons that arrived from another land: its bookkeeping,
    /// and the target's inbox as a local summons's (a target ended since
    /// is not summoned: the receiving edge refused that before sealing).
    fn fold_arrival(&mut self, land_seq: u64, arrival: &crate::canopy::Arrival) {
        self.canopy.fold_arrived(land_seq, arrival);
        if self.beings.get(&arrival.target).is_none_or(|row| row.ended) {
            return;
        }
        self.inbox.entry(arrival.target).or_default().insert(
            land_seq,
            PendingSummon {
                fact: arrival.fact,
                land_seq,
                from: arrival.being,
                content: arrival.content.clone(),
                caller_role: arrival.caller_role.clone(),
                correlation: arrival.in_reply_to.unwrap_or(arrival.fact),
                remote: Some(crate::canopy::RemoteAddress { name: arrival.name.clone(), land: arrival.land }),
            },
        );
    }

    /// Folds an act whose body the caller already holds decoded (it must be
    /// the body of `fact`): the same fold as `apply`, without decoding again.
    pub fn apply_act(&mut self, land_seq: u64, header: &FactHeader, id: FactId, act: &ActBody) {
        debug_assert_eq!(header.kind, KIND_ACT);
        self.cursor = self.cursor.max(land_seq + 1);
        if act.gate.is_some() || matches!(act.call, VerbCall::Do { .. }) {
            self.audit_acts.push_back(land_seq);
        }
        let being = header.being;
        if self.canopy.is_arriving_history(&being, header.seq) {
            self.fold_arriving_act(land_seq, header, id, act);
            return;
        }
        // A gated call's request, and a request closed unapplied, deliver
        // nothing: the call did not happen.
        let applied = crate::approval::Gate::call_applied(act.gate.as_ref());
        // The substrate's summons about a spent budget answers no summons:
        // the one that woke the being stays in its inbox, to be answered.
        if let (Wake::Summon { fact: summon, .. }, None) = (&act.wake, &act.budget) {
            if let Some(inbox) = self.inbox.get_mut(&being) {
                inbox.retain(|_, pending| pending.fact != *summon);
            }
        }
        if let Some(row) = self.beings.get_mut(&being).map(Arc::make_mut) {
            row.last_act_ms = Some(header.stored_time_ms);
            row.previous_role = act.primary.clone();
            row.acts += 1;
        }
        if let (true, VerbCall::Summon { target, content, in_reply_to }) = (applied, &act.call) {
            let times = self.recent_summons.entry(being).or_default();
            times.push(header.stored_time_ms);
            if times.len() > RECENT_SUMMONS_KEPT {
                times.remove(0);
            }
            if let Some(target) = self.names.get(target.trim_start_matches('@')).copied() {
                let correlation = in_reply_to.unwrap_or(id);
                self.inbox.entry(target).or_default().insert(
                    land_seq,
                    PendingSummon {
                        fact: id,
                        land_seq,
                        from: being,
                        content: content.clone(),
                        caller_role: act.primary.clone(),
                        correlation,
                        remote: None,
                    },
                );
            } else if let Some(to) = crate::canopy::RemoteAddress::of_sealed_target(target) {
                // For a being of another land: it waits in the outbox until
                // its delivery (or giving up) is recorded.
                let outgoing = crate::canopy::Outgoing {
                    fact: id,
                    being,
                    seq: header.seq,
                    to,
                    stored_time_ms: header.stored_time_ms,
                    via: None,
                };
                self.canopy.fold_sent(land_seq, outgoing);
            }
        }
        if let Some(gate) = &act.gate {
            self.apply_gate(land_seq, header, id, act, gate);
        }
        self.remember_act(land_seq, being, id, act);
        for record in act.model_calls() {
            self.spend.fold(being, act.primary.as_deref(), header.stored_time_ms, record);
        }
        if let Some(budget) = &act.budget {
            self.spend.owners_summoned.insert(being, budget.clone());
        }
        for effect in &act.effects {
            self.note_config_set(land_seq, header, id, effect);
            self.apply_effect(Some(being), land_seq, effect);
        }
    }

    /// Notes the fact (`id`, at `land_seq`, `header`'s) as the one that set
    /// the key of a `set-config` `effect`; any other effect notes nothing.
    fn note_config_set(&mut self, land_seq: u64, header: &FactHeader, id: FactId, effect: &Effect) {
        if let Effect::SetConfig { key, .. } = effect {
            let by = ConfigSetBy { fact: id, being: header.being, time_ms: header.stored_time_ms, land_seq };
            self.config_set_by.insert(key.clone(), by);
        }
    }

    /// Folds an act's part in an approval: a request waits (its approvers
    /// summoned), a decision is kept on it, an applied or closed request
    /// leaves. One that no longer fits (a decision on a request already
    /// gone) changes nothing.
    fn apply_gate(
        &mut self,
        land_seq: u64,
        header: &FactHeader,
        id: FactId,
        act: &ActBody,
        gate: &crate::approval::Gate,
    ) {
        use crate::approval::{DecisionMade, Gate, PendingApproval};
        let being = header.being;
        match gate {
            Gate::Request(request) => {
                let requester = self.name_of(&being).unwrap_or_default().to_string();
                let content = crate::approval::describe(&requester, &act.call);
                for approver in &request.summoned {
                    if self.beings.get(approver).is_none_or(|row| row.ended) {
                        continue;
                    }
                    self.inbox.entry(*approver).or_default().insert(
                        land_seq,
                        PendingSummon {
                            fact: id,
                            land_seq,
                            from: being,
                            content: content.clone(),
                            caller_role: act.primary.clone(),
                            correlation: id,
                            remote: None,
                        },
                    );
                }
                self.approvals.insert(
                    id,
                    PendingApproval {
                        requester: being,
                        call: act.call.clone(),
                        content: act.content.clone(),
                        request: request.clone(),
                        requested_at_seq: land_seq,
                        requested_ms: header.stored_time_ms,
                        decision: None,
                    },
                );
            }
            Gate::Decided(decision) => {
                let Some(pending) = self.approvals.get_mut(&decision.request) else { return };
                if pending.decision.is_some() {
                    return;
                }
                pending.decision = Some(DecisionMade {
                    fact: id,
                    by: being,
                    approved: decision.approved,
                    edited: decision.edited.clone(),
                    reason: decision.reason.clone(),
                });
                let summoned = pending.request.summoned.clone();
                self.forget_approval_summons(decision.request, &summoned);
            }
            Gate::Applied { request, .. } | Gate::Closed { request, .. } => {
                if let Some(pending) = self.approvals.remove(request) {
                    self.forget_approval_summons(*request, &pending.request.summoned);
                }
            }
        }
    }

    /// Takes a request's summons out of its approvers' inboxes.
    fn forget_approval_summons(&mut self, request: FactId, summoned: &[BeingId]) {
        for approver in summoned {
            if let Some(inbox) = self.inbox.get_mut(approver) {
                inbox.retain(|_, pending| pending.fact != request);
            }
        }
    }

    /// Folds an act into the memories of its actor and of the being it
    /// summoned. An item memory refuses (it cannot come out of land order;
    /// a note superseding what is not an earlier note of its being)
    /// changes nothing: `seed memory` names it.
    fn remember_act(&mut self, land_seq: u64, being: BeingId, id: FactId, act: &ActBody) {
        let Some(actor_name) = self.beings.get(&being).map(|row| row.name.as_str()) else { return };
        let remembered = remembered_of_act(land_seq, actor_name, id, act);
        let memory = Arc::make_mut(self.memories.entry(being).or_default());
        let _refused = remember_own(memory, remembered.by_actor, remembered.note.as_ref(), id, land_seq);
        if let Some((target, summons)) = remembered.by_summoned {
            if let Some(target) = self.names.get(&target).copied() {
                let _ = Arc::make_mut(self.memories.entry(target).or_default()).remember(summons);
            }
        }
    }

    /// Applies one effect. Effects were checked when they were decided; one
    /// that no longer fits (a being that is gone) changes nothing.
    /// `land_seq` is the land seq of the fact whose effect this is.
    pub fn apply_effect(&mut self, actor: Option<BeingId>, land_seq: u64, effect: &Effect) {
        match effect {
            Effect::PutSpace { path, kind, qualities } => {
                self.spaces.insert(path.clone(), Space { kind: kind.clone(), qualities: qualities.clone() });
            }
            Effect::SetSpaceQuality { path, key, value } => {
                if let Some(space) = self.spaces.get_mut(path) {
                    set_or_remove(&mut space.qualities, key, value);
                }
            }
            Effect::SetSignal { key, value } => set_or_remove(&mut self.signals, key, value),
            Effect::SetConfig { key, value } => set_or_remove(&mut self.config, key, value),
            Effect::PutMatter { address, kind, fields } => {
                self.matter.insert(
                    address.clone(),
                    Matter { kind: kind.clone(), fields: fields.clone(), creator: actor, made_at_seq: land_seq },
                );
            }
            Effect::RemoveMatter { address } => {
                self.matter.remove(address);
            }
            Effect::MoveBeing { being, to } => {
                if let Some(id) = self.names.get(being).copied() {
                    if let Some(row) = self.beings.get_mut(&id).map(Arc::make_mut) {
                        count_live_being(&mut self.live_beings_by_space, row, false);
                        row.location = to.clone();
                        count_live_being(&mut self.live_beings_by_space, row, true);
                    }
                }
            }
            Effect::SetBeingQuality { being, key, value } => {
                if let Some(id) = self.names.get(being).copied() {
                    if let Some(row) = self.beings.get_mut(&id).map(Arc::make_mut) {
                        set_or_remove(&mut row.qualities, key, value);
                    }
                }
            }
            Effect::SetRoleFlow { being, flow } => {
                if let Some(id) = self.names.get(being).copied() {
                    if let Some(row) = self.beings.get_mut(&id).map(Arc::make_mut) {
                        row.role_flow = std::sync::Arc::new(flow.clone());
                        row.role_flow_digest = role_flow_digest(flow);
                    }
                }
            }
            Effect::Inhabit { being, by } => {
                let by = self.names.get(by).copied();
                if let Some(id) = self.names.get(being).copied() {
                    if let Some(row) = self.beings.get_mut(&id).map(Arc::make_mut) {
                        row.inhabited_by = by;
                    }
                }
            }
            Effect::Release { being } => {
                if let Some(id) = self.names.get(being).copied() {
                    if let Some(row) = self.beings.get_mut(&id).map(Arc::make_mut) {
                        row.inhabited_by = None;
                    }
                }
            }
            Effect::PutRole { name, definition } => {
                self.roles.insert(name.clone(), AuthoredRole { definition: definition.clone(), author: actor });
                self.roles_digest = self.authored_roles_digest();
            }
            Effect::DropRole { name } => {
                self.roles.remove(name);
                self.roles_digest = self.authored_roles_digest();
            }
            Effect::GrantAccount { account, being, token_hash } => {
                if let Some(id) = self.names.get(being).copied() {
                    let granted = Account { being: id, token_hash: token_hash.clone(), granted_at_seq: land_seq };
                    self.accounts.insert(account.clone(), granted);
                }
            }
            Effect::RevokeAccount { account } => {
                self.accounts.remove(account);
            }
            Effect::SetSpaceOwner { .. } | Effect::SetSpaceContributor { .. } | Effect::ScopeExtension { .. } => {
                self.apply_space_rule(effect);
            }
            // Folded from their own `world` fact only (see `apply_folded`):
            // an act carrying one changes nothing.
            Effect::CascadeSignal { .. }
            | Effect::CascadeDelivery { .. }
            | Effect::DefinitionText { .. }
            | Effect::Definitions { .. }
            | Effect::PeerAdded { .. }
            | Effect::PeerKey { .. }
            | Effect::PeerHeartbeats { .. }
            | Effect::PeerRemoved { .. }
            | Effect::PeerFollowed { .. }
            | Effect::ForkShown { .. }
            | Effect::BeingArriving { .. }
            | Effect::SummonsForwarded { .. }
            | Effect::SummonsDelivered { .. }
            | Effect::SummonsUndelivered { .. }
            | Effect::SummonsArrived { .. }
            | Effect::SummonsRefused { .. } => {}
        }
    }

    /// What `roles_digest` holds: BLAKE3 of the authored definitions, zero
    /// while there are none (as before the first was authored).
    fn authored_roles_digest(&self) -> Hash32 {
        if self.roles.is_empty() {
            return Hash32::ZERO;
        }
        crate::fact::blake3_of(&canonical::encode_value(&self.roles_cbor()).unwrap_or_default())
    }

    /// The authored roles' definitions by name, as CBOR.
    fn roles_cbor(&self) -> Cbor {
        Cbor::Map(
            self.roles.iter().map(|(name, role)| (Cbor::Text(name.clone()), json_to_cbor(&role.definition))).collect(),
        )
    }

    /// The account that drives `being`, if one does.
    pub fn account_of(&self, being: &BeingId) -> Option<(&str, &Account)> {
        self.accounts
            .iter()
            .find(|(_, account)| account.being == *being)
            .map(|(name, account)| (name.as_str(), account))
    }

    /// The canonical CBOR of the whole world state (cursor excluded: two
    /// worlds with the same contents hash the same however they got there).
    ///
    /// The bytes `canonical::encode_value` gives for the state as one value
    /// (`canonical_state_as_one_value`, which a differential test holds it
    /// to), written section by section and the beings row by row: the one
    /// value tree of a million beings, sorted and copied, took about 4.5 KB
    /// a being at the end of a run. A map's entries are in the order of
    /// their encoded keys; a being's key is its 32-byte id, so the rows'
    /// order is the `BTreeMap`'s.
    pub fn canonical_state(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_canonical_state(&mut |bytes| out.extend_from_slice(bytes));
        out
    }

    /// [`World::canonical_state`]'s bytes, handed to `out` in order as
    /// they are encoded (a section, then a row at a time) and never held
    /// whole: a digest of the state needs no copy of it.
    pub fn write_canonical_state(&self, out: &mut dyn FnMut(&[u8])) {
        let encode = |value: &Cbor| canonical::encode_value(value).expect("world state holds no floats or tags");
        // `None`: the beings, written row by row when their key's turn comes.
        let mut sections: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            self.state_sections().iter().map(|(key, value)| (encode(key), Some(encode(value)))).collect();
        sections.push((encode(&Cbor::Text("beings".into())), None));
        sections.sort_by(|left, right| left.0.cmp(&right.0));
        let mut head = Vec::with_capacity(9);
        canonical::write_map_head(sections.len(), &mut head);
        out(&head);
        for (key, value) in &sections {
            out(key);
            match value {
                Some(value) => out(value),
                None => {
                    head.clear();
                    canonical::write_map_head(self.beings.len(), &mut head);
                    out(&head);
                    for (being, row) in &self.beings {
                        let (key, value) = being_row_cbor(being, row);
                        out(&encode(&key));
                        out(&encode(&value));
                    }
                }
            }
        }
    }

    /// The world state as one CBOR value, encoded whole: the reference
    /// `canonical_state` is held to.
    #[cfg(test)]
    fn canonical_state_as_one_value(&self) -> Vec<u8> {
        let mut state = self.state_sections();
        let beings = self.beings.iter().map(|(being, row)| being_row_cbor(being, row)).collect();
        state.push((Cbor::Text("beings".into()), Cbor::Map(beings)));
        canonical::encode_value(&Cbor::Map(state)).expect("world state holds no floats or tags")
    }

    /// Every section of the world state but its beings, as (key, value).
    fn state_sections(&self) -> Vec<(Cbor, Cbor)> {
        let text = |s: &str| Cbor::Text(s.to_string());
        let id = |being: &BeingId| Cbor::Bytes(being.0.to_vec());
        let optional_id = |being: &Option<BeingId>| being.as_ref().map(id).unwrap_or(Cbor::Null);
        let spaces = Cbor::Map(
            self.spaces
                .iter()
                .map(|(path, space)| {
                    (
                        text(path),
                        Cbor::Map(vec![
                            (text("kind"), text(&space.kind)),
                            (text("qualities"), map_cbor(&space.qualities)),
                        ]),
                    )
                })
                .collect(),
        );
        let matter = Cbor::Map(
            self.matter
                .iter()
                .map(|(address, matter)| {
                    (
                        text(address),
                        Cbor::Map(vec![
                            (text("kind"), text(&matter.kind)),
                            (text("fields"), map_cbor(&matter.fields)),
                            (text("creator"), optional_id(&matter.creator)),
                        ]),
                    )
                })
                .collect(),
        );
        let inbox = Cbor::Map(
            self.inbox
                .iter()
                .map(|(being, pending)| {
                    (
                        id(being),
                        Cbor::Array(pending.values().map(|summon| Cbor::Bytes(summon.fact.0.to_vec())).collect()),
                    )
                })
                .collect(),
        );
        let mut state = vec![
            (text("spaces"), spaces),
            (text("matter"), matter),
            (text("signals"), map_cbor(&self.signals)),
            (text("config"), map_cbor(&self.config)),
            (text("inbox"), inbox),
        ];
        // Only once there are authored roles, so worlds without them hash as they always did.
        if !self.roles.is_empty() {
            state.push((text("roles"), self.roles_cbor()));
        }
        // Likewise accounts: a land nobody was invited to hashes as before.
        if !self.accounts.is_empty() {
            let accounts = self
                .accounts
                .iter()
                .map(|(name, account)| {
                    (
                        text(name),
                        Cbor::Map(vec![
                            (text("being"), id(&account.being)),
                            (text("tokenHash"), text(&account.token_hash)),
                        ]),
                    )
                })
                .collect();
            state.push((text("accounts"), Cbor::Map(accounts)));
        }
        // Likewise owners and scopes: a land that never named one hashes as before.
        if !self.space_rules.is_empty() {
            let rules = self
                .space_rules
                .iter()
                .map(|(path, rule)| {
                    let extensions =
                        rule.extensions.iter().map(|(name, scope)| (text(name), text(scope.as_str()))).collect();
                    (
                        text(path),
                        Cbor::Map(vec![
                            (text("owner"), optional_id(&rule.owner)),
                            (text("contributors"), Cbor::Array(rule.contributors.iter().map(id).collect())),
                            (text("extensions"), Cbor::Map(extensions)),
                        ]),
                    )
                })
                .collect();
            state.push((text("spaceRules"), Cbor::Map(rules)));
        }
        // Likewise cascades: a land that never cascaded hashes as before.
        if !self.cascade.is_empty() {
            let arrivals = self
                .cascade
                .arrivals
                .iter()
                .map(|(space, arrivals)| {
                    (
                        text(space),
                        Cbor::Array(arrivals.iter().map(|arrival| Cbor::Bytes(arrival.fact.0.to_vec())).collect()),
                    )
                })
                .collect();
            let recent = self
                .cascade
                .recent_signals
                .iter()
                .map(|(space, times)| {
                    (text(space), Cbor::Array(times.iter().map(|at| Cbor::Integer((*at).into())).collect()))
                })
                .collect();
            state.push((
                text("cascade"),
                Cbor::Map(vec![
                    (text("arrivals"), Cbor::Map(arrivals)),
                    (text("recentSignals"), Cbor::Map(recent)),
                    (text("day"), Cbor::Integer(self.cascade.day.into())),
                    (text("deliveredInDay"), Cbor::Integer(self.cascade.delivered_in_day.into())),
                ]),
            ));
        }
        // Likewise definitions: a land that never recorded them hashes as before.
        if let Some(in_force) = &self.definitions.in_force {
            let texts = self
                .definitions
                .texts
                .iter()
                .map(|(digest, land_seq)| (Cbor::Bytes(digest.0.to_vec()), Cbor::Integer((*land_seq).into())))
                .collect();
            state.push((
                text("definitions"),
                Cbor::Map(vec![
                    (text("inForce"), Cbor::Bytes(in_force.digest.0.to_vec())),
                    (text("recordedAt"), Cbor::Integer(in_force.land_seq.into())),
                    (text("texts"), Cbor::Map(texts)),
                ]),
            ));
        }
        // Likewise peers: a land that never peered hashes as before.
        if !self.canopy.is_empty() {
            state.push((text("canopy"), crate::canopy::canonical_peers(&self.canopy)));
        }
        state
    }

    pub fn state_digest(&self) -> Hash32 {
        let mut hasher = crate::fact::GatheringHasher::new();
        self.write_canonical_state(&mut |bytes| hasher.update(bytes));
        hasher.finalize()
    }

    /// BLAKE3 of every being's memory digest, in being order: what an
    /// index check compares between a memory read back and the fold's.
    pub fn memories_digest(&self) -> Hash32 {
        let mut hasher = crate::fact::GatheringHasher::new();
        for (being, memory) in &self.memories {
            hasher.update(&being.0);
            hasher.update(&memory.digest().0);
        }
        hasher.finalize()
    }

    /// What a world snapshot claims of its world: the state digest, the
    /// memories' digest, the spend ledger's and the vectors', hashed
    /// together with which fact set each configuration key and the acts the
    /// audit lists (a snapshot whose memories, spend, config citations or
    /// audited acts differ from the fold's is caught like one whose state
    /// does).
    pub fn snapshot_digest(&self) -> Hash32 {
        let mut bytes = [0u8; 128];
        bytes[..32].copy_from_slice(&self.state_digest().0);
        bytes[32..64].copy_from_slice(&self.memories_digest().0);
        bytes[64..96].copy_from_slice(&self.spend.digest().0);
        bytes[96..].copy_from_slice(&self.embeddings_digest().0);
        let mut hasher = blake3::Hasher::new();
        hasher.update(&bytes);
        // Which fact set each configuration key, as the snapshot writes it.
        hasher.update(&canonical::to_canonical_bytes(&self.config_set_by).expect("keys, ids and numbers encode"));
        // The acts the audit lists.
        hasher.update(&canonical::to_canonical_bytes(&self.audit_acts).expect("numbers encode"));
        Hash32(*hasher.finalize().as_bytes())
    }

    /// BLAKE3 of every act's vector, in fact-id order.
    pub fn embeddings_digest(&self) -> Hash32 {
        let mut hasher = blake3::Hasher::new();
        for (fact, vector) in &self.embeddings {
            hasher.update(&fact.0);
            hasher.update(&(vector.0.len() as u64).to_be_bytes());
            hasher.update(&crate::embedding::to_bytes(&vector.0));
        }
        Hash32(*hasher.finalize().as_bytes())
    }
}

fn set_or_remove(map: &mut BTreeMap<String, Json>, key: &str, value: &Option<Json>) {
    match value {
        Some(value) => {
            map.insert(key.to_string(), value.clone());
        }
        None => {
            map.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::PublicKeyBytes;

    fn genesis_fact(name: &str, role_flow: Vec<Cbor>, nonce: [u8; 16]) -> (FactHeader, Vec<u8>) {
        let genesis = GenesisBody {
            name: name.into(),
            parent: None,
            cognition: Cognition::Scripted,
            public_key: PublicKeyBytes([3; 32]),
            role_flow,
            default_role: "idle".into(),
            home_space: "/north".into(),
            nonce,
        };
        genesis_bytes(canonical::to_canonical_bytes(&genesis).expect("encodes"))
    }

    fn genesis_bytes(body: Vec<u8>) -> (FactHeader, Vec<u8>) {
        let header = FactHeader {
            being: BeingId(crate::fact::blake3_of(&body).0),
            seq: 0,
            prev: FactId::ZERO,
            stored_time_ms: 0,
            kind: KIND_GENESIS.into(),
            body_len: body.len() as u64,
            body_hash: crate::fact::blake3_of(&body),
        };
        (header, body)
    }

    fn clause(role: &str) -> Cbor {
        Cbor::Map(vec![(Cbor::Text("role".into()), Cbor::Text(role.into()))])
    }

    /// Read with shared flows, every genesis gives the row it gives read
    /// alone: the first with a flow keeps it, the next with the same bytes
    /// takes it, one with other bytes reads its own.
    #[test]
    fn genesis_rows_read_with_shared_flows_are_the_rows_read_alone() {
        let flows = GenesisFlows::default();
        let facts = [
            genesis_fact("ada", vec![clause("walker")], [1; 16]),
            genesis_fact("bo", vec![clause("walker")], [2; 16]),
            genesis_fact("cy", vec![clause("sitter"), clause("walker")], [3; 16]),
            genesis_fact("di", Vec::new(), [4; 16]),
            genesis_fact("ed", vec![clause("walker")], [5; 16]),
        ];
        for (header, body) in &facts {
            let alone = FoldBody::read(header, body);
            assert!(matches!(&alone, FoldBody::Genesis(row) if row.role_flow_digest.is_some()), "{alone:?}");
            assert_eq!(FoldBody::read_keeping_flows(header, body, &flows), alone);
        }
        assert_eq!(flows.flows.read().expect("not poisoned").len(), 3, "one flow per distinct bytes");
    }

    /// A body that does not read as a genesis reads as nothing, whether or
    /// not its flow is known: a known flow vouches for the flow alone.
    #[test]
    fn a_genesis_that_does_not_read_reads_as_nothing_even_with_a_known_flow() {
        let flows = GenesisFlows::default();
        let (header, body) = genesis_fact("ada", vec![clause("walker")], [1; 16]);
        assert!(matches!(FoldBody::read_keeping_flows(&header, &body, &flows), FoldBody::Genesis(_)));
        let flow = canonical::to_canonical_bytes(&vec![clause("walker")]).expect("encodes");
        let broken = [
            // The same flow, a field missing.
            serde_json::json!({"name": "bo", "role_flow": [{"role": "walker"}]}),
            // The flow is not a list.
            serde_json::json!({"name": "cy", "role_flow": {"role": "walker"}}),
        ];
        for json in broken {
            let (header, body) = genesis_bytes(canonical::encode_json(&json).expect("encodes"));
            assert_eq!(FoldBody::read(&header, &body), FoldBody::Nothing, "{json}");
            assert_eq!(FoldBody::read_keeping_flows(&header, &body, &flows), FoldBody::Nothing, "{json}");
        }
        // The first body's flow is the one kept, by its bytes.
        assert_eq!(flows.flows.read().expect("not poisoned")[0].0, flow);
    }

    /// The rows a world folds from geneses carrying one roleFlow share one
    /// flow (the memory a crowd of a million beings would otherwise spend
    /// on a million copies), and so do the world's clones; a genesis with
    /// another flow gets its own.
    #[test]
    fn rows_planted_with_one_flow_share_it_in_the_world_and_its_clones() {
        let mut world = World::new();
        let facts = [
            genesis_fact("ada", vec![clause("walker")], [1; 16]),
            genesis_fact("bo", vec![clause("walker")], [2; 16]),
            genesis_fact("cy", vec![clause("sitter")], [3; 16]),
        ];
        for (land_seq, (header, body)) in facts.iter().enumerate() {
            world.apply_parts(land_seq as u64, header, FactId([land_seq as u8; 32]), body);
        }
        let flow_of = |world: &World, name: &str| world.being_named(name).expect("planted").role_flow.clone();
        assert!(std::sync::Arc::ptr_eq(&flow_of(&world, "ada"), &flow_of(&world, "bo")));
        assert!(!std::sync::Arc::ptr_eq(&flow_of(&world, "ada"), &flow_of(&world, "cy")));
        let copy = world.clone();
        assert!(std::sync::Arc::ptr_eq(&flow_of(&world, "ada"), &flow_of(&copy, "bo")));
        assert_eq!(*flow_of(&world, "ada"), serde_json::json!([{"role": "walker"}]));
    }

    /// The state written section by section and row by row is the state
    /// encoded as one value, byte for byte (a world hash may not change).
    #[test]
    fn the_canonical_state_written_row_by_row_is_the_state_encoded_as_one_value() {
        let check = |world: &World| {
            let as_one_value = world.canonical_state_as_one_value();
            assert_eq!(world.canonical_state(), as_one_value);
            assert_eq!(world.state_digest(), crate::fact::blake3_of(&as_one_value));
        };
        check(&World::default());
        let mut world = World::new();
        check(&world);
        let (root_header, root_body) = genesis_fact("reality", Vec::new(), [9; 16]);
        let root = root_header.being;
        world.apply_parts(0, &root_header, FactId([0; 32]), &root_body);
        for (index, name) in ["ada", "bo", "cy", "dee"].iter().enumerate() {
            let (header, body) = genesis_fact(name, vec![clause("walker"), clause(name)], [index as u8 + 1; 16]);
            world.apply_parts(index as u64 + 1, &header, FactId([index as u8 + 1; 32]), &body);
        }
        check(&world);
        let effects = vec![
            Effect::PutSpace { path: "/plaza".into(), kind: "square".into(), qualities: BTreeMap::new() },
            Effect::SetSignal { key: "weather".into(), value: Some(serde_json::json!({"rain": 3, "wind": "west"})) },
            Effect::SetConfig { key: "llm_timeout_ms".into(), value: Some(serde_json::json!(1500)) },
            Effect::PutMatter {
                address: "/plaza/bench".into(),
                kind: "bench".into(),
                fields: [("seats".to_string(), serde_json::json!(4))].into_iter().collect(),
            },
            Effect::SetBeingQuality { being: "bo".into(), key: "mood".into(), value: Some(serde_json::json!("glad")) },
            Effect::SetBeingQuality { being: "cy".into(), key: "age".into(), value: Some(serde_json::json!(-3)) },
        ];
        let (header, body) = world_fact(root, 1, effects);
        world.apply_parts(5, &header, FactId([5; 32]), &body);
        check(&world);
        assert!(world.canonical_state().len() > 100, "the beings and sections are there");
    }

    /// A fact of `being` at `seq` with `body`, as the fold reads it.
    fn fact_of(being: BeingId, seq: u64, kind: &str, body: Vec<u8>) -> (FactHeader, Vec<u8>) {
        let header = FactHeader {
            being,
            seq,
            prev: FactId::ZERO,
            stored_time_ms: 10 * seq,
            kind: kind.into(),
            body_len: body.len() as u64,
            body_hash: crate::fact::blake3_of(&body),
        };
        (header, body)
    }

    fn world_fact(being: BeingId, seq: u64, effects: Vec<Effect>) -> (FactHeader, Vec<u8>) {
        fact_of(being, seq, KIND_WORLD, canonical::to_canonical_bytes(&WorldBody { effects }).expect("encodes"))
    }

    /// The world's live beings by space, checked against counting every
    /// row again.
    fn counted(world: &World) -> BTreeMap<String, u64> {
        let mut recounted = world.clone();
        recounted.recount_live_beings();
        assert_eq!(world.live_beings_by_space, recounted.live_beings_by_space, "kept as rows changed");
        recounted.live_beings_by_space
    }

    /// Beings are counted where they are as they are born, moved, ended,
    /// and born again under an id already planted; a space left empty has
    /// no entry.
    #[test]
    fn live_beings_by_space_follow_births_moves_and_ends() {
        let (root_header, root_body) = genesis_fact("reality", Vec::new(), [9; 16]);
        let root = root_header.being;
        let (ada_header, ada_body) = genesis_fact("ada", Vec::new(), [1; 16]);
        let ada = ada_header.being;
        let (bo_header, bo_body) = genesis_fact("bo", Vec::new(), [2; 16]);
        let bo = bo_header.being;
        let moved = |name: &str, to: &str| Effect::MoveBeing { being: name.into(), to: to.into() };
        let end = canonical::to_canonical_bytes(&seed_format::fact::body::EndBody { reason: "done".into() })
            .expect("encodes");
        let north = |count| ("/north".to_string(), count);
        let south = |count| ("/south".to_string(), count);
        type Step = ((FactHeader, Vec<u8>), Vec<(String, u64)>);
        let steps: Vec<Step> = vec![
            ((root_header, root_body), vec![north(1)]),
            ((ada_header.clone(), ada_body.clone()), vec![north(2)]),
            ((bo_header, bo_body), vec![north(3)]),
            (world_fact(root, 1, vec![moved("ada", "/south")]), vec![north(2), south(1)]),
            (world_fact(root, 2, vec![moved("bo", "/south"), moved("ada", "/north")]), vec![north(2), south(1)]),
            (world_fact(root, 3, vec![moved("nobody", "/south")]), vec![north(2), south(1)]),
            (fact_of(bo, 1, KIND_END, end.clone()), vec![north(2)]),
            (world_fact(root, 4, vec![moved("bo", "/north")]), vec![north(2)]),
            (fact_of(ada, 1, KIND_END, end), vec![north(1)]),
            ((ada_header, ada_body), vec![north(2)]),
        ];
        let mut world = World::new();
        for (land_seq, ((header, body), expected)) in steps.into_iter().enumerate() {
            world.apply_parts(land_seq as u64, &header, FactId([land_seq as u8; 32]), &body);
            assert_eq!(counted(&world), BTreeMap::from_iter(expected), "after fact {land_seq}");
        }
    }

    /// A moving being's history from its old land changes only its own
    /// row: planted ended, its own world facts there folded into nothing,
    /// its move giving it its qualities; its `moved-in` makes it live here.
    /// On its old land the same move ends it and leaves where it went.
    #[test]
    fn a_moving_beings_history_changes_only_its_own_row_until_it_moves_in() {
        use seed_format::fact::body::{MoveBody, MovedInBody, KIND_MOVE, KIND_MOVED_IN};
        let (root_header, root_body) = genesis_fact("reality", Vec::new(), [9; 16]);
        let root = root_header.being;
        let (cy_genesis, cy_body) = genesis_fact("cy", vec![clause("walker")], [1; 16]);
        let cy = cy_genesis.being;
        let from_land = BeingId([7; 32]);
        let mut qualities = BTreeMap::new();
        qualities.insert("mood".to_string(), Cbor::Text("curious".into()));
        let moved = MoveBody {
            to_land: BeingId([8; 32]),
            to_url: "http://127.0.0.1:7777".into(),
            new_public_key: PublicKeyBytes([4; 32]),
            qualities,
        };
        let move_fact = fact_of(cy, 2, KIND_MOVE, canonical::to_canonical_bytes(&moved).expect("encodes"));
        let signal = Effect::SetSignal { key: "weather".into(), value: Some(serde_json::json!("rain")) };
        let arriving = crate::canopy::BeingArriving {
            being: cy,
            name: "cy".into(),
            from_land,
            through_seq: 2,
            head: FactId([5; 32]),
        };
        let moved_in = MovedInBody { from_land, home_space: "/south".into(), parent: root };
        let facts = [
            (root_header, root_body),
            world_fact(root, 1, vec![Effect::BeingArriving { arriving }]),
            (cy_genesis, cy_body),
            world_fact(cy, 1, vec![signal.clone()]),
            move_fact.clone(),
        ];
        let mut world = World::new();
        for (land_seq, (header, body)) in facts.iter().enumerate() {
            world.apply_parts(land_seq as u64, header, FactId([land_seq as u8; 32]), body);
        }
        let row = world.beings.get(&cy).expect("planted");
        assert!(row.ended, "not here until its moved-in");
        assert_eq!(counted(&world), BTreeMap::from([("/north".to_string(), 1)]), "only the root is here");
        assert_eq!(row.qualities.get("mood"), Some(&serde_json::json!("curious")), "carried by its move");
        assert!(world.signals.is_empty(), "its old land's world changes nothing here");
        assert!(world.canopy.moved_away.is_empty(), "its move is its history here, not a leaving");
        let (header, body) = fact_of(cy, 3, KIND_MOVED_IN, canonical::to_canonical_bytes(&moved_in).expect("encodes"));
        world.apply_parts(5, &header, FactId([5; 32]), &body);
        let row = world.beings.get(&cy).expect("planted");
        assert_eq!((row.ended, row.home_space.as_str(), row.location.as_str()), (false, "/south", "/south"));
        assert_eq!(counted(&world), BTreeMap::from([("/north".to_string(), 1), ("/south".to_string(), 1)]));
        assert_eq!((row.parent, world.canopy.moved_in.get(&cy)), (Some(root), Some(&from_land)));
        assert!(world.canopy.arriving.is_empty());
        // After its moved-in its facts fold as any being's.
        let (header, body) = world_fact(cy, 4, vec![signal]);
        world.apply_parts(6, &header, FactId([6; 32]), &body);
        assert_eq!(world.signals.get("weather"), Some(&serde_json::json!("rain")));

        // The same move on the land it leaves: it ends there, and the world
        // keeps where it went.
        let mut old_land = World::new();
        let (root_header, root_body) = genesis_fact("reality", Vec::new(), [9; 16]);
        let (cy_genesis, cy_body) = genesis_fact("cy", vec![clause("walker")], [1; 16]);
        for (land_seq, (header, body)) in
            [(root_header, root_body), (cy_genesis, cy_body), move_fact].iter().enumerate()
        {
            old_land.apply_parts(land_seq as u64, header, FactId([land_seq as u8; 32]), body);
        }
        assert!(old_land.beings.get(&cy).expect("its row").ended);
        assert_eq!(counted(&old_land), BTreeMap::from([("/north".to_string(), 1)]), "the root stays, cy left");
        let away = old_land.canopy.moved_away.get(&cy).expect("its forwarding address");
        assert_eq!((away.land, away.seq), (BeingId([8; 32]), 2));
        let forwarded = crate::canopy::forwarding_address(&old_land, "@cy").expect("forwarded");
        assert_eq!(forwarded.to_target(), format!("@cy@{}", BeingId([8; 32]).to_hex()));
    }
}
