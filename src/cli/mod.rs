//! Command-line arguments and the commands behind them.

mod audit;
mod cascade;
mod config;
mod corpus;
mod demo_world;
mod flow;
mod health;
mod land;
mod logging;
mod mcp;
mod mcp_schemas;
mod memory;
mod move_being;
mod peer;
mod pool;
mod progress;
mod recover;
mod replay;
mod script;
mod step;
mod up;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use seed::fact::body::{NoteBody, KIND_NOTE};
use seed::land::{BeingSpec, Land};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Most facts `seed stress` keeps in flight per being before it waits.
const STRESS_WINDOW_FACTS_DEFAULT: usize = 64;

#[derive(Parser, Debug)]
#[command(name = "seed", version, about = "A being substrate: signed reels, roles, moments, replay.")]
pub struct Arguments {
    /// The land folder (default: ./land; `seed sim` uses a temporary land unless given).
    #[arg(long, global = true, env = "SEED_LAND")]
    land: Option<PathBuf>,
    /// Where the land's facts are: `postgres://…` (a PostgreSQL database; the
    /// password from PGPASSWORD) or `folder` (the land folder, the default).
    /// Chosen when a land is planted and recorded in its land.toml; later
    /// commands read it from there and refuse a different one.
    #[arg(long, global = true, env = "SEED_STORE", value_name = "URL")]
    store: Option<String>,
    /// How log lines on stderr are written (filter them with RUST_LOG, default info).
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: logging::LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the land to one MCP client over stdio, driving one being
    /// (a person's token in SEED_MCP_TOKEN, else as the operator).
    Mcp {
        /// The being to drive (default: the token's own being, the operator's without one).
        #[arg(long)]
        being: Option<String>,
        /// Milliseconds between rounds of wakes while the land is served.
        #[arg(long, default_value_t = seed::portal::ROUND_MS_DEFAULT)]
        round_ms: u64,
        /// Threads computing the moments of a round.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// LLM connections (a TOML file, docs/llm.md) for the world's LLM beings.
        #[arg(long)]
        llm: Option<PathBuf>,
    },
    /// Start the land and its portal (planting it and a demo world on first start).
    Up {
        /// The demo world to plant (default: what the land recorded, else the court built into seed).
        #[arg(long)]
        fixture: Option<PathBuf>,
        /// Where the portal listens.
        #[arg(long, default_value = "127.0.0.1:7777")]
        addr: String,
        /// Milliseconds between rounds of wakes (summons, signals, ticks).
        #[arg(long, default_value_t = seed::portal::ROUND_MS_DEFAULT)]
        round_ms: u64,
        /// Threads computing the moments of a round.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// No longer a flag: the land's key portal_requests_per_minute_max
        /// (`seed config set`); given, it is refused saying so.
        #[arg(long, hide = true)]
        requests_per_minute_max: Option<String>,
        /// No longer a flag: the land's key portal_body_bytes_max.
        #[arg(long, hide = true)]
        body_bytes_max: Option<String>,
        /// How long an inhabited being stays inhabited after its last tab closed.
        #[arg(long, default_value_t = seed::portal::INHABIT_RELEASE_GRACE_MS)]
        release_grace_ms: u64,
        /// How long a client has to send a request's line and headers, in milliseconds.
        #[arg(long, default_value_t = seed::portal::serve::HEADER_READ_TIMEOUT_MS)]
        header_read_timeout_ms: u64,
        /// How long a client has to send a request's body, in milliseconds.
        #[arg(long, default_value_t = seed::portal::BODY_READ_TIMEOUT_MS)]
        body_read_timeout_ms: u64,
        /// Stop by itself after this many seconds (tests and benchmarks).
        #[arg(long)]
        lifetime_s: Option<u64>,
        /// How long this process's hold on a land on PostgreSQL lasts without
        /// renewal, in milliseconds (renewed every third of it): one process
        /// runs a live land at a time.
        #[arg(long, default_value_t = seed::store::runner::RUNNER_LEASE_MS_DEFAULT)]
        runner_lease_ms: u64,
        /// LLM connections (a TOML file, docs/llm.md) for the world's LLM beings.
        #[arg(long)]
        llm: Option<PathBuf>,
        /// The URL other lands reach this land at (Canopy, docs/canopy.md):
        /// what it tells the lands it greets. Default: http:// and the address
        /// it listens on.
        #[arg(long)]
        public_url: Option<String>,
        /// Print the start (URL, land, world, operator token) and the stop as one JSON line each.
        #[arg(long)]
        json: bool,
    },
    /// Create a land: the reality root, the operator, @birther and @role-manager.
    Plant {
        /// Print the land, its first beings and the operator token as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// List the beings of the land.
    Beings {
        /// Print the beings as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Print a being's reel.
    Reel {
        /// @name or being id.
        being: String,
        /// Print the reel as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Show a being's memory as it stood at a land cursor: its acts, the summons sent to it, its notes and what superseded each; with --query, what recall ranks first (docs/memory.md).
    Memory {
        /// @name or being id.
        being: String,
        /// The land cursor: only facts below this land seq (default: the whole land).
        #[arg(long, value_name = "LAND_SEQ")]
        at: Option<u64>,
        /// Rank the memory for this query text, as recall does, with each item's score.
        #[arg(long, value_name = "TEXT")]
        query: Option<String>,
        /// How many items the query recalls (1 to 32).
        #[arg(long, default_value_t = 8)]
        count: usize,
        /// Print the memory as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// List every tool call and approval, each line citing its fact; the reels it reads verified.
    ///
    /// A tool call is an act calling a DO operation; an approval's steps are
    /// its request, the decision, and the call applied or closed
    /// (docs/approvals.md). With `--bundle` it reads exported bundles alone,
    /// verified strictly, and no land. Exits 1 when a reel does not verify.
    Audit {
        /// Only this being's lines (and the decisions on its requests).
        #[arg(long)]
        being: Option<String>,
        /// Only calls of this DO operation (and the approvals of such calls).
        #[arg(long)]
        tool: Option<String>,
        /// Only lines sealed at or after this time: RFC 3339, or milliseconds since 1970.
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Read this exported bundle (`seed export`) instead of the land; repeat for several.
        #[arg(long = "bundle", value_name = "FILE")]
        bundles: Vec<PathBuf>,
        /// Print the lines, the reels and their verification as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Check every signature, chain link, seq, encoding, the land log and the indexes.
    Verify {
        /// Only this being's reel (and its fork proofs).
        #[arg(long)]
        being: Option<String>,
        /// Verify each signature on its own instead of in batches.
        #[arg(long)]
        strict: bool,
        /// Threads checking reels in parallel (default: the machine's cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Do not record a verification checkpoint after a clean land-wide
        /// verification (see docs/replay.md).
        #[arg(long)]
        no_checkpoint: bool,
        /// Print the report (and every problem) as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Write a being's reel to a self-verifying bundle.
    Export {
        /// @name or being id.
        being: String,
        /// The bundle file to write.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Print what was written as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Verify a bundle and add its reel to this land.
    Import {
        /// The bundle file (written by `seed export`).
        file: PathBuf,
        /// Print what was imported as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Copy a land to a new folder, its facts into another store.
    ///
    /// Every fact with its land seq, in land order, and the key ring,
    /// snapshots and checkpoint beside them. `--store` names the copy's store
    /// (default: its own folder), so `--store postgres://…` moves a land onto
    /// PostgreSQL and a copy without it brings one back.
    Copy {
        /// The land to copy (read only; nothing of it is written).
        #[arg(long)]
        from: PathBuf,
        /// The new land folder (absent or empty).
        #[arg(long)]
        to: PathBuf,
        /// Print what was copied as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Drop every derived index and rebuild it from the reels.
    Reindex {
        /// Print what was rebuilt as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Give @operator back the roleFlow and roles it was planted with (run
    /// with the land stopped): a world fact on the reality root's reel.
    RecoverOperator {
        /// The fixture whose role files to put back (default: what the land recorded).
        #[arg(long)]
        fixture: Option<PathBuf>,
    },
    /// Move a being to a peer land (docs/canopy.md "Moving a being"): its
    /// reel goes there, checked fact by fact, and goes on there; here it
    /// ends in a `move` fact and summons for it are sent on. Stop `seed up`
    /// first; the other land must be up and have added this land as a peer.
    Move {
        /// @name or being id.
        being: String,
        /// The peer land's URL (it must be a peer of this land).
        #[arg(long)]
        to: String,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Replace a being's signing key (a rotate-key fact signed by the old key).
    RotateKey {
        /// @name or being id.
        being: String,
        /// Print the sealed rotate-key fact as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The land's configuration: every key with its unit, range, default, the
    /// value in force and the fact that set it; `seed config set KEY VALUE`
    /// sets one (docs/config.md).
    Config {
        #[command(subcommand)]
        command: Option<ConfigCommand>,
        /// Print the configuration as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The lands this land speaks with (Canopy, docs/canopy.md): `seed peer
    /// list`, `seed peer add URL`, `seed peer remove PEER`.
    Peer {
        #[command(subcommand)]
        command: PeerCommand,
    },
    /// The land's health breaker: whether it is tripped, by which sign, with
    /// every reading; `seed health revive` revives it (docs/health.md).
    Health {
        #[command(subcommand)]
        command: Option<HealthCommand>,
        /// Print the state as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// One cascade signal's flow as a tree: every delivery and every drop
    /// (with why), each citing its fact (docs/cascade.md). SIGNAL is the
    /// signal's fact id (12 or more hex digits), one of its deliveries', or
    /// the id of the act that announced it.
    Cascade {
        signal: String,
        /// Print the tree as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Issue a new operator token (shown once; the old one stops working).
    /// Works on any land, planted or simulated; stop `seed up` first.
    Token {
        /// Print `{"token": …}` instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Record the input schemas of the MCP tools a world's extensions offer as
    /// operations (asking each server's tools/list), in each extension's
    /// mcp-schemas/ folder: the verb layer checks calls against them and a
    /// model is offered them (docs/mcp.md).
    McpSchemas {
        /// The world file (world.toml) whose extensions declare the servers.
        world: PathBuf,
        /// Write nothing; exit 1 when a recorded schema is missing or differs from the server's.
        #[arg(long)]
        check: bool,
        /// Print what became of each server's file as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Run a demo world headless, deterministically, and print a summary.
    Sim {
        /// The fixture file (e.g. fixtures/court.toml).
        fixture: PathBuf,
        /// Rounds to run (default: the fixture's `ticks`).
        #[arg(long)]
        ticks: Option<u64>,
        /// The run's seed: beings' keys and scripts' rand() derive from it (same seed, same land).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Threads running moments (results do not depend on it).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Write one JSON line per moment (the moment trace) to this file.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// LLM connections (a TOML file, docs/llm.md) for the world's LLM beings.
        #[arg(long)]
        llm: Option<PathBuf>,
        /// Exit with status 3 if any moment failed (for CI); without it, only a run whose every moment failed does.
        #[arg(long)]
        fail_on_failure: bool,
        /// Facts between two world snapshots for this run, at least (default:
        /// the land's `snapshot_every_facts`, 100000 on a new land; 0: none);
        /// one more such spacing for each 50 MiB of the snapshot before.
        #[arg(long)]
        snapshot_every_facts: Option<u64>,
        /// Run the moments in this many `seed worker` processes started here
        /// (the land must be on PostgreSQL; more workers, on other machines
        /// too, may join). 0: in this process.
        #[arg(long, default_value_t = 0)]
        workers: usize,
        /// Run the moments in the pool even with no local workers: `seed
        /// worker` processes started elsewhere serve it.
        #[arg(long)]
        pool: bool,
        /// How long a worker's claim on a wake holds without renewal (with --workers).
        #[arg(long, default_value_t = seed::engine::pool::WORKER_LEASE_MS_DEFAULT)]
        lease_ms: u64,
        /// Finish the run whose driver stopped in --land (killed, or a
        /// crash) from its resume checkpoint, with the fixture and --seed it
        /// was started with (and --workers N or --pool for a pool's run): it
        /// ends with the world hash an uninterrupted run has (docs/resume.md).
        #[arg(long)]
        resume: bool,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve a simulation's pool: claim wakes, run their moments, seal them
    /// at their turn (the land on PostgreSQL; see docs/scale.md).
    ///
    /// Start it with the simulation's fixture and --seed, on any machine
    /// that reaches the database and holds the land folder. It exits when
    /// the run finishes.
    Worker {
        /// The simulation's fixture file.
        fixture: PathBuf,
        /// The simulation's seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Threads running this worker's moments.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// How long a claim on a wake holds without renewal.
        #[arg(long, default_value_t = seed::engine::pool::WORKER_LEASE_MS_DEFAULT)]
        lease_ms: u64,
        /// LLM connections for the world's LLM beings.
        #[arg(long)]
        llm: Option<PathBuf>,
        /// Print the worker's report as JSON when it exits.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild a being's moments from its reel and compare each with what was sealed.
    Replay {
        /// @name or being id (or --all for every being of the land).
        being: Option<String>,
        /// Replay every being of the land (verification, then every moment recomputed).
        #[arg(long, conflicts_with_all = ["being", "from", "to", "step", "fork"])]
        all: bool,
        /// Threads recomputing moments in a land-wide replay (results do not depend on it).
        #[arg(long, default_value_t = 2, requires = "all")]
        threads: usize,
        /// Check every signature even where the land's verification
        /// checkpoint (left by `seed verify`) vouches for it.
        #[arg(long, requires = "all")]
        no_checkpoint: bool,
        /// The world whose roles and extensions the moments used (default: the
        /// one `seed sim --land` recorded in the land folder).
        #[arg(long)]
        fixture: Option<PathBuf>,
        /// First reel seq to show and compare.
        #[arg(long)]
        from: Option<u64>,
        /// Last reel seq (inclusive) to show and compare.
        #[arg(long)]
        to: Option<u64>,
        /// Go on after the first divergence.
        #[arg(long)]
        keep_going: bool,
        /// Re-derive each world snapshot the replay starts from by folding
        /// the facts since the snapshot before it, instead of trusting it.
        #[arg(long, conflicts_with_all = ["all", "fork", "no_snapshots"])]
        paranoid: bool,
        /// Fold the land log from genesis: use no world snapshot.
        #[arg(long, conflicts_with_all = ["all", "fork"])]
        no_snapshots: bool,
        /// Step through the moments interactively (commands on stdin: next,
        /// back, continue, break, print, help).
        #[arg(long, conflicts_with_all = ["json", "fork"])]
        step: bool,
        /// What-if: fork the world at the moment sealed at this reel seq, apply
        /// the change (--flow, --roles, --script), run it on and diff it.
        #[arg(long, conflicts_with_all = ["from", "to", "keep_going"])]
        fork: Option<u64>,
        /// The fork's new roleFlow for the being (a JSON array of clauses).
        #[arg(long, requires = "fork")]
        flow: Option<PathBuf>,
        /// Role folders the fork's definitions add (repeatable; they override).
        #[arg(long = "roles", requires = "fork")]
        roles: Vec<PathBuf>,
        /// The fork's new Rhai script for the being.
        #[arg(long, requires = "fork")]
        script: Option<PathBuf>,
        /// Rounds the fork runs from the forked moment on (default: to the land's last round).
        #[arg(long, requires = "fork")]
        ticks: Option<u64>,
        /// Keep the fork's land in this (new or empty) folder, to replay it.
        #[arg(long, requires = "fork")]
        keep: Option<PathBuf>,
        /// Print the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The replay corpus: capture a demo world's land, or check every capture replays as recorded.
    Corpus {
        #[command(subcommand)]
        command: CorpusCommand,
    },
    /// Evaluate or check a roleFlow on files (for role authors).
    Flow {
        #[command(subcommand)]
        command: FlowCommand,
    },
    /// Check or run one Rhai script on its own, without a world (for script authors).
    Script {
        #[command(subcommand)]
        command: ScriptCommand,
    },
    /// Diagnostics: seal note facts as fast as possible, printing each acknowledgement.
    #[command(hide = true)]
    Stress {
        /// Beings sealing at once (stress-0, stress-1, …; born on first use).
        #[arg(long, default_value_t = 4)]
        beings: usize,
        /// Stop after this many facts per being (default: run until killed).
        #[arg(long)]
        facts: Option<u64>,
        /// Facts each being keeps in flight before it waits for an acknowledgement.
        #[arg(long, default_value_t = STRESS_WINDOW_FACTS_DEFAULT)]
        window: usize,
    },
}

#[derive(Subcommand, Debug)]
enum HealthCommand {
    /// Revive a tripped land by a world fact of the operator; its signs are
    /// counted afresh. Stop `seed up` first, or use its health page.
    Revive {
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum ConfigCommand {
    /// Set one key (or `default` to return it to its default) by an act of the
    /// operator, in force from the next moment. Stop `seed up` first, or use
    /// its config page.
    Set {
        /// The key (`seed config` lists them).
        key: String,
        /// A whole number in the key's unit and range, or `default`.
        #[arg(allow_hyphen_values = true)]
        value: String,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum PeerCommand {
    /// This land's id, URL and key, and its peers: status, key and heartbeats.
    List {
        /// Print them as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Prove the land at URL (its key history from its genesis) and record it
    /// as a peer; it is greeted when this land is up. Stop `seed up` first, or
    /// use its peers page.
    Add {
        /// The land's URL (http:// or https://, as its `seed up` is reached).
        url: String,
        /// Print the peer recorded as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Remove a peer: nothing from it is accepted after. Stop `seed up` first,
    /// or use its peers page.
    Remove {
        /// The peer's URL, or its land id (8 or more of its first hex digits).
        peer: String,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Follow a peer: while this land is up, the peer's facts are pulled in
    /// its order, each checked here, into the read-only mirror
    /// LAND/mirrors/<land id>/ (verify and replay it with `--land` that
    /// folder). Stop `seed up` first, or use its peers page.
    Follow {
        /// The peer's URL, or its land id (8 or more of its first hex digits).
        peer: String,
        /// Follow only this being of the peer (its 64-digit id): its reel
        /// alone, into LAND/mirrors/beings/<id>/ (it verifies, but does not
        /// replay: a moment reads its whole land).
        #[arg(long)]
        being: Option<String>,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Stop following a peer (or one being of it, with --being); its mirror
    /// stays as it is.
    Unfollow {
        /// The peer's URL, or its land id (8 or more of its first hex digits).
        peer: String,
        /// The being of the peer to stop following (its 64-digit id).
        #[arg(long)]
        being: Option<String>,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum ScriptCommand {
    /// Compile a script strictly: syntax, variables used but never defined, and (for a role
    /// script) keys of the face that do not exist. Exits 1 naming file, line and column.
    Check {
        /// (Not taken here: this command reads files, not a land.)
        #[arg(long, hide = true, value_parser = no_land_here)]
        land: Option<PathBuf>,
        /// The Rhai files (all of the same kind).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// What the script is, which decides the variables it is given.
        #[arg(long, value_enum, default_value_t = ScriptKindArgument::Role)]
        kind: ScriptKindArgument,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Run a role script once on a face and print the verb call it returns.
    Run {
        /// (Not taken here: this command reads files, not a land.)
        #[arg(long, hide = true, value_parser = no_land_here)]
        land: Option<PathBuf>,
        /// The Rhai file.
        file: PathBuf,
        /// A JSON face (or a moment from GET /api/v1/beings/NAME/moments/SEQ, which holds one).
        #[arg(long)]
        face: PathBuf,
        /// The seed of the script's rand() (a moment uses its act's id).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ScriptKindArgument {
    /// A role's or a being's script, given `face`.
    Role,
    /// A DO operation, given `actor`, `target`, `args`, `world`.
    Op,
    /// A see-resolver, given `me`, `space`, `beings`, `matter`, `signals`.
    See,
    /// A before:/after: hook, given `actor`, `request`, `world`.
    Hook,
}

impl From<ScriptKindArgument> for seed::script::ScriptKind {
    fn from(kind: ScriptKindArgument) -> Self {
        match kind {
            ScriptKindArgument::Role => seed::script::ScriptKind::Role,
            ScriptKindArgument::Op => seed::script::ScriptKind::Op,
            ScriptKindArgument::See => seed::script::ScriptKind::See,
            ScriptKindArgument::Hook => seed::script::ScriptKind::Hook,
        }
    }
}

#[derive(Subcommand, Debug)]
enum CorpusCommand {
    /// Simulate a fixture and store its land in land order, with its expected digests.
    Capture {
        /// (Not taken here: this command reads files, not a land.)
        #[arg(long, hide = true, value_parser = no_land_here)]
        land: Option<PathBuf>,
        /// The fixture file to simulate.
        fixture: PathBuf,
        /// The entry's name (files NAME.land and NAME.toml).
        #[arg(long)]
        name: String,
        /// Rounds to run (default: the fixture's `ticks`).
        #[arg(long)]
        ticks: Option<u64>,
        /// The run's seed: beings' keys and scripts' rand() derive from it (same seed, same land).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The corpus folder.
        #[arg(long, default_value = "replay")]
        dir: PathBuf,
    },
    /// Replay every captured land (or one) and compare it with its expected digests (with `--store postgres://…`, each loaded into a scratch schema of that database, dropped after).
    Check {
        /// (Not taken here: this command reads files, not a land.)
        #[arg(long, hide = true, value_parser = no_land_here)]
        land: Option<PathBuf>,
        /// The corpus folder.
        #[arg(long, default_value = "replay")]
        dir: PathBuf,
        /// Only this entry.
        #[arg(long)]
        name: Option<String>,
        /// Print every entry's result as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum FlowCommand {
    /// Which roles a being with this flow wears in this context, and why.
    Eval {
        /// (Not taken here: this command reads files, not a land.)
        #[arg(long, hide = true, value_parser = no_land_here)]
        land: Option<PathBuf>,
        /// A JSON array of clauses, or {"defaultRole": ..., "flow": [...]}.
        #[arg(long)]
        flow: PathBuf,
        /// A JSON object of dotted keys or nested objects.
        #[arg(long)]
        context: PathBuf,
        /// A fixture whose world's roles to use (its extensions' role folders, then its own).
        #[arg(long)]
        fixture: Option<PathBuf>,
        /// Role folders (repeatable; later ones override; after the fixture's). Default without
        /// --fixture: roles/ and extensions/*/roles/.
        #[arg(long = "roles")]
        roles: Vec<PathBuf>,
        /// The being's effective cognition (default: the context's me.cognition, else scripted).
        #[arg(long, value_parser = parse_cognition)]
        cognition: Option<seed::fact::body::Cognition>,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Validate a flow: errors exit 2, unknown keys and likely typos are warnings.
    Check {
        /// (Not taken here: this command reads files, not a land.)
        #[arg(long, hide = true, value_parser = no_land_here)]
        land: Option<PathBuf>,
        /// The flow: a JSON array of clauses, or {"defaultRole": ..., "flow": [...]}.
        flow: PathBuf,
        /// A fixture whose world's roles to use (its extensions' role folders, then its own).
        #[arg(long)]
        fixture: Option<PathBuf>,
        /// Role folders (repeatable; later ones override; after the fixture's). Default without
        /// --fixture: roles/ and extensions/*/roles/.
        #[arg(long = "roles")]
        roles: Vec<PathBuf>,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// `--land` is global, but `seed flow`, `seed script` and `seed corpus` read
/// files, not a land: they take it only to refuse it (and hide it from
/// their help), rather than ignore it silently.
fn no_land_here(_: &str) -> Result<PathBuf, String> {
    Err("this command reads files, not a land: leave out --land".into())
}

fn parse_cognition(text: &str) -> Result<seed::fact::body::Cognition, String> {
    use seed::fact::body::Cognition;
    Cognition::of_birth(text)
        .ok_or_else(|| format!("{text:?} is not a cognition ({})", Cognition::AT_BIRTH_NAMES.join(", ")))
}

impl Arguments {
    /// Whether the verb keeps a world in memory for as long as it runs (a
    /// server, a worker, a simulation) rather than reading a land once and
    /// exiting. Such a process keeps transparent huge pages (a large world
    /// walked for long is faster on them: the portal's one-being replay took
    /// 40% longer without); the others turn them off, as zeroing them is a
    /// fifth of a short command's time (`seed::turn_transparent_huge_pages_off`).
    pub fn holds_a_world_for_long(&self) -> bool {
        match &self.command {
            Command::Up { .. }
            | Command::Worker { .. }
            | Command::Mcp { .. }
            | Command::Sim { .. }
            | Command::Stress { .. } => true,
            Command::Plant { .. }
            | Command::Beings { .. }
            | Command::Reel { .. }
            | Command::Memory { .. }
            | Command::Audit { .. }
            | Command::Verify { .. }
            | Command::Export { .. }
            | Command::Import { .. }
            | Command::Copy { .. }
            | Command::Reindex { .. }
            | Command::RecoverOperator { .. }
            | Command::Move { .. }
            | Command::RotateKey { .. }
            | Command::Config { .. }
            | Command::Peer { .. }
            | Command::Health { .. }
            | Command::Cascade { .. }
            | Command::Token { .. }
            | Command::McpSchemas { .. }
            | Command::Replay { .. }
            | Command::Corpus { .. }
            | Command::Flow { .. }
            | Command::Script { .. } => false,
        }
    }

    /// Whether the verb was asked for `--json` (its errors are then JSON too).
    pub fn wants_json(&self) -> bool {
        match &self.command {
            Command::Up { json, .. }
            | Command::Plant { json }
            | Command::Beings { json }
            | Command::Reel { json, .. }
            | Command::Memory { json, .. }
            | Command::Audit { json, .. }
            | Command::Verify { json, .. }
            | Command::Export { json, .. }
            | Command::Import { json, .. }
            | Command::Reindex { json }
            | Command::RotateKey { json, .. }
            | Command::Move { json, .. }
            | Command::Token { json }
            | Command::Config { command: None, json }
            | Command::Config { command: Some(ConfigCommand::Set { json, .. }), .. }
            | Command::Health { command: None, json }
            | Command::Health { command: Some(HealthCommand::Revive { json }), .. }
            | Command::Cascade { json, .. }
            | Command::Peer {
                command:
                    PeerCommand::List { json }
                    | PeerCommand::Add { json, .. }
                    | PeerCommand::Remove { json, .. }
                    | PeerCommand::Follow { json, .. }
                    | PeerCommand::Unfollow { json, .. },
            }
            | Command::Sim { json, .. }
            | Command::McpSchemas { json, .. }
            | Command::Worker { json, .. }
            | Command::Copy { json, .. }
            | Command::Replay { json, .. } => *json,
            Command::Corpus { command: CorpusCommand::Check { json, .. } } => *json,
            Command::Corpus { command: CorpusCommand::Capture { .. } } => false,
            Command::Flow { command: FlowCommand::Eval { json, .. } | FlowCommand::Check { json, .. } } => *json,
            Command::Script { command: ScriptCommand::Check { json, .. } | ScriptCommand::Run { json, .. } } => *json,
            // stdout is the MCP channel: errors go to stderr as text.
            Command::Mcp { .. } | Command::RecoverOperator { .. } | Command::Stress { .. } => false,
        }
    }
}

/// A failure as a verb's `--json` reports it: `{"ok": false, "error": "…"}` on
/// stdout, with `problems` (each at its file, line and column) when the
/// world or a fixture did not load.
pub fn print_json_error(error: &anyhow::Error) {
    use seed::engine::{fixture::FixtureError, EngineError};
    let problems = error.chain().find_map(|cause| {
        if let Some(EngineError::World { problems }) = cause.downcast_ref::<EngineError>() {
            return Some(&problems.problems);
        }
        cause.downcast_ref::<FixtureError>().map(|fixture| &fixture.problems)
    });
    print_json_failure(&format!("{error:#}"), problems.map(Vec::as_slice));
}

fn print_json_failure(message: &str, problems: Option<&[seed::authoring::Problem]>) {
    let mut report = serde_json::json!({ "ok": false, "error": message });
    if let Some(problems) = problems {
        report["problems"] = problems.iter().map(seed::authoring::Problem::to_json).collect();
    }
    println!("{report}");
}

/// Exit code for input files a verb cannot use as asked (clap uses the same for bad arguments).
const EXIT_BAD_INPUT: u8 = 2;

/// Input `seed flow` or `seed script` cannot use: the message on stderr (and
/// as JSON on stdout under `--json`), exit [`EXIT_BAD_INPUT`].
fn bad_input(message: String, as_json: bool) -> Result<ExitCode> {
    eprintln!("error: {message}");
    if as_json {
        print_json_failure(&message, None);
    }
    Ok(ExitCode::from(EXIT_BAD_INPUT))
}

/// One JSON value on stdout, pretty-printed (what `--json` prints).
fn print_json(value: &serde_json::Value) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

pub fn run(arguments: Arguments) -> Result<ExitCode> {
    logging::init(arguments.log_format);
    if let Command::Corpus { command } = &arguments.command {
        return match command {
            CorpusCommand::Capture { fixture, name, ticks, seed, dir, .. } => {
                corpus::capture(fixture, name, *ticks, *seed, dir)
            }
            CorpusCommand::Check { dir, name, json, .. } => {
                let store = land::store_for(None, arguments.store.as_deref())?;
                corpus::check(dir, name.as_deref(), &store, *json)
            }
        };
    }
    if let Command::Script { command } = &arguments.command {
        return match command {
            ScriptCommand::Check { files, kind, json, .. } => script::check(files, (*kind).into(), *json),
            ScriptCommand::Run { file, face, seed, json, .. } => script::run(file, face, *seed, *json),
        };
    }
    if let Command::Sim {
        fixture,
        ticks,
        seed,
        threads,
        trace,
        llm,
        fail_on_failure,
        snapshot_every_facts,
        workers,
        pool,
        lease_ms,
        resume,
        json,
    } = &arguments.command
    {
        let run = SimRun {
            snapshot_every_facts: *snapshot_every_facts,
            ticks: *ticks,
            seed: *seed,
            threads: *threads,
            trace: trace.clone(),
            llm: llm.clone(),
            fail_on_failure: *fail_on_failure,
            workers: *workers,
            pooled: *pool || *workers > 0,
            lease_ms: *lease_ms,
            resume: *resume,
        };
        let store = land::store_for(arguments.land.as_deref(), arguments.store.as_deref())?;
        return sim(arguments.land.as_deref(), fixture, run, store, *json);
    }
    if let Command::McpSchemas { world, check, json } = &arguments.command {
        return mcp_schemas::mcp_schemas(world, *check, *json);
    }
    if let Command::Copy { from, to, json } = &arguments.command {
        // `--store` names the copy's store here, not the source's.
        let store = land::store_for(None, arguments.store.as_deref())?;
        return land::copy(from, to, &store, *json);
    }
    // Bundles are audited alone: no land is opened.
    if let Command::Audit { being, tool, since, bundles, json } = &arguments.command {
        if !bundles.is_empty() {
            let (being, tool, since) = (being.clone(), tool.clone(), since.clone());
            let bundles = bundles.clone();
            return audit::audit_of_bundles(audit::AuditArguments { being, tool, since, bundles, json: *json });
        }
    }
    if let Command::Up { requests_per_minute_max, body_bytes_max, .. } = &arguments.command {
        for (flag, key, given) in [
            ("--requests-per-minute-max", "portal_requests_per_minute_max", requests_per_minute_max),
            ("--body-bytes-max", "portal_body_bytes_max", body_bytes_max),
        ] {
            if let Some(value) = given {
                anyhow::bail!(
                    "{flag} is no longer a flag of seed up: the limit is the land's configuration key {key}, \
read at each request (docs/config.md). Set it with `seed config set {key} {value}` on a stopped land, \
or on the portal's /config page while it runs"
                );
            }
        }
    }
    let dir = arguments.land.unwrap_or_else(|| PathBuf::from("land"));
    let store = land::store_for(Some(&dir), arguments.store.as_deref())?;
    match arguments.command {
        Command::Up {
            fixture,
            addr,
            round_ms,
            threads,
            requests_per_minute_max: _,
            body_bytes_max: _,
            release_grace_ms,
            header_read_timeout_ms,
            body_read_timeout_ms,
            lifetime_s,
            runner_lease_ms,
            llm,
            public_url,
            json,
        } => up::up(
            &dir,
            up::UpArguments {
                fixture,
                addr,
                round_ms,
                threads,
                limits: seed::portal::PortalLimits { release_grace_ms, header_read_timeout_ms, body_read_timeout_ms },
                lifetime_s,
                runner_lease_ms,
                llm,
                public_url,
                store: store.clone(),
                json,
            },
        ),
        Command::Mcp { being, round_ms, threads, llm } => {
            mcp::mcp(&dir, mcp::McpArguments { being, round_ms, threads, llm, store: store.clone() })
        }
        Command::Plant { json } => land::plant(&dir, &store, json),
        Command::Beings { json } => land::beings(&land::open_read_only(&dir)?, json),
        Command::Reel { being, json } => land::reel(&land::open_read_only(&dir)?, &being, json),
        Command::Audit { being, tool, since, bundles, json } => {
            audit::audit(&land::open_read_only(&dir)?, audit::AuditArguments { being, tool, since, bundles, json })
        }
        Command::Memory { being, at, query, count, json } => {
            let ask = seed::memory_view::MemoryAsk { at, query, count };
            memory::memory(&land::open_read_only(&dir)?, &being, &ask, json)
        }
        Command::Verify { being, strict, threads, no_checkpoint, json } => land::verify(
            &land::open_read_only(&dir)?,
            land::VerifyArguments { being: being.as_deref(), strict, threads, write_checkpoint: !no_checkpoint, json },
        ),
        Command::Export { being, output, json } => land::export(&land::open_read_only(&dir)?, &being, &output, json),
        Command::Import { file, json } => land::import(&land::open(&dir)?, &file, json),
        Command::RecoverOperator { fixture } => recover::recover_operator(&dir, fixture.as_deref()),
        Command::Reindex { json } => land::reindex(&land::open(&dir)?, json),
        Command::Token { json } => land::token(&dir, json),
        Command::Config { command: None, json } => config::show(&land::open_read_only(&dir)?, json),
        Command::Config { command: Some(ConfigCommand::Set { key, value, json }), .. } => {
            config::set(&dir, &store, &key, &value, json)
        }
        Command::Peer { command: PeerCommand::List { json } } => peer::list(&land::open_read_only(&dir)?, json),
        Command::Peer { command: PeerCommand::Add { url, json } } => peer::add(&dir, &store, &url, json),
        Command::Peer { command: PeerCommand::Remove { peer, json } } => peer::remove(&dir, &store, &peer, json),
        Command::Peer { command: PeerCommand::Follow { peer, being, json } } => {
            peer::set_following(&dir, &store, &peer, being.as_deref(), true, json)
        }
        Command::Peer { command: PeerCommand::Unfollow { peer, being, json } } => {
            peer::set_following(&dir, &store, &peer, being.as_deref(), false, json)
        }
        Command::Health { command: None, json } => health::show(&land::open_read_only(&dir)?, json),
        Command::Cascade { signal, json } => cascade::show(&land::open_read_only(&dir)?, &signal, json),
        Command::Health { command: Some(HealthCommand::Revive { json }), .. } => health::revive(&dir, &store, json),
        Command::Move { being, to, json } => move_being::move_being(&dir, &store, &being, &to, json),
        Command::RotateKey { being, json } => land::rotate_key(&land::open(&dir)?, &being, json),
        Command::Flow { command: FlowCommand::Eval { flow, context, fixture, roles, cognition, json, .. } } => {
            flow::eval(&flow, &context, &flow::RoleSources { fixture, roles }, cognition, json)
        }
        Command::Flow { command: FlowCommand::Check { flow, fixture, roles, json, .. } } => {
            flow::check(&flow, &flow::RoleSources { fixture, roles }, json)
        }
        Command::Worker { fixture, seed, threads, lease_ms, llm, json } => pool::worker(
            &dir,
            &fixture,
            pool::WorkerArguments { seed, threads, lease_ms, llm: llm.as_deref(), store: store.clone(), json },
        ),
        Command::Sim { .. }
        | Command::McpSchemas { .. }
        | Command::Corpus { .. }
        | Command::Script { .. }
        | Command::Copy { .. } => {
            unreachable!("handled above")
        }
        Command::Replay {
            being,
            all,
            threads,
            no_checkpoint,
            fixture,
            from,
            to,
            keep_going,
            paranoid,
            no_snapshots,
            step,
            fork,
            flow,
            roles,
            script,
            ticks,
            keep,
            json,
        } => match (being, fork) {
            (None, _) if all => replay::replay_all(&dir, fixture.as_deref(), threads, !no_checkpoint, json),
            (None, _) => {
                eprintln!(
                    "error: seed replay needs a being to replay (@name or id), or --all to replay every being of \
the land\n\nUsage: seed replay <BEING> [OPTIONS]\n       seed replay --all [OPTIONS]"
                );
                Ok(ExitCode::from(2))
            }
            (Some(being), Some(at_seq)) => replay::fork(
                &dir,
                replay::ForkArguments {
                    being: &being,
                    fixture: fixture.as_deref(),
                    at_seq,
                    flow: flow.as_deref(),
                    roles: &roles,
                    script: script.as_deref(),
                    ticks,
                    keep: keep.as_deref(),
                    json,
                },
            ),
            (Some(being), None) => replay::replay(
                &dir,
                replay::ReplayArguments {
                    being: &being,
                    fixture: fixture.as_deref(),
                    from,
                    to,
                    keep_going,
                    snapshots: match (no_snapshots, paranoid) {
                        (true, _) => replay::SnapshotTrust::None,
                        (false, true) => replay::SnapshotTrust::Paranoid,
                        (false, false) => replay::SnapshotTrust::Vouched,
                    },
                    step,
                    json,
                },
            ),
        },
        Command::Stress { beings, facts, window } => stress(&land::open(&dir)?, beings, facts, window),
    }
}

/// Seals note facts on `count` beings (`stress-0`, …) from one thread each,
/// keeping up to `window` facts in flight per being, and prints
/// `ack <being> <seq> <id>` for every fact once it is durable.
fn stress(land: &Land, count: usize, facts: Option<u64>, window: usize) -> Result<ExitCode> {
    if count == 0 || window == 0 {
        bail!("--beings and --window must be at least 1");
    }
    let mut beings = Vec::new();
    for index in 0..count {
        let name = format!("stress-{index}");
        let being = match land.resolve(&name) {
            Ok(being) => being,
            Err(seed::land::LandError::UnknownName { .. }) => {
                let spec = BeingSpec {
                    name: name.clone(),
                    parent: Some(land.operator()),
                    cognition: seed::fact::body::Cognition::Scripted,
                    role_flow: Vec::new(),
                    default_role: "stress".into(),
                    home_space: "/".into(),
                };
                let sealed = land.create_being(spec)?;
                report_ack(&sealed)?;
                sealed.being
            }
            Err(other) => return Err(other.into()),
        };
        beings.push(being);
    }
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> =
            beings.iter().map(|being| scope.spawn(move || stress_one(land, being, facts, window))).collect();
        for worker in workers {
            worker.join().map_err(|_| anyhow::anyhow!("a stress thread panicked"))??;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn stress_one(land: &Land, being: &seed::fact::BeingId, facts: Option<u64>, window: usize) -> Result<()> {
    let mut in_flight = std::collections::VecDeque::new();
    let mut sent = 0u64;
    loop {
        let more = facts.is_none_or(|limit| sent < limit);
        if more && in_flight.len() < window {
            let body = seed::canonical::to_canonical_bytes(&NoteBody { text: format!("stress {sent}") })?;
            in_flight.push_back(land.submit(being, KIND_NOTE, body)?);
            sent += 1;
            continue;
        }
        match in_flight.pop_front() {
            Some(pending) => report_ack(&pending.wait()?)?,
            None => return Ok(()),
        }
    }
}

fn report_ack(sealed: &seed::land::Sealed) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ack {} {} {}", sealed.being.to_hex(), sealed.seq, sealed.id.to_hex())?;
    out.flush()?;
    Ok(())
}

/// The options of `seed sim` besides where and what.
struct SimRun {
    ticks: Option<u64>,
    seed: u64,
    threads: usize,
    trace: Option<PathBuf>,
    llm: Option<PathBuf>,
    /// Any failed moment makes the exit status [`EXIT_SIM_FAILED`].
    fail_on_failure: bool,
    snapshot_every_facts: Option<u64>,
    /// `seed worker` processes to start (0: moments run in this process).
    workers: usize,
    /// Moments run in the pool (`--pool`, or any `--workers`).
    pooled: bool,
    lease_ms: u64,
    /// Finish a stopped run (`--resume`).
    resume: bool,
}

/// The LLM client for `--llm FILE`, if given.
fn load_model(llm: Option<&std::path::Path>) -> Result<Option<std::sync::Arc<dyn seed::llm::LanguageModel>>> {
    Ok(match llm {
        Some(path) => {
            let connections = seed::llm_http::connections::Connections::load(path)?;
            Some(std::sync::Arc::new(seed::llm_http::client::LlmClient::new(connections)?))
        }
        None => None,
    })
}

/// The moment's door to the outside: `model` (the connections file's, or
/// none) beside the MCP servers `fixture`'s extensions declare, which start
/// at their first call (`seed::mcp_client`).
fn with_mcp_tools(
    model: Option<std::sync::Arc<dyn seed::llm::LanguageModel>>,
    fixture: &seed::engine::fixture::Fixture,
) -> Result<Option<std::sync::Arc<dyn seed::llm::LanguageModel>>> {
    let servers = fixture.load_extensions().mcp_servers();
    if servers.is_empty() {
        return Ok(model);
    }
    let tools = std::sync::Arc::new(seed::mcp_client::McpTools::new(servers)?);
    let model = model.unwrap_or_else(|| std::sync::Arc::new(seed::llm::NoModel));
    Ok(Some(std::sync::Arc::new(seed::mcp_client::WithMcpTools { model, tools })))
}

/// `seed sim`'s exit status when every moment failed (or, with
/// `--fail-on-failure`, when any did); the summary is printed either way.
const EXIT_SIM_FAILED: u8 = 3;

fn sim(
    land: Option<&std::path::Path>,
    fixture_path: &std::path::Path,
    run: SimRun,
    store: seed::land::StoreLocation,
    json: bool,
) -> Result<ExitCode> {
    use seed::engine::{self, fixture::Fixture, EngineOptions};
    let SimRun {
        ticks,
        seed,
        threads,
        trace,
        llm,
        fail_on_failure,
        snapshot_every_facts,
        workers,
        pooled,
        lease_ms,
        resume,
    } = run;
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    if resume && land.is_none() {
        bail!("--resume finishes the run in a land folder: name it with --land DIR");
    }
    if pooled && !matches!(store, seed::land::StoreLocation::Postgres { .. }) {
        bail!(
            "--workers and --pool need a land on PostgreSQL (--store postgres://…): the pool's wake queue lives there"
        );
    }
    pool::check_lease_ms(lease_ms)?;
    let fixture = Fixture::load(fixture_path)?;
    let model = with_mcp_tools(load_model(llm.as_deref())?, &fixture)?;
    let temporary = match land {
        Some(_) => None,
        None => Some(tempfile::tempdir()?),
    };
    let land_dir = match (land, &temporary) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(temporary)) => temporary.path().join("land"),
        (None, None) => unreachable!("a temporary folder exists when no land is given"),
    };
    let options = EngineOptions {
        snapshot_every_facts,
        snapshot_spacing_step_bytes: None,
        store,
        ticks,
        seed,
        threads,
        land_dir: land_dir.clone(),
        trace_file: trace,
        progress: progress::for_command("seed sim"),
        model,
        mode: seed::engine::Mode::Simulation,
    };
    let summary = match pooled {
        false if resume => engine::resume_simulation(&fixture, &options),
        false if land.is_some() => engine::simulate_resumably(&fixture, &options),
        false => engine::simulate(&fixture, &options),
        true => {
            let mut pool =
                pool::LocalWorkers::new(workers, &land_dir, fixture_path, &options, lease_ms, llm.as_deref());
            let summary = match (resume, land.is_some()) {
                (true, _) => engine::pool::resume_pooled(&fixture, &options, &mut || pool.watch()),
                (false, true) => engine::pool::simulate_pooled_resumably(&fixture, &options, &mut || pool.watch()),
                (false, false) => engine::pool::simulate_pooled(&fixture, &options, &mut || pool.watch()),
            };
            pool.finish(summary.is_ok());
            summary
        }
    };
    options.progress.finish();
    let summary = summary?;
    if land.is_some() {
        replay::record_definitions(&land_dir, fixture_path, seed, &[])?;
    }
    if json {
        print_json(&summary.to_json())?;
    } else {
        let value = summary.to_json();
        println!(
            "{} — {} ticks, seed {}, {} thread(s), {} beings",
            summary.fixture, summary.ticks, seed, threads, summary.beings
        );
        println!("  moments   {}", summary.moments);
        let acts: Vec<String> = summary.acts.iter().map(|(verb, count)| format!("{verb} {count}")).collect();
        println!("  acts      {}", if acts.is_empty() { "none".to_string() } else { acts.join(", ") });
        println!("  sees      {}", summary.sees);
        println!("  failures  {}", summary.failures);
        for (reason, count) in &summary.failure_reasons {
            println!("            {count} × {reason}");
            if let Some(example) = summary.failure_examples.get(reason) {
                let script = example.script.as_ref().map(|at| format!(" in {at}")).unwrap_or_default();
                println!("              e.g. @{} at tick {}{script}: {}", example.being, example.tick, example.reason);
            }
        }
        println!("  facts     {} sealed", summary.facts_sealed);
        if let Some((tick, trip)) = &summary.tripped {
            let next = match land {
                Some(_) => "`seed health` says why, `seed health revive` revives the land",
                None => "change its key in the fixture's [config] and run again (the land was temporary)",
            };
            println!(
                "  tripped   after tick {tick} by {} (score {}‰): no moment ran after it; {next} (docs/health.md)",
                trip.sign, trip.score_permille
            );
        }
        if summary.llm_calls > 0 {
            println!(
                "  llm       {} calls, {} prompt + {} completion tokens, cost {} micros",
                summary.llm_calls, summary.llm_prompt_tokens, summary.llm_completion_tokens, summary.llm_cost_micros
            );
        }
        for (name, reason) in &summary.skipped_extensions {
            println!("  skipped extension {name}: {reason}");
        }
        for warning in &summary.warnings {
            println!("  {warning}");
        }
        println!("  speed     {} moments/s", value["momentsPerSecond"]);
        if let Some((beings, elapsed_ms)) = summary.planted {
            println!(
                "  planting  {beings} beings in {elapsed_ms} ms ({} beings/s)",
                value["planted"]["beingsPerSecond"]
            );
        }
        println!("  world_hash {}", summary.world_hash.to_hex());
        match land {
            Some(dir) => println!("  land      {} (try `seed --land {} verify`)", dir.display(), dir.display()),
            None => println!("  land      temporary (pass --land DIR to keep it)"),
        }
    }
    if summary.every_moment_failed() {
        eprintln!("error: every one of the {} moments failed (see the reasons above)", summary.moments);
        return Ok(ExitCode::from(EXIT_SIM_FAILED));
    }
    if fail_on_failure && summary.failures > 0 {
        eprintln!("error: {} of {} moments failed (--fail-on-failure)", summary.failures, summary.moments);
        return Ok(ExitCode::from(EXIT_SIM_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::Arguments;
    use clap::Parser;

    /// Servers, workers and simulations keep transparent huge pages; a
    /// command that reads a land once and exits turns them off.
    #[test]
    fn commands_that_hold_a_world_for_long_keep_huge_pages() {
        let check = |line: &[&str], expected: bool| {
            let arguments = Arguments::try_parse_from(std::iter::once("seed").chain(line.iter().copied()))
                .unwrap_or_else(|error| panic!("{line:?} parses: {error}"));
            assert_eq!(arguments.holds_a_world_for_long(), expected, "{line:?}");
        };
        check(&["up"], true);
        check(&["sim", "fixtures/town.toml"], true);
        check(&["mcp"], true);
        check(&["replay", "@walker-77"], false);
        check(&["reel", "@walker-77"], false);
        check(&["verify"], false);
        check(&["health"], false);
        check(&["beings"], false);
    }
}
