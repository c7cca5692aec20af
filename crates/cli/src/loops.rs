//! Which loop runs, on the command line: `--loop-type`, `--agent-loop`, `--agent-loop-name`
//! (resolved through the registry crate), `--list-loops` and `--validate-module`. The logic
//! lives in the registry and host crates; this is flag handling and printing.

use serde_json::json;
use wonopcode_agent_loop::{AgentLoop, StandardLoop};
use wonopcode_registry::{
    Catalog, Entry, Metadata, MetadataCache, ModuleGrants, SearchPath, Status,
};
use wonopcode_wasm_host::check::{Outcome, load_checked, short_capabilities, smoke_custom_tools};
use wonopcode_wasm_host::{CachePolicy, Component, LoopSource};

use crate::args::{Args, LoopType, RunArgs};
use crate::exit;
use crate::session::usage;
use wonopcode_session::config::{self, Config};
use wonopcode_session::loops::{self, ListedLoop, engine};

fn loop_type_name(kind: LoopType) -> &'static str {
    match kind {
        LoopType::Standard => "standard",
        LoopType::Wasm => "wasm",
        LoopType::Custom => "custom",
    }
}

/// The loop the flags ask for. `--agent-loop` and `--agent-loop-name` imply `custom`;
/// contradictions are usage errors naming both flags.
pub fn loop_choice(args: &Args) -> anyhow::Result<LoopSource> {
    let name = args.agent_loop_name.as_deref();
    match (args.loop_type, &args.agent_loop, name) {
        (_, Some(_), Some(_)) => Err(usage(
            "--agent-loop and --agent-loop-name both choose the loop; give only one of them",
        )),
        (Some(kind @ (LoopType::Standard | LoopType::Wasm)), Some(_), None) => Err(usage(format!(
            "--agent-loop runs a custom guest and cannot be combined with --loop-type={}",
            loop_type_name(kind)
        ))),
        (Some(kind @ (LoopType::Standard | LoopType::Wasm)), None, Some(_)) => Err(usage(format!(
            "--agent-loop-name runs a named loop and cannot be combined with --loop-type={}",
            loop_type_name(kind)
        ))),
        (Some(LoopType::Custom), None, None) => Err(usage(
            "--loop-type=custom needs --agent-loop PATH or --agent-loop-name NAME",
        )),
        (_, Some(path), None) => Ok(LoopSource::File(path.clone())),
        (_, None, Some(name)) => Ok(resolve(args, name)?.location),
        (Some(LoopType::Wasm), None, None) => Ok(LoopSource::Embedded),
        (Some(LoopType::Standard) | None, None, None) => Ok(LoopSource::Native),
    }
}

/// Discovers the named loops, printing what went wrong while looking.
/// With `quiet`, the caller reports the warnings itself (`--list-loops --json`).
fn catalog(args: &Args, quiet: bool) -> Catalog {
    let catalog = Catalog::discover(&SearchPath::standard(&args.run.loops_dir));
    if !quiet {
        for warning in &catalog.warnings {
            eprintln!("warning: {warning}");
        }
    }
    catalog
}

/// The entry named `name`; an unknown name is a usage error listing the closest names.
fn resolve(args: &Args, name: &str) -> anyhow::Result<Entry> {
    catalog(args, false)
        .find(name)
        .cloned()
        .map_err(|e| usage(e.to_string()))
}

/// The compile cache's policy from the config file, or `None` with `--no-cache`.
pub fn cache_policy(run: &RunArgs, config: &Config) -> Option<CachePolicy> {
    (!run.no_cache).then(|| config.cache.policy())
}

/// The compile cache's policy for commands that have not read the config file yet.
fn cache_policy_of(args: &Args) -> anyhow::Result<Option<CachePolicy>> {
    Ok(cache_policy(
        &args.run,
        &config::load(args.run.config.as_deref())?,
    ))
}

/// A listing row: an entry (or a shadowed one) and what validation says about it.
struct Row {
    name: String,
    source: &'static str,
    path: String,
    metadata: Option<Metadata>,
    note: Option<String>,
}

fn location_text(location: &LoopSource) -> String {
    match location {
        LoopSource::Native => "(native)".to_owned(),
        LoopSource::Embedded => "(embedded)".to_owned(),
        LoopSource::File(path) => path.display().to_string(),
    }
}

