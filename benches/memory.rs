//! Recall's cost as a reel grows: one being's memory index of 10,000,
//! 100,000 and 1,000,000 items, each holding the query's term in exactly
//! `MATCHING_ITEMS` items, recalled at the end of the reel. The cost must
//! grow with the matching items, not with the reel: the figures are
//! reported as ratios to the 10,000-item recall measured in the same run.

mod common;

use common::rate;
use criterion::{criterion_group, Criterion};
use seed::fact::FactId;
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

fn bench(c: &mut Criterion) {
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
        group.bench_function(format!("{items}_items"), |b| b.iter(|| memory.recall(&query)));
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
