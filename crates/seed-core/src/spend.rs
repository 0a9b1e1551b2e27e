//! Spend: what a land's model calls cost, folded from facts, and the budgets
//! that bound it (docs/llm.md, "Spend and budgets").
//!
//! Every answered model call is on a reel: in the act it decided (`llm`), or,
//! when the moment sealed no act (the model called no tool, its answer was
//! refused), in a `spend` fact of its own ([`SpendBody`]). The fold adds each
//! call to its being, to the primary role the being wore and to the land,
//! in windows of stored time (the clock hour and the day a call's fact
//! carries), so replay sees the totals the moment saw.
//!
//! Budgets are the land's `budgets` configuration ([`Budgets`]): a limit of
//! tokens or cost per hour or per day for the land, for each being, for a
//! named being, for a role (all the beings wearing it, together). Before a
//! model call the moment asks [`exhausted`]; a budget spent in its window
//! means no call: the being summons its owner ([`owner_of`]) once per budget
//! and window, and its later moments in that window fail naming the budget.
//! The moments of one round read one world, so a land's or a role's budget
//! can be crossed by the calls of the round that spends it.

use crate::fact::BeingId;
use crate::llm::LlmRecord;
use crate::world::body::Wake;
use crate::world::{BeingRow, World};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::fmt;

/// The fact kind of a model call that sealed no act.
pub const KIND_SPEND: &str = "spend";
/// The land configuration key holding the budgets.
pub const BUDGETS_CONFIG_KEY: &str = "budgets";
/// The most characters of a moment's outcome a `spend` fact keeps.
pub const SPEND_OUTCOME_CHARS_MAX: usize = 500;
/// An hour of stored time, in milliseconds.
pub const HOUR_MS: u64 = 3_600_000;
/// A day of stored time, in milliseconds.
pub const DAY_MS: u64 = 24 * HOUR_MS;

/// The body of a `spend` fact: a model call whose moment sealed no act.
/// Fields in canonical order (by key length, then bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpendBody {
    pub llm: LlmRecord,
    pub wake: Wake,
    /// The land cursor the moment opened at.
    pub cursor: u64,
    /// Why no act was sealed (the see's reason, or the failure).
    pub outcome: String,
    /// The primary role the being wore (the call is counted against it).
    pub primary: Option<String>,
}

/// Calls, tokens and cost, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spent {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Millionths of a currency unit, at each connection's prices.
    pub cost_micros: u64,
}

impl Spent {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    fn add(&mut self, record: &LlmRecord) {
        self.calls = self.calls.saturating_add(1);
        self.prompt_tokens = self.prompt_tokens.saturating_add(record.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(record.completion_tokens);
        self.cost_micros = self.cost_micros.saturating_add(record.cost_micros);
    }

    fn of(&self, measure: Measure) -> u64 {
        match measure {
            Measure::Tokens => self.tokens(),
            Measure::CostMicros => self.cost_micros,
        }
    }

    pub fn to_json(&self) -> Json {
        json!({"calls": self.calls, "promptTokens": self.prompt_tokens,
               "completionTokens": self.completion_tokens, "tokens": self.tokens(), "costMicros": self.cost_micros})
    }
}

/// What was spent in one window of stored time (its index: the time
/// divided by the window's length).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub index: u64,
    pub spent: Spent,
}

/// What one being, one role or the land spent: in all, this hour, today.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpendWindows {
    pub total: Spent,
    pub hour: Window,
    pub day: Window,
}

impl SpendWindows {
    fn add(&mut self, time_ms: u64, record: &LlmRecord) {
        self.total.add(record);
        for (window, per) in [(&mut self.hour, Per::Hour), (&mut self.day, Per::Day)] {
            let index = per.window_of(time_ms);
            if window.index != index {
                *window = Window { index, spent: Spent::default() };
            }
            window.spent.add(record);
        }
    }

    /// What was spent in the window of `per` that holds `time_ms`.
    pub fn in_window(&self, per: Per, time_ms: u64) -> Spent {
        let window = match per {
            Per::Hour => self.hour,
            Per::Day => self.day,
        };
        if window.index == per.window_of(time_ms) {
            window.spent
        } else {
            Spent::default()
        }
    }
}

