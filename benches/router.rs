//! Lookup speed of `handwire::web::router` against `matchit` on the GitHub API
//! route set (the one matchit's own benchmark uses).
//!
//! One iteration looks up a sample path for every route, so each router
//! does the same ~130 matches per pass: static paths, one to four params,
//! and static/param siblings. Before timing, every sample is checked to
//! reach its own route in both routers.

use std::hint::black_box;

use criterion::{criterion_group, Criterion};
use handwire::web::router::{Lookup, Router};
use http::Method;

/// The GitHub API routes, in `:param` syntax.
const ROUTES: &[&str] = &[
    "/authorizations",
    "/authorizations/:p1",
    "/applications/:p1/tokens/:p2",
    "/events",
    "/repos/:p1/:p2/events",
    "/networks/:p1/:p2/events",
    "/orgs/:p1/events",
    "/users/:p1/received_events",
    "/users/:p1/received_events/public",
    "/users/:p1/events",
    "/users/:p1/events/public",
    "/users/:p1/events/orgs/:p2",
    "/feeds",
    "/notifications",
    "/repos/:p1/:p2/notifications",
    "/notifications/threads/:p1",
    "/notifications/threads/:p1/subscription",
    "/repos/:p1/:p2/stargazers",
    "/users/:p1/starred",
    "/user/starred",
    "/user/starred/:p1/:p2",
    "/repos/:p1/:p2/subscribers",
    "/users/:p1/subscriptions",
    "/user/subscriptions",
    "/repos/:p1/:p2/subscription",
    "/user/subscriptions/:p1/:p2",
    "/users/:p1/gists",
    "/gists",
    "/gists/:p1",
    "/gists/:p1/star",
    "/repos/:p1/:p2/git/blobs/:p3",
    "/repos/:p1/:p2/git/commits/:p3",
    "/repos/:p1/:p2/git/refs",
    "/repos/:p1/:p2/git/tags/:p3",
    "/repos/:p1/:p2/git/trees/:p3",
    "/issues",
    "/user/issues",
    "/orgs/:p1/issues",
    "/repos/:p1/:p2/issues",
    "/repos/:p1/:p2/issues/:p3",
    "/repos/:p1/:p2/assignees",
    "/repos/:p1/:p2/assignees/:p3",
    "/repos/:p1/:p2/issues/:p3/comments",
    "/repos/:p1/:p2/issues/:p3/events",
    "/repos/:p1/:p2/labels",
    "/repos/:p1/:p2/labels/:p3",
    "/repos/:p1/:p2/issues/:p3/labels",
    "/repos/:p1/:p2/milestones/:p3/labels",
    "/repos/:p1/:p2/milestones/",
    "/repos/:p1/:p2/milestones/:p3",
    "/emojis",
    "/gitignore/templates",
    "/gitignore/templates/:p1",
    "/meta",
    "/rate_limit",
    "/users/:p1/orgs",
    "/user/orgs",
    "/orgs/:p1",
    "/orgs/:p1/members",
    "/orgs/:p1/members:p2",
    "/orgs/:p1/public_members",
    "/orgs/:p1/public_members/:p2",
    "/orgs/:p1/teams",
    "/teams/:p1",
    "/teams/:p1/members",
    "/teams/:p1/members:p2",
    "/teams/:p1/repos",
    "/teams/:p1/repos/:p2/:p3",
    "/user/teams",
    "/repos/:p1/:p2/pulls",
    "/repos/:p1/:p2/pulls/:p3",
    "/repos/:p1/:p2/pulls/:p3/commits",
    "/repos/:p1/:p2/pulls/:p3/files",
    "/repos/:p1/:p2/pulls/:p3/merge",
    "/repos/:p1/:p2/pulls/:p3/comments",
    "/user/repos",
    "/users/:p1/repos",
    "/orgs/:p1/repos",
    "/repositories",
    "/repos/:p1/:p2",
    "/repos/:p1/:p2/contributors",
    "/repos/:p1/:p2/languages",
    "/repos/:p1/:p2/teams",
    "/repos/:p1/:p2/tags",
    "/repos/:p1/:p2/branches",
    "/repos/:p1/:p2/branches/:p3",
    "/repos/:p1/:p2/collaborators",
    "/repos/:p1/:p2/collaborators/:p3",
    "/repos/:p1/:p2/comments",
    "/repos/:p1/:p2/commits/:p3/comments",
    "/repos/:p1/:p2/commits",
    "/repos/:p1/:p2/commits/:p3",
    "/repos/:p1/:p2/readme",
    "/repos/:p1/:p2/keys",
    "/repos/:p1/:p2/keys:p3",
    "/repos/:p1/:p2/downloads",
    "/repos/:p1/:p2/downloads:p3",
    "/repos/:p1/:p2/forks",
    "/repos/:p1/:p2/hooks",
    "/repos/:p1/:p2/hooks:p3",
    "/repos/:p1/:p2/releases",
    "/repos/:p1/:p2/releases/:p3",
    "/repos/:p1/:p2/releases/:p3/assets",
    "/repos/:p1/:p2/stats/contributors",
    "/repos/:p1/:p2/stats/commit_activity",
    "/repos/:p1/:p2/stats/code_frequency",
    "/repos/:p1/:p2/stats/participation",
    "/repos/:p1/:p2/stats/punch_card",
    "/repos/:p1/:p2/statuses/:p3",
    "/search/repositories",
    "/search/code",
    "/search/issues",
    "/search/users",
    "/legacy/issues/search/:p1/:p2/:p3/:p4",
    "/legacy/repos/search/:p1",
    "/legacy/user/search/:p1",
    "/legacy/user/email/:p1",
    "/users/:p1",
    "/user",
    "/users",
    "/user/emails",
    "/users/:p1/followers",
    "/user/followers",
    "/users/:p1/following",
    "/user/following",
    "/user/following/:p1",
    "/users/:p1/following:p2",
    "/users/:p1/keys",
    "/user/keys",
    "/user/keys/:p1",
];

