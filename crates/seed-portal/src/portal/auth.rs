//! Who is asking: a session cookie (after logging in with a token or a
//! person's password) or a token itself as a bearer (the CLI and tests).
//! A wrong bearer token counts as a failed login of the client that sent
//! it (`throttle`); a right one is never refused for anyone's failures.
//! Every credential names a [`Principal`]: the operator or a person's
//! account. Sessions carry a CSRF token that every cookie-authenticated
//! write must echo, and the grant they were opened under, so a new grant
//! or a revocation of the account ends them; each caller has a per-minute
//! request budget.

use super::error::PortalError;
use super::throttle::LoginThrottle;
use axum::http::HeaderMap;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "seed_session";
/// The header a script sends its session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Most sessions kept at once: a login past it is refused (never another
/// account's session dropped for it).
pub const PORTAL_SESSIONS_MAX: usize = 1024;
/// Most sessions one account holds at once: a login past it ends that
/// account's own least recently used session.
pub const PORTAL_SESSIONS_PER_ACCOUNT_MAX: usize = 32;
/// The operator's account name (no person may take it).
pub const OPERATOR_ACCOUNT: &str = crate::moment::ops::OPERATOR_ACCOUNT_NAME;
/// How long a session lives without use.
pub const PORTAL_SESSION_IDLE_MS: u64 = 12 * 60 * 60 * 1000;
/// How long a session lives at most, however busy: then its person logs in again.
pub const PORTAL_SESSION_LIFETIME_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// Who a request acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The land's operator (the operator token): sees everything, acts as
    /// the operator's being.
    Operator,
    /// A person's account, acting as the being the account drives.
    Person { account: String },
}

impl Principal {
    /// The account name: `operator` or the person's.
    pub fn account(&self) -> &str {
        match self {
            Principal::Operator => OPERATOR_ACCOUNT,
            Principal::Person { account } => account,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Session {
    pub csrf: String,
    principal: Principal,
    /// The land seq of the grant the session was opened under (0 for the operator).
    granted_at_seq: u64,
    opened: Instant,
    last_used: Instant,
}

/// How a request proved who it is, and who that is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub via: Via,
    pub principal: Principal,
}

/// How a request proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A session cookie: writes must carry the session's CSRF token.
    Session { id: String, csrf: String },
    /// `Authorization: Bearer <token>`: no cookie, so no CSRF.
    Bearer,
}

struct Budget {
    window_start: Instant,
    used: u64,
}

#[derive(Default)]
pub struct Sessions {
    sessions: Mutex<BTreeMap<String, Session>>,
    budgets: Mutex<BTreeMap<String, Budget>>,
    pub throttle: LoginThrottle,
}

pub fn random_hex() -> Result<String, PortalError> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|error| PortalError::internal(format!("no OS randomness: {error}")))?;
    Ok(hex::encode(bytes))
}

