//! The land's configuration keys (docs/config.md): every limit a moment
//! reads from the folded configuration, with its unit in its name, its
//! default and the range it may be set to. A key is set by a `set-config`
//! act (`seed config set`, the portal's config page, or any being whose role
//! offers the operation) and folded into `World::config` like any effect, so
//! a moment reads the value in force at its cursor and replay reads the same.
//!
//! What this module decides: which keys exist and whether a value fits one.
//! What it does not know: who may set a key (the verb layer: the operation
//! is in the setter's `canDo`), nor where a key's value is read (each reader
//! names its key: `MomentLimits::of`, `llm::prompt_in`, `moment::recall`,
//! `OpRegistry::run`, `Hooks::run`, `script::RunLimits`, `llm::CallLimits`,
//! the portal's request limits).

use serde_json::Value as Json;

/// Most bytes of one request's body to the portal (`portal_body_bytes_max`).
pub const PORTAL_BODY_BYTES_MAX_DEFAULT: usize = 64 * 1024;
/// Requests per minute per session or bearer (`portal_requests_per_minute_max`).
pub const PORTAL_REQUESTS_PER_MINUTE_MAX_DEFAULT: u64 = 600;

/// One configuration key: a whole number with its unit in its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigKey {
    pub name: &'static str,
    /// The unit, spelled out for a person (the name's suffix says it too).
    pub unit: &'static str,
    pub default: u64,
    /// The smallest value it may be set to.
    pub min: u64,
    /// The largest value it may be set to.
    pub max: u64,
    /// What it bounds, in a line.
    pub about: &'static str,
}

