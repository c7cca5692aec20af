//! `oci://HOST/REPOSITORY[:TAG][@sha256:DIGEST]`: where a module is published. The host is
//! always written out (no registry is assumed), and a reference with a digest names exactly
//! one set of bytes, which is what a run's journal keeps.

use std::fmt;

use oci_client::Reference;

use crate::OciError;

/// The scheme that marks a module reference.
const SCHEME: &str = "oci://";

/// A module's place in a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    reference: Reference,
}

impl OciRef {
    /// Whether `text` is meant as a module reference (it starts with `oci://`).
    pub fn is_reference(text: &str) -> bool {
        text.starts_with(SCHEME)
    }

    /// Parses `oci://HOST/REPOSITORY[:TAG][@sha256:DIGEST]`; a reference with neither tag nor
    /// digest means the tag `latest`.
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let bad = |why: &str| OciError::Reference {
            reference: text.to_owned(),
            why: why.to_owned(),
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("it does not start with oci://"))?;
        let (host, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("it names no repository after the host"))?;
        // A registry's host, as the distribution grammar tells one from a path: with a dot,
        // a port, or `localhost`. Without one, another tool would assume Docker Hub.
        if host.is_empty()
            || !(host.contains('.') || host.contains(':') || host == "localhost")
            || path.is_empty()
        {
            return Err(bad(
                "it names no registry host (a host has a dot or a port, or is localhost)",
            ));
        }
        let reference: Reference = rest.parse().map_err(|e| bad(&format!("{e}")))?;
        if reference.registry() != host {
            return Err(bad("its host is not a registry's"));
        }
        if let Some(digest) = reference.digest()
            && !is_sha256(digest)
        {
            return Err(bad("its digest is not sha256: and 64 lowercase hex digits"));
        }
        Ok(Self { reference })
    }

    /// The registry's host (and port).
    pub fn registry(&self) -> &str {
        self.reference.registry()
    }

    /// The repository within it.
    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The manifest's digest, when the reference pins one.
    pub fn digest(&self) -> Option<&str> {
        self.reference.digest()
    }

    /// The same module pinned to the manifest `digest` (the tag dropped).
    pub fn pinned(&self, digest: &str) -> Self {
        Self {
            reference: Reference::with_digest(
                self.registry().to_owned(),
                self.repository().to_owned(),
                digest.to_owned(),
            ),
        }
    }

    /// Whether the registry is on this machine (`localhost`, `127.0.0.1`, `[::1]`): the only
    /// registries spoken to over plain HTTP, as a registry run for testing serves.
    pub fn is_loopback(&self) -> bool {
        let host = self.registry();
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host,
        };
        matches!(name, "localhost" | "127.0.0.1" | "[::1]")
    }

    /// The registry client's form of the reference.
    pub(crate) fn client_reference(&self) -> &Reference {
        &self.reference
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry(), self.repository())?;
        if let Some(tag) = self.reference.tag() {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = self.digest() {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// `sha256:` and 64 lowercase hex digits.
pub(crate) fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_reference_names_its_host_repository_and_tag_or_digest() {
        let r = OciRef::parse("oci://ghcr.io/acme/loops/planner:1.2").unwrap();
        assert_eq!(r.registry(), "ghcr.io");
        assert_eq!(r.repository(), "acme/loops/planner");
        assert_eq!(r.to_string(), "oci://ghcr.io/acme/loops/planner:1.2");
        assert!(!r.is_loopback());
        let pinned = r.pinned(DIGEST);
        assert_eq!(
            pinned.to_string(),
            format!("oci://ghcr.io/acme/loops/planner@{DIGEST}")
        );
        assert_eq!(OciRef::parse(&pinned.to_string()).unwrap(), pinned);
        let local = OciRef::parse("oci://127.0.0.1:5000/loops/planner").unwrap();
        assert!(local.is_loopback());
        assert!(
            OciRef::parse("oci://localhost/loops/x:t")
                .unwrap()
                .is_loopback()
        );
    }

    #[test]
    fn what_is_not_a_module_reference_is_refused_in_one_line() {
        for (text, why) in [
            ("ghcr.io/acme/x:1", "does not start with oci://"),
            ("oci://ghcr.io", "names no repository"),
            ("oci://acme/x:1", "names no registry host"),
            ("oci://ghcr.io/", "names no registry host"),
            ("oci://ghcr.io/acme/x@sha256:abc", ""),
            ("oci://ghcr.io/Acme/x:1", ""),
        ] {
            let e = OciRef::parse(text).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(text), "{text}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
