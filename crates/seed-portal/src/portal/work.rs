//! What the handlers share: reading a person's choice and its wake from a
//! request, and the work itself, every change one moment of a person-driven
//! being (`drive`) whose refusal becomes a status. Nothing here knows
//! whether it answers a page or the API.

use super::auth::{Principal, SESSION_COOKIE};
use super::error::PortalError;
use super::live::{LiveLand, Refused};
use super::throttle;
use super::{views, Portal};
use crate::fact::BeingId;
use crate::fact::{FactError, FactId};
use crate::moment::refusal::BeingFault;
use crate::moment::{self, ApprovalProblem, Beat, OpError, PersonChoice, Refusal};
use crate::world::{BeingRow, VerbCall, Wake, World};
use axum::http::{StatusCode, Uri};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub(super) fn query(uri: &Uri) -> BTreeMap<String, String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(uri.query().unwrap_or_default())
        .map(|pairs| pairs.into_iter().collect())
        .unwrap_or_default()
}

pub(super) fn text_field<'a>(value: &'a Json, name: &str) -> Result<Option<&'a str>, PortalError> {
    match value.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(text)) => Ok(Some(text.as_str())),
        Some(_) => Err(PortalError::field(name, format!("`{name}` must be a string"))),
    }
}

pub(super) fn required_text<'a>(value: &'a Json, name: &str) -> Result<&'a str, PortalError> {
    match text_field(value, name)? {
        Some(text) if !text.trim().is_empty() => Ok(text),
        _ => Err(PortalError::field(name, format!("`{name}` is required"))),
    }
}

pub(super) fn html(body: String) -> Response {
    Html(body).into_response()
}

/// How the API answers a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RefusalClass {
    /// The composed role, the lineage or the cognition does not allow it: 403.
    Forbidden,
    /// Over the land's fact body limit: 413.
    TooLarge,
    /// The world as it stands conflicts with it (a name or a cell taken,
    /// matter already there): 409.
    Conflict,
    /// Anything else the caller can fix by asking differently: 400.
    Invalid,
    /// What it names is not there (an account): 404.
    Missing,
    /// Something outside the land gave no answer (an MCP server): 503.
    Unavailable,
}

fn class_of_operation(error: &OpError) -> RefusalClass {
    match error {
        OpError::NotOwnOrDescendant { .. }
        | OpError::AccountNotDescendant { .. }
        | OpError::BudgetNotAnAncestor { .. }
        | OpError::BudgetNotOperator { .. }
        | OpError::MayNotWrite { .. }
        | OpError::NotOwner { .. }
        | OpError::SystemSpace { .. }
        | OpError::ExtensionBlocked { .. } => RefusalClass::Forbidden,
        OpError::MatterExists { .. } | OpError::CellTaken { .. } | OpError::AccountBeingTaken { .. } => {
            RefusalClass::Conflict
        }
        OpError::NoAccount { .. } | OpError::NotAuthored { .. } => RefusalClass::Missing,
        OpError::NotRegistered { .. }
        | OpError::Config(_)
        | OpError::Args(_)
        | OpError::Script(_)
        | OpError::BadEffects { .. }
        | OpError::TooManyEffects { .. }
        | OpError::Address(_)
        | OpError::NoSpace { .. }
        | OpError::SignalKey { .. }
        | OpError::DefinitionNotAnObject
        | OpError::Definition { .. }
        | OpError::DefinitionScript(_)
        | OpError::NoBeingNamed { .. }
        | OpError::ActorNotInWorld
        | OpError::Flow(_)
        | OpError::FlowAfter(_)
        | OpError::WrongTarget { .. }
        | OpError::Grid(_)
        | OpError::NotADirection { .. }
        | OpError::NoGridPosition
        | OpError::IntoAWall { .. }
        | OpError::AccountName { .. }
        | OpError::TokenHash
        | OpError::AccountBeingNotHuman { .. }
        | OpError::NoFileDefinition { .. }
        | OpError::BudgetScope
        | OpError::BudgetLimit { .. }
        | OpError::NoOwnerNamed { .. }
        | OpError::TooManyContributors { .. }
        | OpError::NotAContributor { .. }
        | OpError::ExtensionName { .. }
        | OpError::ExtensionScopeValue { .. }
        | OpError::TooManyScopes { .. }
        | OpError::FlowClauses { .. }
        | OpError::FlowNesting { .. } => RefusalClass::Invalid,
    }
}

fn class_of_approval(problem: &ApprovalProblem) -> RefusalClass {
    match problem {
        ApprovalProblem::OwnRequest { .. } | ApprovalProblem::NotAnApprover { .. } => RefusalClass::Forbidden,
        ApprovalProblem::AlreadyDecided { .. } | ApprovalProblem::Expired { .. } => RefusalClass::Conflict,
        ApprovalProblem::NoRequest { .. } => RefusalClass::Missing,
        ApprovalProblem::ApproverMissing { .. }
        | ApprovalProblem::NoApprover { .. }
        | ApprovalProblem::RequestId
        | ApprovalProblem::Decision { .. }
        | ApprovalProblem::EditOnDenial { .. }
        | ApprovalProblem::Edit { .. }
        | ApprovalProblem::ReasonTooLong { .. }
        | ApprovalProblem::UnknownField { .. }
        | ApprovalProblem::NotDue { .. } => RefusalClass::Invalid,
    }
}

