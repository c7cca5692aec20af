//! `wonopcode mcp-server`: the named loops served as MCP tools, on stdio or streamable HTTP.
//! Each call runs in a session made from the same flags a prompt would use (model,
//! permissions, session settings), with the call's own workspace, model and limit.

use std::sync::Arc;

use clap::ArgMatches;
use tokio_util::sync::CancellationToken;
use wonopcode_journal::Runs;
use wonopcode_mcp_server::{BearerToken, HttpOptions, LoopCall, LoopServer, SessionFactory};
use wonopcode_registry::{LoopCatalog, SearchPath};
use wonopcode_session::LoopChoice;

use crate::args::McpServerArgs;
use crate::exit;
use crate::session::{load_config, session_builder, settings, usage, workspace_root};

/// Serves until the client goes away (stdio) or wonopcode is stopped (HTTP).
pub async fn run(args: &McpServerArgs, matches: &ArgMatches) -> anyhow::Result<u8> {
    crate::session::check_model_args(&args.model)?;
    let root = workspace_root(args.run.cwd.as_deref())?;
    let root_shown = root.display().to_string();
    let mut settings = settings(
        &args.model,
        &args.permissions,
        matches,
        &args.run,
        LoopChoice::Standard,
    )?;
    // No terminal to ask on: the flag or the trust file decides.
    let trusted = wonopcode_session::trust::is_trusted(&root, args.run.trust_workspace)?;
    let catalog = LoopCatalog::discover(
        &SearchPath::standard(&args.run.loops_dir, Some(&root)).trusting_workspace(trusted),
    );
    for warning in &catalog.warnings {
        eprintln!("warning: {warning}");
    }
    let entries = if args.loops.is_empty() {
        catalog.entries.clone()
    } else {
        let mut chosen = Vec::new();
        for name in &args.loops {
            let entry = catalog
                .find(name)
                .map_err(|e| usage(format!("--loop {name}: {e}")))?;
            chosen.push(entry.clone());
        }
        chosen
    };
    // The calling agent's model answers (MCP sampling): no provider of the server's own.
    let client_model =
        settings.model.provider.as_deref() == Some(wonopcode_mcp_server::CLIENT_PROVIDER);
    if client_model {
        settings.model.provider = None;
    }
    let journal = !args.run.no_journal;
    // Read once: every call's session is built from the same config file.
    let config = load_config(&settings)?;
    let sessions: SessionFactory = Arc::new(move |call: &LoopCall| {
        let workspace = match &call.workspace {
            None => root.clone(),
            // Confined beneath `-C`: a link that leads out is refused like `..`.
            Some(dir) => {
                let real = root
                    .join(dir)
                    .canonicalize()
                    .map_err(|e| format!("`workspace` `{}`: {e}", dir.display()))?;
                if !real.starts_with(&root) {
                    return Err(format!(
                        "`workspace` `{}` leads outside the server's workspace",
                        dir.display()
                    ));
                }
                real
            }
        };
        let mut settings = settings.clone();
        settings.workspace = workspace;
        if call.model.is_some() {
            settings.model.model = call.model.clone();
        }
        settings.max_iterations = call.max_iterations.or(settings.max_iterations);
        settings.loop_choice = LoopChoice::Named(call.name.clone());
        let journal = journal.then(Runs::standard).flatten();
        Ok(session_builder(settings, config.clone(), journal).loop_source(call.source.clone()))
    });
    let mut server = LoopServer::new(entries, sessions).map_err(usage)?;
    if client_model {
        server = server.with_client_model();
    }
    let Some(addr) = args.http else {
        wonopcode_mcp_server::serve_stdio(server).await?;
        return Ok(exit::SUCCESS);
    };
    let token = bearer_token(args, addr)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| usage(format!("--http {addr}: cannot listen there: {e}")))?;
    let bound = listener.local_addr()?;
    eprintln!(
        "wonopcode mcp-server: {} loop{} on http://{bound}/mcp",
        server.tool_names().count(),
        if server.tool_names().count() == 1 {
            ""
        } else {
            "s"
        }
    );
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    match &token {
        Some((token, Some(kept))) => eprintln!(
            "bearer token: {} (clients send `Authorization: Bearer TOKEN`; kept in {})",
            token.as_str(),
            kept.display()
        ),
        Some((_, None)) => {}
        None => eprintln!(
            "warning: --no-auth: any local user can run these loops in {}",
            root_shown
        ),
    }
    let options = HttpOptions {
        allowed_hosts: args.allow_host.clone(),
        token: token.map(|(token, _)| token),
    };
    wonopcode_mcp_server::serve_http(server, listener, options, cancel).await?;
    Ok(exit::SUCCESS)
}

/// The HTTP transport's token, and where it was made when it is printed: the one in
/// `--token-file` (made there when missing), else a new one kept in the data directory;
/// `None` with `--no-auth`, which only a loopback address may have.
fn bearer_token(
    args: &McpServerArgs,
    addr: std::net::SocketAddr,
) -> anyhow::Result<Option<(BearerToken, Option<std::path::PathBuf>)>> {
    if args.no_auth {
        if !addr.ip().is_loopback() {
            return Err(usage(format!(
                "--no-auth: {addr} is not a loopback address; any host could run the loops (leave --no-auth out to require a token)"
            )));
        }
        return Ok(None);
    }
    if let Some(file) = &args.token_file {
        let (token, made) = BearerToken::from_file(file).map_err(usage)?;
        return Ok(Some((token, made.then(|| file.clone()))));
    }
    let token = BearerToken::generate()?;
    let kept = dirs::data_dir()
        .map(|d| d.join("wonopcode").join("mcp-server.token"))
        .ok_or_else(|| {
            anyhow::anyhow!("no data directory to keep the token in: give --token-file FILE")
        })?;
    token
        .write_to(&kept)
        .map_err(|e| anyhow::anyhow!("cannot keep the token in {}: {e}", kept.display()))?;
    Ok(Some((token, Some(kept))))
}
