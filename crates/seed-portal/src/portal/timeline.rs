//! The timeline across beings: one lane per being over a window of the land
//! order, each fact a mark (an act with its verb and the role worn, a birth,
//! an end, a signal set), read straight from the store.
//!
//! The cost follows the question, not the land: the lanes are one page of
//! the beings a filter admits ([`TIMELINE_LANES_PER_PAGE`]); for each, a
//! binary search over its reel finds the facts inside the window (reels are
//! sealed in land order) and at most [`TIMELINE_MARKS_PER_LANE_MAX`] of them
//! are read. Nothing is folded or replayed: a mark's moment page replays.

use super::error::PortalError;
use super::extract::query_params;
use crate::store::{reel_seq_at_land_seq, Store, StoreError};
use crate::world::body::{ActBody, Effect, WorldBody, KIND_ACT, KIND_WORLD};
use crate::world::{BeingRow, World};
use serde_json::{json, Value as Json};

/// Lanes (beings) one page of the timeline shows (`timeline_lanes_per_page`).
pub const TIMELINE_LANES_PER_PAGE: usize = 20;
/// Most marks one lane draws; older facts in the window are counted, not
/// read (zoom in to see them).
pub const TIMELINE_MARKS_PER_LANE_MAX: usize = 400;
/// Land seqs the timeline spans when the request names no window: the
/// latest this many facts.
pub const TIMELINE_WINDOW_LAND_SEQS_DEFAULT: u64 = 100_000;
/// Narrowest window zooming in reaches, in land seqs.
pub const TIMELINE_WINDOW_LAND_SEQS_MIN: u64 = 8;
/// Labelled points on the time axis.
pub const TIMELINE_AXIS_TICKS: u64 = 6;

/// What a timeline request asks: which beings (a page of those the filter
/// admits) over which window of land seqs (`from` inclusive, `to` exclusive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimelineQuery {
    /// Part of a being's name (any case, an `@` before it or not; kept in lower case).
    pub being: Option<String>,
    /// The role the being wore at its last act (or, before any act, its default role).
    pub role: Option<String>,
    /// A space path: beings there or in a space under it.
    pub space: Option<String>,
    /// 1 = the first page of lanes.
    pub page: usize,
    pub from: Option<u64>,
    pub to: Option<u64>,
}

fn bad(field: &str, message: String) -> PortalError {
    PortalError { field: Some(field.into()), ..PortalError::bad_request(message) }
}

fn number(params: &std::collections::BTreeMap<String, String>, key: &str) -> Result<Option<u64>, PortalError> {
    match params.get(key).map(|value| value.trim()).filter(|value| !value.is_empty()) {
        None => Ok(None),
        Some(value) => value
            .parse()
            .map(Some)
            .map_err(|_| bad(key, format!("{key} {value:?} is not a land seq (a whole number from 0)"))),
    }
}

impl TimelineQuery {
    /// Reads `being`, `role`, `space`, `page`, `from` and `to`; any other
    /// parameter, a page below 1 or a window that is empty is an error naming it.
    pub fn from_query(query: Option<&str>) -> Result<TimelineQuery, PortalError> {
        let params = query_params(query, &["being", "role", "space", "page", "from", "to"])?;
        let text = |key: &str| params.get(key).map(|value| value.trim().to_string()).filter(|value| !value.is_empty());
        let page = match params.get("page").map(|value| value.trim()).filter(|value| !value.is_empty()) {
            None => 1,
            Some(value) => value
                .parse()
                .ok()
                .filter(|page| *page >= 1)
                .ok_or_else(|| bad("page", format!("page {value:?} is not a page number (1 or more)")))?,
        };
        let (from, to) = (number(&params, "from")?, number(&params, "to")?);
        if let (Some(from), Some(to)) = (from, to) {
            if from >= to {
                return Err(bad("from", format!("the window from {from} to {to} is empty: from must be below to")));
            }
        }
        // Names are lower case: the part asked for is too, once, here.
        let being = text("being").map(|part| part.trim_start_matches('@').to_lowercase());
        Ok(TimelineQuery { being, role: text("role"), space: text("space"), page, from, to })
    }

