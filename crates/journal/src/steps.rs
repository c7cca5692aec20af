//! What a run's root was given, in order — its prompts (with the images and documents they
//! carried) and the session commands between them — read back from `run.json` so a resume,
//! a fork or an editor loading the session gives the same again.

use std::path::Path;

use wonopcode_protocol::Part;

use crate::JournalError;
use crate::meta::{RunMeta, SessionCommand};
use crate::runs::prompt_attachments;

/// One thing the root was given.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A prompt, with its attachments.
    Prompt {
        /// Its text.
        text: String,
        /// The images and documents it carried.
        attachments: Vec<Part>,
    },
    /// A command between prompts.
    Command(SessionCommand),
}

impl RunMeta {
    /// The root's prompts and commands in the order given; `dir` is the run's directory
    /// (where the prompts' attachments are kept). `Err`: an attachment cannot be read back.
    pub fn steps(&self, dir: &Path) -> Result<Vec<Step>, JournalError> {
        let mut commands = self.commands.iter().peekable();
        let mut steps = Vec::with_capacity(self.prompts.len() + self.commands.len());
        for (index, text) in self.prompts.iter().enumerate() {
            while let Some(kept) = commands.next_if(|c| c.after_prompts <= index) {
                steps.push(Step::Command(kept.command.clone()));
            }
            steps.push(Step::Prompt {
                text: text.clone(),
                attachments: prompt_attachments(dir, index)?,
            });
        }
        steps.extend(commands.map(|kept| Step::Command(kept.command.clone())));
        Ok(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::KeptCommand;

    #[test]
    fn commands_come_back_between_the_prompts_they_were_given_between() {
        let dir = tempfile::tempdir().unwrap();
        let mut meta: RunMeta = serde_json::from_value(serde_json::json!({
            "id": "r", "workspace": "/w", "started": "2026-11-28T00:00:00Z",
            "loop_name": "standard", "model": "p/m", "status": "finished",
            "prompts": ["one", "two"],
        }))
        .unwrap();
        let kept = |after_prompts, command| KeptCommand {
            after_prompts,
            command,
        };
        meta.commands = vec![
            kept(0, SessionCommand::Compact),
            kept(1, SessionCommand::Clear),
            kept(
                2,
                SessionCommand::Model {
                    provider: "p".into(),
                    model: None,
                },
            ),
        ];
        let prompt = |text: &str| Step::Prompt {
            text: text.into(),
            attachments: Vec::new(),
        };
        assert_eq!(
            meta.steps(dir.path()).unwrap(),
            [
                Step::Command(SessionCommand::Compact),
                prompt("one"),
                Step::Command(SessionCommand::Clear),
                prompt("two"),
                Step::Command(SessionCommand::Model {
                    provider: "p".into(),
                    model: None
                }),
            ]
        );
        // Kept as written: a command names itself.
        let written = serde_json::to_value(&meta.commands[1]).unwrap();
        assert_eq!(
            written,
            serde_json::json!({"after_prompts": 1, "command": "clear"})
        );
    }
}
