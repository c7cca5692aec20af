//! The `skill` tool: its description lists the skills a context may use, by name and
//! description only (as Claude Code's Skill tool does), and a call loads one's instructions
//! and names its files, or reads one of those files. A context narrowed to some skills (an
//! agent's or a module's `skills:`) gets a narrowed tool in place of the run's; a run with no
//! skills has no `skill` tool.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;
use wonopcode_agent_loop::{Tool, ToolEnv, ToolError, ToolOutput};
use wonopcode_protocol::{ToolCategory, ToolKind, ToolSpec};
use wonopcode_registry::skill::SKILL_FILE;
use wonopcode_registry::{Skill, Skills};

/// The name the model calls it by.
pub const NAME: &str = "skill";

/// Largest file of a skill that is read.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Most files of a skill that are named.
const MAX_LISTED_FILES: usize = 200;

/// Loads skills on the model's request.
pub struct SkillTool {
    spec: ToolSpec,
    skills: Arc<[Skill]>,
}

#[derive(Deserialize)]
struct Args {
    name: String,
    file: Option<String>,
}

impl SkillTool {
    /// The tool over `skills`; `None` when there are none.
    pub fn of(skills: &Skills) -> Option<Self> {
        (!skills.skills.is_empty()).then(|| Self::over(skills.skills.clone().into()))
    }

    fn over(skills: Arc<[Skill]>) -> Self {
        let listing: Vec<String> = skills
            .iter()
            .map(|s| format!("- {}: {}", s.name, s.description))
            .collect();
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        let description = format!(
            "Load a skill: instructions for a kind of task, with files they may refer to. Load one when the task matches its description, then follow it. Give `file` to read one of the files it names.\n\nSkills:\n{}",
            if listing.is_empty() {
                "(none for this context)".to_owned()
            } else {
                listing.join("\n")
            }
        );
        // An empty `enum` matches nothing; a context without skills gets a plain string.
        let name = if names.is_empty() {
            json!({"type": "string"})
        } else {
            json!({"type": "string", "enum": names})
        };
        Self {
            spec: ToolSpec {
                name: NAME.to_owned(),
                description,
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "name": name,
                        "file": {"type": "string", "description": "A file of the skill, relative to its folder"}
                    },
                    "required": ["name"],
                    "additionalProperties": false
                }),
                kind: ToolKind::ReadOnly,
                category: ToolCategory::Internal,
            },
            skills,
        }
    }

    /// The skills it offers.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The same tool offering only the skills named in `only` (perhaps none: then every
    /// call is refused).
    pub fn narrowed(&self, only: &[String]) -> Self {
        let kept: Vec<Skill> = self
            .skills
            .iter()
            .filter(|s| only.contains(&s.name))
            .cloned()
            .collect();
        Self::over(kept.into())
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        _env: &ToolEnv,
    ) -> Result<ToolOutput, ToolError> {
        let a: Args = serde_json::from_value(arguments)
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let skill = self
            .skills
            .iter()
            .find(|s| s.name == a.name)
            .ok_or_else(|| ToolError::Failed(format!("no skill named `{}`", a.name)))?
            .clone();
        tokio::task::spawn_blocking(move || match a.file {
            None => load(&skill),
            Some(file) => read_file(&skill, &file),
        })
        .await
        .map_err(|e| ToolError::Failed(format!("loading the skill stopped: {e}")))?
        .map(ToolOutput::text)
        .map_err(ToolError::Failed)
    }
}

/// The skill's instructions, and the files beside them.
fn load(skill: &Skill) -> Result<String, String> {
    let mut text = format!("# Skill `{}`\n\n{}", skill.name, skill.body()?);
    let files = files_of(&skill.dir);
    if !files.is_empty() {
        text.push_str(&format!(
            "\n\nFiles of this skill (read one with `skill` and `file`): {}",
            files.join(", ")
        ));
    }
    Ok(text)
}

/// The files under `dir` but `SKILL.md`, relative to it, sorted; at most [`MAX_LISTED_FILES`].
fn files_of(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = walk(dir)
        .into_iter()
        .filter_map(|p| p.strip_prefix(dir).ok().map(|r| r.display().to_string()))
        .filter(|r| r != SKILL_FILE)
        .collect();
    files.sort();
    files.truncate(MAX_LISTED_FILES);
    files
}

/// Regular files under `dir`, not following links out of it (depth at most 8).
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), 0)];
    while let Some((at, depth)) = pending.pop() {
        let Ok(listing) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in listing.filter_map(Result::ok) {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && depth < 8 {
                pending.push((entry.path(), depth + 1));
            } else if kind.is_file() {
                found.push(entry.path());
            }
            if found.len() > MAX_LISTED_FILES * 4 {
                return found;
            }
        }
    }
    found
}

/// A file of the skill's folder: only inside it, only a regular text file of at most
/// [`MAX_FILE_BYTES`].
fn read_file(skill: &Skill, file: &str) -> Result<String, String> {
    let refused = || format!("`{file}` is not a file of the skill `{}`", skill.name);
    let dir = skill.dir.canonicalize().map_err(|_| refused())?;
    let path = dir.join(file).canonicalize().map_err(|_| refused())?;
    if !path.starts_with(&dir) {
        return Err(refused());
    }
    let meta = std::fs::metadata(&path).map_err(|_| refused())?;
    if !meta.is_file() {
        return Err(refused());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "`{file}` of the skill `{}` is {} KiB, past the {} KiB a skill's file may be",
            skill.name,
            meta.len() >> 10,
            MAX_FILE_BYTES >> 10
        ));
    }
    std::fs::read_to_string(&path).map_err(|_| format!("`{file}` is not a text file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, description: &str) -> Skill {
        Skill {
            name: name.to_owned(),
            description: description.to_owned(),
            dir: std::path::PathBuf::from("/nowhere"),
        }
    }

    #[test]
    fn the_description_lists_names_and_descriptions_only() {
        let skills = Skills {
            skills: vec![
                skill("pdf", "Fill in PDF forms."),
                skill("release", "Cut a release."),
            ],
            warnings: Vec::new(),
        };
        let tool = SkillTool::of(&skills).unwrap();
        assert!(
            tool.spec()
                .description
                .ends_with("Skills:\n- pdf: Fill in PDF forms.\n- release: Cut a release."),
            "{}",
            tool.spec().description
        );
        assert_eq!(
            tool.spec().parameters["properties"]["name"]["enum"],
            json!(["pdf", "release"])
        );
        let narrowed = tool.narrowed(&["release".to_owned()]);
        assert!(!narrowed.spec().description.contains("pdf"));
        let none = tool.narrowed(&[]);
        assert!(none.spec().description.ends_with("(none for this context)"));
        assert!(SkillTool::of(&Skills::default()).is_none());
    }
}
