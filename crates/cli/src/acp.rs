//! `wonopcode acp`: an editor drives wonopcode over the Agent Client Protocol on stdio. Each
//! session the editor opens is built from the flags given here (model, permissions,
//! settings, loop), in the folder the editor names, and journaled like any run.

use std::sync::Arc;

use clap::ArgMatches;
use wonopcode_acp::{Serving, SessionFactory};
use wonopcode_session::{Config, Settings};

use crate::args::AcpArgs;
use crate::exit;
use crate::session::{load_config, session_builder, settings, standard_journal};

/// Serves until the editor closes the connection.
pub async fn run(args: &AcpArgs, matches: &ArgMatches) -> anyhow::Result<u8> {
    crate::session::check_model_args(&args.model)?;
    let choice = crate::loops::choose_loop(
        None,
        args.agent_loop.as_deref(),
        args.agent_loop_name.as_deref(),
    )?;
    let settings = settings(&args.model, &args.permissions, matches, &args.run, choice)?;
    // Read once: every session is built from the same config file.
    let config = load_config(&settings)?;
    let journal = standard_journal(&args.run);
    let runs = journal.clone();
    let takes_images = takes_images(&settings, &config).await;
    let sessions: SessionFactory = Arc::new(move |workspace: &std::path::Path| {
        let mut settings = settings.clone();
        settings.workspace = workspace.to_path_buf();
        Ok(session_builder(settings, config.clone(), journal.clone()).started_as(false, false))
    });
    let serving = Serving {
        sessions,
        runs,
        takes_images,
    };
    wonopcode_acp::serve_stdio(serving)
        .await
        .map_err(|e| anyhow::anyhow!("the editor's connection: {e}"))?;
    Ok(exit::SUCCESS)
}

/// Whether the model the sessions start with takes images, by its catalog entry (or its
/// transcript's header): what prompts are offered. No model to open (no provider set) is
/// no images; `session/new` then says what to set.
async fn takes_images(settings: &Settings, config: &Config) -> bool {
    // Opened only to be read: nothing recorded.
    let mut choice = settings.model.clone();
    choice.record = None;
    match wonopcode_session::models::open(&choice, config, None).await {
        Ok((model, _)) => model.info().capabilities.vision,
        Err(e) => {
            tracing::info!(error = %e, "no model to read the prompt capabilities from");
            false
        }
    }
}