/// `--list-loops`: a table, or JSON with `--json`.
pub async fn list(args: &Args) -> anyhow::Result<u8> {
    let cache = (!args.run.no_cache).then(MetadataCache::standard);
    let (listed, warnings) = loops::list(&args.run.loops_dir, cache, cache_policy_of(args)?).await;
    if !args.json {
        for warning in &warnings {
            eprintln!("warning: {warning}");
        }
    }
    let standard_caps = short_capabilities(&StandardLoop::new().capabilities());
    let mut rows = Vec::new();
    let mut json_entries = Vec::new();
    for ListedLoop {
        entry,
        metadata,
        shadows,
    } in listed
    {
        rows.push(Row {
            name: entry.name.clone(),
            source: entry.source.label(),
            path: location_text(&entry.location),
            metadata: metadata.clone(),
            note: None,
        });
        let mut shadows_json = Vec::new();
        for (shadow, shadow_metadata) in entry.shadows.iter().zip(shadows) {
            shadows_json.push(json!({
                "source": shadow.source,
                "location": shadow.location,
                "metadata": shadow_metadata,
            }));
            rows.push(Row {
                name: entry.name.clone(),
                source: shadow.source.label(),
                path: location_text(&shadow.location),
                metadata: shadow_metadata,
                note: Some(format!(
                    "shadowed by the {} entry above",
                    entry.source.label()
                )),
            });
        }
        json_entries.push(json!({
            "name": entry.name,
            "source": entry.source,
            "location": entry.location,
            "description": entry.description,
            "version": entry.version,
            "metadata": metadata,
            "tools": entry.context_tools.tools,
            "grants": grants_json(&entry.context_tools.grants),
            "shadows": shadows_json,
        }));
    }
    if args.json {
        let out = json!({ "loops": json_entries, "warnings": warnings });
        println!("{out}");
        return Ok(exit::SUCCESS);
    }
    let table: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let (wit, caps, status) = match &row.metadata {
                None => ("-".to_owned(), standard_caps.clone(), "ok".to_owned()),
                Some(m) => (
                    m.wit_version.clone().unwrap_or_else(|| "-".to_owned()),
                    m.capabilities.clone().unwrap_or_else(|| "-".to_owned()),
                    match &m.status {
                        Status::Ok => "ok".to_owned(),
                        Status::Invalid(reason) => format!("invalid: {reason}"),
                    },
                ),
            };
            let status = match &row.note {
                Some(note) => format!("{status} ({note})"),
                None => status,
            };
            [
                row.name.clone(),
                row.source.to_owned(),
                row.path.clone(),
                wit,
                caps,
                status,
            ]
        })
        .collect();
    print_table(
        ["NAME", "SOURCE", "PATH", "WIT", "CAPABILITIES", "STATUS"],
        &table,
    );
    Ok(exit::SUCCESS)
}

fn print_table(header: [&str; 6], rows: &[[String; 6]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 6]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
}