/// The land's spend, folded from its facts. Not part of the world's
/// canonical state (the world hash is as it always was); a snapshot carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpendLedger {
    pub land: SpendWindows,
    pub beings: imbl::OrdMap<BeingId, SpendWindows>,
    pub roles: imbl::OrdMap<String, SpendWindows>,
    /// The budget each being last summoned its owner about, and its window.
    pub owners_summoned: imbl::OrdMap<BeingId, BudgetSpent>,
}

impl SpendLedger {
    /// Adds one answered call of `being`, made wearing `primary`, sealed at `time_ms`.
    pub fn fold(&mut self, being: BeingId, primary: Option<&str>, time_ms: u64, record: &LlmRecord) {
        self.land.add(time_ms, record);
        self.beings.entry(being).or_default().add(time_ms, record);
        if let Some(role) = primary {
            self.roles.entry(role.to_string()).or_default().add(time_ms, record);
        }
    }

    /// BLAKE3 of the ledger's canonical bytes (what a snapshot claims of it).
    pub fn digest(&self) -> crate::fact::Hash32 {
        let bytes = crate::canonical::to_canonical_bytes(self).unwrap_or_default();
        crate::fact::blake3_of(&bytes)
    }
}

/// The windows a budget is counted over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Per {
    Hour,
    Day,
}

impl Per {
    pub fn length_ms(self) -> u64 {
        match self {
            Per::Hour => HOUR_MS,
            Per::Day => DAY_MS,
        }
    }

    pub fn window_of(self, time_ms: u64) -> u64 {
        time_ms / self.length_ms()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Per::Hour => "hour",
            Per::Day => "day",
        }
    }
}

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    Tokens,
    CostMicros,
}

/// The limits of one budget, each optional: tokens (prompt and completion)
/// and cost (millionths of a currency unit) per hour and per day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_hour: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_day: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros_per_hour: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros_per_day: Option<u64>,
}

/// The keys of a budget's limits (in the configuration and in `set-budget`'s args).
pub const LIMIT_KEYS: [&str; 4] = ["tokens_per_hour", "tokens_per_day", "cost_micros_per_hour", "cost_micros_per_day"];

impl Limits {
    /// Sets (or, with `None`, removes) the limit named by one of [`LIMIT_KEYS`].
    pub fn set(&mut self, key: &str, value: Option<u64>) {
        match key {
            "tokens_per_hour" => self.tokens_per_hour = value,
            "tokens_per_day" => self.tokens_per_day = value,
            "cost_micros_per_hour" => self.cost_micros_per_hour = value,
            "cost_micros_per_day" => self.cost_micros_per_day = value,
            other => debug_assert!(false, "{other} is not one of LIMIT_KEYS"),
        }
    }

    /// Each limit set, with its key, what it counts and its window.
    pub fn each(&self) -> impl Iterator<Item = (&'static str, Measure, Per, u64)> {
        [
            ("tokens_per_hour", Measure::Tokens, Per::Hour, self.tokens_per_hour),
            ("tokens_per_day", Measure::Tokens, Per::Day, self.tokens_per_day),
            ("cost_micros_per_hour", Measure::CostMicros, Per::Hour, self.cost_micros_per_hour),
            ("cost_micros_per_day", Measure::CostMicros, Per::Day, self.cost_micros_per_day),
        ]
        .into_iter()
        .filter_map(|(key, measure, per, limit)| limit.map(|limit| (key, measure, per, limit)))
    }

    pub fn is_empty(&self) -> bool {
        self.each().next().is_none()
    }
}

/// The land's `budgets` configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// All the land's calls together.
    #[serde(default, skip_serializing_if = "Limits::is_empty")]
    pub land: Limits,
    /// Each being that has no budget of its own in `beings`.
    #[serde(default, skip_serializing_if = "Limits::is_empty")]
    pub each_being: Limits,
    /// Named beings (without the `@`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub beings: BTreeMap<String, Limits>,
    /// The calls of every being wearing the role as its primary, together.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, Limits>,
}