/// Every key `set-config` sets, in name order. Another configuration value
/// (`budgets`, `embedding_connection`) has an operation or a fixture field
/// of its own and is shown beside these, never set through them.
pub const CONFIG_KEYS: &[ConfigKey] = &[
    ConfigKey {
        name: "act_body_bytes_max",
        unit: "bytes",
        default: crate::limits::FACT_BODY_BYTES_MAX_DEFAULT as u64,
        min: 1_024,
        max: crate::fact::FACT_BODY_BYTES_CEILING as u64,
        about:
            "bytes of one act's body; a moment whose act is larger is refused (the land's own fact limit still holds)",
    },
    ConfigKey {
        name: "beings_per_land_max",
        unit: "beings",
        default: crate::moment::BEINGS_PER_LAND_MAX as u64,
        min: 1,
        max: 100_000_000,
        about: "beings a land holds; a birth past it is refused",
    },
    ConfigKey {
        name: "canopy_first_contacts_per_hour_max",
        unit: "first contacts per hour of wall time",
        default: crate::canopy::CANOPY_FIRST_CONTACTS_PER_HOUR_MAX,
        min: 0,
        max: 10_000,
        about: "lands not yet peers that may say hello and be recorded as peers in an hour; 0 refuses every land the operator did not add",
    },
    ConfigKey {
        name: "canopy_heartbeat_ms",
        unit: "milliseconds",
        default: crate::canopy::CANOPY_HEARTBEAT_MS,
        min: 1_000,
        max: 86_400_000,
        about: "time between two heartbeats to each peer",
    },
    ConfigKey {
        name: "canopy_heartbeats_per_record_max",
        unit: "heartbeats",
        default: crate::canopy::CANOPY_HEARTBEATS_PER_RECORD_MAX,
        min: 1,
        max: 1_000_000,
        about: "heartbeats counted before the land records a peer's heartbeat history (a change of status is recorded at once)",
    },
    ConfigKey {
        name: "canopy_peer_timeout_ms",
        unit: "milliseconds",
        default: crate::canopy::CANOPY_PEER_TIMEOUT_MS,
        min: 100,
        max: 300_000,
        about: "time a peer has to answer one request before the request counts as missed",
    },
    ConfigKey {
        name: "canopy_peers_max",
        unit: "peers",
        default: crate::canopy::CANOPY_PEERS_MAX,
        min: 1,
        max: 100_000,
        about: "peers a land records; another is refused",
    },
    ConfigKey {
        name: "canopy_request_bytes_max",
        unit: "bytes",
        default: crate::canopy::CANOPY_REQUEST_BYTES_MAX,
        min: 1_024,
        max: 67_108_864,
        about: "bytes of one request's body from another land; a larger one is refused unread",
    },
    ConfigKey {
        name: "canopy_requests_per_peer_per_minute_max",
        unit: "requests per minute",
        default: crate::canopy::CANOPY_REQUESTS_PER_PEER_PER_MINUTE_MAX,
        min: 10,
        max: 1_000_000,
        about: "requests the land accepts from one land in a minute; more are refused",
    },
    ConfigKey {
        name: "canopy_summons_bytes_max",
        unit: "bytes",
        default: crate::canopy::CANOPY_SUMMONS_BYTES_MAX,
        min: 1_024,
        max: 16_777_216,
        about: "bytes of one summons's sealed fact another land delivers; a larger one is refused and the refusal recorded",
    },
    ConfigKey {
        name: "canopy_summons_per_peer_per_minute_max",
        unit: "summons per minute",
        default: crate::canopy::CANOPY_SUMMONS_PER_PEER_PER_MINUTE_MAX,
        min: 1,
        max: 1_000_000,
        about: "summons one land may deliver here in a minute; more wait and are delivered later",
    },
    ConfigKey {
        name: "canopy_undelivered_retention_ms",
        unit: "milliseconds",
        default: crate::canopy::CANOPY_UNDELIVERED_RETENTION_MS,
        min: 1_000,
        max: 31_536_000_000,
        about: "time a summons to another land is tried before it is given up and recorded as undelivered",
    },
    ConfigKey {
        name: "cascade_deliveries_per_day_max",
        unit: "deliveries per day of stored time",
        default: crate::cascade::CASCADE_DELIVERIES_PER_DAY_MAX,
        min: 1,
        max: 1_000_000_000,
        about: "cascade deliveries the land records in a day; a signal past it records its drop",
    },
    ConfigKey {
        name: "cascade_deliveries_per_signal_max",
        unit: "deliveries",
        default: crate::cascade::CASCADE_DELIVERIES_PER_SIGNAL_MAX,
        min: 1,
        max: 1_000_000,
        about: "deliveries one cascade signal makes; the rest are recorded as dropped",
    },
    ConfigKey {
        name: "cascade_depth_max",
        unit: "hops",
        default: crate::cascade::CASCADE_DEPTH_MAX,
        min: 1,
        max: 10_000,
        about: "hops a cascade signal travels from where it was written; a deeper delivery is dropped",
    },
    ConfigKey {
        name: "cascade_handler_operations_max",
        unit: "operations",
        default: crate::cascade::CASCADE_HANDLER_OPERATIONS_MAX,
        min: 100,
        max: crate::cascade::CASCADE_HANDLER_OPERATIONS_CEILING,
        about: "operations one run of an extension's cascade handler may take; a run past it is a delivery dropped with why",
    },
    ConfigKey {
        name: "cascade_payload_bytes_max",
        unit: "bytes",
        default: crate::cascade::CASCADE_PAYLOAD_BYTES_MAX,
        min: 0,
        max: 1_048_576,
        about: "bytes of what a cascade signal carries; a larger one is announced as dropped",
    },
    ConfigKey {
        name: "cascade_signals_per_space_per_minute_max",
        unit: "signals per minute of stored time",
        default: crate::cascade::CASCADE_SIGNALS_PER_SPACE_PER_MINUTE_MAX,
        min: 0,
        max: 1_000_000,
        about: "cascade signals one space announces in a minute; one past it is dropped (0: cascade off)",
    },
    ConfigKey {
        name: "health_disk_free_bytes_min",
        unit: "bytes",
        default: 64 * 1024 * 1024,
        min: 0,
        max: 1 << 50,
        about: "free disk under which the land trips before a write can fail (0: not watched)",
    },
    ConfigKey {
        name: "health_facts_per_minute_max",
        unit: "facts per minute of stored time",
        default: 10_000_000,
        min: 1,
        max: 1_000_000_000_000,
        about: "facts sealed in a minute at which that sign weighs its full weight",
    },
    ConfigKey {
        name: "health_facts_weight_permille",
        unit: "thousandths of the score",
        default: 1_000,
        min: 0,
        max: 1_000_000,
        about: "how much the facts-per-minute sign weighs (0: not counted)",
    },
    ConfigKey {
        name: "health_failures_per_hour_max",
        unit: "moments per hour of stored time",
        default: 1_000_000,
        min: 1,
        max: 1_000_000_000_000,
        about: "refused or failed moments in an hour at which that sign weighs its full weight",
    },
    ConfigKey {
        name: "health_failures_weight_permille",
        unit: "thousandths of the score",
        default: 1_000,
        min: 0,
        max: 1_000_000,
        about: "how much the failures-per-hour sign weighs (0: not counted)",
    },
    ConfigKey {
        name: "health_hook_breakers_open_max",
        unit: "hook handlers",
        default: 16,
        min: 1,
        max: 1_000_000,
        about: "hook handlers with an open breaker at which that sign weighs its full weight",
    },
    ConfigKey {
        name: "health_hook_breakers_weight_permille",
        unit: "thousandths of the score",
        default: 1_000,
        min: 0,
        max: 1_000_000,
        about: "how much the open-hook-breakers sign weighs (0: not counted)",
    },
    ConfigKey {
        name: "health_store_errors_per_hour_max",
        unit: "store errors per hour of stored time",
        default: 10,
        min: 1,
        max: 1_000_000_000,
        about: "failed writes in an hour at which that sign weighs its full weight",
    },
    ConfigKey {
        name: "health_store_errors_weight_permille",
        unit: "thousandths of the score",
        default: 1_000,
        min: 0,
        max: 1_000_000,
        about: "how much the store-errors sign weighs (0: not counted)",
    },
    ConfigKey {
        name: "hook_breaker_failures_max",
        unit: "consecutive failures",
        default: crate::moment::hooks::HOOK_FAILURES_BEFORE_BREAK as u64,
        min: 1,
        max: 1_000,
        about: "failures in a row after which a hook handler's breaker opens and it is not run again",
    },
    ConfigKey {
        name: "hook_handlers_per_point_max",
        unit: "handlers",
        default: crate::moment::hooks::HOOK_HANDLERS_PER_POINT_MAX as u64,
        min: 1,
        max: crate::moment::hooks::HOOK_HANDLERS_PER_POINT_CEILING as u64,
        about: "hook handlers run at one point (before or after a verb) for one act, in load order; those past it are not run, each leaving an incident",
    },
    ConfigKey {
        name: "hook_operations_max",
        unit: "operations",
        default: crate::moment::hooks::HOOK_OPERATIONS_MAX,
        min: 100,
        max: crate::moment::hooks::HOOK_OPERATIONS_CEILING,
        about: "operations one run of a hook handler may take; a run past it is a failure of the handler (counted toward its breaker)",
    },
    ConfigKey {
        name: "inbox_depth_max",
        unit: "summons",
        default: crate::moment::INBOX_DEPTH_MAX as u64,
        min: 1,
        max: 1_000_000,
        about: "summons waiting in one being's inbox; a summons past it is refused",
    },
    ConfigKey {
        name: "llm_call_retries_max",
        unit: "retries",
        default: crate::llm::LLM_CALL_RETRIES_MAX_DEFAULT as u64,
        min: 0,
        max: 100,
        about: "retries of one model call after a 429, a 5xx or no connection; a connection's own `retries_max` may ask for fewer, never more",
    },
    ConfigKey {
        name: "llm_call_timeout_ms",
        unit: "milliseconds",
        default: crate::llm::LLM_CALL_TIMEOUT_MS_DEFAULT,
        min: 100,
        max: 3_600_000,
        about: "how long one attempt of a model call may take; a connection's own `timeout_ms` may be shorter, never longer",
    },
    ConfigKey {
        name: "llm_calls_in_flight_max",
        unit: "calls",
        default: crate::llm::LLM_CALLS_IN_FLIGHT_MAX_DEFAULT as u64,
        min: 1,
        max: 1_024,
        about: "model calls (chat and embeddings) the land has in flight at once; the connections file's `concurrency_max` may allow fewer, never more",
    },
    ConfigKey {
        name: "llm_prompt_chars_max",
        unit: "characters",
        default: crate::llm::LLM_PROMPT_CHARS_MAX as u64,
        min: 1_000,
        max: 10_000_000,
        about: "characters of one model call's prompt (face, wake, recall)",
    },
    ConfigKey {
        name: "llm_response_bytes_max",
        unit: "bytes",
        default: crate::llm::LLM_RESPONSE_BYTES_MAX as u64,
        min: 1_024,
        max: 64 * 1024 * 1024,
        about: "bytes of one model answer the moment reads",
    },
    ConfigKey {
        name: "mcp_breaker_failures_max",
        unit: "consecutive failures",
        default: crate::tools::MCP_LAND_BREAKER_FAILURES_MAX_DEFAULT as u64,
        min: 1,
        max: 1_000,
        about: "failures in a row after which an MCP server's breaker opens; a server's own `breaker_failures_max` may be lower, never higher",
    },
    ConfigKey {
        name: "mcp_call_retries_max",
        unit: "retries",
        default: crate::tools::MCP_CALL_RETRIES_MAX_DEFAULT as u64,
        min: 0,
        max: 100,
        about: "retries of one MCP tool call after its server failed to answer; a server's own `retries_max` may ask for fewer, never more",
    },
    ConfigKey {
        name: "mcp_call_timeout_ms",
        unit: "milliseconds",
        default: crate::tools::MCP_CALL_TIMEOUT_MS_DEFAULT,
        min: 100,
        max: 3_600_000,
        about: "how long one attempt of an MCP tool call may take; a server's own `timeout_ms` may be shorter, never longer",
    },
    ConfigKey {
        name: "mcp_calls_in_flight_max",
        unit: "calls",
        default: crate::tools::MCP_CALLS_IN_FLIGHT_MAX_DEFAULT as u64,
        min: 1,
        max: 1_024,
        about: "tool calls one MCP server has in flight at once; a server's own `concurrency_max` may allow fewer, never more",
    },
    ConfigKey {
        name: "mcp_result_bytes_max",
        unit: "bytes",
        default: crate::tools::MCP_LAND_RESULT_BYTES_MAX_DEFAULT as u64,
        min: 1_024,
        max: 16_777_216,
        about: "bytes of one MCP tool call's result the act records; a server's own `result_bytes_max` may be lower, never higher",
    },
    ConfigKey {
        name: "op_effects_max",
        unit: "effects",
        default: crate::moment::ops::OP_EFFECTS_MAX as u64,
        min: 1,
        max: 4_096,
        about: "effects one DO operation may make; an operation making more is refused",
    },
    ConfigKey {
        name: "portal_body_bytes_max",
        unit: "bytes",
        default: PORTAL_BODY_BYTES_MAX_DEFAULT as u64,
        min: 1_024,
        max: 16_777_216,
        about: "bytes of one request's body to the portal's pages and API; a larger one is refused with 413 (a field that would make a fact over the land's own fact limit is refused too)",
    },
    ConfigKey {
        name: "portal_requests_per_minute_max",
        unit: "requests per minute of wall time",
        default: PORTAL_REQUESTS_PER_MINUTE_MAX_DEFAULT,
        min: 10,
        max: 1_000_000_000,
        about: "requests one session (or one bearer's account) makes to the portal and its MCP endpoint in a minute; one past it is refused with 429",
    },
    ConfigKey {
        name: "recall_face_chars_max",
        unit: "characters",
        default: crate::moment::recall::RECALL_FACE_CHARS_MAX as u64,
        min: 0,
        max: 1_000_000,
        about: "characters of recalled items in one half or inward face",
    },
    ConfigKey {
        name: "role_flow_clauses_max",
        unit: "clauses",
        default: crate::roles::flow::ROLE_FLOW_CLAUSES_MAX as u64,
        min: 1,
        max: crate::roles::flow::ROLE_FLOW_CLAUSES_MAX as u64,
        about: "clauses of a roleFlow an edit or a birth sets; a longer one is refused",
    },
    ConfigKey {
        name: "script_array_items_max",
        unit: "items",
        default: crate::script::SCRIPT_ARRAY_ITEMS_MAX as u64,
        min: 1,
        max: crate::script::SCRIPT_COLLECTION_ITEMS_CEILING as u64,
        about: "items of one array a script run builds; a larger one fails the run as out of budget",
    },
    ConfigKey {
        name: "script_call_depth_max",
        unit: "calls",
        default: crate::script::SCRIPT_CALL_DEPTH_MAX as u64,
        min: 1,
        max: crate::script::SCRIPT_CALL_DEPTH_CEILING as u64,
        about: "function calls a script run may nest; a deeper run fails as out of budget",
    },
    ConfigKey {
        name: "script_map_entries_max",
        unit: "entries",
        default: crate::script::SCRIPT_MAP_ENTRIES_MAX as u64,
        min: 1,
        max: crate::script::SCRIPT_COLLECTION_ITEMS_CEILING as u64,
        about: "entries of one map a script run builds; a larger one fails the run as out of budget",
    },
    ConfigKey {
        name: "script_operations_max",
        unit: "operations",
        default: crate::script::SCRIPT_OPERATIONS_MAX,
        min: 1_000,
        max: crate::script::SCRIPT_OPERATIONS_CEILING,
        about: "operations one run of a role's, an operation's, a see-resolver's or a panel's Rhai script may take; a run past it fails as out of budget (hooks and cascade handlers have keys of their own)",
    },
    ConfigKey {
        name: "script_string_bytes_max",
        unit: "bytes",
        default: crate::script::SCRIPT_STRING_BYTES_MAX as u64,
        min: 64,
        max: crate::script::SCRIPT_STRING_BYTES_CEILING as u64,
        about: "bytes of one string a script run builds; a longer one fails the run as out of budget",
    },
    ConfigKey {
        name: "summon_content_chars_max",
        unit: "characters",
        default: crate::moment::SUMMON_CONTENT_CHARS_MAX as u64,
        min: 1,
        max: 1_000_000,
        about: "characters of one summons' content",
    },
    ConfigKey {
        name: "summons_per_minute_max",
        unit: "summons per minute of stored time",
        default: crate::moment::SUMMONS_PER_MINUTE_MAX as u64,
        min: 1,
        max: 1_000_000,
        about: "summons one being sends in a minute; one past it is refused",
    },
    ConfigKey {
        name: "when_nesting_depth_max",
        unit: "levels",
        default: crate::roles::when::WHEN_NESTING_DEPTH_MAX as u64,
        min: 0,
        max: crate::roles::when::WHEN_NESTING_DEPTH_MAX as u64,
        about: "levels `not`, `or` and `and` nest in a roleFlow an edit or a birth sets; a deeper one is refused",
    },
];

