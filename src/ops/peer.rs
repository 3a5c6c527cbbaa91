//! The client address of the call being served, for code that has no
//! request in hand (a use case behind the gRPC and HTTP transports), the
//! way Kratos' `transport.FromServerContext` gives it to a biz function.
//!
//! The transports run each call inside [`scope`]; [`current`] reads it. A
//! tokio task-local, so it follows the call's future and nothing else.

use std::future::Future;
use std::net::IpAddr;

tokio::task_local! {
    static PEER: IpAddr;
}

/// Run `call` with `ip` as its client address.
pub fn scope<F: Future>(ip: IpAddr, call: F) -> impl Future<Output = F::Output> {
    PEER.scope(ip, call)
}

/// The client address of the call being served; `None` outside a call (a
/// test calling a use case directly).
pub fn current() -> Option<IpAddr> {
    PEER.try_with(|ip| *ip).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_address_is_seen_inside_the_call_only() {
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(current(), None);
        let seen = scope(ip, async {
            tokio::task::yield_now().await;
            current()
        })
        .await;
        assert_eq!(seen, Some(ip));
        assert_eq!(current(), None);
    }
}
