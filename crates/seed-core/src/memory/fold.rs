//! One being's memory folded from the land's acts, in land order: its own
//! acts (a note as a note), and the summons other beings sent it. A pure
//! fold, like the world's: the caller reads the facts (`seed memory` reads
//! the land log up to a cursor).

use super::note::{Note, BE_NOTE};
use super::recall::{BeingMemory, MemoryError, MemoryKind, Remembered};
use crate::fact::{BeingId, FactId};
use crate::world::{ActBody, VerbCall};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// One being's memory, and what its notes said besides their text.
#[derive(Debug, Clone, Default)]
pub struct MemoryFold {
    being: BeingId,
    name: String,
    pub memory: BeingMemory,
    /// Each note's reading: what it superseded and why.
    pub notes: BTreeMap<FactId, Note>,
    /// Notes whose `supersedes` folded nothing, with why.
    pub problems: Vec<(FactId, MemoryError)>,
}

impl MemoryFold {
    pub fn of(being: BeingId, name: &str) -> MemoryFold {
        MemoryFold { being, name: name.trim_start_matches('@').to_string(), ..MemoryFold::default() }
    }

    /// Folds one sealed act by `actor` (named `actor_name`), fact `id` at `land_seq`.
    pub fn apply_act(&mut self, land_seq: u64, actor: BeingId, actor_name: &str, id: FactId, act: &ActBody) {
        let remembered = remembered_of_act(land_seq, actor_name, id, act);
        if actor == self.being {
            let refused = remember_own(&mut self.memory, remembered.by_actor, remembered.note.as_ref(), id, land_seq);
            self.problems.extend(refused.into_iter().map(|problem| (id, problem)));
            if let Some(note) = remembered.note {
                self.notes.insert(id, note);
            }
            return;
        }
        if let Some((target, summons)) = remembered.by_summoned {
            if target == self.name {
                self.remember(summons);
            }
        }
    }

    fn remember(&mut self, item: Remembered) {
        let fact = item.fact;
        if let Err(problem) = self.memory.remember(item) {
            self.problems.push((fact, problem));
        }
    }
}

/// What one sealed act gives the memories of the beings it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActRemembered {
    /// The act, as its actor remembers it (a note as a note).
    pub by_actor: Remembered,
    /// The note's reading, when the act wrote one.
    pub note: Option<Note>,
    /// The summoned being's name (without `@`) and the summons as it
    /// remembers it, when the act summoned another being.
    pub by_summoned: Option<(String, Remembered)>,
}

/// What the act `id` (by the being named `actor_name`, at `land_seq`)
/// leaves in memory: the one reading of an act that the world's fold and
/// `seed memory`'s share.
pub fn remembered_of_act(land_seq: u64, actor_name: &str, id: FactId, act: &ActBody) -> ActRemembered {
    let note = match &act.call {
        VerbCall::Be { operation, payload } if operation == BE_NOTE => Note::from_payload(payload).ok(),
        _ => None,
    };
    let by_actor = match &note {
        Some(note) => Remembered {
            fact: id,
            land_seq,
            kind: MemoryKind::Note,
            importance: note.importance,
            text: note.text.clone(),
        },
        None => Remembered {
            fact: id,
            land_seq,
            kind: MemoryKind::Act,
            importance: act.importance.unwrap_or(0),
            text: gated_text(act, act_text(&act.call, act.content.as_deref())),
        },
    };
    let applied = crate::approval::Gate::call_applied(act.gate.as_ref());
    let by_summoned = match &act.call {
        VerbCall::Summon { target, content, .. } if applied && target.trim_start_matches('@') != actor_name => {
            let text = format!("@{actor_name}: {content}");
            let summons = Remembered { fact: id, land_seq, kind: MemoryKind::Summons, importance: 0, text };
            Some((target.trim_start_matches('@').to_string(), summons))
        }
        _ => None,
    };
    ActRemembered { by_actor, note, by_summoned }
}

/// Characters of an MCP tool's answer an act's memory keeps.
pub const TOOL_RESULT_REMEMBERED_CHARS_MAX: usize = 500;

/// An act's text as its being remembers it: a gated call it only asked
/// for, or that was closed unapplied, says so; a tool's answer follows its call.
fn gated_text(act: &ActBody, text: String) -> String {
    let text = match &act.tool {
        Some(record) => {
            let answer: String = record.result_text().chars().take(TOOL_RESULT_REMEMBERED_CHARS_MAX).collect();
            format!("{text} → {answer}")
        }
        None => text,
    };
    match &act.gate {
        Some(crate::approval::Gate::Request(_)) => format!("asked approval to {text}"),
        Some(crate::approval::Gate::Closed { outcome, .. }) => format!("not done ({outcome}): {text}"),
        _ => text,
    }
}

