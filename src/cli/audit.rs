//! `seed audit [--being @name] [--tool NAME] [--since TIME] [--bundle FILE…]
//! [--json]`: every tool call and every step of an approval, each line
//! citing its fact, read from the land (or from exported bundles alone,
//! with no land at all) and the reels it comes from verified
//! (`seed::audit`; docs/approvals.md). It writes nothing; it exits 1 when a
//! reel does not verify.

use super::print_json;
use anyhow::{bail, Context, Result};
use seed::audit::{audit_bundles, audit_land, Audit, AuditFilter};
use seed::bundle::Bundle;
use seed::check::SignatureMode;
use seed::fact::BeingId;
use seed::land::Land;
use std::path::PathBuf;
use std::process::ExitCode;

pub struct AuditArguments {
    pub being: Option<String>,
    pub tool: Option<String>,
    pub since: Option<String>,
    pub bundles: Vec<PathBuf>,
    pub json: bool,
}

/// `--since`: an RFC 3339 time, or milliseconds since 1970.
fn since_ms(given: &str) -> Result<u64> {
    match seed::view::parse_time_ms(given) {
        Some(ms) => Ok(ms),
        None => {
            bail!("--since {given:?} is neither an RFC 3339 time (2026-11-25T09:00:00Z) nor milliseconds since 1970")
        }
    }
}

/// The audit of the land in `dir` (opened read only).
pub fn audit(land: &Land, arguments: AuditArguments) -> Result<ExitCode> {
    let filter = AuditFilter {
        being: arguments.being.as_deref().map(|being| land.resolve(being)).transpose()?,
        tool: arguments.tool.clone(),
        since_ms: arguments.since.as_deref().map(since_ms).transpose()?,
    };
    let schemas = seed::world::CoreSchemas::new();
    let mode = SignatureMode::Batch { batch_facts: land.limits().verify_batch_facts };
    let audit = audit_land(land.store(), &filter, mode, schemas.rules(land.limits()))?;
    show(&audit, arguments.json)
}

/// The audit of bundles alone: no land is opened.
pub fn audit_of_bundles(arguments: AuditArguments) -> Result<ExitCode> {
    let mut bundles = Vec::new();
    for file in &arguments.bundles {
        let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let bundle = Bundle::decode(&bytes).with_context(|| format!("{} is not a readable bundle", file.display()))?;
        bundles.push((file.display().to_string(), bundle));
    }
    let being = match arguments.being.as_deref() {
        None => None,
        Some(given) => Some(being_in_bundles(given, &bundles)?),
    };
    let filter = AuditFilter {
        being,
        tool: arguments.tool.clone(),
        since_ms: arguments.since.as_deref().map(since_ms).transpose()?,
    };
    let schemas = seed::world::CoreSchemas::new();
    let limits = seed::limits::Limits::default();
    let audit = audit_bundles(&bundles, &filter, schemas.rules(&limits))?;
    show(&audit, arguments.json)
}

/// `--being` among bundles: an id, or the name a bundle's genesis gives.
fn being_in_bundles(given: &str, bundles: &[(String, Bundle)]) -> Result<BeingId> {
    if let Some(id) = BeingId::from_hex(given) {
        return Ok(id);
    }
    let name = given.trim_start_matches('@');
    let everyone = audit_bundles(
        bundles,
        &AuditFilter::default(),
        seed::world::CoreSchemas::new().rules(&seed::limits::Limits::default()),
    )?;
    match everyone.names.iter().find(|(_, known)| known.as_str() == name) {
        Some((id, _)) => Ok(*id),
        None => bail!("--being {given}: no bundle given holds a being named @{name}"),
    }
}

fn show(audit: &Audit, json: bool) -> Result<ExitCode> {
    if json {
        print_json(&audit.to_json())?;
    } else {
        for line in &audit.lines {
            println!("{}", audit.line_text(line));
        }
        let facts: u64 = audit.reels.iter().map(|reel| reel.facts).sum();
        println!(
            "{} lines from {} reels ({facts} facts){}",
            audit.lines.len(),
            audit.reels.len(),
            if audit.verified() { ", every reel verified: signatures, links and seqs" } else { "" }
        );
        for reel in audit.reels.iter().filter(|reel| !reel.problems.is_empty()) {
            for problem in &reel.problems {
                eprintln!("problem: {problem}");
            }
        }
    }
    if !audit.verified() {
        eprintln!("error: a reel the audit reads does not verify: its lines cannot be trusted");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
