//! What the pages show, as JSON: every page renders one of these values and
//! `/api/v1` returns the same value, so the two cannot drift apart.

use super::error::PortalError;
use super::extract::query_params;
use super::live::LiveLand;
use crate::fact::body::Cognition;
use crate::fact::BeingId;
use crate::moment::{self, is_ancestor};
use crate::world::body::KIND_ACT as KIND_ACT_NAME;
use crate::world::{ActBody, BeingRow, Matter, Wake, World};
use serde_json::{json, Value as Json};

/// Facts of a reel a being page shows (the latest).
pub const BEING_PAGE_FACTS_MAX: u64 = 50;
/// Moment traces the moments page shows.
pub const MOMENT_TRACES_SHOWN_MAX: usize = 100;

pub fn being_row<'a>(world: &'a World, name: &str) -> Result<&'a BeingRow, PortalError> {
    let name = name.trim_start_matches('@');
    world.being_named(name).ok_or_else(|| PortalError::not_found(format!("there is no being @{name}")))
}

/// Whether `person` may drive `row` from the portal: itself, a being it
/// inhabits now, or a human-cognition being it is an ancestor of.
pub fn may_drive(world: &World, person: BeingId, row: &BeingRow) -> Result<(), MayNotDrive> {
    if row.id == person || row.inhabited_by == Some(person) {
        return Ok(());
    }
    if row.cognition == Cognition::Human && is_ancestor(world, person, row.id) {
        return Ok(());
    }
    let being = row.name.clone();
    Err(match row.cognition {
        Cognition::Human => {
            MayNotDrive::NotAnAncestor { person: world.name_of(&person).unwrap_or("you").to_string(), being }
        }
        other => MayNotDrive::NotInhabited { being, cognition: other.as_str() },
    })
}

/// Why a person may not drive a being.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MayNotDrive {
    #[error("@{person} is not an ancestor of @{being}, so may not drive it")]
    NotAnAncestor { person: String, being: String },
    #[error("@{being} has {cognition} cognition: inhabit it first (only an ancestor may) to drive it")]
    NotInhabited { being: String, cognition: &'static str },
}

/// Beings the world shows under each space, by name (the rest are counted;
/// the space's page lists them all, a page at a time).
pub const WORLD_BEINGS_SHOWN_PER_SPACE_MAX: usize = 50;

pub fn world_json(world: &World, page: &MatterPage) -> Json {
    // Each space's beings are counted by the fold (`live_beings_by_space`);
    // the first few of each, by name, are found walking the names in order
    // until every space has its few. Where names and spaces interleave (a
    // generated crowd) that is about the beings shown, so a land of a
    // million stays a page and costs one; a space whose beings all sort
    // last makes it walk further.
    let mut left_to_show: usize = world
        .live_beings_by_space
        .values()
        .map(|count| usize::try_from(*count).unwrap_or(usize::MAX).min(WORLD_BEINGS_SHOWN_PER_SPACE_MAX))
        .fold(0, usize::saturating_add);
    let mut here: std::collections::BTreeMap<&str, Vec<Json>> = std::collections::BTreeMap::new();
    for row in world.names.values().filter_map(|id| world.beings.get(id)).filter(|row| !row.ended) {
        if left_to_show == 0 {
            break;
        }
        let shown = here.entry(row.location.as_str()).or_default();
        if shown.len() < WORLD_BEINGS_SHOWN_PER_SPACE_MAX {
            shown.push(json!({"name": row.name, "cognition": row.cognition.as_str(),
                   "effectiveCognition": row.effective_cognition().as_str(),
                   "previousRole": row.previous_role, "inbox": world.inbox.get(&row.id).map_or(0, |i| i.len())}));
            left_to_show -= 1;
        }
    }
    let spaces: Vec<Json> = world
        .spaces
        .iter()
        .map(|(path, space)| {
            let beings = here.remove(path.as_str()).unwrap_or_default();
            let being_count = world.live_beings_by_space.get(path).copied().unwrap_or(0);
            let depth = if path == "/" { 0 } else { path.matches('/').count() };
            let here = matter_in_space(world, path);
            let matter_count = here.clone().count();
            let matter: Vec<Json> = here
                .take(SPACE_MATTER_SHOWN_MAX)
                .map(|(address, matter)| matter_json(world, address, matter))
                .collect();
            json!({"path": path, "kind": space.kind, "depth": depth, "qualities": space.qualities, "beings": beings,
                   "beingCount": being_count, "matter": matter, "matterCount": matter_count})
        })
        .collect();
    json!({
        "cursor": world.cursor,
        "beings": world.beings.len(),
        "spaces": spaces,
        "signals": world.signals,
        "roles": world.roles.keys().collect::<Vec<_>>(),
        "matter": matter_page_json(world, page),
    })
}

