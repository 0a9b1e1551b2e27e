//! Rhai, sandboxed: the engine scripted cognition, DO operations, hooks and
//! see-resolvers run in.
//!
//! The engine has no clock (`no_time`), no floats (`no_float`: facts are
//! canonical CBOR, which refuses them), no module imports, no `print` or
//! `debug` output, and no unseeded randomness: `rand(n)` draws from a
//! generator seeded by the caller (the moment's id). Every run has an
//! operation budget and limits on call depth, expression depth and string,
//! array and map sizes. Scripts compile once and are cached by the BLAKE3 of
//! their source, and a shared source (a role's script) also by its address,
//! which spares hashing it every moment.
//!
//! An input map is converted only as far as the script can read it: the
//! compiled script is searched once for how it names each input (see
//! [`InputReads`]). A script that reads `face.me` and nothing else gets a map
//! holding `me` alone, which it cannot tell from the whole face.

use crate::fact::{blake3_of, Hash32};
use rhai::{ASTNode, Dynamic, Engine, Expr, Scope, Stmt, AST};
use serde_json::Value as Json;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

/// Operations one script run may take, unless the land's
/// `script_operations_max` says otherwise (`crate::config`).
pub const SCRIPT_OPERATIONS_MAX: u64 = 100_000;
/// The most the land's `script_operations_max` may allow.
pub const SCRIPT_OPERATIONS_CEILING: u64 = 10_000_000;
/// Function call depth, unless the land's `script_call_depth_max` says otherwise.
pub const SCRIPT_CALL_DEPTH_MAX: usize = 32;
/// The most the land's `script_call_depth_max` may allow.
pub const SCRIPT_CALL_DEPTH_CEILING: usize = 256;
/// Expression nesting depth (global, in functions): checked when a script
/// compiles, before any land's world is at hand, so it is not a key.
pub const SCRIPT_EXPRESSION_DEPTH_MAX: usize = 64;
/// Longest string a script may build, in bytes (`script_string_bytes_max`).
pub const SCRIPT_STRING_BYTES_MAX: usize = 16 * 1024;
/// The most the land's `script_string_bytes_max` may allow.
pub const SCRIPT_STRING_BYTES_CEILING: usize = 16 * 1024 * 1024;
/// Most elements in one array (`script_array_items_max`).
pub const SCRIPT_ARRAY_ITEMS_MAX: usize = 1024;
/// Most entries in one map (`script_map_entries_max`).
pub const SCRIPT_MAP_ENTRIES_MAX: usize = 256;
/// The most the land's `script_array_items_max` and `script_map_entries_max` may allow.
pub const SCRIPT_COLLECTION_ITEMS_CEILING: usize = 1_000_000;
/// Engines kept for limit sets other than the defaults, before that cache
/// starts over (a land changes its limits rarely).
pub const SCRIPT_ENGINES_KEPT_MAX: usize = 16;
/// Shared sources remembered by address before that cache starts over.
pub const SCRIPT_ADDRESS_CACHE_ENTRIES_MAX: usize = 4096;
/// Longest script source, in bytes.
pub const SCRIPT_SOURCE_BYTES_MAX: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// `reason` is the compiler's whole text; `line` and `column` (1-based)
    /// where it points, and `what` the reason without the position.
    #[error("script does not compile: {reason}")]
    Compile { reason: String, what: String, line: Option<usize>, column: Option<usize> },
    #[error("script source is {len} bytes, over the limit of {SCRIPT_SOURCE_BYTES_MAX}")]
    TooLarge { len: usize },
    #[error("script failed: {reason}")]
    /// `line` and `column` (1-based): where the failing expression is.
    Runtime { reason: String, line: Option<usize>, column: Option<usize> },
    #[error("script exceeded its budget: {reason}")]
    Budget { reason: String },
    #[error("script returned something unusable: {reason}")]
    Output { reason: String },
}

thread_local! {
    /// The generator state of the run on this thread (seeded per run).
    static RANDOM_STATE: Cell<u64> = const { Cell::new(0) };
    /// The limits the land sets a run on this thread, set around a run by
    /// [`within_limits`] (`None`: the engine's own).
    static LAND_LIMITS: Cell<Option<RunLimits>> = const { Cell::new(None) };
    /// The operations the run under way may take (read as it counts them).
    static RUN_OPERATIONS_MAX: Cell<u64> = const { Cell::new(SCRIPT_OPERATIONS_MAX) };
}

/// What a script may build and how deep it may call, each a land key with
/// its ceiling (`crate::config`), set on the rhai engine that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScriptSizes {
    pub call_depth_max: usize,
    pub string_bytes_max: usize,
    pub array_items_max: usize,
    pub map_entries_max: usize,
}

impl ScriptSizes {
    /// The sizes a land that set none runs with.
    pub const DEFAULT: ScriptSizes = ScriptSizes {
        call_depth_max: SCRIPT_CALL_DEPTH_MAX,
        string_bytes_max: SCRIPT_STRING_BYTES_MAX,
        array_items_max: SCRIPT_ARRAY_ITEMS_MAX,
        map_entries_max: SCRIPT_MAP_ENTRIES_MAX,
    };

