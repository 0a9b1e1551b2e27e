//! The audit page and `/api/v1/audit` (docs/approvals.md, "The audit"):
//! the lines of `seed::audit` over the live land, for the beings the
//! visitor may act for (the operator: all), newest first. The page reads
//! the facts and does not verify them; `seed audit` does, on the land or on
//! exported bundles.

use super::error::PortalError;
use super::extract::{ApiCaller, PageVisitor};
use super::html::{being_link, esc, field, list, page, text};
use super::work::{html, may_act_for, query};
use super::{views, Portal};
use crate::audit::{audit_land_listed, AuditFilter};
use crate::portal::auth::Principal;
use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Most lines the page and the API give (the newest).
pub const AUDIT_PAGE_LINES_MAX: usize = 500;

type Shared = State<Arc<Portal>>;

/// The filter a query asks for; an unknown parameter or a bad value is a 400 naming it.
fn filter_of(portal: &Portal, asked: &BTreeMap<String, String>) -> Result<AuditFilter, PortalError> {
    if let Some(unknown) = asked.keys().find(|key| !["being", "tool", "since"].contains(&key.as_str())) {
        return Err(PortalError::field(
            unknown,
            format!("`{unknown}` is not a filter of the audit (being, tool, since)"),
        ));
    }
    let given = |key: &str| asked.get(key).map(|value| value.trim()).filter(|value| !value.is_empty());
    let world = portal.live.world();
    let being = match given("being") {
        Some(name) => Some(views::being_row(&world, name.trim_start_matches('@'))?.id),
        None => None,
    };
    let since_ms = match given("since") {
        Some(since) => Some(crate::view::parse_time_ms(since).ok_or_else(|| {
            PortalError::field("since", format!("{since:?} is neither an RFC 3339 time nor milliseconds since 1970"))
        })?),
        None => None,
    };
    Ok(AuditFilter { being, tool: given("tool").map(str::to_string), since_ms })
}

/// The audit's lines the principal may see, newest first, at most
/// [`AUDIT_PAGE_LINES_MAX`].
fn audit_json(portal: &Portal, principal: &Principal, filter: &AuditFilter) -> Result<Json, PortalError> {
    let world = portal.live.world();
    let audit = audit_land_listed(portal.live.store(), &world, filter)
        .map_err(|error| PortalError::internal(error.to_string()))?;
    let visible = |being: &crate::fact::BeingId| {
        world.beings.get(being).is_some_and(|row| may_act_for(&world, principal, row).is_ok())
    };
    let lines: Vec<Json> =
        audit.lines.iter().rev().filter(|line| visible(&line.being)).map(|line| audit.line_json(line)).collect();
    let total = lines.len();
    let shown: Vec<Json> = lines.into_iter().take(AUDIT_PAGE_LINES_MAX).collect();
    Ok(json!({"lines": shown, "total": total, "most": AUDIT_PAGE_LINES_MAX}))
}

pub(super) async fn api_audit(
    State(portal): Shared,
    ApiCaller(caller): ApiCaller,
    uri: Uri,
) -> Result<Response, PortalError> {
    let filter = filter_of(&portal, &query(&uri))?;
    Ok(axum::Json(audit_json(&portal, &caller.principal, &filter)?).into_response())
}

