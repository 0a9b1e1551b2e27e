//! `seed script check` and `seed script run`: a Rhai script on its own,
//! without a world, for script authors. A problem in the script exits 1
//! naming its file, line and column; unreadable input exits 2.

use super::bad_input;
use anyhow::Result;
use seed::authoring::{script_problem, Problem};
use seed::script::{check_script, ScriptEngine, ScriptError, ScriptKind};
use serde_json::{json, Value};
use std::path::Path;
use std::process::ExitCode;

fn read(path: &Path, what: &str) -> std::result::Result<String, String> {
    std::fs::read_to_string(path).map_err(|error| format!("{what} {}: {error}", path.display()))
}

/// The script's failure as the author reads it: `FILE:LINE:COLUMN: reason`.
fn failure_line(file: &Path, error: &ScriptError) -> String {
    script_problem(&file.display().to_string(), error).to_string()
}

/// Checks each file; exits 1 when any does not compile, 2 when one cannot be read.
pub fn check(files: &[std::path::PathBuf], kind: ScriptKind, as_json: bool) -> Result<ExitCode> {
    let inputs = kind.inputs();
    let mut reports = Vec::new();
    let mut failed = false;
    for file in files {
        let source = match read(file, "script") {
            Ok(source) => source,
            Err(message) => return bad_input(message, as_json),
        };
        let checked = check_script(&source, kind);
        failed |= checked.is_err();
        if as_json {
            let (error, warnings) = match &checked {
                Ok(warnings) => {
                    (Value::Null, warnings.iter().map(|warning| warning_json(file, warning)).collect::<Vec<_>>())
                }
                Err(error) => (script_problem(&file.display().to_string(), error).to_json(), Vec::new()),
            };
            reports.push(json!({
                "file": file.display().to_string(), "ok": checked.is_ok(), "error": error, "warnings": warnings,
            }));
            continue;
        }
        match &checked {
            Ok(warnings) => {
                for warning in warnings {
                    println!("warning: {}: {warning}", file.display());
                }
                println!(
                    "{}: compiles as a {} script (given {}), {} warning(s)",
                    file.display(),
                    kind_name(kind),
                    inputs.join(", "),
                    warnings.len()
                );
            }
            Err(error) => eprintln!("error: {}", failure_line(file, error)),
        }
    }
    if as_json {
        let report = json!({"kind": kind_name(kind), "inputs": inputs, "ok": !failed, "scripts": reports});
        super::print_json(&report)?;
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// A face-key warning as the other authoring problems are written in JSON.
fn warning_json(file: &Path, warning: &seed::script::ScriptWarning) -> Value {
    let file = file.display().to_string();
    let reason = format!("face.{} is not a key of the face ({})", warning.key, seed::face::FACE_KEYS_KNOWN.join(", "));
    let suggestion = warning.suggestion.as_ref().map(|key| format!("face.{key}"));
    Problem::warning(file, format!("face.{}", warning.key), reason).suggesting(suggestion).to_json()
}

fn kind_name(kind: ScriptKind) -> &'static str {
    match kind {
        ScriptKind::Role => "role",
        ScriptKind::Op => "DO operation",
        ScriptKind::See => "see-resolver",
        ScriptKind::Hook => "hook",
    }
}

/// Runs a role script once on `face` and prints the verb call it returns.
/// The face may be a face object itself, or any JSON holding one under
/// `face` (a moment as `GET /api/v1/beings/NAME/moments/SEQ` returns it).
pub fn run(file: &Path, face: &Path, seed: u64, as_json: bool) -> Result<ExitCode> {
    let source = match read(file, "script") {
        Ok(source) => source,
        Err(message) => return bad_input(message, as_json),
    };
    let face_value: Value = match read(face, "face").and_then(|text| {
        serde_json::from_str(&text).map_err(|error| format!("face {}: not valid JSON: {error}", face.display()))
    }) {
        Ok(value) => value,
        Err(message) => return bad_input(message, as_json),
    };
    let face_value = match face_value {
        Value::Object(mut fields) if !fields.contains_key("me") && fields.get("face").is_some_and(Value::is_object) => {
            fields.remove("face").unwrap_or_default()
        }
        Value::Object(fields) => Value::Object(fields),
        _ => return bad_input(format!("face {}: a face is a JSON object (me, can, see, …)", face.display()), as_json),
    };
    let engine = ScriptEngine::new();
    let output = match engine.run(&source, &[("face", &face_value)], seed) {
        Ok(output) => output,
        Err(error) => {
            if as_json {
                let report = json!({"file": file.display().to_string(), "ok": false,
                    "error": script_problem(&file.display().to_string(), &error).to_json()});
                super::print_json(&report)?;
            } else {
                eprintln!("error: {}", failure_line(file, &error));
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    let parsed = seed::moment::parse_call(&output);
    if as_json {
        let (call, content, error) = match &parsed {
            Ok((call, content)) => {
                (call.as_ref().map_or(Value::Null, |call| call.to_json()), json!(content), Value::Null)
            }
            Err(error) => {
                let reason = format!("the returned value is not a verb call: {error}");
                (Value::Null, Value::Null, Problem::error(file.display().to_string(), "", reason).to_json())
            }
        };
        let report = json!({"file": file.display().to_string(), "ok": parsed.is_ok(), "returned": output,
            "call": call, "content": content, "error": error});
        super::print_json(&report)?;
    } else {
        println!("returned: {}", serde_json::to_string(&output)?);
        match &parsed {
            Ok((Some(call), content)) => {
                println!("call:     {}", serde_json::to_string(&call.to_json())?);
                if let Some(content) = content {
                    println!("content:  {content}");
                }
            }
            Ok((None, _)) => println!("call:     none (the moment would end without an act)"),
            Err(error) => eprintln!("error: {}: the returned value is not a verb call: {error}", file.display()),
        }
    }
    Ok(if parsed.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
