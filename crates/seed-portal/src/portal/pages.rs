//! The pages: the login, the world, a being, the inhabit tab, roles, flows,
//! moments and replay, and the forms that post back to them. Each form post
//! is authenticated and CSRF-checked by `FormWrite`; each page by
//! `PageVisitor`, which sends a visitor without a session to the login.

use super::accounts::*;
use super::auth::{Via, SESSION_COOKIE};
use super::error::PortalError;
use super::extract::{parse_form, read_body, FormWrite, PageVisitor};
use super::work::*;
use super::{html, views, Portal, INHABIT_FIRST_HOLD_MS};
use crate::world::VerbCall;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, StatusCode, Uri};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

type Shared = State<Arc<Portal>>;

pub(super) async fn login_form() -> Response {
    html(html::login_page(None))
}

pub(super) async fn login(State(portal): Shared, ConnectInfo(client): ConnectInfo<SocketAddr>, body: Body) -> Response {
    let result = async {
        let form = parse_form(&read_body(&portal, body).await?)?;
        let field = |name: &str| form.get(name).map(|value| value.trim()).filter(|value| !value.is_empty());
        let found = match (field("token"), field("account")) {
            (Some(token), _) => login_with_token(&portal, client, token)?,
            (None, Some(account)) => {
                let password = form.get("password").map(String::as_str).unwrap_or_default();
                login_with_password(&portal, client, account, password).await?
            }
            (None, None) => None,
        };
        let Some((principal, granted_at_seq)) = found else {
            let why = "That token, or that account and password, does not open this land.";
            return Ok((StatusCode::UNAUTHORIZED, Html(html::login_page(Some(why)))).into_response());
        };
        let (id, _) = portal.sessions.open(&principal, granted_at_seq)?;
        Ok::<Response, PortalError>(
            ([(header::SET_COOKIE, session_cookie(&id))], Redirect::to("/world")).into_response(),
        )
    }
    .await;
    match result {
        Ok(response) => response,
        // A throttled login is shown on the login form itself, so the right
        // token (never throttled) can be typed straight away.
        Err(error) if error.status == StatusCode::TOO_MANY_REQUESTS => {
            let retry_after = error.retry_after_s.unwrap_or(1);
            let page = html::login_page(Some(&error.message));
            (error.status, [(header::RETRY_AFTER, retry_after.to_string())], Html(page)).into_response()
        }
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn logout(State(portal): Shared, FormWrite(credential, _): FormWrite) -> Response {
    let result = async {
        if let Via::Session { id, .. } = &credential.via {
            portal.sessions.close(id);
        }
        Ok::<Response, PortalError>(
            (
                [(header::SET_COOKIE, format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"))],
                Redirect::to("/login"),
            )
                .into_response(),
        )
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

pub(super) async fn world_page(State(portal): Shared, PageVisitor(credential): PageVisitor) -> Response {
    html(html::world_page(&portal.world_view.world_json(&portal.live.world()), credential.csrf()))
}

pub(super) async fn world_live(State(portal): Shared, _visitor: PageVisitor) -> Response {
    html(html::world_fragment(&portal.world_view.world_json(&portal.live.world())))
}

pub(super) async fn being_page(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path(name): Path<String>,
    uri: Uri,
) -> Response {
    match being_with_conversation(&portal, &credential.principal, &name).await {
        Ok((being, talk)) => {
            html(html::being_page(&being, &talk, credential.csrf(), query(&uri).get("done").map(String::as_str), None))
        }
        Err(error) => error.as_html().into_response(),
    }
}

/// The conversation part of a being page or an inhabit tab, fetched again
/// whenever the world moves. `?answer=inhabit` makes its answer forms post
/// to the inhabit tab's act route.
pub(super) async fn conversation_fragment(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path(name): Path<String>,
    uri: Uri,
) -> Response {
    let (world, talk) = (portal.live.world(), conversation(&portal, &credential.principal, &name).await);
    let result = talk.and_then(|talk| {
        let row = views::being_row(&world, &name)?;
        let person = acting_being(&portal, &credential.principal)?;
        let drive = views::may_drive(&world, person, row).is_ok();
        let action = match query(&uri).get("answer").map(String::as_str) {
            Some("inhabit") => format!("/inhabit/{}/act", row.name),
            _ => format!("/beings/{}/act", row.name),
        };
        Ok(html::conversation_fragment(&talk, drive.then_some(action.as_str()), credential.csrf()))
    });
    match result {
        Ok(fragment) => html(fragment),
        Err(error) => error.as_html().into_response(),
    }
}

/// A being as the principal may see it, with its conversation (none for a
/// being that is not theirs): what a being page shows.
async fn being_with_conversation(
    portal: &Arc<Portal>,
    principal: &super::auth::Principal,
    name: &str,
) -> Result<(Json, Json), PortalError> {
    let being = being_view(portal, principal, name)?;
    let talk = if being["private"] == json!(true) {
        json!({"being": being["name"], "messages": [], "private": true})
    } else {
        conversation(portal, principal, name).await?
    };
    Ok((being, talk))
}

/// The page a refused form came from, shown again with what was typed and
/// why (a field's problem or the verb layer's refusal); any other error is
/// its own page. `inhabit` says whether it was the inhabit tab.
async fn again(
    portal: &Arc<Portal>,
    credential: &crate::portal::auth::Credential,
    name: &str,
    inhabit: bool,
    typed: html::Typed,
    error: PortalError,
) -> Response {
    let shown_again = matches!(
        error.status,
        StatusCode::BAD_REQUEST
            | StatusCode::FORBIDDEN
            | StatusCode::CONFLICT
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::NOT_FOUND
    );
    if !shown_again {
        return error.as_html().into_response();
    }
    let page = async {
        // Never inside a being the asker may not see (its row alone is not the page the form was on).
        let (being, talk) = being_with_conversation(portal, &credential.principal, name).await?;
        if being["private"] == json!(true) {
            return Err(error.clone());
        }
        Ok::<_, PortalError>(if inhabit {
            html::inhabit_page(&being, &talk, credential.csrf(), None, Some(&typed))
        } else {
            html::being_page(&being, &talk, credential.csrf(), None, Some(&typed))
        })
    };
    match page.await {
        Ok(page) => (error.status, Html(page)).into_response(),
        Err(_) => error.as_html().into_response(),
    }
}

pub(super) async fn act_form(
    portal: Arc<Portal>,
    credential: crate::portal::auth::Credential,
    form: BTreeMap<String, String>,
    name: String,
    back: String,
) -> Response {
    let principal = credential.principal.clone();
    let result = async {
        let request = form_request(&form)?;
        let choice = choice_from(&request)?;
        let world = portal.live.world();
        may_act_for(&world, &principal, views::being_row(&world, &name)?)?;
        drop(world);
        let wake = wake_from(&portal, &name, &request)?;
        let done = drive(&portal, &principal, &name, wake, choice).await?;
        Ok::<Response, PortalError>(see_other(
            &back,
            &format!("@{name}: {}", done["outcome"].as_str().unwrap_or("done")),
        ))
    }
    .await;
    match result {
        Ok(response) => response,
        Err(error) => {
            let verb = form.get("verb").cloned().unwrap_or_default();
            let values = form.into_iter().filter(|(key, _)| key != "csrf").collect();
            let typed = html::Typed { form: verb, values, error: error.message.clone() };
            again(&portal, &credential, &name, back.starts_with("/inhabit/"), typed, error).await
        }
    }
}

pub(super) async fn being_act_form(
    State(portal): Shared,
    Path(name): Path<String>,
    FormWrite(credential, form): FormWrite,
) -> Response {
    let back = format!("/beings/{name}");
    act_form(portal, credential, form, name, back).await
}

pub(super) async fn inhabit_act_form(
    State(portal): Shared,
    Path(name): Path<String>,
    FormWrite(credential, form): FormWrite,
) -> Response {
    let back = format!("/inhabit/{name}");
    act_form(portal, credential, form, name, back).await
}

/// `POST /inhabit/NAME` (the being page's button, with the CSRF token):
/// connects, then shows the inhabit tab. Connecting changes the land, so
/// it is never a GET a cross-site page could trigger.
pub(super) async fn inhabit_form(
    State(portal): Shared,
    Path(name): Path<String>,
    FormWrite(credential, _): FormWrite,
) -> Response {
    let result = async {
        let world = portal.live.world();
        let row = views::being_row(&world, &name)?;
        may_act_for(&world, &credential.principal, row)?;
        let (being, name) = (row.id, row.name.clone());
        drop(world);
        if portal.live.presence_of(&being) == 0 {
            connect(&portal, &credential.principal, &name).await?;
            // The tab's event stream must take hold of it in time.
            let wait = Duration::from_millis(portal.limits.release_grace_ms + INHABIT_FIRST_HOLD_MS);
            release_unless_held(portal.clone(), being, name.clone(), wait);
        }
        Ok::<_, PortalError>(Redirect::to(&format!("/inhabit/{}", urlencode(&name))).into_response())
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

/// `GET /inhabit/NAME`: the inhabit tab of a being the person inhabits now
/// (its stream holds it); changes nothing.
pub(super) async fn inhabit_page(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path(name): Path<String>,
    uri: Uri,
) -> Response {
    let result = (|| {
        let person = acting_being(&portal, &credential.principal)?;
        let world = portal.live.world();
        let row = views::being_row(&world, &name)?;
        may_act_for(&world, &credential.principal, row)?;
        must_inhabit(&world, person, row)?;
        views::being_json(&portal.live, &world, row, person, true)
    })();
    let result = match result {
        Ok(being) => conversation(&portal, &credential.principal, &name).await.map(|talk| (being, talk)),
        Err(error) => Err(error),
    };
    match result {
        Ok((being, talk)) => html(html::inhabit_page(
            &being,
            &talk,
            credential.csrf(),
            query(&uri).get("done").map(String::as_str),
            None,
        )),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn birth_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        let mut request = serde_json::Map::new();
        for key in ["name", "cognition", "defaultRole"] {
            if let Some(value) = form.get(key).filter(|v| !v.trim().is_empty()) {
                request.insert(key.into(), Json::String(value.trim().to_string()));
            }
        }
        if let Some(flow) = form.get("roleFlow").filter(|v| !v.trim().is_empty()) {
            let flow: Json = serde_json::from_str(flow)
                .map_err(|error| PortalError::field("roleFlow", format!("`roleFlow` is not JSON: {error}")))?;
            request.insert("roleFlow".into(), flow);
        }
        let done = birth(&portal, &credential.principal, &Json::Object(request)).await?;
        Ok::<Response, PortalError>(see_other(
            &format!("/beings/{}", done["name"].as_str().unwrap_or("birther")),
            "born",
        ))
    }
    .await;
    match (result, form.get("from").cloned()) {
        (Ok(response), _) => response,
        // Shown again on the page the form is on, as typed.
        (Err(error), Some(from)) => {
            let values = form.into_iter().filter(|(key, _)| key != "csrf").collect();
            let typed = html::Typed { form: "birth".into(), values, error: error.message.clone() };
            again(&portal, &credential, &from, false, typed, error).await
        }
        (Err(error), None) => error.as_html().into_response(),
    }
}

pub(super) async fn roles_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    let world = portal.live.world();
    let roles = views::roles_json(&portal.live, &world);
    let mut form = html::RoleForm::default();
    let query = query(&uri);
    if let Some(editing) = query.get("edit") {
        if let Some(role) =
            roles["roles"].as_array().and_then(|roles| roles.iter().find(|r| r["name"] == json!(editing)))
        {
            form.values = super::role_form::values_of_definition(&role["definition"]);
        }
    }
    form.saved = query.get("done").cloned();
    form.pickers = views::role_pickers(&portal.live, &world);
    html(html::roles_page(&roles, credential.csrf(), &form))
}

/// The change a role form would make: the definition in force (if the role
/// exists) against the one typed, line by line, both as the role reads them
/// (so the order of fields and their defaults do not show as changes).
fn role_change(roles: &Json, definition: &Json) -> Option<html::RoleChange> {
    let role = crate::moment::parse_authored_role(definition).ok()?;
    let current = roles["roles"].as_array()?.iter().find(|r| r["name"] == json!(role.name.as_ref()));
    let before =
        current.map(|r| serde_json::to_string_pretty(&r["definition"]).unwrap_or_default()).unwrap_or_default();
    let after = serde_json::to_string_pretty(&role.definition_json()).unwrap_or_default();
    let lines = similar::TextDiff::from_lines(&before, &after)
        .iter_all_changes()
        .map(|change| {
            let mark = match change.tag() {
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
                similar::ChangeTag::Equal => ' ',
            };
            (mark, change.value().trim_end_matches('\n').to_string())
        })
        .collect();
    Some(html::RoleChange { lines, digest: role.digest.to_hex(), replaces: current.is_some() })
}

pub(super) async fn role_revert_form(
    State(portal): Shared,
    Path(name): Path<String>,
    FormWrite(credential, _): FormWrite,
) -> Response {
    match revert_role(&portal, &credential.principal, &name).await {
        Ok(_) => see_other(
            &format!("/roles?edit={}", urlencode(&name)),
            &format!("role {name} reverted: its file definition applies from the next moment"),
        ),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn role_form_post(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        let previewing = form.get("intent").map(String::as_str) == Some("preview");
        let (definition, mut problems) = match super::role_form::definition_of_values(&form) {
            Ok(definition) => {
                let problems = role_problems(&definition);
                (definition, problems)
            }
            // Every problem at once: the fields that did read are checked
            // as a role too (a problem found first keeps its place).
            Err(mut problems) => {
                let readable: BTreeMap<String, String> = form
                    .iter()
                    .filter(|(key, _)| !problems.contains_key(*key))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if let Ok(partial) = super::role_form::definition_of_values(&readable) {
                    for (field, reason) in role_problems(&partial) {
                        problems.entry(field).or_insert(reason);
                    }
                }
                (Json::Null, problems)
            }
        };
        if problems.is_empty() && !previewing {
            let call = VerbCall::Do {
                target: "/".into(),
                action: "author-role".into(),
                args: json!({"definition": definition}),
            };
            match acts_as_self(&portal, &credential.principal, call).await {
                Ok(_) => {
                    let name = definition["name"].as_str().unwrap_or_default();
                    return Ok(see_other(&format!("/roles?edit={}", urlencode(name)), &format!("role {name} saved")));
                }
                Err(error) => {
                    problems.insert(String::new(), error.message);
                }
            }
        }
        // Shown again as typed: the change it would make, or each problem
        // beside its field (every one at once).
        let world = portal.live.world();
        let roles = views::roles_json(&portal.live, &world);
        let change = if problems.is_empty() { role_change(&roles, &definition) } else { None };
        let status = if problems.is_empty() { StatusCode::OK } else { StatusCode::BAD_REQUEST };
        let form = html::RoleForm {
            values: form.into_iter().filter(|(k, _)| k != "csrf" && k != "intent").collect(),
            errors: problems,
            saved: None,
            pickers: views::role_pickers(&portal.live, &world),
            change,
        };
        Ok::<Response, PortalError>((status, Html(html::roles_page(&roles, credential.csrf(), &form))).into_response())
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

pub(super) async fn flow_page(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path(name): Path<String>,
    uri: Uri,
) -> Response {
    let result = views::being_row(&portal.live.world(), &name)
        .and_then(|row| may_act_for(&portal.live.world(), &credential.principal, row))
        .and_then(|_| being_view(&portal, &credential.principal, &name))
        .and_then(|being| match being["youMayEditFlow"] == json!(true) {
            true => Ok(being),
            false => Err(PortalError::forbidden(format!(
                "only @{name} itself or one of its ancestors may edit its roleFlow, and you act as neither"
            ))),
        });
    match result {
        Ok(being) => html(html::flow_page(
            &being,
            credential.csrf(),
            query(&uri).get("done").map(String::as_str),
            None,
            None,
            &flow_help(&portal.live),
        )),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn flow_form(
    State(portal): Shared,
    Path(name): Path<String>,
    FormWrite(credential, form): FormWrite,
) -> Response {
    let result = async {
        let text = form.get("flow").map(String::as_str).unwrap_or_default();
        let saved = async {
            let flow: Json = serde_json::from_str(text)
                .map_err(|error| PortalError::field("flow", format!("`flow` is not JSON: {error}")))?;
            edit_flow(&portal, &credential.principal, &name, flow).await
        }
        .await;
        match saved {
            Ok(_) => Ok(see_other(&format!("/beings/{name}/flow"), "roleFlow saved; it applies from the next moment")),
            Err(error) if error.status == StatusCode::BAD_REQUEST || error.status == StatusCode::FORBIDDEN => {
                let being = being_view(&portal, &credential.principal, &name)?;
                Ok::<Response, PortalError>(
                    (
                        error.status,
                        Html(html::flow_page(
                            &being,
                            credential.csrf(),
                            None,
                            Some(&error.message),
                            Some(text),
                            &flow_help(&portal.live),
                        )),
                    )
                        .into_response(),
                )
            }
            Err(error) => Err(error),
        }
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

pub(super) async fn signal_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        let value_text = form.get("value").map(String::as_str).unwrap_or_default();
        let value: Json = serde_json::from_str(value_text).map_err(|_| {
            PortalError::field("value", format!("`value` must be JSON (for text, quote it: \"{value_text}\")"))
        })?;
        let request = json!({"key": form.get("key").cloned().unwrap_or_default(), "value": value});
        publish(&portal, &credential.principal, &request).await?;
        Ok::<Response, PortalError>(see_other("/world", "published"))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

pub(super) async fn moments_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    match views::MomentFilter::from_query(uri.query()) {
        Ok(filter) => {
            let moments = moments_view(&portal, &credential.principal, &filter);
            html(html::moments_page(&moments, &filter.to_query(), credential.csrf()))
        }
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn search_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    match place(&portal, Place::Search, uri.query()) {
        Ok(found) => html(html::search_page(&found, credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn space_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    match place(&portal, Place::Space, uri.query()) {
        Ok(mut space) => {
            if let Some(done) = super::work::query(&uri).get("done") {
                space["done"] = serde_json::json!(done);
            }
            html(html::space_page(&space, credential.csrf()))
        }
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn matter_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    match place(&portal, Place::Matter, uri.query()) {
        Ok(matter) => html(html::matter_page(&matter, credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

/// The live part of the moments page, fetched again on every world event.
pub(super) async fn moments_live(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    match views::MomentFilter::from_query(uri.query()) {
        Ok(filter) => html(html::moments_fragment(&moments_view(&portal, &credential.principal, &filter))),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn replay_page(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path(name): Path<String>,
    uri: Uri,
) -> Response {
    let result = async {
        let params = super::extract::query_params(uri.query(), &["page"])?;
        let replay = replay(&portal, &credential.principal, &name).await?;
        let pages = html::replay_pages(replay["moments"].as_array().map_or(0, Vec::len));
        let page = match params.get("page") {
            None => 1,
            Some(text) => text.parse().ok().filter(|page| (1..=pages).contains(page)).ok_or_else(|| PortalError {
                field: Some("page".into()),
                ..PortalError::bad_request(format!("page {text:?} is not a page of this replay (1 to {pages})"))
            })?,
        };
        Ok::<_, PortalError>(html::replay_page(&replay, page, credential.csrf()))
    };
    match result.await {
        Ok(page) => html(page),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn timeline_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    let result = async {
        let query = super::timeline::TimelineQuery::from_query(uri.query())?;
        let found = timeline(&portal, &credential.principal, query.clone()).await?;
        Ok::<_, PortalError>(super::timeline_html::timeline_page(&found, &query, credential.csrf()))
    };
    match result.await {
        Ok(page) => html(page),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn moment_page(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path((name, seq)): Path<(String, String)>,
) -> Response {
    match moment(&portal, &credential.principal, &name, &seq).await {
        Ok(found) => html(super::timeline_html::moment_page(&found, credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

pub(super) async fn accounts_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    let accounts = accounts_json(&portal, &credential.principal);
    let form = html::AccountsForm { done: query(&uri).get("done").cloned(), ..Default::default() };
    html(html::accounts_page(&accounts, credential.csrf(), &form))
}

/// The accounts page again after a write: the token just issued, or the
/// form as typed with its error beside the field at fault.
fn accounts_answer(
    portal: &Portal,
    credential: &crate::portal::auth::Credential,
    done: Result<Json, PortalError>,
    form: &BTreeMap<String, String>,
) -> Response {
    let accounts = accounts_json(portal, &credential.principal);
    match done {
        Ok(issued) => {
            let form =
                html::AccountsForm { issued: issued.get("token").is_some().then_some(issued), ..Default::default() };
            html(html::accounts_page(&accounts, credential.csrf(), &form))
        }
        Err(error) if error.status.is_client_error() && error.status != StatusCode::TOO_MANY_REQUESTS => {
            let mut errors = BTreeMap::new();
            errors.insert(error.field.clone().unwrap_or_default(), error.message.clone());
            let values = form
                .iter()
                .filter(|(key, _)| *key != "csrf" && *key != "password")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let form = html::AccountsForm { values, errors, ..Default::default() };
            (error.status, Html(html::accounts_page(&accounts, credential.csrf(), &form))).into_response()
        }
        Err(error) => error.as_html().into_response(),
    }
}

fn form_json(form: &BTreeMap<String, String>) -> Json {
    Json::Object(
        form.iter().filter(|(key, _)| *key != "csrf").map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect(),
    )
}

pub(super) async fn invite_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let done = invite(&portal, &credential.principal, &form_json(&form)).await;
    accounts_answer(&portal, &credential, done, &form)
}

pub(super) async fn new_token_form(
    State(portal): Shared,
    Path(account): Path<String>,
    FormWrite(credential, form): FormWrite,
) -> Response {
    let done = new_token(&portal, &credential.principal, &account).await;
    accounts_answer(&portal, &credential, done, &form)
}

pub(super) async fn revoke_form(
    State(portal): Shared,
    Path(account): Path<String>,
    FormWrite(credential, form): FormWrite,
) -> Response {
    match revoke(&portal, &credential.principal, &account).await {
        Ok(_) => see_other("/accounts", &format!("the account {account:?} has ended")),
        Err(error) => accounts_answer(&portal, &credential, Err(error), &form),
    }
}

pub(super) async fn password_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    match set_password(&portal, &credential.principal, &form_json(&form)).await {
        Ok(_) => see_other("/accounts", "password set: log in with your account name and it from now on"),
        Err(error) => accounts_answer(&portal, &credential, Err(error), &form),
    }
}

/// `GET /beings/NAME/memory?at=&query=&count=`: the being's memory at a
/// land cursor, and what recall ranks first for a query.
pub(super) async fn memory_page(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path(name): Path<String>,
    uri: Uri,
) -> Response {
    let result = async {
        let ask = memory_ask(uri.query())?;
        let (query, count) = (ask.query.clone().unwrap_or_default(), ask.count as u64);
        let shown = memory(&portal, &credential.principal, &name, ask).await?;
        Ok::<_, PortalError>(html::memory_page(&shown, &query, count, credential.csrf()))
    };
    match result.await {
        Ok(page) => html(page),
        Err(error) => error.as_html().into_response(),
    }
}
