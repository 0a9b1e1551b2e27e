//! The portal (`seed up`): server-rendered pages and the JSON API under
//! `/api/v1` over one live land. Handlers are thin: they authenticate,
//! parse and validate the request (naming the field at fault), and turn
//! every change into one moment of a person-driven being (`live::LiveLand::act`),
//! so each change is an act on the acting being's reel, checked by the same
//! verb layer as any other, and nothing is written half-way.
//! docs/portal.md describes the pages, the API and the security rules.

pub mod auth;
pub mod error;
pub mod headers;
pub mod html;
pub mod live;
pub mod request_log;
pub mod role_form;
pub mod serve;
pub mod views;

use crate::fact::FactId;
use crate::moment::{self, PersonChoice};
use crate::world::{VerbCall, Wake};
use auth::{Credential, Sessions, SESSION_COOKIE};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use error::PortalError;
use futures_util::StreamExt;
use live::LiveLand;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Most bytes of a request body (`portal_body_bytes_max`).
pub const PORTAL_BODY_BYTES_MAX: usize = 64 * 1024;
/// Requests per minute per session or bearer (`portal_requests_per_minute_max`).
pub const PORTAL_REQUESTS_PER_MINUTE_MAX: u64 = 600;
/// How long a being stays inhabited after its last tab closed (`inhabit_release_grace_ms`).
pub const INHABIT_RELEASE_GRACE_MS: u64 = 3_000;
/// How long an inhabit page has to open its event stream before the
/// connection it made is released (added to the grace period).
pub const INHABIT_FIRST_HOLD_MS: u64 = 10_000;
/// How often the live land runs a round of wakes (`round_ms`).
pub const ROUND_MS_DEFAULT: u64 = 1_000;
/// Moments the replay view details (the latest; the timeline shows all).
pub const REPLAY_MOMENTS_SHOWN_MAX: usize = 200;
/// How long a client has to send a request's body, once its headers are in.
pub const BODY_READ_TIMEOUT_MS: u64 = 10_000;
/// Seconds between keep-alive comments on event streams.
const SSE_KEEP_ALIVE_S: u64 = 15;

/// The portal's settings (from `seed up`'s flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortalLimits {
    pub body_bytes_max: usize,
    pub requests_per_minute_max: u64,
    pub release_grace_ms: u64,
    /// How long a client has to send a request's line and headers.
    pub header_read_timeout_ms: u64,
    /// How long a client has to send a request's body.
    pub body_read_timeout_ms: u64,
}

impl Default for PortalLimits {
    fn default() -> PortalLimits {
        PortalLimits {
            body_bytes_max: PORTAL_BODY_BYTES_MAX,
            requests_per_minute_max: PORTAL_REQUESTS_PER_MINUTE_MAX,
            release_grace_ms: INHABIT_RELEASE_GRACE_MS,
            header_read_timeout_ms: serve::HEADER_READ_TIMEOUT_MS,
            body_read_timeout_ms: BODY_READ_TIMEOUT_MS,
        }
    }
}

pub struct Portal {
    pub live: Arc<LiveLand>,
    sessions: Sessions,
    limits: PortalLimits,
    /// Fires when the portal stops: event streams end on it.
    shutdown: serve::Shutdown,
}

type Shared = State<Arc<Portal>>;

