//! A fake OAuth identity provider on loopback HTTP, to try the token-auth
//! OAuth sign-in without a real provider account. It auto-approves one user,
//! issues single-use codes, checks appid/secret, redirect_uri and PKCE, and
//! serves user info. The same code drives the token-auth tests.
//!
//! ```text
//! cargo run --example fake_oauth_provider -- [--addr 127.0.0.1:9100]
//!     [--appid demo-app] [--secret demo-secret]
//!     [--redirect-uri http://127.0.0.1:8000/auth/oauth/github/callback]
//!     [--openid octo-1] [--nickname "The Octocat"]
//! ```
//!
//! It prints the `--config` YAML to give `token-auth`. The default secret is
//! for local demos only.

#[path = "../tests/support/fake_provider.rs"]
mod fake_provider;

use fake_provider::{FakeProvider, FakeUser};
use handwire::cli::Args;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let known = [
        "addr",
        "appid",
        "secret",
        "redirect-uri",
        "openid",
        "nickname",
    ];
    let args = match Args::parse(std::env::args().skip(1), &known) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("fake_oauth_provider: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = args.get("addr").unwrap_or("127.0.0.1:9100");
    let appid = args.get("appid").unwrap_or("demo-app");
    let secret = args.get("secret").unwrap_or("demo-secret-DEVELOPMENT-ONLY");
    let redirect_uri = args
        .get("redirect-uri")
        .unwrap_or("http://127.0.0.1:8000/auth/oauth/github/callback");
    let user = FakeUser {
        openid: args.get("openid").unwrap_or("octo-1").to_string(),
        nickname: args.get("nickname").unwrap_or("The Octocat").to_string(),
        avatar: "http://127.0.0.1/octocat.png".to_string(),
    };

    let provider = FakeProvider::start(addr, appid, secret, user).await;
    provider.register_redirect_uri(redirect_uri);
    let base = provider.base();
    println!("fake OAuth provider listening on {base}");
    println!("registered redirect_uri: {redirect_uri}");
    println!("--- token-auth --config file (provider name: github) ---");
    println!(
        "oauth:\n  github:\n    appid: {appid}\n    secret: {secret}\n    auth_url: {base}/authorize\n    \
         token_url: {base}/token\n    userinfo_url: {base}/userinfo\n    redirect_uri: {redirect_uri}\n    \
         scope: profile"
    );
    println!("--- Ctrl-C to stop ---");
    let _ = tokio::signal::ctrl_c().await;
    provider.stop().await;
    ExitCode::SUCCESS
}
