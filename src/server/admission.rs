//! Admission to a service's scarce work (the greeter's database reads),
//! process-wide, with connections that hold nothing served first.
//!
//! The per-connection window ([`crate::server::governor::HANDLERS_AT_START`])
//! keeps one connection from queueing much work; it cannot keep a thousand
//! connections from queueing two reads each. Those reads ran in arrival
//! order on the store's one thread and their results (a thousand users
//! each) waited in memory for handlers to turn them into pages: 2,000 of
//! them held ~200 MB, and a new client's read waited behind all of them.
//!
//! So the work a service marks scarce takes a place of an [`Admission`]
//! ([`hold`]), and the request keeps it until its handler has ended (its
//! page built, whatever it awaited in between): at most `limit` requests
//! at once hold results of that work. Waiting requests come in two classes, set
//! by the server for each request ([`scope`]): [`Class::First`] for a
//! request whose connection had nothing running and no answer left
//! untaken when it got its turn (an HTTP/1.1 client, a new connection, a
//! client that reads), and is still not [`Busy`] when it asks and when a
//! place is handed out; [`Class::Second`] otherwise. A freed place goes to
//! the oldest first-class waiter, else the oldest second-class one: the
//! queued work of connections that ask for many answers at once never
//! stands ahead of a client that asks for one. This is Envoy's overload
//! idea (act where the load comes from) applied to one queue; nothing is
//! refused here, only ordered and bounded.
//!
//! The class is looked at again because a connection's first request is
//! quiet when it gets its turn, before its connection's other streams are
//! read: a thousand new zero-window connections, each opening 100 streams,
//! put a first-class read each ahead of a new client's, which waited
//! 50–70 ms for its place and, in a few cases a run, over a second.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The order a request's scarce work is admitted in; see the module page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Its connection held nothing else: admitted before [`Class::Second`].
    First,
    /// Its connection had other requests running or answers untaken.
    Second,
}

/// What admission asks of the connection of a waiting request.
pub trait Busy: Send + Sync {
    /// Whether the connection has other requests in flight than the one
    /// asking: its work then waits in [`Class::Second`].
    fn busy(&self) -> bool;
}

/// One request's class, its connection and the places it holds until it
/// ends.
struct Request {
    class: Class,
    conn: Option<Arc<dyn Busy>>,
    places: RefCell<Vec<Place>>,
}

/// A request waiting for a place: where its place is sent, and its
/// connection, looked at again before a first-class place is handed to it.
struct Waiter {
    tx: oneshot::Sender<()>,
    conn: Option<Arc<dyn Busy>>,
}

impl fmt::Debug for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiter").finish_non_exhaustive()
    }
}

fn is_busy(conn: &Option<Arc<dyn Busy>>) -> bool {
    conn.as_ref().is_some_and(|c| c.busy())
}

tokio::task_local! {
    static REQUEST: Request;
}

/// Runs `fut` (one request's handler) with `class` for the admissions it
/// asks for, demoted to [`Class::Second`] while `conn` is [`Busy`]; the
/// places it takes are given back when `fut` ends.
pub fn scope<F: Future>(
    class: Class,
    conn: Option<Arc<dyn Busy>>,
    fut: F,
) -> impl Future<Output = F::Output> {
    let request = Request {
        class,
        conn,
        places: RefCell::new(Vec::new()),
    };
    // The task-local's own future, not an `async fn` around it: that would
    // hold `fut` twice.
    REQUEST.scope(request, fut)
}

/// The class of the request being served now ([`Class::First`] outside
/// one) and its connection.
fn current() -> (Class, Option<Arc<dyn Busy>>) {
    REQUEST
        .try_with(|r| {
            let class = match r.class {
                Class::First if is_busy(&r.conn) => Class::Second,
                class => class,
            };
            (class, r.conn.clone())
        })
        .unwrap_or((Class::First, None))
}

