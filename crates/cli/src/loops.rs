//! Which loop runs, on the command line: `--loop-type`, `--agent-loop`, `--agent-loop-name`
//! (resolved through the registry crate), and `wonopcode loops list|validate|new` with their
//! seed spellings `--list-loops`, `--validate-module` and `--new-guest`. The logic lives in
//! the registry and host crates; this is flag handling and printing.

use std::path::{Path, PathBuf};

use serde_json::json;
use wonopcode_agent_loop::{AgentLoop, StandardLoop};
use wonopcode_contexts::LoopSource;
use wonopcode_registry::{
    Entry, LoopCatalog, Metadata, MetadataCache, ModuleGrants, SearchPath, Status,
};
use wonopcode_wasm_host::check::{Outcome, load_checked, short_capabilities, smoke_custom_tools};
use wonopcode_wasm_host::{CachePolicy, Component};

use crate::args::{LoopSearchArgs, LoopType, LoopsAction, LoopsArgs, PromptArgs, RunArgs};
use crate::exit;
use crate::render::{clip, one_line};
use crate::session::usage;
use wonopcode_session::LoopChoice;
use wonopcode_session::config;
use wonopcode_session::loops::{self, ListedLoop, engine};

fn loop_type_name(kind: LoopType) -> &'static str {
    match kind {
        LoopType::Standard => "standard",
        LoopType::Wasm => "wasm",
        LoopType::Custom => "custom",
    }
}

/// Where named loops are looked for, from the flags of a run or of `wonopcode loops`.
pub struct Search<'a> {
    config: Option<&'a Path>,
    loops_dir: &'a [PathBuf],
    /// `-C`: the workspace whose agents are found (else the current directory).
    workspace: Option<&'a Path>,
    no_cache: bool,
    /// Whether the workspace is trusted (a run's decision); `None`: as the trust file says.
    trusted: Option<bool>,
}

impl<'a> Search<'a> {
    /// A run's: its config file, `--loops-dir`, `-C` and `--no-cache`.
    pub fn of_run(run: &'a RunArgs) -> Self {
        Self {
            config: run.config.as_deref(),
            loops_dir: &run.loops_dir,
            workspace: run.cwd.as_deref(),
            no_cache: run.no_cache,
            trusted: Some(run.trust_workspace),
        }
    }

    /// `wonopcode loops`'s.
    fn of_loops(search: &'a LoopSearchArgs) -> Self {
        Self {
            config: search.config.as_deref(),
            loops_dir: &search.loops_dir,
            workspace: search.cwd.as_deref(),
            no_cache: search.no_cache,
            trusted: None,
        }
    }

    /// The directories searched, the workspace's agents among them.
    pub fn path(&self) -> SearchPath {
        let workspace = match self.workspace {
            Some(dir) => Some(dir.to_path_buf()),
            None => std::env::current_dir().ok(),
        };
        // `wonopcode loops` asks nothing: the trust file decides.
        let trusted = self.trusted.unwrap_or_else(|| {
            workspace.as_deref().is_some_and(|w| {
                w.canonicalize().is_ok_and(|root| {
                    wonopcode_session::trust::is_trusted(&root, false).unwrap_or(false)
                })
            })
        });
        SearchPath::standard(self.loops_dir, workspace.as_deref()).trusting_workspace(trusted)
    }
}

