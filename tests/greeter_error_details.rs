//! Errors a program reads on both transports: every gRPC error carries
//! `grpc-status-details-bin` (a `google.rpc.Status` with `ErrorInfo` — the
//! reason the HTTP body gives, the domain, the metadata — and, for invalid
//! fields, `BadRequest`), read back here with tonic, with grpcurl (through
//! reflection) and with Python's grpcio + grpcio-status.

mod support;

use std::process::Command;

use handwire::protocol::grpc::{ErrorDetails, RpcStatus};
use handwire::services::greeter::api::{UserRegisterRequest, UserRegisterResponse};
use http::Method;
use prost::Message;
use support::greeter::{call, start};

const REGISTER: &str = "/helloworld.v1.Greeter/UserRegister";

fn register(username: &str, password: &str) -> UserRegisterRequest {
    UserRegisterRequest {
        username: username.into(),
        password: password.into(),
    }
}

/// The details of a tonic error, decoded with the crate's messages.
fn details_of(status: &tonic::Status) -> (RpcStatus, ErrorDetails) {
    let mut headers = http::HeaderMap::new();
    let encoded = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        status.details(),
    );
    assert!(!status.details().is_empty(), "no details in {status:?}");
    headers.insert("grpc-status-details-bin", encoded.parse().unwrap());
    ErrorDetails::from_headers(&headers).expect("details decode")
}

#[tokio::test]
async fn duplicate_registration_over_grpc_carries_error_info_with_the_http_reason() {
    let g = start().await;
    let ok: UserRegisterResponse = support::grpc::call(g.grpc, REGISTER, register("ann", "pw"))
        .await
        .unwrap();
    assert_eq!(ok.result, "success");
    let err =
        support::grpc::call::<_, UserRegisterResponse>(g.grpc, REGISTER, register("ann", "x"))
            .await
            .unwrap_err();
    assert_eq!(err.code(), tonic::Code::AlreadyExists);
    let (status, details) = details_of(&err);
    assert_eq!(status.code, 6);
    assert_eq!(status.message, err.message());
    assert_eq!(details.reason, "USER_ALREADY_EXISTS");
    assert_eq!(details.domain, "helloworld.v1.Greeter");
    assert!(details.violations.is_empty());

    let http = call(
        g.http,
        Method::POST,
        "/v1/users",
        r#"{"username":"ann","password":"x"}"#,
    )
    .await;
    assert_eq!(http.status, 409);
    let body: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(body["reason"], details.reason.as_str());
}

#[tokio::test]
async fn a_framework_error_carries_its_code_name_as_reason() {
    let g = start().await;
    let err = support::grpc::call::<_, UserRegisterResponse>(
        g.grpc,
        "/helloworld.v1.Greeter/NoSuchMethod",
        register("a", "b"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unimplemented);
    let (_, details) = details_of(&err);
    assert_eq!(details.reason, "UNIMPLEMENTED");
    assert_eq!(details.domain, "grpc.handwire");
}

#[tokio::test]
async fn invalid_registration_over_grpc_names_the_field_in_a_bad_request() {
    let g = start().await;
    let err = support::grpc::call::<_, UserRegisterResponse>(g.grpc, REGISTER, register("", "pw"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    let (_, details) = details_of(&err);
    assert_eq!(details.reason, "USERNAME_EMPTY");
    let fields: Vec<_> = details
        .violations
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, ["username"]);
}

/// grpcurl, with the types resolved through the server's reflection,
/// prints the details of a duplicate registration.
#[tokio::test]
async fn grpcurl_prints_error_info_of_a_duplicate_registration() {
    let Some(grpcurl) = grpcurl() else { return };
    let g = start().await;
    let addr = g.grpc.to_string();
    let run = move |data: &'static str| {
        let (grpcurl, addr) = (grpcurl.clone(), addr.clone());
        tokio::task::spawn_blocking(move || {
            Command::new(grpcurl)
                .args([
                    "-plaintext",
                    "-d",
                    data,
                    &addr,
                    "helloworld.v1.Greeter/UserRegister",
                ])
                .output()
                .expect("grpcurl runs")
        })
    };
    let first = run(r#"{"username":"bob","password":"pw"}"#).await.unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = run(r#"{"username":"bob","password":"pw"}"#).await.unwrap();
    let text = String::from_utf8_lossy(&second.stderr).into_owned()
        + &String::from_utf8_lossy(&second.stdout);
    assert!(text.contains("Code: AlreadyExists"), "{text}");
    assert!(text.contains("Details:"), "{text}");
    assert!(
        text.contains("type.googleapis.com/google.rpc.ErrorInfo"),
        "{text}"
    );
    assert!(text.contains(r#""reason":"USER_ALREADY_EXISTS""#), "{text}");
    assert!(
        text.contains(r#""domain":"helloworld.v1.Greeter""#),
        "{text}"
    );
}

fn grpcurl() -> Option<String> {
    if let Ok(path) = std::env::var("GRPCURL") {
        return Some(path);
    }
    if Command::new("grpcurl").arg("-version").output().is_ok() {
        return Some("grpcurl".into());
    }
    if std::env::var("REQUIRE_GRPCURL").as_deref() == Ok("1") {
        panic!("grpcurl is required (REQUIRE_GRPCURL=1) but not found; set GRPCURL");
    }
    eprintln!("skipping: grpcurl not found (set GRPCURL or run tests/install-grpcurl.sh)");
    None
}

/// Python's grpcio reads the same details with `grpc_status.rpc_status`.
#[tokio::test]
async fn grpcio_reads_error_info_and_bad_request_with_grpc_status() {
    let Some(python) =
        support::py::python("grpcio_reads_error_info_and_bad_request_with_grpc_status")
    else {
        return;
    };
    let g = start().await;
    let script = r#"
import json, sys, grpc
from grpc_status import rpc_status
from google.rpc import error_details_pb2
addr, hexes = sys.stdin.read().split()
channel = grpc.insecure_channel(addr)
call = channel.unary_unary("/helloworld.v1.Greeter/UserRegister")
out = []
for h in hexes.split(","):
    try:
        call(bytes.fromhex(h), timeout=5)
        out.append({"ok": True})
    except grpc.RpcError as e:
        status = rpc_status.from_call(e)
        row = {"code": e.code().name, "message": status.message}
        for d in status.details:
            if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo(); d.Unpack(info)
                row["reason"], row["domain"] = info.reason, info.domain
            if d.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest(); d.Unpack(bad)
                row["fields"] = [v.field for v in bad.field_violations]
        out.append(row)
print(json.dumps(out))
"#;
    let hex = |r: UserRegisterRequest| -> String {
        r.encode_to_vec()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let input = format!(
        "{} {},{},{}",
        g.grpc,
        hex(register("cy", "pw")),
        hex(register("cy", "pw")),
        hex(register("", "pw"))
    );
    let python2 = python.clone();
    let out =
        tokio::task::spawn_blocking(move || support::py::run(&python2, script, input.as_bytes()))
            .await
            .unwrap();
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["ok"], true, "{rows}");
    assert_eq!(rows[1]["code"], "ALREADY_EXISTS", "{rows}");
    assert_eq!(rows[1]["reason"], "USER_ALREADY_EXISTS", "{rows}");
    assert_eq!(rows[1]["domain"], "helloworld.v1.Greeter", "{rows}");
    assert_eq!(rows[2]["code"], "INVALID_ARGUMENT", "{rows}");
    assert_eq!(rows[2]["reason"], "USERNAME_EMPTY", "{rows}");
    assert_eq!(rows[2]["fields"], serde_json::json!(["username"]), "{rows}");
}
