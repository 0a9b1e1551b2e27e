//! An act body's canonical bytes, written field by field for the shapes
//! nearly every act has.
//!
//! Every moment that acts encodes its body, and land replay encodes every
//! recomputed act to compare it with the stored bytes. Through serde each
//! map gathers its entries' offsets and checks their order, and each tagged
//! enum goes through serde's tagging adapter; here the keys are written in
//! canonical order (by length, then bytes) from the start. A body of any
//! other shape (a do or be call, effects, a model record) is left to the
//! serde encoder: [`write_common`] gives its bytes or gives up.
//!
//! A wake is written the same way ([`write_wake`]). In debug builds
//! `ActBody::canonical` compares the bytes written here with the serde
//! encoder's (and a moment's opening does the same for its wake), so every
//! test moment holds this path to serde's bytes.

use super::body::{ActBody, Digests, RoleUse, VerbCall, Wake};
use crate::canonical::{write_array_head, write_bytes, write_map_head, write_null, write_text, write_uint};
use crate::fact::{CanonicalBody, FactError};

/// Bytes reserved up front for an act body (most fit).
const ACT_BODY_BYTES_RESERVED: usize = 512;

impl ActBody {
    /// The body's canonical bytes (what `CanonicalBody::encode` gives).
    pub fn canonical(&self) -> Result<CanonicalBody, FactError> {
        match write_common(self) {
            Some(bytes) => {
                // Every test moment holds the direct bytes to serde's.
                debug_assert_eq!(Ok(&bytes), crate::canonical::to_canonical_bytes(self).as_ref());
                Ok(CanonicalBody::canonical_by_construction(bytes))
            }
            None => CanonicalBody::encode(self),
        }
    }
}

/// The canonical bytes of a body of a common shape, `None` for the others.
pub(crate) fn write_common(body: &ActBody) -> Option<Vec<u8>> {
    if body.llm.is_some()
        || body.budget.is_some()
        || body.panel.is_some()
        || body.recall_query.is_some()
        || body.gate.is_some()
        || body.tool.is_some()
        || !body.effects.is_empty()
    {
        return None;
    }
    let mut out = Vec::with_capacity(ACT_BODY_BYTES_RESERVED);
    let out = &mut out;
    // `llm` and `importance` are left out when absent; the rest in
    // canonical key order.
    write_map_head(10 + usize::from(body.importance.is_some()), out);
    write_text("call", out);
    write_call(&body.call, out)?;
    write_text("wake", out);
    write_wake(&body.wake, out);
    write_text("stack", out);
    write_stack(&body.stack, out);
    write_text("cursor", out);
    write_uint(body.cursor, out);
    write_text("content", out);
    write_optional_text(body.content.as_deref(), out);
    write_text("digests", out);
    write_digests(&body.digests, out);
    write_text("effects", out);
    write_array_head(0, out);
    write_text("primary", out);
    write_optional_text(body.primary.as_deref(), out);
    write_text("evaluator", out);
    write_text(&body.evaluator, out);
    if let Some(importance) = body.importance {
        write_text("importance", out);
        write_uint(u64::from(importance), out);
    }
    write_text("orientation", out);
    write_text(&body.orientation, out);
    Some(std::mem::take(out))
}

fn write_optional_text(text: Option<&str>, out: &mut Vec<u8>) {
    match text {
        Some(text) => write_text(text, out),
        None => write_null(out),
    }
}

/// A see or summon call (`None` for a do or be call, whose JSON serde writes).
fn write_call(call: &VerbCall, out: &mut Vec<u8>) -> Option<()> {
    match call {
        VerbCall::See { address } => {
            write_map_head(2, out);
            write_text("verb", out);
            write_text("see", out);
            write_text("address", out);
            write_text(address, out);
        }
        VerbCall::Summon { target, content, in_reply_to } => {
            write_map_head(4, out);
            write_text("verb", out);
            write_text("summon", out);
            write_text("target", out);
            write_text(target, out);
            write_text("content", out);
            write_text(content, out);
            write_text("in_reply_to", out);
            match in_reply_to {
                Some(fact) => write_bytes(&fact.0, out),
                None => write_null(out),
            }
        }
        VerbCall::Do { .. } | VerbCall::Be { .. } => return None,
    }
    Some(())
}

/// A wake's canonical bytes (what `canonical::to_canonical_bytes` writes):
/// its tag `kind` and its variant's fields, in canonical order.
pub(crate) fn write_wake(wake: &Wake, out: &mut Vec<u8>) {
    match wake {
        Wake::Tick { tick } => {
            write_map_head(2, out);
            write_text("kind", out);
            write_text("tick", out);
            write_text("tick", out);
            write_uint(*tick, out);
        }
        Wake::Signal { key } => {
            write_map_head(2, out);
            write_text("key", out);
            write_text(key, out);
            write_text("kind", out);
            write_text("signal", out);
        }
        Wake::Summon { fact, from } => {
            write_map_head(3, out);
            write_text("fact", out);
            write_bytes(&fact.0, out);
            write_text("from", out);
            write_bytes(&from.0, out);
            write_text("kind", out);
            write_text("summon", out);
        }
        Wake::SelfContinue | Wake::Person => {
            write_map_head(1, out);
            write_text("kind", out);
            write_text(if matches!(wake, Wake::Person) { "person" } else { "self-continue" }, out);
        }
        Wake::Cascade { arrival } => {
            write_map_head(2, out);
            write_text("kind", out);
            write_text("cascade", out);
            write_text("arrival", out);
            write_bytes(&arrival.0, out);
        }
        Wake::Approval { request, decision } => {
            write_map_head(3, out);
            write_text("kind", out);
            write_text("approval", out);
            write_text("request", out);
            write_bytes(&request.0, out);
            write_text("decision", out);
            match decision {
                Some(fact) => write_bytes(&fact.0, out),
                None => write_null(out),
            }
        }
    }
}

