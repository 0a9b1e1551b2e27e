//! The login throttle: failures slow down the client that makes them, and
//! never the right credential.
//!
//! The rule (docs/portal.md, "Who may do what"):
//! - A correct token always logs in (a login form, `POST /api/v1/login`, a
//!   bearer header), whatever anyone has failed: tokens are 256-bit random
//!   values, so failures against them gain an attacker nothing, and a
//!   throttle that refused the right token would let anyone who can reach
//!   the port keep its holder out.
//! - Every failure (a wrong token or a wrong password) counts against the
//!   client that made it: its address, or its /64 for IPv6, since one host
//!   holds a whole /64. Past `LOGIN_FAILURES_FREE_PER_CLIENT` failures the
//!   client must wait before its next attempt, a wait that doubles with each
//!   further failure up to `LOGIN_DELAY_MAX_MS`; an attempt inside the wait
//!   is answered 429 with `Retry-After` (a wrong token) or not checked at all
//!   (a password). A client's failures are forgotten
//!   `LOGIN_FAILURES_FORGOTTEN_AFTER_MS` after its last one; a success does
//!   not forget them (an attacker's own good token must not buy more guesses).
//! - Wrong passwords also count against the account, from anywhere: past
//!   `PASSWORD_FAILURES_PER_ACCOUNT_MAX` in `PASSWORD_FAILURE_WINDOW_MS`,
//!   that account's password logins answer 429 until the window ends. Its
//!   token is never refused for it.
//!
//! The decisions are pure functions of the records and a given `Instant`
//! (tested with made-up instants); only the callers read the clock.

use super::error::PortalError;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures a client may make before each further attempt must wait.
pub const LOGIN_FAILURES_FREE_PER_CLIENT: u32 = 5;
/// The wait after the first failure past the free ones; each further
/// failure doubles it.
pub const LOGIN_DELAY_FIRST_MS: u64 = 1_000;
/// The longest a client is made to wait.
pub const LOGIN_DELAY_MAX_MS: u64 = 300_000;
/// A client's failures are forgotten this long after its last one.
pub const LOGIN_FAILURES_FORGOTTEN_AFTER_MS: u64 = 900_000;
/// Wrong passwords one account takes, from anywhere, within a window,
/// before its password logins wait for the window to end.
pub const PASSWORD_FAILURES_PER_ACCOUNT_MAX: u32 = 20;
/// The window an account's wrong passwords are counted in, from the first.
pub const PASSWORD_FAILURE_WINDOW_MS: u64 = 900_000;
/// Clients remembered at once: past it, forgotten ones are swept and then
/// the one whose last failure is oldest is dropped.
pub const LOGIN_CLIENTS_KEPT_MAX: usize = 65_536;
/// Accounts whose wrong passwords are remembered at once (only accounts
/// that exist are counted, so names made up by a guesser take no room).
pub const PASSWORD_ACCOUNTS_KEPT_MAX: usize = 4_096;

/// The key a client's failures are counted under: an IPv4 address whole,
/// an IPv6 address by its /64 (an IPv4-mapped IPv6 address as IPv4).
pub fn client_key(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// One client's failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClientRecord {
    failures: u32,
    last_failure: Instant,
    /// No attempt before this is checked (except a token's, which is
    /// always compared and logs in when right).
    not_before: Instant,
}

/// One account's wrong passwords in the current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AccountWindow {
    start: Instant,
    failures: u32,
}

/// The wait a client owes after its `failures`-th failure.
pub fn delay_after(failures: u32) -> Duration {
    let past_free = failures.saturating_sub(LOGIN_FAILURES_FREE_PER_CLIENT);
    if past_free == 0 {
        return Duration::ZERO;
    }
    // Past 32 doublings the wait is at its most long before (a shift that
    // far would also push the first wait's bits out of the word).
    let doublings = past_free - 1;
    let ms =
        if doublings >= 32 { LOGIN_DELAY_MAX_MS } else { (LOGIN_DELAY_FIRST_MS << doublings).min(LOGIN_DELAY_MAX_MS) };
    Duration::from_millis(ms)
}

/// Whole seconds to wait, rounded up, at least 1 (a `Retry-After`).
fn retry_after_s(wait: Duration) -> u64 {
    wait.as_millis().div_ceil(1000).max(1) as u64
}

#[derive(Default)]
pub struct LoginThrottle {
    clients: Mutex<BTreeMap<String, ClientRecord>>,
    accounts: Mutex<BTreeMap<String, AccountWindow>>,
}

impl LoginThrottle {
    /// A wrong token from `client`, counted: `Err` with 429 and its
    /// `Retry-After` when the client was still inside its wait (it tried
    /// too soon), `Ok` when the answer is a plain "wrong token".
    pub fn token_failed(&self, client: &str) -> Result<(), PortalError> {
        self.token_failed_at(client, Instant::now())
    }

