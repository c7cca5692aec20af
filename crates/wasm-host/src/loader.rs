//! Reading and checking a guest before it is compiled: is it WebAssembly, whole, a component
//! (not a core module), of the `wonopcode:agent-loop` world, at a compatible version, with the
//! world's exports. The whole binary is parsed with `wasmparser`, so malformed input is an
//! error, never a panic.

use sha2::{Digest, Sha256};
use wasmparser::{Parser, Payload};

use crate::error::WasmError;
use crate::since_v0_2;

/// The package every guest uses.
pub const PACKAGE: &str = "wonopcode:agent-loop";
/// The newest version the host implements: what `loops new` writes and the SDKs carry.
pub const HOST_VERSION: &str = "0.3.0";
/// The newest version of each WIT line the host serves, newest first. A guest built against
/// any semver-compatible version (0.3.x, 0.2.0 to 0.2.11) loads; 0.2's `context` is served
/// by forwarding to 0.3's (`crate::since_v0_2`).
pub const SERVED_VERSIONS: [&str; 2] = [HOST_VERSION, since_v0_2::MAX_VERSION];
/// The exports a guest must have.
pub const REQUIRED_EXPORTS: [&str; 2] = ["agent-loop", "custom-tool-handler"];

/// What the header and sections say about a guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    /// The `wonopcode:agent-loop` version the guest was built against (the highest it uses).
    pub api_version: String,
    /// Top-level import names.
    pub imports: Vec<String>,
    /// Top-level export names.
    pub exports: Vec<String>,
    /// Size in bytes.
    pub size: usize,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
}

/// Reads what a guest's bytes are (a component of a WIT version this host runs, its
/// exports and imports) without running them; `origin` names them in errors (a path, or
/// "the default guest").
pub fn inspect(bytes: &[u8], origin: &str) -> Result<ModuleInfo, WasmError> {
    let origin_s = origin.to_owned();
    let TopLevel {
        is_component,
        imports,
        exports,
    } = top_level(bytes, origin)?;
    if !is_component {
        return Err(WasmError::CoreModule { origin: origin_s });
    }
    let versions: Vec<&str> = imports
        .iter()
        .chain(&exports)
        .filter_map(|name| package_version(name))
        .collect();
    if versions.is_empty() {
        return Err(WasmError::OtherWorld { origin: origin_s });
    }
    if let Some(bad) = versions.iter().find(|v| line(v).is_none()) {
        return Err(WasmError::IncompatibleVersion {
            origin: origin_s,
            found: (*bad).to_owned(),
            supported: format!(
                "{PACKAGE}@{HOST_VERSION} (guests of 0.3.x, and of {} to {}, load)",
                since_v0_2::MIN_VERSION,
                since_v0_2::MAX_VERSION
            ),
        });
    }
    let oldest = versions.iter().min_by_key(|v| semver(v));
    let newest = versions.iter().max_by_key(|v| semver(v));
    if let (Some(older), Some(newer)) = (oldest, newest)
        && line(older) != line(newer)
    {
        return Err(WasmError::MixedVersions {
            origin: origin_s,
            older: (*older).to_owned(),
            newer: (*newer).to_owned(),
        });
    }
    for required in REQUIRED_EXPORTS {
        let prefix = format!("{PACKAGE}/{required}@");
        if !exports.iter().any(|e| e.starts_with(&prefix)) {
            return Err(WasmError::MissingExport {
                origin: origin_s,
                export: format!("{PACKAGE}/{required}"),
            });
        }
    }
    let api_version = newest.map(|v| (*v).to_owned()).unwrap_or_default();
    Ok(ModuleInfo {
        api_version,
        imports,
        exports,
        size: bytes.len(),
        sha256: hex::encode(Sha256::digest(bytes)),
    })
}

/// Whether `bytes` are a component exporting the `wonopcode:hooks` handler: a hook
/// component, which `loops validate` checks as one rather than as an agent loop.
pub fn is_hook_component(bytes: &[u8]) -> bool {
    top_level(bytes, "").is_ok_and(|t| {
        t.is_component
            && t.exports
                .iter()
                .any(|e| e.starts_with("wonopcode:hooks/handler@"))
    })
}

/// The names a binary's outermost layer imports and exports.
struct TopLevel {
    is_component: bool,
    imports: Vec<String>,
    exports: Vec<String>,
}