/// The guest a check is about: a file, or a named loop.
pub enum Guest<'a> {
    /// A component file.
    File(&'a Path),
    /// A loop of the catalog.
    Named(&'a str),
}

/// `wonopcode loops ...`.
pub async fn command(args: &LoopsArgs) -> anyhow::Result<u8> {
    let search = Search::of_loops(&args.search);
    match &args.action {
        LoopsAction::List { verbose } => list(&search, args.search.json, *verbose).await,
        LoopsAction::Validate { guest } => {
            // A path names a file; a bare word that is no file is a loop's name.
            let path = Path::new(guest);
            let guest = if path.exists() || guest.contains('/') || guest.ends_with(".wasm") {
                Guest::File(path)
            } else {
                Guest::Named(guest)
            };
            validate(&search, guest, args.search.json).await
        }
        LoopsAction::New { dir, lang, kind } => {
            crate::new_guest::create(dir, *lang, *kind, "loops new")
        }
        LoopsAction::Test { files, debug_guest } => {
            crate::loops_test::command(files, args.search.json, *debug_guest)
        }
        LoopsAction::Componentize { module, output } => componentize(module, output),
    }
}

/// `wonopcode loops componentize MODULE -o FILE`: the component is written beside `FILE`
/// and renamed over it, so a failure leaves what was there.
fn componentize(module: &Path, output: &Path) -> anyhow::Result<u8> {
    let bytes = std::fs::read(module)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", module.display()))?;
    let component =
        wonopcode_session::componentize::componentize(&bytes, &module.display().to_string())?;
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", output.display());
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(cannot)?;
    std::io::Write::write_all(&mut file, &component).map_err(cannot)?;
    file.persist(output).map_err(|e| cannot(e.error))?;
    println!(
        "wrote {} ({} bytes); check it: wonopcode loops validate {}",
        output.display(),
        component.len(),
        output.display()
    );
    Ok(crate::exit::SUCCESS)
}

/// `--validate-module`: the guest of `--agent-loop` or `--agent-loop-name`.
pub async fn validate_flags(args: &PromptArgs) -> anyhow::Result<u8> {
    // `--validate-module FILE`: the one argument is the guest.
    let given = match (&args.prompt, &args.agent_loop) {
        (Some(file), None) => Some(std::path::PathBuf::from(file)),
        (Some(_), Some(_)) => {
            return Err(usage(
                "--validate-module checks one guest: give its file as the argument or with --agent-loop, not both",
            ));
        }
        (None, path) => path.clone(),
    };
    let guest = match (&given, &args.agent_loop_name) {
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
        (Some(path), None) => Guest::File(path),
        (None, Some(name)) => Guest::Named(name),
    };
    validate(&Search::of_run(&args.run), guest, args.json).await
}

/// The loop a prompt's flags choose.
pub fn loop_choice(args: &PromptArgs) -> anyhow::Result<LoopChoice> {
    choose_loop(
        args.loop_type,
        args.agent_loop.as_deref(),
        args.agent_loop_name.as_deref(),
    )
}

/// The loop these flags choose (a prompt's, or a batch's): `--loop-type`, `--agent-loop` or
/// `--agent-loop-name` (a name is looked up when the session starts).
pub fn choose_loop(
    loop_type: Option<LoopType>,
    agent_loop: Option<&std::path::Path>,
    name: Option<&str>,
) -> anyhow::Result<LoopChoice> {
    match (loop_type, agent_loop, name) {
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
        (_, Some(path), None) => Ok(LoopChoice::component(path)),
        (_, None, Some(name)) => Ok(LoopChoice::Named(name.to_owned())),
        (Some(LoopType::Wasm), None, None) => Ok(LoopChoice::Embedded),
        (Some(LoopType::Standard) | None, None, None) => Ok(LoopChoice::Standard),
    }
}

/// Discovers the named loops, printing what went wrong while looking.
/// With `quiet`, the caller reports the warnings itself (`--list-loops --json`).
fn catalog(search: &Search<'_>, quiet: bool) -> LoopCatalog {
    let catalog = LoopCatalog::discover(&search.path());
    if !quiet {
        for warning in &catalog.warnings {
            eprintln!("warning: {warning}");
        }
    }
    catalog
}

/// The entry named `name`; an unknown name is a usage error listing the closest names.
fn resolve(search: &Search<'_>, name: &str) -> anyhow::Result<Entry> {
    catalog(search, false)
        .find(name)
        .cloned()
        .map_err(|e| usage(e.to_string()))
}

/// The compile cache's policy for commands that have not read the config file yet.
fn cache_policy_of(search: &Search<'_>) -> anyhow::Result<Option<CachePolicy>> {
    let config = config::load(search.config)?;
    Ok((!search.no_cache).then(|| config.cache.policy()))
}

/// A listing row: an entry (or a shadowed one) and what validation says about it.
struct Row {
    name: String,
    source: &'static str,
    kind: &'static str,
    location: Option<PathBuf>,
    version: String,
    description: String,
    metadata: Option<Metadata>,
    /// Set for an entry that lost its name to the one above it.
    shadowed_by: Option<&'static str>,
}

/// What a loop is: the native loop, the embedded guest, a component file, or an agent file.
fn kind(location: &LoopSource) -> &'static str {
    match location {
        LoopSource::Native => "native",
        LoopSource::Embedded => "embedded",
        LoopSource::File(_) => "component",
        LoopSource::Oci(_) => "published",
        LoopSource::Agent(_) => "agent",
    }
}

