//! A being's memory: what it recalls of its own past, ranked with integers
//! only, as of any cursor (docs/memory.md).
//!
//! - `tokens`: the fixed tokenizer recall reads texts with;
//! - `log2`: base-2 logarithms in fixed point, for BM25's idf;
//! - `recall`: the index of one being's remembered items (acts, summons
//!   received, notes), superseding, and recall (BM25 relevance, recency in
//!   land seqs, importance);
//! - `note`: the payload of `be note`, read by the verb layer and the fold;
//! - `fold`: one being's memory folded from the land's acts in land order.
//!
//! Pure like the rest of the core: no clock, no floats, no I/O; the order
//! of every map is its key order.

pub mod fold;
pub mod log2;
pub mod note;
pub mod recall;
pub mod tokens;

pub use fold::MemoryFold;
pub use note::{Note, NoteProblem, BE_NOTE};
pub use recall::{BeingMemory, MemoryError, MemoryItem, MemoryKind, RecallQuery, Recalled, Remembered, Score};