/// The key named `name`, if there is one.
pub fn key_named(name: &str) -> Option<&'static ConfigKey> {
    CONFIG_KEYS.iter().find(|key| key.name == name)
}

/// Configuration values that are set another way, and the way.
const SET_ELSEWHERE: &[(&str, &str)] = &[
    ("budgets", "`do set-budget` (docs/llm.md)"),
    ("embedding_connection", "the fixture's [config] (docs/memory.md)"),
    ("embedding_model", "the fixture's [config] (docs/memory.md)"),
    ("land_tripped", "the health breaker, and cleared by `seed health revive` (docs/health.md)"),
    ("land_revived", "`seed health revive` or the portal's /health page (docs/health.md)"),
];

/// Why a value cannot be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("there is no configuration key {key:?}{}", suggestion.map(|name| format!(" (did you mean {name}?)")).unwrap_or_default())]
    UnknownKey { key: String, suggestion: Option<&'static str> },
    #[error("{key} is not set with set-config: it is set with {way}")]
    SetElsewhere { key: String, way: &'static str },
    #[error("{key} is a whole number of {unit}, not {found}")]
    NotAWholeNumber { key: &'static str, unit: &'static str, found: String },
    #[error("{key} = {value} is out of range: {min} to {max} {unit}")]
    OutOfRange { key: &'static str, unit: &'static str, value: u64, min: u64, max: u64 },
}

/// The key `name` names, or why it names none.
pub fn key_for_setting(name: &str) -> Result<&'static ConfigKey, ConfigError> {
    if let Some(key) = key_named(name) {
        return Ok(key);
    }
    if let Some((_, way)) = SET_ELSEWHERE.iter().find(|(other, _)| *other == name) {
        return Err(ConfigError::SetElsewhere { key: name.to_string(), way });
    }
    // A near miss (a typo), or a key the name begins (`inbox_depth`).
    let suggestion = CONFIG_KEYS
        .iter()
        .map(|key| (strsim::damerau_levenshtein(name, key.name), key.name))
        .filter(|(distance, key)| *distance <= 3 || (name.len() >= 4 && key.starts_with(name)))
        .min()
        .map(|(_, name)| name);
    Err(ConfigError::UnknownKey { key: name.to_string(), suggestion })
}

