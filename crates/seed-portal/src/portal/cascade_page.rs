//! The cascade page and `/api/v1/cascade/{fact}` (docs/cascade.md): one
//! signal's flow as a tree (`cascade_view`), every delivery and drop citing
//! its fact. Any visitor may read it, as they read a space. A bad id is a
//! 400 naming it, a fact that is none of a cascade a 404.

use super::error::PortalError;
use super::extract::{ApiCaller, PageVisitor};
use super::html::{being_link, esc, field, list, page, space_anchor, text};
use super::work::html;
use super::Portal;
use crate::cascade_view::{trees_of, CascadeViewError};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::sync::Arc;

type Shared = State<Arc<Portal>>;

/// The status a cascade view's error answers with.
fn portal_error(error: CascadeViewError) -> PortalError {
    let message = error.to_string();
    match error {
        CascadeViewError::BadId { .. } | CascadeViewError::Ambiguous { .. } => PortalError::field("fact", message),
        CascadeViewError::NotFound { .. }
        | CascadeViewError::NotACascade { .. }
        | CascadeViewError::NoSignals { .. } => PortalError::not_found(message),
        CascadeViewError::Engine(_) | CascadeViewError::Store(_) => PortalError::internal(message),
    }
}

/// The trees of `fact`, read off the store on a blocking thread.
async fn view(portal: &Arc<Portal>, fact: String) -> Result<Json, PortalError> {
    let portal = portal.clone();
    tokio::task::spawn_blocking(move || {
        let trees = trees_of(portal.live.store(), &fact).map_err(portal_error)?;
        Ok(json!({"signals": trees.iter().map(|tree| tree.to_json()).collect::<Vec<_>>()}))
    })
    .await
    .map_err(|error| PortalError::internal(format!("the cascade task stopped: {error}")))?
}

pub(super) async fn api_cascade(
    State(portal): Shared,
    ApiCaller(_): ApiCaller,
    Path(fact): Path<String>,
) -> Result<Response, PortalError> {
    Ok(axum::Json(view(&portal, fact).await?).into_response())
}

pub(super) async fn cascade_page(
    State(portal): Shared,
    PageVisitor(credential): PageVisitor,
    Path(fact): Path<String>,
) -> Response {
    match view(&portal, fact).await {
        Ok(trees) => html(cascade_html(&trees, credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

fn cascade_html(trees: &Json, csrf: &str) -> String {
    let mut body = String::new();
    for tree in list(field(trees, "signals")) {
        let signal = field(tree, "signal");
        let fact = text(field(field(signal, "fact"), "fact"));
        body.push_str(&format!(
            "<section class=\"cascade\"><h2>Signal <code id=\"signal-fact\">{}</code></h2><p>{} wrote {} at {} \
             (land seq {}): <code>{}</code></p>",
            esc(&fact[..fact.len().min(12)]),
            being_link(text(field(signal, "writer")).trim_start_matches('@')),
            esc(&text(field(signal, "write"))),
            space_anchor(&text(field(signal, "space"))),
            text(field(field(signal, "fact"), "landSeq")),
            esc(&field(signal, "payload").to_string()),
        ));
        let dropped = field(signal, "dropped");
        if !dropped.is_null() {
            body.push_str(&format!(
                "<p class=\"error\" id=\"signal-dropped\">not announced: {}: {}</p></section>",
                esc(&text(field(dropped, "reason"))),
                esc(&text(field(dropped, "detail")))
            ));
            continue;
        }
        body.push_str(&format!(
            "<p class=\"muted\" id=\"cascade-counts\">{} delivered, {} dropped</p><ul class=\"tree\" id=\"cascade-tree\"><li>{}",
            text(field(tree, "delivered")),
            text(field(tree, "dropped")),
            space_anchor(&text(field(field(tree, "tree"), "space"))),
        ));
        body.push_str(&woke_html(field(field(tree, "tree"), "woke")));
        nodes(field(field(tree, "tree"), "children"), &mut body);
        body.push_str("</li></ul></section>");
    }
    page("Cascade", &body, Some(csrf))
}

/// The beings an arrival woke, each linking to the moment it woke them for.
fn woke_html(woke: &Json) -> String {
    let woke = list(woke);
    if woke.is_empty() {
        return String::new();
    }
    let links: Vec<String> = woke
        .iter()
        .map(|entry| {
            let being = text(field(entry, "being"));
            let name = being.trim_start_matches('@');
            format!(
                "<a class=\"woke\" href=\"/beings/{}/moments/{}\">{}</a>",
                esc(name),
                text(field(field(entry, "act"), "reelSeq")),
                esc(&being)
            )
        })
        .collect();
    format!(" <span class=\"woke-list\">woke {}</span>", links.join(", "))
}

/// Each child as a list item (a drop marked with its reason), its own children nested.
fn nodes(children: &Json, out: &mut String) {
    let children = list(children);
    if children.is_empty() {
        return;
    }
    out.push_str("<ul>");
    for child in children {
        let fact = text(field(field(child, "fact"), "fact"));
        let short = esc(&fact[..fact.len().min(12)]);
        let dropped = field(child, "dropped");
        if dropped.is_null() {
            out.push_str(&format!(
                "<li class=\"delivered\">{} <span class=\"muted\">depth {}, {}, fact {short}</span>{}",
                space_anchor(&text(field(child, "space"))),
                text(field(child, "depth")),
                esc(&text(field(child, "handler"))),
                woke_html(field(child, "woke")),
            ));
        } else {
            out.push_str(&format!(
                "<li class=\"dropped\">✗ {} <span class=\"error\">dropped, {}: {}</span> <span class=\"muted\">fact {short}</span>",
                esc(&text(field(child, "space"))),
                esc(&text(field(dropped, "reason"))),
                esc(&text(field(dropped, "detail"))),
            ));
        }
        nodes(field(child, "children"), out);
        out.push_str("</li>");
    }
    out.push_str("</ul>");
}
