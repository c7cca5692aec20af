//! A hook that misbehaves before a tool call, as its settings say: `{"do": "trap"}`
//! panics, `"spin"` loops forever, `"alloc"` grows a vector by 1 GiB, `"print"` writes to
//! stderr and then aborts, `"refuse"` fails `configure`; `"env"` and `"read"` deny the call
//! with what a variable or a file held (to show what it was granted); anything else passes.

use std::cell::RefCell;

use wonopcode_hook_sdk::{BeforeToolAnswer, Hook, Site, ToolCall, Value, deny, export_hook, pass};

thread_local! {
    static SETTINGS: RefCell<Value> = const { RefCell::new(Value::Null) };
    static CALLS: RefCell<u32> = const { RefCell::new(0) };
}

struct Misbehave;

impl Hook for Misbehave {
    fn configure(settings: Value) -> Result<(), String> {
        if settings["do"] == "refuse" {
            return Err("refusing on purpose".to_owned());
        }
        SETTINGS.with_borrow_mut(|s| *s = settings);
        Ok(())
    }

    fn before_tool(_site: &Site, call: &ToolCall) -> BeforeToolAnswer {
        let settings = SETTINGS.with_borrow(Value::clone);
        let calls = CALLS.with_borrow_mut(|n| {
            *n += 1;
            *n
        });
        match settings["do"].as_str().unwrap_or_default() {
            "trap" => panic!("misbehaving on purpose"),
            "print" => {
                eprintln!("Traceback: policy file missing");
                std::process::abort()
            }
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "alloc" => {
                let bomb: Vec<u8> = vec![1; 1 << 30];
                deny(format!("allocated {}", std::hint::black_box(bomb).len()))
            }
            "env" => deny(format!(
                "HOME={:?} SECRET={:?}",
                std::env::var("HOME").ok(),
                std::env::var("SECRET").ok()
            )),
            "read" => {
                let path = settings["path"].as_str().unwrap_or("/etc/hostname");
                deny(match std::fs::read_to_string(path) {
                    Ok(text) => format!("read: {}", text.trim()),
                    Err(e) => format!("cannot read: {e}"),
                })
            }
            "count" if call.arguments.contains("boom") => panic!("boom"),
            "count" => deny(format!("calls served: {calls}")),
            _ => pass(),
        }
    }
}

export_hook!(Misbehave);
