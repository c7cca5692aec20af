//! {{name}}: a wonopcode agent loop. It runs the standard loop: stream a model turn from the
//! stored history, run the tool calls on the host, and repeat until the model answers.
//! Change `run_prompt` to decide which model to ask, which tools to offer, and when to hand
//! work to a specialist (`Spawn`); see wonopcode's docs/guest-authoring.md.
//!
//! Build: `cargo build --release --target wasm32-wasip2`
//! Check: `wonopcode loops validate target/wasm32-wasip2/release/{{crate}}.wasm`
//! Test:  `wonopcode loops test tests.yaml`

use wonopcode_guest_sdk::{Agent, Loop, LoopError, export_loop};

#[derive(Default)]
struct Guest;

impl Loop for Guest {
    fn name(&self) -> String {
        "{{name}}".to_owned()
    }

    fn run_prompt(&mut self, input: String) -> Result<String, LoopError> {
        Agent::default().run(input)
    }

    fn resume(&mut self) -> Result<String, LoopError> {
        Agent::default().resume()
    }
}

export_loop!(Guest);
