//! Accounts: the operator invites people (each bound to a human being of
//! their own), gives an account a new token or ends it, and a person sets
//! their own password. Every grant and revocation is an act of the
//! operator's being (`grant-account`, `revoke-account`), so the world, and
//! a replay, knows every account; tokens are shown once and only their
//! hashes reach a fact; passwords stay beside the store (`passwords`).

use super::auth::{self, Principal};
use super::error::PortalError;
use super::work::{acts_as_self, drive, required_text, text_field};
use super::Portal;
use crate::moment::PersonChoice;
use crate::world::{VerbCall, Wake};
use serde_json::{json, Value as Json};
use std::sync::Arc;

/// 403 unless the operator asks: only the operator invites people, gives
/// them new tokens and ends their accounts.
fn only_the_operator(principal: &Principal, what: &str) -> Result<(), PortalError> {
    match principal {
        Principal::Operator => Ok(()),
        Principal::Person { .. } => Err(PortalError::forbidden(format!("only the operator may {what}"))),
    }
}

/// Seals a grant of `account` to `being` with a new token; returns the token.
async fn grant(portal: &Arc<Portal>, principal: &Principal, account: &str, being: &str) -> Result<String, PortalError> {
    let token = auth::random_hex()?;
    let token_hash = crate::fact::blake3_of(token.as_bytes()).to_hex();
    let call = VerbCall::Do {
        target: "/".into(),
        action: "grant-account".into(),
        args: json!({"account": account, "being": being, "tokenHash": token_hash}),
    };
    acts_as_self(portal, principal, call).await?;
    Ok(token)
}

/// Invites a person: `account` (their login name), the human being they
/// will drive (`being`, born now under `parent` when it does not exist
/// yet; by default named as the account, under the operator's being).
/// Answers with the token, shown this once.
pub(super) async fn invite(portal: &Arc<Portal>, principal: &Principal, request: &Json) -> Result<Json, PortalError> {
    only_the_operator(principal, "invite people")?;
    let account = required_text(request, "account")?.trim().to_string();
    if let Some(reason) = crate::names::being_name_problem(&account) {
        return Err(PortalError::field("account", format!("account name {account:?}: {reason}")));
    }
    if account == auth::OPERATOR_ACCOUNT {
        return Err(PortalError::field("account", "\"operator\" is the operator's own login"));
    }
    let world = portal.live.world();
    if world.accounts.contains_key(&account) {
        return Err(PortalError {
            field: Some("account".into()),
            ..PortalError::conflict(format!("the account {account:?} exists (give it a new token instead)"))
        });
    }
    let being = text_field(request, "being")?.map(str::trim).filter(|name| !name.is_empty()).unwrap_or(&account);
    let being = being.trim_start_matches('@').to_string();
    if world.being_named(&being).is_none() {
        crate::land::validate_being_name(&being).map_err(|error| PortalError::field("being", error.to_string()))?;
        let operator_name = world.name_of(&portal.live.operator()).unwrap_or_default().to_string();
        let parent = text_field(request, "parent")?.map(str::trim).filter(|name| !name.is_empty());
        let parent = parent.unwrap_or(&operator_name).trim_start_matches('@').to_string();
        let parent_row = world.being_named(&parent).ok_or_else(|| PortalError {
            field: Some("parent".into()),
            ..PortalError::not_found(format!("there is no being @{parent}"))
        })?;
        if parent_row.id != portal.live.operator() && world.account_of(&parent_row.id).is_none() {
            return Err(PortalError::field(
                "parent",
                format!("@{parent} is neither the operator's being nor an account's: a person's being is born under one of those"),
            ));
        }
        drop(world);
        let payload = json!({"name": being, "cognition": "human", "defaultRole": "person"});
        let call = VerbCall::Be { operation: "birth".into(), payload };
        drive(portal, principal, &parent, Wake::Person, PersonChoice { call, content: None, importance: None }).await?;
    } else {
        drop(world);
    }
    let token = grant(portal, principal, &account, &being).await?;
    Ok(json!({"account": account, "being": format!("@{being}"), "token": token}))
}

/// A new token for `account` (its old token, password and sessions end).
pub(super) async fn new_token(portal: &Arc<Portal>, principal: &Principal, account: &str) -> Result<Json, PortalError> {
    only_the_operator(principal, "give an account a new token")?;
    let world = portal.live.world();
    let granted = world
        .accounts
        .get(account)
        .ok_or_else(|| PortalError::not_found(format!("there is no account {account:?}")))?;
    let being = world.name_of(&granted.being).unwrap_or_default().to_string();
    drop(world);
    let token = grant(portal, principal, account, &being).await?;
    Ok(json!({"account": account, "being": format!("@{being}"), "token": token}))
}

/// Ends `account`: its token, password and sessions stop working.
pub(super) async fn revoke(portal: &Arc<Portal>, principal: &Principal, account: &str) -> Result<Json, PortalError> {
    only_the_operator(principal, "end an account")?;
    if !portal.live.world().accounts.contains_key(account) {
        return Err(PortalError::not_found(format!("there is no account {account:?}")));
    }
    let call = VerbCall::Do { target: "/".into(), action: "revoke-account".into(), args: json!({"account": account}) };
    acts_as_self(portal, principal, call).await?;
    Ok(json!({"account": account, "revoked": true}))
}

/// Sets the asking person's own password (slow: hashed off the workers).
pub(super) async fn set_password(
    portal: &Arc<Portal>,
    principal: &Principal,
    request: &Json,
) -> Result<Json, PortalError> {
    let Principal::Person { account } = principal else {
        return Err(PortalError::field(
            "password",
            "the operator logs in with its token (`seed token` issues a new one), not a password",
        ));
    };
    let password = text_field(request, "password")?.unwrap_or_default().to_string();
    if let Some(problem) = super::passwords::password_problem(&password) {
        return Err(PortalError::field("password", problem.to_string()));
    }
    let granted_at_seq = portal.live.grant_of(principal).ok_or_else(PortalError::unauthenticated)?;
    let (setting, account_name) = (portal.clone(), account.clone());
    tokio::task::spawn_blocking(move || setting.passwords.set(&account_name, granted_at_seq, &password))
        .await
        .map_err(|error| PortalError::internal(format!("setting the password stopped: {error}")))??;
    Ok(json!({"account": account, "passwordSet": true}))
}

/// The accounts `principal` may see: every account for the operator, their
/// own for a person; and who is asking.
pub(super) fn accounts_json(portal: &Portal, principal: &Principal) -> Json {
    let world = portal.live.world();
    let with_a_password = portal.passwords.grants_with_a_password();
    let accounts: Vec<Json> = world
        .accounts
        .iter()
        .filter(|(name, _)| matches!(principal, Principal::Operator) || principal.account() == name.as_str())
        .map(|(name, granted)| {
            json!({
                "account": name,
                "being": world.name_of(&granted.being).map(|being| format!("@{being}")),
                "grantedAtSeq": granted.granted_at_seq,
                "passwordSet": with_a_password.get(name) == Some(&granted.granted_at_seq),
            })
        })
        .collect();
    let you = portal.live.being_of(principal).and_then(|being| world.name_of(&being).map(|name| format!("@{name}")));
    json!({
        "you": {"account": principal.account(), "being": you, "operator": matches!(principal, Principal::Operator)},
        "accounts": accounts,
    })
}
