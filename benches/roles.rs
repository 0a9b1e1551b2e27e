//! The roleFlow walk and the composer: a 10-clause flow with 5 stacked
//! clauses against a 30-key context, walk plus composition per iteration
//! (target: at least 1,000,000 per second on one thread). The composed role's
//! digest (canonical CBOR + BLAKE3) is measured on its own. Reference in the
//! same run: raw Ed25519 signing, the project's physical yardstick.
//!
//! Relationship patterns: the worst glob an author can write (`@a*a*…*b`,
//! 31 stars, 63 characters) expanded against beings with the longest name
//! (63 `a`s), beside a glob of one star against the same beings. A
//! backtracking matcher took time exponential in the stars here.

mod common;

use common::rate;
use criterion::{criterion_group, Criterion, Throughput};
use ed25519_dalek::{Signer, SigningKey};
use seed::fact::body::Cognition;
use seed::roles::definition::{CanEntry, RoleRegistry};
use seed::roles::resolve::{Resolvers, StaticWorld};
use seed::roles::{compose, OpenContext, RoleFlow};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// A benchmark measures on the allocator the `seed` binary uses; it chooses the process's allocator (the library only offers it).
#[global_allocator]
static GLOBAL_ALLOCATOR: seed::SeedAllocator = seed::SeedAllocator;

fn flow() -> serde_json::Value {
    json!([
        { "when": { "verb": "summon", "caller.role": "human" }, "role": "human-conversationalist" },
        { "when": { "space.name": "court", "world.court.in-session": true }, "role": "judge" },
        { "when": { "time.hour": { "gte": 22 } }, "role": "friendly" },
        { "when": { "or": [{ "verb": "do" }, { "verb": "be" }] }, "role": "dancer" },
        { "role": "court-watcher" },
        { "stack": true, "when": { "time.sinceLastMoment": { "gte": 60 } }, "role": "emotions:bored" },
        { "stack": true, "when": { "world.court.recent-disturbance": true }, "role": "emotions:alert" },
        { "stack": true, "when": { "space.quality.ambient.tone": "quiet" }, "role": "library-voice" },
        { "stack": true, "when": { "not": { "inHomeSpace": true } }, "role": "friendly" },
        { "stack": true, "when": { "me.quality.mood.level": { "lt": 0.1 } }, "role": "idle" }
    ])
}

fn context() -> OpenContext {
    let mut context = OpenContext::from_json(&json!({
        "verb": "summon", "caller.role": "llm", "caller.cognition": "llm", "caller.name": "bob",
        "space.name": "library", "inHomeSpace": false, "time.hour": 10, "time.dayOfWeek": 2,
        "time.sinceLastMoment": 75, "me.name": "ada", "me.cognition": "llm", "me.previousRole": "court-watcher",
        "world.court.in-session": false, "world.court.recent-disturbance": true, "world.harmony.tick.alive": true,
        "space.quality.ambient.tone": "quiet", "me.quality.mood.level": 0.5
    }))
    .expect("context");
    for index in 0..13 {
        context.insert(format!("world.filler.key-{index}"), index);
    }
    assert_eq!(context.len(), 30);
    context
}

fn bench(c: &mut Criterion) {
    let dirs = [PathBuf::from("roles"), PathBuf::from("extensions/emotions/roles"), PathBuf::from("fixtures/roles")];
    let (registry, _) = RoleRegistry::load_dirs(&dirs);
    let bound = RoleFlow::from_json(&flow()).expect("flow").bind(&registry, None).expect("bind");
    let context = context();
    let walk = bound.walk(&context, Cognition::Llm);
    assert_eq!(walk.primary.as_ref().map(|r| r.name.as_ref()), Some("court-watcher"));
    assert_eq!(walk.modifiers.len(), 4);

    let mut group = c.benchmark_group("roles");
    group.throughput(Throughput::Elements(1));
    let key = SigningKey::from_bytes(&[7; 32]);
    let message = [0x89u8; 150];
    group.bench_function("reference_ed25519_sign", |b| b.iter(|| key.sign(std::hint::black_box(&message))));
    group.bench_function("walk_and_compose", |b| {
        b.iter(|| {
            let walk = bound.walk(std::hint::black_box(&context), Cognition::Llm);
            compose(walk.primary.as_ref(), &walk.modifiers)
        })
    });
    let composed = compose(walk.primary.as_ref(), &walk.modifiers);
    group.bench_function("composed_digest", |b| b.iter(|| std::hint::black_box(&composed).digest()));
    group.finish();

    // Patterns: 100 beings with the longest name a being may have, each
    // differing only in its last characters.
    let mut world = StaticWorld::default();
    for index in 0..PATTERN_BEINGS {
        world.add(&format!("{}{index:02}", "a".repeat(61)), None, "/");
    }
    let resolvers = Resolvers::standard();
    let worst = [CanEntry::Pattern(format!("@{}b", "a*".repeat(31)).into())];
    let plain = [CanEntry::Pattern("@a*".into())];
    assert!(resolvers.expand(&worst, "me", &world).is_empty());
    assert_eq!(resolvers.expand(&plain, "me", &world).len(), PATTERN_BEINGS);
    let mut group = c.benchmark_group("patterns");
    group.throughput(Throughput::Elements(PATTERN_BEINGS as u64));
    group.bench_function("one_star_over_100_beings", |b| {
        b.iter(|| resolvers.expand(std::hint::black_box(&plain), "me", &world))
    });
    group.bench_function("31_stars_over_100_beings", |b| {
        b.iter(|| resolvers.expand(std::hint::black_box(&worst), "me", &world))
    });
    group.finish();
}

/// Beings a pattern is matched against in the pattern benchmark.
const PATTERN_BEINGS: usize = 100;

fn print_ratios() {
    let (Some(sign), Some(walk), Some(digest)) = (
        rate("roles/reference_ed25519_sign", 1.0),
        rate("roles/walk_and_compose", 1.0),
        rate("roles/composed_digest", 1.0),
    ) else {
        return;
    };
    println!("\n== figures of this run (per second) ==");
    println!("raw ed25519 sign (reference)      {sign:>12.0}/s");
    println!("walk + compose (target >= 1e6)    {walk:>12.0}/s  = {:.1}x the sign rate", walk / sign);
    println!("composed role digest              {digest:>12.0}/s  = {:.1}x the sign rate", digest / sign);
    if let (Some(plain), Some(worst)) =
        (rate("patterns/one_star_over_100_beings", 1.0), rate("patterns/31_stars_over_100_beings", 1.0))
    {
        println!("pattern @a* over 100 beings       {plain:>12.0}/s");
        println!("pattern of 31 stars, 100 beings   {worst:>12.0}/s  = {:.2}x the one-star rate", worst / plain);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = bench
}

fn main() {
    // What the `seed` binary does first (src/lib.rs).
    seed::configure_allocator();
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
