// The `agent-loop` export shared by the probe guests (version and export checks); included
// after each probe's own `wit_bindgen::generate!`.

struct Probe;

impl exports::wonopcode::agent_loop::agent_loop::Guest for Probe {
    fn run_prompt(input: String) -> Result<String, wonopcode::agent_loop::types::LoopError> {
        Ok(input)
    }
    fn on_start() -> Result<(), wonopcode::agent_loop::types::LoopError> {
        Ok(())
    }
    fn on_complete(_result: String) -> Result<(), wonopcode::agent_loop::types::LoopError> {
        Ok(())
    }
    fn on_cancel() -> Result<(), wonopcode::agent_loop::types::LoopError> {
        Ok(())
    }
    fn get_name() -> String {
        "probe".to_owned()
    }
    fn get_capabilities() -> wonopcode::agent_loop::types::LoopCapabilities {
        wonopcode::agent_loop::types::LoopCapabilities {
            streaming: false,
            extended_thinking: false,
            parallel_tools: false,
            tool_observation: false,
            max_context: 0,
            auto_compaction: false,
            supports_sub_contexts: false,
            supports_custom_tools: false,
        }
    }
}
