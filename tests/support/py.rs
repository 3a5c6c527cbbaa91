//! The Python tools of `tests/py-tools.sh` (a venv under `target/`): a test
//! asks for the venv's python and skips, printing why, when it cannot be
//! made, unless `HANDWIRE_PY_TOOLS_REQUIRED=1` (CI), where that is a failure.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The venv's python, or `None` (after printing why) when the test should
/// skip. Panics when the tools are required and missing.
pub fn python(test: &str) -> Option<PathBuf> {
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py-tools.sh"))
        .output();
    let reason = match out {
        Ok(out) if out.status.success() => {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            return Some(PathBuf::from(path));
        }
        Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
        Err(e) => format!("cannot run bash: {e}"),
    };
    if std::env::var("HANDWIRE_PY_TOOLS_REQUIRED").as_deref() == Ok("1") {
        panic!("{test}: the Python tools are required (HANDWIRE_PY_TOOLS_REQUIRED=1): {reason}");
    }
    eprintln!("skipping {test}: tests/py-tools.sh failed: {reason}");
    None
}

/// Run `script` with `python`, `input` on stdin; its stdout, or a panic
/// with its stderr.
pub fn run(python: &PathBuf, script: &str, input: &[u8]) -> String {
    let mut child = Command::new(python)
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write to python");
    let out = child.wait_with_output().expect("python ran");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}