/// Take a place of `admission` for the request being served, unless it
/// holds one already; it is kept until the request's handler ends. `Some`
/// outside a request ([`scope`]): the caller holds the place itself.
pub async fn hold(admission: &Arc<Admission>) -> Option<Place> {
    let held = REQUEST.try_with(|r| {
        r.places
            .borrow()
            .iter()
            .any(|p| Arc::ptr_eq(&p.admission, admission))
    });
    match held {
        Ok(true) => None,
        Ok(false) => {
            let place = admission.enter().await;
            // The await kept the scope, so this finds the same request.
            let _ = REQUEST.try_with(|r| r.places.borrow_mut().push(place));
            None
        }
        Err(_) => Some(admission.enter().await),
    }
}

/// At most `limit` places at once, handed out first-class first.
#[derive(Debug)]
pub struct Admission {
    limit: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    taken: usize,
    first: VecDeque<Waiter>,
    second: VecDeque<Waiter>,
}

/// A place of an [`Admission`]; given back (or handed to the next waiter)
/// when dropped.
#[derive(Debug)]
pub struct Place {
    admission: Arc<Admission>,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.admission.give_back();
    }
}

/// Whether this process made an [`Admission`]: until it does, no request
/// needs a class, and the server runs none in a [`scope`] (a task-local
/// entered on every poll of a request cost about 140 instructions of a
/// `GET` on a service without scarce work).
static IN_USE: AtomicBool = AtomicBool::new(false);

/// Whether any [`Admission`] exists in this process, so that a request's
/// class can matter: the server's test before it enters a [`scope`]. A
/// request that began before the first one was made takes its place
/// outside a scope, first class, as [`hold`] does.
pub fn in_use() -> bool {
    IN_USE.load(Ordering::Relaxed)
}

impl Admission {
    /// An admission of `limit` places (at least 1).
    pub fn new(limit: usize) -> Arc<Admission> {
        IN_USE.store(true, Ordering::Relaxed);
        Arc::new(Admission {
            limit: limit.max(1),
            state: Mutex::new(State::default()),
        })
    }

    /// Wait for a place, in the class of the request being served.
    pub async fn enter(self: &Arc<Self>) -> Place {
        let (class, conn) = current();
        self.enter_as(class, conn).await
    }

    /// Wait for a place in `class`; a first-class waiter whose `conn` has
    /// become busy when a place is handed out waits on in the second.
    pub async fn enter_as(self: &Arc<Self>, class: Class, conn: Option<Arc<dyn Busy>>) -> Place {
        let rx = {
            let mut st = self.lock();
            if st.taken < self.limit {
                st.taken += 1;
                return Place {
                    admission: Arc::clone(self),
                };
            }
            let (tx, rx) = oneshot::channel();
            let waiter = Waiter { tx, conn };
            match class {
                Class::First => st.first.push_back(waiter),
                Class::Second => st.second.push_back(waiter),
            }
            rx
        };
        // A waiter dropped before its turn leaves a closed sender behind,
        // which `give_back` skips; one dropped after a place was sent to it
        // gives the place back (`Handed`).
        let mut handed = Handed {
            rx: Some(rx),
            admission: self,
        };
        if let Some(rx) = handed.rx.as_mut() {
            // An error would mean the sender was dropped unsent, which
            // `give_back` never does to a waiter still listening.
            let _ = rx.await;
        }
        handed.rx = None;
        Place {
            admission: Arc::clone(self),
        }
    }

    /// Places taken now.
    #[cfg(test)]
    fn taken(&self) -> usize {
        self.lock().taken
    }