    fn token_failed_at(&self, client: &str, now: Instant) -> Result<(), PortalError> {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let waiting = waiting(&clients, client, now);
        let record = count_failure(&mut clients, client, now);
        match waiting {
            Some(_) => Err(PortalError::login_throttled(retry_after_s(record.not_before - now))),
            None => Ok(()),
        }
    }

    /// Before a password is checked: 429 while the client must wait or the
    /// account's wrong passwords are over their limit.
    pub fn password_may_be_checked(&self, client: &str, account: &str) -> Result<(), PortalError> {
        self.password_may_be_checked_at(client, account, Instant::now())
    }

    fn password_may_be_checked_at(&self, client: &str, account: &str, now: Instant) -> Result<(), PortalError> {
        let clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(wait) = waiting(&clients, client, now) {
            return Err(PortalError::login_throttled(retry_after_s(wait)));
        }
        drop(clients);
        let accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        let window = Duration::from_millis(PASSWORD_FAILURE_WINDOW_MS);
        if let Some(counted) = accounts.get(account) {
            let end = counted.start + window;
            if now < end && counted.failures >= PASSWORD_FAILURES_PER_ACCOUNT_MAX {
                return Err(PortalError::password_throttled(account, retry_after_s(end - now)));
            }
        }
        Ok(())
    }

    /// A wrong password from `client`: counted against the client, and
    /// against the account when it exists.
    pub fn password_failed(&self, client: &str, account: Option<&str>) {
        self.password_failed_at(client, account, Instant::now());
    }

    fn password_failed_at(&self, client: &str, account: Option<&str>, now: Instant) {
        count_failure(&mut self.clients.lock().unwrap_or_else(|p| p.into_inner()), client, now);
        let Some(account) = account else { return };
        let mut accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        let window = Duration::from_millis(PASSWORD_FAILURE_WINDOW_MS);
        if accounts.len() >= PASSWORD_ACCOUNTS_KEPT_MAX && !accounts.contains_key(account) {
            accounts.retain(|_, counted| now < counted.start + window);
            if accounts.len() >= PASSWORD_ACCOUNTS_KEPT_MAX {
                // Every remembered account is being guessed at: the oldest
                // window is the nearest its end, so it is the one let go.
                let oldest = accounts.iter().min_by_key(|(_, counted)| counted.start).map(|(name, _)| name.clone());
                accounts.remove(&oldest.expect("the map is full"));
            }
        }
        let counted = accounts.entry(account.to_string()).or_insert(AccountWindow { start: now, failures: 0 });
        if now >= counted.start + window {
            *counted = AccountWindow { start: now, failures: 0 };
        }
        counted.failures = counted.failures.saturating_add(1);
    }

    /// How many failures `client` has on record (tests and the docs' table).
    pub fn failures_of(&self, client: &str) -> u32 {
        let clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        clients.get(client).map_or(0, |record| record.failures)
    }
}

/// The wait left for `client` at `now`, if it is inside one.
fn waiting(clients: &BTreeMap<String, ClientRecord>, client: &str, now: Instant) -> Option<Duration> {
    let record = clients.get(client).filter(|record| !forgotten(record, now))?;
    (now < record.not_before).then(|| record.not_before - now)
}

fn forgotten(record: &ClientRecord, now: Instant) -> bool {
    now.saturating_duration_since(record.last_failure) >= Duration::from_millis(LOGIN_FAILURES_FORGOTTEN_AFTER_MS)
}