/// Why a `budgets` configuration does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} (expected land, each_being, beings.NAME, roles.NAME, each with tokens_per_hour, tokens_per_day, cost_micros_per_hour or cost_micros_per_day as whole numbers)")]
pub struct BudgetsProblem {
    pub reason: String,
}

impl Budgets {
    pub fn from_json(value: &Json) -> Result<Budgets, BudgetsProblem> {
        let budgets: Budgets =
            serde_json::from_value(value.clone()).map_err(|error| BudgetsProblem { reason: error.to_string() })?;
        for name in budgets.beings.keys() {
            if name.starts_with('@') {
                return Err(BudgetsProblem { reason: format!("beings.{name}: name a being without its @") });
            }
        }
        Ok(budgets)
    }

    /// The world's budgets (none when its configuration has none; a
    /// configuration that does not read was refused when it was set).
    pub fn of_world(world: &World) -> Budgets {
        world.config.get(BUDGETS_CONFIG_KEY).and_then(|value| Budgets::from_json(value).ok()).unwrap_or_default()
    }

    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or(Json::Null)
    }

    /// The budget a being answers to as a being: its own, else `each_being`.
    pub fn of_being(&self, name: &str) -> (String, Limits) {
        match self.beings.get(name) {
            Some(limits) => (format!("beings.{name}"), *limits),
            None => ("each_being".to_string(), self.each_being),
        }
    }
}

/// A budget found spent: which, how much, in which window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetSpent {
    /// The budget's configuration path (`budgets.roles.trader.tokens_per_hour`).
    pub budget: String,
    pub per: Per,
    /// The window's index (stored time divided by its length).
    pub window: u64,
    pub limit: u64,
    pub spent: u64,
}

impl fmt::Display for BudgetSpent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = crate::llm::format_time(self.window.saturating_mul(self.per.length_ms()));
        write!(
            formatter,
            "budget {} is spent: {} of {} {} (from {start})",
            self.budget,
            self.spent,
            self.limit,
            match self.per {
                Per::Hour => "this hour",
                Per::Day => "today",
            }
        )
    }
}

/// The first budget `row`'s next model call would exceed at `time_ms`,
/// wearing `primary`: its own (or `each_being`), its role's, the land's,
/// each limit in [`Limits::each`] order. `None`: the call may be made.
pub fn exhausted(world: &World, row: &BeingRow, primary: Option<&str>, time_ms: u64) -> Option<BudgetSpent> {
    limits_answered(world, row, primary, time_ms).into_iter().find(BudgetLine::is_spent).map(|line| BudgetSpent {
        budget: line.budget,
        per: line.per,
        window: line.per.window_of(time_ms),
        limit: line.limit,
        spent: line.spent,
    })
}

/// Every limit a call of `row` wearing `primary` at `time_ms` answers to,
/// with what was spent against it in its window: its own budget (or
/// `each_being`), its role's, the land's.
fn limits_answered(world: &World, row: &BeingRow, primary: Option<&str>, time_ms: u64) -> Vec<BudgetLine> {
    if !world.config.contains_key(BUDGETS_CONFIG_KEY) {
        return Vec::new();
    }
    let budgets = Budgets::of_world(world);
    let ledger = &world.spend;
    let (being_path, being_limits) = budgets.of_being(&row.name);
    let mut scopes = vec![(being_path, being_limits, ledger.beings.get(&row.id).copied())];
    if let Some(role) = primary {
        if let Some(limits) = budgets.roles.get(role) {
            scopes.push((format!("roles.{role}"), *limits, ledger.roles.get(role).copied()));
        }
    }
    scopes.push(("land".to_string(), budgets.land, Some(ledger.land)));
    let mut lines = Vec::new();
    for (path, limits, windows) in scopes {
        let windows = windows.unwrap_or_default();
        for (key, measure, per, limit) in limits.each() {
            let spent = windows.in_window(per, time_ms).of(measure);
            lines.push(BudgetLine { budget: format!("{BUDGETS_CONFIG_KEY}.{path}.{key}"), per, limit, spent });
        }
    }
    lines
}

