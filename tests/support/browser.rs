//! A real Chromium for the browser tests, driven over the DevTools protocol
//! (CDP) through `--remote-debugging-pipe`: requests and answers are JSON
//! messages ending in a NUL byte, written to the browser's fd 3 and read
//! from its fd 4 — no WebSocket client, no debugging port to race for, and
//! the browser quits by itself when the test process (the pipe) goes away.
//!
//! One browser process per test binary ([`shared`]), with a fresh
//! `--user-data-dir` removed when the browser exits; each [`Profile`] is a
//! browser context of its own (its own cookie jar, as a fresh profile or an
//! incognito window has), so tests run side by side without sharing state.
//!
//! Debian's `chromium` (`apt-get install chromium`; `HANDWIRE_CHROMIUM`
//! names another binary). Without it a test prints SKIPPED and passes,
//! unless `HANDWIRE_BROWSER_REQUIRED=1` (set by `.ci/run`).

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, OnceCell};

/// Set to 1 where a missing browser must fail the tests (CI).
pub const REQUIRED_VAR: &str = "HANDWIRE_BROWSER_REQUIRED";
/// Longest wait for one protocol call or one page load.
const TIMEOUT: Duration = Duration::from_secs(30);

type Waiting = Mutex<HashMap<u64, oneshot::Sender<Value>>>;
type Sessions = Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>;

/// A running Chromium.
pub struct Browser {
    input: Mutex<ChildStdin>,
    next_id: AtomicU64,
    waiting: Arc<Waiting>,
    sessions: Arc<Sessions>,
    _child: Child,
}

/// The test binary's browser, started on first use; `None` (after printing
/// SKIPPED and why) when there is none and none is required.
pub async fn shared(test: &str) -> Option<Arc<Browser>> {
    static BROWSER: OnceCell<Result<Arc<Browser>, String>> = OnceCell::const_new();
    let launched = BROWSER.get_or_init(Browser::launch).await;
    match launched {
        Ok(browser) => Some(Arc::clone(browser)),
        Err(reason) if std::env::var(REQUIRED_VAR).as_deref() == Ok("1") => {
            panic!("{test}: a browser is required ({REQUIRED_VAR}=1) but {reason}")
        }
        Err(reason) => {
            // Straight to stderr: libtest captures the output of passing tests.
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
            None
        }
    }
}

fn chromium() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("HANDWIRE_CHROMIUM") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(format!(
                "HANDWIRE_CHROMIUM={} is not a file",
                path.display()
            ));
        }
        return Ok(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
        .ok_or_else(|| "chromium is not installed (apt-get install chromium)".to_string())
}

impl Browser {
    async fn launch() -> Result<Arc<Browser>, String> {
        let binary = chromium()?;
        let profile = super::temp_path("browser-profile", "");
        // The shell maps our pipes to fds 3 and 4, then removes the profile
        // once the browser has exited (whenever this process ends).
        let script = r#"dir="$1"; shift; "$@" 3<&0 4>&1 0</dev/null 1>/dev/null; rm -rf -- "$dir""#;
        let mut child = Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&profile)
            .arg(&binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let input = child.stdin.take().ok_or("no pipe to the browser")?;
        let output = child.stdout.take().ok_or("no pipe from the browser")?;
        let waiting: Arc<Waiting> = Arc::default();
        let sessions: Arc<Sessions> = Arc::default();
        let (w, s) = (Arc::clone(&waiting), Arc::clone(&sessions));
        std::thread::spawn(move || read_messages(output, &w, &s));
        let browser = Arc::new(Browser {
            input: Mutex::new(input),
            next_id: AtomicU64::new(1),
            waiting,
            sessions,
            _child: child,
        });
        let version = browser
            .call(None, "Browser.getVersion", json!({}))
            .await
            .map_err(|e| format!("{} did not answer: {e}", binary.display()))?;
        let _ = writeln!(
            std::io::stderr(),
            "browser: {} ({})",
            version["product"].as_str().unwrap_or("?"),
            binary.display()
        );
        Ok(browser)
    }

    /// Send `method` (to the page `session`, or the browser) and wait for
    /// its result; `Err` with the browser's message when it fails.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        self.send(&message)?;
        let answer = tokio::time::timeout(TIMEOUT, rx)
            .await
            .map_err(|_| format!("{method}: no answer within {TIMEOUT:?}"))?
            .map_err(|_| format!("{method}: the browser went away"))?;
        match answer.get("error") {
            Some(error) => Err(format!("{method}: {error}")),
            None => Ok(answer["result"].clone()),
        }
    }

    fn send(&self, message: &Value) -> Result<(), String> {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        lock(&self.input)
            .write_all(&bytes)
            .map_err(|e| format!("cannot write to the browser: {e}"))
    }

    /// A new, empty profile with one blank page.
    pub async fn new_profile(self: &Arc<Self>) -> Profile {
        let context = self
            .call(None, "Target.createBrowserContext", json!({}))
            .await
            .expect("new browser context")["browserContextId"]
            .clone();
        let target = self
            .call(
                None,
                "Target.createTarget",
                json!({ "url": "about:blank", "browserContextId": context }),
            )
            .await
            .expect("new page")["targetId"]
            .clone();
        let session = self
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
            )
            .await
            .expect("attach to the page")["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        let (tx, events) = mpsc::unbounded_channel();
        lock(&self.sessions).insert(session.clone(), tx);
        let profile = Profile {
            browser: Arc::clone(self),
            context,
            session,
            events: tokio::sync::Mutex::new(events),
        };
        for domain in ["Page.enable", "Network.enable"] {
            profile.call(domain, json!({})).await.expect(domain);
        }
        profile
    }
}