fn class_of(refusal: &Refusal) -> RefusalClass {
    match refusal {
        Refusal::Approval(problem) => class_of_approval(problem),
        Refusal::Tool { .. } => RefusalClass::Unavailable,
        Refusal::NotWithin { .. }
        | Refusal::NotAnAncestor { .. }
        | Refusal::NoPersonDrives { .. }
        | Refusal::NotScripted { .. } => RefusalClass::Forbidden,
        Refusal::Operation { error, .. } => class_of_operation(error),
        Refusal::Seal { fault: BeingFault::BodyTooLarge, .. }
        | Refusal::ActBody(FactError::BodyTooLarge { .. })
        | Refusal::ActBodyTooLarge { .. } => RefusalClass::TooLarge,
        Refusal::NameTaken { .. } => RefusalClass::Conflict,
        Refusal::BeingNotInWorld
        | Refusal::ActorNotInWorld
        | Refusal::RoleFlow(_)
        | Refusal::SeeResolver { .. }
        | Refusal::WakingSummonGone
        | Refusal::Encoding(_)
        | Refusal::ActBody(_)
        | Refusal::Llm(_)
        | Refusal::Panel(_)
        | Refusal::Script(_)
        | Refusal::ScriptCall(_)
        | Refusal::ProseTooLong { .. }
        | Refusal::Address(_)
        | Refusal::SummonWithoutTarget
        | Refusal::NoBeing { .. }
        | Refusal::RemoteTarget(_)
        | Refusal::BeingEnded { .. }
        | Refusal::InboxFull { .. }
        | Refusal::SummonTooLong { .. }
        | Refusal::SummonRate { .. }
        | Refusal::UnknownBeOperation { .. }
        | Refusal::Note(_)
        | Refusal::BirthWithoutName
        | Refusal::BadBeingName { .. }
        | Refusal::LandFull { .. }
        | Refusal::BirthCognition { .. }
        | Refusal::BirthPanel
        | Refusal::BirthFlowShape
        | Refusal::BirthFlowClauses { .. }
        | Refusal::BirthFlowNesting { .. }
        | Refusal::HookCancelled { .. }
        // The caller may make the change, but not this one: it is the
        // change that is wrong, not who asks.
        | Refusal::WouldLoseMeansToUndo { .. }
        | Refusal::Seal { .. } => RefusalClass::Invalid,
    }
}

/// A person's moment did not seal: a status from the refusal's variant
/// (never from its text). A refusal at the seal that is not a matter of
/// permission or size is a conflict: the world changed between deciding
/// and sealing.
pub(super) fn refusal(refused: &Refused) -> PortalError {
    let Some(failure) = &refused.failure else {
        return PortalError { code: "refused", ..PortalError::bad_request(refused.outcome.clone()) };
    };
    let reason = failure.refusal.to_string();
    match (class_of(&failure.refusal), failure.beat) {
        (RefusalClass::Forbidden, _) => PortalError::forbidden(reason),
        (RefusalClass::TooLarge, _) => {
            PortalError { status: StatusCode::PAYLOAD_TOO_LARGE, code: "too-large", ..PortalError::bad_request(reason) }
        }
        (RefusalClass::Missing, _) => PortalError::not_found(reason),
        (RefusalClass::Unavailable, _) => PortalError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "unavailable",
            ..PortalError::bad_request(reason)
        },
        (RefusalClass::Conflict, _) | (RefusalClass::Invalid, Beat::Seal) => PortalError::conflict(reason),
        (RefusalClass::Invalid, Beat::Open | Beat::Assign | Beat::Face | Beat::Momentum | Beat::Decide) => {
            PortalError { code: "refused", ..PortalError::bad_request(reason) }
        }
    }
}

/// The being `principal` acts as; 401 once its account is revoked.
pub(super) fn acting_being(portal: &Portal, principal: &Principal) -> Result<BeingId, PortalError> {
    portal.live.being_of(principal).ok_or_else(PortalError::unauthenticated)
}

/// The account that owns `being`: the account of the being itself or of its
/// nearest ancestor that has one. A person owns their own being and every
/// descendant not owned by another person's being below it.
pub(super) fn owning_account(world: &World, being: BeingId) -> Option<&str> {
    let mut current = Some(being);
    let mut steps = 0;
    while let Some(id) = current {
        if let Some((account, _)) = world.account_of(&id) {
            return Some(account);
        }
        steps += 1;
        if steps > world.beings.len() {
            return None;
        }
        current = world.beings.get(&id).and_then(|row| row.parent);
    }
    None
}

