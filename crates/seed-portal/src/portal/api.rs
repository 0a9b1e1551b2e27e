//! The JSON API under `/api/v1`: the same views and the same work as the
//! pages, as JSON; reads take an `ApiCaller`, writes an `ApiWrite` (the
//! session's CSRF token in the `x-csrf-token` header; a bearer needs none).
//! The two event streams (`/events`, a being's `/presence`) end when the
//! portal stops.

use super::accounts::*;
use super::error::PortalError;
use super::extract::{parse_json, read_body, ApiCaller, ApiWrite, ApiWriteNoBody};
use super::work::*;
use super::{serve, views, Portal, SSE_KEEP_ALIVE_S};
use crate::world::VerbCall;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::json;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

type Shared = State<Arc<Portal>>;

pub(super) async fn api_login(
    State(portal): Shared,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    body: Body,
) -> Result<Response, PortalError> {
    let request = parse_json(&read_body(&portal, body).await?)?;
    let found = match (text_field(&request, "token")?, text_field(&request, "account")?) {
        (Some(token), _) => login_with_token(&portal, client, token.trim())?
            .ok_or(PortalError { field: Some("token".into()), ..PortalError::unauthenticated() })?,
        (None, Some(account)) => {
            let password = required_text(&request, "password")?;
            login_with_password(&portal, client, account.trim(), password)
                .await?
                .ok_or(PortalError { field: Some("password".into()), ..PortalError::unauthenticated() })?
        }
        (None, None) => return Err(PortalError::field("token", "`token`, or `account` and `password`, is required")),
    };
    let (principal, granted_at_seq) = found;
    let (id, csrf) = portal.sessions.open(&principal, granted_at_seq)?;
    let body = json!({"csrf": csrf, "account": principal.account()});
    Ok(([(header::SET_COOKIE, session_cookie(&id))], axum::Json(body)).into_response())
}

pub(super) async fn api_world(
    State(portal): Shared,
    _caller: ApiCaller,
    uri: axum::http::Uri,
) -> Result<Response, PortalError> {
    let page = views::MatterPage::from_query(uri.query())?;
    let world = portal.live.world();
    if page == views::MatterPage::default() {
        return Ok(axum::Json(&*portal.world_view.world_json(&world)).into_response());
    }
    Ok(axum::Json(views::world_json(&world, &page)).into_response())
}

pub(super) async fn api_being(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    Ok(axum::Json(being_view(&portal, &caller.principal, &name)?).into_response())
}

pub(super) async fn api_act(
    State(portal): Shared,
    Path(name): Path<String>,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    let choice = choice_from(&request)?;
    let world = portal.live.world();
    may_act_for(&world, &caller.principal, views::being_row(&world, &name)?)?;
    let wake = wake_from(&portal, &name, &request)?;
    Ok(axum::Json(drive(&portal, &caller.principal, &name, wake, choice).await?).into_response())
}

pub(super) async fn api_inhabit(
    State(portal): Shared,
    Path(name): Path<String>,
    ApiWriteNoBody(caller): ApiWriteNoBody,
) -> Result<Response, PortalError> {
    Ok(axum::Json(connect(&portal, &caller.principal, &name).await?).into_response())
}

pub(super) async fn api_release(
    State(portal): Shared,
    Path(name): Path<String>,
    ApiWriteNoBody(caller): ApiWriteNoBody,
) -> Result<Response, PortalError> {
    Ok(axum::Json(release(&portal, &caller.principal, &name).await?).into_response())
}

