//! The router-demo routes (those of Gin's tutorial), and nothing else.
//!
//! Every route is registered through the core [`Engine`], so this file is
//! also a catalogue of the mechanics: path and query parameters, binding with
//! required fields, a redirect, groups, a global middleware storing a value
//! (`/Global`) and a route middleware that aborts (`/index`).

use std::sync::Arc;

use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::types::BoxFuture;
use crate::web::bind::{bind, Validate};
use crate::web::chain::{handler_now, named, Context, Handler};
use crate::web::engine::Engine;
use crate::web::router::InsertError;

/// Where `/remove` redirects to when `--redirect-target` is not given.
pub const DEFAULT_REDIRECT_TARGET: &str = "https://www.example.com/";

/// Context key the global middleware stores its value under (`middle`, as in Gin's tutorial).
pub const MIDDLE_KEY: &str = "middle";

/// The value the global middleware stores under [`MIDDLE_KEY`].
pub const MIDDLE_VALUE: &str = "value set by the global middleware";

/// Settings of the demo.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// The external address `/remove` sends clients to.
    pub redirect_target: String,
    /// Whether the request logger runs (`--no-access-log` turns it off:
    /// Gin's `gin.New()` with `Recovery()` instead of `gin.Default()`).
    pub access_log: bool,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            redirect_target: DEFAULT_REDIRECT_TARGET.to_string(),
            access_log: true,
        }
    }
}

/// The login form: both fields required, from JSON, form,
/// multipart or query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Login {
    /// Required.
    pub username: String,
    /// Required.
    pub password: String,
}

impl Validate for Login {
    const NAME: &'static str = "Login";
    fn required(&self) -> Vec<(&'static str, &str)> {
        vec![("Username", &self.username), ("Password", &self.password)]
    }
}

/// Build the demo engine with every route (the table in docs/router-demo.md).
pub fn engine(opts: DemoOptions) -> Result<Engine, InsertError> {
    let mut e = Engine::with_access_log(opts.access_log);
    e.use_middleware(handler_now("global_middleware", store_middle));

    e.get("/api/gin-test", text("Hello, gin-test!"))?;
    e.get("/hello", text("Hello World!"))?;
    e.get("/book/:id", handler_now("book_handler", book))?;
    e.get("/user", handler_now("user_handler", user))?;
    e.get("/food/:name", handler_now("food_handler", food))?;
    e.get("/login", handler_now("login_handler", login))?;
    e.post("/login", handler_now("login_handler", login))?;
    let target: Arc<str> = opts.redirect_target.into();
    e.get(
        "/remove",
        handler_now("redirect_handler", move |c| {
            c.redirect(StatusCode::MOVED_PERMANENTLY, &target)
        }),
    )?;
    e.get("/users", envelope("user list"))?;
    e.get("/books", envelope("book list"))?;

    let mut v1 = e.group("/v1");
    v1.get("/login", hello_with_default("jack"))?;
    v1.get("/submit", hello_with_default("lily"))?;
    let mut v2 = e.group("/v2");
    v2.post("/login", hello_with_default("jack"))?;
    v2.post("/submit", hello_with_default("lily"))?;

    e.get("/Global", handler_now("global_handler", global))?;
    e.handle(
        Method::GET,
        "/index",
        vec![
            named("token_check", require_token),
            handler_now("index_handler", index),
        ],
    )?;
    Ok(e)
}

fn text(body: &'static str) -> Handler {
    handler_now("text_handler", move |c| c.string(StatusCode::OK, body))
}

fn envelope(msg: &'static str) -> Handler {
    handler_now("envelope_handler", move |c| {
        c.json(
            StatusCode::OK,
            &json!({ "msg": msg, "data": null, "code": "90200" }),
        )
    })
}

fn hello_with_default(default: &'static str) -> Handler {
    handler_now("hello_handler", move |c| {
        let name = c.default_query("name", default);
        c.string(StatusCode::OK, format!("hello {name}\n"));
    })
}

fn book(c: &mut Context) {
    let id = c.param("id").unwrap_or_default();
    c.string(StatusCode::OK, format!("You are reading book {id}"));
}

fn user(c: &mut Context) {
    let name = c.query("name").unwrap_or_default();
    c.string(StatusCode::OK, format!("The user name is {name}"));
}

fn food(c: &mut Context) {
    let weight = c.query("weight").unwrap_or_default();
    let name = c.param("name").unwrap_or_default();
    let text = format!("The food {name} weighs {weight}");
    c.string(StatusCode::OK, text);
}

/// 200 either way (the status is not the error channel here): `code` 90200
/// with the data, or 90400 with the validation message.
fn login(c: &mut Context) {
    let body = match bind::<Login>(c) {
        Ok(l) => json!({
            "code": 90200,
            "data": { "username": l.username, "password": l.password },
            "msg": "login success",
        }),
        Err(e) => json!({
            "code": 90400,
            "data": null,
            "msg": format!("login failed: {e}"),
        }),
    };
    c.json(StatusCode::OK, &body);
}

/// Global middleware: stores a value that `/Global` reads back (keys set
/// by a middleware are visible to the handlers after it). It never awaits
/// and has nothing to do after the rest, so it does not call `next()`: the
/// chain goes on when it returns (Gin's implicit next).
fn store_middle(c: &mut Context) {
    c.set(MIDDLE_KEY, MIDDLE_VALUE);
}

fn global(c: &mut Context) {
    let data = c.get::<&str>(MIDDLE_KEY).copied();
    c.json(
        StatusCode::OK,
        &json!({ "msg": "read the value stored by the global middleware", "data": data, "code": "90200" }),
    );
}

/// Route middleware of `/index`: no or empty `token` header
/// aborts with 403 before the handler runs; any value passes.
fn require_token(c: &mut Context) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let present = c.headers().get("token").is_some_and(|v| !v.is_empty());
        if !present {
            c.abort_with_json(
                StatusCode::FORBIDDEN,
                json!({ "msg": "access denied: header token is missing or empty" }),
            );
            return;
        }
        c.next().await;
    })
}

fn index(c: &mut Context) {
    c.json(
        StatusCode::OK,
        &json!({ "msg": "token accepted", "data": "welcome to the index page", "code": "90200" }),
    )
}