pub(super) async fn audit_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    let asked = query(&uri);
    let answer = filter_of(&portal, &asked).and_then(|filter| audit_json(&portal, &credential.principal, &filter));
    match answer {
        Ok(audit) => html(audit_html(&audit, &asked, credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

fn short(value: &Json) -> String {
    text(value).chars().take(12).collect()
}

fn audit_html(audit: &Json, asked: &BTreeMap<String, String>, csrf: &str) -> String {
    let value = |key: &str| esc(asked.get(key).map(String::as_str).unwrap_or_default());
    let mut out = format!(
        "<p class=\"muted\">Every tool call (an act calling a DO operation) and every step of an approval, newest \
first, each citing the fact it was read from. <code>seed audit</code> lists the same and verifies every reel it \
reads; <code>seed audit --bundle FILE</code> does it from exported bundles alone.</p>\
<form method=\"get\" action=\"/audit\" id=\"audit-filter\"><label>being <input name=\"being\" id=\"audit-being\" value=\"{}\"></label> \
<label>tool <input name=\"tool\" id=\"audit-tool\" value=\"{}\"></label> <label>since <input name=\"since\" id=\"audit-since\" \
value=\"{}\" placeholder=\"2026-11-25T09:00:00Z\"></label> <button id=\"audit-go\">Filter</button></form>",
        value("being"),
        value("tool"),
        value("since")
    );
    let lines = list(field(audit, "lines"));
    let total = field(audit, "total").as_u64().unwrap_or(0);
    out.push_str(&format!("<p class=\"muted\" id=\"audit-count\">{} of {total} lines</p>", lines.len()));
    if lines.is_empty() {
        out.push_str("<p class=\"muted\" id=\"no-lines\">No tool call or approval matches.</p>");
        return page("Audit", &out, Some(csrf));
    }
    out.push_str(
        "<div class=\"scroll\"><table id=\"audit\"><tr><th>time</th><th>being</th><th>line</th><th>what</th>\
<th>came back</th><th>chosen by</th><th>fact</th></tr>",
    );
    for line in lines {
        let kind = text(field(line, "kind"));
        let call = field(line, "call");
        let call_text = if call.is_null() {
            String::new()
        } else {
            match text(field(call, "verb")).as_str() {
                "do" => format!(
                    "do {} {} {}",
                    text(field(call, "action")),
                    text(field(call, "target")),
                    field(call, "args")
                ),
                "summon" => format!("summon {}: {}", text(field(call, "target")), text(field(call, "content"))),
                _ => format!("be {} {}", text(field(call, "operation")), field(call, "payload")),
            }
        };
        let what = match kind.as_str() {
            "request" => format!(
                "{call_text} — waits for {} (gate {})",
                list(field(line, "approvers")).iter().map(text).collect::<Vec<_>>().join(", "),
                text(field(line, "rule"))
            ),
            "decision" => format!(
                "{} request {}{}",
                if field(line, "approved") == &Json::Bool(true) { "approves" } else { "denies" },
                short(field(line, "request")),
                field(line, "reason").as_str().map(|reason| format!(": {reason}")).unwrap_or_default()
            ),
            "applied" => format!(
                "{call_text} — approved by {} (request {})",
                text(field(line, "approvedBy")),
                short(field(line, "request"))
            ),
            "closed" => {
                format!("{call_text} — not done, {}: {}", text(field(line, "outcome")), text(field(line, "reason")))
            }
            _ => call_text,
        };
        let tool_call = field(line, "toolCall");
        let came_back = match kind.as_str() {
            "call" | "applied" if !tool_call.is_null() => {
                let failed = if field(tool_call, "isError") == &Json::Bool(true) { " (it said it failed)" } else { "" };
                format!("{}: {}{failed}", text(field(tool_call, "server")), text(field(tool_call, "text")))
            }
            "call" | "applied" => field(line, "effects").to_string(),
            _ => String::new(),
        };
        let being = text(field(line, "being"));
        out.push_str(&format!(
            "<tr class=\"audit-{kind}\"><td>{}</td><td>{}</td><td>{kind}</td><td>{}</td><td><code>{}</code></td><td>{}</td>\
<td><a href=\"/beings/{}/moments/{}\" title=\"{}\"><code>{}</code></a></td></tr>",
            esc(&text(field(line, "time"))),
            being_link(being.trim_start_matches('@')),
            esc(&what),
            esc(&came_back),
            esc(&text(field(line, "chosenBy"))),
            esc(being.trim_start_matches('@')),
            text(field(line, "seq")),
            esc(&text(field(line, "fact"))),
            esc(&short(field(line, "fact")))
        ));
    }
    out.push_str("</table></div>");
    page("Audit", &out, Some(csrf))
}
