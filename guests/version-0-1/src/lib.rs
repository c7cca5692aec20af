//! Test guest built against wonopcode:agent-loop@0.1.0, which the host must refuse.

wit_bindgen::generate!({ path: "wit", world: "agent-loop-world" });

include!("../../probe/agent_loop.rs");
include!("../../probe/custom_tool_handler.rs");

export!(Probe);
