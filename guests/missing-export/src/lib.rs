//! Test guest lacking the `custom-tool-handler` export, which the host must refuse.

wit_bindgen::generate!({ path: "wit", world: "agent-loop-world" });

include!("../../probe/agent_loop.rs");

export!(Probe);