pub fn router(live: Arc<LiveLand>, limits: PortalLimits, shutdown: serve::Shutdown) -> Router {
    let portal = Arc::new(Portal { live, sessions: Sessions::new(limits.requests_per_minute_max), limits, shutdown });
    // Beings still inhabited from before a restart have no tab holding them:
    // released unless a tab comes back within the grace period.
    let world = portal.live.world();
    for row in world.beings.values().filter(|row| row.inhabited_by.is_some()) {
        let wait = Duration::from_millis(limits.release_grace_ms + INHABIT_FIRST_HOLD_MS);
        release_unless_held(portal.clone(), row.id, row.name.clone(), wait);
    }
    drop(world);
    Router::new()
        .route("/", get(|| async { Redirect::to("/world") }))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/world", get(world_page))
        .route("/world/live", get(world_live))
        .route("/beings/{name}", get(being_page))
        .route("/beings/{name}/act", post(being_act_form))
        .route("/beings/{name}/flow", get(flow_page).post(flow_form))
        .route("/beings/{name}/replay", get(replay_page))
        .route("/inhabit/{name}", get(inhabit_page).post(inhabit_form))
        .route("/inhabit/{name}/act", post(inhabit_act_form))
        .route("/birth", post(birth_form))
        .route("/roles", get(roles_page).post(role_form))
        .route("/signals", post(signal_form))
        .route("/moments", get(moments_page))
        .route("/api/v1/login", post(api_login))
        .route("/api/v1/world", get(api_world))
        .route("/api/v1/events", get(api_events))
        .route("/api/v1/beings/{name}", get(api_being))
        .route("/api/v1/beings/{name}/act", post(api_act))
        .route("/api/v1/beings/{name}/inhabit", post(api_inhabit))
        .route("/api/v1/beings/{name}/release", post(api_release))
        .route("/api/v1/beings/{name}/presence", get(api_presence))
        .route("/api/v1/beings/{name}/flow", post(api_flow))
        .route("/api/v1/beings/{name}/flow/preview", post(api_flow_preview))
        .route("/api/v1/beings/{name}/replay", get(api_replay))
        .route("/api/v1/birth", post(api_birth))
        .route("/api/v1/roles", get(api_roles).post(api_author_role))
        .route("/api/v1/signals", post(api_signal))
        .route("/api/v1/moments", get(api_moments))
        .route(
            "/static/portal.js",
            get(|| async { headers::asset(headers::PORTAL_JS, "text/javascript; charset=utf-8") }),
        )
        .route("/static/portal.css", get(|| async { headers::asset(&html::stylesheet(), "text/css; charset=utf-8") }))
        .fallback(|| async { PortalError::not_found("no such page or API route") })
        .layer(axum::middleware::map_response(headers::security_headers))
        .layer(axum::middleware::from_fn(request_log::log_request))
        .with_state(portal)
}

// ---------------------------------------------------------------- helpers

/// The request's body: 413 past the limit, 408 if the client does not send
/// all of it within `body_read_timeout_ms` (a slow client must not hold a
/// connection and a worker open).
async fn read_body(portal: &Portal, body: Body) -> Result<Bytes, PortalError> {
    let timeout = Duration::from_millis(portal.limits.body_read_timeout_ms);
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, portal.limits.body_bytes_max)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(PortalError::too_large(portal.limits.body_bytes_max)),
        Err(_) => Err(PortalError::body_timeout(portal.limits.body_read_timeout_ms)),
    }
}

fn parse_json(bytes: &[u8]) -> Result<Json, PortalError> {
    let value: Json = serde_json::from_slice(bytes)
        .map_err(|error| PortalError::bad_request(format!("the body is not JSON: {error}")))?;
    if !value.is_object() {
        return Err(PortalError::bad_request("the body must be a JSON object"));
    }
    Ok(value)
}

fn parse_form(bytes: &[u8]) -> Result<BTreeMap<String, String>, PortalError> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes)
        .map(|pairs| pairs.into_iter().collect())
        .map_err(|error| PortalError::bad_request(format!("the form is not url-encoded: {error}")).as_html())
}

fn query(uri: &Uri) -> BTreeMap<String, String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(uri.query().unwrap_or_default())
        .map(|pairs| pairs.into_iter().collect())
        .unwrap_or_default()
}

fn text_field<'a>(value: &'a Json, name: &str) -> Result<Option<&'a str>, PortalError> {
    match value.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(text)) => Ok(Some(text.as_str())),
        Some(_) => Err(PortalError::field(name, format!("`{name}` must be a string"))),
    }
}

fn required_text<'a>(value: &'a Json, name: &str) -> Result<&'a str, PortalError> {
    match text_field(value, name)? {
        Some(text) if !text.trim().is_empty() => Ok(text),
        _ => Err(PortalError::field(name, format!("`{name}` is required"))),
    }
}

