//! seed: a being substrate. A land hosts beings; each being is a row plus an
//! append-only reel of signed, hash-chained facts. See `docs/ARCHITECTURE.md`
//! for the map of this crate.

pub mod bundle;
pub mod canonical;
pub mod check;
pub mod clock;
pub mod extensions;
pub mod fact;
pub mod keys;
pub mod land;
pub mod limits;
pub mod llm;
pub mod moment;
pub mod names;
pub mod parallel;
pub mod portal;
pub mod replay;
pub mod roles;
pub mod script;
pub mod sim;
pub mod store;
pub mod view;
pub mod world;

/// mimalloc instead of glibc's malloc: a round of moments allocates and frees
/// many small buffers on several threads at once, and glibc's arenas spent a
/// fifth of the crowd benchmark's samples in `_int_malloc` / `_int_free` /
/// `malloc_consolidate`. Declared in the library so the binary, the tests and
/// the benchmarks all run on the same allocator.
#[global_allocator]
static GLOBAL_ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