    /// The land's `script_call_depth_max`, `script_string_bytes_max`,
    /// `script_array_items_max` and `script_map_entries_max` at `world`'s
    /// cursor, each held to its ceiling.
    pub fn of(world: &crate::world::World) -> ScriptSizes {
        let key = |name: &str, default: usize, ceiling: usize| {
            (world.config_u64(name, default as u64).min(ceiling as u64)) as usize
        };
        ScriptSizes {
            call_depth_max: key("script_call_depth_max", SCRIPT_CALL_DEPTH_MAX, SCRIPT_CALL_DEPTH_CEILING),
            string_bytes_max: key("script_string_bytes_max", SCRIPT_STRING_BYTES_MAX, SCRIPT_STRING_BYTES_CEILING),
            array_items_max: key("script_array_items_max", SCRIPT_ARRAY_ITEMS_MAX, SCRIPT_COLLECTION_ITEMS_CEILING),
            map_entries_max: key("script_map_entries_max", SCRIPT_MAP_ENTRIES_MAX, SCRIPT_COLLECTION_ITEMS_CEILING),
        }
    }
}

/// The land's limits on one script run: its operations (each kind of
/// script has its own key) and its sizes (one set for every kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    pub operations_max: u64,
    pub sizes: ScriptSizes,
}

impl RunLimits {
    /// A run whose operations are the land's `operations_key` (`default`
    /// when unset) at `world`'s cursor: `hook_operations_max`,
    /// `cascade_handler_operations_max`.
    pub fn of(world: &crate::world::World, operations_key: &str, default: u64) -> RunLimits {
        RunLimits { operations_max: world.config_u64(operations_key, default), sizes: ScriptSizes::of(world) }
    }
}

/// The limits of a role's, an operation's, a see-resolver's or a panel's
/// script run at `world`'s cursor (`script_operations_max` and the sizes).
pub fn limits_in(world: &crate::world::World) -> RunLimits {
    RunLimits::of(world, "script_operations_max", SCRIPT_OPERATIONS_MAX)
}

/// Runs `work` with each run of an engine that follows the land's limits
/// ([`ScriptEngine::following_land_limit`]) held to `limits` (each at most
/// its ceiling): the land's keys at the moment's cursor, so replay sees the
/// limits that held. Each place a script runs sets its own kind's limits
/// around its run.
pub fn within_limits<T>(limits: RunLimits, work: impl FnOnce() -> T) -> T {
    let outer = LAND_LIMITS.with(|cell| cell.replace(Some(limits)));
    let result = work();
    LAND_LIMITS.with(|cell| cell.set(outer));
    result
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
    /// The engine with the default sizes.
    engine: Arc<Engine>,
    /// Engines for other sizes a land set, built at the first run that
    /// needs one (an engine's sizes are fixed once it runs).
    engines_by_sizes: RwLock<BTreeMap<ScriptSizes, Arc<Engine>>>,
    cache: RwLock<BTreeMap<Hash32, Arc<Compiled>>>,
    /// Shared sources by address. Each entry holds its source, so that
    /// address cannot be reused by another while the entry stands.
    by_address: RwLock<BTreeMap<usize, SharedSourceEntry>>,
    /// Operations a run may take (for an engine that follows the land's
    /// limit: when no [`within_limits`] says otherwise).
    operations_max: u64,
    /// The most any run may take (the rhai engine's own limit).
    operations_ceiling: u64,
    /// Whether [`within_limits`] sets this engine's runs' budget and sizes.
    follows_land_limit: bool,
}

/// A shared source and its compiled script, kept together by the source's address.
type SharedSourceEntry = (Arc<str>, Arc<Compiled>);

/// A compiled script and what it can read of each variable it names.
pub struct Compiled {
    pub ast: AST,
    pub reads: InputReads,
}

/// What a script can read of the variables it names, found once from its
/// syntax tree (function bodies included), so that an input map is
/// converted only as far as the script can see into it.
///
/// A variable named only as `name.key.more…` (or with `?.`) is read along
/// those property chains, as far as each goes ([`Reach`]); the last key of
/// a chain, or a key that is indexed or has a method called on it, is read
/// whole. A variable named in any other way (bare, indexed, with a method
/// called on it, captured by a closure, handed to a function) is read
/// whole. `eval` can name anything from a string, so a script that calls
/// it reads every input whole.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputReads {
    evaluates_text: bool,
    /// Variables named only through properties, with how far each is read.
    by_key: BTreeMap<String, BTreeMap<String, Reach>>,
    /// Variables named in some other way.
    whole: BTreeSet<String>,
}

/// How far a script reads into a value: all of it, or only at some keys,
/// each as far as its own reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    Whole,
    Keys(BTreeMap<String, Reach>),
}

impl Reach {
    /// As an [`InputRead`].
    pub fn read(&self) -> InputRead<'_> {
        match self {
            Reach::Whole => InputRead::Whole,
            Reach::Keys(keys) => InputRead::Keys(keys),
        }
    }
}

/// Widens `keys` to cover a read along `path` (its last key read whole).
fn reach_along(keys: &mut BTreeMap<String, Reach>, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else { return };
    if rest.is_empty() {
        keys.insert(first.to_string(), Reach::Whole);
        return;
    }
    match keys.entry(first.to_string()).or_insert_with(|| Reach::Keys(BTreeMap::new())) {
        Reach::Whole => {}
        Reach::Keys(inner) => reach_along(inner, rest),
    }
}

/// How much of one input a script can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputRead<'r> {
    Whole,
    Keys(&'r BTreeMap<String, Reach>),
    /// The script never names the input.
    Nothing,
}

