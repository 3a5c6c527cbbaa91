//! The queue between the runtime's tasks and the store thread: one wake of
//! the thread per batch, not per call.
//!
//! ```text
//! task ─push─▶ [ Mutex<Vec<Request>> ]           store thread
//! task ─push─▶ [                      ]   ◀─take all─  (parked while empty)
//!   first push since the last wake ─▶ kicker task:
//!                                       yield (the rest of this runtime turn)
//!                                       unpark the store thread, once
//! ```
//!
//! A channel that wakes its receiver on every send makes every call cost a
//! futex wake and, with the store thread and the runtime on one core, two
//! context switches: the thread wakes for one write, commits it, parks, and
//! the next call wakes it again. Here the first push of a batch asks a small
//! task on the runtime, the *kicker*, to wake the thread; the kicker first
//! yields, so every task already due in this turn of the runtime pushes its
//! write too, and then wakes the thread once for all of them. A push while a
//! wake is pending, or while the thread is busy, costs a lock and nothing
//! else. Outside a runtime (no kicker) a push wakes the thread itself.
//!
//! The thread takes what the kicker has *released*: everything pushed
//! before the kicker's last run, that is, whole runtime turns. A thread
//! that finishes a commit while a turn is still pushing waits for that turn
//! to end instead of committing its first few writes on their own: with a
//! file, where each commit is an `fsync` and the thread usually returns
//! from one in the middle of a turn, taking whatever was queued made a
//! fifth of the batches a single write, each paying an `fsync` and two
//! context switches. Outside a runtime every push is released at once.
//! It parks while nothing is released; it stops when the last [`Sender`] is
//! dropped and the queue is empty.

use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;

use tokio::sync::Notify;

/// What both ends share.
struct Shared<T> {
    queue: Mutex<Queue<T>>,
    /// The store thread, to unpark; set once, before any push.
    thread: OnceLock<Thread>,
    /// The kicker waits here; `None` when no runtime was there to run it.
    kick: Option<Notify>,
}

struct Queue<T> {
    requests: Vec<T>,
    /// How many of `requests`, from the front, the store thread may take:
    /// those pushed before the kicker last ran (all of them, without one).
    /// Fewer than all means a release has been asked of the kicker and
    /// has not happened yet.
    released: usize,
    /// Cleared when the last [`Sender`] is dropped.
    open: bool,
}

/// The callers' end; cheap to clone. The queue closes when the last clone
/// is dropped.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
    _last: Arc<CloseOnDrop<T>>,
}

/// A send to a queue whose store thread has stopped.
#[derive(Debug)]
pub struct Closed;

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            shared: self.shared.clone(),
            _last: self._last.clone(),
        }
    }
}

/// The store thread's end.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

/// Closes the queue when the last [`Sender`] goes.
struct CloseOnDrop<T>(Arc<Shared<T>>);

impl<T> Drop for CloseOnDrop<T> {
    fn drop(&mut self) {
        self.0.queue.lock().unwrap_or_else(|p| p.into_inner()).open = false;
        if let Some(kick) = &self.0.kick {
            // The kicker finds the queue closed and ends.
            kick.notify_one();
        }
        self.0.unpark();
    }
}

impl<T> Shared<T> {
    fn unpark(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }
}

/// A queue; the kicker is spawned on the current tokio runtime if there is
/// one. Call [`Receiver::binder`]'s function from the store thread's
/// spawner before the first push.
pub fn channel<T: Send + 'static>() -> (Sender<T>, Receiver<T>) {
    let runtime = tokio::runtime::Handle::try_current().ok();
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue {
            requests: Vec::new(),
            released: 0,
            open: true,
        }),
        thread: OnceLock::new(),
        kick: runtime.as_ref().map(|_| Notify::new()),
    });
    if let Some(runtime) = runtime {
        let shared = shared.clone();
        runtime.spawn(async move {
            let Some(kick) = &shared.kick else { return };
            loop {
                kick.notified().await;
                if !shared.queue.lock().unwrap_or_else(|p| p.into_inner()).open {
                    return;
                }
                // Let every task already due in this turn push its request.
                tokio::task::yield_now().await;
                // Everything pushed so far, under the lock the pushes
                // take: a push after this asks for a release of its own.
                {
                    let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
                    queue.released = queue.requests.len();
                }
                shared.unpark();
            }
        });
    }
    let sender = Sender {
        shared: shared.clone(),
        _last: Arc::new(CloseOnDrop(shared.clone())),
    };
    (sender, Receiver { shared })
}

impl<T> Sender<T> {
    /// Queues `request`; [`Closed`] if the store thread has stopped.
    pub fn send(&self, request: T) -> Result<(), Closed> {
        let first_unreleased = {
            let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
            if !queue.open {
                return Err(Closed);
            }
            // All released before this push: no release is pending, so
            // this push asks for one.
            let first = queue.released == queue.requests.len();
            queue.requests.push(request);
            if self.shared.kick.is_none() {
                queue.released = queue.requests.len();
            }
            first
        };
        match &self.shared.kick {
            Some(kick) => {
                if first_unreleased {
                    kick.notify_one();
                }
            }
            None => self.shared.unpark(),
        }
        Ok(())
    }

    /// Whether everything queued has been released to the store thread
    /// (tests wait for it before letting a held thread take the queue).
    #[cfg(test)]
    pub fn all_released(&self) -> bool {
        let queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.released == queue.requests.len()
    }
}