/// Folds the actor's own item of the act `id` into its memory: the item,
/// then what its note supersedes and what it covers (a reflection). Returns
/// what memory refused, for `seed memory` to list; the world's fold, which
/// cannot fail, keeps none of it.
pub fn remember_own(
    memory: &mut BeingMemory,
    by_actor: Remembered,
    note: Option<&Note>,
    id: FactId,
    land_seq: u64,
) -> Vec<MemoryError> {
    let mut refused = Vec::new();
    refused.extend(memory.remember(by_actor).err());
    if let Some(note) = note {
        if let Some(earlier) = note.supersedes {
            refused.extend(memory.supersede(earlier, id, land_seq).err());
        }
        if !note.covers.is_empty() {
            refused.extend(memory.reflect(id, land_seq, &note.covers));
        }
    }
    refused
}

/// What an act did, as the text memory keeps of it.
pub fn act_text(call: &VerbCall, prose: Option<&str>) -> String {
    let compact = |value: &Json| match value {
        Json::Object(map) if map.is_empty() => String::new(),
        Json::Null => String::new(),
        other => format!(" {other}"),
    };
    let what = match call {
        VerbCall::See { address } => format!("looked at {address}"),
        VerbCall::Do { target, action, args } => format!("did {action} at {target}{}", compact(args)),
        VerbCall::Summon { target, content, .. } => format!("summoned {target}: {content}"),
        VerbCall::Be { operation, payload } => format!("be {operation}{}", compact(payload)),
    };
    match prose.filter(|prose| !prose.trim().is_empty()) {
        Some(prose) => format!("{what}; {prose}"),
        None => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::body::{Digests, Wake};
    use serde_json::json;

    fn act(call: VerbCall) -> ActBody {
        ActBody {
            llm: None,
            call,
            wake: Wake::Person,
            stack: Vec::new(),
            budget: None,
            panel: None,
            recall_query: None,
            gate: None,
            tool: None,
            cursor: 0,
            content: None,
            digests: Digests {
                face: Default::default(),
                context: Default::default(),
                composed: Default::default(),
                script_output: None,
            },
            effects: Vec::new(),
            primary: None,
            evaluator: "test".into(),
            importance: None,
            orientation: "forward".into(),
        }
    }

    #[test]
    fn a_being_remembers_its_acts_its_notes_and_the_summons_sent_to_it() {
        let (ada, bob) = (BeingId([1; 32]), BeingId([2; 32]));
        let mut fold = MemoryFold::of(ada, "@ada");
        let summon =
            |target: &str| VerbCall::Summon { target: target.into(), content: "5 coins?".into(), in_reply_to: None };
        let note = |payload: Json| VerbCall::Be { operation: BE_NOTE.into(), payload };
        fold.apply_act(1, bob, "bob", FactId([10; 32]), &act(summon("@ada")));
        fold.apply_act(2, bob, "bob", FactId([11; 32]), &act(summon("@cy")));
        fold.apply_act(3, ada, "ada", FactId([12; 32]), &act(summon("@bob")));
        fold.apply_act(4, ada, "ada", FactId([13; 32]), &act(note(json!({"text": "bob cheats", "importance": 8}))));
        let supersedes = json!({"text": "bob paid", "supersedes": FactId([13; 32]).to_hex(), "why": "coins back"});
        fold.apply_act(5, ada, "ada", FactId([14; 32]), &act(note(supersedes)));
        // A note citing an act, not a note: kept, but it supersedes nothing.
        let wrong = json!({"text": "oops", "supersedes": FactId([12; 32]).to_hex()});
        fold.apply_act(6, ada, "ada", FactId([15; 32]), &act(note(wrong)));
        assert_eq!(fold.memory.len(), 5, "bob's summons to @cy is not ada's");
        assert_eq!(fold.memory.superseded_by(&FactId([13; 32]), 6), Some(FactId([14; 32])));
        assert_eq!(fold.memory.superseded_by(&FactId([12; 32]), 7), None);
        assert_eq!(
            fold.problems,
            vec![(
                FactId([15; 32]),
                MemoryError::NotAnEarlierNote { fact: FactId([15; 32]), earlier: FactId([12; 32]) }
            )]
        );
        let texts: Vec<String> =
            fold.memory.items(7).map(|item| format!("{}:{}", item.kind.as_str(), item.text)).collect();
        assert_eq!(
            texts,
            ["summons:@bob: 5 coins?", "act:summoned @bob: 5 coins?", "note:bob cheats", "note:bob paid", "note:oops"]
        );
    }

    #[test]
    fn act_texts_say_what_was_done() {
        let check = |call: VerbCall, prose: Option<&str>, expected: &str| {
            assert_eq!(act_text(&call, prose), expected);
        };
        check(VerbCall::See { address: "/hall".into() }, None, "looked at /hall");
        check(
            VerbCall::Do { target: "/market".into(), action: "trade".into(), args: json!({"with": "@bob"}) },
            Some("a fair price"),
            "did trade at /market {\"with\":\"@bob\"}; a fair price",
        );
        check(VerbCall::Be { operation: "release".into(), payload: json!({}) }, None, "be release");
    }
}
