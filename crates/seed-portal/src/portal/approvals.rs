//! The approvals inbox (docs/approvals.md): the requests waiting in the
//! land that the visitor asked for or may decide, and a decision taken as
//! the approver's own `be approve` moment (the same verb layer as any act,
//! sealed on the approver's reel). `GET /approvals` and
//! `POST /approvals/{request}` for people, `/api/v1/approvals` for programs.

use super::error::PortalError;
use super::extract::{ApiCaller, ApiWrite, FormWrite, PageVisitor};
use super::work::{acting_being, drive_as, html, may_act_for, query, see_other, text_field};
use super::{approvals_html, views, Portal};
use crate::approval::{PendingApproval, BE_APPROVE};
use crate::fact::{BeingId, FactId};
use crate::moment::PersonChoice;
use crate::portal::auth::Principal;
use crate::world::{VerbCall, Wake, World};
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;

type Shared = State<Arc<Portal>>;

/// The fields of a decision a caller may send beside `as` (the approver).
const DECISION_FIELDS: &[&str] = &["decision", "args", "content", "payload", "reason"];

/// Whether the principal may act for the being `id`.
fn drives(world: &World, principal: &Principal, id: &BeingId) -> bool {
    world.beings.get(id).is_some_and(|row| may_act_for(world, principal, row).is_ok())
}

fn named(world: &World, id: &BeingId) -> String {
    format!("@{}", world.name_of(id).unwrap_or_default())
}

/// One waiting request as the inbox shows it; `None` if the principal
/// neither drives its requester nor any being it summoned or names.
fn request_json(world: &World, principal: &Principal, request: &FactId, pending: &PendingApproval) -> Option<Json> {
    let deciders: Vec<&BeingId> = pending.request.beings.iter().chain(&pending.request.summoned).collect();
    let mut may_decide_as: Vec<String> = deciders
        .iter()
        .filter(|id| **id != &pending.requester && drives(world, principal, id))
        .map(|id| named(world, id))
        .collect();
    may_decide_as.sort();
    may_decide_as.dedup();
    if may_decide_as.is_empty() && !drives(world, principal, &pending.requester) {
        return None;
    }
    let decision = pending.decision.as_ref().map(|made| {
        json!({"fact": made.fact.to_hex(), "by": named(world, &made.by), "approved": made.approved,
               "edited": made.edited.as_ref().map(VerbCall::to_json), "reason": made.reason})
    });
    Some(json!({
        "request": request.to_hex(),
        "requester": named(world, &pending.requester),
        "call": pending.call.to_json(),
        "content": pending.content,
        "rule": pending.request.rule,
        "approvers": pending.request.approvers,
        "summoned": pending.request.summoned.iter().map(|id| named(world, id)).collect::<Vec<_>>(),
        "requestedAtSeq": pending.requested_at_seq,
        "requestedMs": pending.requested_ms,
        "requested": crate::view::format_time_ms(pending.requested_ms),
        "expiresMs": pending.request.expires_ms,
        "expires": crate::view::format_time_ms(pending.request.expires_ms),
        "decision": decision,
        "mayDecideAs": may_decide_as,
    }))
}

/// The requests the principal asked for (through a being it drives) or may decide.
pub(super) fn approvals_json(world: &World, principal: &Principal) -> Json {
    let requests: Vec<Json> = world
        .approvals
        .iter()
        .filter_map(|(request, pending)| request_json(world, principal, request, pending))
        .collect();
    json!({"approvals": requests, "cursor": world.cursor})
}