/// Whether `principal` may act for, inhabit and see inside `row` (its
/// inbox, conversation, reel, replay and flow): the operator may for every
/// being; a person only for the beings they own (see [`owning_account`]).
pub(super) fn may_act_for(world: &World, principal: &Principal, row: &BeingRow) -> Result<(), PortalError> {
    match principal {
        Principal::Operator => Ok(()),
        Principal::Person { account } => match owning_account(world, row.id) {
            Some(owner) if owner == account => Ok(()),
            Some(owner) => Err(PortalError::forbidden(format!(
                "@{} is the account {owner:?}'s: only they may act for it, inhabit it or read its inbox",
                row.name
            ))),
            None => Err(PortalError::forbidden(format!(
                "@{} is not yours: you may act for, inhabit and read only your own being and its descendants",
                row.name
            ))),
        },
    }
}

/// That `person` inhabits `row` now, or 403 saying why not: the inhabit
/// tab and its presence stream are only for a being its person inhabits
/// (a GET never inhabits anything). The reason says whether inhabiting it
/// is open to them at all.
pub(super) fn must_inhabit(world: &World, person: BeingId, row: &BeingRow) -> Result<(), PortalError> {
    if row.inhabited_by == Some(person) {
        return Ok(());
    }
    let why = match row.inhabited_by.and_then(|other| world.name_of(&other)) {
        Some(other) => format!("@{} is inhabited by @{other}, not by you", row.name),
        None if row.id == person => format!("@{} is your own being: act for it on its page", row.name),
        None if moment::is_ancestor(world, person, row.id) => {
            format!("you do not inhabit @{}: use the Inhabit button on its page first", row.name)
        }
        None => format!(
            "you may not inhabit @{}: only a being's ancestors may, and @{} is not one of its",
            row.name,
            world.name_of(&person).unwrap_or("your being")
        ),
    };
    Err(PortalError::forbidden(why))
}

/// Runs one moment of `being` (by name) driven by `principal`, after
/// checking the principal may drive it. Returns the outcome line.
pub(super) async fn drive(
    portal: &Arc<Portal>,
    principal: &Principal,
    name: &str,
    wake: Wake,
    choice: PersonChoice,
) -> Result<Json, PortalError> {
    let person = acting_being(portal, principal)?;
    let world = portal.live.world();
    may_act_for(&world, principal, views::being_row(&world, name)?)?;
    drop(world);
    drive_as(portal, person, name, wake, choice).await
}

/// Runs one moment of `name` driven by the being `person` (checked by the
/// cognition and lineage rules, not by any account).
pub(super) async fn drive_as(
    portal: &Arc<Portal>,
    person: BeingId,
    name: &str,
    wake: Wake,
    choice: PersonChoice,
) -> Result<Json, PortalError> {
    check_choice_fits_a_fact(portal.live.fact_body_bytes_max(), &choice)?;
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    views::may_drive(&world, person, row).map_err(|why| PortalError::forbidden(why.to_string()))?;
    let (live, being) = (portal.live.clone(), row.id);
    let result = tokio::task::spawn_blocking(move || live.act(being, wake, &choice))
        .await
        .map_err(|error| PortalError::internal(format!("the moment task stopped: {error}")))??;
    match result {
        Ok(done) => Ok(json!({"outcome": done.outcome, "landSeq": done.land_seq})),
        Err(refused) => Err(refusal(&refused)),
    }
}

/// 413 naming the field of a person's choice that alone is larger than the
/// land lets a fact body be (measured as JSON, which is never shorter than
/// the canonical CBOR it becomes): the caller's input, refused before
/// anything is prepared. An act just under the limit whose whole body is
/// over it is refused by the seal, which the moment trace names.
pub(super) fn check_choice_fits_a_fact(body_bytes_max: usize, choice: &PersonChoice) -> Result<(), PortalError> {
    let mut fields: Vec<(&str, &Json)> = Vec::new();
    let (content, address);
    match &choice.call {
        VerbCall::Do { args: Json::Object(map), .. } | VerbCall::Be { payload: Json::Object(map), .. } => {
            fields.extend(map.iter().map(|(key, value)| (key.as_str(), value)));
        }
        VerbCall::Do { args: value, .. } => fields.push(("args", value)),
        VerbCall::Be { payload: value, .. } => fields.push(("payload", value)),
        VerbCall::Summon { content: text, .. } => {
            content = Json::String(text.clone());
            fields.push(("content", &content));
        }
        VerbCall::See { address: text } => {
            address = Json::String(text.clone());
            fields.push(("address", &address));
        }
    }
    let prose = choice.content.clone().map(Json::String);
    fields.extend(prose.as_ref().map(|text| ("content", text)));
    for (field, value) in fields {
        let len = serde_json::to_vec(value).map_or(0, |bytes| bytes.len());
        if len > body_bytes_max {
            return Err(PortalError::over_fact_limit(field, len, body_bytes_max));
        }
    }
    Ok(())
}

/// The principal's own being acting as itself (the operator's being, or
/// the being a person's account drives).
pub(super) async fn acts_as_self(
    portal: &Arc<Portal>,
    principal: &Principal,
    call: VerbCall,
) -> Result<Json, PortalError> {
    let being = acting_being(portal, principal)?;
    let name = portal.live.world().name_of(&being).unwrap_or_default().to_string();
    drive_as(portal, being, &name, Wake::Person, PersonChoice { call, content: None, importance: None }).await
}

