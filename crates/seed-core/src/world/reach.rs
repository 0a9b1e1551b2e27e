//! How far a fact's fold reaches into the world, told from its bytes: what
//! lets a replay of one being fold only the facts its moments can read.
//!
//! A being's *activity* is the part of its row its acts keep (`acts`,
//! `last_act_ms`, `previous_role`), its `recent_summons` and what its own
//! acts leave in its memory (`World::memories`). Only the
//! being's own moments read it: the open context, the face, the see
//! resolvers, the hooks, DO operations and the seal-time rules read other
//! beings' names, places, qualities, cognition and lineage, never their
//! activity (docs/ARCHITECTURE.md lists this invariant; the replay tests
//! compare a replay that folds every fact with one that does not).
//!
//! Most acts change nothing else: no effects, no summon sent, none answered.
//! [`changes_only_its_actors_activity`] finds them without checking or
//! decoding the fact, so it can run over a whole land in a fraction of the
//! fold's time. It is conservative: `true` only where the body certainly
//! reads (or fails to read) as such an act.

use super::body::KIND_ACT;
use crate::canonical::{next_key_in_order, set_once, CanonicalReader};
use crate::fact::Fact;

/// Whether folding the fact of `envelope` changes nothing but its actor's
/// activity: an act with no effects and no model call (which the land's
/// spend counts) whose call is not a summon and that no summon woke. Nothing is checked (not the body's hash, not its form, not
/// the signature): an envelope that is damaged folds nothing at all when it
/// is read in full, which changes the world no more than this says. `false`
/// wherever the bytes do not plainly read as such an act.
pub fn changes_only_its_actors_activity(envelope: &[u8]) -> bool {
    match Fact::peek_kind_and_body(envelope) {
        Some((kind, body)) => kind == KIND_ACT && act_changes_only_its_actors_activity(body),
        None => false,
    }
}

/// [`changes_only_its_actors_activity`] for an act's body.
pub fn act_changes_only_its_actors_activity(body: &[u8]) -> bool {
    act_reach(body).unwrap_or(false)
}

/// `Some(true)` for an act body with no effects, a call that is not a
/// summon and a wake that is not one; `None` where the bytes do not read
/// plainly (a repeated key, keys out of order, an unknown verb or wake, a
/// malformed item).
fn act_reach(body: &[u8]) -> Option<bool> {
    let mut reader = CanonicalReader::new(body);
    let (mut call_is_summon, mut woken_by_summon, mut effects) = (None, None, None);
    let mut previous_key: Option<&[u8]> = None;
    for _ in 0..reader.map_head()? {
        // Keys rise in canonical order, so once the three are read no later
        // key repeats one: the rest is not read. A body whose keys do not
        // rise is not canonical, and the fold reads it as nothing at all.
        match next_key_in_order(&mut reader, &mut previous_key)? {
            b"call" => set_once(&mut call_is_summon, tagged_is_summon(&mut reader, b"verb", CALL_VERBS)?)?,
            b"wake" => set_once(&mut woken_by_summon, tagged_is_summon(&mut reader, b"kind", WAKE_KINDS)?)?,
            b"effects" => set_once(&mut effects, reader.array_head()?)?,
            // A model call is counted in the land's and its role's spend,
            // which every being's budget check reads.
            b"llm" | b"panel" => return Some(false),
            // An approval gate's part changes the land's pending requests.
            b"gate" => return Some(false),
            _ => {
                if !reader.skip_heads() {
                    return None;
                }
            }
        }
        // An effect is read whole only by the fold: once one is there, the
        // answer is known.
        if effects.is_some_and(|count| count > 0) {
            return Some(false);
        }
        if let (Some(call_is_summon), Some(woken_by_summon), Some(_)) = (call_is_summon, woken_by_summon, effects) {
            return Some(!call_is_summon && !woken_by_summon);
        }
    }
    None
}

