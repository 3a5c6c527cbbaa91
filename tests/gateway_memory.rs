//! The gateway's JSON decoding skips the values of unknown keys, at any
//! depth, without building them: a 4 MB body whose unknown key holds 2
//! million zeros costs about its own size, not 40 times it (a
//! `serde_json::Value` per zero).
//! Alone in its binary so that the peak resident set it reads is its own.

mod support;

use std::time::Duration;

use http::Method;

/// The peak resident memory of this process so far (VmHWM), in bytes.
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4_mb_body_of_2_million_zeros_under_unknown_keys_at_any_depth_costs_about_its_own_size() {
    let g = support::greeter::start_with("20s", "20s").await;
    let zeros = "0,".repeat(2_000_000);
    // The zeros under an unknown key, then inside a known key's value
    // where the field takes no such thing (a string given an object):
    // neither is built.
    let bodies = [
        (
            format!(r#"{{"username":"zeros","password":"pw","junk":[{zeros}0]}}"#),
            [http::StatusCode::OK, http::StatusCode::CONFLICT],
        ),
        (
            format!(r#"{{"username":{{"junk":{{"deeper":[{zeros}0]}}}},"password":"pw"}}"#),
            [http::StatusCode::BAD_REQUEST; 2],
        ),
    ];
    let before = peak_rss();
    for (body, statuses) in bodies {
        assert!(body.len() < 4 << 20, "{}", body.len());
        // The client's copy is made before the count; the two calls share it.
        let payload = bytes::Bytes::from(body.clone());
        let replies = futures_of_two(g.http, &payload).await;
        let grew = peak_rss().saturating_sub(before);
        eprintln!(
            "2 concurrent {} byte bodies: peak RSS grew {} MiB",
            body.len(),
            grew >> 20
        );
        for reply in replies {
            assert!(
                statuses.contains(&reply.status),
                "{} {}",
                reply.status,
                reply.text()
            );
        }
        // Two bodies, each read once and parsed in place: within 3x of them.
        assert!(
            grew < 3 * 2 * body.len(),
            "peak RSS grew {} MiB",
            grew >> 20
        );
    }
}

async fn futures_of_two(
    addr: std::net::SocketAddr,
    body: &bytes::Bytes,
) -> Vec<support::http::Reply> {
    let calls = (0..2).map(|_| {
        let body = body.clone();
        tokio::spawn(async move {
            let headers = [("content-type", "application/json")];
            tokio::time::timeout(
                Duration::from_secs(30),
                support::http::send(
                    support::http::Proto::H1,
                    addr,
                    Method::POST,
                    "/v1/users",
                    &headers,
                    body,
                ),
            )
            .await
            .expect("answered")
        })
    });
    let mut replies = Vec::new();
    for call in calls.collect::<Vec<_>>() {
        replies.push(call.await.unwrap());
    }
    replies
}
