//! The hook table: per event, groups of hooks with a matcher, in Claude Code's shape
//! (`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "..."}]}]}`),
//! read from wonopcode's config file and Claude Code's settings files alike.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;
use wonopcode_wasm_host::WasmEngine;
use wonopcode_wasm_host::hook::{HookComponent, HookGrants};

use crate::HookError;
use crate::event::HookEvent;

/// How long a hook may run when its entry does not say (seconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What happens when a hook crashes, hangs or prints what cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureMode {
    /// The call goes on as if the hook had not spoken.
    Open,
    /// The call is refused.
    Closed,
}

/// One hook of a group: a command or a component, with its limits.
#[derive(Debug, Clone)]
pub struct HookEntry {
    /// What runs.
    pub kind: HookKind,
    /// How long it may run.
    pub timeout: Duration,
    /// What a failure of it means; `None`: the event's default (closed before a tool runs,
    /// open elsewhere).
    pub failure: Option<FailureMode>,
    /// The file it was configured in, for messages.
    pub source: String,
    /// Whether that file is the workspace's (a repository's settings or agent file): its
    /// `allow` answers approve nothing, and its component grants reach nothing outside.
    pub from_workspace: bool,
}

/// What a hook runs.
#[derive(Debug, Clone)]
pub enum HookKind {
    /// A shell command (run with `sh -c`), Claude Code's `type: command`.
    Command(String),
    /// A component of the `wonopcode:hooks` world (`type: component`).
    Component(ComponentHook),
}

/// A component hook's entry.
#[derive(Debug, Clone)]
pub struct ComponentHook {
    /// The component file: relative to the directory of the file that configures it, or
    /// (configured without a file) to the workspace.
    pub path: PathBuf,
    /// What its `configure` is given.
    pub settings: Value,
    /// Directories it may read (relative ones in the workspace).
    pub read: Vec<PathBuf>,
    /// Environment variables it sees (their values from the run's environment).
    pub env: Vec<String>,
    /// The component, once the table's components are loaded.
    pub loaded: Option<Arc<HookComponent>>,
}

impl HookEntry {
    /// What the hook is called in items, traces and messages: its command, or its
    /// component's file name.
    pub fn name(&self) -> String {
        match &self.kind {
            HookKind::Command(command) => command.clone(),
            HookKind::Component(c) => c.path.file_name().map_or_else(
                || c.path.display().to_string(),
                |name| name.to_string_lossy().into_owned(),
            ),
        }
    }

    /// Whether two entries run the same thing (Claude Code runs identical handlers once).
    fn same_as(&self, other: &Self) -> bool {
        match (&self.kind, &other.kind) {
            (HookKind::Command(a), HookKind::Command(b)) => a == b,
            // As `load_components` shares an instance: the same file, settings and grants.
            (HookKind::Component(a), HookKind::Component(b)) => {
                a.path == b.path && a.settings == b.settings && a.read == b.read && a.env == b.env
            }
            _ => false,
        }
    }
}

/// Hooks of one event that share a matcher.
#[derive(Debug, Clone)]
pub struct HookGroup {
    /// Which tool names it applies to (anchored); `None`: all.
    pub matcher: Option<Regex>,
    /// Its hooks, in order.
    pub hooks: Vec<HookEntry>,
}

impl HookGroup {
    /// Whether the group applies to a call of wonopcode's `tool` (matched by its own name or
    /// by Claude Code's name for it, so `Bash` and `bash` both match).
    pub fn matches(&self, tool: &str) -> bool {
        self.matcher.as_ref().is_none_or(|re| {
            re.is_match(tool) || re.is_match(wonopcode_protocol::claude_code::claude_tool(tool))
        })
    }
}

/// Every configured hook, by event.
#[derive(Debug, Clone, Default)]
pub struct HookTable {
    events: Vec<(HookEvent, Vec<HookGroup>)>,
}