/// An authenticated API caller (401 otherwise).
fn api_caller(portal: &Portal, headers: &HeaderMap) -> Result<Credential, PortalError> {
    portal.sessions.identify(headers, |token| portal.live.token_matches(token))
}

/// Authenticates a form post: the caller, the form, and its CSRF field.
async fn form_write(
    portal: &Portal,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Credential, BTreeMap<String, String>), PortalError> {
    let credential = api_caller(portal, headers)?;
    let form = parse_form(&read_body(portal, body).await?)?;
    credential.check_csrf(headers, form.get("csrf").map(String::as_str))?;
    Ok((credential, form))
}

/// An authenticated page visitor: a redirect to the login page otherwise.
fn page_caller(portal: &Portal, headers: &HeaderMap) -> Result<Credential, Response> {
    match api_caller(portal, headers) {
        Ok(credential) => Ok(credential),
        Err(error) if error.status == StatusCode::UNAUTHORIZED => Err(Redirect::to("/login").into_response()),
        Err(error) => Err(error.as_html().into_response()),
    }
}

fn html(body: String) -> Response {
    Html(body).into_response()
}

/// A person's moment failed: a status for the reason the trace gives.
fn refusal(outcome: &str) -> PortalError {
    let reason = outcome.split_once(": ").map_or(outcome, |(_, reason)| reason).to_string();
    let permission = ["not within", "not an ancestor", "no person drives", "may only", "may not"];
    if permission.iter().any(|needle| outcome.contains(needle)) {
        PortalError::forbidden(reason)
    } else if outcome.contains("over the land's limit") {
        PortalError { status: StatusCode::PAYLOAD_TOO_LARGE, code: "too-large", ..PortalError::bad_request(reason) }
    } else if outcome.starts_with("failure in seal") || outcome.contains("is taken") {
        PortalError::conflict(reason)
    } else {
        PortalError { code: "refused", ..PortalError::bad_request(reason) }
    }
}

/// Runs one moment of `being` (by name) driven by the operator's session,
/// after checking the session may drive it. Returns the outcome line.
async fn drive(portal: &Arc<Portal>, name: &str, wake: Wake, choice: PersonChoice) -> Result<Json, PortalError> {
    check_choice_fits_a_fact(portal.live.fact_body_bytes_max(), &choice)?;
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    views::may_drive(&world, portal.live.operator(), row).map_err(PortalError::forbidden)?;
    let (live, being) = (portal.live.clone(), row.id);
    let result = tokio::task::spawn_blocking(move || live.act(being, wake, &choice))
        .await
        .map_err(|error| PortalError::internal(format!("the moment task stopped: {error}")))??;
    match result {
        Ok(done) => Ok(json!({"outcome": done.outcome, "landSeq": done.land_seq})),
        Err(refused) => Err(refusal(&refused.outcome)),
    }
}

/// 413 naming the field of a person's choice that alone is larger than the
/// land lets a fact body be (measured as JSON, which is never shorter than
/// the canonical CBOR it becomes): the caller's input, refused before
/// anything is prepared. An act just under the limit whose whole body is
/// over it is refused by the seal, which the moment trace names.
fn check_choice_fits_a_fact(body_bytes_max: usize, choice: &PersonChoice) -> Result<(), PortalError> {
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

/// The operator acting as itself.
async fn operator_acts(portal: &Arc<Portal>, call: VerbCall) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let name = world.name_of(&portal.live.operator()).unwrap_or("operator").to_string();
    drop(world);
    drive(portal, &name, Wake::Person, PersonChoice { call, content: None }).await
}

/// Reads a verb call from a request: `verb` and the fields of that verb.
fn choice_from(request: &Json) -> Result<PersonChoice, PortalError> {
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
    Ok(PersonChoice { call, content })
}

