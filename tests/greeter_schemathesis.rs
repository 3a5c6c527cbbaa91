//! schemathesis (PyPI) against the running greeter, driven by its own
//! `/openapi.json`: no request the schema calls valid may be refused, and
//! no answer, to valid or invalid input, may have a status, content type
//! or body the document does not declare (nor be a 5xx). Installed by
//! tests/py-tools.sh; skipped with a reason without python3/PyPI unless
//! HANDWIRE_PY_TOOLS_REQUIRED=1.

mod support;

use std::process::Command;

fn schemathesis(python: &std::path::Path, url: &str, mode: &str, checks: &str) -> (bool, String) {
    let bin = python.with_file_name("schemathesis");
    // Its reports directory (.schemathesis/) goes to a temporary one.
    let dir = support::temp_path("schemathesis", "");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = Command::new("timeout")
        .current_dir(&dir)
        .arg("300")
        .arg(bin)
        .args(["run", url, "--mode", mode, "--checks", checks])
        .args(["--max-examples", "60", "--seed", "29", "--no-color"])
        .output()
        .expect("schemathesis runs");
    let _ = std::fs::remove_dir_all(&dir);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn schemathesis_finds_no_schema_valid_request_rejected_and_no_undocumented_answer() {
    let test = "schemathesis_finds_no_schema_valid_request_rejected_and_no_undocumented_answer";
    let Some(python) = support::py::python(test) else {
        return;
    };
    let g = support::greeter::start().await;
    let url = format!("http://{}/openapi.json", g.http);
    let runs = [
        (
            "positive",
            "positive_data_acceptance,status_code_conformance,content_type_conformance,\
             response_schema_conformance,not_a_server_error",
        ),
        (
            "negative",
            "status_code_conformance,content_type_conformance,\
             response_schema_conformance,not_a_server_error",
        ),
    ];
    for (mode, checks) in runs {
        let (url, python) = (url.clone(), python.clone());
        let (ok, text) =
            tokio::task::spawn_blocking(move || schemathesis(&python, &url, mode, checks))
                .await
                .unwrap();
        assert!(ok, "schemathesis ({mode}) found issues:\n{text}");
        assert!(text.contains("No issues found"), "{mode}:\n{text}");
    }
}
