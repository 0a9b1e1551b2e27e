//! The pages and API of the mirrors this land keeps of the lands it follows
//! (docs/canopy.md "Following a land"): `/mirrors/{land}` lists the
//! mirrored land's beings and the fork proofs the mirror holds,
//! `/mirrors/{land}/beings/{being}` a mirrored reel, fact by fact (each
//! also as JSON under `/api/v1/mirrors/…`). A mirror is opened to read only
//! for each request, beside the follower that writes it.

use super::error::PortalError;
use super::extract::{ApiCaller, PageVisitor};
use super::html::{esc, field, list, page, text};
use super::work::{html, query};
use super::Portal;
use crate::fact::body::{GenesisBody, KIND_GENESIS};
use crate::fact::BeingId;
use crate::land::Land;
use crate::mirror::mirror_dir;
use crate::view::stored_fact_json;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::sync::Arc;

/// Facts of a mirrored reel on one page.
pub const MIRROR_REEL_FACTS_PER_PAGE: u64 = 200;

type Shared = State<Arc<Portal>>;

fn mirrored_land(given: &str) -> Result<BeingId, PortalError> {
    BeingId::from_hex(given)
        .ok_or_else(|| PortalError::not_found(format!("{given:?} is not a land id (64 hex digits)")))
}

/// Opens the mirror of `land` to read, off the async threads.
async fn open_mirror(portal: &Portal, land: BeingId) -> Result<Land, PortalError> {
    let dir = mirror_dir(portal.live.land_dir(), &land);
    open_mirror_at(dir, format!("land {}", land.to_hex())).await
}

/// Opens the mirror in `dir` (of `what`) to read, off the async threads.
async fn open_mirror_at(dir: std::path::PathBuf, what: String) -> Result<Land, PortalError> {
    if !dir.join(crate::land::LAND_META_FILE).is_file() {
        return Err(PortalError::not_found(format!(
            "this land keeps no mirror of {what} (follow it from the peers page)"
        )));
    }
    tokio::task::spawn_blocking(move || Land::open_read_only(&dir))
        .await
        .map_err(|error| PortalError::internal(error.to_string()))?
        .map_err(|error| PortalError::unavailable(format!("the mirror does not open: {error}")))
}

/// The mirrored land: its beings (name, facts, ended) and the fork proofs.
fn mirror_view(mirror: &Land, land: BeingId) -> Result<Json, PortalError> {
    let failed = |error: crate::store::StoreError| PortalError::unavailable(error.to_string());
    let store = mirror.store();
    let mut beings = Vec::new();
    for being in store.beings().map_err(failed)? {
        let head = store.head(&being).map_err(failed)?;
        let name = store
            .reel(&being, 0, 1)
            .map_err(failed)?
            .first()
            .filter(|stored| stored.fact.kind() == KIND_GENESIS)
            .and_then(|stored| stored.fact.body_as::<GenesisBody>().ok())
            .map(|genesis| genesis.name);
        beings.push(json!({
            "being": being.to_hex(),
            "name": name,
            "facts": head.map_or(0, |head| head.seq + 1),
            "ended": head.is_some_and(|head| head.ended),
        }));
    }
    let forks: Vec<Json> = store
        .fork_proofs(None)
        .map_err(failed)?
        .iter()
        .map(|proof| {
            json!({"being": proof.being.to_hex(), "seq": proof.seq, "kept": proof.kept.to_hex(), "rival": proof.rival.to_hex()})
        })
        .collect();
    Ok(json!({
        "land": land.to_hex(),
        "url": mirror.meta().mirror_of,
        "facts": store.land_len().map_err(failed)?,
        "beings": beings,
        "forkProofs": forks,
    }))
}

/// One mirrored reel from `from`, at most a page of facts.
fn reel_view(mirror: &Land, land: BeingId, being: &str, from: u64) -> Result<Json, PortalError> {
    let failed = |error: crate::store::StoreError| PortalError::unavailable(error.to_string());
    let id = BeingId::from_hex(being)
        .or_else(|| mirror.resolve(being).ok())
        .ok_or_else(|| PortalError::not_found(format!("no being {being:?} in the mirror of land {}", land.to_hex())))?;
    let Some(head) = mirror.store().head(&id).map_err(failed)? else {
        return Err(PortalError::not_found(format!("no being {being:?} in the mirror of land {}", land.to_hex())));
    };
    let to = from.saturating_add(MIRROR_REEL_FACTS_PER_PAGE).min(head.seq + 1);
    let facts: Vec<Json> = mirror.store().reel(&id, from, to).map_err(failed)?.iter().map(stored_fact_json).collect();
    let name = mirror
        .store()
        .reel(&id, 0, 1)
        .map_err(failed)?
        .first()
        .and_then(|stored| stored.fact.body_as::<GenesisBody>().ok())
        .map(|genesis| genesis.name);
    Ok(
        json!({"land": land.to_hex(), "being": id.to_hex(), "name": name, "facts": facts, "from": from, "reelLen": head.seq + 1,
        "next": if to <= head.seq { Json::from(to) } else { Json::Null }}),
    )
}

