//! Panic isolation: the text of a panic payload and a future adapter that
//! catches a panic raised while it is polled. A `catching` handler of the
//! chain (recovery is one) and the gRPC server's per-call isolation use it.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

/// The text of a panic payload (`panic!("...")` gives `&str` or `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-string panic payload"
    }
}

/// A future adapter that catches a panic raised while polling the inner
/// future (the futures crate's `catch_unwind`, in ten lines). The one panic
/// isolation of the crate: recovery uses it for the HTTP chain, the gRPC
/// server for each call.
pub struct CatchUnwind<F>(pub F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_message_reads_str_and_string_payloads() {
        let a: Box<dyn Any + Send> = Box::new("boom");
        let b: Box<dyn Any + Send> = Box::new(String::from("bang"));
        let c: Box<dyn Any + Send> = Box::new(7u8);
        assert_eq!(panic_message(a.as_ref()), "boom");
        assert_eq!(panic_message(b.as_ref()), "bang");
        assert_eq!(panic_message(c.as_ref()), "non-string panic payload");
    }
}
