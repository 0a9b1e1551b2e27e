//! The verbs on one land's facts and keys: plant, token, beings, reel,
//! verify, export, import, reindex, rotate-key, copy. Each prints text, or with
//! `--json` one JSON value on stdout in the API's style (camelCase keys, ids
//! and digests as hex, times as milliseconds beside RFC 3339, `null` for
//! what is absent); docs/json/ holds the schema of each.

use super::{print_json, progress};
use anyhow::{Context, Result};
use seed::bundle;
use seed::check::{verify_being, verify_land_watched, SignatureMode};
use seed::clock::WallClock;
use seed::fact::body::GenesisBody;
use seed::land::{Land, StoreLocation};
use seed::limits::Limits;
use seed::view::{self, format_time_ms};
use serde_json::{json, Value as Json};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub fn open(dir: &Path) -> Result<Land> {
    Ok(Land::open(dir)?)
}

/// Opens a land for a verb that only reads it: nothing of the land is
/// written by opening it (see `Land::open_read_only`).
pub fn open_read_only(dir: &Path) -> Result<Land> {
    Ok(Land::open_read_only(dir)?)
}

/// Where the facts of the land in `dir` are, given `--store`: the store a
/// planted land recorded (a `--store` naming another is refused), or for a
/// land still to plant the one given (the folder by default).
pub fn store_for(dir: Option<&Path>, given: Option<&str>) -> Result<StoreLocation> {
    let given = given.map(StoreLocation::parse).transpose()?;
    let recorded = match dir {
        Some(dir) => Land::recorded_store(dir)?,
        None => None,
    };
    match (recorded, given) {
        (Some(recorded), Some(given)) if !recorded.same_place(&given) => Err(seed::land::LandError::StoreElsewhere {
            dir: dir.map(Path::to_path_buf).unwrap_or_default(),
            recorded: recorded.describe(),
            given: given.describe(),
        }
        .into()),
        (Some(recorded), _) => Ok(recorded),
        (None, given) => Ok(given.unwrap_or_default()),
    }
}

pub fn copy(from: &Path, to: &Path, store: &StoreLocation, json: bool) -> Result<ExitCode> {
    let report = seed::land::copy::copy_land(from, to, store, &Limits::default())?;
    if json {
        print_json(&json!({"from": from, "to": to, "store": store.describe(), "facts": report.facts,
            "forkProofs": report.fork_proofs, "files": report.files}))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Copied {} facts, {} fork proof(s) and {} other file(s) from {} to {} (facts in {})",
        report.facts,
        report.fork_proofs,
        report.files,
        from.display(),
        to.display(),
        store.describe()
    );
    println!("Check it with `seed --land {} verify`.", to.display());
    Ok(ExitCode::SUCCESS)
}