/// The world page's value for one world snapshot, computed by the first
/// request that asks for it and shared by every other: the world page, its
/// live part (fetched by every open tab on every world event) and
/// `/api/v1/world` without paging parameters ask for the same value until
/// the land publishes its next snapshot.
///
/// It keeps the world it was computed for weakly: holding it, the cache
/// would be the last owner of a world the land has moved past, and the
/// request that replaced it would free the whole of it (half a second on a
/// million-being world) before answering. Freed where the land publishes
/// its next world, it costs no request anything.
#[derive(Default)]
pub struct WorldViewCache {
    cached: std::sync::Mutex<Option<(std::sync::Weak<World>, std::sync::Arc<Json>)>>,
}

impl WorldViewCache {
    /// `world_json(world, first page)`, computed once per snapshot.
    pub fn world_json(&self, world: &std::sync::Arc<World>) -> std::sync::Arc<Json> {
        // Held while computing: requests racing for a new snapshot wait for
        // the one computation instead of each doing it.
        let mut cached = self.cached.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((seen, value)) = cached.as_ref() {
            // A weak reference keeps its allocation (not the world in it),
            // so no later world can be at the same address.
            if std::ptr::eq(seen.as_ptr(), std::sync::Arc::as_ptr(world)) {
                return value.clone();
            }
        }
        let value = std::sync::Arc::new(world_json(world, &MatterPage::default()));
        *cached = Some((std::sync::Arc::downgrade(world), value.clone()));
        value
    }
}

/// Matter items `/api/v1/world` returns in one page unless asked for fewer
/// or more (`matterLimit`).
pub const WORLD_MATTER_PAGE_DEFAULT: usize = 100;
/// Most matter items one page of `/api/v1/world` holds.
pub const WORLD_MATTER_PAGE_MAX: usize = 1_000;
/// Matter items the world shows under each space (the rest are counted).
pub const SPACE_MATTER_SHOWN_MAX: usize = 20;

/// Which page of the world's matter to show: the items after `after` (an
/// address; `None`: from the first), at most `limit` of them, in address
/// order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatterPage {
    pub after: Option<String>,
    pub limit: usize,
}

impl Default for MatterPage {
    fn default() -> MatterPage {
        MatterPage { after: None, limit: WORLD_MATTER_PAGE_DEFAULT }
    }
}

impl MatterPage {
    /// Reads `matterAfter` and `matterLimit` from a query string; any other
    /// parameter, or a limit outside 1..=`WORLD_MATTER_PAGE_MAX`, is an
    /// error naming it.
    pub fn from_query(query: Option<&str>) -> Result<MatterPage, PortalError> {
        let params = query_params(query, &["matterAfter", "matterLimit"])?;
        let mut page = MatterPage { after: params.get("matterAfter").cloned(), ..MatterPage::default() };
        if let Some(value) = params.get("matterLimit") {
            page.limit =
                value.parse().ok().filter(|limit| (1..=WORLD_MATTER_PAGE_MAX).contains(limit)).ok_or_else(|| {
                    PortalError {
                        field: Some("matterLimit".into()),
                        ..PortalError::bad_request(format!(
                            "matterLimit {value:?} is not a number from 1 to {WORLD_MATTER_PAGE_MAX}"
                        ))
                    }
                })?;
        }
        Ok(page)
    }
}

/// The matter of the space at `path` (addressed `path#id`), in address order.
pub(super) fn matter_in_space<'w>(
    world: &'w World,
    path: &str,
) -> impl Iterator<Item = (&'w String, &'w Matter)> + Clone {
    let prefix = format!("{path}#");
    world.matter.range(prefix.clone()..).take_while(move |(address, _)| address.starts_with(&prefix))
}

/// One piece of matter in a list: what it is, who made it, when.
pub(super) fn matter_summary_json(world: &World, address: &str, matter: &Matter) -> Json {
    json!({
        "address": address,
        "kind": matter.kind,
        "creator": matter.creator.as_ref().and_then(|id| world.name_of(id)),
        "madeAtSeq": matter.made_at_seq,
    })
}

