//! Fact bodies that change the world: `act` (a moment's record) and `world`
//! (administrative effects, e.g. a fixture planting spaces and signals), and
//! the effect vocabulary both carry. Documented in docs/moments.md.

use crate::fact::{BeingId, FactId, Hash32};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;

pub const KIND_ACT: &str = "act";
pub const KIND_WORLD: &str = "world";

/// One change to the world, as data. The fold applies effects mechanically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Effect {
    PutSpace {
        path: String,
        kind: String,
        qualities: BTreeMap<String, Json>,
    },
    SetSpaceQuality {
        path: String,
        key: String,
        value: Option<Json>,
    },
    SetSignal {
        key: String,
        value: Option<Json>,
    },
    SetConfig {
        key: String,
        value: Option<Json>,
    },
    PutMatter {
        address: String,
        kind: String,
        fields: BTreeMap<String, Json>,
    },
    RemoveMatter {
        address: String,
    },
    MoveBeing {
        being: String,
        to: String,
    },
    SetBeingQuality {
        being: String,
        key: String,
        value: Option<Json>,
    },
    SetRoleFlow {
        being: String,
        flow: Json,
    },
    Inhabit {
        being: String,
        by: String,
    },
    Release {
        being: String,
    },
    /// A role authored live (through the role-manager): its definition as
    /// JSON, validated when it was decided. Later definitions of the same
    /// name replace earlier ones, and shadow a file role of that name.
    PutRole {
        name: String,
        definition: Json,
    },
    /// An authored role dropped: the role's file definition applies again.
    DropRole {
        name: String,
    },
    /// A person's account: it drives `being` (and may birth and inhabit
    /// its descendants) and logs in with the token whose BLAKE3 is
    /// `token_hash` (hex). A later grant of the same account replaces it
    /// (a new token, the old one and its sessions retired).
    GrantAccount {
        account: String,
        being: String,
        token_hash: String,
    },
    /// The account ends: its token, password and sessions stop working.
    RevokeAccount {
        account: String,
    },
    /// A space's own owner set (or removed: ownership falls back to the
    /// next owner up) (`crate::ownership`).
    SetSpaceOwner {
        path: String,
        owner: Option<BeingId>,
    },
    /// A contributor named at a space, or no longer.
    SetSpaceContributor {
        path: String,
        being: BeingId,
        contributor: bool,
    },
    /// An extension blocked or allowed at a space and below (or neither).
    ScopeExtension {
        path: String,
        extension: String,
        scope: Option<crate::ownership::ExtensionScope>,
    },
    /// A write at a space marked for cascade, announced (`crate::cascade`):
    /// folded only from a `world` fact, which the engine seals after the act.
    CascadeSignal {
        signal: crate::cascade::CascadeSignal,
    },
    /// One delivery of a cascade signal, or one not made and why.
    CascadeDelivery {
        delivery: crate::cascade::CascadeDelivery,
    },
    /// A definition file's text, kept by its BLAKE3 (`crate::definitions`):
    /// folded only from a `world` fact the land seals when it loads
    /// definitions it has not recorded.
    DefinitionText {
        digest: crate::fact::Hash32,
        text: String,
    },
    /// The definitions in force from here on (their texts kept before).
    Definitions {
        set: crate::definitions::DefinitionSet,
    },
    /// A land this land peers with, added with the key its history proved
    /// (`crate::canopy`): folded only from a `world` fact of the root.
    PeerAdded {
        peer: crate::canopy::PeerAdded,
    },
    /// A peer's key changed to one its history proves (each rotation
    /// signed by the key before it).
    PeerKey {
        land: BeingId,
        key: crate::fact::PublicKeyBytes,
        key_seq: u64,
    },
    /// A peer's heartbeats since the last record, and its status.
    PeerHeartbeats {
        beats: crate::canopy::PeerHeartbeats,
    },
    /// A peer removed: nothing from it is accepted any more.
    PeerRemoved {
        land: BeingId,
    },
    /// This land follows a peer's facts into a mirror (`following`), or
    /// stops (its mirror stays as it is): the whole land, or only the reel
    /// of `being`, one of the peer's beings.
    PeerFollowed {
        land: BeingId,
        following: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        being: Option<BeingId>,
    },
    /// A fork of one of this land's reels another land showed it: a fact
    /// signed by the key the being had at that seq, which this land does
    /// not hold there (`crate::canopy::ForkShown`).
    ForkShown {
        fork: crate::canopy::ForkShown,
    },
    /// A being of another land is moving here: the facts of its reel that
    /// follow in the land log, up to its `move` fact, are its history
    /// there (`crate::canopy::BeingArriving`).
    BeingArriving {
        arriving: crate::canopy::BeingArriving,
    },
    /// A summons to another land was delivered: the receiving land sealed
    /// its arrival at land seq `receipt` (none: it had taken it before and
    /// no longer says where) (`crate::canopy`).
    SummonsDelivered {
        fact: FactId,
        land: BeingId,
        receipt: Option<u64>,
    },
    /// A summons to another land whose target moved on: `land` refused it
    /// naming the land `to` its target moved to, where it waits to be
    /// delivered now.
    SummonsForwarded {
        fact: FactId,
        land: BeingId,
        to: BeingId,
    },
    /// A summons to another land given up: refused there for good, or not
    /// delivered within `canopy_undelivered_retention_ms`.
    SummonsUndelivered {
        fact: FactId,
        land: BeingId,
        reason: String,
    },
    /// A summons from a being of another land, verified and taken: it waits
    /// in the target's inbox as a local summons does.
    SummonsArrived {
        arrival: crate::canopy::Arrival,
    },
    /// A summons from another land refused, and why (inbound is never
    /// dropped unrecorded once the land that sent it is proven).
    SummonsRefused {
        refusal: crate::canopy::InboundRefusal,
    },
}

