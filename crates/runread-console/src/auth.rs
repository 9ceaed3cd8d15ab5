//! Who may use the console: the owner, proved once by a one-time login token printed on the
//! terminal, then by a session cookie; every state-changing request also by the session's CSRF
//! token. Tokens and cookies are 256 random bits; only their SHA-256 is kept, compared in
//! constant time.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How long the printed login URL stays usable (once).
pub const LOGIN_TOKEN_TTL: Duration = Duration::from_secs(15 * 60);
/// A session ends after this long without a request; each request renews it.
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// A session ends this long after login, however much it is used.
pub const SESSION_LIFETIME_MAX: Duration = Duration::from_secs(12 * 60 * 60);
/// Most sessions at once; a new login ends the oldest beyond it.
pub const SESSIONS_MAX: usize = 8;
/// Name of the session cookie.
pub const COOKIE_NAME: &str = "runread_console";
/// Bytes of randomness in a login token, a session cookie and a CSRF token.
const TOKEN_BYTES: usize = 32;

/// Why the console refused to recognise the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthRefusal {
    /// The login token is unknown, used, or expired.
    LoginRefused,
    /// No session cookie, or one that is unknown or ended.
    NotLoggedIn,
    /// A state-changing request without the session's CSRF token.
    CsrfRefused,
    /// The system's random source failed.
    Unavailable,
}

struct Login {
    hash: [u8; 32],
    issued: Instant,
}

struct Session {
    csrf: String,
    created: Instant,
    last_used: Instant,
}

/// The console's logins and sessions, in memory only: a restart logs everyone out.
pub struct Auth {
    login: Mutex<Option<Login>>,
    sessions: Mutex<HashMap<[u8; 32], Session>>,
}

/// A live session, as a request sees it.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub csrf: String,
    /// The access requests waiting for the owner, for the menu on every page: counted by the
    /// route that renders a page (one count per page), `None` until then or when the store could
    /// not count them (the menu then shows no number rather than a wrong one).
    pub pending_requests: Option<u64>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn random_token() -> Result<String, AuthRefusal> {
    let bytes =
        runread_core::random_bytes::<TOKEN_BYTES>().map_err(|_| AuthRefusal::Unavailable)?;
    Ok(hex::encode(bytes))
}

impl Auth {
    pub fn new() -> Auth {
        Auth {
            login: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// A fresh one-time login token (any earlier unused one stops working).
    pub fn issue_login(&self, now: Instant) -> Result<String, AuthRefusal> {
        let token = random_token()?;
        *self.login.lock().unwrap_or_else(PoisonError::into_inner) = Some(Login {
            hash: digest(&token),
            issued: now,
        });
        Ok(token)
    }

    /// Exchanges the login token, once, for a new session: returns its cookie value.
    pub fn log_in(&self, token: &str, now: Instant) -> Result<String, AuthRefusal> {
        {
            let mut login = self.login.lock().unwrap_or_else(PoisonError::into_inner);
            let ok = login.as_ref().is_some_and(|l| {
                bool::from(l.hash.ct_eq(&digest(token)))
                    && now.duration_since(l.issued) < LOGIN_TOKEN_TTL
            });
            if !ok {
                return Err(AuthRefusal::LoginRefused);
            }
            // Used: whatever happens next, this token logs nobody in again.
            *login = None;
        }
        let cookie = random_token()?;
        let csrf = random_token()?;
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, s| alive(s, now));
        while sessions.len() >= SESSIONS_MAX {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(k, _)| *k);
            match oldest {
                Some(k) => sessions.remove(&k),
                None => break,
            };
        }
        sessions.insert(
            digest(&cookie),
            Session {
                csrf,
                created: now,
                last_used: now,
            },
        );
        Ok(cookie)
    }

    /// The session of `cookie`, renewed; `NotLoggedIn` when there is none or it ended.
    pub fn session(&self, cookie: Option<&str>, now: Instant) -> Result<SessionView, AuthRefusal> {
        let cookie = cookie.ok_or(AuthRefusal::NotLoggedIn)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let key = digest(cookie);
        match sessions.get_mut(&key) {
            Some(s) if alive(s, now) => {
                s.last_used = now;
                Ok(SessionView {
                    csrf: s.csrf.clone(),
                    pending_requests: None,
                })
            }
            Some(_) => {
                sessions.remove(&key);
                Err(AuthRefusal::NotLoggedIn)
            }
            None => Err(AuthRefusal::NotLoggedIn),
        }
    }

