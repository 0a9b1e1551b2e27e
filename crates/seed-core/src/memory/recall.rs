//! A being's memory index and recall over it: ranking in integers only, as
//! of any cursor (docs/memory.md).
//!
//! The index is append-only and in land order: each remembered item (an act,
//! a summons received, a note) is a document with its land seq, and each
//! term's postings list the documents holding it in the order they came.
//! A memory of fewer than `RECALL_INDEXED_FROM_ITEMS` items keeps no
//! postings: a recall reads its few texts instead, with the same scores
//! (a million beings of a few acts each would otherwise hold a term map
//! each; `recall_by_scanning_scores_as_the_index_does` holds the two
//! paths to one answer).
//! Its lists and maps are persistent (`imbl`): every clone of the world (one
//! per round) shares them, and a fold copies only the path it changes. A
//! recall at cursor `c` reads only the documents below `c` (a binary search
//! cuts every list), so it is a pure function of the reel's prefix, and its
//! cost grows with the postings of the query's terms and
//! `RECALL_RECENT_CANDIDATES`, not with the reel.
//!
//! Score of a candidate, each part in thousandths:
//! - relevance: BM25 (k1 = `RECALL_BM25_K1_MILLI`, b = `RECALL_BM25_B_MILLI`,
//!   idf = log2((N + 1) / (df + ½)) in fixed point), divided by the best
//!   candidate's, so the best relevance is 1,000;
//! - recency: 1,000 × H / (H + d), d the distance in land seqs from the
//!   cursor and H = `RECALL_RECENCY_HALF_FACTS` (never wall time);
//! - importance: 100 × the item's importance (0 to `IMPORTANCE_MAX`).
//!
//! The total is the weighted sum (`RECALL_WEIGHT_*`); ties go to the later
//! land seq.

use super::log2::{log2_fixed, LOG2_FRACTION_BITS};
use super::tokens::tokens;
use crate::fact::{FactId, GatheringHasher, Hash32};
use imbl::{OrdMap, Vector};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// BM25's k1, in thousandths.
pub const RECALL_BM25_K1_MILLI: u64 = 1_200;
/// BM25's b, in thousandths.
pub const RECALL_BM25_B_MILLI: u64 = 750;
/// Land seqs after which an item's recency is half.
pub const RECALL_RECENCY_HALF_FACTS: u64 = 1_000;
/// The latest items that are candidates whatever the query matches.
pub const RECALL_RECENT_CANDIDATES: usize = 16;
/// The latest items whose vectors a recall with a query vector compares
/// besides the lexical candidates (its cost stays bounded by the reel's length).
pub const RECALL_SEMANTIC_CANDIDATES: usize = 256;
/// The weights of relevance, recency, importance and similarity in the total.
pub const RECALL_WEIGHT_SIMILARITY: u64 = 1;
pub const RECALL_WEIGHT_RELEVANCE: u64 = 1;
pub const RECALL_WEIGHT_RECENCY: u64 = 1;
pub const RECALL_WEIGHT_IMPORTANCE: u64 = 1;
/// The highest importance an item may carry.
pub const IMPORTANCE_MAX: u8 = 10;
/// The most items one recall returns.
pub const RECALL_ITEMS_MAX: usize = 32;
/// Items from which a memory keeps postings; below, a recall reads every
/// text it holds (at most this many).
pub const RECALL_INDEXED_FROM_ITEMS: usize = 32;
/// A long memory adds its items to its postings this many at a time; a
/// recall reads the texts of the items not added yet (fewer than this).
/// A being remembers about one item a round, and each round's world is a
/// copy its sealing changes: adding every item as it came copied the
/// postings' path of every term it holds, every round, for every being
/// (about 4% of a crowd's samples, on the thread that seals).
pub const RECALL_POSTINGS_BLOCK_ITEMS: usize = 8;
const _: () = assert!(RECALL_INDEXED_FROM_ITEMS.is_multiple_of(RECALL_POSTINGS_BLOCK_ITEMS));
/// The most characters of an item's text the index keeps (and a face shows).
pub const RECALL_ITEM_TEXT_CHARS_MAX: usize = 280;
/// How far back (in the being's items) a reflection's `covers` are looked
/// for: a reflection sums up recent items, and finding them costs no more.
pub const REFLECTION_SCAN_ITEMS_MAX: usize = 1_024;

/// What a remembered item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryKind {
    /// An act the being sealed.
    Act,
    /// A summons the being received.
    Summons,
    /// A note the being wrote about itself.
    Note,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 3] = [MemoryKind::Act, MemoryKind::Summons, MemoryKind::Note];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Act => "act",
            MemoryKind::Summons => "summons",
            MemoryKind::Note => "note",
        }
    }

    pub fn named(name: &str) -> Option<MemoryKind> {
        MemoryKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// One item to remember, in land order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered {
    pub fact: FactId,
    pub land_seq: u64,
    pub kind: MemoryKind,
    /// 0 to `IMPORTANCE_MAX` (higher is cut to it).
    pub importance: u8,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Document {
    fact: FactId,
    land_seq: u64,
    kind: MemoryKind,
    importance: u8,
    /// Tokens in the text (BM25's document length).
    length: u32,
    /// The lengths of the documents before it, summed.
    length_before: u64,
    text: Arc<str>,
    /// The land seq and fact of the item that superseded this one.
    superseded: Option<(u64, FactId)>,
    /// Whether it is a reflection (a note with `covers`).
    reflection: bool,
    /// The land seq and fact of the latest reflection that covers it.
    covered: Option<(u64, FactId)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Posting {
    document: u32,
    count: u32,
    /// The document's length, kept here so that scoring a posting does
    /// not look the document up.
    length: u32,
}

/// One being's memory index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BeingMemory {
    /// Each behind its own pointer, so that a short memory fits in the
    /// list itself and a long one's chunks are small.
    documents: Vector<Arc<Document>>,
    /// The postings of the first [`BeingMemory::indexed_items`] items:
    /// none until `RECALL_INDEXED_FROM_ITEMS` are held, then whole blocks
    /// of `RECALL_POSTINGS_BLOCK_ITEMS`.
    postings: OrdMap<Arc<str>, Vector<Posting>>,
    /// The notes, by fact id (only a note may be superseded).
    notes: OrdMap<FactId, u32>,
    /// The last land seq remembered (items come in land order).
    last_land_seq: Option<u64>,
    /// The importance of the items remembered since the latest reflection.
    importance_since_reflection: u64,
}

/// What a recall asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallQuery {
    pub text: String,
    pub kinds: BTreeSet<MemoryKind>,
    pub count: usize,
    /// Only items below this land seq are recalled.
    pub cursor: u64,
}