    /// The query string that asks for this (for links), with `page`, `from`
    /// and `to` replaced where given.
    pub fn to_query(&self, page: usize, from: u64, to: u64) -> String {
        let (page, from, to) = (page.to_string(), from.to_string(), to.to_string());
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for (key, value) in [("being", &self.being), ("role", &self.role), ("space", &self.space)] {
            if let Some(value) = value {
                pairs.push((key, value));
            }
        }
        pairs.extend([("page", page.as_str()), ("from", from.as_str()), ("to", to.as_str())]);
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }

    /// Whether no filter is set (every being is admitted).
    fn admits_all(&self) -> bool {
        self.being.is_none() && self.role.is_none() && self.space.is_none()
    }

    /// Whether the name filter admits a being named `name`.
    fn admits_name(&self, name: &str) -> bool {
        self.being.as_ref().is_none_or(|part| name.contains(part.as_str()))
    }

    /// Whether the role and space filters admit `row` (the name filter is
    /// [`TimelineQuery::admits_name`]).
    fn admits(&self, row: &BeingRow) -> bool {
        let wore = self
            .role
            .as_ref()
            .is_none_or(|role| row.previous_role.as_deref().unwrap_or(row.default_role.as_str()) == role);
        let placed = self.space.as_ref().is_none_or(|space| {
            row.location == *space
                || row.location.strip_prefix(space.as_str()).is_some_and(|rest| rest.starts_with('/'))
        });
        wore && placed
    }
}

/// A window of the land order: land seqs `from` (inclusive) to `to` (exclusive).
pub type Window = (u64, u64);

/// The window `[from, to)` a query asks of a land folded to `cursor`: the
/// latest [`TIMELINE_WINDOW_LAND_SEQS_DEFAULT`] facts unless it names one;
/// an end past the cursor stops at the cursor.
pub fn window_of(query: &TimelineQuery, cursor: u64) -> Window {
    let to = query.to.unwrap_or(cursor).min(cursor);
    let from = query.from.unwrap_or_else(|| to.saturating_sub(TIMELINE_WINDOW_LAND_SEQS_DEFAULT)).min(to);
    (from, to)
}

/// The windows one step of zoom or pan away from `[from, to)` within a land
/// of `cursor` facts: (in, out, earlier, later), each `None` where it would
/// not move.
pub fn neighbours(from: u64, to: u64, cursor: u64) -> [Option<Window>; 4] {
    let width = to - from;
    let zoom_in = (width > TIMELINE_WINDOW_LAND_SEQS_MIN).then(|| {
        let narrower = (width / 2).max(TIMELINE_WINDOW_LAND_SEQS_MIN);
        let start = from + (width - narrower) / 2;
        (start, start + narrower)
    });
    let zoom_out = (from > 0 || to < cursor).then(|| {
        let wider = width.saturating_mul(2).min(cursor.max(1));
        let start = from.saturating_sub(width / 2).min(cursor.saturating_sub(wider));
        (start, (start + wider).min(cursor.max(start + 1)))
    });
    let step = (width / 2).max(1);
    let earlier = (from > 0).then(|| {
        let start = from.saturating_sub(step);
        (start, start + width)
    });
    let later = (to < cursor).then(|| {
        let end = (to + step).min(cursor);
        (end - width, end)
    });
    [zoom_in, zoom_out, earlier, later]
}

