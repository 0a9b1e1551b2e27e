//! The peers page and `/api/v1/peers` (docs/canopy.md): who this land is
//! to other lands (its id, URL and key), the lands it peers with (status,
//! key, heartbeat history, each from the facts that recorded them), the
//! requests it refused lately, and the operator's forms to add a peer by
//! URL and to remove one.

use super::canopy_routes::{add_peer, remove_peer, set_following};
use super::error::PortalError;
use super::extract::{ApiCaller, ApiWrite, ApiWriteNoBody, FormWrite, PageVisitor};
use super::html::{esc, field, hidden_csrf, list, page, text};
use super::work::{html, query, see_other};
use super::Portal;
use crate::canopy::{forks_shown_json, peer_json, CanopyLimits};
use crate::portal::auth::Principal;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::sync::Arc;

type Shared = State<Arc<Portal>>;

/// 403 unless the operator asks: the land's peers are the operator's to change.
fn only_the_operator(principal: &Principal) -> Result<(), PortalError> {
    match principal {
        Principal::Operator => Ok(()),
        Principal::Person { .. } => Err(PortalError::forbidden("only the operator may add or remove the land's peers")),
    }
}

/// This land and its peers, as `seed peer list --json` prints them (and
/// the refusals this process remembers).
pub(super) fn peers_view(portal: &Portal) -> Json {
    let world = portal.live.world();
    let limits = CanopyLimits::in_world(&world);
    let peers: Vec<Json> = world
        .canopy
        .peers
        .iter()
        .map(|(land, peer)| {
            let mut json = peer_json(land, peer);
            json["mirror"] = mirror_json(portal, land, None);
            json["beingMirrors"] =
                peer.following_beings.iter().map(|being| mirror_json(portal, land, Some(being))).collect();
            json
        })
        .collect();
    let this = match &portal.canopy {
        Some(canopy) => {
            let identity = canopy.identity_json();
            json!({"land": identity["land"], "url": identity["url"], "key": identity["key"], "keySeq": identity["keySeq"]})
        }
        None => json!({"land": world.root.map(|root| root.to_hex()), "url": null, "key": null, "keySeq": null}),
    };
    json!({
        "landSeq": world.cursor,
        "this": this,
        "firstContactsPerHourMax": limits.first_contacts_per_hour_max,
        "heartbeatMs": limits.heartbeat_ms,
        "peers": peers,
        "refused": portal.canopy.as_ref().map_or(Json::Array(Vec::new()), |canopy| canopy.refusals_json()),
        "outbox": crate::canopy::outbox_json(&world),
        "forksShown": forks_shown_json(&world.canopy),
        "summonsRefused": world.canopy.refused.iter().rev().map(|(land_seq, refusal)| json!({
            "landSeq": land_seq,
            "land": refusal.land.to_hex(),
            "being": refusal.being.map(|being| being.to_hex()),
            "seq": refusal.seq,
            "fact": refusal.fact.map(|fact| fact.to_hex()),
            "reason": refusal.reason,
        })).collect::<Vec<_>>(),
    })
}

/// The mirror of `land` this land keeps, if any: how far it has followed
/// (its cursor, from disk) and, while this process follows it, how that
/// stands.
fn mirror_json(portal: &Portal, land: &crate::fact::BeingId, being: Option<&crate::fact::BeingId>) -> Json {
    let dir = match being {
        None => crate::mirror::mirror_dir(portal.live.land_dir(), land),
        Some(being) => crate::mirror::being_mirror_dir(portal.live.land_dir(), being),
    };
    let live = portal.canopy.as_ref().map_or(Json::Null, |canopy| canopy.follows.status_json(&(*land, being.copied())));
    if !dir.is_dir() {
        return match being {
            None => Json::Null,
            Some(being) => json!({"being": being.to_hex(), "dir": Json::Null, "taken": 0, "pull": live}),
        };
    }
    let taken = crate::mirror::read_cursor(&dir).map(|cursor| cursor.taken).unwrap_or_default();
    json!({"being": being.map(|being| being.to_hex()), "dir": dir.display().to_string(), "taken": taken, "pull": live})
}

