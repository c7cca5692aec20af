// The `custom-tool-handler` export shared by the probe guests; included after `agent_loop.rs`.

impl exports::wonopcode::agent_loop::custom_tool_handler::Guest for Probe {
    fn handle_tool_call(tool_id: String, _arguments: String) -> Result<String, String> {
        Err(format!("no tool {tool_id}"))
    }
}