fn file_of(location: &LoopSource) -> Option<PathBuf> {
    match location {
        LoopSource::File(path) => Some(path.clone()),
        LoopSource::Oci(reference) => Some(PathBuf::from(reference)),
        LoopSource::Agent(agent) => Some(agent.file.clone()),
        LoopSource::Native | LoopSource::Embedded => None,
    }
}

/// The width a listing fits in: the terminal's, at most 100 columns.
const LIST_WIDTH: usize = 100;

/// The longest path shown without `--verbose`; longer ones keep their end.
const SHORT_PATH_CHARS: usize = 32;

/// `path` as a person reads it: relative to the current directory when under it, else with
/// `~` for the home directory, cut at its front past [`SHORT_PATH_CHARS`].
fn short_path(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    let home = dirs::home_dir();
    let text = if let Some(rel) = cwd.as_deref().and_then(|c| path.strip_prefix(c).ok()) {
        rel.display().to_string()
    } else if let Some(rel) = home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
        format!("~/{}", rel.display())
    } else {
        path.display().to_string()
    };
    clip_front(&text, SHORT_PATH_CHARS)
}

/// `wonopcode loops list` (`--list-loops`): a table, or JSON with `--json`.
pub async fn list(search: &Search<'_>, json: bool, verbose: bool) -> anyhow::Result<u8> {
    let cache = (!search.no_cache).then(MetadataCache::standard);
    let (listed, warnings) = loops::list(&search.path(), cache, cache_policy_of(search)?).await;
    if !json {
        for warning in &warnings {
            eprintln!("warning: {warning}");
        }
    }
    let mut rows = Vec::new();
    let mut json_entries = Vec::new();
    for ListedLoop {
        entry,
        metadata,
        shadows,
    } in listed
    {
        // A repository's agent names its own name, version and description: shown, never
        // acted on by the terminal.
        let shown = |text: &str| one_line(text).into_owned();
        rows.push(Row {
            name: shown(&entry.name),
            source: entry.source.label(),
            kind: kind(&entry.location),
            location: file_of(&entry.location),
            version: shown(entry.version.as_deref().unwrap_or("-")),
            description: shown(entry.description.as_deref().unwrap_or_default()),
            metadata: metadata.clone(),
            shadowed_by: None,
        });
        let mut shadows_json = Vec::new();
        for (shadow, shadow_metadata) in entry.shadows.iter().zip(shadows) {
            shadows_json.push(json!({
                "source": shadow.source,
                "location": shadow.location,
                "metadata": shadow_metadata,
            }));
            rows.push(Row {
                name: shown(&entry.name),
                source: shadow.source.label(),
                kind: kind(&shadow.location),
                location: file_of(&shadow.location),
                version: "-".to_owned(),
                description: String::new(),
                metadata: shadow_metadata,
                shadowed_by: Some(entry.source.label()),
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
            // What its contexts would run: its MCP servers and hooks (a workspace's only
            // once the workspace is trusted).
            "mcp_servers": entry.context_tools.mcp_servers,
            "hooks": entry.context_tools.hooks.as_ref().map(|h| &h.table),
            "from_workspace": entry.from_workspace,
            "shadows": shadows_json,
        }));
    }
    if json {
        let out = json!({ "loops": json_entries, "warnings": warnings });
        println!("{out}");
        return Ok(exit::SUCCESS);
    }
    if verbose {
        print_verbose(&rows);
    } else {
        print_short(&rows);
    }
    Ok(exit::SUCCESS)
}

/// A row's status: `ok`, `invalid` (the reason in a note) or `shadowed`.
fn status(row: &Row) -> (&'static str, Option<String>) {
    if let Some(by) = row.shadowed_by {
        return (
            "shadowed",
            Some(format!("shadowed by the {by} entry of the same name")),
        );
    }
    match row.metadata.as_ref().map(|m| &m.status) {
        Some(Status::Invalid(reason)) => ("invalid", Some(reason.clone())),
        _ => ("ok", None),
    }
}

