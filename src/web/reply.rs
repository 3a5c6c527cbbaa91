//! Handlers that may fail: write `?` in a handler, and its error becomes the
//! response.
//!
//! A Gin-style handler writes every answer itself, so a handler with five
//! ways to fail has five `match` arms that each write a response and return.
//! As axum's `IntoResponse` does, a handler may instead return
//! `Result<(), E>` where the error type knows how to answer: [`fallible`]
//! turns such a function into an ordinary [`Handler`] that, on `Err(e)`,
//! lets `e` write the response and aborts the rest of the chain. Plain
//! handlers (`BoxFuture<'_, ()>`) are unchanged, and both kinds mix in one
//! chain.
//!
//! ```
//! use handwire::types::BoxFuture;
//! use handwire::web::Context;
//! use handwire::web::{fallible, Status};
//! use http::StatusCode;
//!
//! fn book(c: &mut Context) -> BoxFuture<'_, Result<(), Status>> {
//!     Box::pin(async move {
//!         let id: u32 = c
//!             .param("id")
//!             .and_then(|id| id.parse().ok())
//!             .ok_or(Status(StatusCode::BAD_REQUEST, "id must be a number"))?;
//!         c.string(StatusCode::OK, format!("book {id}"));
//!         Ok(())
//!     })
//! }
//! let _handler = fallible("book", book);
//! ```

use std::sync::Arc;

use http::StatusCode;

use crate::types::BoxFuture;
use crate::web::chain::{named, Context, Handler};

/// An error that answers the request: what a [`fallible`] handler's `Err`
/// writes before the chain is aborted.
pub trait ErrorResponse: Send {
    /// Write the response for this error to `c`.
    fn respond(self, c: &mut Context);
}

/// The simplest error answer: a status and a plain-text message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub StatusCode, pub &'static str);

impl ErrorResponse for Status {
    fn respond(self, c: &mut Context) {
        c.string(self.0, self.1);
    }
}

/// A handler called `name` from a function returning `Result<(), E>`: on
/// `Err(e)` the error writes the response ([`ErrorResponse::respond`]) and
/// the rest of the chain is aborted, as [`Context::abort`] does.
pub fn fallible<F, E>(name: &'static str, f: F) -> Handler
where
    F: for<'a> Fn(&'a mut Context) -> BoxFuture<'a, Result<(), E>> + Send + Sync + 'static,
    E: ErrorResponse + 'static,
{
    let f = Arc::new(f);
    named(name, move |c| {
        let f = Arc::clone(&f);
        Box::pin(async move {
            if let Err(e) = f(&mut *c).await {
                e.respond(c);
                c.abort();
            }
        })
    })
}

/// Longest piece of a request (a path) an error message quotes, in
/// characters: enough to recognise it, while a 60 KiB path is not sent back
/// whole (the answer would be as large as the attack).
pub const ECHO_MAX_CHARS: usize = 256;

/// `text` as an error message may quote it: whole up to [`ECHO_MAX_CHARS`]
/// characters, else its first ones, `…` and the full length in bytes.
pub fn echo(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(ECHO_MAX_CHARS) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => {
            std::borrow::Cow::Owned(format!("{}… ({} bytes)", &text[..cut], text.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::chain::handler;
    use crate::web::engine::Engine;
    use http::Request;
    use http_body_util::{BodyExt, Empty};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn parse_id(c: &mut Context) -> BoxFuture<'_, Result<(), Status>> {
        Box::pin(async move {
            let id: u32 = c
                .param("id")
                .and_then(|id| id.parse().ok())
                .ok_or(Status(StatusCode::BAD_REQUEST, "id must be a number"))?;
            c.string(StatusCode::OK, format!("book {id}"));
            Ok(())
        })
    }

    async fn get(app: &crate::web::app::App, path: &str) -> (StatusCode, String) {
        let req = Request::get(path)
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        let resp = app
            .handle(req, "127.0.0.1:1".parse::<std::net::SocketAddr>().unwrap())
            .await;
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn an_err_writes_its_response_and_aborts_the_rest_of_the_chain() {
        static AFTER: AtomicUsize = AtomicUsize::new(0);
        let mut e = Engine::bare();
        let after = handler(|c| {
            Box::pin(async move {
                AFTER.fetch_add(1, Ordering::SeqCst);
                c.next().await;
            })
        });
        e.handle(
            http::Method::GET,
            "/book/:id",
            vec![fallible("parse_id", parse_id), after],
        )
        .unwrap();
        let app = e.build();
        assert_eq!(
            get(&app, "/book/x").await,
            (StatusCode::BAD_REQUEST, "id must be a number".into())
        );
        assert_eq!(AFTER.load(Ordering::SeqCst), 0, "the chain was aborted");
        assert_eq!(
            get(&app, "/book/7").await,
            (StatusCode::OK, "book 7".into())
        );
        assert_eq!(AFTER.load(Ordering::SeqCst), 1, "Ok lets the chain go on");
    }

    #[tokio::test]
    async fn fallible_and_plain_handlers_mix_in_one_chain_and_keep_their_names() {
        let mut e = Engine::bare();
        let plain = named("plain", |c| {
            Box::pin(async move {
                c.next().await;
                c.set_header(
                    http::header::SERVER,
                    http::HeaderValue::from_static("plain ran after"),
                );
            })
        });
        e.handle(
            http::Method::GET,
            "/book/:id",
            vec![plain, fallible("parse_id", parse_id)],
        )
        .unwrap();
        assert_eq!(
            e.route_table(),
            ["GET    /book/:id --> 2 handlers (plain, parse_id)"]
        );
        let app = e.build();
        let req = Request::get("/book/x")
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        let resp = app
            .handle(req, "127.0.0.1:1".parse::<std::net::SocketAddr>().unwrap())
            .await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(resp.headers()[http::header::SERVER], "plain ran after");
    }
}
