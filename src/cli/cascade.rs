//! `seed cascade SIGNAL [--json]`: one cascade signal's flow as a tree, every
//! delivery and drop citing its fact (`seed::cascade_view`, docs/cascade.md).

use super::print_json;
use anyhow::Result;
use seed::land::Land;
use serde_json::json;
use std::process::ExitCode;

pub fn show(land: &Land, signal: &str, json: bool) -> Result<ExitCode> {
    let trees = seed::cascade_view::trees_of(land.store(), signal)?;
    if json {
        let signals: Vec<_> = trees.iter().map(|tree| tree.to_json()).collect();
        print_json(&json!({ "signals": signals }))?;
        return Ok(ExitCode::SUCCESS);
    }
    for (index, tree) in trees.iter().enumerate() {
        if index > 0 {
            println!();
        }
        print!("{}", tree.to_text());
    }
    Ok(ExitCode::SUCCESS)
}
