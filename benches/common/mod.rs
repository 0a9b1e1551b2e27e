//! What the benchmarks share: reading back criterion's estimates to print
//! the ratio tables against the references measured in the same run.

/// Elements per second of a finished benchmark (criterion's mean), from
/// `target/criterion/PATH/new/estimates.json`; `None` if it did not run.
pub fn rate(path: &str, elements: f64) -> Option<f64> {
    let target =
        std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target").into());
    let text = std::fs::read_to_string(format!("{target}/criterion/{path}/new/estimates.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(elements * 1e9 / json["mean"]["point_estimate"].as_f64()?)
}

/// The total time of `pairs` runs of `a` and of `b`, interleaved in ABBA
/// order (a b, b a, a b, …), so the machine's drift and the lands' growth
/// fall on both alike: the ratio of two rates measured in the same run.
#[allow(dead_code)]
pub fn interleaved(
    pairs: usize,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> (std::time::Duration, std::time::Duration) {
    let (mut a_time, mut b_time) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    let timed = |run: &mut dyn FnMut(), total: &mut std::time::Duration| {
        let started = std::time::Instant::now();
        run();
        *total += started.elapsed();
    };
    for pair in 0..pairs {
        if pair % 2 == 0 {
            timed(&mut a, &mut a_time);
            timed(&mut b, &mut b_time);
        } else {
            timed(&mut b, &mut b_time);
            timed(&mut a, &mut a_time);
        }
    }
    (a_time, b_time)
}