/// Parses the whole binary (so a malformed one is an error) for its top-level names.
fn top_level(bytes: &[u8], origin: &str) -> Result<TopLevel, WasmError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(WasmError::NotWasm {
            origin: origin.to_owned(),
        });
    }
    let is_component = bytes[4..8] == [0x0d, 0x00, 0x01, 0x00];
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    let mut depth = 0usize;
    let malformed = |e: wasmparser::BinaryReaderError| WasmError::Malformed {
        origin: origin.to_owned(),
        reason: e.to_string(),
    };
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(malformed)?;
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    imports.push(import.map_err(malformed)?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    exports.push(export.map_err(malformed)?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(TopLevel {
        is_component,
        imports,
        exports,
    })
}

/// The version of a `wonopcode:agent-loop/<iface>@<version>` name.
fn package_version(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(PACKAGE)?.strip_prefix('/')?;
    Some(rest.split_once('@')?.1)
}

fn semver(version: &str) -> (u64, u64, u64) {
    let mut parts = version
        .split(['.', '-', '+'])
        .map(|p| p.parse::<u64>().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

/// The served version a guest's `version` is semver-compatible with (same major 0 and
/// minor), if any.
fn line(version: &str) -> Option<&'static str> {
    let (major, minor, _) = semver(version);
    SERVED_VERSIONS.into_iter().find(|served| {
        let (m, n, _) = semver(served);
        (m, n) == (major, minor)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checks() {
        assert!(matches!(
            inspect(b"hello world", "x"),
            Err(WasmError::NotWasm { .. })
        ));
        assert!(matches!(
            inspect(b"\0asm\x01\0\0\0", "x"),
            Err(WasmError::CoreModule { .. })
        ));
        assert!(matches!(
            inspect(b"\0asm\x0d\0\x01\0\x07", "x"),
            Err(WasmError::Malformed { .. })
        ));
    }

    #[test]
    fn versions() {
        assert_eq!(
            package_version("wonopcode:agent-loop/tools@0.2.0"),
            Some("0.2.0")
        );
        assert_eq!(package_version("wasi:io/streams@0.2.6"), None);
        assert_eq!(line("0.2.0"), Some("0.2.11"));
        assert_eq!(line("0.2.9"), Some("0.2.11"));
        assert_eq!(line("0.3.0"), Some("0.3.0"));
        assert_eq!(line("0.3.4"), Some("0.3.0"));
        for other in ["0.1.0", "1.0.0", "0.4.0"] {
            assert_eq!(line(other), None, "{other}");
        }
    }

    #[test]
    fn a_guest_of_two_wit_lines_at_once_is_refused_naming_both() {
        let mixed = wat::parse_str(
            r#"(component
                (import "wonopcode:agent-loop/system@0.2.11" (instance))
                (import "wonopcode:agent-loop/tools@0.3.0" (instance)))"#,
        )
        .unwrap();
        let err = inspect(&mixed, "mixed.wasm").unwrap_err();
        assert!(matches!(err, WasmError::MixedVersions { .. }), "{err}");
        assert!(
            err.to_string()
                .starts_with("mixed.wasm uses wonopcode:agent-loop@0.2.11 and @0.3.0 together"),
            "{err}"
        );
        // One line alone is not refused for its version (it lacks the exports).
        let old = wat::parse_str(
            r#"(component (import "wonopcode:agent-loop/system@0.2.4" (instance)))"#,
        )
        .unwrap();
        assert!(matches!(
            inspect(&old, "old.wasm"),
            Err(WasmError::MissingExport { .. })
        ));
        let newer = wat::parse_str(
            r#"(component (import "wonopcode:agent-loop/system@0.4.0" (instance)))"#,
        )
        .unwrap();
        assert!(matches!(
            inspect(&newer, "newer.wasm"),
            Err(WasmError::IncompatibleVersion { .. })
        ));
    }

    #[test]
    fn the_default_guest_validates() {
        let info = inspect(crate::DEFAULT_LOOP, "the default guest").unwrap();
        assert_eq!(info.api_version, HOST_VERSION);
        assert!(
            info.exports
                .iter()
                .any(|e| e.starts_with("wonopcode:agent-loop/agent-loop@"))
        );
    }

    #[test]
    fn truncated_components_are_malformed() {
        let half = &crate::DEFAULT_LOOP[..crate::DEFAULT_LOOP.len() / 2];
        assert!(matches!(
            inspect(half, "x"),
            Err(WasmError::Malformed { .. })
        ));
    }
}
