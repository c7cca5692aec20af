//! Skills, in Claude Code's format: a folder with a `SKILL.md` whose front matter gives a
//! `name` and a `description` and whose body says how to do something, with any files the
//! body refers to beside it. A model sees only the names and descriptions until it loads
//! one, so a skill costs tokens only when used.
//!
//! Looked for, first name wins: the workspace's `.wonopcode/skills/` and `.claude/skills/`,
//! then the user's `wonopcode/skills/` in the config directory and `~/.claude/skills/`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::agent_file::split_front_matter;
use crate::file::yaml_error;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// What it is loaded by.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Its folder (the `SKILL.md` and its files).
    pub dir: PathBuf,
}

impl Skill {
    /// The instructions: `SKILL.md` without its front matter.
    pub fn body(&self) -> Result<String, String> {
        let file = self.dir.join(SKILL_FILE);
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        Ok(split_front_matter(&text)
            .map_or(text.as_str(), |(_, body)| body)
            .trim()
            .to_owned())
    }
}

/// Every skill found, and what was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    /// In discovery order.
    pub skills: Vec<Skill>,
    /// Skipped folders and files, one line each.
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawSkill {
    name: Option<String>,
    description: Option<String>,
}

impl Skills {
    /// The skills of `workspace` and of the user (config directory, home directory).
    pub fn discover(workspace: &Path) -> Self {
        let mut dirs = vec![
            workspace.join(".wonopcode/skills"),
            workspace.join(".claude/skills"),
        ];
        dirs.extend(dirs::config_dir().map(|c| c.join("wonopcode/skills")));
        dirs.extend(dirs::home_dir().map(|h| h.join(".claude/skills")));
        Self::in_dirs(&dirs)
    }

    /// The skills of the folders in `dirs`, first name wins.
    pub fn in_dirs(dirs: &[PathBuf]) -> Self {
        let mut found = Self::default();
        for dir in dirs {
            let Ok(listing) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut folders: Vec<PathBuf> = listing
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join(SKILL_FILE).is_file())
                .collect();
            folders.sort();
            for folder in folders {
                match read(&folder) {
                    Ok(skill) if found.skills.iter().any(|s| s.name == skill.name) => {}
                    Ok(skill) => found.skills.push(skill),
                    Err(e) => found.warnings.push(format!("{e} (skill skipped)")),
                }
            }
        }
        found
    }
}

/// The skill of `folder`: its name (default: the folder's) and description.
fn read(folder: &Path) -> Result<Skill, String> {
    let file = folder.join(SKILL_FILE);
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let Some((front, _)) = split_front_matter(&text) else {
        return Err(format!(
            "{}:1: a skill starts with front matter between `---` lines (name, description)",
            file.display()
        ));
    };
    let raw: RawSkill = serde_yaml::from_str(if front.trim().is_empty() { "{}" } else { front })
        .map_err(|e| yaml_error(&file, &e, 1).to_string())?;
    let name = raw.name.unwrap_or_else(|| {
        folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let description = raw
        .description
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            format!(
                "{}: a skill needs a `description`: it is all a model sees until it loads the skill",
                file.display()
            )
        })?;
    Ok(Skill {
        name,
        description,
        dir: folder.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_found_in_order_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("own");
        let claude = dir.path().join("claude");
        let write = |folder: &Path, text: &str| {
            std::fs::create_dir_all(folder).unwrap();
            std::fs::write(folder.join(SKILL_FILE), text).unwrap();
        };
        write(
            &own.join("pdf"),
            "---\nname: pdf\ndescription: Fill in PDF forms.\n---\n# PDF\nUse forms.py.\n",
        );
        write(
            &claude.join("pdf"),
            "---\ndescription: another pdf\n---\nx\n",
        );
        write(
            &claude.join("release"),
            "---\ndescription: Cut a release.\n---\nTag it.\n",
        );
        write(&claude.join("broken"), "---\nname: broken\n---\nx\n");
        let found = Skills::in_dirs(&[own, claude]);
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pdf", "release"]);
        assert_eq!(found.skills[0].description, "Fill in PDF forms.");
        assert_eq!(found.skills[0].body().unwrap(), "# PDF\nUse forms.py.");
        assert_eq!(found.warnings.len(), 1);
        assert!(found.warnings[0].contains("broken/SKILL.md: a skill needs a `description`"));
    }
}
