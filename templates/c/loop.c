// {{name}}: a wonopcode agent loop in C. It runs the standard loop: stream a model turn
// from the stored history, let the host run the tool calls, and repeat until the model
// answers. The bindings (agent_loop_world.*) are wit-bindgen's for wit/; build.sh builds.
#include <string.h>
#include "agent_loop_world.h"

typedef agent_loop_world_string_t string_t;

static void set_error(exports_wonopcode_agent_loop_agent_loop_loop_error_t *err,
                      uint8_t tag, string_t *why) {
    err->tag = tag;
    err->val.internal = *why;  // every case of the error holds one string; it moves
}

void exports_wonopcode_agent_loop_agent_loop_get_name(string_t *ret) {
    agent_loop_world_string_dup(ret, "{{name}}");
}

void exports_wonopcode_agent_loop_agent_loop_get_capabilities(
    exports_wonopcode_agent_loop_agent_loop_loop_capabilities_t *ret) {
    memset(ret, 0, sizeof *ret);
    ret->streaming = true;
    ret->tool_observation = true;
}

bool exports_wonopcode_agent_loop_agent_loop_run_prompt(
    string_t *input, string_t *ret, exports_wonopcode_agent_loop_agent_loop_loop_error_t *err) {
    wonopcode_agent_loop_storage_message_t prompt = {
        .role = WONOPCODE_AGENT_LOOP_PROVIDERS_MESSAGE_ROLE_USER, .content = *input};
    wonopcode_agent_loop_storage_add_message(&prompt);
    agent_loop_world_string_free(input);

    agent_loop_world_list_string_t tools;
    wonopcode_agent_loop_tools_get_enabled_tools(&tools);
    wonopcode_agent_loop_providers_stream_options_t options = {0};
    for (;;) {
        wonopcode_agent_loop_providers_collected_turn_t turn;
        string_t why;
        if (!wonopcode_agent_loop_providers_run_turn(&tools, &options, &turn, &why)) {
            agent_loop_world_list_string_free(&tools);
            set_error(err, WONOPCODE_AGENT_LOOP_TYPES_LOOP_ERROR_PROVIDER_ERROR, &why);
            return false;
        }
        if (turn.error.is_some) {
            string_t failed = turn.error.val;
            turn.error.is_some = false;
            wonopcode_agent_loop_providers_collected_turn_free(&turn);
            agent_loop_world_list_string_free(&tools);
            set_error(err, WONOPCODE_AGENT_LOOP_TYPES_LOOP_ERROR_PROVIDER_ERROR, &failed);
            return false;
        }
        if (turn.tool_calls.len == 0) {
            *ret = turn.text;  // the answer; the turn's other parts are freed
            turn.text = (string_t){0};
            wonopcode_agent_loop_providers_collected_turn_free(&turn);
            agent_loop_world_list_string_free(&tools);
            return true;
        }
        // The host runs the calls (asking where it must) and stores their results.
        agent_loop_world_list_bool_t ran;
        bool ok = wonopcode_agent_loop_tools_run_tool_round(turn.handle, &ran, &why);
        wonopcode_agent_loop_providers_collected_turn_free(&turn);
        if (!ok) {
            agent_loop_world_list_string_free(&tools);
            set_error(err, WONOPCODE_AGENT_LOOP_TYPES_LOOP_ERROR_TOOL_ERROR, &why);
            return false;
        }
        agent_loop_world_list_bool_free(&ran);
    }
}

bool exports_wonopcode_agent_loop_agent_loop_on_start(
    exports_wonopcode_agent_loop_agent_loop_loop_error_t *err) { return true; }

bool exports_wonopcode_agent_loop_agent_loop_on_complete(
    string_t *result, exports_wonopcode_agent_loop_agent_loop_loop_error_t *err) {
    agent_loop_world_string_free(result);
    return true;
}

bool exports_wonopcode_agent_loop_agent_loop_on_cancel(
    exports_wonopcode_agent_loop_agent_loop_loop_error_t *err) { return true; }

bool exports_wonopcode_agent_loop_custom_tool_handler_handle_tool_call(
    string_t *tool_id, string_t *arguments, string_t *ret, string_t *err) {
    agent_loop_world_string_free(tool_id);
    agent_loop_world_string_free(arguments);
    agent_loop_world_string_dup(err, "{{name}} has no tools of its own");
    return false;
}