/// Counts one failure of `client` at `now` and sets its next wait.
fn count_failure(clients: &mut BTreeMap<String, ClientRecord>, client: &str, now: Instant) -> ClientRecord {
    if clients.len() >= LOGIN_CLIENTS_KEPT_MAX && !clients.contains_key(client) {
        clients.retain(|_, record| !forgotten(record, now));
        if clients.len() >= LOGIN_CLIENTS_KEPT_MAX {
            let oldest = clients.iter().min_by_key(|(_, record)| record.last_failure).map(|(key, _)| key.clone());
            clients.remove(&oldest.expect("the map is full"));
        }
    }
    let fresh = ClientRecord { failures: 0, last_failure: now, not_before: now };
    let record = clients.entry(client.to_string()).or_insert(fresh);
    if forgotten(record, now) {
        *record = fresh;
    }
    record.failures = record.failures.saturating_add(1);
    record.last_failure = now;
    record.not_before = now + delay_after(record.failures);
    *record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_grows_by_doubling_after_the_free_failures_and_stops_at_its_most() {
        let check = |failures: u32, expected_ms: u64| {
            assert_eq!(delay_after(failures), Duration::from_millis(expected_ms), "after {failures} failures");
        };
        let free = LOGIN_FAILURES_FREE_PER_CLIENT;
        check(0, 0);
        check(free, 0);
        check(free + 1, LOGIN_DELAY_FIRST_MS);
        check(free + 2, 2 * LOGIN_DELAY_FIRST_MS);
        check(free + 3, 4 * LOGIN_DELAY_FIRST_MS);
        check(free + 60, LOGIN_DELAY_MAX_MS);
        check(u32::MAX, LOGIN_DELAY_MAX_MS);
    }

    #[test]
    fn client_keys_are_addresses_and_ipv6_slash_64s() {
        let check = |address: &str, expected: &str| {
            assert_eq!(client_key(address.parse().expect("an address")), expected, "{address}");
        };
        check("127.0.0.2", "127.0.0.2");
        check("::ffff:10.1.2.3", "10.1.2.3");
        check("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64");
        check("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64");
        check("::1", "0:0:0:0::/64");
    }

    #[test]
    fn wrong_tokens_make_their_own_client_wait_and_no_other() {
        let throttle = LoginThrottle::default();
        let start = Instant::now();
        let mut now = start;
        for attempt in 1..=1000u32 {
            let answer = throttle.token_failed_at("10.0.0.1", now).map_err(|refused| refused.status.as_u16());
            let expected = if attempt <= LOGIN_FAILURES_FREE_PER_CLIENT + 1 { Ok(()) } else { Err(429) };
            assert_eq!(answer, expected, "attempt {attempt}");
            now += Duration::from_millis(10);
        }
        let wait = waiting(&throttle.clients.lock().expect("lock"), "10.0.0.1", now).expect("waiting");
        assert!(wait <= Duration::from_millis(LOGIN_DELAY_MAX_MS) && wait > Duration::from_secs(200), "{wait:?}");
        assert_eq!(waiting(&throttle.clients.lock().expect("lock"), "10.0.0.2", now), None);
        throttle.password_may_be_checked_at("10.0.0.2", "ann", now).expect("another client may try");
        let refused = throttle.password_may_be_checked_at("10.0.0.1", "ann", now).expect_err("the guesser waits");
        assert_eq!((refused.status.as_u16(), refused.code), (429, "login-throttled"));
        assert!(refused.retry_after_s.is_some_and(|s| s > 200 && s <= LOGIN_DELAY_MAX_MS / 1000), "{refused:?}");
        // Past the wait the client may try again; past the memory it starts over.
        let after_wait = now + Duration::from_millis(LOGIN_DELAY_MAX_MS);
        throttle.password_may_be_checked_at("10.0.0.1", "ann", after_wait).expect("the wait is over");
        let forgotten_at = now + Duration::from_millis(LOGIN_FAILURES_FORGOTTEN_AFTER_MS);
        assert_eq!(throttle.token_failed_at("10.0.0.1", forgotten_at), Ok(()));
        assert_eq!(throttle.failures_of("10.0.0.1"), 1, "forgotten, then counted afresh");
    }

    #[test]
    fn wrong_passwords_spread_over_clients_brake_the_account_and_only_its_passwords() {
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        for client in 0..PASSWORD_FAILURES_PER_ACCOUNT_MAX {
            let client = format!("10.1.0.{client}");
            throttle.password_may_be_checked_at(&client, "ann", now).expect("within the account's limit");
            throttle.password_failed_at(&client, Some("ann"), now);
        }
        let refused = throttle.password_may_be_checked_at("10.2.0.1", "ann", now).expect_err("the account waits");
        assert_eq!((refused.status.as_u16(), refused.code), (429, "password-throttled"));
        throttle.password_may_be_checked_at("10.2.0.1", "bob", now).expect("another account does not");
        // Made-up account names are counted against the client only.
        throttle.password_failed_at("10.3.0.1", None, now);
        assert_eq!(throttle.accounts.lock().expect("lock").len(), 1);
        let window_over = now + Duration::from_millis(PASSWORD_FAILURE_WINDOW_MS);
        throttle.password_may_be_checked_at("10.2.0.1", "ann", window_over).expect("the window ended");
    }

    #[test]
    fn a_full_client_table_drops_the_oldest_client_not_the_newest() {
        let throttle = LoginThrottle::default();
        let start = Instant::now();
        for index in 0..LOGIN_CLIENTS_KEPT_MAX {
            let at = start + Duration::from_millis(index as u64);
            throttle.token_failed_at(&format!("c{index}"), at).expect("a first failure");
        }
        let later = start + Duration::from_secs(100);
        throttle.token_failed_at("newcomer", later).expect("a first failure");
        let clients = throttle.clients.lock().expect("lock");
        assert_eq!(clients.len(), LOGIN_CLIENTS_KEPT_MAX);
        assert!(!clients.contains_key("c0") && clients.contains_key("c1") && clients.contains_key("newcomer"));
    }
}
