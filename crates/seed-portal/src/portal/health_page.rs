//! The health page and `/api/v1/health` (docs/health.md): the land's
//! health score with each sign against its threshold, whether the breaker
//! tripped the land and which sign did, its latest revival; and the
//! operator's revival (`POST /api/v1/health/revive`, or the page's button),
//! a world fact that clears the trip. Everyone signed in may read it: a
//! tripped land keeps its reads open.

use super::error::PortalError;
use super::extract::{ApiCaller, ApiWrite, FormWrite, PageVisitor};
use super::html::{esc, hidden_csrf, page};
use super::work::{html, query, see_other};
use super::Portal;
use crate::health::{revival_of, trip_of, Health, Reading, Trip};
use crate::portal::auth::Principal;
use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::sync::Arc;

type Shared = State<Arc<Portal>>;

/// The land's health now, as `GET /api/v1/health` gives it.
fn health_json(portal: &Portal) -> Json {
    let world = portal.live.world();
    json!({
        "landSeq": world.cursor,
        "tripped": trip_of(&world).is_some(),
        "trip": trip_of(&world),
        "revived": revival_of(&world),
        "health": portal.live.health(),
    })
}

/// The view, read on a blocking thread: the latest health waits for the
/// engine, which a round may hold.
async fn view(portal: &Arc<Portal>) -> Result<Json, PortalError> {
    let portal = portal.clone();
    tokio::task::spawn_blocking(move || health_json(&portal))
        .await
        .map_err(|error| PortalError::internal(format!("the health task stopped: {error}")))
}

pub(super) async fn api_health(State(portal): Shared, ApiCaller(_): ApiCaller) -> Result<Response, PortalError> {
    Ok(axum::Json(view(&portal).await?).into_response())
}

/// Revives the land as the operator: 403 for anyone else, 409 when the
/// land is not tripped.
async fn revive(portal: &Arc<Portal>, principal: &Principal) -> Result<Json, PortalError> {
    if *principal != Principal::Operator {
        return Err(PortalError::forbidden("only the operator revives a tripped land"));
    }
    let live = portal.live.clone();
    let revival = tokio::task::spawn_blocking(move || live.revive("operator"))
        .await
        .map_err(|error| PortalError::internal(format!("the revival task stopped: {error}")))??;
    Ok(json!({"revived": revival, "landSeq": portal.live.world().cursor}))
}

/// `POST /api/v1/health/revive {}`.
pub(super) async fn api_revive(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    if let Some(unknown) = request.as_object().and_then(|fields| fields.keys().next()) {
        return Err(PortalError::field(unknown, format!("`{unknown}` is not a field of a revival (it takes none)")));
    }
    Ok(axum::Json(revive(&portal, &caller.principal).await?).into_response())
}

pub(super) async fn health_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    let operator = credential.principal == Principal::Operator;
    match view(&portal).await {
        Ok(view) => html(health_html(&view, operator, query(&uri).get("done").map(String::as_str), credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

/// The page's revive button.
pub(super) async fn revive_form(State(portal): Shared, FormWrite(credential, _form): FormWrite) -> Response {
    match revive(&portal, &credential.principal).await {
        Ok(_) => see_other("/health", "the land is revived"),
        Err(error) => error.as_html().into_response(),
    }
}

fn readings_table(readings: &[Reading], tripped_by: Option<&str>) -> String {
    let mut out = String::from(
        "<table id=\"signs\"><tr><th>sign</th><th>value</th><th>threshold</th><th>weight ‰</th><th>part of the \
score ‰</th></tr>",
    );
    for reading in readings {
        let mark = if tripped_by == Some(reading.sign.as_str()) { " class=\"error\"" } else { "" };
        out.push_str(&format!(
            "<tr id=\"sign-{0}\"{mark}><td><code>{0}</code></td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td></tr>",
            esc(&reading.sign),
            reading.value,
            reading.threshold,
            reading.weight_permille,
            reading.part_permille
        ));
    }
    out.push_str("</table>");
    out
}

fn score(permille: u64) -> String {
    format!("{}.{:03}", permille / 1000, permille % 1000)
}

fn disk_line(free: Option<u64>, floor: u64) -> String {
    let free = free.map_or_else(|| "unknown".to_string(), |free| format!("{free} bytes"));
    format!("<p id=\"disk\">Free disk under the land's folder: {free}; the land trips under {floor} bytes.</p>")
}

fn health_html(view: &Json, operator: bool, done: Option<&str>, csrf: &str) -> String {
    let mut out = String::from(
        "<p class=\"muted\">The health breaker adds up measured signs, each its value over its threshold times its \
weight; past a score of 1.000, or with free disk under its floor, the land trips: no moment runs, no model is \
called and nothing new is sealed, while every page, read, verify and replay stays open. The thresholds and weights \
are configuration keys (<a href=\"/config\">Config</a>, <code>health_…</code>).</p>",
    );
    if let Some(done) = done {
        out.push_str(&format!("<p class=\"ok\" id=\"health-done\">{}</p>", esc(done)));
    }
    let trip: Option<Trip> = serde_json::from_value(view["trip"].clone()).ok();
    match &trip {
        Some(trip) => {
            out.push_str(&format!(
                "<p class=\"error\" id=\"health-state\">Tripped by <code>{}</code> with a score of {}.</p>",
                esc(&trip.sign),
                score(trip.score_permille)
            ));
            out.push_str("<h2>The signs when it tripped</h2>");
            out.push_str(&readings_table(&trip.readings, Some(&trip.sign)));
            out.push_str(&disk_line(trip.disk_free_bytes, trip.disk_free_bytes_min));
            if operator {
                out.push_str(&format!(
                    "<form method=\"post\" action=\"/health/revive\">{}<button id=\"revive\">Revive the land</button> \
<span class=\"muted\">The signs are counted afresh from the revival; a sign still past its threshold trips it \
again.</span></form>",
                    hidden_csrf(csrf)
                ));
            } else {
                out.push_str("<p class=\"muted\">The operator revives it.</p>");
            }
        }
        None => {
            let health: Option<Health> = serde_json::from_value(view["health"].clone()).ok();
            match health {
                Some(health) => {
                    out.push_str(&format!(
                        "<p class=\"ok\" id=\"health-state\">Running, with a score of {} after the latest step.</p>",
                        score(health.score_permille)
                    ));
                    out.push_str(&readings_table(&health.readings, None));
                    out.push_str(&disk_line(health.disk_free_bytes, health.disk_free_bytes_min));
                }
                None => out.push_str(
                    "<p class=\"ok\" id=\"health-state\">Running; no sign measured yet (the score is measured as \
each step ends, unless every weight and the disk floor are 0).</p>",
                ),
            }
        }
    }
    if let Some(revived) = view["revived"].as_object() {
        out.push_str(&format!(
            "<p class=\"muted\" id=\"revived\">Last revived by @{} at stored time {} ms, after a trip by <code>{}</code>.</p>",
            esc(revived.get("by").and_then(Json::as_str).unwrap_or_default()),
            revived.get("atMs").and_then(Json::as_u64).unwrap_or_default(),
            esc(revived.get("trip").and_then(|trip| trip["sign"].as_str()).unwrap_or_default()),
        ));
    }
    page("Health", &out, Some(csrf))
}