pub(super) async fn api_peers(State(portal): Shared, ApiCaller(_): ApiCaller) -> Response {
    axum::Json(peers_view(&portal)).into_response()
}

/// `POST /api/v1/peers {"url": …}`.
pub(super) async fn api_add_peer(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    only_the_operator(&caller.principal)?;
    if let Some(unknown) = request.as_object().and_then(|fields| fields.keys().find(|name| *name != "url")) {
        return Err(PortalError::field(unknown, format!("`{unknown}` is not a field of a peer to add (url)")));
    }
    let url = super::work::required_text(&request, "url")?;
    Ok(axum::Json(add_peer(&portal, url).await?).into_response())
}

/// `DELETE /api/v1/peers/{peer}`: the peer's land id (or 8 or more of its
/// first hex digits).
pub(super) async fn api_remove_peer(
    State(portal): Shared,
    Path(peer): Path<String>,
    ApiWriteNoBody(caller): ApiWriteNoBody,
) -> Result<Response, PortalError> {
    only_the_operator(&caller.principal)?;
    Ok(axum::Json(remove_peer(&portal, &peer).await?).into_response())
}

/// `POST /api/v1/peers/{peer}/following {"following": true|false}`.
pub(super) async fn api_set_following(
    State(portal): Shared,
    Path(peer): Path<String>,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    only_the_operator(&caller.principal)?;
    if let Some(unknown) =
        request.as_object().and_then(|fields| fields.keys().find(|name| *name != "following" && *name != "being"))
    {
        return Err(PortalError::field(unknown, format!("`{unknown}` is not a field here (following, being)")));
    }
    let being = super::work::text_field(&request, "being")?;
    let following = request["following"]
        .as_bool()
        .ok_or_else(|| PortalError::field("following", "`following` must be true or false".to_string()))?;
    Ok(axum::Json(set_following(&portal, &peer, being, following).await?).into_response())
}

/// The follow form: `peer` (a land id) and `following` (`true` or `false`).
pub(super) async fn follow_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        only_the_operator(&credential.principal)?;
        let peer = form.get("peer").map(String::as_str).unwrap_or_default();
        let following = form.get("following").map(String::as_str) == Some("true");
        let being = form.get("being").map(String::as_str).map(str::trim).filter(|being| !being.is_empty());
        let changed = set_following(&portal, peer, being, following).await?;
        let land = short(&text(field(&changed, "land")));
        let what = match field(&changed, "being").as_str() {
            Some(being) => format!("being {} of land {land}", short(being)),
            None => format!("land {land}"),
        };
        let done = match following {
            true => format!("following {what}: its facts are mirrored into {}", text(field(&changed, "mirror"))),
            false => format!("no longer following {what}; its mirror stays as it is"),
        };
        Ok::<Response, PortalError>(see_other("/peers", &done))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

pub(super) async fn peers_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    let operator = matches!(credential.principal, Principal::Operator);
    html(peers_html(&peers_view(&portal), query(&uri).get("done").map(String::as_str), credential.csrf(), operator))
}

/// The add form: `url`.
pub(super) async fn peers_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        only_the_operator(&credential.principal)?;
        let url = form.get("url").map(String::as_str).unwrap_or_default();
        let added = add_peer(&portal, url).await?;
        let land = text(field(field(&added, "peer"), "land"));
        let done = if added["greeted"] == Json::Bool(true) {
            format!("land {} added and greeted", short(&land))
        } else {
            format!(
                "land {} added; it did not answer the greeting yet: {}",
                short(&land),
                text(field(&added, "reason"))
            )
        };
        Ok::<Response, PortalError>(see_other("/peers", &done))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

/// The remove form: `peer` (a land id).
pub(super) async fn remove_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        only_the_operator(&credential.principal)?;
        let peer = form.get("peer").map(String::as_str).unwrap_or_default();
        let removed = remove_peer(&portal, peer).await?;
        Ok::<Response, PortalError>(see_other(
            "/peers",
            &format!("land {} removed", short(&text(field(&removed, "removed")))),
        ))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

fn short(hex: &str) -> String {
    hex.chars().take(12).collect()
}

