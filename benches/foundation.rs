//! Foundation benchmarks: the physical reference (raw Ed25519 sign, strict and
//! batch verify) and what the substrate achieves on top of it (durable sealing
//! with group commit, whole-land verification). After criterion has measured
//! everything, each figure is printed with its ratio to its reference, read
//! from criterion's own estimates of this same run.

mod common;
// The throwaway cluster the PostgreSQL tests start.
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres;

use common::rate;
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use ed25519_dalek::{Signature, Signer, SigningKey};
use seed::check::{verify_land, SignatureMode};
use seed::clock::WallClock;
use seed::fact::body::{Cognition, NoteBody, KIND_NOTE};
use seed::fact::KeyPair;
use seed::land::{BeingSpec, Land};
use seed::limits::Limits;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A benchmark measures on the allocator the `seed` binary uses; it chooses the process's allocator (the library only offers it).
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

/// Facts sealed per measured iteration of the seal benchmark.
const SEAL_FACTS_PER_ITERATION: u64 = 8192;
/// Beings sealing concurrently, and facts each keeps in flight.
const SEAL_BEINGS: usize = 16;
const SEAL_WINDOW_FACTS: usize = 128;
const SEAL_THREADS: usize = 2;
/// Facts in the land the verify benchmark checks.
const VERIFY_LAND_FACTS: u64 = 20_000;
const BATCH_SIGNATURES: usize = 256;
/// Signatures made together in the sign-together figures: a simulation's
/// moment thread hands over 16 moments at a time, a planting group is 64.
const SIGNED_TOGETHER: [usize; 2] = [16, 64];
/// Keys derived together in the key figure (a planting group).
const KEYS_DERIVED_TOGETHER: usize = 64;

fn header_like_message(index: u64) -> Vec<u8> {
    // About the size of a real fact header (~150 bytes).
    let mut message = vec![0x89u8; 150];
    message[..8].copy_from_slice(&index.to_be_bytes());
    message
}

fn signing_key(index: u8) -> SigningKey {
    SigningKey::from_bytes(&[index; 32])
}

fn bench_reference(c: &mut Criterion) {
    let mut group = c.benchmark_group("reference");
    let key = signing_key(7);
    let message = header_like_message(1);
    group.throughput(Throughput::Elements(1));
    group.bench_function("ed25519_sign", |b| b.iter(|| key.sign(std::hint::black_box(&message))));
    let signature = key.sign(&message);
    let verifying = key.verifying_key();
    group.bench_function("ed25519_verify_strict", |b| {
        b.iter(|| verifying.verify_strict(std::hint::black_box(&message), &signature).expect("valid"))
    });
    let messages: Vec<Vec<u8>> = (0..BATCH_SIGNATURES as u64).map(header_like_message).collect();
    let keys: Vec<SigningKey> = (0..BATCH_SIGNATURES).map(|i| signing_key(i as u8)).collect();
    let signatures: Vec<Signature> = keys.iter().zip(&messages).map(|(k, m)| k.sign(m)).collect();
    let verifying_keys: Vec<_> = keys.iter().map(|k| k.verifying_key()).collect();
    let message_refs: Vec<&[u8]> = messages.iter().map(|m| m.as_slice()).collect();
    group.throughput(Throughput::Elements(BATCH_SIGNATURES as u64));
    group.bench_function("ed25519_verify_batch", |b| {
        b.iter(|| ed25519_dalek::verify_batch(&message_refs, &signatures, &verifying_keys).expect("valid"))
    });
    // What the substrate signs and derives keys with: many together
    // (`seed::fact::sign_each`, `KeyPair::derive_all`), the same bytes.
    let pairs: Vec<KeyPair> = keys.iter().map(KeyPair::of).collect();
    for together in SIGNED_TOGETHER {
        let items: Vec<(&[u8], &KeyPair)> =
            message_refs.iter().zip(&pairs).take(together).map(|(message, pair)| (*message, pair)).collect();
        group.throughput(Throughput::Elements(together as u64));
        group.bench_function(BenchmarkId::new("ed25519_sign_together", together), |b| {
            b.iter(|| seed::fact::sign_each(std::hint::black_box(&items)))
        });
    }
    group.throughput(Throughput::Elements(1));
    let secret = [9u8; 32];
    group.bench_function("ed25519_key_derive", |b| b.iter(|| SigningKey::from_bytes(std::hint::black_box(&secret))));
    let secrets: Vec<[u8; 32]> = (0..KEYS_DERIVED_TOGETHER).map(|index| [index as u8; 32]).collect();
    group.throughput(Throughput::Elements(KEYS_DERIVED_TOGETHER as u64));
    group.bench_function("ed25519_keys_derived_together", |b| {
        b.iter(|| KeyPair::derive_all(std::hint::black_box(&secrets)))
    });
    group.finish();
}

