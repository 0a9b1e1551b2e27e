//! `seed mcp-schemas WORLD [--check] [--json]`: asks each MCP server the
//! world's extensions declare for its tools (`tools/list`) and records the
//! description and input schema of each tool it offers as an operation in
//! the extension's folder (`mcp-schemas/SERVER.json`, docs/mcp.md). The
//! verb layer checks a call's arguments against the recorded schema and a
//! model is offered it; both read the file, never the server, so a moment
//! and its replay see the same schema. `--check` writes nothing and exits 1
//! when a recorded file is missing or differs from what the server says now.

use super::print_json;
use anyhow::{bail, Context, Result};
use seed::engine::fixture::Fixture;
use seed::mcp_client::McpTools;
use seed::tools::{schemas_file, McpSchemasFile, McpServerSpec};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// What became of one server's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
    Written,
    Unchanged,
    /// `--check`: the file is missing or says something else.
    Stale,
}

impl Recorded {
    fn as_str(self) -> &'static str {
        match self {
            Recorded::Written => "written",
            Recorded::Unchanged => "unchanged",
            Recorded::Stale => "stale",
        }
    }
}

pub fn mcp_schemas(world: &Path, check: bool, json: bool) -> Result<ExitCode> {
    let fixture = Fixture::load(world)?;
    let loaded = fixture.load_extensions();
    for problem in &loaded.problems {
        eprintln!("{problem}");
    }
    let servers = loaded.mcp_servers();
    if servers.is_empty() {
        bail!(
            "{} declares no MCP server: an extension declares one with [[provides.mcp]] (docs/mcp.md){}",
            world.display(),
            if loaded.skipped.is_empty() { String::new() } else { " (some extensions were skipped: see above)".into() }
        );
    }
    let tools = McpTools::new(servers.clone())?;
    let mut lines = Vec::new();
    let mut stale = false;
    for spec in &servers {
        let recorded = record(&tools, spec, check)?;
        stale |= recorded.0 == Recorded::Stale;
        let file = schemas_file(&spec.extension_dir, &spec.name);
        if !json {
            println!("{}: {} tools recorded in {} ({})", spec.name, recorded.1, file.display(), recorded.0.as_str());
        }
        lines.push(json!({
            "server": spec.name,
            "file": file.display().to_string(),
            "tools": recorded.1,
            "state": recorded.0.as_str(),
        }));
    }
    if json {
        print_json(&json!({ "ok": !stale, "servers": lines }))?;
    }
    if stale {
        eprintln!("a recorded schema differs from its server's: run `seed mcp-schemas {}`", world.display());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists `spec`'s tools and writes (or, with `check`, compares) its file:
/// what became of it and how many tools it records.
fn record(tools: &McpTools, spec: &McpServerSpec, check: bool) -> Result<(Recorded, usize)> {
    let offered = tools
        .list_tools(&spec.name)
        .map_err(|no_answer| anyhow::anyhow!("{} ({}): {}", spec.name, spec.transport.describe(), no_answer.reason))?;
    let missing: Vec<&String> = spec.tools.keys().filter(|tool| !offered.contains_key(*tool)).collect();
    if !missing.is_empty() {
        let names: Vec<&String> = offered.keys().collect();
        bail!(
            "{} offers no tool named {} (its tools: {}); fix `tools` in {}",
            spec.name,
            missing.iter().map(|name| format!("{name:?}")).collect::<Vec<_>>().join(", "),
            names.iter().map(|name| name.as_str()).collect::<Vec<_>>().join(", "),
            spec.origin
        );
    }
    let file = McpSchemasFile {
        server: spec.name.clone(),
        tools: offered.into_iter().filter(|(tool, _)| spec.tools.contains_key(tool)).collect(),
    };
    for (tool, described) in &file.tools {
        seed::tools::arg_schema_of(&described.input_schema)
            .map_err(|reason| anyhow::anyhow!("{}'s tool {tool}: {reason}", spec.name))?;
    }
    let text = format!("{}\n", serde_json::to_string_pretty(&file)?);
    let path = schemas_file(&spec.extension_dir, &spec.name);
    let before = std::fs::read_to_string(&path).ok();
    let count = file.tools.len();
    if before.as_deref() == Some(text.as_str()) {
        return Ok((Recorded::Unchanged, count));
    }
    if check {
        return Ok((Recorded::Stale, count));
    }
    let folder = path.parent().expect("a schemas file is in a folder");
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    // Written whole then renamed: a reader sees the old file or the new one.
    let temporary = folder.join(format!(".{}.json.new", spec.name));
    std::fs::write(&temporary, &text).with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok((Recorded::Written, count))
}
