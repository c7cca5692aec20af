//! The user's config file changed by wonopcode itself (`mcp add`, an approval answered
//! "always, for you"): read as YAML, changed, checked to read as a config, and put in place
//! of the old file in one rename. The YAML parser keeps no comments, so a file that had
//! comments is copied beside it first (`config.yaml.bak`): nothing the person wrote is lost.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_yaml::{Mapping, Value};
use wonopcode_session::config::{self, Config};

use crate::session::usage;

/// The file to change: `--config`, else the user's config file.
pub fn path(file: Option<&Path>) -> anyhow::Result<PathBuf> {
    match file {
        Some(path) => Ok(path.to_path_buf()),
        None => config::default_path()
            .ok_or_else(|| usage("there is no config directory: give the file with --config")),
    }
}

/// The file as YAML (an empty mapping when it does not exist yet or is empty).
pub fn read(path: &Path) -> anyhow::Result<Value> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Value::Mapping(Mapping::new()));
    }
    serde_yaml::from_str(&text).map_err(|e| {
        usage(match e.location() {
            Some(at) => format!("{}:{}:{}: {e}", path.display(), at.line(), at.column()),
            None => format!("{}: {e}", path.display()),
        })
    })
}

/// The file's top level: a mapping of keys, or `Err` saying it is not one.
pub fn top<'a>(document: &'a mut Value, path: &Path) -> anyhow::Result<&'a mut Mapping> {
    match document {
        Value::Mapping(top) => Ok(top),
        _ => Err(usage(format!(
            "{}: a config file is a mapping of keys",
            path.display()
        ))),
    }
}

/// The mapping under `key` of `mapping`, made when it is missing or null; `Err` when the
/// file has something else there.
pub fn mapping_at<'a>(
    mapping: &'a mut Mapping,
    key: &str,
    path: &Path,
) -> anyhow::Result<&'a mut Mapping> {
    match slot(mapping, key, Value::Mapping(Mapping::new())) {
        Value::Mapping(inner) => Ok(inner),
        _ => Err(usage(format!(
            "{}: `{key}` is not a mapping",
            path.display()
        ))),
    }
}

/// The list under `key` of `mapping`, made when it is missing or null; `Err` when the file
/// has something else there.
pub fn list_at<'a>(
    mapping: &'a mut Mapping,
    key: &str,
    path: &Path,
) -> anyhow::Result<&'a mut Vec<Value>> {
    match slot(mapping, key, Value::Sequence(Vec::new())) {
        Value::Sequence(list) => Ok(list),
        _ => Err(usage(format!("{}: `{key}` is not a list", path.display()))),
    }
}

/// The value under `key` of `mapping`, `empty` where it is missing or null.
fn slot<'a>(mapping: &'a mut Mapping, key: &str, empty: Value) -> &'a mut Value {
    let value = mapping.entry(Value::from(key)).or_insert(Value::Null);
    if value.is_null() {
        *value = empty;
    }
    value
}

/// Replaces the file with `document`, once it reads as a config; a file with comments is
/// copied to `FILE.bak` first.
pub fn write(path: &Path, document: &Value) -> anyhow::Result<()> {
    let text = serde_yaml::to_string(document)?;
    if let Err(e) = serde_yaml::from_str::<Config>(&text) {
        return Err(usage(format!(
            "{}: the change would not read as a config ({e}); nothing was written",
            path.display()
        )));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    if let Ok(before) = std::fs::read_to_string(path)
        && before.lines().any(|l| l.trim_start().starts_with('#'))
    {
        let backup = path.with_extension("yaml.bak");
        std::fs::write(&backup, before)
            .with_context(|| format!("cannot keep the file before in {}", backup.display()))?;
        eprintln!(
            "note: comments are not kept; the file as it was is in {}",
            backup.display()
        );
    }
    // A new file is the user's alone (it may hold keys in `env`); an old one keeps its mode.
    let mut new = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut new, text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(new.path(), meta.permissions())?;
    }
    new.as_file().sync_all()?;
    new.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}
