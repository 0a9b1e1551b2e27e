//! The config page and `/api/v1/config` (docs/config.md): every
//! configuration key with its unit, range, default, the value in force and
//! the fact that set it; a key set (or returned to its default) by the
//! visitor's own being acting `do set-config`, which its role must offer
//! (the operator's and the role-manager's do), in force from the next moment.

use super::error::PortalError;
use super::extract::{ApiCaller, ApiWrite, FormWrite, PageVisitor};
use super::html::{esc, field, hidden_csrf, list, page, text};
use super::work::{acts_as_self, html, query, see_other};
use super::Portal;
use crate::config::{check_value, key_for_setting, parse_value};
use crate::config_view::{config_json, Configuration};
use crate::portal::auth::Principal;
use crate::world::VerbCall;
use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::sync::Arc;

type Shared = State<Arc<Portal>>;

/// The configuration at the land's latest world, each key citing the fact
/// that set it (folded into the world with the values).
async fn view(portal: &Arc<Portal>) -> Result<Json, PortalError> {
    let world = portal.live.world();
    Ok(config_json(&Configuration::of_world(&world)))
}

/// Sets `key` to `value` (a whole number, or null for its default) as the
/// principal's own being; a key or value that does not fit is a 400 naming it.
async fn set(portal: &Arc<Portal>, principal: &Principal, key: &str, value: Option<u64>) -> Result<Json, PortalError> {
    let call =
        VerbCall::Do { target: "/".into(), action: "set-config".into(), args: json!({"key": key, "value": value}) };
    let done = acts_as_self(portal, principal, call).await?;
    Ok(json!({"key": key, "value": value, "landSeq": done["landSeq"], "outcome": done["outcome"]}))
}

pub(super) async fn api_config(State(portal): Shared, ApiCaller(_): ApiCaller) -> Result<Response, PortalError> {
    Ok(axum::Json(view(&portal).await?).into_response())
}

/// `POST /api/v1/config {"key": …, "value": N | null}`.
pub(super) async fn api_set_config(
    State(portal): Shared,
    ApiWrite(caller, request): ApiWrite,
) -> Result<Response, PortalError> {
    if let Some(unknown) =
        request.as_object().and_then(|fields| fields.keys().find(|name| *name != "key" && *name != "value"))
    {
        return Err(PortalError::field(unknown, format!("`{unknown}` is not a field of a config change (key, value)")));
    }
    let name = super::work::required_text(&request, "key")?;
    let key = key_for_setting(name).map_err(|error| PortalError::field("key", error.to_string()))?;
    let value = check_value(key, request.get("value").unwrap_or(&Json::Null))
        .map_err(|error| PortalError::field("value", error.to_string()))?;
    Ok(axum::Json(set(&portal, &caller.principal, key.name, value).await?).into_response())
}

pub(super) async fn config_page(State(portal): Shared, PageVisitor(credential): PageVisitor, uri: Uri) -> Response {
    match view(&portal).await {
        Ok(config) => html(config_html(&config, query(&uri).get("done").map(String::as_str), credential.csrf())),
        Err(error) => error.as_html().into_response(),
    }
}

/// The page's form: `key` and `value` (a whole number, or `default`).
pub(super) async fn config_form(State(portal): Shared, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        let name = form.get("key").map(String::as_str).unwrap_or_default();
        let key = key_for_setting(name).map_err(|error| PortalError::field("key", error.to_string()))?;
        let typed = form.get("value").map(String::as_str).unwrap_or_default();
        let value = parse_value(key, typed).map_err(|error| PortalError::field("value", error.to_string()))?;
        set(&portal, &credential.principal, key.name, value).await?;
        Ok::<Response, PortalError>(see_other("/config", &format!("{} set", key.name)))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}

fn config_html(config: &Json, done: Option<&str>, csrf: &str) -> String {
    let mut out = String::from(
        "<p class=\"muted\">The land's limits, each folded from the facts that set it: a moment reads the value in \
force at its cursor, so replay reads the same. A change is an act of your being (<code>do set-config</code>, which \
the operator's and the role-manager's roles offer), in force from the next moment. <code>seed config</code> lists \
the same.</p>",
    );
    if let Some(done) = done {
        out.push_str(&format!("<p class=\"ok\" id=\"config-done\">{}</p>", esc(done)));
    }
    out.push_str(&format!(
        "<p class=\"muted\" id=\"config-seq\">At land seq {}.</p><div class=\"scroll\"><table id=\"config\">\
<tr><th>key, and what it bounds</th><th>value</th><th>range</th><th>set by</th><th>change</th></tr>",
        field(config, "landSeq")
    ));
    for key in list(field(config, "keys")) {
        let name = text(field(key, "key"));
        let by = field(key, "setBy");
        let set_by = if by.is_null() {
            "<span class=\"muted\">its default</span>".to_string()
        } else {
            let fact = text(field(by, "fact"));
            format!(
                "@{} at land seq {} <code title=\"{}\">{}</code>",
                esc(&text(field(by, "being"))),
                field(by, "landSeq"),
                esc(&fact),
                esc(&fact.chars().take(12).collect::<String>())
            )
        };
        out.push_str(&format!(
            "<tr id=\"key-{name}\"><td><code>{name}</code><br><span class=\"muted\">{about}</span></td>\
<td class=\"value\">{}<br><span class=\"muted\">{unit}</span></td><td>{} to {}<br><span class=\"muted\">default {}</span></td>\
<td>{set_by}</td><td><form method=\"post\" action=\"/config\" class=\"inline\">{}\
<input type=\"hidden\" name=\"key\" value=\"{name}\"><input name=\"value\" id=\"value-{name}\" size=\"8\" \
placeholder=\"default\" aria-label=\"new value of {name}\"> <button id=\"set-{name}\">Set</button></form></td></tr>",
            grouped(field(key, "value")),
            grouped(field(key, "min")),
            grouped(field(key, "max")),
            grouped(field(key, "default")),
            hidden_csrf(csrf),
            name = esc(&name),
            unit = esc(&text(field(key, "unit"))),
            about = esc(&text(field(key, "about"))),
        ));
    }
    out.push_str("</table></div>");
    let other = list(field(config, "other"));
    if !other.is_empty() {
        out.push_str("<h2>Set another way</h2><ul id=\"config-other\">");
        for value in other {
            out.push_str(&format!(
                "<li><code>{}</code> = <code>{}</code></li>",
                esc(&text(field(value, "key"))),
                esc(&field(value, "value").to_string())
            ));
        }
        out.push_str("</ul>");
    }
    page("Configuration", &out, Some(csrf))
}

/// A whole number with its thousands grouped (`65,536`), as docs/config.md
/// writes them; anything else as JSON.
pub(super) fn grouped(value: &Json) -> String {
    let Some(number) = value.as_u64() else { return esc(&value.to_string()) };
    let digits = number.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_are_grouped_by_thousands_as_the_docs_write_them() {
        for (value, expected) in [
            (serde_json::json!(0), "0"),
            (serde_json::json!(999), "999"),
            (serde_json::json!(1_000), "1,000"),
            (serde_json::json!(65_536), "65,536"),
            (serde_json::json!(1_125_899_906_842_624u64), "1,125,899,906,842,624"),
            (serde_json::json!(null), "null"),
        ] {
            assert_eq!(grouped(&value), expected, "{value}");
        }
    }
}
