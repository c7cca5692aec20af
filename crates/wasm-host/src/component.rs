//! The guest component a loop source names: the default guest embedded in the binary, or a
//! component file's bytes.

use std::borrow::Cow;

use wonopcode_contexts::LoopSource;

use crate::error::WasmError;

/// A guest component's bytes and the name messages give it.
pub struct Component {
    /// The component.
    pub bytes: Cow<'static, [u8]>,
    /// Its file, or "the default guest".
    pub origin: String,
}

impl Component {
    /// The guest component `source` names, read from its file; `None` for the native
    /// loop (an agent file's too).
    pub fn of(source: &LoopSource) -> Result<Option<Component>, WasmError> {
        Ok(match source {
            LoopSource::Native | LoopSource::Agent(_) => None,
            LoopSource::Embedded => Some(Component {
                bytes: Cow::Borrowed(crate::DEFAULT_LOOP),
                origin: "the default guest".to_owned(),
            }),
            LoopSource::File(path) => Some(Component {
                bytes: Cow::Owned(std::fs::read(path).map_err(|e| WasmError::Read {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?),
                origin: path.display().to_string(),
            }),
            // The session fetches a published module into a file before the host sees it.
            LoopSource::Oci(reference) => {
                return Err(WasmError::Read {
                    path: reference.clone(),
                    reason:
                        "a module from a registry is fetched before it loads, and this one was not"
                            .to_owned(),
                });
            }
        })
    }
}
