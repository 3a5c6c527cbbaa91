//! The greeter's per-client limits, applied to the method table as an
//! interceptor (a Kratos middleware, a gRPC interceptor): the use cases in
//! [`super::biz`] know nothing of clients or addresses.
//!
//! `limits.registrations_per_minute` bounds `UserRegister` calls per client
//! address (IPv6 by /64), HTTP and gRPC counted together since both
//! transports call the one table. Without a limit one client filled the
//! table with 21,000 users in 3 s, and every `UserList` after that failed.
//! A call counts once its request passed greeter.proto's rules (the
//! validation wraps this interceptor), whatever the use case answers next:
//! a taken name counts too, since its 409 tells a script which names exist.

use std::sync::Arc;
use std::time::Duration;

use crate::ops::peer;
use crate::ops::ratelimit::PerClient;
use crate::protocol::grpc::Code;
use crate::protocol::grpc::{Failure, UnaryMethod};

/// The Kratos reason of a registration past the limit (HTTP 429, gRPC
/// RESOURCE_EXHAUSTED).
pub const TOO_MANY_REGISTRATIONS: &str = "TOO_MANY_REGISTRATIONS";

/// `methods` with the method named `register` limited to `per_minute`
/// calls per client address a minute; `0`: no limit, `methods` as given.
pub fn limit_registrations(
    methods: Vec<(&'static str, UnaryMethod)>,
    register: &str,
    per_minute: u32,
) -> Vec<(&'static str, UnaryMethod)> {
    if per_minute == 0 {
        return methods;
    }
    let limit = Arc::new(PerClient::new(per_minute as usize, Duration::from_secs(60)));
    methods
        .into_iter()
        .map(|(name, method)| match name == register {
            true => (name, per_client(&limit, method)),
            false => (name, method),
        })
        .collect()
}

/// `method` behind `limit`, keyed by the address of the call being served
/// ([`peer::current`]); a call with no address (none outside a transport)
/// is not limited.
fn per_client(limit: &Arc<PerClient>, method: UnaryMethod) -> UnaryMethod {
    let limit = Arc::clone(limit);
    Arc::new(move |request| {
        let (limit, method) = (Arc::clone(&limit), method.clone());
        // Inside the future: the transport sets the address around it.
        Box::pin(async move {
            if let Some(Err(wait)) = peer::current().map(|ip| limit.admit(ip)) {
                return Err(Failure::new(
                    Code::ResourceExhausted,
                    TOO_MANY_REGISTRATIONS,
                    format!(
                        "too many registrations from this address, try again in {} s",
                        wait.as_secs().max(1)
                    ),
                ));
            }
            method(request).await
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::net::IpAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A method that counts its calls and answers an empty message.
    fn counting(calls: &Arc<AtomicUsize>) -> UnaryMethod {
        let calls = Arc::clone(calls);
        Arc::new(move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(Bytes::new()) })
        })
    }

    #[tokio::test]
    async fn only_the_named_method_is_limited_per_client_and_a_refusal_skips_the_use_case() {
        let (register, hello) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let table = vec![
            ("UserRegister", counting(&register)),
            ("SayHello", counting(&hello)),
        ];
        let table = limit_registrations(table, "UserRegister", 2);
        let call = |i: usize, ip: &str| {
            let ip: IpAddr = ip.parse().unwrap();
            peer::scope(ip, table[i].1(Bytes::new()))
        };
        for _ in 0..2 {
            assert!(call(0, "192.0.2.1").await.is_ok());
        }
        let refused = call(0, "192.0.2.1").await.unwrap_err();
        assert_eq!(refused.code, Code::ResourceExhausted);
        assert_eq!(refused.reason, TOO_MANY_REGISTRATIONS);
        assert_eq!(
            register.load(Ordering::SeqCst),
            2,
            "refused before the use case"
        );
        assert!(call(0, "192.0.2.2").await.is_ok(), "another client");
        for _ in 0..3 {
            assert!(
                call(1, "192.0.2.1").await.is_ok(),
                "SayHello is not limited"
            );
        }
        assert_eq!(hello.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_limit_of_zero_leaves_the_table_as_it_is() {
        let calls = Arc::new(AtomicUsize::new(0));
        let table =
            limit_registrations(vec![("UserRegister", counting(&calls))], "UserRegister", 0);
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..20 {
            assert!(peer::scope(ip, table[0].1(Bytes::new())).await.is_ok());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 20);
    }
}
