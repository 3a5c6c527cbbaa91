//! Run a future beside the main one, polled only when it asked to be.
//!
//! A connection's task waits on hyper's connection and, beside it, on its
//! clocks and the server's shutdown. `tokio::select!` polls every branch
//! whenever the task wakes, and the task wakes for every read and write of
//! the connection: the clock and shutdown futures were polled once per
//! request for nothing, a few per cent of a keep-alive request's time.
//! [`first_of`] gives the side future a waker of its own and polls it only
//! after that waker fired (and once at the start), as
//! `futures::FutureExt::fuse` plus a per-branch waker would.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// Which of the two futures of [`first_of`] completed first.
pub enum First<M, S> {
    /// The main future.
    Main(M),
    /// The side future.
    Side(S),
}

/// Polls `main` on every wake of the task and `side` only when `side`'s
/// own waker fired since its last poll; completes with the first to
/// finish. Both stay where they are (pinned by the caller), so the loser
/// can be awaited further.
pub fn first_of<'a, M: Future, S: Future>(
    main: Pin<&'a mut M>,
    side: Pin<&'a mut S>,
) -> FirstOf<'a, M, S> {
    let flag = Arc::new(SideWake {
        // Polled once at the start, to register its interests.
        woken: AtomicBool::new(true),
        task: Mutex::new(None),
    });
    FirstOf {
        main,
        side,
        side_waker: Waker::from(flag.clone()),
        flag,
        seen: None,
    }
}

/// The future of [`first_of`].
pub struct FirstOf<'a, M, S> {
    main: Pin<&'a mut M>,
    side: Pin<&'a mut S>,
    flag: Arc<SideWake>,
    side_waker: Waker,
    /// The task's waker as last given to `flag`.
    seen: Option<Waker>,
}

impl<M: Future, S: Future> Future for FirstOf<'_, M, S> {
    type Output = First<M::Output, S::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is a reference or a handle: nothing is pinned in it.
        let this = self.get_mut();
        // The task's waker is kept for the side's wakes; it is replaced
        // only when the task's waker changes (for a tokio task, never).
        if !this.seen.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            let waker = cx.waker().clone();
            *this.flag.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(waker.clone());
            this.seen = Some(waker);
        }
        if let Poll::Ready(out) = this.main.as_mut().poll(cx) {
            return Poll::Ready(First::Main(out));
        }
        // A wake after this swap sets the flag again and wakes the task,
        // so the side is polled on the next turn: no wake is lost.
        if this.flag.woken.swap(false, Ordering::AcqRel) {
            let mut side_cx = Context::from_waker(&this.side_waker);
            if let Poll::Ready(out) = this.side.as_mut().poll(&mut side_cx) {
                return Poll::Ready(First::Side(out));
            }
        }
        Poll::Pending
    }
}

/// The side future's waker: notes the wake, then wakes the task.
struct SideWake {
    woken: AtomicBool,
    task: Mutex<Option<Waker>>,
}

impl Wake for SideWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(task) = task.as_ref() {
            task.wake_by_ref();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[tokio::test]
    async fn the_side_is_polled_only_after_its_own_waker_fired() {
        let polls = AtomicUsize::new(0);
        let open = tokio::sync::Notify::new();
        let side = async {
            let mut notified = std::pin::pin!(open.notified());
            std::future::poll_fn(|cx| {
                polls.fetch_add(1, Ordering::Relaxed);
                notified.as_mut().poll(cx)
            })
            .await;
            "side"
        };
        // The main future wakes the task 50 times before the side fires.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
        let main = async {
            while let Some(n) = rx.recv().await {
                if n == u32::MAX {
                    break;
                }
            }
            "main"
        };
        let feeder = async {
            for n in 0..50 {
                tx.send(n).unwrap();
                tokio::task::yield_now().await;
            }
            open.notify_one();
            std::future::pending::<()>().await;
        };
        let main = std::pin::pin!(main);
        let side = std::pin::pin!(side);
        let raced = tokio::select! {
            won = first_of(main, side) => won,
            _ = feeder => unreachable!(),
        };
        assert!(matches!(raced, First::Side("side")));
        // Once at the start, once after the wake.
        assert_eq!(polls.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn the_main_future_wins_when_it_completes_first() {
        let main = std::pin::pin!(async { 7 });
        let side = std::pin::pin!(std::future::pending::<()>());
        assert!(matches!(first_of(main, side).await, First::Main(7)));
    }
}