/// One piece of matter as the portal shows it: the summary, its space and
/// its fields.
pub(super) fn matter_json(world: &World, address: &str, matter: &Matter) -> Json {
    let mut shown = matter_summary_json(world, address, matter);
    shown["space"] = json!(address.split_once('#').map_or(address, |(space, _)| space));
    shown["fields"] = json!(matter.fields);
    shown
}

/// One page of the world's matter: `total`, the page's `items`, and `next`
/// (the `matterAfter` of the next page; `null` on the last).
fn matter_page_json(world: &World, page: &MatterPage) -> Json {
    use std::ops::Bound;
    let from = match &page.after {
        Some(after) => Bound::Excluded(after.clone()),
        None => Bound::Unbounded,
    };
    let mut rest = world.matter.range((from, Bound::Unbounded));
    let items: Vec<Json> =
        rest.by_ref().take(page.limit).map(|(address, matter)| matter_json(world, address, matter)).collect();
    let next = match rest.next() {
        Some(_) => items.last().and_then(|item| item["address"].as_str()).map(str::to_string),
        None => None,
    };
    json!({"total": world.matter.len(), "items": items, "next": next})
}

/// The wake a preview of the being's next moment opens with: a person's for
/// a being a person drives, a tick's otherwise.
pub fn preview_wake(row: &BeingRow) -> Wake {
    if row.effective_cognition() == Cognition::Human {
        Wake::Person
    } else {
        Wake::Tick { tick: 0 }
    }
}

/// The being's current role stack and why, and what it may do now: the
/// beats before the cognition, run at the world as it stands.
pub fn now_json(live: &LiveLand, world: &World, row: &BeingRow, wake: Wake) -> Json {
    match moment::preview(live.substrate(), world, row.id, wake, live.now_ms()) {
        Ok((_, assigned, face)) => json!({
            "primary": assigned.composed.primary.as_deref(),
            "stack": assigned.composed.stack.iter().map(|name| name.as_ref()).collect::<Vec<_>>(),
            "clauses": assigned.flow.explain(&assigned.walk),
            "can": {"see": face.can_see, "do": face.can_do, "summon": face.can_summon, "be": face.can_be},
            "prompt": assigned.composed.render_prompt(&assigned.context),
        }),
        Err(failure) => json!({"failure": format!("{}: {}", failure.beat.as_str(), failure.refusal)}),
    }
}

