//! A call's deadline, as the writes it makes see it.
//!
//! A time-out that drops the handler's future where it stands is right for
//! reads and wrong for a write already inside its committing transaction:
//! the row is stored, and the caller would be told DEADLINE_EXCEEDED (or
//! 504) for it. Under load the window between "taken into a transaction"
//! and "committed" is as wide as the store is slow, so such answers are not
//! rare. The rule here:
//!
//! - a write that has entered its committing transaction is answered by the
//!   commit's outcome, whatever the deadline says;
//! - a write whose deadline passed before its transaction is never stored.
//!
//! [`run`] serves a call under a deadline and gives it a task-local
//! [`current`] deadline. A write enlists itself ([`enlist`]) while it waits
//! for its commit, with the one operation the deadline needs,
//! [`Abandon::abandon`]: "leave me out of any transaction, unless I am
//! already in one". When the deadline passes, [`run`] abandons every
//! enlisted write; if all could be abandoned the call is dropped and
//! [`Expired`] returned, otherwise the call runs on to its commit's outcome.
//! The store checks the deadline too ([`current`]) when it takes a write
//! into a transaction, so a write is never taken late because a timer
//! fired late.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

tokio::task_local! {
    static CALL: Arc<Call>;
}

/// A write waiting for its commit that a deadline may give up.
pub trait Abandon: Send + Sync {
    /// Leave the write out of every transaction from now on; `true` if it
    /// will never be stored, `false` if it has already been taken into its
    /// transaction (its outcome is the commit's).
    fn abandon(&self) -> bool;
}

/// The deadline of one call and the writes it has enlisted.
struct Call {
    at: Instant,
    /// Held to the end of the call: a write that was stored stays a
    /// reason to answer with the call's own outcome.
    writes: Mutex<Writes>,
}

/// The writes a call enlisted. Most calls make one, held without a list
/// (a list is a block allocated and freed per call).
#[derive(Default)]
struct Writes {
    first: Option<Arc<dyn Abandon>>,
    more: Vec<Arc<dyn Abandon>>,
}

impl Writes {
    fn push(&mut self, write: Arc<dyn Abandon>) {
        match self.first {
            None => self.first = Some(write),
            Some(_) => self.more.push(write),
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Arc<dyn Abandon>> {
        self.first.iter().chain(&self.more)
    }
}

impl Call {
    /// Abandon every enlisted write still alive; `true` if none is stored.
    fn abandon_all(&self) -> bool {
        let writes = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        // Every one is asked, even after a refusal: the others must not be
        // taken later.
        let mut none_stored = true;
        for write in writes.iter() {
            none_stored &= write.abandon();
        }
        none_stored
    }
}

/// The call's deadline passed and nothing it wrote was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired;

/// The deadline of the call being served on this task, if it runs under
/// [`run`].
pub fn current() -> Option<Instant> {
    CALL.try_with(|call| call.at).ok()
}

/// Enlist `write` with the call being served, until the call ends: if the
/// deadline passes before, the write is abandoned, and if it cannot be (it
/// was taken into its transaction, even one committed since), the call is
/// answered by its own outcome. Outside [`run`] this does nothing.
pub fn enlist(write: &Arc<dyn Abandon>) {
    let _ = CALL.try_with(|call| {
        let mut writes = call.writes.lock().unwrap_or_else(|p| p.into_inner());
        writes.push(write.clone());
    });
}

/// Run `call` with the deadline `at`. Past it, the writes the call
/// enlisted are abandoned: if none of them is stored, the answer is
/// [`Expired`] and the caller drops the call where it stands; if one is
/// already in its transaction, the call runs to the end and its own answer
/// is returned.
///
/// The call is pinned by the caller and lent here: a future passed by value
/// to an `async fn` is moved into its state, and awaited from a nested
/// block moved again, so its whole state would be held (and copied) two and
/// three times over. Lent, it is held once, where the caller pinned it.
pub async fn run<F: Future>(at: Instant, mut call: Pin<&mut F>) -> Result<F::Output, Expired> {
    let state = Arc::new(Call {
        at,
        writes: Mutex::new(Writes::default()),
    });
    CALL.scope(state.clone(), async move {
        tokio::select! {
            // The call first, as `tokio::time::timeout` does: an answer
            // ready at the deadline (one given early, or by a time-out of
            // its own due at the same instant) wins over expiry.
            biased;
            out = call.as_mut() => return Ok(out),
            _ = tokio::time::sleep_until(at.into()) => {}
        }
        if state.abandon_all() {
            Err(Expired)
        } else {
            Ok(call.await)
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::time::Duration;

    /// 0 pending, 1 taken, 2 abandoned.
    struct Write(AtomicU8);

    impl Abandon for Write {
        fn abandon(&self) -> bool {
            let _ = self
                .0
                .compare_exchange(0, 2, Ordering::AcqRel, Ordering::Acquire);
            self.0.load(Ordering::Acquire) == 2
        }
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_millis(20)
    }

    #[tokio::test]
    async fn a_write_not_yet_taken_is_abandoned_and_the_call_expires() {
        let write: Arc<dyn Abandon> = Arc::new(Write(AtomicU8::new(0)));
        let w = write.clone();
        let call = pin!(async move {
            enlist(&w);
            std::future::pending::<()>().await
        });
        let out = run(soon(), call).await;
        assert_eq!(out, Err(Expired));
        assert!(write.abandon(), "it stays abandoned");
    }

    #[tokio::test]
    async fn a_write_taken_into_its_transaction_is_answered_by_its_outcome() {
        let write = Arc::new(Write(AtomicU8::new(0)));
        let w: Arc<dyn Abandon> = write.clone();
        let call = pin!(async move {
            enlist(&w);
            // Taken just before the deadline; the commit ends after it.
            write.0.store(1, Ordering::Release);
            tokio::time::sleep(Duration::from_millis(60)).await;
            "committed"
        });
        let out = run(soon(), call).await;
        assert_eq!(out, Ok("committed"));
    }

    #[tokio::test]
    async fn every_enlisted_write_is_abandoned_and_one_already_taken_decides() {
        let writes: Vec<Arc<Write>> = (0..3).map(|_| Arc::new(Write(AtomicU8::new(0)))).collect();
        let enlisted: Vec<Arc<dyn Abandon>> = writes.iter().map(|w| w.clone() as _).collect();
        let taken = writes[1].clone();
        let call = pin!(async move {
            for w in &enlisted {
                enlist(w);
            }
            // The second is taken; the others are still waiting.
            taken.0.store(1, Ordering::Release);
            tokio::time::sleep(Duration::from_millis(60)).await;
            "the second's outcome"
        });
        assert_eq!(run(soon(), call).await, Ok("the second's outcome"));
        let states: Vec<u8> = writes.iter().map(|w| w.0.load(Ordering::Acquire)).collect();
        assert_eq!(states, [2, 1, 2], "the first and the third were left out");
    }

    #[tokio::test]
    async fn the_deadline_is_known_inside_the_call_only() {
        let at = soon();
        assert_eq!(current(), None);
        assert_eq!(run(at, pin!(async { current() })).await, Ok(Some(at)));
        // Past already: an answer that is ready is still given (as with
        // `tokio::time::timeout`); one that is not expires at once.
        let past = Instant::now() - Duration::from_millis(1);
        assert_eq!(run(past, pin!(async { 1 })).await, Ok(1));
        let pending = pin!(std::future::pending::<()>());
        assert_eq!(run(past, pending).await, Err(Expired));
    }
}