/// A candidate's score, each part in thousandths, and the weighted total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Score {
    pub total: u64,
    pub relevance: u64,
    pub recency: u64,
    pub importance: u64,
    /// The similarity of the item's vector to the query's (0 without
    /// vectors: `crate::embedding::similarity_milli`).
    pub similarity: u64,
}

/// A recall's query vector and the vectors of the items (by their fact).
pub struct Semantic<'a> {
    pub query: &'a [i8],
    pub vector_of: &'a dyn Fn(&FactId) -> Option<&'a [i8]>,
}

/// One item as it stood at a cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryItem<'a> {
    pub fact: FactId,
    pub land_seq: u64,
    pub kind: MemoryKind,
    pub importance: u8,
    pub text: &'a str,
    /// The land seq and fact of the note that superseded it, before the cursor.
    pub superseded_by: Option<(u64, FactId)>,
    /// Whether it is a reflection.
    pub reflection: bool,
    /// The land seq and fact of the latest reflection covering it, before the cursor.
    pub covered_by: Option<(u64, FactId)>,
}

/// One recalled item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    pub fact: FactId,
    pub land_seq: u64,
    pub kind: MemoryKind,
    pub importance: u8,
    pub score: Score,
    pub text: Arc<str>,
    /// The latest reflection that covers it, if one does before the cursor.
    pub covered_by: Option<FactId>,
}

/// Why an item could not be remembered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error("an item at land seq {land_seq} comes after land seq {last}: memory is kept in land order")]
    OutOfOrder { land_seq: u64, last: u64 },
    #[error(
        "the note {fact} supersedes {earlier}, which is not an earlier note of this being: only a note may be superseded, by a later note"
    )]
    NotAnEarlierNote { fact: FactId, earlier: FactId },
    #[error(
        "the reflection {fact} covers {covered}, which is not among this being's latest {REFLECTION_SCAN_ITEMS_MAX} items before it"
    )]
    NotRecentlyRemembered { fact: FactId, covered: FactId },
}

impl BeingMemory {
    /// Items remembered (at every cursor).
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// Adds an item after every item held (land order). Its text is cut
    /// to `RECALL_ITEM_TEXT_CHARS_MAX` characters before it is read, so an
    /// index rebuilt from the texts it keeps is the same index.
    pub fn remember(&mut self, item: Remembered) -> Result<(), MemoryError> {
        if let Some(last) = self.last_land_seq {
            if item.land_seq <= last {
                return Err(MemoryError::OutOfOrder { land_seq: item.land_seq, last });
            }
        }
        let index = u32::try_from(self.documents.len()).expect("fewer than 2^32 items per being");
        let text: Arc<str> = match item.text.char_indices().nth(RECALL_ITEM_TEXT_CHARS_MAX) {
            Some((cut, _)) => item.text[..cut].into(),
            None => item.text.into(),
        };
        let length = tokens(&text).len() as u32;
        let length_before =
            self.documents.back().map_or(0, |document| document.length_before + u64::from(document.length));
        if item.kind == MemoryKind::Note {
            self.notes.insert(item.fact, index);
        }
        self.last_land_seq = Some(item.land_seq);
        self.importance_since_reflection += u64::from(item.importance.min(IMPORTANCE_MAX));
        self.documents.push_back(Arc::new(Document {
            fact: item.fact,
            land_seq: item.land_seq,
            kind: item.kind,
            importance: item.importance.min(IMPORTANCE_MAX),
            length,
            length_before,
            text,
            superseded: None,
            reflection: false,
            covered: None,
        }));
        let (indexed_before, indexed) = (indexed_items(self.documents.len() - 1), self.indexed_items());
        add_postings_of_items(&mut self.postings, &self.documents, indexed_before..indexed);
        Ok(())
    }

    /// How many items (the first) the postings hold.
    fn indexed_items(&self) -> usize {
        indexed_items(self.documents.len())
    }

    /// The postings of items `from..to`, read from their texts.
    fn postings_of_items(&self, from: usize, to: usize) -> OrdMap<Arc<str>, Vector<Posting>> {
        let mut postings = OrdMap::new();
        add_postings_of_items(&mut postings, &self.documents, from..to);
        postings
    }

    /// Records that the note `fact` (sealed at `land_seq`, the last item
    /// remembered) is a reflection summing up `covers`: each covered item
    /// among the latest `REFLECTION_SCAN_ITEMS_MAX` before it is marked as
    /// covered by it (a later reflection takes over), and the importance
    /// gathered since the previous reflection starts again from 0. Items it
    /// cannot find are returned; nothing else changes for them.
    pub fn reflect(&mut self, fact: FactId, land_seq: u64, covers: &[FactId]) -> Vec<MemoryError> {
        let Some(index) = self.notes.get(&fact).copied() else {
            return covers
                .iter()
                .map(|covered| MemoryError::NotRecentlyRemembered { fact, covered: *covered })
                .collect();
        };
        Arc::make_mut(&mut self.documents[index as usize]).reflection = true;
        self.importance_since_reflection = 0;
        let first = (index as usize).saturating_sub(REFLECTION_SCAN_ITEMS_MAX);
        let mut missing = Vec::new();
        for covered in covers {
            let found = (first..index as usize).rev().find(|at| self.documents[*at].fact == *covered);
            match found {
                Some(at) => Arc::make_mut(&mut self.documents[at]).covered = Some((land_seq, fact)),
                None => missing.push(MemoryError::NotRecentlyRemembered { fact, covered: *covered }),
            }
        }
        missing
    }