impl Effect {
    /// Whether it is one of Canopy's records (peers and summons between
    /// lands): the root's to seal after the land's edge proved it, never an
    /// operation's (`crate::canopy`).
    pub fn is_canopy_record(&self) -> bool {
        matches!(
            self,
            Effect::PeerAdded { .. }
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
                | Effect::SummonsRefused { .. }
        )
    }
}

/// What opened a moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Wake {
    /// A summon in the inbox (the summon's act fact).
    Summon { fact: FactId, from: BeingId },
    /// A world signal the being's flow reads changed.
    Signal { key: String },
    /// A heartbeat.
    Tick { tick: u64 },
    /// The previous act's role asked to continue.
    SelfContinue,
    /// A person at the portal opened the moment (human cognition acting
    /// without a summon to answer).
    Person,
    /// A cascade signal arrived at the being's space (the fact that
    /// brought it: the signal's own, or a delivery's).
    Cascade { arrival: FactId },
    /// A gated call of the being's was decided (`decision`) or expired
    /// undecided (`None`): the moment applies or closes it
    /// (`crate::approval`), whatever the being's cognition.
    Approval { request: FactId, decision: Option<FactId> },
}

impl Wake {
    /// The wake's kind, as its wire form names it (`summon`, `signal`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Wake::Summon { .. } => "summon",
            Wake::Signal { .. } => "signal",
            Wake::Tick { .. } => "tick",
            Wake::SelfContinue => "self-continue",
            Wake::Person => "person",
            Wake::Approval { .. } => "approval",
            Wake::Cascade { .. } => "cascade",
        }
    }

    /// As the CLI and the API show it: ids as hex (the serde form, which
    /// the act body is signed in, writes them as byte arrays).
    pub fn to_json(&self) -> Json {
        match self {
            Wake::Summon { fact, from } => {
                serde_json::json!({"kind": "summon", "fact": fact.to_hex(), "from": from.to_hex()})
            }
            Wake::Signal { key } => serde_json::json!({"kind": "signal", "key": key}),
            Wake::Tick { tick } => serde_json::json!({"kind": "tick", "tick": tick}),
            Wake::SelfContinue | Wake::Person => serde_json::json!({"kind": self.kind()}),
            Wake::Cascade { arrival } => serde_json::json!({"kind": "cascade", "arrival": arrival.to_hex()}),
            Wake::Approval { request, decision } => serde_json::json!({
                "kind": "approval", "request": request.to_hex(), "decision": decision.map(|fact| fact.to_hex()),
            }),
        }
    }
}

/// The verb call a moment sealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "lowercase")]
pub enum VerbCall {
    See { address: String },
    Do { target: String, action: String, args: Json },
    Summon { target: String, content: String, in_reply_to: Option<FactId> },
    Be { operation: String, payload: Json },
}

impl VerbCall {
    /// As the CLI and the API write a call: camelCase keys, ids in hex,
    /// `null` where a summon answers nothing.
    pub fn to_json(&self) -> Json {
        match self {
            VerbCall::See { address } => serde_json::json!({"verb": "see", "address": address}),
            VerbCall::Do { target, action, args } => {
                serde_json::json!({"verb": "do", "target": target, "action": action, "args": args})
            }
            VerbCall::Summon { target, content, in_reply_to } => serde_json::json!({
                "verb": "summon", "target": target, "content": content,
                "inReplyTo": in_reply_to.map(|fact| fact.to_hex()),
            }),
            VerbCall::Be { operation, payload } => {
                serde_json::json!({"verb": "be", "operation": operation, "payload": payload})
            }
        }
    }

