//! Reading and checking a guest before it is compiled: is it WebAssembly, whole, a component
//! (not a core module), of the `wonopcode:agent-loop` world, at a compatible version, with the
//! world's exports. The whole binary is parsed with `wasmparser`, so malformed input is an
//! error, never a panic.

use sha2::{Digest, Sha256};
use wasmparser::{Parser, Payload};

use crate::error::WasmError;

/// The package every guest uses.
pub const PACKAGE: &str = "wonopcode:agent-loop";
/// The version the host implements; guests of any compatible version (0.2.x) load.
pub const HOST_VERSION: &str = "0.2.11";
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
    if let Some(bad) = versions.iter().find(|v| !compatible(v)) {
        return Err(WasmError::IncompatibleVersion {
            origin: origin_s,
            found: (*bad).to_owned(),
            supported: format!("{PACKAGE}@{HOST_VERSION} (guests of 0.2.x load)"),
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
    let api_version = versions
        .iter()
        .max_by_key(|v| semver(v))
        .map(|v| (*v).to_owned())
        .unwrap_or_default();
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

/// Semver-compatible with the host's 0.2: same major 0 and minor 2.
fn compatible(version: &str) -> bool {
    let (major, minor, _) = semver(version);
    major == 0 && minor == 2
}

/// Turns Wasmtime's "no export" error into `MissingExport` when it names one.
pub(crate) fn missing_export(origin: &str, error: &wasmtime::Error) -> WasmError {
    let text = format!("{error:#}");
    let export = REQUIRED_EXPORTS
        .iter()
        .find(|e| text.contains(*e))
        .map(|e| format!("{PACKAGE}/{e}"))
        .unwrap_or_else(|| text.clone());
    WasmError::MissingExport {
        origin: origin.to_owned(),
        export,
    }
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
        assert!(compatible("0.2.0") && compatible("0.2.9"));
        assert!(!compatible("0.1.0") && !compatible("1.0.0") && !compatible("0.3.0"));
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