impl InputReads {
    pub fn of(ast: &AST) -> InputReads {
        let mut reads = InputReads::default();
        ast.walk(&mut |path: &[ASTNode]| {
            match path.last() {
                Some(ASTNode::Expr(Expr::FnCall(call, ..))) | Some(ASTNode::Stmt(Stmt::FnCall(call, ..)))
                    if call.name == "eval" =>
                {
                    reads.evaluates_text = true;
                }
                Some(ASTNode::Expr(variable @ Expr::Variable(named, ..))) => {
                    let name = named.1.as_str();
                    let parent = path.len().checked_sub(2).and_then(|index| path.get(index));
                    match parent.and_then(|parent| property_path_of(parent, variable)) {
                        Some(keys) => reach_along(reads.by_key.entry(name.to_string()).or_default(), &keys),
                        None => {
                            reads.whole.insert(name.to_string());
                        }
                    }
                }
                _ => {}
            }
            true
        });
        reads
    }

    /// How much of the input `name` the script can read.
    pub fn of_input(&self, name: &str) -> InputRead<'_> {
        if self.evaluates_text || self.whole.contains(name) {
            return InputRead::Whole;
        }
        match self.by_key.get(name) {
            Some(keys) => InputRead::Keys(keys),
            None => InputRead::Nothing,
        }
    }
}

/// The keys read when `variable` is the left side of `parent`, a property
/// chain such as `variable.key.more` (`None` for any other use).
fn property_path_of<'a>(parent: &ASTNode<'a>, variable: &Expr) -> Option<Vec<&'a str>> {
    let ASTNode::Expr(Expr::Dot(chain, ..)) = parent else { return None };
    if !std::ptr::eq(&chain.lhs, variable) {
        return None;
    }
    // `a.b.c` is Dot(a, Dot(b, c)) and `a.b[i]` is Dot(a, Index(b, i)): the
    // keys read are the properties down the right sides, up to the first
    // index or method call (the key before it is read whole).
    let mut path = Vec::new();
    let mut rest = &chain.rhs;
    loop {
        let (first, more) = match rest {
            Expr::Dot(inner, ..) => (&inner.lhs, Some(&inner.rhs)),
            other => (other, None),
        };
        match first {
            Expr::Property(property, ..) => path.push(property.2.as_str()),
            // `key[i]`: the key is read whole.
            Expr::Index(index, ..) => {
                if let Expr::Property(property, ..) = &index.lhs {
                    path.push(property.2.as_str());
                }
                break;
            }
            // A method called on what is read so far sees all of it.
            _ => break,
        }
        match more {
            Some(next) => rest = next,
            None => break,
        }
    }
    (!path.is_empty()).then_some(path)
}

impl Default for ScriptEngine {
    fn default() -> Self {
        ScriptEngine::new()
    }
}

fn compile_error(error: rhai::ParseError) -> ScriptError {
    let position = error.position();
    ScriptError::Compile {
        reason: error.to_string(),
        what: error.err_type().to_string(),
        line: position.line(),
        column: position.position(),
    }
}

/// What kind of script a file is, and so which variables it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptKind {
    /// A role's (or a being's) script: cognition, given `face`, returns a verb call.
    Role,
    /// A DO operation: given `actor`, `target`, `args`, `world`, returns effects.
    Op,
    /// A see-resolver: given `me`, `space`, `beings`, `matter`, `signals`.
    See,
    /// A `before:` / `after:` hook: given `actor`, `request`, `world`.
    Hook,
}

impl ScriptKind {
    /// The variables a script of this kind finds defined when it runs.
    pub fn inputs(self) -> &'static [&'static str] {
        match self {
            ScriptKind::Role => &["face"],
            ScriptKind::Op => &["actor", "target", "args", "world"],
            ScriptKind::See => &["me", "space", "beings", "matter", "signals"],
            ScriptKind::Hook => &["actor", "request", "world"],
        }
    }
}

/// What [`check_script`] found short of a compile error: keys of the face
/// a role script reads that no face has (the script would read `()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptWarning {
    pub key: String,
    pub suggestion: Option<String>,
}

impl std::fmt::Display for ScriptWarning {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "face.{} is not a key of the face ({})", self.key, crate::face::FACE_KEYS_KNOWN.join(", "))?;
        if let Some(suggestion) = &self.suggestion {
            write!(formatter, "; did you mean `face.{suggestion}`?")?;
        }
        Ok(())
    }
}

/// Compiles `source` as a script of `kind` strictly: besides syntax, a
/// variable used without being defined (by `let`, a loop, a parameter, or
/// as one of the kind's inputs) is an error at its line and column, and a
/// role script reading a key the face does not have is a warning. What
/// `seed script check` runs; moments compile leniently, as they always did.
pub fn check_script(source: &str, kind: ScriptKind) -> Result<Vec<ScriptWarning>, ScriptError> {
    if source.len() > SCRIPT_SOURCE_BYTES_MAX {
        return Err(ScriptError::TooLarge { len: source.len() });
    }
    let mut checker = rhai_engine(SCRIPT_OPERATIONS_MAX, ScriptSizes::DEFAULT);
    checker.set_strict_variables(true);
    let mut scope = Scope::new();
    for input in kind.inputs() {
        scope.push_dynamic(*input, Dynamic::UNIT);
    }
    let ast = checker.compile_with_scope(&scope, source).map_err(compile_error)?;
    let mut warnings = Vec::new();
    if kind == ScriptKind::Role {
        if let InputRead::Keys(keys) = InputReads::of(&ast).of_input("face") {
            for key in keys.keys().filter(|key| !crate::face::FACE_KEYS_KNOWN.contains(&key.as_str())) {
                let suggestion = crate::authoring::closest(key, crate::face::FACE_KEYS_KNOWN);
                warnings.push(ScriptWarning { key: key.clone(), suggestion });
            }
        }
    }
    Ok(warnings)
}

