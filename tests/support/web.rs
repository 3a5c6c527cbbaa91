//! The npm tools of `tests/web/` (Connect's gRPC-Web client with stubs
//! generated from proto/, playwright-core, swagger-ui-dist) and headless
//! Chromium. A test asks for them and skips, printing why, when node/npm
//! or Chromium is missing, unless `HANDWIRE_BROWSER_REQUIRED=1` (CI), where
//! that is a failure.

use std::path::PathBuf;
use std::process::Command;

/// The `tests/web` directory, set up, or `None` (after printing why) when
/// the test should skip. With `browser`, Chromium must be there too.
pub fn tools(test: &str, browser: bool) -> Option<PathBuf> {
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/web/setup.sh"))
        .output();
    let mut reason = match out {
        Ok(out) if out.status.success() => String::new(),
        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
        Err(e) => format!("cannot run bash: {e}"),
    };
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if reason.is_empty() && browser && !std::path::Path::new(&chromium).exists() {
        reason = format!("no Chromium at {chromium} (apt-get install -y chromium)");
    }
    if reason.is_empty() {
        return Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/web"
        )));
    }
    if std::env::var("HANDWIRE_BROWSER_REQUIRED").as_deref() == Ok("1") {
        panic!("{test}: the web tools are required (HANDWIRE_BROWSER_REQUIRED=1): {reason}");
    }
    eprintln!("SKIPPED {test}: {reason}");
    None
}

/// Runs `node <args>` in `dir` (off the async runtime); its stdout parsed
/// as JSON, or a panic with its stderr (which names the screenshot of a
/// failed browser test).
pub async fn node(dir: PathBuf, args: Vec<String>) -> serde_json::Value {
    let out = tokio::task::spawn_blocking(move || {
        Command::new("timeout")
            .arg("120")
            .arg("node")
            .args(&args)
            .current_dir(dir)
            .output()
            .expect("node runs")
    })
    .await
    .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}