/// A being as its page shows it. `inside` says whether the viewer may see
/// inside it (its reel and inbox): a person sees only inside their own
/// beings, and of another's only what the world page shows.
pub fn being_json(
    live: &LiveLand,
    world: &World,
    row: &BeingRow,
    person: BeingId,
    inside: bool,
) -> Result<Json, PortalError> {
    let mut being = json!({
        "name": row.name,
        "id": row.id.to_hex(),
        "parent": row.parent.and_then(|parent| world.name_of(&parent).map(|n| format!("@{n}"))),
        "cognition": row.cognition.as_str(),
        "effectiveCognition": row.effective_cognition().as_str(),
        "inhabitedBy": row.inhabited_by.and_then(|by| world.name_of(&by).map(|n| format!("@{n}"))),
        "location": row.location,
        "home": row.home_space,
        "defaultRole": row.default_role,
        "acts": row.acts,
        "ended": row.ended,
        // Canopy's moves (`seed move`): where it went, or where it came from.
        "movedTo": world.canopy.moved_away.get(&row.id).map(|moved| {
            json!({"land": moved.land.to_hex(), "url": moved.url, "seq": moved.seq})
        }),
        "movedFrom": world.canopy.moved_in.get(&row.id).map(|land| land.to_hex()),
    });
    if !inside {
        being["private"] = json!(true);
        being["youMayDrive"] = json!(false);
        return Ok(being);
    }
    let store = live.store();
    let head = store.head(&row.id)?.map_or(0, |head| head.seq);
    let mut reel = Vec::new();
    // Spend is folded from the reel's acts and spend facts (see spend.rs).
    let spent = world.spend.beings.get(&row.id).map(|windows| windows.total).unwrap_or_default();
    for stored in store.reel(&row.id, (head + 1).saturating_sub(BEING_PAGE_FACTS_MAX), head + 1)? {
        let fact = &stored.fact;
        let act = (fact.kind() == KIND_ACT_NAME).then(|| fact.body_as::<ActBody>().ok()).flatten();
        let summary = match &act {
            Some(act) => act_summary(world, act),
            None => fact.kind().to_string(),
        };
        reel.push(json!({
            "seq": fact.header.seq, "landSeq": stored.land_seq, "time": crate::view::format_time_ms(fact.header.stored_time_ms),
            "timeMs": fact.header.stored_time_ms,
            "kind": fact.kind(), "id": fact.id().to_hex(), "summary": summary,
            "primary": act.as_ref().and_then(|act| act.primary.clone()),
            "gate": act.as_ref().and_then(|act| act.gate.as_ref()).map(crate::approval::Gate::to_json),
        }));
    }
    reel.reverse();
    let inbox: Vec<Json> = world
        .inbox
        .get(&row.id)
        .map(|pending| {
            pending
                .values()
                .map(|summon| {
                    json!({"summon": summon.fact.to_hex(), "from": summon.sender(world),
                           "content": summon.content, "callerRole": summon.caller_role, "landSeq": summon.land_seq})
                })
                .collect()
        })
        .unwrap_or_default();
    let wake = preview_wake(row);
    let drive = may_drive(world, person, row);
    let inside = json!({
        "roleFlow": row.role_flow,
        "qualities": row.qualities.iter().filter(|(key, _)| key.as_str() != "script").collect::<std::collections::BTreeMap<_, _>>(),
        "now": now_json(live, world, row, wake),
        "inbox": inbox,
        "reel": reel,
        "reelLength": head + 1,
        "tokens": {"calls": spent.calls, "promptTokens": spent.prompt_tokens,
                   "completionTokens": spent.completion_tokens, "costMicros": spent.cost_micros},
        "spend": crate::spend::being_spend_json(world, row, live.now_ms()),
        "youMayDrive": drive.is_ok(),
        "whyNot": drive.err().map(|why| why.to_string()),
        "youMayInhabit": row.id != person && is_ancestor(world, person, row.id),
        // `set-budget` of a being is an ancestor's: it raises as itself.
        "youRaiseBudgetsAs": (row.id != person && is_ancestor(world, person, row.id))
            .then(|| world.name_of(&person).map(str::to_string)).flatten(),
        // `edit-role-flow` takes the acting being's own flow or a descendant's.
        "youMayEditFlow": row.id == person || is_ancestor(world, person, row.id),
        "youAreThis": row.id == person,
        "presence": live.presence_of(&row.id),
    });
    if let (Some(being), Json::Object(inside)) = (being.as_object_mut(), inside) {
        being.extend(inside);
    }
    Ok(being)
}

/// One line for an act: its verb call and the prose with it.
pub fn act_summary(world: &World, act: &ActBody) -> String {
    let _ = world;
    let call = act.call.summary();
    let call = match &act.gate {
        Some(crate::approval::Gate::Request(request)) => {
            format!("asks approval ({}, from {}): {call}", request.rule, request.approvers.join(", "))
        }
        Some(crate::approval::Gate::Decided(decision)) => {
            let verdict = if decision.approved { "approves" } else { "denies" };
            format!("{verdict} request {}", &decision.request.to_hex()[..12])
        }
        Some(crate::approval::Gate::Applied { request, .. }) => {
            format!("approved (request {}): {call}", &request.to_hex()[..12])
        }
        Some(crate::approval::Gate::Closed { outcome, reason, .. }) => {
            format!("not done, {outcome} ({reason}): {call}")
        }
        None => call,
    };
    match &act.content {
        Some(content) => format!("{call} — {content}"),
        None => call,
    }
}

pub fn roles_json(live: &LiveLand, world: &World) -> Json {
    let overlay = live.substrate().registry_for(world);
    let registry = overlay.as_deref().unwrap_or(&live.substrate().roles);
    let roles: Vec<Json> = registry
        .iter()
        .map(|role| {
            // An authored role a file also defines can go back to the file's definition.
            let authored = world.roles.contains_key(role.name.as_ref());
            let revertible = authored && live.substrate().roles.get(&role.name).is_some();
            json!({"name": role.name.as_ref(), "origin": role.origin, "digest": role.digest.to_hex(),
                   "definition": role.definition_json(), "authored": authored, "revertible": revertible})
        })
        .collect();
    json!({"roles": roles})
}

/// Beings a role form's pickers offer (the first, by name): a land of
/// 10,000 does not put 10,000 options in a page.
pub const ROLE_PICKER_BEINGS_MAX: usize = 200;