fn planted(dir: &Path) -> Land {
    let (land, _) = Land::plant(&dir.join("land"), Arc::new(WallClock::default()), Limits::default()).expect("plant");
    land
}

fn make_beings(land: &Land, count: usize) -> Vec<seed::fact::BeingId> {
    (0..count)
        .map(|index| {
            land.create_being(BeingSpec {
                name: format!("bench-{index}"),
                parent: None,
                cognition: Cognition::Scripted,
                role_flow: Vec::new(),
                default_role: "bench".into(),
                home_space: "/".into(),
            })
            .expect("being")
            .being
        })
        .collect()
}

/// Seals `total` note facts spread over `beings` from `threads` threads, each
/// keeping `window` facts in flight per being; returns when all are durable.
fn seal_many(land: &Land, beings: &[seed::fact::BeingId], total: u64, threads: usize) {
    let body =
        seed::canonical::to_canonical_bytes(&NoteBody { text: "a note of ordinary length".into() }).expect("body");
    let per_thread = beings.len() / threads;
    std::thread::scope(|scope| {
        for chunk in beings.chunks(per_thread) {
            let body = &body;
            scope.spawn(move || {
                let mut in_flight = std::collections::VecDeque::new();
                let quota = total / threads as u64;
                for sent in 0..quota {
                    let being = &chunk[sent as usize % chunk.len()];
                    if in_flight.len() >= SEAL_WINDOW_FACTS * chunk.len() {
                        let pending: seed::land::PendingSeal = in_flight.pop_front().expect("non-empty");
                        pending.wait().expect("sealed");
                    }
                    in_flight.push_back(land.submit(being, KIND_NOTE, body.clone()).expect("submit"));
                }
                for pending in in_flight {
                    pending.wait().expect("sealed");
                }
            });
        }
    });
}

fn bench_seal(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("folder");
    let land = planted(dir.path());
    let beings = make_beings(&land, SEAL_BEINGS);
    let mut group = c.benchmark_group("substrate");
    group.throughput(Throughput::Elements(SEAL_FACTS_PER_ITERATION));
    group.bench_function("seal_durable", |b| {
        b.iter(|| seal_many(&land, &beings, SEAL_FACTS_PER_ITERATION, SEAL_THREADS))
    });
    group.finish();
}

/// The same sealing into a land whose facts are on PostgreSQL: one process,
/// a throwaway cluster on a unix socket (as the tests start it).
fn bench_seal_postgres(c: &mut Criterion) {
    if !std::path::Path::new("/usr/lib/postgresql").is_dir() {
        eprintln!("skipped: substrate/seal_durable_postgres (PostgreSQL's server programs are not installed)");
        return;
    }
    let cluster = postgres::Cluster::start();
    let dir = tempfile::tempdir().expect("folder");
    let location = seed::land::StoreLocation::Postgres { url: cluster.fresh_database() };
    let (land, _) = Land::plant_in(
        &dir.path().join("land"),
        Arc::new(WallClock::default()),
        Limits::default(),
        seed::land::KeySource::Os,
        &location,
    )
    .expect("plant on PostgreSQL");
    let beings = make_beings(&land, SEAL_BEINGS);
    let mut group = c.benchmark_group("substrate");
    group.throughput(Throughput::Elements(SEAL_FACTS_PER_ITERATION));
    group.bench_function("seal_durable_postgres", |b| {
        b.iter(|| seal_many(&land, &beings, SEAL_FACTS_PER_ITERATION, SEAL_THREADS))
    });
    group.finish();
}

