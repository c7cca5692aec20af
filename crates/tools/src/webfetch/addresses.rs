//! Which addresses one fetch may connect to. Once a fetch has reached a public address, it
//! reaches no loopback, private or link-local one: not by a redirect to a literal address
//! (checked with the redirect), and not by a name that resolves to one (checked here, when
//! the name is resolved, which is also when a pooled connection is made again). A name
//! that resolves only to such addresses is reached only when it looks local itself
//! (`localhost`) or a rule allows it by name; a name with public and private records
//! (the classic rebinding pair) keeps its public ones.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;

/// Looks a host name up; the system's resolver outside tests.
pub(super) type Lookup =
    Arc<dyn Fn(String) -> BoxFuture<'static, std::io::Result<Vec<SocketAddr>>> + Send + Sync>;

/// The system's resolver (`getaddrinfo`, through tokio).
pub(super) fn system_lookup() -> Lookup {
    Arc::new(|name: String| {
        Box::pin(async move { Ok(tokio::net::lookup_host((name.as_str(), 0)).await?.collect()) })
    })
}

/// One fetch's address guard: shared by its redirect check and its resolver.
pub(super) struct AddressGuard {
    /// Set once any hop of the fetch named or resolved to a public address.
    reached_public: AtomicBool,
    /// Whether the rules (or the context's grants) allow a host by name without asking.
    allowed_by_name: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl AddressGuard {
    /// The guard of a fetch of `first`; `allowed_by_name` says whether a rule allows a host.
    pub(super) fn new(
        first: &reqwest::Url,
        allowed_by_name: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Arc<Self> {
        let literal_public = first
            .host_str()
            .and_then(|h| h.trim_matches(['[', ']']).parse::<IpAddr>().ok())
            .is_some_and(|ip| !private_ip(ip));
        Arc::new(Self {
            reached_public: AtomicBool::new(literal_public),
            allowed_by_name: Box::new(allowed_by_name),
        })
    }

    /// Whether the fetch has reached a public address, so a private one is out of bounds.
    pub(super) fn reached_public(&self) -> bool {
        self.reached_public.load(Ordering::SeqCst)
    }

    /// The addresses of `name` this fetch may connect to, or why none.
    pub(super) fn admit(
        &self,
        name: &str,
        found: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, String> {
        if private_name(name) || (self.allowed_by_name)(name) {
            return Ok(found);
        }
        let (public, private): (Vec<_>, Vec<_>) =
            found.into_iter().partition(|a| !private_ip(a.ip()));
        if !public.is_empty() {
            self.reached_public.store(true, Ordering::SeqCst);
            return Ok(public);
        }
        let shown = private
            .iter()
            .map(|a| a.ip().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        Err(if shown.is_empty() {
            format!("`{name}` has no address")
        } else if self.reached_public() {
            format!(
                "`{name}` resolves to a loopback, private or link-local address ({shown}) after a public one: not reached"
            )
        } else {
            format!(
                "`{name}` resolves to a loopback, private or link-local address ({shown}): reached only when a rule allows `webfetch:{name}`"
            )
        })
    }
}

/// The resolver reqwest asks: looks up, then lets the guard choose.
pub(super) struct GuardedResolver {
    pub(super) guard: Arc<AddressGuard>,
    pub(super) lookup: Lookup,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = Arc::clone(&self.guard);
        let lookup = Arc::clone(&self.lookup);
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let found = lookup(name.clone()).await?;
            let admitted = guard.admit(&name, found)?;
            let addrs: reqwest::dns::Addrs = Box::new(admitted.into_iter());
            Ok(addrs)
        })
    }
}

/// Whether `url` names a loopback, private, link-local or unspecified address (by its
/// literal address, or `localhost`).
pub(super) fn is_private(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
    match host.parse::<IpAddr>() {
        Ok(ip) => private_ip(ip),
        Err(_) => private_name(host),
    }
}

/// `localhost` and its subdomains: names a person reads as this machine.
fn private_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Loopback, private (RFC 1918, unique local), link-local (a cloud's metadata service),
/// shared (carrier-grade NAT) or unspecified.
fn private_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => private_v4(ip),
        IpAddr::V6(ip) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_unique_local()
                || ip.is_unicast_link_local()
                || ip.to_ipv4_mapped().is_some_and(private_v4)
        }
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    let shared = ip.octets()[0] == 100 && (ip.octets()[1] & 0xc0) == 64;
    ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified() || shared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().unwrap(), 0)
    }

    fn guard(first: &str, allowed: &'static [&'static str]) -> Arc<AddressGuard> {
        AddressGuard::new(&reqwest::Url::parse(first).unwrap(), move |h| {
            allowed.contains(&h)
        })
    }

    #[test]
    fn a_name_resolving_only_to_private_addresses_needs_a_rule() {
        let g = guard("https://evil.example/", &[]);
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "169.254.169.254",
            "100.64.0.1",
            "::1",
            "fe80::1",
        ] {
            let refused = g.admit("evil.example", vec![addr(private)]).unwrap_err();
            assert!(
                refused.contains(private) && refused.contains("webfetch:evil.example"),
                "{refused}"
            );
        }
        let allowed = guard("https://wiki.corp/", &["wiki.corp"]);
        assert_eq!(
            allowed.admit("wiki.corp", vec![addr("10.0.0.5")]),
            Ok(vec![addr("10.0.0.5")])
        );
        assert_eq!(
            g.admit("localhost", vec![addr("127.0.0.1")]),
            Ok(vec![addr("127.0.0.1")])
        );
    }

    #[test]
    fn a_rebinding_pair_keeps_its_public_address_and_a_public_hop_closes_private_ones() {
        let g = guard("https://evil.example/", &[]);
        assert!(!g.reached_public());
        let mixed = vec![addr("169.254.169.254"), addr("93.184.216.34")];
        assert_eq!(
            g.admit("evil.example", mixed),
            Ok(vec![addr("93.184.216.34")])
        );
        assert!(g.reached_public());
        let refused = g
            .admit("evil.example", vec![addr("127.0.0.1")])
            .unwrap_err();
        assert!(refused.contains("after a public one"), "{refused}");
        assert!(guard("https://8.8.8.8/", &[]).reached_public());
        assert!(!guard("http://127.0.0.1/", &[]).reached_public());
    }
}