    /// The importance of the items remembered since the latest reflection
    /// (all of them, before the first): what a role reads to schedule one.
    pub fn importance_since_reflection(&self) -> u64 {
        self.importance_since_reflection
    }

    /// The note `fact`, as recall would show it at `cursor` with no
    /// relevance (recency and importance only): a reflection standing in
    /// for the items it covers. `None` if it is not a note of this being
    /// below the cursor.
    pub fn note_recalled(&self, fact: &FactId, cursor: u64) -> Option<Recalled> {
        let document = &self.documents[*self.notes.get(fact)? as usize];
        if document.land_seq >= cursor {
            return None;
        }
        Some(self.recalled(document, 0, 0, cursor))
    }

    fn recalled(&self, document: &Document, relevance: u64, similarity: u64, cursor: u64) -> Recalled {
        let distance = cursor - document.land_seq;
        let recency = 1_000 * RECALL_RECENCY_HALF_FACTS / (RECALL_RECENCY_HALF_FACTS + distance);
        let importance = 100 * u64::from(document.importance);
        let total = RECALL_WEIGHT_RELEVANCE * relevance
            + RECALL_WEIGHT_RECENCY * recency
            + RECALL_WEIGHT_IMPORTANCE * importance
            + RECALL_WEIGHT_SIMILARITY * similarity;
        Recalled {
            fact: document.fact,
            land_seq: document.land_seq,
            kind: document.kind,
            importance: document.importance,
            score: Score { total, relevance, recency, importance, similarity },
            text: document.text.clone(),
            covered_by: document.covered.filter(|(land_seq, _)| *land_seq < cursor).map(|(_, by)| by),
        }
    }

    /// Records that the item `fact` (sealed at `land_seq`) supersedes the
    /// earlier item `earlier`: from `land_seq` on, recall shows the newer
    /// one only. Nothing is removed: a recall before `land_seq` still finds
    /// the earlier one.
    pub fn supersede(&mut self, earlier: FactId, fact: FactId, land_seq: u64) -> Result<(), MemoryError> {
        let index = *self.notes.get(&earlier).ok_or(MemoryError::NotAnEarlierNote { fact, earlier })?;
        let document = Arc::make_mut(&mut self.documents[index as usize]);
        // A later superseding does not move the first one.
        if document.superseded.is_none() {
            document.superseded = Some((land_seq, fact));
        }
        Ok(())
    }