/// What the role form's pickers offer for each field: beings and
/// relationship tokens for canSummon, spaces and tokens for canSee, the
/// operations for canDo, the `be` operations for canBe, the see-resolvers.
pub fn role_pickers(live: &LiveLand, world: &World) -> std::collections::BTreeMap<&'static str, Vec<String>> {
    let substrate = live.substrate();
    let tokens: Vec<String> = substrate
        .resolvers
        .relation_names()
        .map(|name| json!({"rel": name}).to_string())
        .chain([json!({"pattern": "@*"}).to_string()])
        .collect();
    let beings = world.names.keys().take(ROLE_PICKER_BEINGS_MAX).map(|name| format!("@{name}"));
    let mut pickers = std::collections::BTreeMap::new();
    pickers.insert("canSummon", beings.chain(tokens.iter().cloned()).collect());
    pickers.insert("canSee", world.spaces.keys().cloned().chain(tokens.iter().cloned()).collect());
    pickers.insert("canDo", substrate.ops.names().cloned().collect());
    pickers
        .insert("canBe", ["birth", "connect", "release", "rotate-key", "note", "approve"].map(String::from).to_vec());
    pickers.insert("see", substrate.see.names().map(str::to_string).collect());
    pickers
}

/// The moments now running and the latest traces `filter` admits, of the
/// beings `visible` admits (by name).
pub fn moments_json(live: &LiveLand, world: &World, filter: &MomentFilter, visible: impl Fn(&str) -> bool) -> Json {
    let running: Vec<Json> = live
        .running()
        .into_iter()
        .filter(|(being, _, _)| visible(world.name_of(being).unwrap_or_default()))
        .map(|(being, beat, for_us)| json!({"being": world.name_of(&being), "beat": beat, "forUs": for_us}))
        .collect();
    let recent: Vec<Json> = live
        .recent_traces(MOMENT_TRACES_SHOWN_MAX, |trace| {
            filter.admits(trace) && visible(trace["name"].as_str().unwrap_or_default())
        })
        .into_iter()
        .map(|mut trace| {
            let time = trace["storedTimeMs"].as_u64().map(crate::view::format_time_ms);
            trace["time"] = json!(time);
            trace
        })
        .collect();
    json!({"running": running, "recent": recent, "filter": filter.to_json()})
}

/// Which moment traces to show (`/moments`, `/api/v1/moments`): each field
/// set narrows the list; none set shows every kept trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MomentFilter {
    /// A being's name, with or without `@`.
    pub being: Option<String>,
    /// The verb of the act (`see` includes moments that only looked).
    pub verb: Option<String>,
    /// `act`, `see` or `failure`.
    pub outcome: Option<String>,
    /// The primary role the being wore.
    pub role: Option<String>,
}

impl MomentFilter {
    /// Reads `being`, `verb`, `outcome` and `role` from a query string (empty
    /// values are no filter); an unknown parameter, verb or outcome is an
    /// error naming it.
    pub fn from_query(query: Option<&str>) -> Result<MomentFilter, PortalError> {
        let mut filter = MomentFilter::default();
        let params = query_params(query, &["being", "verb", "outcome", "role"])?;
        let problem = |field: &str, message: String| PortalError {
            field: Some(field.into()),
            ..PortalError::bad_request(message)
        };
        for (key, value) in params {
            let value = value.trim().to_string();
            if value.is_empty() {
                continue;
            }
            match key.as_str() {
                "being" => filter.being = Some(value.trim_start_matches('@').to_string()),
                "verb" if crate::llm::VERBS.contains(&value.as_str()) => filter.verb = Some(value),
                "verb" => return Err(problem("verb", format!("unknown verb {value:?}: see, do, summon or be"))),
                "outcome" if ["act", "see", "failure"].contains(&value.as_str()) => filter.outcome = Some(value),
                "outcome" => return Err(problem("outcome", format!("unknown outcome {value:?}: act, see or failure"))),
                // `role`: `query_params` admits no other key.
                _ => filter.role = Some(value),
            }
        }
        Ok(filter)
    }