/// Held open by an inhabiting tab: connects on open; when the last tab
/// holding the being is gone for the grace period, releases it.
pub(super) async fn api_presence(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    // A GET seals nothing: the stream only holds a being the person already
    // inhabits (connected by a POST); otherwise it is a 403 saying why.
    let person = acting_being(&portal, &caller.principal)?;
    let world = portal.live.world();
    let row = views::being_row(&world, &name)?;
    may_act_for(&world, &caller.principal, row)?;
    must_inhabit(&world, person, row)?;
    let (being, being_name) = (row.id, row.name.clone());
    drop(world);
    portal.live.presence_opened(being);
    struct Holding {
        portal: Arc<Portal>,
        being: crate::fact::BeingId,
        name: String,
    }
    impl Drop for Holding {
        fn drop(&mut self) {
            if self.portal.live.presence_closed(self.being) > 0 {
                return;
            }
            let grace = Duration::from_millis(self.portal.limits.release_grace_ms);
            release_unless_held(self.portal.clone(), self.being, self.name.clone(), grace);
        }
    }
    let holding = Holding { portal: portal.clone(), being, name: being_name.clone() };
    let first =
        futures_util::stream::once(
            async move { Ok::<Event, Infallible>(Event::default().event("held").data(being_name)) },
        );
    // The tab's one stream: after `held`, the world events its live parts
    // follow (a browser gives a host few connections; one per tab is enough).
    let stream =
        first.chain(world_events(&portal)).take_until(serve::stopping(portal.shutdown.clone())).map(move |event| {
            let _held = &holding;
            event
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(SSE_KEEP_ALIVE_S))).into_response())
}

pub(super) async fn api_events(State(portal): Shared, _caller: ApiCaller) -> Result<Response, PortalError> {
    let stream = world_events(&portal).take_until(serve::stopping(portal.shutdown.clone()));
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(SSE_KEEP_ALIVE_S))).into_response())
}

