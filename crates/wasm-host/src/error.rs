//! Errors loading, validating and running guest components. Each says what and where in one
//! line.

/// What went wrong with a guest.
#[derive(Debug, thiserror::Error)]
pub enum WasmError {
    /// The file could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The bytes are not WebAssembly at all.
    #[error("{origin} is not a WebAssembly file (no `\\0asm` header)")]
    NotWasm {
        /// Where the bytes came from.
        origin: String,
    },
    /// The binary ends early or is malformed.
    #[error("{origin} is truncated or malformed: {reason}")]
    Malformed {
        /// Where the bytes came from.
        origin: String,
        /// What the parser said.
        reason: String,
    },
    /// A core module, not a component.
    #[error(
        "{origin} is a core WebAssembly module, not a component; build it for wasm32-wasip2 (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule {
        /// Where the bytes came from.
        origin: String,
    },
    /// A component of another world: it uses nothing of `wonopcode:agent-loop`.
    #[error(
        "{origin} is a component of another world: it neither imports nor exports wonopcode:agent-loop interfaces"
    )]
    OtherWorld {
        /// Where the bytes came from.
        origin: String,
    },
    /// The component was built against an incompatible WIT version.
    #[error(
        "{origin} was built against wonopcode:agent-loop@{found}, which is not compatible with the host's {supported}"
    )]
    IncompatibleVersion {
        /// Where the bytes came from.
        origin: String,
        /// The version it uses.
        found: String,
        /// What the host implements.
        supported: String,
    },
    /// The guest uses two WIT versions at once (some interfaces of 0.2, others of 0.3): one
    /// build of a guest is against one version.
    #[error(
        "{origin} uses wonopcode:agent-loop@{older} and @{newer} together; build it against one version (the host serves 0.3.x and 0.2.x)"
    )]
    MixedVersions {
        /// Where the bytes came from.
        origin: String,
        /// The older version it uses.
        older: String,
        /// The newer.
        newer: String,
    },
    /// A required export is missing.
    #[error("{origin} does not export `{export}`")]
    MissingExport {
        /// Where the bytes came from.
        origin: String,
        /// The missing export.
        export: String,
    },
    /// The component imports something the host does not provide.
    #[error("{origin} imports something the host does not provide: {reason}")]
    UnsatisfiedImport {
        /// Where the bytes came from.
        origin: String,
        /// Wasmtime's explanation.
        reason: String,
    },
    /// Compilation failed.
    #[error("cannot compile {origin}: {reason}")]
    Compile {
        /// Where the bytes came from.
        origin: String,
        /// Why.
        reason: String,
    },
    /// Setting up the engine failed.
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
    /// Instantiating the guest failed.
    #[error("cannot instantiate {origin}: {reason}")]
    Instantiate {
        /// Where the bytes came from.
        origin: String,
        /// Why.
        reason: String,
    },
    /// One of the guest's metadata exports (`get-name`, `get-capabilities`) trapped.
    #[error("{origin}: {export} trapped: {reason}")]
    GuestCall {
        /// Where the bytes came from.
        origin: String,
        /// The export called.
        export: &'static str,
        /// The trap's first line.
        reason: String,
    },
}