pub fn plant(dir: &Path, store: &StoreLocation, json: bool) -> Result<ExitCode> {
    let (land, report) =
        Land::plant_in(dir, Arc::new(WallClock::default()), Limits::default(), seed::land::KeySource::Os, store)?;
    land.close()?;
    if json {
        let beings: Vec<Json> = report
            .beings
            .iter()
            .map(|being| {
                json!({"name": being.name, "id": being.id.to_hex(), "cognition": being.cognition.as_str(),
                    "parent": being.parent.as_ref().map(|parent| format!("@{parent}"))})
            })
            .collect();
        print_json(&json!({"land": report.dir, "beings": beings, "operatorToken": report.operator_token}))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("Planted a land at {}", report.dir.display());
    for being in &report.beings {
        let parent = being.parent.as_ref().map(|parent| format!("  child of @{parent}")).unwrap_or_default();
        println!("  @{:<14} {}  {:<9}{parent}", being.name, being.id.short(), being.cognition.as_str());
    }
    println!("Operator token (shown once; only its hash is stored):");
    println!("  {}", report.operator_token);
    Ok(ExitCode::SUCCESS)
}

pub fn token(dir: &Path, json: bool) -> Result<ExitCode> {
    let land = open(dir)?;
    let token = land.issue_operator_token()?;
    land.close()?;
    if json {
        print_json(&json!({ "token": token }))?;
    } else {
        println!("New operator token (shown once; only its hash is stored; every earlier token stops working):");
        println!("  {token}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn beings(land: &Land, json: bool) -> Result<ExitCode> {
    let store = land.store();
    let mut listed = Vec::new();
    for being in store.beings()? {
        let genesis: GenesisBody = land.genesis(&being)?;
        let head = store.head(&being)?.context("a listed being has no head")?;
        listed.push((genesis, being, head));
    }
    // A parent's name is its genesis's, read once above (none for a parent this land does not hold).
    let names: std::collections::BTreeMap<_, _> =
        listed.iter().map(|(genesis, being, _)| (*being, genesis.name.clone())).collect();
    let mut rows: Vec<_> = listed
        .into_iter()
        .map(|(genesis, being, head)| {
            let parent_name = genesis.parent.and_then(|parent| names.get(&parent).cloned());
            (genesis, being, head, parent_name)
        })
        .collect();
    rows.sort_by(|left, right| left.0.name.cmp(&right.0.name));
    // What each being spent on model calls, against its budgets in the
    // windows holding the land's latest stored time (folded, like replay).
    let world = seed::engine::world_at_end(land)?;
    let latest_ms = rows.iter().map(|(_, _, head, _)| head.stored_time_ms).max().unwrap_or(0);
    let spend_of = |being: &seed::fact::BeingId| {
        world.beings.get(being).map(|row| seed::spend::being_spend_json(&world, row, latest_ms))
    };
    if json {
        let list: Vec<Json> = rows
            .iter()
            .map(|(genesis, being, head, parent_name)| {
                json!({
                    "name": genesis.name, "id": being.to_hex(), "cognition": genesis.cognition.as_str(),
                    "parent": parent_name.as_ref().map(|name| format!("@{name}")),
                    "parentId": genesis.parent.map(|parent| parent.to_hex()),
                    "home": genesis.home_space, "defaultRole": genesis.default_role,
                    "facts": head.seq + 1, "ended": head.ended,
                    "lastTimeMs": head.stored_time_ms, "lastTime": format_time_ms(head.stored_time_ms),
                    "spend": spend_of(being),
                })
            })
            .collect();
        print_json(&Json::Array(list))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:<16} {:<13} {:<10} {:<15} {:>6}", "NAME", "ID", "COGNITION", "PARENT", "FACTS");
    for (genesis, being, head, parent_name) in &rows {
        let parent = match (parent_name, genesis.parent) {
            (Some(name), _) => format!("@{name}"),
            (None, Some(parent)) => parent.short(),
            (None, None) => "—".to_string(),
        };
        println!(
            "@{:<15} {:<13} {:<10} {:<15} {:>6}",
            genesis.name,
            being.short(),
            genesis.cognition.as_str(),
            parent,
            head.seq + 1
        );
    }
    // Spend, for the beings that called a model or answer to a budget.
    for (genesis, being, _, _) in &rows {
        let Some(row) = world.beings.get(being) else { continue };
        let spent = world.spend.beings.get(being).map(|windows| windows.total).unwrap_or_default();
        let lines = seed::spend::budget_lines(&world, row, latest_ms);
        if spent.calls == 0 && lines.is_empty() {
            continue;
        }
        let mut line = format!(
            "@{}: {} model call(s), {} tokens, cost {} micros",
            genesis.name,
            spent.calls,
            spent.tokens(),
            spent.cost_micros
        );
        for budget in &lines {
            let state = match budget.limit.checked_sub(budget.spent).filter(|left| *left > 0) {
                Some(left) => format!("{left} left"),
                None => "spent: no calls until the next window".to_string(),
            };
            line.push_str(&format!(
                "; {} {} of {} this {} ({state})",
                budget.budget,
                budget.spent,
                budget.limit,
                budget.per.as_str()
            ));
        }
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn reel(land: &Land, reference: &str, json: bool) -> Result<ExitCode> {
    let being = land.resolve(reference)?;
    let head = land.store().head(&being)?.context("the being has no head")?;
    let facts = land.store().reel(&being, 0, head.seq + 1)?;
    let genesis: GenesisBody = land.genesis(&being)?;
    // Token and cost accounting over the reel's model calls: its LLM acts,
    // its panels' calls, and its `spend` facts (calls whose moments sealed no act).
    let mut totals = seed::llm::LlmTotals::default();
    for stored in &facts {
        let records: Vec<seed::llm::LlmRecord> = match stored.fact.kind() {
            seed::world::body::KIND_ACT => match stored.fact.body_as::<seed::world::ActBody>() {
                Ok(act) => act.model_calls().cloned().collect(),
                Err(_) => Vec::new(),
            },
            seed::spend::KIND_SPEND => {
                stored.fact.body_as::<seed::spend::SpendBody>().ok().map(|spend| spend.llm).into_iter().collect()
            }
            _ => Vec::new(),
        };
        for record in &records {
            totals.add(record);
        }
    }
    let seed::llm::LlmTotals { calls, prompt_tokens, completion_tokens, cost_micros } = totals;
    if json {
        let list: Vec<_> = facts.iter().map(view::stored_fact_json).collect();
        let llm = json!({ "calls": calls, "promptTokens": prompt_tokens,
            "completionTokens": completion_tokens, "costMicros": cost_micros });
        print_json(&json!({ "being": being.to_hex(), "name": genesis.name, "facts": list, "llm": llm }))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("@{} {} ({}, {} facts)", genesis.name, being.to_hex(), genesis.cognition.as_str(), facts.len());
    for stored in &facts {
        println!("{}", view::stored_fact_line(stored));
    }
    if calls > 0 {
        println!(
            "llm: {calls} call(s), {prompt_tokens} prompt + {completion_tokens} completion tokens, cost {cost_micros} micros"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The options of `seed verify` besides the land.
pub struct VerifyArguments<'a> {
    pub being: Option<&'a str>,
    pub strict: bool,
    pub threads: Option<usize>,
    pub write_checkpoint: bool,
    pub json: bool,
}

/// Verifies every signature, always (a checkpoint is never used here); after
/// a clean land-wide verification, records a new checkpoint unless told not to.
pub fn verify(land: &Land, arguments: VerifyArguments<'_>) -> Result<ExitCode> {
    let VerifyArguments { being, strict, threads, write_checkpoint, json } = arguments;
    let mode = if strict {
        SignatureMode::Strict
    } else {
        SignatureMode::Batch { batch_facts: land.limits().verify_batch_facts }
    };
    let threads = threads.or_else(|| std::thread::available_parallelism().ok().map(|count| count.get())).unwrap_or(1);
    // Every body is held to the schema this build writes it by.
    let schemas = seed::world::CoreSchemas::new();
    let mut checkpoint = Json::Null;
    let mut checkpoint_line = None;
    let (mut snapshots, mut snapshot_lines) = (Json::Null, Vec::new());
    let (problems, beings, facts, only) = match being {
        Some(reference) => {
            let id = land.resolve(reference)?;
            let report = verify_being(land.store(), &id, mode, schemas.rules(land.limits()))?;
            (report.problems, 1, report.facts, Some((id, report.name)))
        }
        None => {
            let watcher = progress::for_command("seed verify");
            let report = verify_land_watched(land.store(), mode, threads, schemas.rules(land.limits()), &*watcher)?;
            watcher.finish();
            let mirror_of = land.meta().mirror_of.clone();
            if let (Some(url), Some((facts, digest))) = (mirror_of, report.verified_digest) {
                // A mirror holds none of its land's keys: nothing of it is signed here.
                checkpoint = json!({"written": false, "facts": facts, "digest": digest.to_hex(),
                    "reason": "a mirror holds none of its land's keys"});
                checkpoint_line = Some(format!(
                    "a mirror of the land at {url}: no checkpoint is written (it holds none of that land's keys)"
                ));
            } else if let (Some((facts, digest)), true) = (report.verified_digest, write_checkpoint) {
                // A land without the root's key (an imported copy) still verifies.
                let written = land.write_verified_checkpoint(facts, digest);
                checkpoint = json!({"written": written.is_ok(), "facts": facts, "digest": digest.to_hex(),
                    "reason": written.as_ref().err().map(ToString::to_string)});
                checkpoint_line = Some(match written {
                    Ok(_) => format!("checkpoint: the signatures of {facts} facts are recorded as verified"),
                    Err(error) => format!("checkpoint not written: {error}"),
                });
                (snapshots, snapshot_lines) = vouch_for_snapshots(land, facts);
            } else if !report.problems.is_empty() {
                // Nothing on the shelf is trusted until a clean verification vouches again.
                if let Ok(true) = land.snapshots().withdraw_vouches() {
                    snapshot_lines.push("snapshots: no longer vouched for (the land has problems)".to_string());
                    snapshots = json!({"vouched": [], "refused": [], "withdrawn": true});
                }
            }
            (report.problems, report.beings, report.facts, None)
        }
    };
    let exit = if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    if json {
        let (being_id, name) = match &only {
            Some((id, name)) => (Some(id.to_hex()), name.clone()),
            None => (None, None),
        };
        print_json(&json!({
            "being": being_id, "name": name, "beings": beings, "facts": facts, "ok": problems.is_empty(),
            "problems": problems.iter().map(seed::check::Problem::to_json).collect::<Vec<_>>(),
            "checkpoint": checkpoint,
            "snapshots": snapshots,
        }))?;
        return Ok(exit);
    }
    if let Some(line) = checkpoint_line {
        println!("{line}");
    }
    for line in snapshot_lines {
        println!("{line}");
    }
    let summary = format!("{beings} being{}, {facts} facts", if beings == 1 { "" } else { "s" });
    if problems.is_empty() {
        println!("verified {summary}: no problems");
        return Ok(exit);
    }
    for problem in &problems {
        println!("{problem}");
    }
    println!("verified {summary}: {} problem(s)", problems.len());
    Ok(exit)
}

/// After a clean verification of `facts` facts: has the root vouch for the
/// world snapshots that hold (replay and opening then start from them).
/// Returns the JSON report and the lines to print.
fn vouch_for_snapshots(land: &Land, facts: u64) -> (Json, Vec<String>) {
    match seed::snapshots::vouch(land, facts) {
        Ok(report) => {
            let mut lines = Vec::new();
            if !report.vouched.is_empty() {
                lines.push(format!("snapshots: {} vouched for", report.vouched.len()));
            }
            for (cursor, reason) in &report.refused {
                lines.push(format!("snapshot at cursor {cursor} not vouched for: {reason}"));
            }
            let refused: Vec<Json> =
                report.refused.iter().map(|(cursor, reason)| json!({"cursor": cursor, "reason": reason})).collect();
            (json!({"vouched": report.vouched, "refused": refused, "withdrawn": false}), lines)
        }
        Err(error) => (
            json!({"vouched": [], "refused": [], "withdrawn": false, "error": error.to_string()}),
            vec![format!("snapshots not vouched for: {error}")],
        ),
    }
}

pub fn export(land: &Land, reference: &str, output: &Path, json: bool) -> Result<ExitCode> {
    let id = land.resolve(reference)?;
    let genesis: GenesisBody = land.genesis(&id)?;
    let facts = bundle::export(land, &id, output, &seed::world::CoreSchemas::new())?;
    if json {
        let bytes = std::fs::metadata(output).map(|metadata| metadata.len()).ok();
        print_json(
            &json!({"being": id.to_hex(), "name": genesis.name, "facts": facts, "file": output, "bytes": bytes}),
        )?;
    } else {
        println!("exported @{} ({facts} facts) to {}", genesis.name, output.display());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn import(land: &Land, file: &Path, json: bool) -> Result<ExitCode> {
    let watcher = progress::for_command("seed import");
    let imported = bundle::import_watched(land, file, &seed::world::CoreSchemas::new(), &*watcher);
    watcher.finish();
    let report = imported.with_context(|| format!("importing {}", file.display()))?;
    if json {
        print_json(&json!({"being": report.being.to_hex(), "name": report.name, "file": file,
            "imported": report.imported, "alreadyPresent": report.already_present}))?;
    } else {
        println!(
            "imported @{} ({}): {} new fact(s), {} already present",
            report.name,
            report.being.short(),
            report.imported,
            report.already_present
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn reindex(land: &Land, json: bool) -> Result<ExitCode> {
    let report = land.store().reindex()?;
    // The memories (and the rest of the world) are derived too: folded
    // again from the facts, and every snapshot held to that fold.
    let derived = seed::snapshots::rebuild(land)?;
    if json {
        let unreadable: Vec<Json> =
            report.unreadable_records.iter().map(|(being, seq)| json!({"being": being.to_hex(), "seq": seq})).collect();
        print_json(&json!({"facts": report.facts, "beings": report.beings, "forkProofs": report.fork_proofs,
            "unreadableRecords": unreadable,
            "memories": {"beings": derived.beings_remembering, "items": derived.items,
                         "digest": derived.memories_digest.to_hex()},
            "snapshots": {"agreed": derived.agreed, "rebuilt": derived.rebuilt}}))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("reindexed {} facts of {} beings ({} fork proofs)", report.facts, report.beings, report.fork_proofs);
    for (being, seq) in &report.unreadable_records {
        println!("  left out unreadable record: being {} seq {seq} (run `seed verify`)", being.short());
    }
    println!(
        "memories folded from the facts: {} item(s) of {} being(s) (digest {})",
        derived.items,
        derived.beings_remembering,
        derived.memories_digest.short()
    );
    if !derived.agreed.is_empty() || !derived.rebuilt.is_empty() {
        println!(
            "snapshots: {} agree with the fold, {} written again from it{}",
            derived.agreed.len(),
            derived.rebuilt.len(),
            if derived.rebuilt.is_empty() { "" } else { " (run `seed verify` to vouch for them)" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn rotate_key(land: &Land, reference: &str, json: bool) -> Result<ExitCode> {
    let id = land.resolve(reference)?;
    let genesis: GenesisBody = land.genesis(&id)?;
    let sealed = land.rotate_key(&id)?;
    if json {
        print_json(&json!({"being": id.to_hex(), "name": genesis.name, "seq": sealed.seq,
            "factId": sealed.id.to_hex(), "landSeq": sealed.land_seq,
            "storedTimeMs": sealed.stored_time_ms, "storedTime": format_time_ms(sealed.stored_time_ms)}))?;
    } else {
        println!("rotated the key of @{}: rotate-key fact seq {} ({})", genesis.name, sealed.seq, sealed.id.short());
    }
    Ok(ExitCode::SUCCESS)
}