/// [`ScriptEngine::check_syntax`] on an engine kept for the purpose.
pub fn check_syntax(source: &str) -> Result<(), ScriptError> {
    static CHECKER: std::sync::OnceLock<ScriptEngine> = std::sync::OnceLock::new();
    CHECKER.get_or_init(ScriptEngine::new).check_syntax(source)
}

impl ScriptEngine {
    pub fn new() -> ScriptEngine {
        ScriptEngine::following_land_limit(SCRIPT_OPERATIONS_MAX, SCRIPT_OPERATIONS_CEILING)
    }

    /// An engine whose runs take at most `default_most` operations, or what
    /// [`within_limits`] sets around them (at most `ceiling`), with the sizes
    /// it sets: the
    /// substrate's (`script_operations_max`), the hooks' (`hook_operations_max`)
    /// and the cascade handlers' (`cascade_handler_operations_max`).
    pub fn following_land_limit(default_most: u64, ceiling: u64) -> ScriptEngine {
        let mut engine = ScriptEngine::with_operations_max(ceiling);
        engine.operations_max = default_most;
        engine.follows_land_limit = true;
        engine
    }

    /// An engine whose runs may take at most `operations_max` operations,
    /// whatever the land says.
    pub fn with_operations_max(operations_max: u64) -> ScriptEngine {
        ScriptEngine {
            engine: Arc::new(rhai_engine(operations_max, ScriptSizes::DEFAULT)),
            engines_by_sizes: RwLock::new(BTreeMap::new()),
            cache: RwLock::new(BTreeMap::new()),
            by_address: RwLock::new(BTreeMap::new()),
            operations_max,
            operations_ceiling: operations_max,
            follows_land_limit: false,
        }
    }

    /// The rhai engine for a run with `sizes`: the default one, or one
    /// built for them once.
    fn engine_for(&self, sizes: ScriptSizes) -> Arc<Engine> {
        if sizes == ScriptSizes::DEFAULT {
            return self.engine.clone();
        }
        if let Some(engine) = self.engines_by_sizes.read().unwrap_or_else(|p| p.into_inner()).get(&sizes) {
            return engine.clone();
        }
        let engine = Arc::new(rhai_engine(self.operations_ceiling, sizes));
        let mut built = self.engines_by_sizes.write().unwrap_or_else(|p| p.into_inner());
        if built.len() >= SCRIPT_ENGINES_KEPT_MAX {
            built.clear();
        }
        built.insert(sizes, engine.clone());
        engine
    }

    /// Compiles `source` only to find a syntax error in it, caching nothing:
    /// what the world check runs on every script when a world loads.
    pub fn check_syntax(&self, source: &str) -> Result<(), ScriptError> {
        if source.len() > SCRIPT_SOURCE_BYTES_MAX {
            return Err(ScriptError::TooLarge { len: source.len() });
        }
        self.engine.compile(source).map(|_| ()).map_err(compile_error)
    }

