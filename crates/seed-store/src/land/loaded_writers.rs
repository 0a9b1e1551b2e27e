//! The writers a land keeps loaded, by being, and a count of the changes to
//! which writer a being has. A round that signs ahead with handles to them
//! (`presign.rs`) keeps its handles for the next round while the count
//! stands still, rather than looking every waking being up again.

use super::Writer;
use crate::fact::BeingId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub(super) struct LoadedWriters {
    by_being: HashMap<BeingId, Arc<Mutex<Writer>>>,
    /// How many times a writer was loaded, replaced or forgotten.
    changes: u64,
}

impl LoadedWriters {
    pub(super) fn get(&self, being: &BeingId) -> Option<&Arc<Mutex<Writer>>> {
        self.by_being.get(being)
    }

    pub(super) fn contains_key(&self, being: &BeingId) -> bool {
        self.by_being.contains_key(being)
    }

    /// Loads `writer` as `being`'s, in place of any it had.
    pub(super) fn insert(&mut self, being: BeingId, writer: Arc<Mutex<Writer>>) {
        self.changes += 1;
        self.by_being.insert(being, writer);
    }

    /// Loads the writer `load` makes as `being`'s, unless it has one.
    pub(super) fn insert_if_absent(&mut self, being: BeingId, load: impl FnOnce() -> Arc<Mutex<Writer>>) {
        if let std::collections::hash_map::Entry::Vacant(vacant) = self.by_being.entry(being) {
            self.changes += 1;
            vacant.insert(load());
        }
    }

    pub(super) fn remove(&mut self, being: &BeingId) {
        if self.by_being.remove(being).is_some() {
            self.changes += 1;
        }
    }

    pub(super) fn clear(&mut self) {
        if !self.by_being.is_empty() {
            self.changes += 1;
            self.by_being.clear();
        }
    }

    pub(super) fn changes(&self) -> u64 {
        self.changes
    }
}
