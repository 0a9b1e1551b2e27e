//! The approvals inbox page, rendered from `approvals::approvals_json`.

use super::html::{being_link, esc, field, hidden_csrf, list, page, text};
use serde_json::Value as Json;

/// The call as one line, and the part of it an approver may edit: the
/// field's name and its value as the form shows it.
fn call_parts(call: &Json) -> (String, &'static str, String) {
    let verb = text(field(call, "verb"));
    match verb.as_str() {
        "do" => (
            format!("do {} on {}", text(field(call, "action")), text(field(call, "target"))),
            "args",
            field(call, "args").to_string(),
        ),
        "summon" => (format!("summon {}", text(field(call, "target"))), "content", text(field(call, "content"))),
        _ => (format!("be {}", text(field(call, "operation"))), "payload", field(call, "payload").to_string()),
    }
}

fn request_row(request: &Json, csrf: &str, error: Option<(&str, &str)>) -> String {
    let id = text(field(request, "request"));
    let short = &id[..id.len().min(12)];
    let (call, edit_field, editable) = call_parts(field(request, "call"));
    let requester = text(field(request, "requester"));
    let mut out = format!(
        "<section class=\"approval\" id=\"request-{short}\"><h2>{} asks: <code>{}</code></h2>",
        being_link(requester.trim_start_matches('@')),
        esc(&call)
    );
    out.push_str(&format!(
        "<p class=\"muted\">request <code title=\"{}\">{short}</code> · gate {} · approvers {} · asked {} · expires {}</p>",
        esc(&id),
        esc(&text(field(request, "rule"))),
        esc(&list(field(request, "approvers")).iter().map(text).collect::<Vec<_>>().join(", ")),
        esc(&text(field(request, "requested"))),
        esc(&text(field(request, "expires")))
    ));
    if let Some(content) = field(request, "content").as_str() {
        out.push_str(&format!("<p>“{}”</p>", esc(content)));
    }
    if let Some((failed, message)) = error.filter(|(failed, _)| *failed == id) {
        let _ = failed;
        out.push_str(&format!("<p class=\"error\" id=\"error-{short}\">{}</p>", esc(message)));
    }
    let decision = field(request, "decision");
    if !decision.is_null() {
        let verdict = if field(decision, "approved") == &Json::Bool(true) { "approved" } else { "denied" };
        out.push_str(&format!(
            "<p id=\"decided-{short}\"><b>{verdict}</b> by {} — waiting for {} to apply it</p>",
            being_link(text(field(decision, "by")).trim_start_matches('@')),
            being_link(requester.trim_start_matches('@'))
        ));
        out.push_str("</section>");
        return out;
    }
    let deciders = list(field(request, "mayDecideAs"));
    if deciders.is_empty() {
        out.push_str("<p class=\"muted\">Waiting for a decision; none of your beings may decide it.</p></section>");
        return out;
    }
    let options: String =
        deciders.iter().map(|name| format!("<option value=\"{0}\">{0}</option>", esc(&text(name)))).collect();
    out.push_str(&format!(
        "<form method=\"post\" action=\"/approvals/{id}\" id=\"decide-{short}\">{csrf}\
<input type=\"hidden\" name=\"edit-field\" value=\"{edit_field}\"><input type=\"hidden\" name=\"original\" value=\"{editable_escaped}\">\
<p><label>Decide as <select name=\"as\" id=\"as-{short}\">{options}</select></label></p>\
<p><label>{edit_field} <textarea name=\"edit\" id=\"edit-{short}\" rows=\"2\" cols=\"60\">{editable_escaped}</textarea></label> \
<span class=\"muted\">edit before approving to approve something else</span></p>\
<p><label>Reason <input name=\"reason\" id=\"reason-{short}\" size=\"50\"></label></p>\
<button name=\"decision\" value=\"approve\" id=\"approve-{short}\">Approve</button> \
<button name=\"decision\" value=\"deny\" id=\"deny-{short}\">Deny</button></form></section>",
        id = esc(&id),
        csrf = hidden_csrf(csrf),
        editable_escaped = esc(&editable),
    ));
    out
}

/// The inbox: every waiting request the visitor asked for or may decide,
/// the oldest first, each with its form; `error` is a refused decision
/// (the request it was about, and why).
pub fn approvals_page(approvals: &Json, csrf: &str, done: Option<&str>, error: Option<(&str, &str)>) -> String {
    let mut out = String::new();
    if let Some(done) = done {
        out.push_str(&format!("<p class=\"done\" id=\"done\">{}</p>", esc(done)));
    }
    out.push_str(
        "<p class=\"muted\">Calls a role holds back until someone approves them. A decision is an act of the \
approving being, signed on its reel; the asking being applies an approved call in its next moment, checked \
again against the world as it is then.</p>",
    );
    let requests = list(field(approvals, "approvals"));
    if requests.is_empty() {
        out.push_str("<p class=\"muted\" id=\"no-approvals\">Nothing is waiting for a decision.</p>");
    }
    if let Some((request, message)) = error {
        if !requests.iter().any(|row| text(field(row, "request")) == request) {
            out.push_str(&format!("<p class=\"error\" id=\"error\">{}</p>", esc(message)));
        }
    }
    for request in requests {
        out.push_str(&request_row(request, csrf, error));
    }
    page("Approvals", &out, Some(csrf))
}