/// Decides `request` as the being `request_body.as` (one the principal
/// drives): its `be approve` moment, checked and sealed like any act.
async fn decide(portal: &Arc<Portal>, principal: &Principal, request: &str, body: &Json) -> Result<Json, PortalError> {
    let request_id = FactId::from_hex(request).ok_or_else(|| {
        PortalError::not_found(format!("no request {request:?}: a request is a fact id, 64 hex digits"))
    })?;
    let world = portal.live.world();
    let pending = world.approvals.get(&request_id).ok_or_else(|| {
        PortalError::not_found(format!(
            "no request {request} is waiting (it was never made, or is already applied or closed)"
        ))
    })?;
    let approver = match text_field(body, "as")? {
        Some(name) => views::being_row(&world, name.trim_start_matches('@'))?.clone(),
        // One being the principal may decide as, when there is exactly one.
        None => {
            let json = request_json(&world, principal, &request_id, pending);
            let choices: Vec<String> = json
                .as_ref()
                .and_then(|json| json["mayDecideAs"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|name| name.as_str().map(str::to_string))
                .collect();
            match choices.as_slice() {
                [only] => views::being_row(&world, only.trim_start_matches('@'))?.clone(),
                _ => {
                    return Err(PortalError::field(
                        "as",
                        format!("say which being decides with `as` (you may decide as: {})", choices.join(", ")),
                    ))
                }
            }
        }
    };
    may_act_for(&world, principal, &approver)?;
    let mut payload = Map::new();
    payload.insert("request".into(), Json::String(request.to_string()));
    if let Some(object) = body.as_object() {
        for (key, value) in object {
            if key == "as" {
                continue;
            }
            if !DECISION_FIELDS.contains(&key.as_str()) {
                return Err(PortalError::field(
                    key,
                    format!("`{key}` is not a field of a decision (as, decision, args, content, payload, reason)"),
                ));
            }
            if !value.is_null() {
                payload.insert(key.clone(), value.clone());
            }
        }
    }
    // The request's summons wakes the decision when it is still in the
    // approver's inbox, so that answering it takes it out.
    let wake = world
        .inbox
        .get(&approver.id)
        .and_then(|inbox| inbox.values().find(|summon| summon.fact == request_id))
        .map_or(Wake::Person, |summon| Wake::Summon { fact: summon.fact, from: summon.from });
    let person = acting_being(portal, principal)?;
    drop(world);
    let call = VerbCall::Be { operation: BE_APPROVE.to_string(), payload: Json::Object(payload) };
    drive_as(portal, person, &approver.name, wake, PersonChoice { call, content: None, importance: None }).await
}

pub(super) async fn api_approvals(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
) -> Result<Response, PortalError> {
    Ok(axum::Json(approvals_json(&portal.live.world(), &caller.principal)).into_response())
}

pub(super) async fn api_decide(
    State(portal): Shared,
    Path(request): Path<String>,
    ApiWrite(caller, body): ApiWrite,
) -> Result<Response, PortalError> {
    Ok(axum::Json(decide(&portal, &caller.principal, &request, &body).await?).into_response())
}

pub(super) async fn approvals_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    let approvals = approvals_json(&portal.live.world(), &credential.principal);
    let done = query(&uri).get("done").cloned();
    html(approvals_html::approvals_page(&approvals, credential.csrf(), done.as_deref(), None))
}

/// The inbox's form: approve (with the arguments as edited in the form),
/// or deny, as the being the form names.
pub(super) async fn decide_form(
    State(portal): Shared,
    Path(request): Path<String>,
    FormWrite(credential, form): FormWrite,
) -> Response {
    let result = async {
        let mut body = Map::new();
        for key in ["as", "decision", "reason"] {
            if let Some(value) = form.get(key).filter(|value| !value.trim().is_empty()) {
                body.insert(key.into(), Json::String(value.trim().to_string()));
            }
        }
        if let Some(edit) = form.get("edit").filter(|value| !value.trim().is_empty()) {
            let field = form.get("edit-field").map(String::as_str).unwrap_or("args");
            if !["args", "content", "payload"].contains(&field) {
                return Err(PortalError::field("edit-field", format!("{field:?} is not args, content or payload")));
            }
            let value = if field == "content" {
                Json::String(edit.clone())
            } else {
                serde_json::from_str(edit)
                    .map_err(|error| PortalError::field("edit", format!("the edited {field} must be JSON: {error}")))?
            };
            // An edit left as it was is no edit.
            if form.get("original").is_none_or(|original| original.trim() != edit.trim()) {
                body.insert(field.into(), value);
            }
        }
        let sealed = decide(&portal, &credential.principal, &request, &Json::Object(body)).await?;
        let verb = if form.get("decision").map(String::as_str) == Some("deny") { "denied" } else { "approved" };
        let at = sealed["landSeq"].as_u64().map(|seq| format!(" (land seq {seq})")).unwrap_or_default();
        Ok::<Response, PortalError>(see_other(
            "/approvals",
            &format!("{verb} {}{at}", &request[..request.len().min(12)]),
        ))
    }
    .await;
    result.unwrap_or_else(|error| {
        let approvals = approvals_json(&portal.live.world(), &credential.principal);
        let page =
            approvals_html::approvals_page(&approvals, credential.csrf(), None, Some((&request, &error.message)));
        (error.status, axum::response::Html(page)).into_response()
    })
}