impl HookTable {
    /// The table of a `hooks` value (a JSON object in Claude Code's shape) read from
    /// `source`. A shape error names the file and where in it.
    pub fn parse(value: &Value, source: &str) -> Result<Self, HookError> {
        let bad = |at: &str, why: &str| HookError::Config {
            file: source.to_owned(),
            at: at.to_owned(),
            why: why.to_owned(),
        };
        let Value::Object(events) = value else {
            return Err(bad("hooks", "must be a map of event names"));
        };
        let mut table = Self::default();
        for (name, groups) in events {
            let Some(event) = HookEvent::parse(name) else {
                let names: Vec<_> = HookEvent::ALL.iter().map(|e| e.name()).collect();
                return Err(bad(
                    &format!("hooks.{name}"),
                    &format!("unknown event; the events are {}", names.join(", ")),
                ));
            };
            let Value::Array(groups) = groups else {
                return Err(bad(&format!("hooks.{event}"), "must be a list of groups"));
            };
            let mut parsed = Vec::with_capacity(groups.len());
            for (i, group) in groups.iter().enumerate() {
                let at = format!("hooks.{event}[{i}]");
                parsed.push(parse_group(group, &at, source).map_err(|why| bad(&at, &why))?);
            }
            table.events.push((event, parsed));
        }
        Ok(table)
    }

    /// This table with `other`'s hooks after its own.
    pub fn merged(mut self, other: Self) -> Self {
        for (event, groups) in other.events {
            match self.events.iter_mut().find(|(e, _)| *e == event) {
                Some((_, own)) => own.extend(groups),
                None => self.events.push((event, groups)),
            }
        }
        self
    }

    /// The hooks of `event` whose matcher takes `subject` (a call's tool, a session's
    /// source, a child's agent type), or of every group when there is no subject (an event
    /// Claude Code gives no matcher to), in configuration order; each command once, as
    /// Claude Code runs identical handlers once.
    pub fn matching(&self, event: HookEvent, subject: Option<&str>) -> Vec<&HookEntry> {
        let mut hooks: Vec<&HookEntry> = Vec::new();
        let groups = self
            .groups(event)
            .filter(|g| subject.is_none_or(|s| g.matches(s)));
        for hook in groups.flat_map(|g| &g.hooks) {
            if !hooks.iter().any(|h| h.same_as(hook)) {
                hooks.push(hook);
            }
        }
        hooks
    }

    /// This table as the hooks of one module or agent (its `hooks:`): as in Claude Code's
    /// agent files, a `Stop` hook also runs when its context ends as a child (`SubagentStop`).
    pub fn scoped(mut self) -> Self {
        let stops: Vec<HookGroup> = self.groups(HookEvent::Stop).cloned().collect();
        if !stops.is_empty() {
            self = self.merged(Self {
                events: vec![(HookEvent::SubagentStop, stops)],
            });
        }
        self
    }

    /// This table as configured by a workspace's file: the workspace never widens what a
    /// run may do, so its hooks' `allow` answers count for nothing, and a component hook
    /// keeps only `read` grants of relative paths inside the workspace and no `env` grant.
    /// One line per grant left out.
    pub fn from_workspace(mut self) -> (Self, Vec<String>) {
        let mut dropped = Vec::new();
        for entry in self.entries_mut() {
            entry.from_workspace = true;
            let HookKind::Component(c) = &mut entry.kind else {
                continue;
            };
            let inside = |p: &PathBuf| {
                p.is_relative()
                    && p.components().all(|part| {
                        matches!(
                            part,
                            std::path::Component::Normal(_) | std::path::Component::CurDir
                        )
                    })
            };
            for read in c.read.iter().filter(|p| !inside(p)) {
                dropped.push(format!(
                    "{}: the workspace's hook may not be granted `read: {}` (ignored; a grant outside the workspace comes from your own settings)",
                    entry.source,
                    read.display()
                ));
            }
            c.read.retain(inside);
            for name in c.env.drain(..) {
                dropped.push(format!(
                    "{}: the workspace's hook may not be granted `env: {name}` (ignored; a variable comes from your own settings)",
                    entry.source
                ));
            }
        }
        (self, dropped)
    }

    /// Whether a component hook is configured (so an engine is needed).
    pub fn has_components(&self) -> bool {
        self.entries()
            .any(|h| matches!(h.kind, HookKind::Component(_)))
    }