/// NAME, KIND, VERSION, STATUS, then DESCRIPTION and PATH sharing what is left of the
/// terminal's width (at most 100 columns): the description first, the path shortened (see
/// [`short_path`]) and cut at its front. Why a loop is invalid or shadowed goes below, whole.
fn print_short(rows: &[Row]) {
    let width = console::Term::stdout()
        .size_checked()
        .map_or(LIST_WIDTH, |(_, cols)| usize::from(cols).min(LIST_WIDTH));
    let mut notes = Vec::new();
    let mut cells: Vec<[String; 4]> = Vec::new();
    for row in rows {
        let (status, note) = status(row);
        if let Some(note) = note {
            notes.push(format!("{} ({}): {note}", row.name, row.source));
        }
        cells.push([
            row.name.clone(),
            row.kind.to_owned(),
            row.version.clone(),
            status.to_owned(),
        ]);
    }
    let header = ["NAME", "KIND", "VERSION", "STATUS"];
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let room = width.saturating_sub(widths.iter().map(|w| w + 2).sum());
    let paths: Vec<String> = rows
        .iter()
        .map(|r| {
            r.location
                .as_deref()
                .map(|p| one_line(&short_path(p)).into_owned())
                .unwrap_or_default()
        })
        .collect();
    let longest = |texts: &mut dyn Iterator<Item = usize>| texts.max().unwrap_or(0);
    let path_width = longest(&mut paths.iter().map(|p| p.chars().count())).min(room / 3);
    let description_width = longest(&mut rows.iter().map(|r| r.description.chars().count()))
        .max("DESCRIPTION".len())
        .min(room.saturating_sub(path_width + 2));
    let line = |cells: [&str; 4], description: &str, path: &str| {
        let mut out = String::new();
        for (cell, w) in cells.iter().zip(widths) {
            out.push_str(&format!("{cell:<w$}  "));
        }
        let description = clip(description, description_width);
        out.push_str(&format!("{description:<description_width$}  "));
        out.push_str(&clip_front(path, path_width));
        println!("{}", out.trim_end());
    };
    line(
        header,
        "DESCRIPTION",
        if path_width >= 4 { "PATH" } else { "" },
    );
    for ((row, cell), path) in rows.iter().zip(&cells).zip(&paths) {
        line(cell.each_ref().map(String::as_str), &row.description, path);
    }
    // Whole, however long: a reason cut short would not say what to fix.
    for note in notes {
        println!("note: {note}");
    }
}

/// `text` cut at its front to at most `max` characters, with `…` when cut (a path keeps
/// its file name).
fn clip_front(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let tail: String = text.chars().skip(count - (max - 1)).collect();
    format!("…{tail}")
}

/// Every column, paths in full, nothing cut.
fn print_verbose(rows: &[Row]) {
    let standard_caps = short_capabilities(&StandardLoop::new().capabilities());
    let header = [
        "NAME",
        "SOURCE",
        "KIND",
        "VERSION",
        "WIT",
        "CAPABILITIES",
        "STATUS",
        "PATH",
        "DESCRIPTION",
    ];
    let cells: Vec<[String; 9]> = rows
        .iter()
        .map(|row| {
            let (wit, caps) = match &row.metadata {
                None => ("-".to_owned(), standard_caps.clone()),
                Some(m) => (
                    m.wit_version.clone().unwrap_or_else(|| "-".to_owned()),
                    m.capabilities.clone().unwrap_or_else(|| "-".to_owned()),
                ),
            };
            let status = match status(row) {
                ("invalid", Some(why)) => format!("invalid: {why}"),
                (_, Some(why)) => why,
                (word, None) => word.to_owned(),
            };
            [
                row.name.clone(),
                row.source.to_owned(),
                row.kind.to_owned(),
                row.version.clone(),
                wit,
                caps,
                status,
                row.location
                    .as_deref()
                    .map(|p| one_line(&p.display().to_string()).into_owned())
                    .unwrap_or_else(|| "-".to_owned()),
                row.description.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 9]| {
        let mut out = String::new();
        for (cell, w) in cells.iter().zip(widths) {
            out.push_str(&format!("{cell:<w$}  "));
        }
        println!("{}", out.trim_end());
    };
    line(header);
    for row in &cells {
        line(row.each_ref().map(String::as_str));
    }
}

/// `wonopcode loops validate` (`--validate-module`): the checks, in order, stopping at the
/// first that fails (what follows it could not run); then, for a valid guest, a separate
/// smoke call of its own tools, whose refusals are reported but are no failure. Exit 0 when
/// every check passes.
pub async fn validate(search: &Search<'_>, guest: Guest<'_>, json: bool) -> anyhow::Result<u8> {
    // A named module's grants are part of what it is: shown, as the listing shows them.
    let (source, name, grants) = match guest {
        Guest::File(path) => match LoopChoice::component(path) {
            LoopChoice::Oci(reference) => (LoopSource::Oci(reference), None, None),
            _ => (LoopSource::File(path.to_path_buf()), None, None),
        },
        Guest::Named(name) => {
            let entry = resolve(search, name)?;
            if let Some(agent) = entry.location.agent() {
                let config = config::load(search.config)?;
                return Ok(crate::agent_check::validate(&entry, agent, &config, json));
            }
            (entry.location, Some(name), Some(entry.context_tools.grants))
        }
    };
    // A published module is checked as the bytes its reference names now.
    let source = match source {
        LoopSource::Oci(reference) => {
            let fetched = wonopcode_session::loops::fetch_module(&reference)
                .await
                .map_err(|e| usage(e.to_string()))?;
            LoopSource::File(fetched.path)
        }
        other => other,
    };
    let Some(Component { bytes, origin }) = Component::of(&source)? else {
        let name = name.unwrap_or("standard");
        println!("`{name}` is the native loop: there is no module to validate");
        return Ok(exit::SUCCESS);
    };
    let engine = engine(cache_policy_of(search)?)?;
    // A hook component is checked as a hook entry would start it.
    if wonopcode_wasm_host::is_hook_component(&bytes) {
        return Ok(crate::hook_check::validate(engine, &bytes, &origin, json).await);
    }
    let (report, guest) = load_checked(engine, &bytes, &origin).await;
    let smoke = match &guest {
        Some(guest) => Some(smoke_custom_tools(guest).await),
        None => None,
    };
    if json {
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
                    Err(error) => json!({ "tool": t.tool, "status": "refused", "detail": error }),
                }).collect::<Vec<_>>()),
                Err(error) => json!({ "status": "failed", "detail": error }),
            }),
        });
        println!("{out}");
    } else {
        print_report(&origin, &report, smoke.as_ref(), grants.as_ref());
    }
    Ok(if report.passed() {
        exit::SUCCESS
    } else {
        exit::ERROR
    })
}