    /// Every item below `cursor`, in land order, as a person reads a
    /// being's memory at that cursor (`seed memory`).
    pub fn items(&self, cursor: u64) -> impl Iterator<Item = MemoryItem<'_>> {
        let held = self.held_below(cursor);
        self.documents.iter().take(held).map(move |document| MemoryItem {
            fact: document.fact,
            land_seq: document.land_seq,
            kind: document.kind,
            importance: document.importance,
            text: &document.text,
            superseded_by: document.superseded.filter(|(land_seq, _)| *land_seq < cursor),
            reflection: document.reflection,
            covered_by: document.covered.filter(|(land_seq, _)| *land_seq < cursor),
        })
    }

    /// The fact that superseded `fact` before `cursor`, if one did.
    pub fn superseded_by(&self, fact: &FactId, cursor: u64) -> Option<FactId> {
        let document = &self.documents[*self.notes.get(fact)? as usize];
        document.superseded.filter(|(land_seq, _)| *land_seq < cursor).map(|(_, by)| by)
    }

    /// The items recalled for `query`, best first (at most `query.count`,
    /// and never more than `RECALL_ITEMS_MAX`).
    pub fn recall(&self, query: &RecallQuery) -> Vec<Recalled> {
        self.recall_with(query, None)
    }

    /// [`BeingMemory::recall`], with the similarity of each candidate's
    /// vector to the query's when `semantic` gives them: the latest
    /// `RECALL_SEMANTIC_CANDIDATES` items are candidates too.
    pub fn recall_with(&self, query: &RecallQuery, semantic: Option<&Semantic<'_>>) -> Vec<Recalled> {
        self.recall_reading(query, semantic, self.postings_kept())
    }

    /// Whether this memory keeps postings (it is long enough).
    fn postings_kept(&self) -> bool {
        self.documents.len() >= RECALL_INDEXED_FROM_ITEMS
    }

    /// A recall that reads the kept postings (`indexed`) or the texts.
    fn recall_reading(&self, query: &RecallQuery, semantic: Option<&Semantic<'_>>, indexed: bool) -> Vec<Recalled> {
        let held = self.held_below(query.cursor);
        if held == 0 || query.count == 0 {
            return Vec::new();
        }
        let held_u32 = held as u32;
        let total_length = self.documents[held - 1].length_before + u64::from(self.documents[held - 1].length);
        let terms: BTreeSet<std::borrow::Cow<'_, str>> = tokens(&query.text).into_iter().collect();
        let mut relevance: BTreeMap<u32, u64> = BTreeMap::new();
        // The items below the cursor the kept postings do not hold yet.
        let unindexed = match indexed {
            true => self.postings_of_items(self.indexed_items().min(held), held),
            false => OrdMap::new(),
        };
        for term in &terms {
            let postings = match indexed {
                true => {
                    let mut postings = self.postings.get(term.as_ref()).cloned().unwrap_or_default();
                    if let Some(more) = unindexed.get(term.as_ref()) {
                        postings.append(more.clone());
                    }
                    postings
                }
                false => self.postings_by_scanning(term, held),
            };
            let with_term = partition_point(&postings, |posting| posting.document < held_u32);
            if with_term == 0 {
                continue;
            }
            let idf = idf_fixed(held as u64, with_term as u64);
            for posting in postings.iter().take(with_term) {
                let length = u64::from(posting.length);
                let weight = term_weight_milli(u64::from(posting.count), length, held as u64, total_length);
                *relevance.entry(posting.document).or_default() += (idf * weight) >> LOG2_FRACTION_BITS;
            }
        }
        let mut candidates: BTreeSet<u32> = relevance.keys().copied().collect();
        let recent = if semantic.is_some() { RECALL_SEMANTIC_CANDIDATES } else { RECALL_RECENT_CANDIDATES };
        candidates.extend((held.saturating_sub(recent)..held).map(|index| index as u32));
        let visible = |index: &u32| {
            let document = &self.documents[*index as usize];
            query.kinds.contains(&document.kind)
                && document.superseded.is_none_or(|(land_seq, _)| land_seq >= query.cursor)
        };
        let candidates: Vec<u32> = candidates.into_iter().filter(visible).collect();
        let best = candidates.iter().filter_map(|index| relevance.get(index)).copied().max().unwrap_or(0);
        let mut recalled: Vec<Recalled> = candidates
            .into_iter()
            .map(|index| {
                let raw = relevance.get(&index).copied().unwrap_or(0);
                let relevance = (raw * 1_000).checked_div(best).unwrap_or(0);
                let document = &self.documents[index as usize];
                let similarity = semantic
                    .and_then(|semantic| {
                        (semantic.vector_of)(&document.fact)
                            .map(|vector| crate::embedding::similarity_milli(semantic.query, vector))
                    })
                    .unwrap_or(0);
                self.recalled(document, relevance, similarity, query.cursor)
            })
            .collect();
        recalled.sort_by(|a, b| b.score.total.cmp(&a.score.total).then(b.land_seq.cmp(&a.land_seq)));
        recalled.truncate(query.count.min(RECALL_ITEMS_MAX));
        recalled
    }

    /// The postings `term` would have among the first `held` documents,
    /// read from their texts (a memory too short to keep postings).
    fn postings_by_scanning(&self, term: &str, held: usize) -> Vector<Posting> {
        let mut postings = Vector::new();
        for (index, document) in self.documents.iter().take(held).enumerate() {
            let count = tokens(&document.text).iter().filter(|token| token.as_ref() == term).count() as u32;
            if count > 0 {
                postings.push_back(Posting { document: index as u32, count, length: document.length });
            }
        }
        postings
    }

    /// The postings as an index of every item would hold them: those kept
    /// (none for a short memory) and those of the items not added to them,
    /// read from their texts. What `digest` reads.
    fn postings_whole(&self) -> OrdMap<Arc<str>, Vector<Posting>> {
        let mut postings = self.postings.clone();
        add_postings_of_items(&mut postings, &self.documents, self.indexed_items()..self.documents.len());
        postings
    }

    /// Every item's postings read from the texts: what the kept ones are
    /// held to.
    #[cfg(test)]
    fn postings_from_texts(&self) -> OrdMap<Arc<str>, Vector<Posting>> {
        self.postings_of_items(0, self.documents.len())
    }

    /// How many documents lie below `cursor`.
    fn held_below(&self, cursor: u64) -> usize {
        partition_point(&self.documents, |document| document.land_seq < cursor)
    }

    /// A digest of everything the index holds, in a fixed order: two
    /// indexes built from the same items give the same digest (what an
    /// index check compares).
    ///
    /// The bytes are hashed as they are made, a few kilobytes at a time,
    /// never held whole: a snapshot digests every being's memory, and the
    /// digest a snapshot claims is of exactly this sequence of bytes
    /// (`the_digest_is_of_the_bytes_it_always_hashed`).
    pub fn digest(&self) -> Hash32 {
        let mut hasher = GatheringHasher::new();
        self.write_digested_bytes(&mut |bytes| hasher.update(bytes));
        hasher.finalize()
    }

    /// The bytes [`BeingMemory::digest`] hashes, handed to `out` in order.
    fn write_digested_bytes(&self, out: &mut dyn FnMut(&[u8])) {
        // Each item's and each term's bytes are gathered here and handed
        // over at once: a snapshot digests every item of every being, and
        // a dozen calls through `out` for each cost more than hashing them.
        let mut gathered: Vec<u8> = Vec::with_capacity(256);
        for document in &self.documents {
            gathered.clear();
            gathered.extend_from_slice(&document.fact.0);
            gathered.extend_from_slice(&document.land_seq.to_be_bytes());
            gathered.extend_from_slice(&[document.kind as u8, document.importance]);
            gathered.extend_from_slice(&document.length.to_be_bytes());
            gathered.extend_from_slice(&(document.text.len() as u64).to_be_bytes());
            gathered.extend_from_slice(document.text.as_bytes());
            for link in [document.superseded, document.covered] {
                match link {
                    Some((land_seq, by)) => {
                        gathered.push(1);
                        gathered.extend_from_slice(&land_seq.to_be_bytes());
                        gathered.extend_from_slice(&by.0);
                    }
                    None => gathered.push(0),
                }
            }
            gathered.push(u8::from(document.reflection));
            out(&gathered);
        }
        for (term, postings) in &self.postings_whole() {
            gathered.clear();
            gathered.extend_from_slice(&(term.len() as u64).to_be_bytes());
            gathered.extend_from_slice(term.as_bytes());
            gathered.extend_from_slice(&(postings.len() as u64).to_be_bytes());
            for posting in postings {
                gathered.extend_from_slice(&posting.document.to_be_bytes());
                gathered.extend_from_slice(&posting.count.to_be_bytes());
            }
            out(&gathered);
        }
    }
}

/// One item as a world snapshot writes it: what was remembered and what
/// superseded it, as an array of (fact, land seq, kind, importance, text,
/// superseded, reflection, covered). The postings are not written: reading
/// rebuilds them. An array rather than a map of named fields: the items are
/// most of a snapshot, and their names were half of each item's bytes
/// (world format 11). Written with its texts borrowed from the memory
/// (`&str`: no copy of each item's text), read back owning them (`String`).
#[derive(serde::Serialize, serde::Deserialize)]
struct WrittenItem<Text>(FactId, u64, Text, u8, Text, Option<(u64, FactId)>, bool, Option<(u64, FactId)>);