/// The reader: answers go to their caller, page events to their profile.
fn read_messages(mut output: impl Read, waiting: &Waiting, sessions: &Sessions) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    while let Ok(n @ 1..) = output.read(&mut chunk) {
        buffer.extend_from_slice(&chunk[..n]);
        while let Some(end) = buffer.iter().position(|b| *b == 0) {
            let message: Vec<u8> = buffer.drain(..=end).collect();
            let Ok(message) = serde_json::from_slice::<Value>(&message[..end]) else {
                continue;
            };
            if let Some(id) = message["id"].as_u64() {
                if let Some(tx) = lock(waiting).remove(&id) {
                    let _ = tx.send(message);
                }
            } else if let Some(session) = message["sessionId"].as_str() {
                if let Some(tx) = lock(sessions).get(session) {
                    let _ = tx.send(message);
                }
            }
        }
    }
    // The browser is gone: every caller still waiting learns it now.
    lock(waiting).clear();
    lock(sessions).clear();
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One browser profile (a browser context) and its page.
pub struct Profile {
    browser: Arc<Browser>,
    context: Value,
    session: String,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<Value>>,
}

/// Where a navigation ended.
#[derive(Debug)]
pub struct Page {
    /// The final URL, after every redirect.
    pub url: String,
    /// The final document's status.
    pub status: u16,
    /// The final document's response headers, names in lower case.
    pub headers: HashMap<String, String>,
    /// Every `Set-Cookie` received on the way, redirects included.
    pub set_cookies: Vec<String>,
    /// The text the page shows (a JSON answer is shown as its text).
    pub text: String,
}

impl Profile {
    async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        self.browser.call(Some(&self.session), method, params).await
    }

    /// Type `url` into the address bar: follow every redirect, wait for the
    /// page to load, and say where it ended.
    pub async fn open(&self, url: &str) -> Page {
        let mut events = self.events.lock().await;
        while events.try_recv().is_ok() {}
        let navigated = self
            .call("Page.navigate", json!({ "url": url }))
            .await
            .expect("navigate");
        if let Some(error) = navigated["errorText"].as_str() {
            panic!("opening {url}: {error}");
        }
        let (mut document, mut set_cookies) = (None, Vec::new());
        loop {
            let event = tokio::time::timeout(TIMEOUT, events.recv())
                .await
                .unwrap_or_else(|_| panic!("{url} did not load within {TIMEOUT:?}"))
                .expect("the browser went away");
            let params = &event["params"];
            match event["method"].as_str().unwrap_or_default() {
                "Network.responseReceived" if params["type"] == "Document" => {
                    document = Some(params["response"].clone());
                }
                "Network.responseReceivedExtraInfo" => {
                    let headers = params["headers"].as_object().into_iter().flatten();
                    for (name, value) in headers {
                        if name.eq_ignore_ascii_case("set-cookie") {
                            let values = value.as_str().unwrap_or_default().lines();
                            set_cookies.extend(values.map(str::to_string));
                        }
                    }
                }
                "Page.loadEventFired" => break,
                _ => {}
            }
        }
        let response = document.unwrap_or_else(|| panic!("{url}: no document response"));
        let headers = response["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.to_lowercase(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        // Chromium shows a JSON answer in a <pre>, beside its own controls.
        let shown = self
            .call(
                "Runtime.evaluate",
                json!({
                    "expression": "(document.querySelector('body > pre') || document.body).innerText",
                    "returnByValue": true,
                }),
            )
            .await
            .expect("read the page");
        Page {
            url: response["url"].as_str().unwrap_or_default().to_string(),
            status: response["status"].as_u64().unwrap_or_default() as u16,
            headers,
            set_cookies,
            text: shown["result"]["value"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        }
    }

    /// The value of the JavaScript `expression` in the page (returned by
    /// value: a string, a number, an array of them).
    pub async fn eval(&self, expression: &str) -> Value {
        let answer = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await
            .expect("evaluate in the page");
        answer["result"]["value"].clone()
    }

    /// A PNG of the whole page as it is drawn now, written to `path`.
    pub async fn screenshot(&self, path: &std::path::Path) {
        use base64::Engine as _;
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true }),
            )
            .await
            .expect("screenshot");
        let data = shot["data"].as_str().expect("png data");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64 png");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot folder");
        }
        std::fs::write(path, png).expect("write the screenshot");
    }

    /// The cookies this profile holds, as CDP describes them (`name`,
    /// `value`, `path`, `httpOnly`, `sameSite`, `expires`, ...).
    pub async fn cookies(&self) -> Vec<Value> {
        let all = self
            .browser
            .call(
                None,
                "Storage.getCookies",
                json!({ "browserContextId": self.context }),
            )
            .await
            .expect("cookies");
        all["cookies"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        lock(&self.browser.sessions).remove(&self.session);
        // Fire and forget: the answer, if any, finds nobody waiting.
        let id = self.browser.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.browser.send(&json!({
            "id": id,
            "method": "Target.disposeBrowserContext",
            "params": { "browserContextId": self.context },
        }));
    }
}