type Smoke = Result<Vec<wonopcode_wasm_host::check::ToolSmoke>, String>;

/// The report for a person: passed checks, the fatal one (nothing after it), the verdict,
/// and the smoke call of a valid guest's own tools under a heading of its own.
fn print_report(
    origin: &str,
    report: &wonopcode_wasm_host::check::Report,
    smoke: Option<&Smoke>,
    grants: Option<&ModuleGrants>,
) {
    println!("validating {origin}");
    for (check, outcome) in &report.checks {
        match outcome {
            Outcome::Ok(detail) => println!("  ok    {:<16}  {detail}", check.label()),
            Outcome::Failed(reason) => {
                println!("  FAIL  {:<16}  {reason}", check.label());
                break;
            }
            Outcome::Skipped => break,
        }
    }
    if let Some(grants) = grants.filter(|g| !g.is_empty()) {
        println!("  grants: {}", grants_text(grants));
    }
    let Some(name) = report.name.as_ref().filter(|_| report.passed()) else {
        let failed = report.checks.iter().find_map(|(check, outcome)| {
            matches!(outcome, Outcome::Failed(_)).then(|| check.label())
        });
        println!(
            "invalid: the `{}` check failed; the checks after it cannot run",
            failed.unwrap_or("?")
        );
        return;
    };
    println!(
        "valid: loop `{name}`, wonopcode:agent-loop@{}",
        report.wit_version.as_deref().unwrap_or("?")
    );
    match smoke {
        Some(Ok(tools)) if tools.is_empty() => {
            println!("custom tools: none registered in on-start");
        }
        Some(Ok(tools)) => {
            println!(
                "custom tools, each called once with {{}} (a refusal is expected of a tool with required arguments):"
            );
            for t in tools {
                let (mark, detail) = match &t.outcome {
                    Ok(answer) => ("answered", answer),
                    Err(error) => ("refused ", error),
                };
                println!(
                    "  {mark}  {:<14}  {}",
                    one_line(&t.tool),
                    first_line(detail)
                );
            }
        }
        Some(Err(error)) => println!(
            "custom tools: cannot start the guest: {}",
            first_line(error)
        ),
        None => {}
    }
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

/// The first line of `text` (a guest's), shown safely and cut to 100 characters.
fn first_line(text: &str) -> String {
    clip(&one_line(text.lines().next().unwrap_or_default()), 100)
}