/// The verbs an act's call is tagged with (`VerbCall`'s wire names).
const CALL_VERBS: &[&[u8]] = &[b"see", b"do", b"summon", b"be"];
/// The kinds a wake is tagged with (`Wake`'s wire names).
const WAKE_KINDS: &[&[u8]] = &[b"summon", b"signal", b"tick", b"self-continue", b"person"];

/// Reads a map tagged by `tag_key` and says whether its tag is `summon`;
/// `None` if it has no such tag, has it twice, or the tag is not one of `known`.
fn tagged_is_summon(reader: &mut CanonicalReader<'_>, tag_key: &[u8], known: &[&[u8]]) -> Option<bool> {
    let mut tag = None;
    for _ in 0..reader.map_head()? {
        if reader.text_bytes()? == tag_key {
            // Compared with known names (UTF-8), so not checked as text.
            set_once(&mut tag, reader.text_bytes()?)?;
        } else if !reader.skip_heads() {
            return None;
        }
    }
    let tag = tag.filter(|tag| known.contains(tag))?;
    Some(tag == b"summon")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::{FactId, Hash32};
    use crate::world::body::{Digests, Effect, VerbCall, Wake};
    use crate::world::ActBody;

    fn act(call: VerbCall, wake: Wake, effects: Vec<Effect>) -> ActBody {
        let digest = Hash32([7; 32]);
        ActBody {
            llm: None,
            call,
            wake,
            stack: Vec::new(),
            budget: None,
            panel: None,
            recall_query: None,
            gate: None,
            tool: None,
            cursor: 12,
            content: Some("hello".into()),
            digests: Digests { face: digest, context: digest, composed: digest, script_output: None },
            effects,
            primary: Some("onlooker".into()),
            evaluator: "test".into(),
            importance: None,
            orientation: "looking".into(),
        }
    }

    /// An act whose model call the land's spend counts (`crate::spend`).
    fn with_model_call(mut body: ActBody) -> ActBody {
        body.llm = Some(crate::llm::LlmRecord {
            connection: "local".into(),
            params: crate::llm::LlmParams {
                model: "m".into(),
                tool_choice: "auto".into(),
                temperature_milli: 0,
                max_tokens: 10,
            },
            request: Hash32([3; 32]),
            response: "{}".into(),
            prompt_tokens: 5,
            completion_tokens: 2,
            prices: crate::llm::Prices::default(),
            cost_micros: 0,
        });
        body
    }

    fn see() -> VerbCall {
        VerbCall::See { address: "/north".into() }
    }

    fn check(body: &ActBody, expected: bool) {
        let bytes = crate::canonical::to_canonical_bytes(body).expect("an act encodes");
        assert_eq!(act_changes_only_its_actors_activity(&bytes), expected, "{body:?}");
    }

    #[test]
    fn acts_that_change_only_their_actor_are_told_from_those_that_reach_further() {
        let summon_wake = Wake::Summon { fact: FactId([1; 32]), from: crate::fact::BeingId([2; 32]) };
        let summon_call = VerbCall::Summon { target: "@ada".into(), content: "hi".into(), in_reply_to: None };
        let moved = Effect::MoveBeing { being: "ada".into(), to: "/south".into() };
        let cases = [
            (act(see(), Wake::Tick { tick: 3 }, Vec::new()), true),
            (act(see(), Wake::SelfContinue, Vec::new()), true),
            (act(see(), Wake::Person, Vec::new()), true),
            (act(see(), Wake::Signal { key: "weather.rain".into() }, Vec::new()), true),
            (
                act(
                    VerbCall::Be { operation: "rest".into(), payload: serde_json::json!({}) },
                    Wake::Person,
                    Vec::new(),
                ),
                true,
            ),
            (act(see(), summon_wake.clone(), Vec::new()), false),
            (act(summon_call.clone(), Wake::Tick { tick: 3 }, Vec::new()), false),
            (act(see(), Wake::Tick { tick: 3 }, vec![moved.clone()]), false),
            (act(summon_call, summon_wake, vec![moved]), false),
            (with_model_call(act(see(), Wake::Tick { tick: 3 }, Vec::new())), false),
        ];
        for (body, expected) in &cases {
            check(body, *expected);
        }
    }

    /// What the answer promises: bytes said to change only their actor read
    /// (as the fold reads them) as such an act, or not at all.
    fn promise_holds(bytes: &[u8]) -> bool {
        !act_changes_only_its_actors_activity(bytes)
            || crate::canonical::from_canonical_bytes::<ActBody>(bytes).map_or(true, |read| {
                read.effects.is_empty()
                    && read.llm.is_none()
                    && !matches!(read.call, VerbCall::Summon { .. })
                    && !matches!(read.wake, Wake::Summon { .. })
            })
    }

    #[test]
    fn bytes_cut_short_or_flipped_never_break_the_promise() {
        let summon_call = VerbCall::Summon { target: "@ada".into(), content: "hi".into(), in_reply_to: None };
        let moved = Effect::MoveBeing { being: "ada".into(), to: "/south".into() };
        for body in [
            act(see(), Wake::Tick { tick: 3 }, Vec::new()),
            act(summon_call, Wake::Tick { tick: 3 }, Vec::new()),
            act(see(), Wake::Person, vec![moved]),
        ] {
            let bytes = crate::canonical::to_canonical_bytes(&body).unwrap();
            for cut in 0..bytes.len() {
                assert!(promise_holds(&bytes[..cut]), "{body:?} cut at {cut}");
            }
            for at in 0..bytes.len() {
                for bit in 0..8 {
                    let mut flipped = bytes.clone();
                    flipped[at] ^= 1 << bit;
                    assert!(promise_holds(&flipped), "{body:?}: byte {at} bit {bit}");
                }
            }
        }
        assert!(!changes_only_its_actors_activity(&[]));
    }

    /// A map of `call`, `wake` and the `effects` entries given (each a count of effects).
    fn act_map(verb: &str, wake: &str, effects: &[u64]) -> Vec<u8> {
        use crate::canonical::{write_array_head, write_map_head, write_text};
        let mut out = Vec::new();
        write_map_head(2 + effects.len(), &mut out);
        for (key, tag_key, tag) in [("call", "verb", verb), ("wake", "kind", wake)] {
            write_text(key, &mut out);
            write_map_head(1, &mut out);
            write_text(tag_key, &mut out);
            write_text(tag, &mut out);
        }
        for count in effects {
            write_text("effects", &mut out);
            write_array_head(*count, &mut out);
            for _ in 0..*count {
                write_map_head(0, &mut out);
            }
        }
        out
    }

    #[test]
    fn a_missing_unknown_or_out_of_order_field_reaches_anywhere() {
        let cases = [
            (act_map("see", "tick", &[0]), true),
            // Read no further than `effects`: a body that repeats it is not
            // canonical, and the fold reads it as nothing at all.
            (act_map("see", "tick", &[0, 0]), true),
            (act_map("see", "tick", &[1, 0]), false),
            (act_map("see", "tick", &[]), false),
            (act_map("wave", "tick", &[0]), false),
            (act_map("see", "dream", &[0]), false),
            (act_map("summon", "tick", &[0]), false),
            (act_map("see", "summon", &[0]), false),
            (act_map("see", "tick", &[1]), false),
        ];
        for (bytes, expected) in &cases {
            assert_eq!(act_changes_only_its_actors_activity(bytes), *expected, "{bytes:02x?}");
            assert!(promise_holds(bytes), "{bytes:02x?}");
        }
        // `wake` before `call`: keys out of canonical order.
        let in_order = act_map("see", "tick", &[0]);
        let call_len = 1 + 4 + 1 + 1 + 4 + 1 + 3;
        let (call, rest) = in_order[1..].split_at(call_len);
        let wake_len = 1 + 4 + 1 + 1 + 4 + 1 + 4;
        let (wake, effects) = rest.split_at(wake_len);
        let out_of_order = [&in_order[..1], wake, call, effects].concat();
        assert_eq!(out_of_order.len(), in_order.len());
        assert!(!act_changes_only_its_actors_activity(&out_of_order));
    }
}
