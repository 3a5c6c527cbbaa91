//! Password hashing with bcrypt, kept off the async runtime and free of
//! timing leaks about which usernames exist.
//!
//! bcrypt at cost 12 takes a few hundred milliseconds of pure CPU on purpose.
//! Run on a reactor thread it would stall every other connection, so each hash
//! and verify goes to `spawn_blocking`, and a semaphore caps how many run at
//! once (one per core) so a flood of logins queues instead of starving the
//! machine.
//!
//! A login for a username that does not exist must cost as much as one with a
//! wrong password, or response time tells an attacker which names are real.
//! [`Passwords::verify`] therefore always runs one bcrypt verification: against
//! the stored hash when there is one, otherwise against a dummy hash made at
//! start-up with the same cost.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The bcrypt cost of every stored password (about a quarter second per
/// hash); the binary always uses it.
pub const DEFAULT_COST: u32 = 12;
/// Shortest accepted password, in characters.
pub const PASSWORD_MIN: usize = 8;
/// Longest accepted password, in bytes: bcrypt ignores everything after
/// byte 72, so longer passwords are refused instead of silently truncated.
pub const PASSWORD_MAX_BYTES: usize = 72;

/// How checking or hashing a password can fail.
#[derive(Debug)]
pub enum PasswordError {
    /// bcrypt refused the input or the cost.
    Bcrypt(bcrypt::BcryptError),
    /// The password is shorter than [`PASSWORD_MIN`] characters.
    TooShort,
    /// The password is longer than [`PASSWORD_MAX_BYTES`].
    TooLong,
    /// The blocking task did not finish.
    Task(String),
}

impl fmt::Display for PasswordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PasswordError::Bcrypt(e) => write!(f, "password hashing failed: {e}"),
            PasswordError::TooShort => {
                write!(f, "password must be at least {PASSWORD_MIN} characters")
            }
            PasswordError::TooLong => {
                write!(f, "password must be at most {PASSWORD_MAX_BYTES} bytes")
            }
            PasswordError::Task(e) => write!(f, "password hashing task failed: {e}"),
        }
    }
}

impl std::error::Error for PasswordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PasswordError::Bcrypt(e) => Some(e),
            PasswordError::TooShort | PasswordError::TooLong | PasswordError::Task(_) => None,
        }
    }
}

/// Hashes and verifies passwords at a fixed bcrypt cost.
pub struct Passwords {
    cost: u32,
    dummy_hash: Arc<str>,
    permits: Arc<Semaphore>,
    computed: Arc<AtomicU64>,
}

impl fmt::Debug for Passwords {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Passwords")
            .field("cost", &self.cost)
            .finish()
    }
}