/// Sample values for `:p1`..`:p4`.
const VALUES: [&str; 4] = ["rust-lang", "rust", "1234", "open"];

/// Rewrites each `:name` (which runs to the next `/`) with `f(name)`.
fn rewrite_params(route: &str, f: impl Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = route;
    while let Some(start) = rest.find(':') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('/').map_or(rest.len(), |i| start + i);
        out.push_str(&f(&rest[start + 1..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn sample_value(name: &str) -> String {
    let index: usize = name[1..].parse().expect("params are named p1..p4");
    VALUES[index - 1].to_string()
}

fn compare_routers(c: &mut Criterion) {
    let samples: Vec<String> = ROUTES
        .iter()
        .map(|r| rewrite_params(r, sample_value))
        .collect();

    let mut ours = Router::new();
    let mut theirs = matchit::Router::new();
    for (i, route) in ROUTES.iter().enumerate() {
        ours.insert(Method::GET, route, i).expect("valid route");
        let braces = rewrite_params(route, |name| format!("{{{name}}}"));
        theirs.insert(braces, i).expect("valid matchit route");
    }
    for (i, path) in samples.iter().enumerate() {
        match ours.lookup(&Method::GET, path) {
            Lookup::Found(value, _) => assert_eq!(*value, i, "handwire: {path}"),
            other => panic!("handwire: {path}: {other:?}"),
        }
        let matched = theirs.at(path).expect("matchit finds every sample");
        assert_eq!(*matched.value, i, "matchit: {path}");
    }

    let mut group = c.benchmark_group("github_api_all_routes");
    group.bench_function("handwire", |b| {
        b.iter(|| {
            for path in black_box(&samples) {
                if let Lookup::Found(value, params) = ours.lookup(&Method::GET, path) {
                    black_box((value, params));
                }
            }
        })
    });
    group.bench_function("matchit", |b| {
        b.iter(|| {
            for path in black_box(&samples) {
                if let Ok(matched) = theirs.at(path) {
                    black_box(matched);
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, compare_routers);

#[path = "support/mod.rs"]
mod support;

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    support::print_ratios(&["github_api_all_routes"], "handwire", "matchit");
}
