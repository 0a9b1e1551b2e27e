//! Who is asking: a session cookie (after logging in with the operator's
//! token) or the token itself as a bearer (the CLI and tests). Sessions carry
//! a CSRF token that every cookie-authenticated write must echo; each caller
//! has a per-minute request budget.

use super::error::PortalError;
use axum::http::HeaderMap;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "seed_session";
/// The header a script sends its session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Most sessions kept at once (the oldest is dropped beyond it).
pub const PORTAL_SESSIONS_MAX: usize = 1024;
/// How long a session lives without use.
pub const PORTAL_SESSION_IDLE_MS: u64 = 12 * 60 * 60 * 1000;

#[derive(Debug, Clone)]
pub struct Session {
    pub csrf: String,
    last_used: Instant,
}

/// How a request proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A session cookie: writes must carry the session's CSRF token.
    Session { id: String, csrf: String },
    /// `Authorization: Bearer <operator token>`: no cookie, so no CSRF.
    Bearer,
}

struct Budget {
    window_start: Instant,
    used: u64,
}

pub struct Sessions {
    sessions: Mutex<BTreeMap<String, Session>>,
    budgets: Mutex<BTreeMap<String, Budget>>,
    requests_per_minute_max: u64,
}

fn random_hex() -> Result<String, PortalError> {
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
    pub fn new(requests_per_minute_max: u64) -> Sessions {
        Sessions {
            sessions: Mutex::new(BTreeMap::new()),
            budgets: Mutex::new(BTreeMap::new()),
            requests_per_minute_max,
        }
    }

    /// A new session: (id, CSRF token).
    pub fn open(&self) -> Result<(String, String), PortalError> {
        let (id, csrf) = (random_hex()?, random_hex()?);
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let idle = Duration::from_millis(PORTAL_SESSION_IDLE_MS);
        sessions.retain(|_, session| session.last_used.elapsed() < idle);
        if sessions.len() >= PORTAL_SESSIONS_MAX {
            if let Some(oldest) = sessions.iter().min_by_key(|(_, session)| session.last_used).map(|(id, _)| id.clone())
            {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(id.clone(), Session { csrf: csrf.clone(), last_used: Instant::now() });
        Ok((id, csrf))
    }

    pub fn close(&self, id: &str) {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }

    /// Who the request is, from its cookie or bearer token; 401 if neither
    /// holds, 429 once its budget for this minute is spent.
    pub fn identify(
        &self,
        headers: &HeaderMap,
        token_matches: impl Fn(&str) -> bool,
    ) -> Result<Credential, PortalError> {
        let credential = if let Some(bearer) = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
        {
            if !token_matches(bearer.trim()) {
                return Err(PortalError::unauthenticated());
            }
            Credential::Bearer
        } else {
            let id = cookie_value(headers, SESSION_COOKIE).ok_or_else(PortalError::unauthenticated)?;
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            let session = sessions.get_mut(id).ok_or_else(PortalError::unauthenticated)?;
            if session.last_used.elapsed() >= Duration::from_millis(PORTAL_SESSION_IDLE_MS) {
                sessions.remove(id);
                return Err(PortalError::unauthenticated());
            }
            session.last_used = Instant::now();
            Credential::Session { id: id.to_string(), csrf: session.csrf.clone() }
        };
        let key = match &credential {
            Credential::Session { id, .. } => id.clone(),
            Credential::Bearer => "bearer".to_string(),
        };
        self.spend(&key)?;
        Ok(credential)
    }

    fn spend(&self, key: &str) -> Result<(), PortalError> {
        let mut budgets = self.budgets.lock().unwrap_or_else(|p| p.into_inner());
        if budgets.len() > PORTAL_SESSIONS_MAX * 2 {
            budgets.retain(|_, budget| budget.window_start.elapsed() < Duration::from_secs(60));
        }
        let budget = budgets.entry(key.to_string()).or_insert(Budget { window_start: Instant::now(), used: 0 });
        if budget.window_start.elapsed() >= Duration::from_secs(60) {
            *budget = Budget { window_start: Instant::now(), used: 0 };
        }
        budget.used += 1;
        if budget.used > self.requests_per_minute_max {
            return Err(PortalError::rate_limited(self.requests_per_minute_max));
        }
        Ok(())
    }
}

impl Credential {
    /// A write must echo the session's CSRF token (from the form's `csrf`
    /// field or the `x-csrf-token` header); a bearer needs none.
    pub fn check_csrf(&self, headers: &HeaderMap, from_form: Option<&str>) -> Result<(), PortalError> {
        match self {
            Credential::Bearer => Ok(()),
            Credential::Session { csrf, .. } => {
                let given = from_form.or_else(|| headers.get(CSRF_HEADER).and_then(|value| value.to_str().ok()));
                match given {
                    Some(given) if same_secret(given, csrf) => Ok(()),
                    _ => Err(PortalError::csrf()),
                }
            }
        }
    }

    pub fn csrf(&self) -> &str {
        match self {
            Credential::Session { csrf, .. } => csrf,
            Credential::Bearer => "",
        }
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
        let sessions = Sessions::new(3);
        for _ in 0..3 {
            sessions.spend("s").expect("within the budget");
        }
        assert_eq!(sessions.spend("s").map_err(|e| e.code), Err("rate-limited"));
        sessions.spend("other").expect("budgets are per caller");
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }
}