/// Reads a verb call from a request: `verb` and the fields of that verb.
pub(super) fn choice_from(request: &Json) -> Result<PersonChoice, PortalError> {
    let verb = required_text(request, "verb")?;
    let content = text_field(request, "content")?.filter(|text| !text.is_empty()).map(str::to_string);
    let object = |name: &str| -> Result<Json, PortalError> {
        match request.get(name) {
            None | Some(Json::Null) => Ok(json!({})),
            Some(value @ Json::Object(_)) => Ok(value.clone()),
            Some(_) => Err(PortalError::field(name, format!("`{name}` must be a JSON object"))),
        }
    };
    let call = match verb {
        "see" => VerbCall::See { address: required_text(request, "address")?.to_string() },
        "do" => VerbCall::Do {
            target: text_field(request, "target")?.filter(|t| !t.is_empty()).unwrap_or("/").to_string(),
            action: required_text(request, "action")?.to_string(),
            args: object("args")?,
        },
        "summon" => {
            let message = content.clone().ok_or_else(|| PortalError::field("content", "a summon needs `content`"))?;
            VerbCall::Summon {
                target: text_field(request, "target")?.unwrap_or_default().to_string(),
                content: message,
                in_reply_to: None,
            }
        }
        "be" => {
            VerbCall::Be { operation: required_text(request, "operation")?.to_string(), payload: object("payload")? }
        }
        other => return Err(PortalError::field("verb", format!("unknown verb {other:?}: see, do, summon or be"))),
    };
    let content = if verb == "summon" { None } else { content };
    Ok(PersonChoice { call, content, importance: importance_from(request)? })
}

/// The importance a person gave an act: a whole number from 0 to
/// `IMPORTANCE_MAX` (a form sends it as text; empty is none).
fn importance_from(request: &Json) -> Result<Option<u8>, PortalError> {
    let most = crate::memory::recall::IMPORTANCE_MAX;
    let refused = |given: &str| {
        PortalError::field("importance", format!("`importance` is a whole number from 0 to {most}, not {given}"))
    };
    let given = match request.get("importance") {
        None | Some(Json::Null) => return Ok(None),
        Some(Json::String(text)) if text.trim().is_empty() => return Ok(None),
        Some(Json::String(text)) => text.trim().parse::<u64>().map_err(|_| refused(&format!("{text:?}")))?,
        Some(Json::Number(number)) => number.as_u64().ok_or_else(|| refused(&number.to_string()))?,
        Some(other) => return Err(refused(&other.to_string())),
    };
    u8::try_from(given).ok().filter(|given| *given <= most).map(Some).ok_or_else(|| refused(&given.to_string()))
}

/// The wake a request answers: a summon in the being's inbox (by its fact
/// id), or none (the person acts on its own).
pub(super) fn wake_from(portal: &Portal, name: &str, request: &Json) -> Result<Wake, PortalError> {
    let Some(hex) = text_field(request, "wake")?.filter(|text| !text.is_empty()) else { return Ok(Wake::Person) };
    let fact = FactId::from_hex(hex)
        .ok_or_else(|| PortalError::field("wake", "`wake` must be a summon's fact id (64 hex digits)"))?;
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    let summon = world
        .inbox
        .get(&row.id)
        .and_then(|inbox| inbox.values().find(|pending| pending.fact == fact))
        .ok_or_else(|| PortalError::field("wake", format!("no summon {hex} waits in @{}'s inbox", row.name)))?;
    Ok(Wake::Summon { fact, from: summon.from })
}

/// A form's fields as the JSON an API request would carry (`args` and
/// `payload` are JSON text in a form).
pub(super) fn form_request(form: &BTreeMap<String, String>) -> Result<Json, PortalError> {
    let mut request = serde_json::Map::new();
    for (key, value) in form {
        if key == "csrf" || key == "address_text" {
            continue;
        }
        let value = if key == "args" || key == "payload" {
            let text = if value.trim().is_empty() { "{}" } else { value.as_str() };
            serde_json::from_str(text)
                .map_err(|error| PortalError::field(key, format!("`{key}` is not JSON: {error}")).as_html())?
        } else {
            Json::String(value.clone())
        };
        request.insert(key.clone(), value);
    }
    if let Some(typed) = form.get("address_text").filter(|text| !text.trim().is_empty()) {
        request.insert("address".into(), Json::String(typed.trim().to_string()));
    }
    Ok(Json::Object(request))
}

pub(super) fn see_other(to: &str, done: &str) -> Response {
    let query = serde_urlencoded::to_string([("done", done)]).unwrap_or_default();
    let joint = if to.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{to}{joint}{query}")).into_response()
}

pub(super) fn urlencode(text: &str) -> String {
    serde_urlencoded::to_string([("", text)]).unwrap_or_default().trim_start_matches('=').to_string()
}

pub(super) fn session_cookie(id: &str) -> String {
    format!("{SESSION_COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/")
}

/// A login's token: whose it is, `None` for a wrong one, or 429 while
/// the client that sent a wrong one must wait. A right token always logs
/// in, whatever anyone has failed (`throttle`).
pub(super) fn login_with_token(
    portal: &Portal,
    client: SocketAddr,
    token: &str,
) -> Result<Option<(Principal, u64)>, PortalError> {
    let found = portal.live.principal_of_token(token);
    if found.is_none() {
        portal.sessions.throttle.token_failed(&throttle::client_key(client.ip()))?;
    }
    Ok(found)
}

