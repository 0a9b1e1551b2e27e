//! The space page's ownership and scoping forms (docs/ownership.md): each
//! is a DO operation on the space (`set-owner`, `transfer-ownership`,
//! `remove-owner`, `add-contributor`, `remove-contributor`,
//! `scope-extension`) driven as the visitor's own being, so the verb layer
//! decides who may, as it does for the same call through `/api/v1`.

use super::error::PortalError;
use super::extract::FormWrite;
use super::work::{acts_as_self, see_other};
use super::Portal;
use crate::world::VerbCall;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::sync::Arc;

/// The operations the forms offer.
const RULE_OPERATIONS: &[&str] =
    &["set-owner", "transfer-ownership", "remove-owner", "add-contributor", "remove-contributor", "scope-extension"];

pub(super) async fn rules_form(State(portal): State<Arc<Portal>>, FormWrite(credential, form): FormWrite) -> Response {
    let result = async {
        let text = |name: &str| form.get(name).map(|value| value.trim().to_string()).unwrap_or_default();
        let path = text("path");
        let action = text("action");
        if !RULE_OPERATIONS.contains(&action.as_str()) {
            return Err(PortalError::field(
                "action",
                format!("{action:?} is not one of {}", RULE_OPERATIONS.join(", ")),
            ));
        }
        let args = match action.as_str() {
            "remove-owner" => json!({}),
            "scope-extension" => {
                let scope = Some(text("scope")).filter(|scope| !scope.is_empty()).map_or(Json::Null, Json::from);
                json!({"extension": text("extension"), "scope": scope})
            }
            _ if text("being").is_empty() => return Err(PortalError::field("being", "name the being (@name)")),
            _ => json!({"being": text("being")}),
        };
        let call = VerbCall::Do { target: path.clone(), action: action.clone(), args };
        acts_as_self(&portal, &credential.principal, call).await?;
        let back = format!("/spaces?{}", serde_urlencoded::to_string([("path", path.as_str())]).unwrap_or_default());
        Ok::<Response, PortalError>(see_other(&back, &format!("{action} done at {path}")))
    }
    .await;
    result.unwrap_or_else(|error| error.as_html().into_response())
}