impl<T> Receiver<T> {
    /// Records the store thread to wake: call what this returns with the
    /// thread this receiver moved to, before the first push.
    pub fn binder(&self) -> impl FnOnce(Thread) + use<T> {
        let shared = self.shared.clone();
        move |thread| {
            let _ = shared.thread.set(thread);
        }
    }

    /// Moves everything released into `into` (empty on entry), in push
    /// order, parking while nothing is; once the queue is closed, the rest
    /// too; `false` once it is closed and drained.
    pub fn take_all(&self, into: &mut Vec<T>) -> bool {
        loop {
            {
                let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
                if !queue.open {
                    queue.released = queue.requests.len();
                }
                match std::mem::take(&mut queue.released) {
                    0 if queue.open => {}
                    0 => return false,
                    all if all == queue.requests.len() => {
                        std::mem::swap(&mut queue.requests, into);
                        return true;
                    }
                    some => {
                        into.extend(queue.requests.drain(..some));
                        return true;
                    }
                }
            }
            // A wake that came before this park makes it return at once.
            std::thread::park();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // The thread stopped (a panic, or closed): later sends fail instead
        // of queueing for nobody.
        let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.open = false;
        queue.requests.clear();
        queue.released = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Drains `rx` on a thread as the store thread does, handing each item
    /// to `done`; returns the number of batches taken.
    fn serve(
        rx: Receiver<u32>,
        done: std::sync::mpsc::Sender<u32>,
    ) -> std::thread::JoinHandle<usize> {
        let shared = rx.shared.clone();
        let handle = std::thread::spawn(move || {
            let mut batches = 0;
            let mut taken = Vec::new();
            while rx.take_all(&mut taken) {
                batches += 1;
                for n in taken.drain(..) {
                    let _ = done.send(n);
                }
            }
            batches
        });
        // Bound before the first push, as Data::open does.
        let _ = shared.thread.set(handle.thread().clone());
        handle
    }

    #[test]
    fn without_a_runtime_every_push_wakes_the_thread_and_nothing_is_lost() {
        let (tx, rx) = channel();
        assert!(tx.shared.kick.is_none());
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let handle = serve(rx, done_tx);
        for n in 0..1000 {
            tx.send(n).unwrap();
        }
        let got: Vec<u32> = (0..1000).map(|_| done_rx.recv().unwrap()).collect();
        assert_eq!(got, (0..1000).collect::<Vec<_>>(), "in order, none lost");
        drop(tx);
        assert!(handle.join().unwrap() >= 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn pushes_of_one_runtime_turn_reach_the_thread_as_one_batch() {
        let (tx, rx) = channel();
        assert!(tx.shared.kick.is_some());
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let handle = serve(rx, done_tx);
        // 64 pushes from one task on the one worker, without awaiting
        // between them: the kicker runs only after that task ends, so the
        // thread wakes once.
        let pusher = tx.clone();
        tokio::spawn(async move {
            for n in 0..64 {
                pusher.send(n).unwrap();
            }
        })
        .await
        .unwrap();
        let got = tokio::task::spawn_blocking(move || {
            (0..64).map(|_| done_rx.recv().unwrap()).collect::<Vec<_>>()
        })
        .await
        .unwrap();
        assert_eq!(got, (0..64).collect::<Vec<_>>());
        drop(tx);
        let batches = tokio::task::spawn_blocking(move || handle.join().unwrap())
            .await
            .unwrap();
        assert_eq!(batches, 1, "64 pushes in one turn are one batch");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_thread_back_from_a_commit_waits_for_the_pushing_turn_to_end() {
        let (tx, rx) = channel::<u32>();
        let shared = rx.shared.clone();
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let (batches_tx, batches_rx) = std::sync::mpsc::channel::<Vec<u32>>();
        let handle = std::thread::spawn(move || {
            let mut taken = Vec::new();
            let mut first = true;
            while rx.take_all(&mut taken) {
                if first {
                    // A slow commit: held until the gate opens.
                    first = false;
                    let _ = gate_rx.recv();
                }
                let _ = batches_tx.send(std::mem::take(&mut taken));
            }
        });
        let _ = shared.thread.set(handle.thread().clone());
        let pusher = tx.clone();
        tokio::spawn(async move { pusher.send(0).unwrap() })
            .await
            .unwrap();
        // The thread has taken the first batch and is committing it.
        while !shared.queue.lock().unwrap().requests.is_empty() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // One turn pushes four writes, the commit ends, the thread comes
        // back for more while the turn goes on, and the turn pushes four
        // more: the thread must take all eight as one batch after the
        // turn, not the first four alone.
        let pusher = tx.clone();
        tokio::spawn(async move {
            for n in 1..=4 {
                pusher.send(n).unwrap();
            }
            gate_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            for n in 5..=8 {
                pusher.send(n).unwrap();
            }
        })
        .await
        .unwrap();
        let batches = tokio::task::spawn_blocking(move || {
            let mut got = Vec::new();
            while got.iter().map(Vec::len).sum::<usize>() < 9 {
                got.push(batches_rx.recv_timeout(Duration::from_secs(10)).unwrap());
            }
            got
        })
        .await
        .unwrap();
        assert_eq!(batches, vec![vec![0], (1..=8).collect::<Vec<_>>()]);
        drop(tx);
        tokio::task::spawn_blocking(move || handle.join().unwrap())
            .await
            .unwrap();
    }

    #[test]
    fn a_send_after_the_thread_is_gone_is_refused() {
        let (tx, rx) = channel::<u32>();
        drop(rx);
        assert!(tx.send(1).is_err());
    }
}