/// Compares two secrets without stopping at the first difference.
fn same_secret(left: &str, right: &str) -> bool {
    left.len() == right.len() && left.bytes().zip(right.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

pub fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get_all(axum::http::header::COOKIE).iter().filter_map(|value| value.to_str().ok()).find_map(|cookies| {
        cookies.split(';').map(str::trim).find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
    })
}

impl Sessions {
    /// A new session of `account`: (id, CSRF token). Past the account's
    /// cap its own least recently used session ends; past the land's cap
    /// the login is refused, so no one's login ends another's session.
    pub fn open(&self, principal: &Principal, granted_at_seq: u64) -> Result<(String, String), PortalError> {
        let (id, csrf) = (random_hex()?, random_hex()?);
        let account = principal.account();
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|_, session| session.is_alive());
        let of_account = || sessions.iter().filter(|(_, session)| session.principal.account() == account);
        if of_account().count() >= PORTAL_SESSIONS_PER_ACCOUNT_MAX {
            let oldest = of_account().min_by_key(|(_, session)| session.last_used).map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                sessions.remove(&oldest);
            }
        }
        if sessions.len() >= PORTAL_SESSIONS_MAX {
            return Err(PortalError::too_many_sessions(PORTAL_SESSIONS_MAX));
        }
        let now = Instant::now();
        let session =
            Session { csrf: csrf.clone(), principal: principal.clone(), granted_at_seq, opened: now, last_used: now };
        sessions.insert(id.clone(), session);
        Ok((id, csrf))
    }

    /// Sessions `account` holds now.
    pub fn count_of(&self, account: &str) -> usize {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.values().filter(|session| session.principal.account() == account).count()
    }

    pub fn close(&self, id: &str) {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }

    /// Who the request is, from its cookie or bearer token; 401 if neither
    /// holds, 429 once its budget for this minute (`requests_per_minute_max`,
    /// the land's key read at this request) is spent.
    /// `principal_of_token` names whose token one is; `grant_of` says under
    /// which grant an account holds now (`None` once it is revoked), so a
    /// session from an earlier grant is ended.
    pub fn identify(
        &self,
        headers: &HeaderMap,
        client: &str,
        principal_of_token: impl Fn(&str) -> Option<(Principal, u64)>,
        grant_of: impl Fn(&Principal) -> Option<u64>,
        requests_per_minute_max: u64,
    ) -> Result<Credential, PortalError> {
        let credential = if let Some(bearer) = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
        {
            let principal = self.bearer_principal(bearer.trim(), client, principal_of_token)?;
            Credential { via: Via::Bearer, principal }
        } else {
            let id = cookie_value(headers, SESSION_COOKIE).ok_or_else(PortalError::unauthenticated)?;
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            let session = sessions.get_mut(id).ok_or_else(PortalError::unauthenticated)?;
            if !session.is_alive() || grant_of(&session.principal) != Some(session.granted_at_seq) {
                sessions.remove(id);
                return Err(PortalError::unauthenticated());
            }
            session.last_used = Instant::now();
            let via = Via::Session { id: id.to_string(), csrf: session.csrf.clone() };
            Credential { via, principal: session.principal.clone() }
        };
        let key = match &credential.via {
            Via::Session { id, .. } => id.clone(),
            Via::Bearer => format!("bearer {}", credential.principal.account()),
        };
        self.spend(&key, requests_per_minute_max)?;
        Ok(credential)
    }

    /// Whose bearer token `token` is. A bearer token is a login on every
    /// request: a right one is let in whatever anyone failed, a wrong one
    /// slows its client (401; 429 while the client must wait).
    fn bearer_principal(
        &self,
        token: &str,
        client: &str,
        principal_of_token: impl Fn(&str) -> Option<(Principal, u64)>,
    ) -> Result<Principal, PortalError> {
        match principal_of_token(token) {
            Some((principal, _)) => Ok(principal),
            None => {
                self.throttle.token_failed(client)?;
                Err(PortalError::unauthenticated())
            }
        }
    }

    /// Who a request carrying only a bearer token is (the MCP endpoint
    /// takes no cookie), its request budget spent as the API's is.
    pub fn identify_bearer(
        &self,
        token: &str,
        client: &str,
        principal_of_token: impl Fn(&str) -> Option<(Principal, u64)>,
        requests_per_minute_max: u64,
    ) -> Result<Principal, PortalError> {
        let principal = self.bearer_principal(token, client, principal_of_token)?;
        self.spend(&format!("bearer {}", principal.account()), requests_per_minute_max)?;
        Ok(principal)
    }

    fn spend(&self, key: &str, requests_per_minute_max: u64) -> Result<(), PortalError> {
        let mut budgets = self.budgets.lock().unwrap_or_else(|p| p.into_inner());
        if budgets.len() > PORTAL_SESSIONS_MAX * 2 {
            budgets.retain(|_, budget| budget.window_start.elapsed() < Duration::from_secs(60));
        }
        let budget = budgets.entry(key.to_string()).or_insert(Budget { window_start: Instant::now(), used: 0 });
        if budget.window_start.elapsed() >= Duration::from_secs(60) {
            *budget = Budget { window_start: Instant::now(), used: 0 };
        }
        budget.used += 1;
        if budget.used > requests_per_minute_max {
            return Err(PortalError::rate_limited(requests_per_minute_max));
        }
        Ok(())
    }
}