/// Who answers for `being`'s spending: its nearest ancestor of human
/// cognition (a person), else its parent; `None` for a being planted
/// without one.
pub fn owner_of(world: &World, being: BeingId) -> Option<BeingId> {
    let parent = world.beings.get(&being).and_then(|row| row.parent)?;
    let mut current = Some(parent);
    let mut steps = 0;
    while let Some(id) = current {
        let row = world.beings.get(&id)?;
        if row.cognition == crate::fact::body::Cognition::Human {
            return Some(id);
        }
        steps += 1;
        if steps > world.beings.len() {
            break;
        }
        current = row.parent;
    }
    Some(parent)
}

/// The owner `row` summons about `spent`, if it has not yet this window
/// (and has an owner that can be summoned).
pub fn owner_to_summon<'w>(world: &'w World, row: &BeingRow, spent: &BudgetSpent) -> Option<&'w BeingRow> {
    let already = world.spend.owners_summoned.get(&row.id);
    if already.is_some_and(|summoned| summoned.budget == spent.budget && summoned.window == spent.window) {
        return None;
    }
    owner_of(world, row.id)
        .and_then(|owner| world.beings.get(&owner))
        .map(|owner| &**owner)
        .filter(|owner| !owner.ended)
}

/// One limit a being answers to, with what was spent against it in the
/// window holding a given time (the being page, `seed beings --json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetLine {
    /// The limit's configuration path (`budgets.land.tokens_per_hour`).
    pub budget: String,
    pub per: Per,
    pub limit: u64,
    pub spent: u64,
}

impl BudgetLine {
    pub fn is_spent(&self) -> bool {
        self.spent >= self.limit
    }
}

/// Every limit `row`'s next model call at `time_ms` answers to, wearing
/// the role it last wore, in [`exhausted`]'s order.
pub fn budget_lines(world: &World, row: &BeingRow, time_ms: u64) -> Vec<BudgetLine> {
    limits_answered(world, row, row.previous_role.as_deref(), time_ms)
}

/// What `row` spent (in all, in the hour and the day holding `time_ms`)
/// and each limit it answers to, as JSON.
pub fn being_spend_json(world: &World, row: &BeingRow, time_ms: u64) -> Json {
    let windows = world.spend.beings.get(&row.id).copied().unwrap_or_default();
    let budgets: Vec<Json> = budget_lines(world, row, time_ms)
        .iter()
        .map(|line| {
            json!({"budget": line.budget, "per": line.per.as_str(), "limit": line.limit,
                   "spent": line.spent, "isSpent": line.is_spent()})
        })
        .collect();
    json!({
        "total": windows.total.to_json(),
        "thisHour": windows.in_window(Per::Hour, time_ms).to_json(),
        "today": windows.in_window(Per::Day, time_ms).to_json(),
        "budgets": budgets,
    })
}