/// A person's password: checked only when neither the client nor the
/// account must wait (before the slow hash); a wrong one counts against
/// both. `None` for a wrong account or password.
pub(super) async fn login_with_password(
    portal: &Arc<Portal>,
    client: SocketAddr,
    account: &str,
    password: &str,
) -> Result<Option<(Principal, u64)>, PortalError> {
    let client = throttle::client_key(client.ip());
    portal.sessions.throttle.password_may_be_checked(&client, account)?;
    let principal = Principal::Person { account: account.to_string() };
    // No account is named `operator` (`grant-account` refuses the name), so
    // the operator has no grant here and never logs in by password. An
    // account that does not exist costs a hash all the same, so the time
    // an answer takes does not tell which accounts exist.
    let granted_at_seq = portal.live.grant_of(&principal);
    let (checking, named, password) = (portal.clone(), account.to_string(), password.to_string());
    let holds = tokio::task::spawn_blocking(move || match granted_at_seq {
        Some(granted_at_seq) => checking.passwords.holds(&named, granted_at_seq, &password),
        None => {
            checking.passwords.spend_a_check(&password);
            Ok(false)
        }
    })
    .await
    .map_err(|error| PortalError::internal(format!("the password check stopped: {error}")))??;
    if holds {
        return Ok(granted_at_seq.map(|granted_at_seq| (principal, granted_at_seq)));
    }
    let existing = granted_at_seq.is_some().then_some(account);
    portal.sessions.throttle.password_failed(&client, existing);
    Ok(None)
}

/// Validates a role definition; problems by the definition's field.
pub(super) fn role_problems(definition: &Json) -> BTreeMap<String, String> {
    let mut problems = BTreeMap::new();
    match moment::parse_authored_role(definition) {
        Ok(_) => {}
        Err(errors) => {
            for error in errors {
                let mut field = error.field.split(['.', '[']).next().unwrap_or_default().to_string();
                // Serde names a missing or unknown field only in its message.
                if field == "(file)" {
                    if let Some(named) = error.reason.split('`').nth(1) {
                        field = named.to_string();
                    }
                }
                problems.entry(field).or_insert(error.reason);
            }
        }
    }
    problems
}

pub(super) async fn birth(portal: &Arc<Portal>, principal: &Principal, request: &Json) -> Result<Json, PortalError> {
    let name = required_text(request, "name")?.trim_start_matches('@').to_string();
    crate::land::validate_being_name(&name).map_err(|error| PortalError::field("name", error.to_string()))?;
    if portal.live.world().names.contains_key(&name) {
        return Err(PortalError {
            field: Some("name".into()),
            ..PortalError::conflict(format!("the name @{name} is taken"))
        });
    }
    let cognition = required_text(request, "cognition")?;
    if !matches!(cognition, "human" | "scripted" | "llm") {
        return Err(PortalError::field("cognition", format!("cognition {cognition:?} is not human, scripted or llm")));
    }
    let mut payload = json!({"name": name, "cognition": cognition});
    if let Some(default_role) = text_field(request, "defaultRole")? {
        payload["defaultRole"] = json!(default_role);
    }
    if let Some(flow) = request.get("roleFlow").filter(|flow| !flow.is_null()) {
        let clauses = match flow {
            Json::Object(object) => object.get("flow").cloned().unwrap_or(Json::Array(Vec::new())),
            other => other.clone(),
        };
        crate::roles::RoleFlow::from_json(&clauses)
            .map_err(|error| PortalError::field("roleFlow", format!("roleFlow {error}")))?;
        payload["roleFlow"] = flow.clone();
    }
    acts_as_self(portal, principal, VerbCall::Be { operation: "birth".into(), payload }).await?;
    let parent = acting_being(portal, principal)?;
    Ok(json!({"name": name, "parent": portal.live.world().name_of(&parent)}))
}

pub(super) async fn connect(portal: &Arc<Portal>, principal: &Principal, name: &str) -> Result<Json, PortalError> {
    let name = name.trim_start_matches('@');
    let person = acting_being(portal, principal)?;
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    may_act_for(&world, principal, row)?;
    if row.inhabited_by == Some(person) {
        return Ok(json!({"outcome": "already inhabited by you"}));
    }
    let name = row.name.clone();
    drop(world);
    acts_as_self(portal, principal, VerbCall::Be { operation: "connect".into(), payload: json!({"being": name}) }).await
}

pub(super) async fn release(portal: &Arc<Portal>, principal: &Principal, name: &str) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    may_act_for(&world, principal, row)?;
    if row.inhabited_by.is_none() {
        return Ok(json!({"outcome": "not inhabited"}));
    }
    let name = row.name.clone();
    drop(world);
    acts_as_self(portal, principal, VerbCall::Be { operation: "release".into(), payload: json!({"being": name}) }).await
}