    /// The call on one line, as people read it (`do move / {"to":"/a"}`,
    /// `summon @ada: hello`): the being page's reel, the audit.
    pub fn summary(&self) -> String {
        match self {
            VerbCall::See { address } => format!("see {address}"),
            VerbCall::Do { target, action, args } => format!("do {action} {target} {args}"),
            VerbCall::Summon { target, content, .. } => format!("summon {target}: {content}"),
            VerbCall::Be { operation, payload } => format!("be {operation} {payload}"),
        }
    }

    pub fn verb(&self) -> &'static str {
        match self {
            VerbCall::See { .. } => "see",
            VerbCall::Do { .. } => "do",
            VerbCall::Summon { .. } => "summon",
            VerbCall::Be { .. } => "be",
        }
    }
}

/// A role worn in the moment, with the digest of the definition used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleUse {
    pub name: String,
    pub digest: Hash32,
}

/// Digests of what the moment derived, recomputed by replay. Fields are
/// declared in canonical order (by key length, then bytes), so encoding
/// writes them in place with nothing to sort.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digests {
    pub face: Hash32,
    pub context: Hash32,
    pub composed: Hash32,
    pub script_output: Option<Hash32>,
}

/// The record of one moment that ended in an act. Fields are declared in
/// canonical order (by key length, then bytes): every moment encodes one,
/// and fields that arrive in order are written in place with nothing to sort.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActBody {
    /// The model call of an LLM moment. Absent (not null) otherwise, so acts
    /// of other cognitions encode as they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmRecord>,
    pub call: VerbCall,
    /// An approval gate's part in the act (`crate::approval`): a request
    /// (nothing applied), a decision, a request applied or closed. Absent
    /// (not null) otherwise, so other acts encode as they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<crate::approval::Gate>,
    pub wake: Wake,
    /// A panel's deliberation: every member's call or script output and
    /// proposal, and how one was chosen (`crate::moment::panel`). Absent
    /// (not null) for other cognitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panel: Option<crate::moment::panel::PanelRecord>,
    /// Primary first (if any), then the modifiers, each with its digest.
    pub stack: Vec<RoleUse>,
    /// The MCP tool a DO operation called and what its server answered
    /// (`crate::tools`): replay gives it back instead of calling. Absent
    /// (not null) otherwise, so other acts encode as they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<crate::tools::ToolRecord>,
    /// The budget found spent when the substrate, not the cognition, made
    /// this act: the being's summons to its owner (`crate::spend`). Absent
    /// (not null) otherwise, so other acts encode as they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::spend::BudgetSpent>,
    /// The land cursor the moment opened at.
    pub cursor: u64,
    /// Prose that rode with the call.
    pub content: Option<String>,
    pub digests: Digests,
    pub effects: Vec<Effect>,
    pub primary: Option<String>,
    /// The evaluator that decided the moment (crate version).
    pub evaluator: String,
    /// How important the act is to its being's memory (0 to 10), as the
    /// cognition said or the composed role's `actImportance` set. Absent
    /// (not null) when neither did, so such acts encode as they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<u8>,
    /// The recall query's vector, in a land with an embedding connection
    /// (`crate::embedding`): replay gives it back instead of asking a model.
    /// Absent (not null) otherwise, so other acts encode as they always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_query: Option<crate::embedding::QueryVector>,
    pub orientation: String,
}

impl ActBody {
    /// Every model call the act records: its own, then its panel's members'
    /// and ruler's (what the spend ledger and `seed reel` count).
    pub fn model_calls(&self) -> impl Iterator<Item = &LlmRecord> {
        self.llm.iter().chain(self.panel.iter().flat_map(crate::moment::panel::PanelRecord::calls))
    }
}

/// Administrative effects sealed outside a moment (planting a fixture).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorldBody {
    pub effects: Vec<Effect>,
}

/// What the request asks of the model besides the messages; recorded in the
/// act so replay can rebuild the exact request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmParams {
    pub model: String,
    /// `auto`, `required`, or a verb: force that tool when it is offered.
    pub tool_choice: String,
    /// Sampling temperature in thousandths (facts hold no floats).
    pub temperature_milli: u32,
    pub max_tokens: u32,
}

/// Prices of a connection, in millionths of a currency unit per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prices {
    pub prompt_micros_per_mtok: u64,
    pub completion_micros_per_mtok: u64,
}

/// What an act records of its model call. Never holds a key: connections are
/// named, their keys live in the environment or a key file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmRecord {
    /// The connection that answered (after any failover).
    pub connection: String,
    pub params: LlmParams,
    /// BLAKE3 of the request body sent (replay rebuilds and compares it).
    pub request: Hash32,
    /// The response body as received.
    pub response: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub prices: Prices,
    /// What the call cost at the connection's prices, in millionths.
    pub cost_micros: u64,
}