    /// Ends the session of `cookie`.
    pub fn log_out(&self, cookie: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&digest(cookie));
    }
}

impl Default for Auth {
    fn default() -> Self {
        Auth::new()
    }
}

fn alive(s: &Session, now: Instant) -> bool {
    now.duration_since(s.last_used) < SESSION_IDLE_TIMEOUT
        && now.duration_since(s.created) < SESSION_LIFETIME_MAX
}

/// Whether `presented` is the session's CSRF token (constant time).
pub fn csrf_matches(session: &SessionView, presented: Option<&str>) -> bool {
    presented.is_some_and(|p| {
        p.len() == session.csrf.len() && bool::from(p.as_bytes().ct_eq(session.csrf.as_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_token_logs_in_once() {
        let auth = Auth::new();
        let now = Instant::now();
        let token = auth.issue_login(now).unwrap();
        let cookie = auth.log_in(&token, now).unwrap();
        assert!(auth.session(Some(&cookie), now).is_ok());
        assert_eq!(auth.log_in(&token, now), Err(AuthRefusal::LoginRefused));
    }

    #[test]
    fn a_wrong_or_expired_login_token_is_refused() {
        let auth = Auth::new();
        let now = Instant::now();
        let token = auth.issue_login(now).unwrap();
        assert_eq!(
            auth.log_in(&"0".repeat(64), now),
            Err(AuthRefusal::LoginRefused)
        );
        assert_eq!(
            auth.log_in(&token, now + LOGIN_TOKEN_TTL),
            Err(AuthRefusal::LoginRefused)
        );
        let again = auth.issue_login(now).unwrap();
        assert!(
            auth.log_in(&again, now + LOGIN_TOKEN_TTL - Duration::from_secs(1))
                .is_ok()
        );
    }

    #[test]
    fn a_session_ends_when_idle_and_at_its_lifetime_however_used() {
        let auth = Auth::new();
        let t0 = Instant::now();
        let cookie = auth.log_in(&auth.issue_login(t0).unwrap(), t0).unwrap();
        let just_before_idle = t0 + SESSION_IDLE_TIMEOUT - Duration::from_secs(1);
        assert!(auth.session(Some(&cookie), just_before_idle).is_ok());
        // Renewed by that use: idle is counted from it.
        let mut t = just_before_idle;
        while t + SESSION_IDLE_TIMEOUT / 2 < t0 + SESSION_LIFETIME_MAX {
            t += SESSION_IDLE_TIMEOUT / 2;
            assert!(auth.session(Some(&cookie), t).is_ok());
        }
        assert_eq!(
            auth.session(Some(&cookie), t0 + SESSION_LIFETIME_MAX).err(),
            Some(AuthRefusal::NotLoggedIn)
        );
        let idle = auth.log_in(&auth.issue_login(t0).unwrap(), t0).unwrap();
        assert_eq!(
            auth.session(Some(&idle), t0 + SESSION_IDLE_TIMEOUT).err(),
            Some(AuthRefusal::NotLoggedIn)
        );
    }

    #[test]
    fn sessions_are_bounded_the_oldest_ends_first() {
        let auth = Auth::new();
        let t0 = Instant::now();
        let cookies: Vec<String> = (0..=SESSIONS_MAX)
            .map(|i| {
                let t = t0 + Duration::from_millis(i as u64);
                auth.log_in(&auth.issue_login(t).unwrap(), t).unwrap()
            })
            .collect();
        let now = t0 + Duration::from_secs(1);
        assert!(
            auth.session(Some(&cookies[0]), now).is_err(),
            "the oldest ended"
        );
        for c in &cookies[1..] {
            assert!(auth.session(Some(c), now).is_ok());
        }
    }

    #[test]
    fn csrf_must_match_exactly() {
        let s = SessionView {
            csrf: "ab".repeat(32),
            pending_requests: None,
        };
        assert!(csrf_matches(&s, Some(&"ab".repeat(32))));
        assert!(!csrf_matches(&s, Some(&"ab".repeat(31))));
        assert!(!csrf_matches(&s, Some(&"ba".repeat(32))));
        assert!(!csrf_matches(&s, None));
    }
}