fn peers_html(view: &Json, done: Option<&str>, csrf: &str, operator: bool) -> String {
    let this = field(view, "this");
    let mut out = String::from(
        "<p class=\"muted\">Lands this land speaks with (Canopy). Each request between lands is signed by the \
sending land's key; a land is known by its id (its reality root's) and proven by its key history, each rotation \
signed by the key before it. A peer's record, status and heartbeats are facts of this land. A peer this land follows is copied into a \
read-only mirror, each of its facts checked here before it is kept. <code>seed peer list</code> shows the same.</p>",
    );
    if let Some(done) = done {
        out.push_str(&format!("<p class=\"ok\" id=\"peers-done\">{}</p>", esc(done)));
    }
    out.push_str(&format!(
        "<h2>This land</h2><table id=\"this-land\"><tr><th>land id</th><td><code id=\"this-land-id\">{}</code></td></tr>\
<tr><th>reached at</th><td><code id=\"this-land-url\">{}</code></td></tr><tr><th>key</th><td><code>{}</code> \
<span class=\"muted\">(set at its root's seq {})</span></td></tr><tr><th>first contact</th><td>{}</td></tr></table>",
        esc(&text(field(this, "land"))),
        esc(&text(field(this, "url"))),
        esc(&text(field(this, "key"))),
        field(this, "keySeq"),
        match field(view, "firstContactsPerHourMax").as_u64() {
            Some(0) | None => "refused: only the lands added here are peers (<code>canopy_first_contacts_per_hour_max</code> is 0)".to_string(),
            Some(most) => format!("accepted, at most {most} an hour (<code>canopy_first_contacts_per_hour_max</code>)"),
        },
    ));
    let peers = list(field(view, "peers"));
    out.push_str(&format!(
        "<h2>Peers</h2><p class=\"muted\" id=\"peers-seq\">{} at land seq {}; a heartbeat every {} ms.</p>",
        peers.len(),
        field(view, "landSeq"),
        super::config_page::grouped(field(view, "heartbeatMs"))
    ));
    if peers.is_empty() {
        out.push_str("<p id=\"no-peers\">No peers yet.</p>");
    } else {
        out.push_str(
            "<div class=\"scroll\"><table id=\"peers\"><tr><th>land</th><th>status</th><th>heartbeats</th><th>key</th><th>mirror</th><th></th></tr>",
        );
        for peer in peers {
            let land = text(field(peer, "land"));
            let history: Vec<String> = list(field(peer, "heartbeats"))
                .iter()
                .rev()
                .take(6)
                .map(|record| {
                    let reason = field(record, "reason").as_str().unwrap_or_default();
                    format!(
                        "<li>seq {}: {} ({} answered, {} missed){}</li>",
                        field(record, "landSeq"),
                        esc(&text(field(record, "status"))),
                        field(record, "answered"),
                        field(record, "missed"),
                        if reason.is_empty() {
                            String::new()
                        } else {
                            format!(" <span class=\"muted\">{}</span>", esc(reason))
                        }
                    )
                })
                .collect();
            let remove = if operator {
                format!(
                    "<form method=\"post\" action=\"/peers/remove\" class=\"inline\">{}<input type=\"hidden\" name=\"peer\" value=\"{}\">\
<button id=\"remove-{}\">Remove</button></form>",
                    hidden_csrf(csrf),
                    esc(&land),
                    esc(&short(&land))
                )
            } else {
                String::new()
            };
            let mirror = mirror_cell(peer, &land, csrf, operator);
            out.push_str(&format!(
                "<tr id=\"peer-{}\"><td><code title=\"{}\">{}</code><br><a href=\"{url}\">{url}</a><br><span class=\"muted\">{}, at land seq {}</span></td>\
<td class=\"status-{status}\">{status}<br><span class=\"muted\">since land seq {}</span></td>\
<td>{} answered, {} missed<ul class=\"heartbeats\">{}</ul></td><td><code title=\"{}\">{}</code><br><span class=\"muted\">its seq {}</span></td><td class=\"mirror\">{mirror}</td><td>{remove}</td></tr>",
                esc(&short(&land)),
                esc(&land),
                esc(&short(&land)),
                esc(&text(field(peer, "origin"))),
                field(peer, "addedAt"),
                field(peer, "statusSince"),
                field(peer, "answered"),
                field(peer, "missed"),
                history.join(""),
                esc(&text(field(peer, "key"))),
                esc(&short(&text(field(peer, "key")))),
                field(peer, "keySeq"),
                url = esc(&text(field(peer, "url"))),
                status = esc(&text(field(peer, "status"))),
            ));
        }
        out.push_str("</table></div>");
    }
    if operator {
        out.push_str(&format!(
            "<h2>Add a peer</h2><form method=\"post\" action=\"/peers\" id=\"add-peer\">{}<label>URL of the land \
<input name=\"url\" id=\"peer-url\" size=\"40\" placeholder=\"https://land.example\"></label> <button id=\"add\">Add and greet</button></form>\
<p class=\"muted\">The land at the URL is proven first (its key history must verify from its genesis), then recorded, \
then greeted with a signed hello.</p>",
            hidden_csrf(csrf)
        ));
    }
    let outbox = list(field(view, "outbox"));
    out.push_str("<h2>Summons waiting to be delivered</h2>");
    if outbox.is_empty() {
        out.push_str(
            "<p class=\"muted\" id=\"outbox-empty\">None: every summons to another land was delivered or given up.</p>",
        );
    } else {
        out.push_str("<ul id=\"outbox\">");
        for waiting in outbox {
            out.push_str(&format!(
                "<li>{} to <code>{}</code>, sealed at land seq {}</li>",
                esc(&text(field(waiting, "from"))),
                esc(&text(field(waiting, "to"))),
                field(waiting, "landSeq")
            ));
        }
        out.push_str("</ul>");
    }
    let forks = list(field(view, "forksShown"));
    if !forks.is_empty() {
        out.push_str(
            "<h2>Forks of this land's reels other lands showed</h2><p class=\"muted\">Each is a fact signed by the \
key a being of this land had at that seq, different from the one this land holds there: the land signed two \
histories (a folder put back from an older copy and continued?). The fact shown is kept whole on the reel.</p><ul id=\"forks-shown\">",
        );
        for fork in forks {
            out.push_str(&format!(
                "<li>being <code>{}</code> seq {}: this land holds <code>{}</code>, land <code>{}</code> holds <code>{}</code> \
<span class=\"muted\">(recorded at land seq {})</span></li>",
                esc(&short(&text(field(fork, "being")))),
                field(fork, "seq"),
                esc(&short(&text(field(fork, "held")))),
                esc(&short(&text(field(fork, "by")))),
                esc(&short(&text(field(fork, "shown")))),
                field(fork, "landSeq"),
            ));
        }
        out.push_str("</ul>");
    }
    let summons_refused = list(field(view, "summonsRefused"));
    if !summons_refused.is_empty() {
        out.push_str("<h2>Summons refused here</h2><ul id=\"summons-refused\">");
        for refusal in summons_refused {
            out.push_str(&format!(
                "<li>from land <code>{}</code>, recorded at land seq {}: {}</li>",
                esc(&short(&text(field(refusal, "land")))),
                field(refusal, "landSeq"),
                esc(&text(field(refusal, "reason")))
            ));
        }
        out.push_str("</ul>");
    }
    let refused = list(field(view, "refused"));
    out.push_str("<h2>Refused lately</h2>");
    if refused.is_empty() {
        out.push_str("<p class=\"muted\" id=\"no-refusals\">No request from another land was refused since this process started.</p>");
    } else {
        out.push_str("<ul id=\"refusals\">");
        for refusal in refused {
            out.push_str(&format!(
                "<li><code>{}</code> from <code>{}</code>: {}</li>",
                esc(&text(field(refusal, "path"))),
                esc(&short(&text(field(refusal, "from")))),
                esc(&text(field(refusal, "reason")))
            ));
        }
        out.push_str("</ul>");
    }
    page("Peers", &out, Some(csrf))
}

