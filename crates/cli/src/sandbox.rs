//! `wonopcode sandbox check`: what this machine's kernel can enforce of the sandbox.

use wonopcode_sandbox::Support;

use crate::args::{SandboxAction, SandboxArgs};

/// Runs the action; the exit code.
pub fn run(args: &SandboxArgs) -> u8 {
    match args.action {
        SandboxAction::Check => {
            let support = Support::detect();
            for line in support.report() {
                println!("{line}");
            }
            u8::from(!support.enforces())
        }
    }
}