    /// Whether a moment trace (as the engine keeps it) passes.
    fn admits(&self, trace: &Json) -> bool {
        let outcome = trace["outcome"].as_str().unwrap_or_default();
        let kind = if outcome.starts_with("act: ") {
            "act"
        } else if outcome == "see" {
            "see"
        } else {
            "failure"
        };
        // "act: do", or "act: do (waits for approval: …)".
        let verb = outcome
            .strip_prefix("act: ")
            .and_then(|rest| rest.split(' ').next())
            .or((outcome == "see").then_some("see"));
        self.being.as_deref().is_none_or(|being| trace["name"] == being)
            && self.outcome.as_deref().is_none_or(|wanted| wanted == kind)
            && self.verb.as_deref().is_none_or(|wanted| verb == Some(wanted))
            && self.role.as_deref().is_none_or(|role| trace["primary"] == role)
    }

    fn to_json(&self) -> Json {
        json!({"being": self.being, "verb": self.verb, "outcome": self.outcome, "role": self.role})
    }

    /// The filter as a query string (for the live part's URL).
    pub fn to_query(&self) -> String {
        let pairs: Vec<(&str, &str)> =
            [("being", &self.being), ("verb", &self.verb), ("outcome", &self.outcome), ("role", &self.role)]
                .into_iter()
                .filter_map(|(key, value)| value.as_deref().map(|value| (key, value)))
                .collect();
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

/// The being's reel replayed: per moment the stack, the clause trace, the
/// face and the act, and any divergence.
pub fn replay_json(live: &LiveLand, row: &BeingRow) -> Result<Json, PortalError> {
    let report = live
        .replay_being(row.id, crate::replay::ReplayOptions { keep_going: true, ..Default::default() })
        .map_err(|error| PortalError::internal(error.to_string()))?;
    let divergent: std::collections::BTreeSet<u64> = report.divergences.iter().map(|d| d.seq).collect();
    let moments: Vec<Json> = report
        .moments
        .iter()
        .map(|moment| {
            json!({
                "seq": moment.seq, "landSeq": moment.land_seq,
                "time": crate::view::format_time_ms(moment.stored_time_ms), "timeMs": moment.stored_time_ms,
                "primary": moment.act.primary,
                "stack": moment.act.stack.iter().map(|used| used.name.clone()).collect::<Vec<_>>(),
                "clauses": moment.clauses, "face": moment.face, "composed": moment.composed,
                "act": act_summary(&World::default(), &moment.act),
                "verb": moment.act.call.verb(),
                "matches": moment.matches && !divergent.contains(&moment.seq),
            })
        })
        .collect();
    let divergences: Vec<Json> = report.divergences.iter().map(divergence_json).collect();
    Ok(json!({
        "name": row.name, "factsVerified": report.facts_verified, "clean": report.clean(),
        "problems": report.problems, "moments": moments, "divergences": divergences,
    }))
}

/// A divergence as the replay view and a moment's page show it.
fn divergence_json(divergence: &crate::replay::Divergence) -> Json {
    let differences: Vec<Json> = divergence
        .differences
        .iter()
        .map(|difference| json!({"field": difference.field, "expected": difference.expected, "actual": difference.actual}))
        .collect();
    json!({"seq": divergence.seq, "landSeq": divergence.land_seq, "cause": divergence.cause.to_json(),
           "differences": differences})
}

/// One moment of a being (its act at reel `seq`) as replay rebuilds it:
/// the wake, the stack with each role's digest, the clause trace with the
/// value each key it read had, the composed role's prompt, for an LLM act
/// the two messages sent and the tokens and cost, the stored act, the face,
/// and whether the recomputation matches.
pub fn moment_json(live: &LiveLand, world: &World, row: &BeingRow, seq: u64) -> Result<Json, PortalError> {
    let store = live.store();
    let Some(stored) = store.reel(&row.id, seq, seq + 1)?.into_iter().next() else {
        return Err(PortalError::not_found(format!("@{} has no fact #{seq}", row.name)));
    };
    let fact = &stored.fact;
    if fact.kind() != KIND_ACT_NAME {
        return Err(PortalError::not_found(format!(
            "#{seq} of @{} is a {} fact, not an act: only acts are moments",
            row.name,
            fact.kind()
        )));
    }
    let options = crate::replay::ReplayOptions { from_seq: seq, to_seq: seq, keep_going: true };
    let report = live.replay_being(row.id, options).map_err(|error| PortalError::internal(error.to_string()))?;
    let Some(moment) = report.moments.first() else {
        let why = report.problems.first().cloned().unwrap_or_else(|| "the replay reached no act there".into());
        return Err(PortalError::internal(format!("#{seq} of @{} could not be replayed: {why}", row.name)));
    };
    let act = &moment.act;
    let clauses: Vec<Json> = moment
        .clauses
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let keys: Vec<Json> = moment
                .clause_keys
                .get(index)
                .into_iter()
                .flatten()
                .map(|key| json!({"key": key, "value": moment.context.get(key).cloned()}))
                .collect();
            json!({"text": text, "keys": keys})
        })
        .collect();
    let llm = act.llm.as_ref().map(|record| {
        json!({
            "connection": record.connection, "model": record.params.model,
            "promptTokens": record.prompt_tokens, "completionTokens": record.completion_tokens,
            "costMicros": record.cost_micros, "request": record.request.to_hex(),
            "prompt": moment.llm_prompt, "response": record.response,
        })
    });
    let panel = act.panel.as_ref().map(panel_json);
    let divergence = report.divergences.iter().find(|divergence| divergence.seq == seq).map(divergence_json);
    let wake = match &act.wake {
        Wake::Summon { fact, from } => {
            json!({"kind": "summon", "summon": fact.to_hex(), "from": world.name_of(from).map(|n| format!("@{n}"))})
        }
        Wake::Signal { key } => json!({"kind": "signal", "key": key}),
        Wake::Tick { tick } => json!({"kind": "tick", "tick": tick}),
        other => json!({"kind": other.kind()}),
    };
    Ok(json!({
        "name": row.name, "seq": seq, "landSeq": stored.land_seq, "id": fact.id().to_hex(),
        "time": crate::view::format_time_ms(fact.header.stored_time_ms), "timeMs": fact.header.stored_time_ms,
        "cursor": act.cursor,
        "wake": wake,
        "primary": act.primary,
        "stack": act.stack.iter().map(|used| json!({"name": used.name, "digest": used.digest.to_hex()})).collect::<Vec<_>>(),
        "clauses": clauses, "context": moment.context,
        "rolePrompt": moment.composed.get("prompt").cloned(),
        "verb": act.call.verb(), "summary": act_summary(world, act),
        "act": crate::view::body_json(fact),
        "llm": llm, "panel": panel, "face": moment.face,
        "matches": moment.matches && divergence.is_none(), "divergence": divergence,
        "problems": report.problems, "evaluator": act.evaluator,
        "reelLength": store.head(&row.id)?.map_or(0, |head| head.seq + 1),
        "previousAct": nearest_act(store, row.id, seq.saturating_sub(MOMENT_NEIGHBOURS_READ_MAX), seq, true)?,
        "nextAct": nearest_act(store, row.id, seq + 1, seq + 1 + MOMENT_NEIGHBOURS_READ_MAX, false)?,
    }))
}

