//! A fake captcha provider on loopback HTTP, to try token-auth's captcha
//! check without an hCaptcha or Turnstile account: `POST /solve` plays the
//! widget (a fresh single-use token), `POST /siteverify` verifies as the
//! real providers do. The same code drives the token-auth tests.
//!
//! ```text
//! cargo run --example fake_captcha_provider -- [--addr 127.0.0.1:9300]
//!     [--secret demo-captcha-secret]
//! curl -s -X POST 127.0.0.1:9300/solve -d 'hostname=localhost&action=login'
//! ```
//!
//! It prints the `--config` YAML to give `token-auth`. The default secret is
//! for local demos only.

#[path = "../tests/support/fake_captcha.rs"]
mod fake_captcha;

use fake_captcha::FakeCaptcha;
use handwire::cli::Args;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1), &["addr", "secret"]) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("fake_captcha_provider: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = args.get("addr").unwrap_or("127.0.0.1:9300");
    let secret = args
        .get("secret")
        .unwrap_or("demo-captcha-secret-DEVELOPMENT-ONLY");
    let provider = FakeCaptcha::start(addr, secret).await;
    println!(
        "fake captcha provider listening on http://{}",
        provider.addr
    );
    println!("--- token-auth --config file ---");
    println!(
        "captcha:\n  verify_url: {}\n  secret: {secret}\n  hostname: localhost\n  action: login",
        provider.verify_url()
    );
    println!("--- Ctrl-C to stop ---");
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}
