//! A being's conversation: every summon to and from it, each with the act
//! that answered it in place.
//!
//! Read from the reels, not kept in the world: the being's own recent facts
//! (the summons it sent, the acts it sealed when a summon woke it) and the
//! recent facts of each being it corresponds with (the summons they sent it,
//! their answers to its summons). The work is bounded by what is shown:
//! at most [`CONVERSATION_FACTS_READ_MAX`] facts of each reel, at most
//! [`CONVERSATION_CORRESPONDENTS_MAX`] correspondents, the latest
//! [`CONVERSATION_MESSAGES_SHOWN_MAX`] messages.

use super::error::PortalError;
use crate::fact::{BeingId, FactId};
use crate::store::Store;
use crate::world::body::KIND_ACT;
use crate::world::{ActBody, BeingRow, VerbCall, Wake, World};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};

/// The latest facts of each reel a conversation reads.
pub const CONVERSATION_FACTS_READ_MAX: u64 = 500;
/// Most beings whose reels one conversation reads besides the being's own.
pub const CONVERSATION_CORRESPONDENTS_MAX: usize = 50;
/// The latest messages a conversation shows.
pub const CONVERSATION_MESSAGES_SHOWN_MAX: usize = 100;

/// One act read off a reel, with where it sits in the land order.
struct ReadAct {
    id: FactId,
    land_seq: u64,
    being: BeingId,
    act: ActBody,
}

/// The latest acts of `being`'s reel (at most [`CONVERSATION_FACTS_READ_MAX`] facts read).
fn recent_acts(store: &dyn Store, being: &BeingId) -> Result<Vec<ReadAct>, PortalError> {
    let Some(head) = store.head(being)? else { return Ok(Vec::new()) };
    let from = (head.seq + 1).saturating_sub(CONVERSATION_FACTS_READ_MAX);
    Ok(store
        .reel(being, from, head.seq + 1)?
        .into_iter()
        .filter(|stored| stored.fact.kind() == KIND_ACT && may_concern_a_summon(stored.fact.body()))
        .filter_map(|stored| {
            let act = stored.fact.body_as::<ActBody>().ok()?;
            Some(ReadAct { id: stored.fact.id(), land_seq: stored.land_seq, being: *being, act })
        })
        .collect())
}

/// Whether an act's canonical body could be a summon or an answer to one:
/// both hold the text `summon` (the verb, or the wake's kind), and CBOR
/// keeps text as its UTF-8 bytes. Most acts of a busy land are neither, and
/// this skips decoding them; an act that only mentions the word is decoded
/// and looked at like any other.
fn may_concern_a_summon(body: &[u8]) -> bool {
    body.windows(SUMMON.len()).any(|window| window == SUMMON)
}

const SUMMON: &[u8] = b"summon";

/// The being a summon's target names, if it names one.
fn target_of(world: &World, target: &str) -> Option<BeingId> {
    world.names.get(target.trim_start_matches('@')).copied()
}