/// Releases `name` as the being that inhabits it (when its last tab has
/// gone: no request, so no principal, is behind it).
async fn release_as_inhabitant(portal: &Arc<Portal>, name: &str) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    let Some(inhabitant) = row.inhabited_by else { return Ok(json!({"outcome": "not inhabited"})) };
    let (name, inhabitant_name) = (row.name.clone(), world.name_of(&inhabitant).unwrap_or_default().to_string());
    drop(world);
    let call = VerbCall::Be { operation: "release".into(), payload: json!({"being": name}) };
    drive_as(portal, inhabitant, &inhabitant_name, Wake::Person, PersonChoice { call, content: None, importance: None })
        .await
}

/// Checks a flow parses and binds against the roles the world sees now.
pub(super) fn check_flow(portal: &Portal, name: &str, flow: &Json) -> Result<(), PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    portal
        .live
        .substrate()
        .bound_flow_of(&world, flow, &row.default_role)
        .map(|_| ())
        .map_err(|refusal| PortalError::field("flow", refusal.to_string()))
}

pub(super) async fn edit_flow(
    portal: &Arc<Portal>,
    principal: &Principal,
    name: &str,
    flow: Json,
) -> Result<Json, PortalError> {
    let world = portal.live.world();
    may_act_for(&world, principal, views::being_row(&world, name)?)?;
    drop(world);
    check_flow(portal, name, &flow)?;
    let name = name.trim_start_matches('@');
    let call = VerbCall::Do {
        target: "/".into(),
        action: "edit-role-flow".into(),
        args: json!({"being": name, "flow": flow}),
    };
    acts_as_self(portal, principal, call).await
}

pub(super) async fn publish(portal: &Arc<Portal>, principal: &Principal, request: &Json) -> Result<Json, PortalError> {
    let key = required_text(request, "key")?;
    if let Some(problem) = crate::world::signal_key_problem(key) {
        return Err(PortalError::field("key", problem));
    }
    let value = request.get("value").cloned().unwrap_or(Json::Null);
    if crate::world::holds_fraction(&value) {
        return Err(PortalError::field(
            "value",
            "signal values are integers, text, booleans, lists or maps (no fractions)",
        ));
    }
    let call =
        VerbCall::Do { target: "/".into(), action: "publish-signal".into(), args: json!({"key": key, "value": value}) };
    acts_as_self(portal, principal, call).await
}

pub(super) async fn replay(portal: &Arc<Portal>, principal: &Principal, name: &str) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?.clone();
    may_act_for(&world, principal, &row)?;
    let live = portal.live.clone();
    tokio::task::spawn_blocking(move || views::replay_json(&live, &row))
        .await
        .map_err(|error| PortalError::internal(format!("the replay task stopped: {error}")))?
}

/// The most characters of a memory query.
pub const MEMORY_QUERY_CHARS_MAX: usize = 1_000;

/// What a memory page or `GET /api/v1/beings/NAME/memory` asks for, read
/// from its query string (`at`, `query`, `count`), each error naming its field.
pub(super) fn memory_ask(query: Option<&str>) -> Result<crate::memory_view::MemoryAsk, PortalError> {
    let params = super::extract::query_params(query, &["at", "query", "count"])?;
    let at = match params.get("at").filter(|text| !text.trim().is_empty()) {
        None => None,
        Some(text) => Some(
            text.trim()
                .parse::<u64>()
                .map_err(|_| PortalError::field("at", format!("`at` is a land seq (a whole number), not {text:?}")))?,
        ),
    };
    let count = match params.get("count").filter(|text| !text.trim().is_empty()) {
        None => 8,
        Some(text) => text.trim().parse::<usize>().map_err(|_| {
            PortalError::field("count", format!("`count` is a whole number from 1 to 32, not {text:?}"))
        })?,
    };
    let text = params.get("query").map(|text| text.trim().to_string()).filter(|text| !text.is_empty());
    if text.as_ref().is_some_and(|text| text.chars().count() > MEMORY_QUERY_CHARS_MAX) {
        return Err(PortalError::field("query", format!("`query` is at most {MEMORY_QUERY_CHARS_MAX} characters")));
    }
    Ok(crate::memory_view::MemoryAsk { at, query: text, count })
}

/// A being's memory as `ask` wants it (docs/json/memory.json), for a
/// principal who may see inside the being, read off the store on a
/// blocking thread: the summonses the live world remembers for it, its
/// reel and the land log past the world's cursor, not the whole land log.
pub(super) async fn memory(
    portal: &Arc<Portal>,
    principal: &Principal,
    name: &str,
    ask: crate::memory_view::MemoryAsk,
) -> Result<Json, PortalError> {
    use crate::memory_view::MemoryViewError;
    let world = portal.live.world();
    let row = views::being_row(&world, name)?.clone();
    may_act_for(&world, principal, &row)?;
    let known = crate::memory_view::SummonsesKnown::in_world(&world, &row.id);
    drop(world);
    let live = portal.live.clone();
    let shown = tokio::task::spawn_blocking(move || {
        crate::memory_view::memory_json_knowing(live.store(), row.id, &row.name, &ask, &known)
    })
    .await
    .map_err(|error| PortalError::internal(format!("the memory task stopped: {error}")))?;
    shown.map_err(|error| match error {
        MemoryViewError::PastTheEnd { .. } => PortalError::field("at", error.to_string()),
        MemoryViewError::Count { .. } => PortalError::field("count", error.to_string()),
        MemoryViewError::Store(_) | MemoryViewError::Engine(_) => PortalError::internal(error.to_string()),
    })
}