    /// Compiles (once) and returns the script with what it reads.
    pub fn compile(&self, source: &str) -> Result<Arc<Compiled>, ScriptError> {
        if source.len() > SCRIPT_SOURCE_BYTES_MAX {
            return Err(ScriptError::TooLarge { len: source.len() });
        }
        let key = blake3_of(source.as_bytes());
        if let Some(ast) = self.cache.read().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(ast.clone());
        }
        let ast = self.engine.compile(source).map_err(compile_error)?;
        let compiled = Arc::new(Compiled { reads: InputReads::of(&ast), ast });
        self.cache.write().unwrap_or_else(|p| p.into_inner()).insert(key, compiled.clone());
        Ok(compiled)
    }

    /// [`ScriptEngine::compile`] for a shared source, found by its address
    /// after the first time (no hashing).
    pub fn compile_shared(&self, source: &Arc<str>) -> Result<Arc<Compiled>, ScriptError> {
        let address = Arc::as_ptr(source) as *const u8 as usize;
        if let Some((held, compiled)) = self.by_address.read().unwrap_or_else(|p| p.into_inner()).get(&address) {
            if Arc::ptr_eq(held, source) {
                return Ok(compiled.clone());
            }
        }
        let compiled = self.compile(source)?;
        let mut by_address = self.by_address.write().unwrap_or_else(|p| p.into_inner());
        if by_address.len() >= SCRIPT_ADDRESS_CACHE_ENTRIES_MAX {
            by_address.clear();
        }
        by_address.insert(address, (source.clone(), compiled.clone()));
        Ok(compiled)
    }

    /// Runs a script with `inputs` bound as read-only constants, the random
    /// generator seeded by `seed`, and returns its value as JSON (`null` for `()`).
    pub fn run(&self, source: &str, inputs: &[(&str, &Json)], seed: u64) -> Result<Json, ScriptError> {
        let inputs: Vec<(&str, Input<'_>)> = inputs.iter().map(|(name, value)| (*name, Input::Json(value))).collect();
        self.run_inputs(source, &inputs, seed)
    }

    /// [`ScriptEngine::run`] with inputs that may be built entry by entry.
    pub fn run_inputs(&self, source: &str, inputs: &[(&str, Input<'_>)], seed: u64) -> Result<Json, ScriptError> {
        self.run_reading(&*self.compile(source)?, inputs, seed, Reading::AsFarAsRead)
    }

    /// [`ScriptEngine::run_inputs`] for a script compiled already.
    pub fn run_compiled(
        &self,
        compiled: &Compiled,
        inputs: &[(&str, Input<'_>)],
        seed: u64,
    ) -> Result<Json, ScriptError> {
        self.run_reading(compiled, inputs, seed, Reading::AsFarAsRead)
    }

    fn run_reading(
        &self,
        compiled: &Compiled,
        inputs: &[(&str, Input<'_>)],
        seed: u64,
        reading: Reading,
    ) -> Result<Json, ScriptError> {
        let mut scope = Scope::new();
        for (name, input) in inputs {
            let read = match reading {
                Reading::AsFarAsRead => compiled.reads.of_input(name),
                Reading::Whole => InputRead::Whole,
            };
            let converted = match input {
                Input::Json(value) => input_to_dynamic(value, read),
                Input::Entries(entries) => entries_to_dynamic(*entries, read),
            };
            let dynamic = match converted {
                Some(dynamic) => dynamic,
                // A number the direct path does not take: serde's converter names the problem.
                None => {
                    let whole = match input {
                        Input::Json(value) => std::borrow::Cow::Borrowed(*value),
                        Input::Entries(entries) => std::borrow::Cow::Owned(entries.whole()),
                    };
                    rhai::serde::to_dynamic(whole.as_ref())
                        .map_err(|error| ScriptError::Output { reason: format!("input {name}: {error}") })?
                }
            };
            scope.push_constant_dynamic(*name, dynamic);
        }
        RANDOM_STATE.with(|state| state.set(seed | 1));
        let land = LAND_LIMITS.with(Cell::get).filter(|_| self.follows_land_limit);
        let (most, sizes) = match land {
            Some(limits) => (limits.operations_max.min(self.operations_ceiling), limits.sizes),
            None => (self.operations_max, ScriptSizes::DEFAULT),
        };
        RUN_OPERATIONS_MAX.with(|cell| cell.set(most));
        let result = self.engine_for(sizes).eval_ast_with_scope::<Dynamic>(&mut scope, &compiled.ast);
        let value = result.map_err(|error| classify(*error, most, sizes))?;
        if value.is_unit() {
            return Ok(Json::Null);
        }
        rhai::serde::from_dynamic::<Json>(&value).map_err(|error| ScriptError::Output { reason: error.to_string() })
    }
}

/// A rhai engine with seed's packages and functions, at most
/// `operations_max` operations a run, and `sizes`.
fn rhai_engine(operations_max: u64, sizes: ScriptSizes) -> Engine {
    let mut engine = Engine::new_raw();
    use rhai::packages::Package;
    engine.register_global_module(rhai::packages::CorePackage::new().as_shared_module());
    engine.register_global_module(rhai::packages::LogicPackage::new().as_shared_module());
    engine.register_global_module(rhai::packages::BasicArrayPackage::new().as_shared_module());
    engine.register_global_module(rhai::packages::BasicMapPackage::new().as_shared_module());
    engine.register_global_module(rhai::packages::MoreStringPackage::new().as_shared_module());
    engine.set_max_operations(operations_max);
    // The run's own budget, at most the engine's: the land's limit, read
    // per run (`within_limits`), is enforced here.
    engine.on_progress(|count| match count > RUN_OPERATIONS_MAX.with(Cell::get) {
        true => Some(Dynamic::UNIT),
        false => None,
    });
    engine.set_max_call_levels(sizes.call_depth_max);
    engine.set_max_expr_depths(SCRIPT_EXPRESSION_DEPTH_MAX, SCRIPT_EXPRESSION_DEPTH_MAX);
    engine.set_max_string_size(sizes.string_bytes_max);
    engine.set_max_array_size(sizes.array_items_max);
    engine.set_max_map_size(sizes.map_entries_max);
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
    engine
}

/// An input a script is run with.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    Json(&'a Json),
    /// A map whose top-level entries are built only if the script reads them.
    Entries(&'a dyn InputEntries),
}

/// A map input built entry by entry (the face: most scripts read one or two
/// of its entries).
pub trait InputEntries {
    /// The whole map.
    fn whole(&self) -> Json;
    /// The entry at `key`, if the map has one.
    fn entry(&self, key: &str) -> Option<Json>;
    /// The entry at `key` converted as far as `read` reaches into it (what
    /// [`input_to_dynamic`] gives for [`InputEntries::entry`]; a map may
    /// build it more directly).
    fn entry_read(&self, key: &str, read: InputRead<'_>) -> EntryRead {
        entry_read_through_json(self.entry(key), read)
    }
    /// Whether every number in the entries not in `read` is an `i64` (see
    /// [`input_to_dynamic`] for why unread entries are examined at all).
    fn unread_numbers_are_i64(&self, read: &BTreeMap<String, Reach>) -> bool;
}

/// One entry of an [`InputEntries`] map, as a script reading it sees it.
pub enum EntryRead {
    /// The map has no such entry.
    Absent,
    Converted(Dynamic),
    /// A number the direct conversion does not take (see [`json_to_dynamic`]).
    NotDirect,
}

/// [`InputEntries::entry_read`] through the entry's JSON.
pub fn entry_read_through_json(entry: Option<Json>, read: InputRead<'_>) -> EntryRead {
    match entry {
        None => EntryRead::Absent,
        Some(item) => match input_to_dynamic(&item, read) {
            Some(dynamic) => EntryRead::Converted(dynamic),
            None => EntryRead::NotDirect,
        },
    }
}

/// [`input_to_dynamic`] for a map built entry by entry.
fn entries_to_dynamic(entries: &dyn InputEntries, read: InputRead<'_>) -> Option<Dynamic> {
    match read {
        InputRead::Whole => json_to_dynamic(&entries.whole()),
        InputRead::Nothing => entries.unread_numbers_are_i64(&BTreeMap::new()).then_some(Dynamic::UNIT),
        InputRead::Keys(keys) => {
            if !entries.unread_numbers_are_i64(keys) {
                return None;
            }
            let mut map = rhai::Map::new();
            for (key, reach) in keys {
                match entries.entry_read(key, reach.read()) {
                    EntryRead::Absent => {}
                    EntryRead::Converted(item) => {
                        map.insert(key.as_str().into(), item);
                    }
                    EntryRead::NotDirect => return None,
                }
            }
            Some(Dynamic::from_map(map))
        }
    }
}

/// How far `run_reading` converts inputs (whole only for tests that compare).
#[derive(Debug, Clone, Copy)]
enum Reading {
    AsFarAsRead,
    #[cfg_attr(not(test), allow(dead_code))]
    Whole,
}

/// An input as a script sees it, converted as far as the script reads it.
/// An input it never names is still bound (`is_def_var` sees it), as `()`.
/// `None` as for [`json_to_dynamic`], for the whole input: a number the
/// direct path does not take fails (or converts) the whole input through
/// serde even where the script does not read it, exactly as before inputs
/// were converted in part.
fn input_to_dynamic(value: &Json, read: InputRead<'_>) -> Option<Dynamic> {
    match (read, value) {
        (InputRead::Keys(keys), Json::Object(entries)) => object_read_to_dynamic(entries.iter(), keys),
        (InputRead::Nothing, _) => every_number_is_i64(value).then_some(Dynamic::UNIT),
        _ => json_to_dynamic(value),
    }
}

/// A JSON object's `entries` as a map a script sees, converted as far as
/// `keys` reach into it (`None` as for [`input_to_dynamic`]: unread entries
/// are examined for numbers too).
pub fn object_read_to_dynamic<'e>(
    entries: impl Iterator<Item = (&'e String, &'e Json)>,
    keys: &BTreeMap<String, Reach>,
) -> Option<Dynamic> {
    let mut map = rhai::Map::new();
    for (key, item) in entries {
        match keys.get(key) {
            Some(reach) => {
                map.insert(key.as_str().into(), input_to_dynamic(item, reach.read())?);
            }
            None if !every_number_is_i64(item) => return None,
            None => {}
        }
    }
    Some(Dynamic::from_map(map))
}

/// A JSON object's `entries` as a map a script sees, all of it.
pub fn object_to_dynamic<'e>(entries: impl Iterator<Item = (&'e String, &'e Json)>) -> Option<Dynamic> {
    let mut map = rhai::Map::new();
    for (key, item) in entries {
        map.insert(key.as_str().into(), json_to_dynamic(item)?);
    }
    Some(Dynamic::from_map(map))
}

/// Whether every number in `value` is an `i64` (what the direct conversion takes).
pub fn every_number_is_i64(value: &Json) -> bool {
    match value {
        Json::Number(number) => number.is_i64(),
        Json::Array(items) => items.iter().all(every_number_is_i64),
        Json::Object(entries) => entries.values().all(every_number_is_i64),
        Json::Null | Json::Bool(_) | Json::String(_) => true,
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
        Json::Object(entries) => object_to_dynamic(entries.iter())?,
    })
}

/// A run's error as seed names it: a budget names the land's key that held.
fn classify(error: rhai::EvalAltResult, operations_max: u64, sizes: ScriptSizes) -> ScriptError {
    use rhai::EvalAltResult as E;
    match error {
        E::ErrorTooManyOperations(..) | E::ErrorTerminated(..) => {
            ScriptError::Budget { reason: format!("more than {operations_max} operations") }
        }
        E::ErrorStackOverflow(..) => ScriptError::Budget {
            reason: format!("call stack overflow: deeper than {} calls (script_call_depth_max)", sizes.call_depth_max),
        },
        E::ErrorDataTooLarge(what, ..) => {
            let lowered = what.to_lowercase();
            let limit = if lowered.contains("string") {
                format!(": over {} bytes (script_string_bytes_max)", sizes.string_bytes_max)
            } else if lowered.contains("array") {
                format!(": over {} items (script_array_items_max)", sizes.array_items_max)
            } else if lowered.contains("map") {
                format!(": over {} entries (script_map_entries_max)", sizes.map_entries_max)
            } else {
                String::new()
            };
            ScriptError::Budget { reason: format!("{what} too large{limit}") }
        }
        E::ErrorTooManyModules(..) => ScriptError::Budget { reason: "too many modules".into() },
        other => {
            let position = other.position();
            ScriptError::Runtime { reason: other.to_string(), line: position.line(), column: position.position() }
        }
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
        assert_result(engine.run(source, &[("face", &face)], 42), expected, source);
    }

    /// The value, or that the error contains the expected text.
    fn assert_result(result: Result<Json, ScriptError>, expected: Result<Json, &str>, case: &str) {
        match (result, expected) {
            (Ok(value), Ok(expected)) => assert_eq!(value, expected, "{case}"),
            (Err(error), Err(needle)) => assert!(error.to_string().contains(needle), "{case}: {error}"),
            (result, expected) => panic!("{case}: got {result:?}, expected {expected:?}"),
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

    /// Runs `source` on `engine` (within `limits`, if given) and checks it.
    fn assert_run(
        engine: &ScriptEngine,
        source: &str,
        limits: Option<RunLimits>,
        expected: Result<Json, &str>,
        case: &str,
    ) {
        let result = match limits {
            Some(limits) => within_limits(limits, || engine.run(source, &[], 1)),
            None => engine.run(source, &[], 1),
        };
        assert_result(result, expected, case);
    }

    /// Each size key, lowered and raised from its default, holds for the
    /// runs inside `within_limits` and for no other run, and its message
    /// names the key.
    #[test]
    fn the_lands_script_sizes_bound_each_run_within_them_and_name_the_key() {
        let engine = ScriptEngine::new();
        let check = |source: &str, sizes: Option<ScriptSizes>, expected: Result<Json, &str>| {
            let limits = sizes.map(|sizes| RunLimits { operations_max: SCRIPT_OPERATIONS_MAX, sizes });
            assert_run(&engine, source, limits, expected, &format!("{source} {sizes:?}"));
        };
        let with = |change: fn(&mut ScriptSizes)| {
            let mut sizes = ScriptSizes::DEFAULT;
            change(&mut sizes);
            Some(sizes)
        };
        let deep = "fn f(n) { if n == 0 { 0 } else { 1 + f(n - 1) } } f(40)";
        let string = "let s = \"\"; for i in 0..2000 { s += \"x\"; } s.len";
        let array = "let a = []; for i in 0..2000 { a.push(i); } a.len";
        let map = "let m = #{}; for i in 0..300 { m[`k${i}`] = i; } m.len()";
        let cases: &[(&str, Option<ScriptSizes>, Result<Json, &str>)] = &[
            (deep, None, Err("deeper than 32 calls (script_call_depth_max)")),
            (deep, with(|s| s.call_depth_max = 64), Ok(json!(40))),
            (deep, with(|s| s.call_depth_max = 8), Err("deeper than 8 calls (script_call_depth_max)")),
            (string, None, Ok(json!(2000))),
            (string, with(|s| s.string_bytes_max = 1_000), Err("over 1000 bytes (script_string_bytes_max)")),
            (array, None, Err("over 1024 items (script_array_items_max)")),
            (array, with(|s| s.array_items_max = 4_096), Ok(json!(2000))),
            (map, None, Err("over 256 entries (script_map_entries_max)")),
            (map, with(|s| s.map_entries_max = 512), Ok(json!(300))),
            // Back to the defaults: the engine built for other sizes changed nothing.
            (deep, None, Err("deeper than 32 calls (script_call_depth_max)")),
            (array, Some(ScriptSizes::DEFAULT), Err("over 1024 items (script_array_items_max)")),
        ];
        for (source, sizes, expected) in cases {
            check(source, *sizes, expected.clone());
        }
        // An engine with a budget of its own keeps the default sizes.
        let own = ScriptEngine::with_operations_max(1_000_000);
        let limits = RunLimits { operations_max: 1_000_000, sizes: with(|s| s.array_items_max = 4_096).unwrap() };
        let result = within_limits(limits, || own.run(array, &[], 1));
        assert!(result.is_err_and(|error| error.to_string().contains("over 1024 items")), "its own sizes");
    }

    #[test]
    fn the_lands_operations_limit_bounds_the_runs_of_an_engine_that_follows_it_and_no_other() {
        let counting = "let x = 0; for i in 0..2000 { x += i; } x";
        let check = |engine: &ScriptEngine, most: Option<u64>, expected: Result<Json, &str>| {
            let limits = most.map(|most| RunLimits { operations_max: most, sizes: ScriptSizes::DEFAULT });
            assert_run(engine, counting, limits, expected, &format!("{most:?}"));
        };
        let following = ScriptEngine::new();
        check(&following, None, Ok(json!(1_999_000)));
        check(&following, Some(1_000), Err("more than 1000 operations"));
        check(&following, Some(SCRIPT_OPERATIONS_CEILING), Ok(json!(1_999_000)));
        check(&following, None, Ok(json!(1_999_000)));
        // A budget of its own (a hook's) is not the land's to change.
        let own = ScriptEngine::with_operations_max(1_000);
        check(&own, None, Err("more than 1000 operations"));
        check(&own, Some(1_000_000), Err("more than 1000 operations"));
    }

    /// How far `keys` reach, written `me{name,space},time` (a key without
    /// braces is read whole).
    fn describe(keys: &BTreeMap<String, Reach>) -> String {
        let described = keys.iter().map(|(key, reach)| match reach {
            Reach::Whole => key.clone(),
            Reach::Keys(inner) => format!("{key}{{{}}}", describe(inner)),
        });
        described.collect::<Vec<_>>().join(",")
    }

    /// What `source` can read of `face`: `None` for the whole of it, else
    /// how far it reaches (empty when it never names it).
    fn check_reads(source: &str, expected: Option<&str>) {
        let engine = ScriptEngine::new();
        let compiled = engine.compile(source).expect("compiles");
        let actual = match compiled.reads.of_input("face") {
            InputRead::Whole => None,
            InputRead::Keys(keys) => Some(describe(keys)),
            InputRead::Nothing => Some(String::new()),
        };
        assert_eq!(actual.as_deref(), expected, "{source}");
    }

    #[test]
    fn a_script_reads_an_input_along_the_keys_it_names_and_whole_otherwise() {
        check_reads("face.me.name", Some("me{name}"));
        check_reads("face.me.name + face.time.ms + face.me.space", Some("me{name,space},time{ms}"));
        check_reads("face.me.name + face.me", Some("me"));
        check_reads("face.me + face.me.name", Some("me"));
        check_reads("face?.me ?? 0", Some("me"));
        check_reads("face?.me?.name ?? 0", Some("me{name}"));
        check_reads("face.see[\"x\"].y", Some("see"));
        check_reads("face.see.x[0].y", Some("see{x}"));
        check_reads("face.see.x.y[0]", Some("see{x{y}}"));
        check_reads("face.me.qualities.mood.len()", Some("me{qualities{mood}}"));
        check_reads("face.me.keys()", Some("me"));
        check_reads("let x = face.can.see; x.len()", Some("can{see}"));
        check_reads("fn peek() { face.time } peek!()", Some("time"));
        check_reads("1 + 1", Some(""));
        check_reads("let face = #{}; face", None);
        check_reads("face", None);
        check_reads("face[\"me\"]", None);
        check_reads("face.keys()", None);
        check_reads("face.me.name + face.len()", None);
        check_reads("let f = face; f.me", None);
        check_reads("type_of(face)", None);
        check_reads("let g = || face.time; g.call()", None);
        check_reads("eval(\"1\"); face.me", None);
    }

    #[test]
    fn an_input_converted_as_far_as_read_gives_what_the_whole_input_gives() {
        let engine = ScriptEngine::new();
        let face = json!({
            "me": {"name": "ada", "qualities": {"n": -3, "ok": true}},
            "time": {"ms": 5000, "hour": 3},
            "see": {"x": {"y": [1, 2], "z": [{"w": 4}]}},
            "n": 3,
        });
        let oversized = json!({"me": {"name": "ada"}, "time": {"ms": u64::MAX}});
        let deep_oversized = json!({"me": {"name": "ada", "qualities": {"big": u64::MAX}}, "n": 3});
        let scripts = [
            "face.me.name",
            "face.me.name.len()",
            "face.me.name.len",
            "face.me.qualities.n + face.me.qualities.missing.len()",
            "face.me.qualities.len",
            "face.me.qualities",
            "face.me.keys()",
            "face.time.ms + face.n",
            "face.time.ms.x",
            "face.see.x.y[1]",
            "face.see.x.z[0].w",
            "face.see?.x?.nothing?.deeper",
            "face.missing",
            "face.keys()",
            "face.len()",
            "face",
            "eval(\"face.time.ms\")",
            "let g = || face.time; g.call()",
            "fn peek() { face.time } peek!()",
            "is_def_var(\"face\")",
            "42",
        ];
        for input in [&face, &oversized, &deep_oversized] {
            for source in scripts {
                let compiled = engine.compile(source).expect("compiles");
                let as_far_as_read =
                    engine.run_reading(&compiled, &[("face", Input::Json(input))], 7, Reading::AsFarAsRead);
                let whole = engine.run_reading(&compiled, &[("face", Input::Json(input))], 7, Reading::Whole);
                assert_eq!(as_far_as_read, whole, "{source} on {input}");
            }
        }
        // Only what is read is converted.
        let compiled = engine.compile("face.me.name").expect("compiles");
        let converted = input_to_dynamic(&face, compiled.reads.of_input("face")).expect("every number is an i64");
        let map = converted.cast::<rhai::Map>();
        assert_eq!(map.keys().map(|key| key.as_str()).collect::<Vec<_>>(), ["me"]);
        let me = map["me"].clone().cast::<rhai::Map>();
        assert_eq!(me.keys().map(|key| key.as_str()).collect::<Vec<_>>(), ["name"]);
    }

    #[test]
    fn a_shared_source_is_found_by_address_only_while_it_is_the_same_source() {
        let engine = ScriptEngine::new();
        let shared: Arc<str> = Arc::from("40 + 2");
        let first = engine.compile_shared(&shared).expect("compiles");
        assert!(Arc::ptr_eq(&first, &engine.compile_shared(&shared).expect("compiles")));
        // Sources made and dropped one after another may reuse an address:
        // each must still run as itself.
        for number in 0..200 {
            let source: Arc<str> = Arc::from(number.to_string());
            let compiled = engine.compile_shared(&source).expect("compiles");
            assert_eq!(engine.run_compiled(&compiled, &[], 1), Ok(json!(number)));
        }
    }

    #[test]
    fn randomness_is_seeded() {
        let engine = ScriptEngine::new();
        let draw = |seed| engine.run("[rand(1000), rand(1000), rand(1000)]", &[], seed).unwrap();
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }
}