/// `row`'s conversation as JSON: `messages` oldest first, each
/// `{summon, landSeq, from, to, content, inReplyTo, direction, reply}` where
/// `direction` is `in` or `out` and `reply` is the act the summoned being
/// sealed when the summon woke it (`{fact, landSeq, by, verb, content}`),
/// or `null` while the summon waits (`pending` says whether it is still in
/// the inbox).
pub fn conversation_json(store: &dyn Store, world: &World, row: &BeingRow) -> Result<Json, PortalError> {
    let own = recent_acts(store, &row.id)?;
    let mut correspondents = BTreeSet::new();
    for read in &own {
        if let VerbCall::Summon { target, .. } = &read.act.call {
            correspondents.extend(target_of(world, target));
        }
        if let Wake::Summon { from, .. } = &read.act.wake {
            correspondents.insert(*from);
        }
    }
    if let Some(inbox) = world.inbox.get(&row.id) {
        correspondents.extend(inbox.values().map(|pending| pending.from));
    }
    correspondents.remove(&row.id);
    let mut acts: Vec<ReadAct> = own;
    for other in correspondents.iter().take(CONVERSATION_CORRESPONDENTS_MAX) {
        acts.extend(recent_acts(store, other)?);
    }
    // Which act answered which summon: the act a summon woke.
    let answers: BTreeMap<FactId, &ReadAct> = acts
        .iter()
        .filter_map(|read| match &read.act.wake {
            Wake::Summon { fact, .. } => Some((*fact, read)),
            _ => None,
        })
        .collect();
    let name = |id: &BeingId| world.name_of(id).map(|name| format!("@{name}"));
    let mut messages: Vec<(u64, Json)> = Vec::new();
    for read in &acts {
        let VerbCall::Summon { target, content, in_reply_to } = &read.act.call else { continue };
        let to = target_of(world, target);
        let direction = if read.being == row.id {
            "out"
        } else if to == Some(row.id) {
            "in"
        } else {
            continue;
        };
        let reply = answers.get(&read.id).map(|answer| {
            json!({"fact": answer.id.to_hex(), "landSeq": answer.land_seq, "by": name(&answer.being),
                   "verb": answer.act.call.verb(), "content": answer_text(world, &answer.act)})
        });
        let pending = to.and_then(|to| world.inbox.get(&to)).is_some_and(|inbox| inbox.contains_key(&read.land_seq));
        messages.push((
            read.land_seq,
            json!({"summon": read.id.to_hex(), "landSeq": read.land_seq, "from": name(&read.being),
                   "to": to.and_then(|to| name(&to)).unwrap_or_else(|| target.clone()), "content": content,
                   "inReplyTo": in_reply_to.map(|fact| fact.to_hex()), "direction": direction,
                   "reply": reply, "pending": pending}),
        ));
    }
    // Each act was read once (the correspondents exclude the being itself).
    messages.sort_by_key(|(land_seq, _)| *land_seq);
    let total = messages.len();
    let shown: Vec<Json> =
        messages.into_iter().skip(total.saturating_sub(CONVERSATION_MESSAGES_SHOWN_MAX)).map(|(_, m)| m).collect();
    Ok(json!({"being": format!("@{}", row.name), "messages": shown, "total": total}))
}

/// What an answer said: a summon's message, or the act's prose, or its verb
/// call in a few words.
fn answer_text(world: &World, act: &ActBody) -> String {
    match (&act.call, &act.content) {
        (VerbCall::Summon { content, .. }, _) => content.clone(),
        (_, Some(content)) => content.clone(),
        _ => super::views::act_summary(world, act),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::Hash32;
    use crate::world::body::{Digests, RoleUse};

    fn body(wake: Wake, call: VerbCall) -> Vec<u8> {
        let act = ActBody {
            llm: None,
            call,
            wake,
            stack: vec![RoleUse { name: "onlooker".into(), digest: Hash32([4; 32]) }],
            budget: None,
            panel: None,
            recall_query: None,
            gate: None,
            tool: None,
            cursor: 7,
            content: None,
            digests: Digests {
                face: Hash32([1; 32]),
                context: Hash32([2; 32]),
                composed: Hash32([3; 32]),
                script_output: None,
            },
            effects: Vec::new(),
            primary: Some("onlooker".into()),
            evaluator: "seed 0.1.0".into(),
            importance: None,
            orientation: "forward".into(),
        };
        crate::canonical::to_canonical_bytes(&act).expect("encodes")
    }

    #[test]
    fn every_summon_and_every_answer_to_one_passes_the_byte_test_before_decoding() {
        let summoned = Wake::Summon { fact: FactId([9; 32]), from: BeingId([8; 32]) };
        let see = VerbCall::See { address: "/north".into() };
        let summon = VerbCall::Summon { target: "@bo".into(), content: "hi".into(), in_reply_to: None };
        let mention = VerbCall::Do { target: "/".into(), action: "note".into(), args: serde_json::json!("summon") };
        // (wake, call, may concern a summon)
        for (wake, call, expected) in [
            (Wake::Tick { tick: 3 }, see.clone(), false),
            (Wake::Signal { key: "bell".into() }, see.clone(), false),
            (summoned.clone(), see, true),
            (Wake::Tick { tick: 3 }, summon.clone(), true),
            (summoned, summon, true),
            // Only a mention: decoded, then found to be neither.
            (Wake::Tick { tick: 3 }, mention, true),
        ] {
            assert_eq!(may_concern_a_summon(&body(wake.clone(), call.clone())), expected, "{wake:?} {call:?}");
        }
    }
}