impl Passwords {
    /// A hasher at `cost` (4..=31). Computes the dummy hash, which takes as long
    /// as one real hash: call this at start-up, not per request.
    pub fn new(cost: u32) -> Result<Passwords, PasswordError> {
        let dummy_hash = bcrypt::hash("dummy password for unknown users", cost)
            .map_err(PasswordError::Bcrypt)?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(Passwords {
            cost,
            dummy_hash: dummy_hash.into(),
            permits: Arc::new(Semaphore::new(cores)),
            computed: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The bcrypt cost in use.
    pub fn cost(&self) -> u32 {
        self.cost
    }

    /// How many bcrypt computations this hasher has run (hashes and
    /// verifications, the dummy one included). Useful as a metric, and lets
    /// tests check that unknown users cost a full verification.
    pub fn computations(&self) -> u64 {
        self.computed.load(Ordering::Relaxed)
    }

    /// Check a new password against the policy: 8 characters to 72 bytes.
    /// Fails only with [`PasswordError::TooShort`] or [`PasswordError::TooLong`].
    pub fn check_policy(password: &str) -> Result<(), PasswordError> {
        if password.chars().count() < PASSWORD_MIN {
            return Err(PasswordError::TooShort);
        }
        if password.len() > PASSWORD_MAX_BYTES {
            return Err(PasswordError::TooLong);
        }
        Ok(())
    }

    /// Hash `password` with a fresh salt (`$2b$<cost>$…`).
    pub async fn hash(&self, password: String) -> Result<String, PasswordError> {
        // bcrypt reads at most 72 bytes; refuse more rather than ignore them.
        if password.len() > PASSWORD_MAX_BYTES {
            return Err(PasswordError::TooLong);
        }
        let cost = self.cost;
        self.blocking(move || bcrypt::hash(password, cost)).await
    }

    /// Whether `password` matches `stored`. With no stored hash (unknown user)
    /// or one that is not bcrypt (an account without password), the dummy hash
    /// is verified instead and the answer is `false`: same work, same answer.
    pub async fn verify(
        &self,
        password: String,
        stored: Option<String>,
    ) -> Result<bool, PasswordError> {
        let usable = stored.filter(|h| h.starts_with("$2") && password.len() <= PASSWORD_MAX_BYTES);
        let matches_real = usable.is_some();
        let hash: Arc<str> = match usable {
            Some(h) => h.into(),
            None => Arc::clone(&self.dummy_hash),
        };
        let ok = self
            .blocking(move || {
                // Over-long input is checked against the dummy above; truncate
                // it for that run only, so the work done stays one verification.
                let input = &password.as_bytes()[..password.len().min(PASSWORD_MAX_BYTES)];
                bcrypt::verify(input, &hash)
            })
            .await?;
        Ok(ok && matches_real)
    }

    /// Run one bcrypt computation on the blocking pool, within the permit limit.
    async fn blocking<T, F>(&self, f: F) -> Result<T, PasswordError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, bcrypt::BcryptError> + Send + 'static,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| PasswordError::Task(e.to_string()))?;
        let computed = Arc::clone(&self.computed);
        tokio::task::spawn_blocking(move || {
            computed.fetch_add(1, Ordering::Relaxed);
            f()
        })
        .await
        .map_err(|e| PasswordError::Task(e.to_string()))?
        .map_err(PasswordError::Bcrypt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_COST: u32 = 4;

    #[tokio::test]
    async fn hash_uses_the_configured_cost_and_verifies() {
        let pw = Passwords::new(TEST_COST).unwrap();
        let hash = pw.hash("correct horse".into()).await.unwrap();
        assert!(hash.starts_with("$2b$04$"), "{hash}");
        assert!(pw
            .verify("correct horse".into(), Some(hash.clone()))
            .await
            .unwrap());
        assert!(!pw.verify("wrong horse".into(), Some(hash)).await.unwrap());
    }

    #[tokio::test]
    async fn unknown_user_costs_one_verification_like_a_wrong_password() {
        let pw = Passwords::new(TEST_COST).unwrap();
        let hash = pw.hash("correct horse".into()).await.unwrap();
        let before = pw.computations();
        assert!(!pw.verify("guess".into(), Some(hash)).await.unwrap());
        let wrong_password = pw.computations() - before;
        let before = pw.computations();
        assert!(!pw.verify("guess".into(), None).await.unwrap());
        let unknown_user = pw.computations() - before;
        assert_eq!((wrong_password, unknown_user), (1, 1));
    }

    #[tokio::test]
    async fn dummy_hash_has_the_same_cost_as_real_hashes() {
        let pw = Passwords::new(TEST_COST).unwrap();
        let real = pw.hash("whatever1".into()).await.unwrap();
        assert_eq!(&pw.dummy_hash[..7], &real[..7]);
    }

    #[tokio::test]
    async fn the_dummy_password_never_logs_in_an_unknown_user() {
        let pw = Passwords::new(TEST_COST).unwrap();
        let dummy = "dummy password for unknown users".to_string();
        assert!(!pw.verify(dummy, None).await.unwrap());
    }

    #[tokio::test]
    async fn accounts_without_password_never_match() {
        let pw = Passwords::new(TEST_COST).unwrap();
        let stored = Some(crate::services::token_auth::store::NO_PASSWORD.to_string());
        assert!(!pw.verify("".into(), stored.clone()).await.unwrap());
        assert!(!pw
            .verify(
                crate::services::token_auth::store::NO_PASSWORD.into(),
                stored
            )
            .await
            .unwrap());
    }

    #[tokio::test]
    async fn over_long_passwords_are_refused_not_truncated() {
        let pw = Passwords::new(TEST_COST).unwrap();
        let base = "p".repeat(72);
        let hash = pw.hash(base.clone()).await.unwrap();
        assert!(pw.verify(base.clone(), Some(hash.clone())).await.unwrap());
        assert!(!pw.verify(format!("{base}extra"), Some(hash)).await.unwrap());
        assert!(matches!(
            pw.hash(format!("{base}x")).await,
            Err(PasswordError::TooLong)
        ));
    }

    #[test]
    fn policy_is_8_characters_to_72_bytes() {
        assert!(Passwords::check_policy("1234567").is_err());
        assert!(Passwords::check_policy("12345678").is_ok());
        assert!(Passwords::check_policy(&"é".repeat(36)).is_ok());
        assert!(Passwords::check_policy(&"é".repeat(37)).is_err());
    }

    #[test]
    fn password_error_exposes_the_bcrypt_error_as_source() {
        use std::error::Error as _;
        let err = PasswordError::Bcrypt(bcrypt::BcryptError::CostNotAllowed(3));
        let source = err.source().expect("Bcrypt has a source");
        assert!(source.is::<bcrypt::BcryptError>(), "{source:?}");
        assert_eq!(
            source.to_string(),
            bcrypt::BcryptError::CostNotAllowed(3).to_string()
        );
        assert!(PasswordError::TooLong.source().is_none());
        assert!(PasswordError::Task("panicked".into()).source().is_none());
    }

    #[test]
    fn policy_errors_are_typed_and_keep_their_messages() {
        let cases = [
            ("1234567", "password must be at least 8 characters"),
            (&"é".repeat(37), "password must be at most 72 bytes"),
        ];
        for (password, want) in cases {
            let err = Passwords::check_policy(password).unwrap_err();
            assert!(
                matches!(err, PasswordError::TooShort | PasswordError::TooLong),
                "{err:?}"
            );
            assert_eq!(err.to_string(), want);
        }
    }
}