    /// Reads, compiles and links every component hook; `workspace` is where relative
    /// paths start, `env` where granted variables' values come from. Entries of the same
    /// component with the same settings and grants (one policy configured for several
    /// events) share one instance, so what it saw at one event it knows at the next. A
    /// component that cannot load is an error naming its file and where it is configured.
    pub fn load_components(
        &mut self,
        engine: &Arc<WasmEngine>,
        workspace: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), HookError> {
        let mut loaded: Vec<(PathBuf, String, HookGrants, Arc<HookComponent>)> = Vec::new();
        for entry in self.entries_mut() {
            let HookKind::Component(c) = &mut entry.kind else {
                continue;
            };
            let grants = HookGrants {
                read: c.read.iter().map(|d| workspace.join(d)).collect(),
                env: c
                    .env
                    .iter()
                    .filter_map(|name| env(name).map(|value| (name.clone(), value)))
                    .collect(),
            };
            let path = workspace.join(&c.path);
            let settings = c.settings.to_string();
            let same = loaded
                .iter()
                .find(|(p, s, g, _)| *p == path && *s == settings && *g == grants);
            let component = match same {
                Some((.., component)) => component.clone(),
                None => {
                    let component =
                        HookComponent::load(engine, &path, settings.clone(), grants.clone())
                            .map_err(|e| HookError::Component {
                                file: entry.source.clone(),
                                why: e.to_string(),
                            })?;
                    let component = Arc::new(component);
                    loaded.push((path.clone(), settings, grants, component.clone()));
                    component
                }
            };
            c.path = path;
            c.loaded = Some(component);
        }
        Ok(())
    }

    fn entries_mut(&mut self) -> impl Iterator<Item = &mut HookEntry> {
        self.events
            .iter_mut()
            .flat_map(|(_, groups)| groups.iter_mut())
            .flat_map(|g| g.hooks.iter_mut())
    }

    fn entries(&self) -> impl Iterator<Item = &HookEntry> {
        self.events
            .iter()
            .flat_map(|(_, groups)| groups)
            .flat_map(|g| &g.hooks)
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.events
            .iter()
            .all(|(_, groups)| groups.iter().all(|g| g.hooks.is_empty()))
    }

    fn groups(&self, event: HookEvent) -> impl Iterator<Item = &HookGroup> {
        self.events
            .iter()
            .filter(move |(e, _)| *e == event)
            .flat_map(|(_, groups)| groups)
    }
}