/// Drops an authored role so its file definition applies again: an act of
/// the principal's own being (`do revert-role`).
pub(super) async fn revert_role(portal: &Arc<Portal>, principal: &Principal, name: &str) -> Result<Json, PortalError> {
    let call = VerbCall::Do { target: "/".into(), action: "revert-role".into(), args: json!({"role": name}) };
    acts_as_self(portal, principal, call).await
}

/// The timeline `query` asks for: lanes of the beings the principal may
/// see inside, read off the store on a blocking thread.
pub(super) async fn timeline(
    portal: &Arc<Portal>,
    principal: &Principal,
    query: super::timeline::TimelineQuery,
) -> Result<Json, PortalError> {
    let (live, principal) = (portal.live.clone(), principal.clone());
    tokio::task::spawn_blocking(move || {
        let world = live.world();
        let sees_all = principal == Principal::Operator;
        let visible = |row: &crate::world::BeingRow| sees_all || may_act_for(&world, &principal, row).is_ok();
        super::timeline::timeline_json(live.store(), &world, &query, sees_all, visible)
    })
    .await
    .map_err(|error| PortalError::internal(format!("the timeline task stopped: {error}")))?
}

/// One moment of a being the principal may see inside, replayed on a
/// blocking thread. `seq` is the path's text, named in the error when it is
/// not a reel seq.
pub(super) async fn moment(
    portal: &Arc<Portal>,
    principal: &Principal,
    name: &str,
    seq: &str,
) -> Result<Json, PortalError> {
    let seq: u64 = seq.parse().map_err(|_| PortalError {
        field: Some("seq".into()),
        ..PortalError::bad_request(format!("{seq:?} is not a reel seq (a whole number from 0)"))
    })?;
    let world = portal.live.world();
    let row = views::being_row(&world, name)?.clone();
    may_act_for(&world, principal, &row)?;
    let live = portal.live.clone();
    tokio::task::spawn_blocking(move || views::moment_json(&live, &live.world(), &row, seq))
        .await
        .map_err(|error| PortalError::internal(format!("the moment task stopped: {error}")))?
}

/// A place the query names: `kind` is `search` (`q`), `space` (`path`) or
/// `matter` (`address`).
pub(super) fn place(portal: &Portal, kind: Place, query: Option<&str>) -> Result<Json, PortalError> {
    use super::extract::{query_params, required};
    use super::place::{matter_json, search_json, space_json};
    let world = portal.live.world();
    match kind {
        Place::Search => search_json(&portal.live, &world, required(&query_params(query, &["q"])?, "q")?),
        Place::Space => {
            let params = query_params(query, &["path", "beingsAfter", "done"])?;
            space_json(&world, required(&params, "path")?, params.get("beingsAfter").map(String::as_str))
        }
        Place::Matter => matter_json(&world, required(&query_params(query, &["address"])?, "address")?),
    }
}

/// What [`place`] looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Search,
    Space,
    Matter,
}

/// The being's conversation, read off the reels on a blocking thread.
pub(super) async fn conversation(portal: &Arc<Portal>, principal: &Principal, name: &str) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?.clone();
    may_act_for(&world, principal, &row)?;
    let live = portal.live.clone();
    tokio::task::spawn_blocking(move || super::conversation::conversation_json(live.store(), &world, &row))
        .await
        .map_err(|error| PortalError::internal(format!("the conversation task stopped: {error}")))?
}

/// After `wait`, releases the being unless a tab holds it again (or it is
/// no longer inhabited).
///
/// A tab that opened in between (a reload) keeps the being even if it has
/// let go again by then: its own close schedules its own release.
pub(super) fn release_unless_held(portal: Arc<Portal>, being: crate::fact::BeingId, name: String, wait: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let opened_before = portal.live.presence_opened_count(&being);
    runtime.spawn(async move {
        tokio::time::sleep(wait).await;
        let still_held =
            portal.live.presence_of(&being) > 0 || portal.live.presence_opened_count(&being) != opened_before;
        let inhabited = portal.live.world().beings.get(&being).is_some_and(|row| row.inhabited_by.is_some());
        if !still_held && inhabited {
            if let Err(error) = release_as_inhabitant(&portal, &name).await {
                tracing::warn!(being = %name, reason = %error.message, "releasing an inhabited being failed");
            }
        }
    });
}

