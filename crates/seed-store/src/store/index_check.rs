//! Comparing a backend's derived indexes with what verification derived from
//! the facts (`Store::index_problems`): the checks the log store and the
//! PostgreSQL store share, in the order they report them (the land log met
//! in land-seq order, then names, fork markers and keys), with the same
//! words for every problem and at most [`INDEX_PROBLEMS_LISTED_MAX`] listed.

use crate::fact::BeingId;
use crate::store::DerivedIndexes;
use std::collections::BTreeSet;
use std::iter::Peekable;

/// Most index discrepancies `index_problems` lists, on every backend.
pub(crate) const INDEX_PROBLEMS_LISTED_MAX: usize = 50;

type Wanted<'a> = Peekable<Box<dyn Iterator<Item = (&'a u64, &'a (BeingId, u64))> + 'a>>;

pub(crate) struct IndexComparison<'a> {
    expected: &'a DerivedIndexes,
    /// The land log entries still to meet (of beings not skipped).
    wanted: Wanted<'a>,
    problems: Vec<String>,
}

impl<'a> IndexComparison<'a> {
    pub(crate) fn new(expected: &'a DerivedIndexes) -> IndexComparison<'a> {
        let entries = expected.land_log.iter().filter(|(_, (being, _))| !expected.skip.contains(being));
        let wanted: Box<dyn Iterator<Item = _> + 'a> = Box::new(entries);
        IndexComparison { expected, wanted: wanted.peekable(), problems: Vec::new() }
    }

    /// Whether `being`'s entries are compared (its reel has no problems of its own).
    fn kept(&self, being: &BeingId) -> bool {
        !self.expected.skip.contains(being)
    }

    pub(crate) fn problem(&mut self, problem: String) {
        if self.problems.len() < INDEX_PROBLEMS_LISTED_MAX {
            self.problems.push(problem);
        }
    }

    /// The stored land log entry at `land_seq`, met in land-seq order
    /// (`None`: the store holds the slot but cannot say whose fact it is).
    pub(crate) fn land_log_entry(&mut self, land_seq: u64, stored: Option<(BeingId, u64)>) {
        while let Some((missing, _)) = self.wanted.next_if(|(wanted_seq, _)| **wanted_seq < land_seq) {
            self.problem(format!("land log entry {missing} is missing"));
        }
        match (self.wanted.next_if(|(wanted_seq, _)| **wanted_seq == land_seq), stored) {
            (Some((_, wanted)), Some(stored)) if *wanted != stored => {
                self.problem(format!("land log entry {land_seq} is wrong"))
            }
            (Some(_), None) => self.problem(format!("land log entry {land_seq} is missing")),
            (None, Some((being, _))) if self.kept(&being) => {
                self.problem(format!("land log entry {land_seq} should not exist"))
            }
            _ => {}
        }
    }

    /// Once every stored land log entry was met: the wanted ones left are missing.
    pub(crate) fn land_log_read(&mut self) {
        while let Some((missing, _)) = self.wanted.next() {
            self.problem(format!("land log entry {missing} is missing"));
        }
    }

    /// The stored name index and fork markers.
    pub(crate) fn names_and_forks(&mut self, names: &BTreeSet<(String, BeingId)>, forked: &BTreeSet<BeingId>) {
        let expected = self.expected;
        let kept = |being: &BeingId| !expected.skip.contains(being);
        for entry in expected.names.iter().filter(|entry| kept(&entry.1) && !names.contains(*entry)) {
            self.problem(format!("name index {:?} is missing", entry.0));
        }
        for entry in names.iter().filter(|entry| kept(&entry.1) && !expected.names.contains(*entry)) {
            self.problem(format!("name index {:?} should not exist", entry.0));
        }
        if *forked != expected.forked {
            self.problem("fork marker is wrong".to_string());
        }
    }

    /// The key index entry of `being`: `wrong` (mismatched or absent) or present where none should be.
    pub(crate) fn key_entry_wrong(&mut self, being: &BeingId) {
        self.problem(format!("key index entry of {} is wrong", short(being)));
    }

    pub(crate) fn key_entry_unexpected(&mut self, being: &BeingId) {
        self.problem(format!("key index entry of {} should not exist", short(being)));
    }

    pub(crate) fn into_problems(self) -> Vec<String> {
        self.problems
    }
}

fn short(being: &BeingId) -> String {
    hex::encode(being.as_bytes()).get(..12).unwrap_or("?").to_string()
}