impl serde::Serialize for BeingMemory {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut items = serializer.serialize_seq(Some(self.documents.len()))?;
        for document in &self.documents {
            items.serialize_element(&WrittenItem(
                document.fact,
                document.land_seq,
                document.kind.as_str(),
                document.importance,
                &*document.text,
                document.superseded,
                document.reflection,
                document.covered,
            ))?;
        }
        items.end()
    }
}

impl<'de> serde::Deserialize<'de> for BeingMemory {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let written = Vec::<WrittenItem<String>>::deserialize(deserializer)?;
        let mut memory = BeingMemory::default();
        let mut superseded = Vec::new();
        for WrittenItem(fact, land_seq, kind, importance, text, superseded_by, reflection, covered) in written {
            let kind = MemoryKind::named(&kind).ok_or_else(|| D::Error::custom(format!("no memory kind {kind:?}")))?;
            if let Some((land_seq, by)) = superseded_by {
                superseded.push((fact, by, land_seq));
            }
            let remembered = Remembered { fact, land_seq, kind, importance, text };
            memory.remember(remembered).map_err(D::Error::custom)?;
            if reflection {
                memory.importance_since_reflection = 0;
            }
            if let Some(last) = memory.documents.back_mut() {
                let last = Arc::make_mut(last);
                last.reflection = reflection;
                last.covered = covered;
            }
        }
        for (earlier, by, land_seq) in superseded {
            memory.supersede(earlier, by, land_seq).map_err(D::Error::custom)?;
        }
        Ok(memory)
    }
}

/// How many of a memory's first items its postings hold when it holds
/// `held`: none below `RECALL_INDEXED_FROM_ITEMS`, then every whole block
/// of `RECALL_POSTINGS_BLOCK_ITEMS`.
fn indexed_items(held: usize) -> usize {
    match held < RECALL_INDEXED_FROM_ITEMS {
        true => 0,
        false => held - held % RECALL_POSTINGS_BLOCK_ITEMS,
    }
}

/// Adds the postings of `documents[items]` to `postings`.
fn add_postings_of_items(
    postings: &mut OrdMap<Arc<str>, Vector<Posting>>,
    documents: &Vector<Arc<Document>>,
    items: std::ops::Range<usize>,
) {
    for index in items {
        add_postings(postings, index as u32, &documents[index]);
    }
}

/// Adds the postings of `document` (the `index`th) to `postings`: each
/// distinct term with how often it occurs, the sorted terms' runs.
fn add_postings(postings: &mut OrdMap<Arc<str>, Vector<Posting>>, index: u32, document: &Document) {
    let terms = tokens(&document.text);
    let mut sorted: Vec<&str> = terms.iter().map(|term| term.as_ref()).collect();
    sorted.sort_unstable();
    let mut runs: Vec<(&str, u32)> = Vec::with_capacity(sorted.len());
    for term in sorted {
        match runs.last_mut() {
            Some((last, count)) if *last == term => *count += 1,
            _ => runs.push((term, 1)),
        }
    }
    for (term, count) in runs {
        let posting = Posting { document: index, count, length: document.length };
        match postings.get_mut(term) {
            Some(list) => list.push_back(posting),
            None => {
                postings.insert(term.into(), Vector::unit(posting));
            }
        }
    }
}