/// The wake a request answers: a summon in the being's inbox (by its fact
/// id), or none (the person acts on its own).
fn wake_from(portal: &Portal, name: &str, request: &Json) -> Result<Wake, PortalError> {
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
fn form_request(form: &BTreeMap<String, String>) -> Result<Json, PortalError> {
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

fn see_other(to: &str, done: &str) -> Response {
    let query = serde_urlencoded::to_string([("done", done)]).unwrap_or_default();
    let joint = if to.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{to}{joint}{query}")).into_response()
}

// ------------------------------------------------------------------ login

async fn login_form() -> Response {
    html(html::login_page(None))
}

fn session_cookie(id: &str) -> String {
    format!("{SESSION_COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/")
}

/// Checks a login's token against the throttle: `Ok(false)` for a wrong
/// token (counted against the client and the account), 429 while either
/// has failed too often (checked before the token is compared).
fn login_token_holds(portal: &Portal, client: SocketAddr, token: &str) -> Result<bool, PortalError> {
    let client = client.ip().to_string();
    portal.sessions.throttle.check(Some(&client), auth::OPERATOR_ACCOUNT)?;
    if portal.live.token_matches(token) {
        return Ok(true);
    }
    portal.sessions.throttle.failed(Some(&client), auth::OPERATOR_ACCOUNT);
    Ok(false)
}

async fn login(State(portal): Shared, ConnectInfo(client): ConnectInfo<SocketAddr>, body: Body) -> Response {
    let result = async {
        let form = parse_form(&read_body(&portal, body).await?)?;
        let token = form.get("token").map(String::as_str).unwrap_or_default().trim();
        if !login_token_holds(&portal, client, token)? {
            return Ok((StatusCode::UNAUTHORIZED, Html(html::login_page(Some("That is not the operator's token."))))
                .into_response());
        }
        let (id, _) = portal.sessions.open(auth::OPERATOR_ACCOUNT)?;
        Ok::<Response, PortalError>(
            ([(header::SET_COOKIE, session_cookie(&id))], Redirect::to("/world")).into_response(),
        )
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

async fn api_login(
    State(portal): Shared,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    body: Body,
) -> Result<Response, PortalError> {
    let request = parse_json(&read_body(&portal, body).await?)?;
    let token = required_text(&request, "token")?;
    if !login_token_holds(&portal, client, token.trim())? {
        return Err(PortalError { field: Some("token".into()), ..PortalError::unauthenticated() });
    }
    let (id, csrf) = portal.sessions.open(auth::OPERATOR_ACCOUNT)?;
    Ok(([(header::SET_COOKIE, session_cookie(&id))], axum::Json(json!({"csrf": csrf}))).into_response())
}

async fn logout(State(portal): Shared, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let (credential, _) = form_write(&portal, &headers, body).await?;
        if let Credential::Session { id, .. } = &credential {
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

// ------------------------------------------------------------------ pages

async fn world_page(State(portal): Shared, headers: HeaderMap) -> Response {
    let credential = match page_caller(&portal, &headers) {
        Ok(credential) => credential,
        Err(response) => return response,
    };
    html(html::world_page(&views::world_json(&portal.live.world()), credential.csrf()))
}

async fn world_live(State(portal): Shared, headers: HeaderMap) -> Response {
    if let Err(response) = page_caller(&portal, &headers) {
        return response;
    }
    html(html::world_fragment(&views::world_json(&portal.live.world())))
}

async fn being_page(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>, uri: Uri) -> Response {
    let credential = match page_caller(&portal, &headers) {
        Ok(credential) => credential,
        Err(response) => return response,
    };
    let world = portal.live.world();
    let result = views::being_row(&world, &name)
        .and_then(|row| views::being_json(&portal.live, &world, row, portal.live.operator()));
    match result {
        Ok(being) => html(html::being_page(&being, credential.csrf(), query(&uri).get("done").map(String::as_str))),
        Err(error) => error.as_html().into_response(),
    }
}

async fn act_form(portal: Arc<Portal>, headers: HeaderMap, name: String, body: Body, back: String) -> Response {
    let result = async {
        let (_, form) = form_write(&portal, &headers, body).await?;
        let request = form_request(&form)?;
        let choice = choice_from(&request)?;
        let wake = wake_from(&portal, &name, &request)?;
        let done = drive(&portal, &name, wake, choice).await?;
        Ok::<Response, PortalError>(see_other(
            &back,
            &format!("@{name}: {}", done["outcome"].as_str().unwrap_or("done")),
        ))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

async fn being_act_form(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>, body: Body) -> Response {
    let back = format!("/beings/{name}");
    act_form(portal, headers, name, body, back).await
}

async fn inhabit_act_form(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>, body: Body) -> Response {
    let back = format!("/inhabit/{name}");
    act_form(portal, headers, name, body, back).await
}

/// `POST /inhabit/NAME` (the being page's button, with the CSRF token):
/// connects, then shows the inhabit tab. Connecting changes the land, so
/// it is never a GET a cross-site page could trigger.
async fn inhabit_form(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>, body: Body) -> Response {
    let result = async {
        form_write(&portal, &headers, body).await?;
        let world = portal.live.world();
        let (being, name) = views::being_row(&world, &name).map(|row| (row.id, row.name.clone()))?;
        drop(world);
        if portal.live.presence_of(&being) == 0 {
            connect(&portal, &name).await?;
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
async fn inhabit_page(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>, uri: Uri) -> Response {
    let credential = match page_caller(&portal, &headers) {
        Ok(credential) => credential,
        Err(response) => return response,
    };
    let result = (|| {
        let world = portal.live.world();
        let row = views::being_row(&world, &name)?;
        if row.inhabited_by != Some(portal.live.operator()) {
            return Err(PortalError::conflict(format!(
                "you do not inhabit @{}: use the Inhabit button on its page",
                row.name
            )));
        }
        let being = views::being_json(&portal.live, &world, row, portal.live.operator())?;
        Ok(html(html::inhabit_page(&being, credential.csrf(), query(&uri).get("done").map(String::as_str))))
    })();
    result.unwrap_or_else(|error: PortalError| error.as_html().into_response())
}

async fn birth_form(State(portal): Shared, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let (_, form) = form_write(&portal, &headers, body).await?;
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
        let done = birth(&portal, &Json::Object(request)).await?;
        Ok::<Response, PortalError>(see_other(
            &format!("/beings/{}", done["name"].as_str().unwrap_or("birther")),
            "born",
        ))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

async fn roles_page(State(portal): Shared, headers: HeaderMap, uri: Uri) -> Response {
    let credential = match page_caller(&portal, &headers) {
        Ok(credential) => credential,
        Err(response) => return response,
    };
    let world = portal.live.world();
    let roles = views::roles_json(&portal.live, &world);
    let mut form = html::RoleForm::default();
    let query = query(&uri);
    if let Some(editing) = query.get("edit") {
        if let Some(role) =
            roles["roles"].as_array().and_then(|roles| roles.iter().find(|r| r["name"] == json!(editing)))
        {
            form.values = role_form::values_of_definition(&role["definition"]);
        }
    }
    form.saved = query.get("done").cloned();
    html(html::roles_page(&roles, credential.csrf(), &form))
}

/// Validates a role definition; problems by the definition's field.
fn role_problems(definition: &Json) -> BTreeMap<String, String> {
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

async fn role_form(State(portal): Shared, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let (credential, form) = form_write(&portal, &headers, body).await?;
        let (definition, mut problems) = match role_form::definition_of_values(&form) {
            Ok(definition) => {
                let problems = role_problems(&definition);
                (definition, problems)
            }
            Err(problems) => (Json::Null, problems),
        };
        if problems.is_empty() {
            let call = VerbCall::Do {
                target: "/".into(),
                action: "author-role".into(),
                args: json!({"definition": definition}),
            };
            match operator_acts(&portal, call).await {
                Ok(_) => {
                    let name = definition["name"].as_str().unwrap_or_default();
                    return Ok(see_other(&format!("/roles?edit={}", urlencode(name)), &format!("role {name} saved")));
                }
                Err(error) => {
                    problems.insert(String::new(), error.message);
                }
            }
        }
        // Shown again with each problem beside its field.
        let world = portal.live.world();
        let roles = views::roles_json(&portal.live, &world);
        let form = html::RoleForm {
            values: form.into_iter().filter(|(k, _)| k != "csrf").collect(),
            errors: problems,
            saved: None,
        };
        Ok::<Response, PortalError>(
            (StatusCode::BAD_REQUEST, Html(html::roles_page(&roles, credential.csrf(), &form))).into_response(),
        )
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

fn urlencode(text: &str) -> String {
    serde_urlencoded::to_string([("", text)]).unwrap_or_default().trim_start_matches('=').to_string()
}

async fn flow_page(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>, uri: Uri) -> Response {
    let credential = match page_caller(&portal, &headers) {
        Ok(credential) => credential,
        Err(response) => return response,
    };
    let world = portal.live.world();
    match views::being_row(&world, &name)
        .and_then(|row| views::being_json(&portal.live, &world, row, portal.live.operator()))
    {
        Ok(being) => {
            html(html::flow_page(&being, credential.csrf(), query(&uri).get("done").map(String::as_str), None, None))
        }
        Err(error) => error.as_html().into_response(),
    }
}

async fn flow_form(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>, body: Body) -> Response {
    let result = async {
        let (credential, form) = form_write(&portal, &headers, body).await?;
        let text = form.get("flow").map(String::as_str).unwrap_or_default();
        let saved = async {
            let flow: Json = serde_json::from_str(text)
                .map_err(|error| PortalError::field("flow", format!("`flow` is not JSON: {error}")))?;
            edit_flow(&portal, &name, flow).await
        }
        .await;
        match saved {
            Ok(_) => Ok(see_other(&format!("/beings/{name}/flow"), "roleFlow saved; it applies from the next moment")),
            Err(error) if error.status == StatusCode::BAD_REQUEST || error.status == StatusCode::FORBIDDEN => {
                let world = portal.live.world();
                let row = views::being_row(&world, &name)?;
                let being = views::being_json(&portal.live, &world, row, portal.live.operator())?;
                Ok::<Response, PortalError>(
                    (
                        error.status,
                        Html(html::flow_page(&being, credential.csrf(), None, Some(&error.message), Some(text))),
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

async fn signal_form(State(portal): Shared, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let (_, form) = form_write(&portal, &headers, body).await?;
        let value_text = form.get("value").map(String::as_str).unwrap_or_default();
        let value: Json = serde_json::from_str(value_text).map_err(|_| {
            PortalError::field("value", format!("`value` must be JSON (for text, quote it: \"{value_text}\")"))
        })?;
        let request = json!({"key": form.get("key").cloned().unwrap_or_default(), "value": value});
        publish(&portal, &request).await?;
        Ok::<Response, PortalError>(see_other("/world", "published"))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

async fn moments_page(State(portal): Shared, headers: HeaderMap) -> Response {
    let credential = match page_caller(&portal, &headers) {
        Ok(credential) => credential,
        Err(response) => return response,
    };
    html(html::moments_page(&views::moments_json(&portal.live, &portal.live.world()), credential.csrf()))
}

async fn replay_page(State(portal): Shared, headers: HeaderMap, Path(name): Path<String>) -> Response {
    let credential = match page_caller(&portal, &headers) {
        Ok(credential) => credential,
        Err(response) => return response,
    };
    match replay(&portal, &name).await {
        Ok(replay) => html(html::replay_page(&replay, credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

// -------------------------------------------------------------- the work

async fn birth(portal: &Arc<Portal>, request: &Json) -> Result<Json, PortalError> {
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
    operator_acts(portal, VerbCall::Be { operation: "birth".into(), payload }).await?;
    Ok(json!({"name": name, "parent": portal.live.world().name_of(&portal.live.operator())}))
}

async fn connect(portal: &Arc<Portal>, name: &str) -> Result<Json, PortalError> {
    let name = name.trim_start_matches('@');
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    if row.inhabited_by == Some(portal.live.operator()) {
        return Ok(json!({"outcome": "already inhabited by you"}));
    }
    let name = row.name.clone();
    drop(world);
    operator_acts(portal, VerbCall::Be { operation: "connect".into(), payload: json!({"being": name}) }).await
}

async fn release(portal: &Arc<Portal>, name: &str) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    if row.inhabited_by.is_none() {
        return Ok(json!({"outcome": "not inhabited"}));
    }
    let name = row.name.clone();
    drop(world);
    operator_acts(portal, VerbCall::Be { operation: "release".into(), payload: json!({"being": name}) }).await
}

/// Checks a flow parses and binds against the roles the world sees now.
fn check_flow(portal: &Portal, name: &str, flow: &Json) -> Result<(), PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?;
    portal
        .live
        .substrate()
        .bound_flow_of(&world, flow, &row.default_role)
        .map(|_| ())
        .map_err(|reason| PortalError::field("flow", reason))
}

async fn edit_flow(portal: &Arc<Portal>, name: &str, flow: Json) -> Result<Json, PortalError> {
    check_flow(portal, name, &flow)?;
    let name = name.trim_start_matches('@');
    let call = VerbCall::Do {
        target: "/".into(),
        action: "edit-role-flow".into(),
        args: json!({"being": name, "flow": flow}),
    };
    operator_acts(portal, call).await
}

async fn publish(portal: &Arc<Portal>, request: &Json) -> Result<Json, PortalError> {
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
    operator_acts(portal, call).await
}

async fn replay(portal: &Arc<Portal>, name: &str) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let row = views::being_row(&world, name)?.clone();
    let live = portal.live.clone();
    tokio::task::spawn_blocking(move || views::replay_json(&live, &row))
        .await
        .map_err(|error| PortalError::internal(format!("the replay task stopped: {error}")))?
}

// -------------------------------------------------------------------- API

async fn api_world(State(portal): Shared, headers: HeaderMap) -> Result<Response, PortalError> {
    api_caller(&portal, &headers)?;
    Ok(axum::Json(views::world_json(&portal.live.world())).into_response())
}

async fn api_being(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    api_caller(&portal, &headers)?;
    let world = portal.live.world();
    let row = views::being_row(&world, &name)?;
    Ok(axum::Json(views::being_json(&portal.live, &world, row, portal.live.operator())?).into_response())
}

/// Authenticates a write: caller, CSRF (header), and the JSON body.
async fn api_write(portal: &Portal, headers: &HeaderMap, body: Body) -> Result<Json, PortalError> {
    let credential = api_caller(portal, headers)?;
    credential.check_csrf(headers, None)?;
    parse_json(&read_body(portal, body).await?)
}

/// Authenticates a write whose body carries nothing (it is still read, to
/// hold it to the body limit).
async fn api_write_without_body(portal: &Portal, headers: &HeaderMap, body: Body) -> Result<(), PortalError> {
    let credential = api_caller(portal, headers)?;
    credential.check_csrf(headers, None)?;
    read_body(portal, body).await.map(|_| ())
}

async fn api_act(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, PortalError> {
    let request = api_write(&portal, &headers, body).await?;
    let choice = choice_from(&request)?;
    let wake = wake_from(&portal, &name, &request)?;
    Ok(axum::Json(drive(&portal, &name, wake, choice).await?).into_response())
}

async fn api_inhabit(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, PortalError> {
    api_write_without_body(&portal, &headers, body).await?;
    Ok(axum::Json(connect(&portal, &name).await?).into_response())
}

async fn api_release(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, PortalError> {
    api_write_without_body(&portal, &headers, body).await?;
    Ok(axum::Json(release(&portal, &name).await?).into_response())
}

/// Held open by an inhabiting tab: connects on open; when the last tab
/// holding the being is gone for the grace period, releases it.
async fn api_presence(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    api_caller(&portal, &headers)?;
    // A GET seals nothing: the stream only holds a being the person already
    // inhabits (connected by a POST); otherwise it says so and ends.
    let world = portal.live.world();
    let row = views::being_row(&world, &name)?;
    let (being, being_name) = (row.id, row.name.clone());
    if row.inhabited_by != Some(portal.live.operator()) {
        let refusal = format!("you do not inhabit @{being_name}: use the Inhabit button on its page");
        let stream = futures_util::stream::once(async move {
            Ok::<Event, Infallible>(Event::default().event("refused").data(refusal))
        });
        return Ok(Sse::new(stream).into_response());
    }
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
    let stream = first.chain(futures_util::stream::pending()).take_until(serve::stopping(portal.shutdown.clone())).map(
        move |event| {
            let _held = &holding;
            event
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(SSE_KEEP_ALIVE_S))).into_response())
}

/// After `wait`, releases the being unless a tab holds it again (or it is
/// no longer inhabited).
fn release_unless_held(portal: Arc<Portal>, being: crate::fact::BeingId, name: String, wait: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        tokio::time::sleep(wait).await;
        let still_held = portal.live.presence_of(&being) > 0;
        let inhabited = portal.live.world().beings.get(&being).is_some_and(|row| row.inhabited_by.is_some());
        if !still_held && inhabited {
            if let Err(error) = release(&portal, &name).await {
                tracing::warn!(being = %name, reason = %error.message, "releasing an inhabited being failed");
            }
        }
    });
}

async fn api_events(State(portal): Shared, headers: HeaderMap) -> Result<Response, PortalError> {
    api_caller(&portal, &headers)?;
    let receiver = portal.live.subscribe();
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
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
    .take_until(serve::stopping(portal.shutdown.clone()));
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(SSE_KEEP_ALIVE_S))).into_response())
}

async fn api_flow(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, PortalError> {
    let request = api_write(&portal, &headers, body).await?;
    let flow = request.get("flow").cloned().ok_or_else(|| PortalError::field("flow", "`flow` is required"))?;
    Ok(axum::Json(edit_flow(&portal, &name, flow).await?).into_response())
}

/// What the being would wear in this moment with a flow not yet stored:
/// the same evaluator over the same open context.
async fn api_flow_preview(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, PortalError> {
    let request = api_write(&portal, &headers, body).await?;
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

fn preview_flow(live: &LiveLand, name: &str, flow: &Json) -> Result<Json, PortalError> {
    let world = live.world();
    let row = views::being_row(&world, name)?;
    let bound = live
        .substrate()
        .bound_flow_of(&world, flow, &row.default_role)
        .map_err(|reason| PortalError::field("flow", reason))?;
    let wake = views::preview_wake(row);
    let opened = moment::open(&world, row.id, wake, live.now_ms());
    let assigned = moment::assign_flow(live.substrate(), &world, &opened, bound)
        .map_err(|failure| PortalError::field("flow", failure.reason))?;
    Ok(json!({
        "primary": assigned.composed.primary.as_deref(),
        "stack": assigned.composed.stack.iter().map(|name| name.as_ref()).collect::<Vec<_>>(),
        "clauses": assigned.flow.explain(&assigned.walk),
    }))
}

async fn api_replay(
    State(portal): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, PortalError> {
    api_caller(&portal, &headers)?;
    Ok(axum::Json(replay(&portal, &name).await?).into_response())
}

async fn api_birth(State(portal): Shared, headers: HeaderMap, body: Body) -> Result<Response, PortalError> {
    let request = api_write(&portal, &headers, body).await?;
    Ok((StatusCode::CREATED, axum::Json(birth(&portal, &request).await?)).into_response())
}

async fn api_roles(State(portal): Shared, headers: HeaderMap) -> Result<Response, PortalError> {
    api_caller(&portal, &headers)?;
    Ok(axum::Json(views::roles_json(&portal.live, &portal.live.world())).into_response())
}

async fn api_author_role(State(portal): Shared, headers: HeaderMap, body: Body) -> Result<Response, PortalError> {
    let request = api_write(&portal, &headers, body).await?;
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
    Ok((StatusCode::CREATED, axum::Json(operator_acts(&portal, call).await?)).into_response())
}

async fn api_signal(State(portal): Shared, headers: HeaderMap, body: Body) -> Result<Response, PortalError> {
    let request = api_write(&portal, &headers, body).await?;
    Ok(axum::Json(publish(&portal, &request).await?).into_response())
}

async fn api_moments(State(portal): Shared, headers: HeaderMap) -> Result<Response, PortalError> {
    api_caller(&portal, &headers)?;
    Ok(axum::Json(views::moments_json(&portal.live, &portal.live.world())).into_response())
}
