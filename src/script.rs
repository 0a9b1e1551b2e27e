//! Rhai, sandboxed: the engine scripted cognition, DO operations, hooks and
//! see-resolvers run in.
//!
//! The engine has no clock (`no_time`), no floats (`no_float`: facts are
//! canonical CBOR, which refuses them), no module imports, no `print` or
//! `debug` output, and no unseeded randomness: `rand(n)` draws from a
//! generator seeded by the caller (the moment's id). Every run has an
//! operation budget and limits on call depth, expression depth and string,
//! array and map sizes. Scripts compile once and are cached by the BLAKE3 of
//! their source.

use crate::fact::{blake3_of, Hash32};
use rhai::{Dynamic, Engine, Scope, AST};
use serde_json::Value as Json;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

/// Operations one script run may take.
pub const SCRIPT_OPERATIONS_MAX: u64 = 100_000;
/// Function call depth.
pub const SCRIPT_CALL_DEPTH_MAX: usize = 32;
/// Expression nesting depth (global, in functions).
pub const SCRIPT_EXPRESSION_DEPTH_MAX: usize = 64;
/// Longest string a script may build, in bytes.
pub const SCRIPT_STRING_BYTES_MAX: usize = 16 * 1024;
/// Most elements in one array / entries in one map.
pub const SCRIPT_ARRAY_ITEMS_MAX: usize = 1024;
pub const SCRIPT_MAP_ENTRIES_MAX: usize = 256;
/// Longest script source, in bytes.
pub const SCRIPT_SOURCE_BYTES_MAX: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    #[error("script does not compile: {reason}")]
    Compile { reason: String },
    #[error("script source is {len} bytes, over the limit of {SCRIPT_SOURCE_BYTES_MAX}")]
    TooLarge { len: usize },
    #[error("script failed: {reason}")]
    Runtime { reason: String },
    #[error("script exceeded its budget: {reason}")]
    Budget { reason: String },
    #[error("script returned something unusable: {reason}")]
    Output { reason: String },
}

thread_local! {
    /// The generator state of the run on this thread (seeded per run).
    static RANDOM_STATE: Cell<u64> = const { Cell::new(0) };
}

