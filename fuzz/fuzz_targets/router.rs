//! Insert arbitrary routes, then look up arbitrary paths: the matcher must
//! return errors, never panic, and every route it accepted must find itself
//! when it has no wildcard.
#![no_main]
use handwire::web::router::{Lookup, Router};
use http::Method;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut lines = text.split('\n');
    let mut router = Router::new();
    let mut accepted = Vec::new();
    for (i, route) in lines.by_ref().take(16).enumerate() {
        if router.insert(Method::GET, route, i).is_ok() {
            accepted.push((route.to_string(), i));
        }
    }
    for path in lines {
        let _ = router.lookup(&Method::GET, path);
        let _ = router.lookup(&Method::POST, path);
    }
    for (route, i) in accepted {
        if !route.contains(':') && !route.contains('*') {
            match router.lookup(&Method::GET, &route) {
                Lookup::Found { value, .. } => assert_eq!(*value, i, "{route}"),
                _ => panic!("static route {route:?} does not find itself"),
            }
        }
    }
});