    /// A place is free: hand it to the oldest live waiter, first class
    /// first, or count it free.
    fn give_back(&self) {
        let mut st = self.lock();
        loop {
            let next = match st.first.pop_front() {
                // Each waiter moves down at most once.
                Some(waiter) if is_busy(&waiter.conn) => {
                    st.second.push_back(waiter);
                    continue;
                }
                Some(waiter) => waiter,
                None => match st.second.pop_front() {
                    Some(waiter) => waiter,
                    None => {
                        st.taken -= 1;
                        return;
                    }
                },
            };
            if next.tx.send(()).is_ok() {
                return;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A waiter's receiver: if the waiter's future is dropped after a place
/// was sent to it but before it took it, the place is given back.
struct Handed<'a> {
    rx: Option<oneshot::Receiver<()>>,
    admission: &'a Admission,
}

impl Drop for Handed<'_> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.admission.give_back();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_freed_place_goes_to_the_oldest_first_class_waiter_before_any_second_class_one() {
        let adm = Admission::new(1);
        let held = adm.enter_as(Class::First, None).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (name, class) in [
            ("second-1", Class::Second),
            ("first-1", Class::First),
            ("second-2", Class::Second),
            ("first-2", Class::First),
        ] {
            let (adm, order) = (Arc::clone(&adm), Arc::clone(&order));
            tasks.push(tokio::spawn(async move {
                let _place = adm.enter_as(class, None).await;
                order.lock().unwrap().push(name);
            }));
            // Queued in this order.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["first-1", "first-2", "second-1", "second-2"]
        );
        assert_eq!(adm.taken(), 0);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_loses_no_place() {
        let adm = Admission::new(1);
        let held = adm.enter_as(Class::First, None).await;
        // Gives up while queued.
        let gone =
            tokio::time::timeout(Duration::from_millis(10), adm.enter_as(Class::First, None)).await;
        assert!(gone.is_err());
        drop(held);
        assert_eq!(adm.taken(), 0, "the dropped waiter is skipped");
        let again = adm.enter_as(Class::Second, None).await;
        assert_eq!(adm.taken(), 1);
        drop(again);
        assert_eq!(adm.taken(), 0);
    }

    #[tokio::test]
    async fn a_request_holds_its_place_until_its_handler_ends_and_takes_one_only() {
        let adm = Admission::new(2);
        scope(Class::First, None, async {
            assert!(hold(&adm).await.is_none(), "kept by the request");
            assert!(hold(&adm).await.is_none());
            assert_eq!(adm.taken(), 1, "one place a request");
        })
        .await;
        assert_eq!(adm.taken(), 0, "given back when the handler ended");
        let outside = hold(&adm).await;
        assert!(outside.is_some());
        assert_eq!(adm.taken(), 1);
    }

    #[tokio::test]
    async fn the_class_is_the_one_the_request_runs_in() {
        assert_eq!(current().0, Class::First);
        assert_eq!(
            scope(Class::Second, None, async { current().0 }).await,
            Class::Second
        );
    }

    /// A connection whose busyness the test sets.
    struct Conn(std::sync::atomic::AtomicBool);

    impl Busy for Conn {
        fn busy(&self) -> bool {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[tokio::test]
    async fn a_first_class_request_of_a_connection_that_became_busy_waits_in_the_second_class() {
        let quiet = Arc::new(Conn(false.into()));
        let busy = Arc::new(Conn(true.into()));
        // Busy when it asks: second class at once.
        let class = scope(Class::First, Some(busy.clone() as Arc<dyn Busy>), async {
            current().0
        })
        .await;
        assert_eq!(class, Class::Second);

        let adm = Admission::new(1);
        let held = adm.enter_as(Class::First, None).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (name, class, conn) in [
            ("second", Class::Second, None),
            ("first, then busy", Class::First, Some(quiet.clone())),
            ("first", Class::First, None),
        ] {
            let (adm, order) = (Arc::clone(&adm), Arc::clone(&order));
            let conn = conn.map(|c| c as Arc<dyn Busy>);
            tasks.push(tokio::spawn(async move {
                let _place = adm.enter_as(class, conn).await;
                order.lock().unwrap().push(name);
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Its other streams arrived while it waited.
        quiet.0.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["first", "second", "first, then busy"]
        );
        assert_eq!(adm.taken(), 0);
    }
}