pub(super) async fn api_mirror(
    State(portal): Shared,
    Path(land): Path<String>,
    ApiCaller(_): ApiCaller,
) -> Result<Response, PortalError> {
    let land = mirrored_land(&land)?;
    let mirror = open_mirror(&portal, land).await?;
    Ok(axum::Json(mirror_view(&mirror, land)?).into_response())
}

pub(super) async fn api_mirror_reel(
    State(portal): Shared,
    Path((land, being)): Path<(String, String)>,
    ApiCaller(_): ApiCaller,
    uri: Uri,
) -> Result<Response, PortalError> {
    let land = mirrored_land(&land)?;
    let from = query(&uri).get("from").and_then(|from| from.parse().ok()).unwrap_or(0);
    let mirror = open_mirror(&portal, land).await?;
    Ok(axum::Json(reel_view(&mirror, land, &being, from)?).into_response())
}

/// The mirror of one being of another land: its reel.
async fn being_mirror(portal: &Portal, being: &str) -> Result<(Land, BeingId), PortalError> {
    let being = mirrored_land(being)?;
    let dir = crate::mirror::being_mirror_dir(portal.live.land_dir(), &being);
    let mirror = open_mirror_at(dir, format!("being {}", being.to_hex())).await?;
    let land = mirror.meta().mirror_being_of.as_deref().and_then(BeingId::from_hex).unwrap_or(being);
    Ok((mirror, land))
}

pub(super) async fn api_being_mirror(
    State(portal): Shared,
    Path(being): Path<String>,
    ApiCaller(_): ApiCaller,
    uri: Uri,
) -> Result<Response, PortalError> {
    let from = query(&uri).get("from").and_then(|from| from.parse().ok()).unwrap_or(0);
    let (mirror, land) = being_mirror(&portal, &being).await?;
    Ok(axum::Json(reel_view(&mirror, land, &being, from)?).into_response())
}