/// What the summons to the owner says: what ran out, and how to raise it.
pub fn owner_summons_text(being: &str, spent: &BudgetSpent) -> String {
    let limit_key = spent.budget.rsplit('.').next().unwrap_or_default();
    let how = if spent.budget.starts_with("budgets.beings.") || spent.budget.starts_with("budgets.each_being.") {
        format!("raise it with `do set-budget` (args: being \"@{being}\", {limit_key} N)")
    } else if let Some(role) = spent.budget.strip_prefix("budgets.roles.").and_then(|rest| rest.split('.').next()) {
        format!("@operator raises it with `do set-budget` (args: role \"{role}\", {limit_key} N)")
    } else {
        format!("@operator raises it with `do set-budget` (args: land true, {limit_key} N)")
    };
    format!("@{being} made no model call: {spent}. To go on before the next {}, {how}.", spent.per.as_str())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fact::body::Cognition;
    use crate::fact::Hash32;
    use crate::llm::{LlmParams, Prices};

    fn being(world: &mut World, byte: u8, name: &str, parent: Option<u8>, cognition: Cognition) -> BeingId {
        let id = BeingId([byte; 32]);
        world.names.insert(name.to_string(), id);
        world.beings.insert(
            id,
            std::sync::Arc::new(BeingRow {
                id,
                name: name.to_string(),
                parent: parent.map(|byte| BeingId([byte; 32])),
                cognition,
                role_flow: Json::Array(Vec::new()).into(),
                role_flow_digest: None,
                default_role: "idle".into(),
                home_space: "/".into(),
                location: "/".into(),
                qualities: BTreeMap::new(),
                ended: false,
                inhabited_by: None,
                last_act_ms: None,
                previous_role: None,
                acts: 0,
            }),
        );
        id
    }

    /// The operator (human, no parent), a scripted steward it planted, an
    /// LLM clerk the steward bore, and an LLM page the clerk bore.
    pub(crate) fn family() -> World {
        let mut world = World::new();
        being(&mut world, 1, "operator", None, Cognition::Human);
        being(&mut world, 2, "steward", Some(1), Cognition::Scripted);
        being(&mut world, 3, "clerk", Some(2), Cognition::Llm);
        being(&mut world, 4, "page", Some(3), Cognition::Llm);
        world
    }

    fn call(prompt_tokens: u64, completion_tokens: u64, cost_micros: u64) -> LlmRecord {
        LlmRecord {
            connection: "local".into(),
            params: LlmParams { model: "m".into(), tool_choice: "auto".into(), temperature_milli: 0, max_tokens: 64 },
            request: Hash32([9; 32]),
            response: "{}".into(),
            prompt_tokens,
            completion_tokens,
            prices: Prices::default(),
            cost_micros,
        }
    }

    #[test]
    fn windows_count_the_calls_of_their_hour_and_day_and_start_again_at_the_next() {
        let mut windows = SpendWindows::default();
        let noon = 10 * DAY_MS + 12 * HOUR_MS;
        windows.add(noon, &call(100, 10, 5));
        windows.add(noon + HOUR_MS - 1, &call(100, 10, 5));
        assert_eq!(windows.in_window(Per::Hour, noon + 10).tokens(), 220);
        windows.add(noon + HOUR_MS, &call(50, 0, 1));
        let check = |per: Per, time_ms: u64, tokens: u64, cost_micros: u64| {
            let spent = windows.in_window(per, time_ms);
            assert_eq!((spent.tokens(), spent.cost_micros), (tokens, cost_micros), "{per:?} at {time_ms}");
        };
        check(Per::Hour, noon + HOUR_MS, 50, 1);
        check(Per::Hour, noon, 0, 0);
        check(Per::Day, noon + HOUR_MS + 5, 270, 11);
        check(Per::Day, noon + DAY_MS, 0, 0);
        assert_eq!(windows.total.calls, 3);
    }

    #[test]
    fn the_first_spent_budget_is_named_being_then_role_then_land() {
        let check = |budgets: Json, spent_by_clerk: u64, spent_by_page: u64, expected: Option<&str>| {
            let mut world = family();
            world.config.insert(BUDGETS_CONFIG_KEY.into(), budgets.clone());
            let time = 5 * HOUR_MS;
            world.spend.fold(BeingId([3; 32]), Some("clerk"), time, &call(spent_by_clerk, 0, spent_by_clerk * 2));
            world.spend.fold(BeingId([4; 32]), Some("clerk"), time, &call(spent_by_page, 0, 0));
            let clerk = world.being_named("clerk").unwrap().clone();
            let got = exhausted(&world, &clerk, Some("clerk"), time + 1).map(|spent| spent.to_string());
            match expected {
                None => assert_eq!(got, None, "{budgets}"),
                Some(needle) => {
                    let got = got.unwrap_or_else(|| panic!("{budgets}: nothing spent"));
                    assert!(got.contains(needle), "{budgets}: {got}");
                }
            }
        };
        check(json!({}), 1000, 1000, None);
        check(json!({"beings": {"clerk": {"tokens_per_hour": 100}}}), 99, 0, None);
        check(
            json!({"beings": {"clerk": {"tokens_per_hour": 100}}}),
            100,
            0,
            Some("budget budgets.beings.clerk.tokens_per_hour is spent: 100 of 100 this hour"),
        );
        check(
            json!({"beings": {"clerk": {"cost_micros_per_day": 50}}}),
            30,
            0,
            Some("budgets.beings.clerk.cost_micros_per_day is spent: 60 of 50 today"),
        );
        // A being of its own budget answers to it, not to each_being.
        check(
            json!({"each_being": {"tokens_per_hour": 10}, "beings": {"clerk": {"tokens_per_hour": 100}}}),
            50,
            0,
            None,
        );
        check(json!({"each_being": {"tokens_per_hour": 10}}), 50, 0, Some("budgets.each_being.tokens_per_hour"));
        // A role counts every being wearing it; the land counts everyone.
        check(
            json!({"roles": {"clerk": {"tokens_per_hour": 100}}}),
            50,
            50,
            Some("budgets.roles.clerk.tokens_per_hour"),
        );
        check(json!({"roles": {"judge": {"tokens_per_hour": 100}}}), 50, 50, None);
        check(
            json!({"land": {"tokens_per_day": 120}}),
            60,
            60,
            Some("budgets.land.tokens_per_day is spent: 120 of 120"),
        );
        check(
            json!({"beings": {"clerk": {"tokens_per_hour": 10}}, "land": {"tokens_per_hour": 10}}),
            60,
            60,
            Some("budgets.beings.clerk"),
        );
    }

    #[test]
    fn budgets_that_do_not_read_are_named() {
        let check = |budgets: Json, needle: &str| {
            let problem = Budgets::from_json(&budgets).expect_err("refused").to_string();
            assert!(problem.contains(needle), "{budgets}: {problem}");
        };
        check(json!({"lands": {}}), "unknown field `lands`");
        check(json!({"land": {"tokens_per_week": 5}}), "unknown field `tokens_per_week`");
        check(json!({"land": {"tokens_per_hour": -5}}), "invalid value");
        check(json!({"land": {"tokens_per_hour": "lots"}}), "invalid type");
        check(json!({"beings": {"@clerk": {"tokens_per_hour": 5}}}), "name a being without its @");
        assert!(Budgets::from_json(&json!({"land": {"tokens_per_hour": 5}})).is_ok());
    }

    #[test]
    fn the_owner_is_the_nearest_person_above_else_the_parent() {
        let mut world = family();
        let owner = |world: &World, name: &str| {
            let id = world.names[name];
            owner_of(world, id).and_then(|owner| world.name_of(&owner)).map(str::to_string)
        };
        assert_eq!(owner(&world, "page").as_deref(), Some("operator"));
        assert_eq!(owner(&world, "steward").as_deref(), Some("operator"));
        assert_eq!(owner(&world, "operator"), None);
        being(&mut world, 5, "ward", Some(3), Cognition::Human);
        being(&mut world, 6, "imp", Some(5), Cognition::Llm);
        assert_eq!(owner(&world, "imp").as_deref(), Some("ward"));
        // Without a person above, the parent answers for it.
        let mut orphans = World::new();
        being(&mut orphans, 7, "ruler", None, Cognition::Llm);
        being(&mut orphans, 8, "worker", Some(7), Cognition::Llm);
        assert_eq!(owner(&orphans, "worker").as_deref(), Some("ruler"));
    }

    #[test]
    fn the_owner_is_summoned_once_per_budget_and_window() {
        let mut world = family();
        let clerk = world.being_named("clerk").unwrap().clone();
        let spent = |budget: &str, window: u64| BudgetSpent {
            budget: budget.into(),
            per: Per::Hour,
            window,
            limit: 10,
            spent: 12,
        };
        let first = spent("budgets.land.tokens_per_hour", 7);
        assert_eq!(owner_to_summon(&world, &clerk, &first).map(|row| row.name.as_str()), Some("operator"));
        world.spend.owners_summoned.insert(clerk.id, first.clone());
        assert!(owner_to_summon(&world, &clerk, &first).is_none());
        assert!(owner_to_summon(&world, &clerk, &spent("budgets.land.tokens_per_hour", 8)).is_some());
        assert!(owner_to_summon(&world, &clerk, &spent("budgets.each_being.tokens_per_hour", 7)).is_some());
    }
}