fn write_stack(stack: &[RoleUse], out: &mut Vec<u8>) {
    write_array_head(stack.len() as u64, out);
    for role in stack {
        write_map_head(2, out);
        write_text("name", out);
        write_text(&role.name, out);
        write_text("digest", out);
        write_bytes(&role.digest.0, out);
    }
}

fn write_digests(digests: &Digests, out: &mut Vec<u8>) {
    write_map_head(4, out);
    write_text("face", out);
    write_bytes(&digests.face.0, out);
    write_text("context", out);
    write_bytes(&digests.context.0, out);
    write_text("composed", out);
    write_bytes(&digests.composed.0, out);
    write_text("script_output", out);
    match &digests.script_output {
        Some(digest) => write_bytes(&digest.0, out),
        None => write_null(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::{BeingId, FactId, Hash32};
    use crate::world::body::Effect;
    use serde_json::json;

    fn act(wake: Wake, call: VerbCall) -> ActBody {
        ActBody {
            llm: None,
            call,
            wake,
            stack: vec![
                RoleUse { name: "onlooker".into(), digest: Hash32([4; 32]) },
                RoleUse { name: "emotions:bored".into(), digest: Hash32([6; 32]) },
            ],
            budget: None,
            panel: None,
            recall_query: None,
            gate: None,
            tool: None,
            cursor: 1006,
            content: None,
            digests: Digests {
                face: Hash32([1; 32]),
                context: Hash32([2; 32]),
                composed: Hash32([3; 32]),
                script_output: Some(Hash32([5; 32])),
            },
            effects: Vec::new(),
            primary: Some("onlooker".into()),
            evaluator: "seed 0.1.0".into(),
            importance: None,
            orientation: "forward".into(),
        }
    }

    /// The direct bytes, where it does not give up, are serde's; `direct`
    /// says whether it is expected not to.
    fn check(body: &ActBody, direct: bool) {
        let by_serde = crate::canonical::to_canonical_bytes(body).expect("encodes");
        match write_common(body) {
            Some(bytes) => {
                assert_eq!(bytes, by_serde, "{body:?}");
                assert!(direct, "written directly, expected to be left to serde: {body:?}");
            }
            None => assert!(!direct, "left to serde, expected to be written directly: {body:?}"),
        }
        assert_eq!(body.canonical().expect("encodes").as_bytes(), by_serde.as_slice());
    }

    #[test]
    fn common_act_bodies_are_written_as_serde_writes_them() {
        let id = FactId([9; 32]);
        let wakes = [
            Wake::Tick { tick: 0 },
            Wake::Tick { tick: 70_000 },
            Wake::Signal { key: "bell".into() },
            Wake::Summon { fact: id, from: BeingId([8; 32]) },
            Wake::Cascade { arrival: id },
            Wake::SelfContinue,
            Wake::Person,
            Wake::Approval { request: id, decision: None },
            Wake::Approval { request: id, decision: Some(FactId([9; 32])) },
        ];
        let calls = [
            VerbCall::See { address: "/north".into() },
            VerbCall::Summon { target: "@bo".into(), content: "hi".into(), in_reply_to: None },
            VerbCall::Summon { target: "@bo".into(), content: "x".repeat(300), in_reply_to: Some(id) },
        ];
        for wake in &wakes {
            let mut bytes = Vec::new();
            write_wake(wake, &mut bytes);
            assert_eq!(bytes, crate::canonical::to_canonical_bytes(wake).expect("encodes"), "{wake:?}");
            for call in &calls {
                let mut body = act(wake.clone(), call.clone());
                check(&body, true);
                body.content = Some("prose".into());
                body.primary = None;
                body.stack.clear();
                body.digests.script_output = None;
                body.cursor = u64::MAX;
                check(&body, true);
                // An act with an importance writes it between `evaluator` and `orientation`.
                for importance in [0, 7, 10] {
                    body.importance = Some(importance);
                    check(&body, true);
                }
            }
        }
        // Other shapes are serde's to write.
        let wake = Wake::Tick { tick: 1 };
        check(
            &act(wake.clone(), VerbCall::Do { target: "/".into(), action: "take".into(), args: json!({"n": 1}) }),
            false,
        );
        check(&act(wake.clone(), VerbCall::Be { operation: "birth".into(), payload: json!({}) }), false);
        let mut with_effects = act(wake, VerbCall::See { address: "/".into() });
        with_effects.effects.push(Effect::Release { being: "bo".into() });
        check(&with_effects, false);
    }
}