pub(super) async fn being_mirror_page(
    State(portal): Shared,
    Path(being): Path<String>,
    PageVisitor(credential): PageVisitor,
    uri: Uri,
) -> Response {
    let result = async {
        let from = query(&uri).get("from").and_then(|from| from.parse().ok()).unwrap_or(0);
        let (mirror, land) = being_mirror(&portal, &being).await?;
        let view = reel_view(&mirror, land, &being, from)?;
        let intro = format!(
            "<p class=\"muted\">A read-only mirror of one being of land <code>{}</code>: its reel alone, each fact \
checked here before it was kept. <code>seed verify --land {}</code> reads it; it does not replay (a moment reads \
its whole land: follow the land to replay it).</p>",
            esc(&land.to_hex()),
            esc(&mirror.dir().display().to_string()),
        );
        Ok::<Response, PortalError>(html(page(
            "Mirrored being",
            &format!("{intro}{}", reel_html(&view, land, &format!("/mirrors/beings/{}", text(field(&view, "being"))))),
            Some(credential.csrf()),
        )))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

pub(super) async fn mirror_page(
    State(portal): Shared,
    Path(land): Path<String>,
    PageVisitor(credential): PageVisitor,
) -> Response {
    let result = async {
        let land = mirrored_land(&land)?;
        let mirror = open_mirror(&portal, land).await?;
        let view = mirror_view(&mirror, land)?;
        let mut out = format!(
            "<p class=\"muted\">A read-only mirror of land <code>{}</code> at <code>{}</code>: its facts in its order, \
each checked here (signature, link, body) before it was kept. <code>seed verify --land {}</code> and \
<code>seed replay --land … --all</code> read it as they read any land.</p><p id=\"mirror-facts\">{} facts, {} beings.</p>",
            esc(&land.to_hex()),
            esc(&text(field(&view, "url"))),
            esc(&mirror.dir().display().to_string()),
            field(&view, "facts"),
            list(field(&view, "beings")).len(),
        );
        let forks = list(field(&view, "forkProofs"));
        if !forks.is_empty() {
            out.push_str("<h2>Fork proofs</h2><p class=\"muted\">Two facts at one seq, both signed by the being's key: \
the land signed two histories. Both are kept; the reel takes nothing more.</p><ul id=\"mirror-forks\">");
            for fork in forks {
                out.push_str(&format!(
                    "<li>being <code>{}</code> seq {}: kept <code>{}</code>, rival <code>{}</code></li>",
                    esc(&text(field(fork, "being"))),
                    field(fork, "seq"),
                    esc(&text(field(fork, "kept"))),
                    esc(&text(field(fork, "rival"))),
                ));
            }
            out.push_str("</ul>");
        }
        out.push_str("<h2>Beings</h2><div class=\"scroll\"><table id=\"mirror-beings\"><tr><th>being</th><th>facts</th></tr>");
        for being in list(field(&view, "beings")) {
            let id = text(field(being, "being"));
            let name = field(being, "name").as_str().map(|name| format!("@{name}")).unwrap_or_else(|| id.clone());
            out.push_str(&format!(
                "<tr><td><a href=\"/mirrors/{}/beings/{}\">{}</a></td><td>{}{}</td></tr>",
                esc(&land.to_hex()),
                esc(&id),
                esc(&name),
                field(being, "facts"),
                if field(being, "ended") == &Json::Bool(true) { " (ended)" } else { "" },
            ));
        }
        out.push_str("</table></div>");
        Ok::<Response, PortalError>(html(page(&format!("Mirror of {}", &land.to_hex()[..12]), &out, Some(credential.csrf()))))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

pub(super) async fn mirror_reel_page(
    State(portal): Shared,
    Path((land, being)): Path<(String, String)>,
    PageVisitor(credential): PageVisitor,
    uri: Uri,
) -> Response {
    let result = async {
        let land = mirrored_land(&land)?;
        let from = query(&uri).get("from").and_then(|from| from.parse().ok()).unwrap_or(0);
        let mirror = open_mirror(&portal, land).await?;
        let view = reel_view(&mirror, land, &being, from)?;
        let out = format!(
            "<p><a href=\"/mirrors/{land}\">the mirror of land {short}</a></p>{}",
            reel_html(&view, land, &format!("/mirrors/{}/beings/{}", land.to_hex(), text(field(&view, "being")))),
            land = esc(&land.to_hex()),
            short = esc(&land.to_hex()[..12]),
        );
        Ok::<Response, PortalError>(html(page("Mirrored reel", &out, Some(credential.csrf()))))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

/// A mirrored reel's facts as a table, with a link to the next page.
fn reel_html(view: &Json, land: BeingId, pages_at: &str) -> String {
    let mut out = format!(
            "<p class=\"muted\" id=\"mirror-reel\">\
{} of land {short}: {} facts on this reel; from seq {}.</p><div class=\"scroll\"><table id=\"mirror-reel-facts\"><tr><th>seq</th><th>land seq</th>\
<th>time</th><th>kind</th><th>id</th><th>body</th></tr>",
            esc(&field(view, "name").as_str().map(|name| format!("@{name}")).unwrap_or_else(|| text(field(view, "being")))),
            field(view, "reelLen"),
            field(view, "from"),
            short = esc(&land.to_hex()[..12]),
        );
    for fact in list(field(view, "facts")) {
        let body = serde_json::to_string(field(fact, "body")).unwrap_or_default();
        let body: String = body.chars().take(400).collect();
        out.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code title=\"{}\">{}</code></td><td><code style=\"white-space: pre-wrap; word-break: break-all\">{}</code></td></tr>",
                field(fact, "seq"),
                field(fact, "landSeq"),
                esc(&text(field(fact, "storedTime"))),
                esc(&text(field(fact, "kind"))),
                esc(&text(field(fact, "id"))),
                esc(&text(field(fact, "id")).chars().take(12).collect::<String>()),
                esc(&body),
            ));
    }
    out.push_str("</table></div>");
    if let Some(next) = field(view, "next").as_u64() {
        out.push_str(&format!(
            "<p><a id=\"mirror-reel-next\" href=\"{}?from={next}\">the next facts</a></p>",
            esc(pages_at)
        ));
    }
    out
}