/// The timeline `query` asks for, of the beings `visible` admits (every
/// being when `sees_all`), read from `store` up to the world's cursor.
pub fn timeline_json(
    store: &dyn Store,
    world: &World,
    query: &TimelineQuery,
    sees_all: bool,
    visible: impl Fn(&BeingRow) -> bool,
) -> Result<Json, PortalError> {
    let cursor = world.cursor;
    let (from, to) = window_of(query, cursor);
    // `names` is in name order, so a page of lanes is read lazily: the
    // first page of a land of 10,000 looks up 20 rows. Counting them all
    // is a scan, except when every being is admitted.
    // The name is the key: a name filter looks up only the rows it keeps.
    let admitted = || {
        world
            .names
            .iter()
            .filter(|(name, _)| query.admits_name(name))
            .filter_map(|(_, id)| world.beings.get(id))
            .filter(|row| visible(row) && query.admits(row))
    };
    let lanes_total = if sees_all && query.admits_all() { world.names.len() } else { admitted().count() };
    let pages = lanes_total.div_ceil(TIMELINE_LANES_PER_PAGE).max(1);
    if query.page > pages {
        return Err(bad("page", format!("page {} is past the last page of lanes ({pages})", query.page)));
    }
    let read_failed = |error: StoreError| PortalError::internal(format!("reading the timeline: {error}"));
    let mut roles_seen = std::collections::BTreeSet::new();
    let mut lanes = Vec::new();
    for row in admitted().skip((query.page - 1) * TIMELINE_LANES_PER_PAGE).take(TIMELINE_LANES_PER_PAGE) {
        let lane = lane_json(store, world, row, from, to).map_err(read_failed)?;
        for mark in lane["marks"].as_array().into_iter().flatten() {
            if let Some(role) = mark["primary"].as_str() {
                roles_seen.insert(role.to_string());
            }
        }
        lanes.push(lane);
    }
    let axis = axis_json(store, from, to).map_err(read_failed)?;
    Ok(json!({
        "window": { "from": from, "to": to, "cursor": cursor },
        "filter": { "being": query.being, "role": query.role, "space": query.space },
        "page": query.page, "pages": pages, "lanesTotal": lanes_total,
        "lanesPerPage": TIMELINE_LANES_PER_PAGE, "marksPerLaneMax": TIMELINE_MARKS_PER_LANE_MAX,
        "axis": axis, "legend": roles_seen.into_iter().collect::<Vec<_>>(), "lanes": lanes,
    }))
}

/// Evenly spaced labelled points of the window, each with the stored time
/// of the fact at that land seq.
fn axis_json(store: &dyn Store, from: u64, to: u64) -> Result<Vec<Json>, StoreError> {
    if from >= to {
        return Ok(Vec::new());
    }
    let mut ticks = Vec::new();
    let mut last = None;
    for step in 0..TIMELINE_AXIS_TICKS {
        let land_seq = from + (to - 1 - from) * step / (TIMELINE_AXIS_TICKS - 1);
        if last == Some(land_seq) {
            continue;
        }
        last = Some(land_seq);
        let time_ms = match store.land_log(land_seq, land_seq + 1)?.first() {
            Some(entry) => store.fact_at(entry)?.map(|stored| stored.fact.header.stored_time_ms),
            None => None,
        };
        let time = time_ms.map(crate::view::format_time_ms);
        ticks.push(json!({ "landSeq": land_seq, "time": time, "timeMs": time_ms }));
    }
    Ok(ticks)
}

/// One being's lane: its facts with `from <= land seq < to`, the newest
/// [`TIMELINE_MARKS_PER_LANE_MAX`] of them as marks.
fn lane_json(store: &dyn Store, world: &World, row: &BeingRow, from: u64, to: u64) -> Result<Json, StoreError> {
    let reel_len = store.head(&row.id)?.map_or(0, |head| head.seq + 1);
    let first = reel_seq_at_land_seq(store, &row.id, reel_len, from)?;
    // A window reaching the land's end (the default) ends at the reel's
    // end, unless the reel has sealed past the snapshot: then search.
    let end = match store.land_seq_of(&row.id, reel_len.saturating_sub(1))? {
        Some(last) if last < to => reel_len,
        _ => reel_seq_at_land_seq(store, &row.id, reel_len, to)?,
    };
    let drawn_from = first.max(end.saturating_sub(TIMELINE_MARKS_PER_LANE_MAX as u64));
    let marks: Vec<Json> =
        store.reel(&row.id, drawn_from, end)?.iter().map(|stored| mark_json(world, stored)).collect();
    Ok(json!({
        "name": row.name,
        "cognition": row.cognition.as_str(),
        "inhabited": row.inhabited_by.is_some(),
        "ended": row.ended,
        "space": row.location,
        "notDrawn": drawn_from - first,
        "marks": marks,
    }))
}

/// The signals an effect list sets (a null value: unset).
fn signals_set(effects: &[Effect]) -> Vec<Json> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::SetSignal { key, value } => Some(json!({ "key": key, "value": value })),
            _ => None,
        })
        .collect()
}