/// `--validate-module`: runs every check on the guest and reports each; exit 0 when all pass.
pub async fn validate(args: &Args) -> anyhow::Result<u8> {
    let source = match (&args.agent_loop, &args.agent_loop_name) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "--validate-module checks one guest: give --agent-loop PATH or --agent-loop-name NAME, not both",
            ));
        }
        (None, None) => {
            return Err(usage(
                "--validate-module needs the guest to check: --agent-loop PATH or --agent-loop-name NAME",
            ));
        }
        (Some(path), None) => LoopSource::File(path.clone()),
        (None, Some(name)) => resolve(args, name)?.location,
    };
    // A named module's grants are part of what it is: shown, as `--list-loops` shows them.
    let grants = match &args.agent_loop_name {
        Some(name) => Some(resolve(args, name)?.context_tools.grants),
        None => None,
    };
    let Some(Component { bytes, origin }) = source.component()? else {
        let name = args.agent_loop_name.as_deref().unwrap_or("standard");
        println!("`{name}` is the native loop: there is no module to validate");
        return Ok(exit::SUCCESS);
    };
    let (report, guest) = load_checked(engine(cache_policy_of(args)?)?, &bytes, &origin).await;
    // The guest's own tools get a smoke call with `{}`: reported, never fatal.
    let smoke = match &guest {
        Some(guest) => Some(smoke_custom_tools(guest).await),
        None => None,
    };
    if args.json {
        let checks: Vec<_> = report
            .checks
            .iter()
            .map(|(check, outcome)| {
                let (status, detail) = match outcome {
                    Outcome::Ok(detail) => ("ok", Some(detail)),
                    Outcome::Failed(reason) => ("failed", Some(reason)),
                    Outcome::Skipped => ("skipped", None),
                };
                json!({ "check": check.label(), "status": status, "detail": detail })
            })
            .collect();
        let out = json!({
            "module": origin,
            "valid": report.passed(),
            "name": report.name,
            "wit_version": report.wit_version,
            "capabilities": report.capabilities.as_ref().map(short_capabilities),
            "size": report.size,
            "sha256": report.sha256,
            "checks": checks,
            "grants": grants.as_ref().map(grants_json),
            "custom_tools": smoke.as_ref().map(|s| match s {
                Ok(tools) => json!(tools.iter().map(|t| match &t.outcome {
                    Ok(answer) => json!({ "tool": t.tool, "status": "ok", "detail": answer }),
                    Err(error) => json!({ "tool": t.tool, "status": "failed", "detail": error }),
                }).collect::<Vec<_>>()),
                Err(error) => json!({ "status": "failed", "detail": error }),
            }),
        });
        println!("{out}");
    } else {
        println!("validating {origin}");
        for (check, outcome) in &report.checks {
            let (mark, detail) = match outcome {
                Outcome::Ok(detail) => ("ok  ", detail.as_str()),
                Outcome::Failed(reason) => ("FAIL", reason.as_str()),
                Outcome::Skipped => ("skip", "an earlier check failed"),
            };
            println!("  {mark}  {:<16}  {detail}", check.label());
        }
        match &smoke {
            Some(Ok(tools)) if tools.is_empty() => {
                println!("  custom tools: none registered in on-start");
            }
            Some(Ok(tools)) => {
                println!("  custom tools, called with {{}} (not fatal):");
                for t in tools {
                    let (mark, detail) = match &t.outcome {
                        Ok(answer) => ("ok  ", answer),
                        Err(error) => ("FAIL", error),
                    };
                    println!("    {mark}  {:<14}  {}", t.tool, one_line(detail));
                }
            }
            Some(Err(error)) => println!("  custom tools: cannot start the guest: {error}"),
            None => {}
        }
        if let Some(grants) = grants.as_ref().filter(|g| !g.is_empty()) {
            println!("  grants: {}", grants_text(grants));
        }
        match (report.passed(), &report.name) {
            (true, Some(name)) => println!(
                "valid: loop `{name}`, wonopcode:agent-loop@{}",
                report.wit_version.as_deref().unwrap_or("?")
            ),
            _ => println!("invalid"),
        }
    }
    Ok(if report.passed() {
        exit::SUCCESS
    } else {
        exit::ERROR
    })
}

/// A module's grants as JSON: `null` when it has none.
fn grants_json(grants: &ModuleGrants) -> serde_json::Value {
    if grants.is_empty() {
        return serde_json::Value::Null;
    }
    serde_json::to_value(grants).unwrap_or_default()
}

/// A module's grants on one line: `sandbox read-only (write: out); max_cost $0.50`.
fn grants_text(grants: &ModuleGrants) -> String {
    let mut parts = Vec::new();
    if let Some(policy) = &grants.sandbox {
        let mut sandbox = format!("sandbox {}", policy.mode);
        let mut details = Vec::new();
        let paths = |list: &[std::path::PathBuf]| {
            list.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !policy.write.is_empty() {
            details.push(format!("write: {}", paths(&policy.write)));
        }
        if !policy.read.is_empty() {
            details.push(format!("read: {}", paths(&policy.read)));
        }
        if !policy.network.is_empty() {
            let hosts: Vec<String> = policy.network.iter().map(ToString::to_string).collect();
            details.push(format!("network: {}", hosts.join(", ")));
        }
        if !details.is_empty() {
            sandbox.push_str(&format!(" ({})", details.join("; ")));
        }
        parts.push(sandbox);
    }
    if let Some(max) = grants.max_cost {
        parts.push(format!("max_cost ${max:.2}"));
    }
    if let Some(max) = grants.max_tokens {
        parts.push(format!("max_tokens {max}"));
    }
    parts.join("; ")
}

/// The first line of `text`, cut to 100 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