/// The first index of `list` whose item is not `below` (the list holds
/// every item that is before every item that is not): a binary search,
/// O(log² n) on a persistent vector.
fn partition_point<T: Clone>(list: &Vector<T>, below: impl Fn(&T) -> bool) -> usize {
    // Most recalls are at the end of the memory (a world's own cursor):
    // then every item is below, and no search is needed.
    if list.back().is_none_or(&below) {
        return list.len();
    }
    let (mut low, mut high) = (0, list.len());
    while low < high {
        let middle = low + (high - low) / 2;
        if below(&list[middle]) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// BM25's idf in fixed point: log2((N + 1) / (df + ½)) = log2(2N + 2) −
/// log2(2·df + 1), never negative (df ≤ N).
pub fn idf_fixed(documents: u64, with_term: u64) -> u64 {
    log2_fixed(2 * documents + 2).saturating_sub(log2_fixed(2 * with_term + 1))
}

/// BM25's term weight tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl)), in
/// thousandths, avgdl = `total_length` / `documents`; all in integers.
pub fn term_weight_milli(count: u64, length: u64, documents: u64, total_length: u64) -> u64 {
    let (k1, b) = (u128::from(RECALL_BM25_K1_MILLI), u128::from(RECALL_BM25_B_MILLI));
    let (tf, dl, n) = (u128::from(count), u128::from(length), u128::from(documents));
    // Every document may be empty: then every length is the average.
    let total = u128::from(total_length.max(1));
    let dl_n = if total_length == 0 { total } else { dl * n };
    // Scaled by 1,000 · 1,000 · total on both sides.
    let numerator = tf * (k1 + 1_000) * 1_000 * total;
    let denominator = tf * 1_000_000 * total + k1 * ((1_000 - b) * total + b * dl_n);
    (numerator * 1_000 / denominator) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fact::blake3_of;

    fn fact(n: u8) -> FactId {
        FactId([n; 32])
    }

    fn item(n: u8, land_seq: u64, kind: MemoryKind, importance: u8, text: &str) -> Remembered {
        Remembered { fact: fact(n), land_seq, kind, importance, text: text.into() }
    }

    fn all_kinds() -> BTreeSet<MemoryKind> {
        MemoryKind::ALL.into_iter().collect()
    }

    /// The market reel the tables below recall from.
    fn market() -> BeingMemory {
        let mut memory = BeingMemory::default();
        let items = [
            item(1, 10, MemoryKind::Summons, 0, "bob offers grain for 5 coins"),
            item(2, 20, MemoryKind::Act, 2, "paid bob 5 coins for grain"),
            item(3, 30, MemoryKind::Summons, 8, "bob sent no grain: bob cheated"),
            item(4, 40, MemoryKind::Act, 1, "bought salt from cy"),
            item(5, 50, MemoryKind::Note, 9, "never trade with bob again"),
        ];
        for remembered in items {
            memory.remember(remembered).expect("in order");
        }
        memory
    }

    fn check(memory: &BeingMemory, text: &str, cursor: u64, count: usize, expected: &[(u8, Score)]) {
        let query = RecallQuery { text: text.into(), kinds: all_kinds(), count, cursor };
        let got: Vec<(u8, Score)> = memory.recall(&query).iter().map(|r| (r.fact.0[0], r.score)).collect();
        assert_eq!(got, expected, "{text:?} at {cursor}");
    }

    fn score(relevance: u64, recency: u64, importance: u64) -> Score {
        Score { total: relevance + recency + importance, relevance, recency, importance, similarity: 0 }
    }

    #[test]
    fn recall_ranks_by_relevance_recency_and_importance_in_integers() {
        let memory = market();
        // "cheated" is in one item only: it is the most relevant; the note
        // about bob follows on importance; items that do not match come by
        // recency and importance alone.
        check(
            &memory,
            "did bob cheat? bob cheated",
            60,
            3,
            &[(3, score(1000, 970, 800)), (5, score(173, 990, 900)), (2, score(160, 961, 200))],
        );
        // As of land seq 35 the note does not exist yet.
        check(&memory, "bob", 35, 2, &[(3, score(1000, 995, 800)), (2, score(727, 985, 200))]);
        // Nothing below the first item: nothing at all.
        check(&memory, "bob", 10, 5, &[]);
        // An empty query recalls by recency and importance.
        check(&memory, "", 60, 2, &[(5, score(0, 990, 900)), (3, score(0, 970, 800))]);
    }

    #[test]
    fn recall_reads_only_the_kinds_asked_for_and_at_most_the_count() {
        let memory = market();
        let kinds = [MemoryKind::Act].into_iter().collect();
        let query = RecallQuery { text: "bob grain salt".into(), kinds, count: 10, cursor: 100 };
        let got: Vec<u8> = memory.recall(&query).iter().map(|r| r.fact.0[0]).collect();
        // "salt" is in one item only, so the act holding it ranks first.
        assert_eq!(got, vec![4, 2]);
        let query = RecallQuery { text: "bob".into(), kinds: all_kinds(), count: 1_000, cursor: 100 };
        assert!(memory.recall(&query).len() <= RECALL_ITEMS_MAX);
    }

    #[test]
    fn a_superseded_note_stays_and_recall_shows_the_newest_from_its_land_seq_on() {
        let mut memory = market();
        memory.remember(item(6, 70, MemoryKind::Note, 9, "bob paid back: trade with bob again")).expect("in order");
        memory.supersede(fact(5), fact(6), 70).expect("the earlier note is held");
        let notes = |cursor| {
            let kinds = [MemoryKind::Note].into_iter().collect();
            let query = RecallQuery { text: "trade with bob".into(), kinds, count: 5, cursor };
            memory.recall(&query).iter().map(|r| r.fact.0[0]).collect::<Vec<_>>()
        };
        assert_eq!(notes(60), vec![5], "before the new note");
        assert_eq!(notes(71), vec![6], "after it: the newest only");
        assert_eq!(memory.superseded_by(&fact(5), 71), Some(fact(6)));
        assert_eq!(memory.superseded_by(&fact(5), 70), None, "not yet at its own land seq");
        assert_eq!(memory.len(), 6, "nothing was removed");
        let missing = memory.supersede(fact(99), fact(6), 70);
        assert_eq!(missing, Err(MemoryError::NotAnEarlierNote { fact: fact(6), earlier: fact(99) }));
        let an_act = memory.supersede(fact(2), fact(6), 70);
        assert_eq!(an_act, Err(MemoryError::NotAnEarlierNote { fact: fact(6), earlier: fact(2) }));
    }

    #[test]
    fn a_reflection_covers_what_it_cites_and_gathering_importance_starts_again() {
        let mut memory = market();
        // 0 + 2 + 8 + 1 + 9 gathered before any reflection.
        assert_eq!(memory.importance_since_reflection(), 20);
        memory.remember(item(6, 60, MemoryKind::Note, 4, "bob cheats; salt from cy")).expect("in order");
        let missing = memory.reflect(fact(6), 60, &[fact(3), fact(4), fact(99)]);
        assert_eq!(missing, vec![MemoryError::NotRecentlyRemembered { fact: fact(6), covered: fact(99) }]);
        assert_eq!(memory.importance_since_reflection(), 0, "a reflection starts the count again");
        memory.remember(item(7, 70, MemoryKind::Act, 3, "paid cy")).expect("in order");
        assert_eq!(memory.importance_since_reflection(), 3);
        let covered: Vec<(u8, Option<u8>)> =
            memory.items(100).map(|item| (item.fact.0[0], item.covered_by.map(|(_, by)| by.0[0]))).collect();
        assert_eq!(covered, vec![(1, None), (2, None), (3, Some(6)), (4, Some(6)), (5, None), (6, None), (7, None)]);
        // Not before the reflection's own land seq.
        assert!(memory.items(60).all(|item| item.covered_by.is_none()));
        // A later reflection covering the same item takes over; recall says which.
        memory.remember(item(8, 80, MemoryKind::Note, 0, "all quiet")).expect("in order");
        assert!(memory.reflect(fact(8), 80, &[fact(4)]).is_empty());
        let query = RecallQuery { text: "salt".into(), kinds: all_kinds(), count: 8, cursor: 100 };
        let salt = memory.recall(&query).into_iter().find(|item| item.fact == fact(4)).expect("recalled");
        assert_eq!(salt.covered_by, Some(fact(8)));
        let stand_in = memory.note_recalled(&fact(8), 100).expect("a note");
        assert_eq!((stand_in.score.relevance, &*stand_in.text), (0, "all quiet"));
        assert_eq!(memory.note_recalled(&fact(7), 100), None, "an act is not a note");
        // Written and read back (a world snapshot): the same index.
        let written = crate::canonical::to_canonical_bytes(&memory).expect("writes");
        let read: BeingMemory = crate::canonical::from_canonical_bytes(&written).expect("reads");
        assert_eq!(read, memory);
        assert_eq!(read.digest(), memory.digest());
    }

    /// The digest as it was first written, gathering every byte before
    /// hashing: the reference the streamed digest is held to (a snapshot
    /// claims the digest, so its bytes never change).
    fn digest_gathered(memory: &BeingMemory) -> Hash32 {
        let mut bytes = Vec::new();
        for document in &memory.documents {
            bytes.extend_from_slice(&document.fact.0);
            bytes.extend_from_slice(&document.land_seq.to_be_bytes());
            bytes.push(document.kind as u8);
            bytes.push(document.importance);
            bytes.extend_from_slice(&document.length.to_be_bytes());
            bytes.extend_from_slice(&(document.text.len() as u64).to_be_bytes());
            bytes.extend_from_slice(document.text.as_bytes());
            for link in [document.superseded, document.covered] {
                match link {
                    Some((land_seq, by)) => {
                        bytes.push(1);
                        bytes.extend_from_slice(&land_seq.to_be_bytes());
                        bytes.extend_from_slice(&by.0);
                    }
                    None => bytes.push(0),
                }
            }
            bytes.push(u8::from(document.reflection));
        }
        for (term, postings) in &memory.postings_whole() {
            bytes.extend_from_slice(&(term.len() as u64).to_be_bytes());
            bytes.extend_from_slice(term.as_bytes());
            bytes.extend_from_slice(&(postings.len() as u64).to_be_bytes());
            for posting in postings {
                bytes.extend_from_slice(&posting.document.to_be_bytes());
                bytes.extend_from_slice(&posting.count.to_be_bytes());
            }
        }
        blake3_of(&bytes)
    }

    /// A snapshot's memory items are most of its bytes: each is an array
    /// in a fixed order, no field names (world format 11). These are the
    /// bytes a two-item memory writes, a note and a reflection covering it
    /// that supersedes it; a change to them is a new world format.
    #[test]
    fn a_memory_item_is_written_as_an_array_in_a_fixed_order() {
        let mut memory = BeingMemory::default();
        memory.remember(item(1, 10, MemoryKind::Note, 4, "hi")).expect("in order");
        memory.remember(item(2, 11, MemoryKind::Note, 9, "yo")).expect("in order");
        assert!(memory.reflect(fact(2), 11, &[fact(1)]).is_empty());
        memory.supersede(fact(1), fact(2), 11).expect("an earlier note");
        let link = |land_seq: u8, n: u8| [&[0x82, land_seq, 0x58, 0x20][..], &[n; 32]].concat();
        let expected = [
            &[0x82, 0x88, 0x58, 0x20][..],
            &[1; 32],
            &[0x0a, 0x64],
            b"note",
            &[0x04, 0x62],
            b"hi",
            &link(11, 2),
            &[0xf4],
            &link(11, 2),
            &[0x88, 0x58, 0x20],
            &[2; 32],
            &[0x0b, 0x64],
            b"note",
            &[0x09, 0x62],
            b"yo",
            &[0xf6, 0xf5, 0xf6],
        ]
        .concat();
        assert_eq!(crate::canonical::to_canonical_bytes(&memory).expect("encodes"), expected);
        let read: BeingMemory = crate::canonical::from_canonical_bytes(&expected).expect("reads");
        assert_eq!(read, memory);
    }

    #[test]
    fn the_digest_is_of_the_bytes_it_always_hashed() {
        let mut superseded_and_covered = market();
        superseded_and_covered
            .remember(item(6, 60, MemoryKind::Note, 4, "bob cheats; salt from cy"))
            .expect("in order");
        assert!(superseded_and_covered.reflect(fact(6), 60, &[fact(3), fact(4)]).is_empty());
        superseded_and_covered.remember(item(7, 70, MemoryKind::Note, 9, "trade with bob again")).expect("in order");
        superseded_and_covered.supersede(fact(5), fact(7), 70).expect("the earlier note is held");
        // Long texts, so that the bytes pass through the buffer many times
        // and a text lands across its end.
        let mut long = BeingMemory::default();
        for index in 0..1_000u64 {
            // Each text is cut at `RECALL_ITEM_TEXT_CHARS_MAX`, at a place that varies.
            let text = format!("{index} ").repeat(60 + index as usize % 17);
            long.remember(item(index as u8, index + 1, MemoryKind::ALL[index as usize % 3], 3, &text))
                .expect("in order");
        }
        assert!(
            long.documents.iter().map(|document| document.text.len()).sum::<usize>()
                > 2 * crate::fact::HASH_GATHER_BYTES
        );
        for (name, memory) in [
            ("empty", BeingMemory::default()),
            ("market", market()),
            ("superseded and covered", superseded_and_covered),
            ("long", long),
        ] {
            assert_eq!(memory.digest(), digest_gathered(&memory), "{name}");
        }
    }

    #[test]
    fn items_out_of_land_order_are_refused() {
        let mut memory = market();
        let refused = memory.remember(item(9, 50, MemoryKind::Act, 0, "late"));
        assert_eq!(refused, Err(MemoryError::OutOfOrder { land_seq: 50, last: 50 }));
        assert_eq!(memory.digest(), market().digest(), "a refused item changed nothing");
    }

    #[test]
    fn bm25_parts_follow_the_formula() {
        // One document among one: idf = log2(4) − log2(3).
        assert_eq!(idf_fixed(1, 1), log2_fixed(4) - log2_fixed(3));
        // tf = 1 in a document of average length: (k1 + 1) / (1 + k1) = 1.
        assert_eq!(term_weight_milli(1, 5, 2, 10), 1_000);
        // tf = 2, average length: 2 · 2.2 / (2 + 1.2) = 1.375.
        assert_eq!(term_weight_milli(2, 5, 2, 10), 1_375);
        // A longer document weighs a term less.
        assert!(term_weight_milli(1, 10, 2, 10) < term_weight_milli(1, 2, 2, 10));
        // Empty documents do not divide by zero.
        assert_eq!(term_weight_milli(1, 0, 3, 0), 1_000);
    }

    proptest::proptest! {
        #[test]
        fn recall_is_a_pure_function_of_the_prefix_and_a_rebuild_is_the_same_index(
            texts in proptest::collection::vec(proptest::collection::vec(0usize..8, 0..6), 1..40),
            importances in proptest::collection::vec(0u8..12, 40),
            query in proptest::collection::vec(0usize..8, 0..4),
            cursor in 0u64..50,
        ) {
            const WORDS: [&str; 8] = ["bob", "grain", "coins", "cheated", "paid", "salt", "cy", "again"];
            let text = |words: &[usize]| words.iter().map(|w| WORDS[*w]).collect::<Vec<_>>().join(" ");
            let items: Vec<Remembered> = texts.iter().enumerate().map(|(index, words)| {
                let kind = MemoryKind::ALL[index % 3];
                item(index as u8, index as u64 + 1, kind, importances[index], &text(words))
            }).collect();
            let build = |items: &[Remembered]| {
                let mut memory = BeingMemory::default();
                for remembered in items {
                    memory.remember(remembered.clone()).expect("in order");
                }
                memory
            };
            let whole = build(&items);
            let prefix: Vec<Remembered> = items.iter().filter(|i| i.land_seq < cursor).cloned().collect();
            let query = RecallQuery { text: text(&query), kinds: all_kinds(), count: 8, cursor };
            proptest::prop_assert_eq!(whole.recall(&query), build(&prefix).recall(&query));
            proptest::prop_assert_eq!(whole.digest(), build(&items).digest());
        }

        #[test]
        fn recall_by_scanning_scores_as_the_index_does(
            texts in proptest::collection::vec(proptest::collection::vec(0usize..8, 0..6), RECALL_INDEXED_FROM_ITEMS..90),
            query in proptest::collection::vec(0usize..8, 0..4),
            cursor in 0u64..100,
            kinds in proptest::collection::btree_set(proptest::sample::select(MemoryKind::ALL.to_vec()), 1..4),
        ) {
            const WORDS: [&str; 8] = ["bob", "grain", "coins", "cheated", "paid", "salt", "cy", "again"];
            let text = |words: &[usize]| words.iter().map(|w| WORDS[*w]).collect::<Vec<_>>().join(" ");
            let mut memory = BeingMemory::default();
            for (index, words) in texts.iter().enumerate() {
                let kind = MemoryKind::ALL[index % 3];
                memory.remember(item(index as u8, index as u64 + 1, kind, (index % 11) as u8, &text(words))).expect("in order");
                // The postings a long memory keeps are those its texts give.
                proptest::prop_assert_eq!(memory.postings_whole(), memory.postings_from_texts());
            }
            proptest::prop_assert!(memory.postings_kept());
            let query = RecallQuery { text: text(&query), kinds, count: 8, cursor };
            let indexed = memory.recall_reading(&query, None, true);
            proptest::prop_assert_eq!(&indexed, &memory.recall_reading(&query, None, false));
            proptest::prop_assert_eq!(indexed, memory.recall(&query));
        }
    }

    #[test]
    fn a_short_memory_keeps_no_postings_and_a_long_one_keeps_its_whole_blocks() {
        let mut memory = BeingMemory::default();
        for index in 0..RECALL_INDEXED_FROM_ITEMS {
            assert!(memory.postings.is_empty(), "no postings with {index} items");
            memory
                .remember(item(index as u8, index as u64 + 1, MemoryKind::Act, 0, "looked at north"))
                .expect("in order");
        }
        assert_eq!(memory.postings.len(), 3, "looked, at, north");
        assert!(memory.postings.values().all(|list| list.len() == RECALL_INDEXED_FROM_ITEMS));
        // The items after are added a block at a time.
        for index in RECALL_INDEXED_FROM_ITEMS..RECALL_INDEXED_FROM_ITEMS + 2 * RECALL_POSTINGS_BLOCK_ITEMS {
            memory
                .remember(item(index as u8, index as u64 + 1, MemoryKind::Act, 0, "looked at south"))
                .expect("in order");
            let held = index + 1;
            let indexed = held - held % RECALL_POSTINGS_BLOCK_ITEMS;
            let south = memory.postings.get("south").map_or(0, |list| list.len());
            assert_eq!(south, indexed - RECALL_INDEXED_FROM_ITEMS, "with {held} items");
            assert_eq!(memory.postings["looked"].len(), indexed, "with {held} items");
        }
    }

    /// A recall of a long memory reads the items its postings do not hold
    /// yet: here the newest, the only one that says "south".
    #[test]
    fn a_recall_finds_the_items_not_yet_in_the_postings() {
        let mut memory = BeingMemory::default();
        for index in 0..RECALL_INDEXED_FROM_ITEMS {
            memory
                .remember(item(index as u8, index as u64 + 1, MemoryKind::Act, 0, "looked at north"))
                .expect("in order");
        }
        let last = RECALL_INDEXED_FROM_ITEMS as u8;
        memory.remember(item(last, u64::from(last) + 1, MemoryKind::Act, 0, "looked at south")).expect("in order");
        assert!(!memory.postings.contains_key("south"));
        let query = RecallQuery { text: "south".into(), kinds: all_kinds(), count: 1, cursor: 100 };
        let recalled = memory.recall(&query);
        assert_eq!(recalled.len(), 1);
        assert_eq!(recalled[0].fact, fact(last));
        assert_eq!(recalled[0].score.relevance, 1_000);
        assert_eq!(recalled, memory.recall_reading(&query, None, false));
    }
}