fn mark_json(world: &World, stored: &crate::store::StoredFact) -> Json {
    let fact = &stored.fact;
    let mut mark = json!({
        "landSeq": stored.land_seq, "seq": fact.header.seq, "kind": fact.kind(),
        "time": crate::view::format_time_ms(fact.header.stored_time_ms), "timeMs": fact.header.stored_time_ms,
    });
    match fact.kind() {
        KIND_ACT => match fact.body_as::<ActBody>() {
            Ok(act) => {
                mark["verb"] = json!(act.call.verb());
                mark["primary"] = json!(act.primary);
                mark["stack"] = json!(act.stack.iter().map(|used| used.name.clone()).collect::<Vec<_>>());
                mark["wake"] = json!(act.wake.kind());
                if let crate::world::body::Wake::Signal { key } = &act.wake {
                    mark["wokeBySignal"] = json!(key);
                }
                mark["signals"] = Json::Array(signals_set(&act.effects));
                mark["summary"] = json!(super::views::act_summary(world, &act));
            }
            Err(error) => mark["unreadable"] = json!(error.to_string()),
        },
        KIND_WORLD => {
            if let Ok(body) = fact.body_as::<WorldBody>() {
                mark["signals"] = Json::Array(signals_set(&body.effects));
            }
        }
        _ => {}
    }
    mark
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_query_reads_its_parameters_and_names_a_bad_one() {
        let good = TimelineQuery::from_query(Some("being=walk&role=judge&space=town&page=2&from=10&to=90")).unwrap();
        assert_eq!(
            good,
            TimelineQuery {
                being: Some("walk".into()),
                role: Some("judge".into()),
                space: Some("town".into()),
                page: 2,
                from: Some(10),
                to: Some(90)
            }
        );
        assert_eq!(TimelineQuery::from_query(None).unwrap().page, 1);
        // (query, the field named)
        for (query, field) in [
            ("page=0", "page"),
            ("page=x", "page"),
            ("from=-1", "from"),
            ("to=1.5", "to"),
            ("from=9&to=9", "from"),
            ("from=10&to=2", "from"),
            ("colour=red", "colour"),
            ("being=a&being=b", "being"),
        ] {
            let error = TimelineQuery::from_query(Some(query)).unwrap_err();
            assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST, "{query}");
            assert_eq!(error.field.as_deref(), Some(field), "{query}: {}", error.message);
        }
    }

    #[test]
    fn the_window_defaults_to_the_latest_facts_and_stops_at_the_cursor() {
        let query = |from, to| TimelineQuery { from, to, page: 1, ..TimelineQuery::default() };
        // (from, to, cursor, window)
        for (from, to, cursor, expected) in [
            (None, None, 500, (0, 500)),
            (None, None, 250_000, (150_000, 250_000)),
            (Some(100), None, 500, (100, 500)),
            (None, Some(300), 500, (0, 300)),
            (Some(10), Some(9_999), 500, (10, 500)),
            (Some(900), Some(1_000), 500, (500, 500)),
            (None, None, 0, (0, 0)),
        ] {
            assert_eq!(window_of(&query(from, to), cursor), expected, "{from:?} {to:?} at {cursor}");
        }
    }

    #[test]
    fn zoom_and_pan_stay_inside_the_land_and_keep_a_width() {
        // (window, cursor, [in, out, earlier, later])
        let cases: [(Window, u64, [Option<Window>; 4]); 4] = [
            ((0, 100), 100, [Some((25, 75)), None, None, None]),
            ((25, 75), 100, [Some((37, 62)), Some((0, 100)), Some((0, 50)), Some((50, 100))]),
            ((0, 8), 100, [None, Some((0, 16)), None, Some((4, 12))]),
            ((90, 100), 1_000, [Some((91, 99)), Some((85, 105)), Some((85, 95)), Some((95, 105))]),
        ];
        for ((from, to), cursor, expected) in cases {
            let found = neighbours(from, to, cursor);
            assert_eq!(found, expected, "{from}..{to} of {cursor}");
            for (start, end) in found.into_iter().flatten() {
                assert!(start < end && end <= cursor, "{start}..{end} inside 0..{cursor}");
            }
        }
    }
}