/// A peer's mirror: how far it has followed, where the pull stands, its
/// forks, a link to its pages, and the operator's follow button.
fn mirror_cell(peer: &Json, land: &str, csrf: &str, operator: bool) -> String {
    let following = field(peer, "following") == &Json::Bool(true);
    let mirror = field(peer, "mirror");
    let mut cell = String::new();
    if mirror.is_null() {
        cell.push_str("<span class=\"muted\">none</span>");
    } else {
        let pull = field(mirror, "pull");
        cell.push_str(&format!(
            "<a href=\"/mirrors/{}\" id=\"mirror-{}\">{} facts</a>",
            esc(land),
            esc(&short(land)),
            field(mirror, "taken")
        ));
        if !pull.is_null() {
            cell.push_str(&format!(
                "<br><span class=\"follow-{state}\">{state}</span> <span class=\"muted\">(the land holds {})</span>",
                field(pull, "landLen"),
                state = esc(&text(field(pull, "state")))
            ));
            if let Some(reason) = field(pull, "reason").as_str() {
                cell.push_str(&format!("<br><span class=\"muted\">{}</span>", esc(reason)));
            }
            for fork in list(field(pull, "forks")) {
                let shown = match field(fork, "shown").get("recordedAt") {
                    Some(land_seq) => format!("shown to the land, recorded there at land seq {land_seq}"),
                    None => format!("not shown: {}", text(field(field(fork, "shown"), "refused"))),
                };
                cell.push_str(&format!(
                    "<br><span class=\"fork\">fork: being <code>{}</code> seq {} (<code>{}</code> kept, <code>{}</code> rival); {}</span>",
                    esc(&short(&text(field(fork, "being")))),
                    field(fork, "seq"),
                    esc(&short(&text(field(fork, "kept")))),
                    esc(&short(&text(field(fork, "rival")))),
                    esc(&shown)
                ));
            }
        }
    }
    for followed in list(field(peer, "beingMirrors")) {
        let being = text(field(followed, "being"));
        let pull = field(followed, "pull");
        cell.push_str(&format!(
            "<br><span class=\"followed-being\">being <a href=\"/mirrors/beings/{being}\" id=\"being-mirror-{short}\"><code>{short}</code></a>: {} facts{}</span>",
            field(followed, "taken"),
            match field(pull, "state").as_str() {
                Some(state) => format!(", {}", esc(state)),
                None => String::new(),
            },
            being = esc(&being),
            short = esc(&short(&being)),
        ));
        if let Some(reason) = field(pull, "reason").as_str() {
            cell.push_str(&format!(" <span class=\"muted\">{}</span>", esc(reason)));
        }
        if operator {
            cell.push_str(&format!(
                "<form method=\"post\" action=\"/peers/follow\" class=\"inline\">{}<input type=\"hidden\" name=\"peer\" value=\"{}\">\
<input type=\"hidden\" name=\"being\" value=\"{}\"><input type=\"hidden\" name=\"following\" value=\"false\">\
<button id=\"unfollow-being-{}\">Stop</button></form>",
                hidden_csrf(csrf),
                esc(land),
                esc(&being),
                esc(&short(&being))
            ));
        }
    }
    if operator {
        cell.push_str(&format!(
            "<form method=\"post\" action=\"/peers/follow\" class=\"inline\" id=\"follow-being-form-{short}\">{}\
<input type=\"hidden\" name=\"peer\" value=\"{}\"><input type=\"hidden\" name=\"following\" value=\"true\">\
<input name=\"being\" id=\"follow-being-{short}\" size=\"10\" placeholder=\"@name\"> <button id=\"follow-being-button-{short}\">Follow a being</button></form>",
            hidden_csrf(csrf),
            esc(land),
            short = esc(&short(land)),
        ));
        let (value, label) = if following { ("false", "Stop following") } else { ("true", "Follow") };
        cell.push_str(&format!(
            "<form method=\"post\" action=\"/peers/follow\" class=\"inline\">{}<input type=\"hidden\" name=\"peer\" value=\"{}\">\
<input type=\"hidden\" name=\"following\" value=\"{value}\"><button id=\"follow-{}\">{label}</button></form>",
            hidden_csrf(csrf),
            esc(land),
            esc(&short(land))
        ));
    }
    cell
}
