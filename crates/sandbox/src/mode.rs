//! The three sandbox modes, named as Codex names them.

use serde::{Deserialize, Serialize};

/// How far the processes started for a model may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands may read (not the hidden secrets), and write nowhere but a private temp dir.
    ReadOnly,
    /// Commands may also write inside the workspace and the temp dirs; `.git` stays
    /// read-only unless a grant says otherwise. The default.
    #[default]
    WorkspaceWrite,
    /// No confinement: commands have the user's full rights.
    FullAccess,
}

impl SandboxMode {
    /// Every mode, narrowest first.
    pub const ALL: [SandboxMode; 3] = [Self::ReadOnly, Self::WorkspaceWrite, Self::FullAccess];

    /// The name users write (`--sandbox`, config, grants).
    pub fn name(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }

    /// The narrower of two modes: what a child gets from its parent's mode and its own.
    pub fn narrowest(self, other: SandboxMode) -> SandboxMode {
        let rank = |mode: SandboxMode| Self::ALL.iter().position(|m| *m == mode);
        if rank(self) <= rank(other) {
            self
        } else {
            other
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.name() == text)
            .ok_or_else(|| {
                format!("unknown sandbox mode `{text}` (expected read-only, workspace-write or full-access)")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_narrowest_wins() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.name().parse::<SandboxMode>(), Ok(mode));
        }
        assert!("workspace".parse::<SandboxMode>().is_err());
        assert_eq!(
            SandboxMode::FullAccess.narrowest(SandboxMode::ReadOnly),
            SandboxMode::ReadOnly
        );
        assert_eq!(
            SandboxMode::WorkspaceWrite.narrowest(SandboxMode::FullAccess),
            SandboxMode::WorkspaceWrite
        );
    }
}