/// A `world` event with the new cursor each time the world moves (a lagging
/// listener skips to the latest).
fn world_events(portal: &Portal) -> impl futures_util::Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(portal.live.subscribe(), |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(cursor) => {
                    return Some((
                        Ok::<Event, Infallible>(Event::default().event("world").data(cursor.to_string())),
                        receiver,
                    ))
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

pub(super) async fn api_flow(
    State(portal): Shared,
    Path(name): Path<String>,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    let flow = request.get("flow").cloned().ok_or_else(|| PortalError::field("flow", "`flow` is required"))?;
    Ok(axum::Json(edit_flow(&portal, &caller.principal, &name, flow).await?).into_response())
}

/// What the being would wear in this moment with a flow not yet stored:
/// the same evaluator over the same open context.
pub(super) async fn api_flow_preview(
    State(portal): Shared,
    Path(name): Path<String>,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    let world = portal.live.world();
    may_act_for(&world, &caller.principal, views::being_row(&world, &name)?)?;
    drop(world);
    let flow = match (request.get("flow"), text_field(&request, "flowText")?) {
        (Some(flow), _) => flow.clone(),
        (None, Some(text)) => serde_json::from_str(text)
            .map_err(|error| PortalError::field("flow", format!("`flow` is not JSON: {error}")))?,
        (None, None) => return Err(PortalError::field("flow", "`flow` is required")),
    };
    // Compiling and walking a flow is CPU work on authored input: it runs
    // off the async workers, which only answer requests.
    let live = portal.live.clone();
    let preview = tokio::task::spawn_blocking(move || preview_flow(&live, &name, &flow))
        .await
        .map_err(|error| PortalError::internal(format!("the preview task stopped: {error}")))??;
    Ok(axum::Json(preview).into_response())
}

pub(super) async fn api_replay(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    Ok(axum::Json(replay(&portal, &caller.principal, &name).await?).into_response())
}

pub(super) async fn api_moment(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    Path((name, seq)): Path<(String, String)>,
) -> Result<Response, PortalError> {
    Ok(axum::Json(moment(&portal, &caller.principal, &name, &seq).await?).into_response())
}

pub(super) async fn api_timeline(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    uri: axum::http::Uri,
) -> Result<Response, PortalError> {
    let query = super::timeline::TimelineQuery::from_query(uri.query())?;
    Ok(axum::Json(timeline(&portal, &caller.principal, query).await?).into_response())
}

pub(super) async fn api_conversation(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    Ok(axum::Json(conversation(&portal, &caller.principal, &name).await?).into_response())
}

pub(super) async fn api_search(
    State(portal): Shared,
    _caller: ApiCaller,
    uri: axum::http::Uri,
) -> Result<Response, PortalError> {
    Ok(axum::Json(place(&portal, Place::Search, uri.query())?).into_response())
}

pub(super) async fn api_space(
    State(portal): Shared,
    _caller: ApiCaller,
    uri: axum::http::Uri,
) -> Result<Response, PortalError> {
    Ok(axum::Json(place(&portal, Place::Space, uri.query())?).into_response())
}

pub(super) async fn api_matter(
    State(portal): Shared,
    _caller: ApiCaller,
    uri: axum::http::Uri,
) -> Result<Response, PortalError> {
    Ok(axum::Json(place(&portal, Place::Matter, uri.query())?).into_response())
}

pub(super) async fn api_birth(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    Ok((StatusCode::CREATED, axum::Json(birth(&portal, &caller.principal, &request).await?)).into_response())
}

pub(super) async fn api_roles(State(portal): Shared, _caller: ApiCaller) -> Result<Response, PortalError> {
    Ok(axum::Json(views::roles_json(&portal.live, &portal.live.world())).into_response())
}

pub(super) async fn api_author_role(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    let definition = request
        .get("definition")
        .cloned()
        .ok_or_else(|| PortalError::field("definition", "`definition` is required"))?;
    if !definition.is_object() {
        return Err(PortalError::field("definition", "`definition` must be a role object"));
    }
    if let Some((field, reason)) = role_problems(&definition).into_iter().next() {
        return Err(PortalError::field(&format!("definition.{field}"), reason));
    }
    let call =
        VerbCall::Do { target: "/".into(), action: "author-role".into(), args: json!({"definition": definition}) };
    Ok((StatusCode::CREATED, axum::Json(acts_as_self(&portal, &caller.principal, call).await?)).into_response())
}

pub(super) async fn api_revert_role(
    State(portal): Shared,
    Path(name): Path<String>,
    ApiWriteNoBody(caller): ApiWriteNoBody,
) -> Result<Response, PortalError> {
    Ok(axum::Json(revert_role(&portal, &caller.principal, &name).await?).into_response())
}

pub(super) async fn api_signal(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    Ok(axum::Json(publish(&portal, &caller.principal, &request).await?).into_response())
}

pub(super) async fn api_moments(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    uri: axum::http::Uri,
) -> Result<Response, PortalError> {
    let filter = views::MomentFilter::from_query(uri.query())?;
    Ok(axum::Json(moments_view(&portal, &caller.principal, &filter)).into_response())
}

pub(super) async fn api_accounts(State(portal): Shared, ApiCaller(caller): ApiCaller) -> Result<Response, PortalError> {
    Ok(axum::Json(accounts_json(&portal, &caller.principal)).into_response())
}

pub(super) async fn api_invite(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    Ok((StatusCode::CREATED, axum::Json(invite(&portal, &caller.principal, &request).await?)).into_response())
}

pub(super) async fn api_new_token(
    State(portal): Shared,
    Path(account): Path<String>,
    ApiWriteNoBody(caller): ApiWriteNoBody,
) -> Result<Response, PortalError> {
    Ok(axum::Json(new_token(&portal, &caller.principal, &account).await?).into_response())
}

pub(super) async fn api_revoke(
    State(portal): Shared,
    Path(account): Path<String>,
    ApiWriteNoBody(caller): ApiWriteNoBody,
) -> Result<Response, PortalError> {
    Ok(axum::Json(revoke(&portal, &caller.principal, &account).await?).into_response())
}

pub(super) async fn api_password(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    Ok(axum::Json(set_password(&portal, &caller.principal, &request).await?).into_response())
}

/// `GET /api/v1/beings/NAME/memory?at=&query=&count=`: the being's memory
/// at a land cursor (docs/memory.md), for whoever may see inside it.
pub(super) async fn api_memory(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    Path(name): Path<String>,
    uri: axum::http::Uri,
) -> Result<Response, PortalError> {
    let ask = memory_ask(uri.query())?;
    Ok(axum::Json(memory(&portal, &caller.principal, &name, ask).await?).into_response())
}