/// One `{matcher, hooks}` group.
fn parse_group(group: &Value, at: &str, source: &str) -> Result<HookGroup, String> {
    let Value::Object(fields) = group else {
        return Err("must be a map with `matcher` and `hooks`".to_owned());
    };
    let matcher = match fields.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.is_empty() || m == "*" => None,
        Some(Value::String(m)) => Some(Regex::new(&format!("^(?:{m})$")).map_err(|e| {
            // The regex crate's message draws the pattern over several lines; its
            // last line says what is wrong.
            let what = e.to_string();
            let what = what.lines().last().unwrap_or_default().trim().to_owned();
            format!(
                "matcher `{m}` is not a valid pattern: {}",
                what.trim_start_matches("error: ")
            )
        })?),
        Some(_) => return Err("`matcher` must be a string".to_owned()),
    };
    let Some(Value::Array(hooks)) = fields.get("hooks") else {
        return Err("`hooks` (a list) is required".to_owned());
    };
    let hooks = hooks
        .iter()
        .enumerate()
        .map(|(i, hook)| {
            parse_hook(hook, source).map_err(|why| format!("hooks[{i}] of {at}: {why}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HookGroup { matcher, hooks })
}

/// One `{type: command, command}` or `{type: component, component, settings, grants}`
/// hook, with its `timeout` and `failure`.
fn parse_hook(hook: &Value, source: &str) -> Result<HookEntry, String> {
    let Value::Object(fields) = hook else {
        return Err("must be a map with `type` and `command`".to_owned());
    };
    let kind = match fields.get("type").and_then(Value::as_str) {
        Some("command") => HookKind::Command(
            fields
                .get("command")
                .and_then(Value::as_str)
                .filter(|c| !c.trim().is_empty())
                .ok_or("`command` (a non-empty string) is required")?
                .to_owned(),
        ),
        Some("component") => HookKind::Component(parse_component(fields, source)?),
        Some(other) => {
            return Err(format!(
                "type `{other}` is not supported; wonopcode runs `command` and `component` hooks"
            ));
        }
        None => return Err("`type` is required (`command` or `component`)".to_owned()),
    };
    let timeout = match fields.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(t) => t
            .as_f64()
            .filter(|s| *s > 0.0 && s.is_finite())
            .map(Duration::from_secs_f64)
            .ok_or("`timeout` must be a positive number of seconds")?,
    };
    let failure = match fields.get("failure").and_then(Value::as_str) {
        None => None,
        Some("open" | "fail-open") => Some(FailureMode::Open),
        Some("closed" | "fail-closed") => Some(FailureMode::Closed),
        Some(other) => {
            return Err(format!("failure `{other}` is not `open` or `closed`"));
        }
    };
    Ok(HookEntry {
        kind,
        timeout,
        failure,
        source: source.to_owned(),
        from_workspace: false,
    })
}

/// A component hook's fields: `component` (its file, relative to the configuring file's
/// directory), `settings`, and `grants: {read: [dirs], env: [names]}`.
fn parse_component(
    fields: &serde_json::Map<String, Value>,
    source: &str,
) -> Result<ComponentHook, String> {
    let file = fields
        .get("component")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or("`component` (the path of a .wasm file) is required")?;
    let path = expand_home(file);
    // Relative to the configuring file's directory, made absolute now: the run may work
    // in another directory than the one the file was named from.
    let file_dir = Path::new(source)
        .is_file()
        .then(|| Path::new(source).parent().map(std::path::absolute))
        .flatten()
        .and_then(Result::ok);
    let path = match file_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    };
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match fields.get("grants").and_then(|g| g.get(key)) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(list)) => list
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or(format!("`grants.{key}` must be a list of strings")),
            Some(_) => Err(format!("`grants.{key}` must be a list of strings")),
        }
    };
    if let Some(Value::Object(grants)) = fields.get("grants")
        && let Some(other) = grants
            .keys()
            .find(|k| !["read", "env"].contains(&k.as_str()))
    {
        return Err(format!(
            "`grants.{other}` is not a grant; a component hook may be granted `read` and `env`"
        ));
    }
    Ok(ComponentHook {
        path,
        settings: fields.get("settings").cloned().unwrap_or(Value::Null),
        read: strings("read")?
            .into_iter()
            .map(|d| expand_home(&d))
            .collect(),
        env: strings("env")?,
        loaded: None,
    })
}

/// `path` with a leading `~/` read as the user's home.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_code_settings_parse_and_match_by_either_name() {
        let value = json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}]},
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "./fmt.sh"}]},
                {"hooks": [{"type": "command", "command": "./log.sh"}, {"type": "command", "command": "./check.sh"}]}
            ],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "./bye.sh"}]}]
        });
        let table = HookTable::parse(&value, ".claude/settings.json").unwrap();
        let names = |tool: &str| -> Vec<String> {
            table
                .matching(HookEvent::PreToolUse, Some(tool))
                .iter()
                .map(|h| h.name())
                .collect()
        };
        assert_eq!(names("bash"), ["./check.sh", "./log.sh"]);
        assert_eq!(names("write"), ["./fmt.sh", "./log.sh", "./check.sh"]);
        // Anchored: `Bash` does not match `bash_extra`.
        assert_eq!(names("bash_extra"), ["./log.sh", "./check.sh"]);
        assert_eq!(
            table.matching(HookEvent::PreToolUse, Some("bash"))[0].timeout,
            Duration::from_secs(5)
        );
    }

    #[test]
    fn a_bad_entry_names_its_file_and_place() {
        let cases = [
            (json!({"PreToolUs": []}), "hooks.PreToolUs: unknown event"),
            (
                json!({"PreToolUse": [{"matcher": "(", "hooks": []}]}),
                "hooks.PreToolUse[0]: matcher `(` is not a valid pattern",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "?"}]}]}),
                "hooks[0] of hooks.PreToolUse[0]: type `prompt` is not supported",
            ),
            (
                json!({"PostToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}),
                "`timeout` must be a positive number of seconds",
            ),
        ];
        for (value, says) in cases {
            let e = HookTable::parse(&value, "s.json").unwrap_err().to_string();
            assert!(e.starts_with("s.json: "), "{e}");
            assert!(e.contains(says), "{e}");
        }
    }
}