impl Credential {
    /// A write must echo the session's CSRF token (from the form's `csrf`
    /// field or the `x-csrf-token` header); a bearer needs none.
    pub fn check_csrf(&self, headers: &HeaderMap, from_form: Option<&str>) -> Result<(), PortalError> {
        match &self.via {
            Via::Bearer => Ok(()),
            Via::Session { csrf, .. } => {
                let given = from_form.or_else(|| headers.get(CSRF_HEADER).and_then(|value| value.to_str().ok()));
                match given {
                    Some(given) if same_secret(given, csrf) => Ok(()),
                    _ => Err(PortalError::csrf()),
                }
            }
        }
    }

    pub fn csrf(&self) -> &str {
        match &self.via {
            Via::Session { csrf, .. } => csrf,
            Via::Bearer => "",
        }
    }
}

impl Session {
    /// Neither idle too long nor past its lifetime.
    fn is_alive(&self) -> bool {
        self.last_used.elapsed() < Duration::from_millis(PORTAL_SESSION_IDLE_MS)
            && self.opened.elapsed() < Duration::from_millis(PORTAL_SESSION_LIFETIME_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_values_are_found_among_others() {
        let cases = [
            ("seed_session=abc", Some("abc")),
            ("a=1; seed_session=xyz; b=2", Some("xyz")),
            ("seed_sessionx=1", None),
            ("other=1", None),
        ];
        for (header, expected) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(axum::http::header::COOKIE, header.parse().expect("a valid header value"));
            assert_eq!(cookie_value(&headers, SESSION_COOKIE), expected, "{header}");
        }
    }

    #[test]
    fn the_budget_refuses_past_its_limit() {
        let sessions = Sessions::default();
        for _ in 0..3 {
            sessions.spend("s", 3).expect("within the budget");
        }
        assert_eq!(sessions.spend("s", 3).map_err(|e| e.code), Err("rate-limited"));
        sessions.spend("other", 3).expect("budgets are per caller");
        // The limit is read at each request: raised, the same minute goes on.
        sessions.spend("s", 5).expect("within the raised budget");
    }

    #[test]
    fn a_login_past_the_account_cap_ends_only_that_accounts_oldest_session() {
        let sessions = Sessions::default();
        let someone = Principal::Person { account: "someone-else".into() };
        let (other, _) = sessions.open(&someone, 3).expect("open");
        let (first, _) = sessions.open(&Principal::Operator, 0).expect("open");
        for _ in 1..PORTAL_SESSIONS_PER_ACCOUNT_MAX {
            sessions.open(&Principal::Operator, 0).expect("open");
        }
        sessions.open(&Principal::Operator, 0).expect("one past the cap");
        assert_eq!(sessions.count_of(OPERATOR_ACCOUNT), PORTAL_SESSIONS_PER_ACCOUNT_MAX);
        let held = sessions.sessions.lock().expect("lock");
        assert!(!held.contains_key(&first), "the account's oldest session ended");
        assert!(held.contains_key(&other), "another account's session is untouched");
    }

    #[test]
    fn a_session_ends_when_its_account_is_granted_again_or_revoked() {
        let sessions = Sessions::default();
        let ann = Principal::Person { account: "ann".into() };
        let (id, _) = sessions.open(&ann, 5).expect("open");
        let mut headers = HeaderMap::new();
        headers.insert(axum::http::header::COOKIE, format!("{SESSION_COOKIE}={id}").parse().expect("a header"));
        let identify = |grant: Option<u64>| {
            sessions.identify(&headers, "127.0.0.1", |_| None, |_| grant, 100).map(|c| c.principal)
        };
        assert_eq!(identify(Some(5)).expect("the same grant"), ann);
        for (what, grant) in [("granted again", Some(6)), ("revoked", None)] {
            let sessions = Sessions::default();
            let (id, _) = sessions.open(&ann, 5).expect("open");
            let mut headers = HeaderMap::new();
            headers.insert(axum::http::header::COOKIE, format!("{SESSION_COOKIE}={id}").parse().expect("a header"));
            let refused = sessions.identify(&headers, "127.0.0.1", |_| None, |_| grant, 100).expect_err(what);
            assert_eq!(refused.status, axum::http::StatusCode::UNAUTHORIZED, "{what}");
            assert_eq!(sessions.count_of("ann"), 0, "{what}: the session is gone");
        }
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }
}