fn next_random() -> u64 {
    RANDOM_STATE.with(|state| {
        // xorshift64*: deterministic, seeded per run.
        let mut x = state.get().max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

pub struct ScriptEngine {
    engine: Engine,
    cache: RwLock<BTreeMap<Hash32, Arc<AST>>>,
    operations_max: u64,
}

impl Default for ScriptEngine {
    fn default() -> Self {
        ScriptEngine::new()
    }
}

impl ScriptEngine {
    pub fn new() -> ScriptEngine {
        ScriptEngine::with_operations_max(SCRIPT_OPERATIONS_MAX)
    }

    /// An engine whose runs may take at most `operations_max` operations.
    pub fn with_operations_max(operations_max: u64) -> ScriptEngine {
        let mut engine = Engine::new_raw();
        use rhai::packages::Package;
        engine.register_global_module(rhai::packages::CorePackage::new().as_shared_module());
        engine.register_global_module(rhai::packages::LogicPackage::new().as_shared_module());
        engine.register_global_module(rhai::packages::BasicArrayPackage::new().as_shared_module());
        engine.register_global_module(rhai::packages::BasicMapPackage::new().as_shared_module());
        engine.register_global_module(rhai::packages::MoreStringPackage::new().as_shared_module());
        engine.set_max_operations(operations_max);
        engine.set_max_call_levels(SCRIPT_CALL_DEPTH_MAX);
        engine.set_max_expr_depths(SCRIPT_EXPRESSION_DEPTH_MAX, SCRIPT_EXPRESSION_DEPTH_MAX);
        engine.set_max_string_size(SCRIPT_STRING_BYTES_MAX);
        engine.set_max_array_size(SCRIPT_ARRAY_ITEMS_MAX);
        engine.set_max_map_size(SCRIPT_MAP_ENTRIES_MAX);
        engine.set_max_strings_interned(1024);
        engine.on_print(|_| {});
        engine.on_debug(|_, _, _| {});
        engine.register_fn("rand", |bound: i64| -> i64 {
            if bound <= 0 {
                0
            } else {
                (next_random() % bound as u64) as i64
            }
        });
        ScriptEngine { engine, cache: RwLock::new(BTreeMap::new()), operations_max }
    }

    /// Compiles (once) and returns the script's AST.
    pub fn compile(&self, source: &str) -> Result<Arc<AST>, ScriptError> {
        if source.len() > SCRIPT_SOURCE_BYTES_MAX {
            return Err(ScriptError::TooLarge { len: source.len() });
        }
        let key = blake3_of(source.as_bytes());
        if let Some(ast) = self.cache.read().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(ast.clone());
        }
        let ast =
            Arc::new(self.engine.compile(source).map_err(|error| ScriptError::Compile { reason: error.to_string() })?);
        self.cache.write().unwrap_or_else(|p| p.into_inner()).insert(key, ast.clone());
        Ok(ast)
    }

    /// Runs a script with `inputs` bound as read-only constants, the random
    /// generator seeded by `seed`, and returns its value as JSON (`null` for `()`).
    pub fn run(&self, source: &str, inputs: &[(&str, &Json)], seed: u64) -> Result<Json, ScriptError> {
        let ast = self.compile(source)?;
        let mut scope = Scope::new();
        for (name, value) in inputs {
            let dynamic = match json_to_dynamic(value) {
                Some(dynamic) => dynamic,
                // A number the direct path does not take: serde's converter names the problem.
                None => rhai::serde::to_dynamic(value)
                    .map_err(|error| ScriptError::Output { reason: format!("input {name}: {error}") })?,
            };
            scope.push_constant_dynamic(*name, dynamic);
        }
        RANDOM_STATE.with(|state| state.set(seed | 1));
        let result = self.engine.eval_ast_with_scope::<Dynamic>(&mut scope, &ast);
        let value = result.map_err(|error| classify(*error, self.operations_max))?;
        if value.is_unit() {
            return Ok(Json::Null);
        }
        rhai::serde::from_dynamic::<Json>(&value).map_err(|error| ScriptError::Output { reason: error.to_string() })
    }
}

/// JSON as a script sees it, built directly (every moment converts its face,
/// and going through serde costs several times more). Exactly what
/// `rhai::serde::to_dynamic` builds for the same value; `None` for a number
/// that is not an `i64`, which that converter refuses or converts itself.
fn json_to_dynamic(value: &Json) -> Option<Dynamic> {
    Some(match value {
        Json::Null => Dynamic::UNIT,
        Json::Bool(flag) => Dynamic::from_bool(*flag),
        Json::Number(number) => Dynamic::from_int(number.as_i64()?),
        Json::String(text) => Dynamic::from(rhai::ImmutableString::from(text.as_str())),
        Json::Array(items) => Dynamic::from_array(items.iter().map(json_to_dynamic).collect::<Option<_>>()?),
        Json::Object(entries) => {
            let mut map = rhai::Map::new();
            for (key, item) in entries {
                map.insert(key.as_str().into(), json_to_dynamic(item)?);
            }
            Dynamic::from_map(map)
        }
    })
}

fn classify(error: rhai::EvalAltResult, operations_max: u64) -> ScriptError {
    use rhai::EvalAltResult as E;
    match error {
        E::ErrorTooManyOperations(..) => {
            ScriptError::Budget { reason: format!("more than {operations_max} operations") }
        }
        E::ErrorStackOverflow(..) => ScriptError::Budget { reason: "call stack overflow".into() },
        E::ErrorDataTooLarge(what, ..) => ScriptError::Budget { reason: format!("{what} too large") },
        E::ErrorTooManyModules(..) => ScriptError::Budget { reason: "too many modules".into() },
        other => ScriptError::Runtime { reason: other.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn direct_conversion_builds_what_serde_builds() {
        let value = json!({
            "me": {"name": "ada", "qualities": {"n": -3, "big": 9_000_000_000i64, "ok": true, "none": null}},
            "list": [1, "two", [3, {"four": 4}], {}, []],
            "": "empty key",
        });
        let direct = json_to_dynamic(&value).expect("every number is an i64");
        let through_serde: Dynamic = rhai::serde::to_dynamic(&value).expect("converts");
        assert_eq!(format!("{direct:?}"), format!("{through_serde:?}"));
        // What the direct path leaves to serde's converter.
        assert!(json_to_dynamic(&json!(u64::MAX)).is_none());
        assert!(json_to_dynamic(&json!([1.5])).is_none());
    }

    fn check(source: &str, expected: Result<Json, &str>) {
        let engine = ScriptEngine::new();
        let face = json!({"me": {"name": "ada"}, "n": 3});
        let result = engine.run(source, &[("face", &face)], 42);
        match (result, expected) {
            (Ok(value), Ok(expected)) => assert_eq!(value, expected, "{source}"),
            (Err(error), Err(needle)) => assert!(error.to_string().contains(needle), "{source}: {error}"),
            (result, expected) => panic!("{source}: got {result:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn scripts_see_their_inputs_and_are_sandboxed() {
        check("face.me.name", Ok(json!("ada")));
        check("#{verb: \"see\", address: \"/\"}", Ok(json!({"verb": "see", "address": "/"})));
        check("()", Ok(Json::Null));
        check("face.n * 2", Ok(json!(6)));
        check("loop { }", Err("more than 100000 operations"));
        check("let s = \"x\"; loop { s += s; }", Err("too large"));
        check("fn f(n) { f(n + 1) } f(0)", Err("stack overflow"));
        check("timestamp()", Err("Function not found"));
        check("1.5", Err("does not compile"));
        check("face.me.name = \"eve\"", Err(""));
        check("let x = ;", Err("does not compile"));
        check("import \"x\" as y; 1", Err("does not compile"));
    }

    #[test]
    fn randomness_is_seeded() {
        let engine = ScriptEngine::new();
        let draw = |seed| engine.run("[rand(1000), rand(1000), rand(1000)]", &[], seed).unwrap();
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }
}
