//! A per-client sliding-window limit: at most `max` events per `window` for
//! each client address (IPv6 by /64, since one host holds a whole /64).
//! One mutex over a map of recent event times; the map is pruned inline
//! when it grows large, so a flood of addresses cannot grow it without end.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Size at which stale clients are dropped from the map.
const PRUNE_AT: usize = 10_000;

/// The limit of one kind of event.
#[derive(Debug)]
pub struct PerClient {
    max: usize,
    window: Duration,
    seen: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl PerClient {
    /// At most `max` events per `window` for each client.
    pub fn new(max: usize, window: Duration) -> PerClient {
        PerClient {
            max,
            window,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Count an event of `ip` now: `Ok` if within the limit, else how long
    /// until one is allowed again (the event is then not counted).
    pub fn admit(&self, ip: IpAddr) -> Result<(), Duration> {
        self.admit_at(ip, Instant::now())
    }

    fn admit_at(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let window = self.window;
        if seen.len() >= PRUNE_AT {
            seen.retain(|_, times| times.back().is_some_and(|t| now - *t < window));
        }
        let times = seen.entry(client_key(ip)).or_default();
        while times.front().is_some_and(|t| now - *t >= window) {
            times.pop_front();
        }
        if times.len() >= self.max {
            let oldest = times.front().copied().unwrap_or(now);
            return Err(window.saturating_sub(now - oldest));
        }
        times.push_back(now);
        Ok(())
    }
}

/// The address a limit counts under: IPv4 as is, IPv6 by its /64 (and an
/// IPv4-mapped IPv6 address as the IPv4 address).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::from([s[0], s[1], s[2], s[3], 0, 0, 0, 0])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_gets_max_events_per_window_then_waits_for_the_oldest() {
        let limit = PerClient::new(3, Duration::from_secs(60));
        let t0 = Instant::now();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for s in 0..3 {
            assert!(limit.admit_at(a, t0 + Duration::from_secs(s)).is_ok());
        }
        let wait = limit.admit_at(a, t0 + Duration::from_secs(10)).unwrap_err();
        assert_eq!(wait, Duration::from_secs(50));
        assert!(limit.admit_at(b, t0 + Duration::from_secs(10)).is_ok());
        // The oldest event leaves the window: one more is allowed.
        assert!(limit.admit_at(a, t0 + Duration::from_secs(60)).is_ok());
    }

    #[test]
    fn ipv6_clients_count_by_their_64_prefix() {
        let limit = PerClient::new(1, Duration::from_secs(60));
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(limit.admit(one).is_ok());
        assert!(limit.admit(same_64).is_err());
        assert!(limit.admit(other_64).is_ok());
    }
}