fn bench_verify(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("folder");
    let land = planted(dir.path());
    let beings = make_beings(&land, SEAL_BEINGS);
    seal_many(&land, &beings, VERIFY_LAND_FACTS, SEAL_THREADS);
    // `seed verify`'s engine, every schema of this build included.
    let schemas = seed::world::CoreSchemas::new();
    let rules = schemas.rules(land.limits());
    let facts = verify_land(land.store(), SignatureMode::Strict, 1, rules).expect("verify").facts;
    let mut group = c.benchmark_group("substrate");
    group.throughput(Throughput::Elements(facts));
    for threads in [1usize, 2] {
        group.bench_with_input(BenchmarkId::new("verify_land_batch", threads), &threads, |b, &threads| {
            b.iter(|| {
                let mode = SignatureMode::Batch { batch_facts: BATCH_SIGNATURES };
                let report = verify_land(land.store(), mode, threads, rules).expect("verify");
                assert!(report.problems.is_empty());
            })
        });
    }
    group.bench_function("verify_land_strict/1", |b| {
        b.iter(|| verify_land(land.store(), SignatureMode::Strict, 1, rules).expect("verify"))
    });
    group.finish();
}

/// Elements per second from criterion's estimate (mean time per iteration).
fn print_ratios() {
    let Some(sign) = rate("reference/ed25519_sign", 1.0) else { return };
    let strict = rate("reference/ed25519_verify_strict", 1.0);
    let batch = rate("reference/ed25519_verify_batch", BATCH_SIGNATURES as f64);
    let signed_together: Vec<(usize, Option<f64>)> = SIGNED_TOGETHER
        .iter()
        .map(|together| (*together, rate(&format!("reference/ed25519_sign_together/{together}"), *together as f64)))
        .collect();
    let key_derive = rate("reference/ed25519_key_derive", 1.0);
    let keys_together = rate("reference/ed25519_keys_derived_together", KEYS_DERIVED_TOGETHER as f64);
    let facts = VERIFY_LAND_FACTS as f64 + 4.0 + 1.0 + SEAL_BEINGS as f64;
    let seal = rate("substrate/seal_durable", SEAL_FACTS_PER_ITERATION as f64);
    let seal_postgres = rate("substrate/seal_durable_postgres", SEAL_FACTS_PER_ITERATION as f64);
    let verify_1 = rate("substrate/verify_land_batch/1", facts);
    let verify_2 = rate("substrate/verify_land_batch/2", facts);
    let verify_strict =
        rate("substrate/verify_land_strict_1", facts).or_else(|| rate("substrate/verify_land_strict/1", facts));
    println!("\n== figures of this run (per second) and ratios to their reference ==");
    println!("raw ed25519 sign (reference)         {sign:>10.0}/s");
    let line = |name: &str, value: Option<f64>, reference: Option<f64>, reference_name: &str| {
        if let (Some(value), Some(reference)) = (value, reference) {
            println!("{name:<36} {value:>10.0}/s  = {:>5.1}% of {reference_name}", 100.0 * value / reference);
        }
    };
    line("ed25519 strict verify", strict, Some(sign), "raw sign");
    for (together, rate) in signed_together {
        line(&format!("ed25519 signed together ({together})"), rate, Some(sign), "raw sign");
    }
    line("ed25519 keys derived together (64)", keys_together, key_derive, "one key derived");
    line("ed25519 batch verify (256)", batch, Some(sign), "raw sign");
    line("seal, durable, group commit", seal, Some(sign), "raw sign (target >= 50%)");
    line("seal on PostgreSQL, 1 process", seal_postgres, Some(sign), "raw sign");
    line("seal on PostgreSQL, 1 process", seal_postgres, seal, "seal in the folder (target >= 50%)");
    line("verify land, batch, 1 thread", verify_1, batch, "batch verify (target >= 70%)");
    line("verify land, batch, 2 threads", verify_2, batch, "batch verify");
    line("verify land, strict, 1 thread", verify_strict, strict, "strict verify");
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(8)).warm_up_time(Duration::from_secs(2));
    targets = bench_reference, bench_seal, bench_seal_postgres, bench_verify
}

fn main() {
    // What the `seed` binary does first (src/lib.rs).
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