/// A panel's deliberation as the moment page shows it: each member's
/// proposal (or why it made none) and model call, and the choice.
fn panel_json(panel: &crate::moment::panel::PanelRecord) -> Json {
    let member = |member: &crate::moment::panel::MemberRecord| {
        let proposal = member.proposal.as_ref().map(|proposal| match &proposal.call {
            Some(call) => crate::memory::fold::act_text(call, proposal.content.as_deref()),
            None => "only look".to_string(),
        });
        json!({
            "name": member.name,
            "proposal": proposal,
            "failure": member.failure.clone().or_else(|| member.no_answer.as_ref().map(|why| format!("no answer: {why}"))),
            "model": member.llm.as_ref().map(|record| record.params.model.clone()),
            "tokens": member.llm.as_ref().map(|record| record.prompt_tokens + record.completion_tokens),
            "script": member.output.is_some(),
        })
    };
    json!({
        "chosenBy": panel.chosen_by, "chosen": panel.chosen,
        "members": panel.members.iter().map(member).collect::<Vec<_>>(),
        "ruler": panel.ruler.as_ref().map(member),
    })
}

/// Facts a moment page reads on each side for its previous and next act.
pub const MOMENT_NEIGHBOURS_READ_MAX: u64 = 16;

/// The seq of the act nearest to the end (`last`) or start of `from..to` on
/// a reel, if any fact there is an act.
fn nearest_act(
    store: &dyn crate::store::Store,
    being: BeingId,
    from: u64,
    to: u64,
    last: bool,
) -> Result<Option<u64>, PortalError> {
    let facts = store.reel(&being, from, to)?;
    let mut acts = facts.iter().filter(|stored| stored.fact.kind() == KIND_ACT_NAME).map(|s| s.fact.header.seq);
    Ok(if last { acts.next_back() } else { acts.next() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::Space;
    use std::collections::BTreeMap;

    /// The world's spaces with their first beings and counts as the world
    /// page showed them before the fold counted beings by space: one walk
    /// over every row (the reference `world_json` is held to).
    fn spaces_by_walking_every_row(world: &World) -> Vec<(String, Vec<String>, usize)> {
        let mut here: BTreeMap<&str, (Vec<String>, usize)> = BTreeMap::new();
        for row in world.names.values().filter_map(|id| world.beings.get(id)).filter(|row| !row.ended) {
            let (shown, count) = here.entry(row.location.as_str()).or_default();
            *count += 1;
            if shown.len() < WORLD_BEINGS_SHOWN_PER_SPACE_MAX {
                shown.push(row.name.clone());
            }
        }
        world
            .spaces
            .keys()
            .map(|path| {
                let (shown, count) = here.remove(path.as_str()).unwrap_or_default();
                (path.clone(), shown, count)
            })
            .collect()
    }

    fn spaces_shown(world: &World) -> Vec<(String, Vec<String>, usize)> {
        let value = world_json(world, &MatterPage::default());
        value["spaces"]
            .as_array()
            .expect("spaces")
            .iter()
            .map(|space| {
                let names = space["beings"].as_array().expect("beings");
                let names = names.iter().map(|being| being["name"].as_str().expect("a name").to_string()).collect();
                let count = space["beingCount"].as_u64().expect("a count");
                (space["path"].as_str().expect("a path").to_string(), names, count as usize)
            })
            .collect()
    }

    /// A world of `spaces` (besides `/`) and beings named by `name(i)`, the
    /// i-th in space `place(i)` (an index into the spaces, or one past them:
    /// a location no space has), every `ended_every`-th ended.
    fn world_of(
        spaces: usize,
        beings: usize,
        name: impl Fn(usize) -> String,
        place: impl Fn(usize) -> usize,
        ended_every: usize,
    ) -> World {
        let mut world = World::new();
        for space in 0..spaces {
            world.spaces.insert(format!("/s{space}"), Space { kind: "room".into(), qualities: BTreeMap::new() });
        }
        for index in 0..beings {
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&(index as u64).to_be_bytes());
            let id = BeingId(id);
            let row = BeingRow {
                id,
                name: name(index),
                parent: None,
                cognition: Cognition::Scripted,
                role_flow: std::sync::Arc::new(json!([])),
                role_flow_digest: None,
                default_role: "idle".into(),
                home_space: "/".into(),
                location: format!("/s{}", place(index)),
                qualities: BTreeMap::new(),
                ended: ended_every > 0 && index % ended_every == 0,
                inhabited_by: None,
                last_act_ms: None,
                previous_role: None,
                acts: 0,
            };
            world.names.insert(row.name.clone(), id);
            world.beings.insert(id, std::sync::Arc::new(row));
        }
        world.recount_live_beings();
        world
    }

    /// The world page's spaces, found by walking names only until each
    /// space has its first beings, are the spaces one walk over every row
    /// gives: names and spaces interleaved, a space whose beings all sort
    /// last, spaces with fewer beings than are shown, none, ended beings
    /// and a location no space has.
    #[test]
    fn world_page_spaces_are_the_spaces_a_walk_over_every_row_gives() {
        let cases: Vec<(&str, World)> = vec![
            ("interleaved", world_of(4, 1_000, |i| format!("walker-{i}"), |i| i % 4, 0)),
            (
                "one space sorts last",
                world_of(
                    3,
                    400,
                    |i| format!("{}-{i:04}", if i % 100 == 7 { "z" } else { "a" }),
                    |i| usize::from(i % 100 == 7) * 2,
                    0,
                ),
            ),
            ("fewer than shown", world_of(5, 30, |i| format!("b{i}"), |i| i % 3, 0)),
            ("no beings", world_of(2, 0, |i| format!("b{i}"), |_| 0, 0)),
            ("ended beings", world_of(2, 300, |i| format!("b{i:03}"), |i| i % 2, 3)),
            ("a location no space has", world_of(2, 200, |i| format!("b{i:03}"), |i| i % 3, 0)),
        ];
        for (case, world) in cases {
            assert_eq!(spaces_shown(&world), spaces_by_walking_every_row(&world), "{case}");
        }
    }
}