/// `value` checked against `key`: a whole number within its range (`null`
/// is always allowed: the key goes back to its default).
pub fn check_value(key: &'static ConfigKey, value: &Json) -> Result<Option<u64>, ConfigError> {
    if value.is_null() {
        return Ok(None);
    }
    let number = value.as_u64().ok_or_else(|| ConfigError::NotAWholeNumber {
        key: key.name,
        unit: key.unit,
        found: value.to_string(),
    })?;
    if number < key.min || number > key.max {
        return Err(ConfigError::OutOfRange {
            key: key.name,
            unit: key.unit,
            value: number,
            min: key.min,
            max: key.max,
        });
    }
    Ok(Some(number))
}

/// A value typed on a command line or in a form: a whole number (`_` may
/// group digits), or `default` for none.
pub fn parse_value(key: &'static ConfigKey, text: &str) -> Result<Option<u64>, ConfigError> {
    let text = text.trim();
    if text == "default" {
        return Ok(None);
    }
    let digits: String = text.chars().filter(|c| *c != '_').collect();
    let value = digits.parse::<u64>().map_err(|_| ConfigError::NotAWholeNumber {
        key: key.name,
        unit: key.unit,
        found: format!("{text:?}"),
    })?;
    check_value(key, &Json::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(key: &str, value: Json, expected: Result<Option<u64>, &str>) {
        let got = key_for_setting(key).and_then(|key| check_value(key, &value)).map_err(|error| error.to_string());
        assert_eq!(got, expected.map_err(str::to_string), "{key} = {value}");
    }

    #[test]
    fn a_value_fits_its_key_or_the_error_names_what_is_wrong() {
        check("inbox_depth_max", json!(5), Ok(Some(5)));
        check("inbox_depth_max", json!(null), Ok(None));
        check("recall_face_chars_max", json!(0), Ok(Some(0)));
        check("inbox_depth_max", json!(0), Err("inbox_depth_max = 0 is out of range: 1 to 1000000 summons"));
        check("inbox_depth_max", json!(-1), Err("inbox_depth_max is a whole number of summons, not -1"));
        check("inbox_depth_max", json!("5"), Err("inbox_depth_max is a whole number of summons, not \"5\""));
        check(
            "llm_prompt_chars_max",
            json!(999),
            Err("llm_prompt_chars_max = 999 is out of range: 1000 to 10000000 characters"),
        );
        check(
            "inbox_depth",
            json!(5),
            Err("there is no configuration key \"inbox_depth\" (did you mean inbox_depth_max?)"),
        );
        check(
            "inbox_dept_max",
            json!(5),
            Err("there is no configuration key \"inbox_dept_max\" (did you mean inbox_depth_max?)"),
        );
        check("zzz", json!(5), Err("there is no configuration key \"zzz\""));
        check(
            "budgets",
            json!(5),
            Err("budgets is not set with set-config: it is set with `do set-budget` (docs/llm.md)"),
        );
    }

    #[test]
    fn a_typed_value_reads_digits_grouped_or_default() {
        let key = key_named("summon_content_chars_max").expect("a key");
        assert_eq!(parse_value(key, "1_000"), Ok(Some(1_000)));
        assert_eq!(parse_value(key, " 40 "), Ok(Some(40)));
        assert_eq!(parse_value(key, "default"), Ok(None));
        assert_eq!(
            parse_value(key, "4k").map_err(|error| error.to_string()),
            Err("summon_content_chars_max is a whole number of characters, not \"4k\"".to_string())
        );
    }

    #[test]
    fn every_key_names_its_unit_and_holds_its_default_in_range_in_name_order() {
        let names: Vec<&str> = CONFIG_KEYS.iter().map(|key| key.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        for key in CONFIG_KEYS {
            assert!(key.min <= key.default && key.default <= key.max, "{}", key.name);
            assert!(
                ["_max", "_min", "_ms", "_bytes", "_chars", "_permille"].iter().any(|unit| key.name.ends_with(unit)),
                "{} names its unit or bound",
                key.name
            );
        }
    }
}
