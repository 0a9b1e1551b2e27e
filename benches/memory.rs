//! Recall's cost as a reel grows: one being's memory index of 10,000,
//! 100,000 and 1,000,000 items, each holding the query's term in exactly
//! `MATCHING_ITEMS` items, recalled at the end of the reel. The cost must
//! grow with the matching items, not with the reel: the figures are
//! reported as ratios to the 10,000-item recall measured in the same run.
//! The same recalls with a query vector (`recall_with_vectors`: every item
//! has a 64-dimension vector, as in a land with an embedding connection)
//! compare the latest `RECALL_SEMANTIC_CANDIDATES` items' vectors besides:
//! a bounded cost, reported against the lexical recall of the same reel.

mod common;

use common::rate;
use criterion::{criterion_group, Criterion};
use seed::fact::FactId;
use seed::memory::recall::{Semantic, RECALL_SEMANTIC_CANDIDATES};
use seed::memory::{BeingMemory, MemoryKind, RecallQuery, Remembered};
use std::time::Duration;

/// A benchmark measures on the allocator the `seed` binary uses.
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

/// Items holding the query's term, whatever the reel's size.
const MATCHING_ITEMS: u64 = 100;
const REEL_SIZES: [u64; 3] = [10_000, 100_000, 1_000_000];

fn memory_of(items: u64) -> BeingMemory {
    let mut memory = BeingMemory::default();
    let every = items / MATCHING_ITEMS;
    for index in 0..items {
        let mut fact = [0u8; 32];
        fact[..8].copy_from_slice(&index.to_be_bytes());
        let marked = if index % every == every / 2 { " cheated" } else { "" };
        let text =
            format!("traded grain-{} with trader-{} for {} coins{marked}", index % 5_000, index % 977, index % 90);
        let kind = [MemoryKind::Act, MemoryKind::Summons][(index % 2) as usize];
        let item = Remembered { fact: FactId(fact), land_seq: index * 3, kind, importance: (index % 11) as u8, text };
        memory.remember(item).expect("in land order");
    }
    memory
}

/// Distinct item vectors (an item's is picked by its fact), and their width.
const VECTORS: usize = 1_024;
const VECTOR_DIMENSIONS: usize = 64;

fn vectors() -> Vec<Vec<i8>> {
    (0..VECTORS)
        .map(|index| {
            (0..VECTOR_DIMENSIONS).map(|at| (((index * 31 + at * 17) % 255) as i32 - 127) as i8).collect::<Vec<i8>>()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let pool = vectors();
    let vector_of = |fact: &FactId| -> Option<&[i8]> {
        let index = u64::from_be_bytes(fact.0[..8].try_into().expect("8 bytes")) as usize;
        Some(&pool[index % VECTORS])
    };
    let query_vector: Vec<i8> = pool[7].clone();
    let semantic = Semantic { query: &query_vector, vector_of: &vector_of };
    let mut group = c.benchmark_group("recall");
    for items in REEL_SIZES {
        let memory = memory_of(items);
        let query = RecallQuery {
            text: "who cheated".into(),
            kinds: [MemoryKind::Act, MemoryKind::Summons].into_iter().collect(),
            count: 8,
            cursor: items * 3,
        };
        assert_eq!(memory.recall(&query).len(), 8);
        assert!(memory.recall_with(&query, Some(&semantic)).iter().any(|item| item.score.similarity > 0));
        group.bench_function(format!("{items}_items"), |b| b.iter(|| memory.recall(&query)));
        group.bench_function(format!("with_vectors_{items}_items"), |b| {
            b.iter(|| memory.recall_with(&query, Some(&semantic)))
        });
    }
    group.finish();
}

fn print_ratios() {
    let rates: Vec<Option<f64>> = REEL_SIZES.iter().map(|items| rate(&format!("recall/{items}_items"), 1.0)).collect();
    let Some(Some(reference)) = rates.first() else { return };
    println!("\n== figures of this run (recalls per second; {MATCHING_ITEMS} matching items each) ==");
    for (items, rate) in REEL_SIZES.iter().zip(&rates) {
        if let Some(rate) = rate {
            println!("{items:>9} items  {rate:>10.0}/s  = {:.2}x the 10,000-item rate", rate / reference);
        }
    }
    println!("\n== with a query vector ({RECALL_SEMANTIC_CANDIDATES} latest items' vectors compared besides) ==");
    for (items, lexical) in REEL_SIZES.iter().zip(&rates) {
        let with = rate(&format!("recall/with_vectors_{items}_items"), 1.0);
        if let (Some(with), Some(lexical)) = (with, lexical) {
            println!(
                "{items:>9} items  {with:>10.0}/s  = {:.2}x the lexical recall, {:.2}x the 10,000-item lexical rate",
                with / lexical,
                with / reference
            );
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = bench
}

fn main() {
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
