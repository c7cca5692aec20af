//! `wonopcode loops validate` of a hook component (`wonopcode:hooks`, `docs/hooks.md`): the
//! same command an agent loop goes through, told apart by what the component exports. The
//! checks are the ones a hook entry's first call makes — compiled, linked with WASI only,
//! instantiated and configured — each passing with a detail or failing with the reason.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use wonopcode_wasm_host::WasmEngine;
use wonopcode_wasm_host::hook::{HOOKS_VERSION, HookComponent, HookFault, HookGrants};

use crate::exit;

/// How long the instance may take to start and configure: a hook entry's default timeout.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// One check's outcome: its name, and its detail or the reason it failed.
type Step = (&'static str, Result<String, String>);

/// Validates the hook component `bytes` (named `origin`); exit 0 when every check passes.
/// Its `configure` is given `{}`: an entry's own settings may differ, so a refusal of the
/// empty ones is reported, not failed.
pub async fn validate(engine: Arc<WasmEngine>, bytes: &[u8], origin: &str, json: bool) -> u8 {
    let mut steps: Vec<Step> = vec![(
        "world",
        Ok(format!(
            "a wonopcode:hooks component (the host serves {HOOKS_VERSION})"
        )),
    )];
    let loaded = HookComponent::from_bytes(
        &engine,
        bytes,
        origin.to_owned(),
        "{}".to_owned(),
        HookGrants::default(),
    );
    let mut note = None;
    match loaded {
        Err(e) => steps.push(("load", Err(e.to_string()))),
        Ok(hook) => {
            steps.push((
                "load",
                Ok("compiled; exports the handler; imports WASI only".to_owned()),
            ));
            match hook.start_now(START_TIMEOUT).await {
                Ok(()) => steps.push((
                    "start",
                    Ok("instantiated; configure({}) accepted".to_owned()),
                )),
                Err(HookFault::SettingsRefused(why)) => {
                    steps.push(("start", Ok("instantiated".to_owned())));
                    note = Some(format!(
                        "configure({{}}) was refused ({why}): give the settings it needs in its hook entry"
                    ));
                }
                Err(fault) => steps.push(("start", Err(fault.to_string()))),
            }
        }
    }
    let valid = steps.iter().all(|(_, r)| r.is_ok());
    if json {
        let checks: Vec<_> = steps
            .iter()
            .map(|(check, r)| match r {
                Ok(detail) => json!({"check": check, "status": "ok", "detail": detail}),
                Err(reason) => json!({"check": check, "status": "failed", "detail": reason}),
            })
            .collect();
        println!(
            "{}",
            json!({"module": origin, "kind": "hook", "valid": valid, "checks": checks, "note": note})
        );
    } else {
        println!("validating {origin}");
        for (check, r) in &steps {
            match r {
                Ok(detail) => println!("  ok    {check:<16}  {detail}"),
                Err(reason) => println!("  FAIL  {check:<16}  {reason}"),
            }
        }
        if let Some(note) = &note {
            println!("  note: {note}");
        }
        if valid {
            println!("valid: hook component (name it in a hook entry with `type: component`)");
        } else {
            println!("invalid: hook component");
        }
    }
    if valid { exit::SUCCESS } else { exit::ERROR }
}