pub(super) fn preview_flow(live: &LiveLand, name: &str, flow: &Json) -> Result<Json, PortalError> {
    let world = live.world();
    let row = views::being_row(&world, name)?;
    let bound = live
        .substrate()
        .bound_flow_of(&world, flow, &row.default_role)
        .map_err(|refusal| PortalError::field("flow", refusal.to_string()))?;
    let wake = views::preview_wake(row);
    let opened = moment::open(&world, row.id, wake, live.now_ms());
    let assigned = moment::assign_flow(live.substrate(), &world, &opened, bound)
        .map_err(|failure| PortalError::field("flow", failure.refusal.to_string()))?;
    // The same warnings as `seed flow check`: keys the substrate never fills in.
    let warnings = assigned.flow.flow.key_warning_lines();
    Ok(json!({
        "primary": assigned.composed.primary.as_deref(),
        "stack": assigned.composed.stack.iter().map(|name| name.as_ref()).collect::<Vec<_>>(),
        "clauses": assigned.flow.explain(&assigned.walk),
        "warnings": warnings,
    }))
}

/// What the roleFlow editor offers: the roles of this land (files and
/// authored) and the context keys the substrate fills in.
pub(super) fn flow_help(live: &LiveLand) -> super::html::FlowHelp<'static> {
    let world = live.world();
    let roles = views::roles_json(live, &world)["roles"]
        .as_array()
        .map(|roles| roles.iter().filter_map(|role| role["name"].as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    super::html::FlowHelp {
        roles,
        keys: crate::roles::when::KNOWN_KEYS,
        key_families: crate::roles::when::KNOWN_PREFIXES.iter().map(|(prefix, _)| format!("{prefix}…")).collect(),
    }
}

/// A being as `principal` may see it (see `views::being_json`).
pub(super) fn being_view(portal: &Portal, principal: &Principal, name: &str) -> Result<Json, PortalError> {
    let person = acting_being(portal, principal)?;
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    let inside = may_act_for(&world, principal, row).is_ok();
    views::being_json(&portal.live, &world, row, person, inside)
}

/// The moments page's contents: a person sees the moments of their own beings.
pub(super) fn moments_view(portal: &Portal, principal: &Principal, filter: &views::MomentFilter) -> Json {
    let world = portal.live.world();
    views::moments_json(&portal.live, &world, filter, |name| {
        world.being_named(name).is_some_and(|row| may_act_for(&world, principal, row).is_ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moment::Failure;

    fn check(beat: Beat, why: Refusal, expected: StatusCode) {
        let text = why.to_string();
        let refused = Refused { outcome: String::new(), failure: Some(Failure { beat, refusal: why }) };
        let error = refusal(&refused);
        assert_eq!(error.status, expected, "{text}");
        assert_eq!(error.message, text, "the API says what the trace says");
    }

    #[test]
    fn a_refusal_s_status_comes_from_its_variant_not_its_text() {
        let cases = [
            (Beat::Decide, Refusal::NotWithin { what: "do \"move\"".into(), list: "canDo" }, StatusCode::FORBIDDEN),
            (Beat::Decide, Refusal::NotAnAncestor { actor: "a".into(), being: "b".into() }, StatusCode::FORBIDDEN),
            (
                Beat::Momentum,
                Refusal::NoPersonDrives { being: "a".into(), cognition: "scripted" },
                StatusCode::FORBIDDEN,
            ),
            (
                Beat::Decide,
                Refusal::WouldLoseMeansToUndo { action: "author-role".into(), being: "o".into(), wearing: "x".into() },
                StatusCode::BAD_REQUEST,
            ),
            (
                Beat::Decide,
                Refusal::Operation {
                    action: "edit-role-flow".into(),
                    error: OpError::NotOwnOrDescendant { actor: "a".into(), being: "b".into() },
                },
                StatusCode::FORBIDDEN,
            ),
            (
                Beat::Seal,
                Refusal::Seal { fault: BeingFault::BodyTooLarge, message: "fact body is 9 bytes".into() },
                StatusCode::PAYLOAD_TOO_LARGE,
            ),
            (Beat::Decide, Refusal::ActBody(FactError::BodyTooLarge { len: 9, max: 1 }), StatusCode::PAYLOAD_TOO_LARGE),
            (Beat::Decide, Refusal::NameTaken { name: "kid".into() }, StatusCode::CONFLICT),
            (Beat::Seal, Refusal::NameTaken { name: "kid".into() }, StatusCode::CONFLICT),
            (
                Beat::Decide,
                Refusal::Operation {
                    action: "step".into(),
                    error: OpError::CellTaken { direction: "N".into(), occupant: "b".into() },
                },
                StatusCode::CONFLICT,
            ),
            // The same refusal at the seal means the world changed under it.
            (Beat::Decide, Refusal::InboxFull { address: "@b".into(), most: 1 }, StatusCode::BAD_REQUEST),
            (Beat::Seal, Refusal::InboxFull { address: "@b".into(), most: 1 }, StatusCode::CONFLICT),
            (Beat::Seal, Refusal::HookCancelled { hook: "h/0".into(), reason: "no".into() }, StatusCode::CONFLICT),
            (Beat::Decide, Refusal::SummonWithoutTarget, StatusCode::BAD_REQUEST),
            (Beat::Decide, Refusal::BirthWithoutName, StatusCode::BAD_REQUEST),
            (
                Beat::Decide,
                Refusal::Operation { action: "move".into(), error: OpError::NoSpace { space: "/nowhere".into() } },
                StatusCode::BAD_REQUEST,
            ),
        ];
        for (beat, refusal, expected) in cases {
            check(beat, refusal, expected);
        }
    }
}
