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
