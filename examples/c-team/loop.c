#define _GNU_SOURCE  // memmem
// team: an orchestrator in C on the raw bindings (`wonopcode loops new --lang c` writes
// them). A prompt that starts with "team:" goes to two specialists at once, each a fresh
// instance of this component playing the role its request names (`custom-data`): a
// researcher with `read` and `grep` on the provider's fast model, and a counter with no host
// tools but one of its own (`word_count`, run here) on the strong model. The lead answers
// with both results; any other prompt gets the standard loop. Build: sh build.sh.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent_loop_world.h"

typedef agent_loop_world_string_t string_t;
typedef exports_wonopcode_agent_loop_agent_loop_loop_error_t loop_error_t;
typedef wonopcode_agent_loop_context_spawn_request_t spawn_request_t;

// A string the bindings borrow (never freed): a literal, or part of another string.
static string_t text(const char *s) { string_t out; agent_loop_world_string_set(&out, s); return out; }
static bool is(const string_t *s, const char *t) { return s->len == strlen(t) && !memcmp(s->ptr, t, s->len); }
static bool same(const string_t *a, const string_t *b) { return a->len == b->len && !memcmp(a->ptr, b->ptr, a->len); }

// The current provider's model of a tier (0 fast, 1 strong), as the SDKs' tables say, when
// the host can open it; NULL keeps the parent's model.
static const char *tier_model(int tier) {
    static const char *tiers[][3] = {{"anthropic", "claude-haiku-4-5", "claude-sonnet-4-5"},
                                     {"openai", "gpt-5-mini", "gpt-5"},
                                     {"deepseek", "deepseek-chat", "deepseek-chat"}};
    string_t provider;
    if (!wonopcode_agent_loop_providers_get_current_provider(&provider)) return NULL;
    const char *model = NULL;
    for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++)
        if (is(&provider, tiers[i][0])) model = tiers[i][1 + tier];
    wonopcode_agent_loop_providers_list_provider_info_t listed;
    wonopcode_agent_loop_providers_list_providers(&listed);
    bool openable = false;
    for (size_t i = 0; model && i < listed.len; i++)
        for (size_t j = 0; same(&listed.ptr[i].id, &provider) && j < listed.ptr[i].models.len; j++)
            openable |= is(&listed.ptr[i].models.ptr[j], model);
    wonopcode_agent_loop_providers_list_provider_info_free(&listed);
    agent_loop_world_string_free(&provider);
    return openable ? model : NULL;
}

// `word_count`: the words of the `text` argument (a JSON string; its escapes count as spaces).
static string_t word_count(const string_t *arguments) {
    const char *at = memmem(arguments->ptr, arguments->len, "\"text\"", 6);
    size_t words = 0;
    if (at) {
        const char *end = (const char *)arguments->ptr + arguments->len;
        at = memchr(at + 6, '"', end - at - 6);
        bool in_word = false;
        for (const char *c = at ? at + 1 : end; c < end && *c != '"'; c++) {
            bool space = *c == ' ' || *c == '\\' || *c == '\t';
            if (*c == '\\' && c + 1 < end) c++;
            if (!space && !in_word) words++;
            in_word = !space;
        }
    }
    char out[32];
    snprintf(out, sizeof out, "%zu", words);
    string_t result;
    agent_loop_world_string_dup(&result, out);
    return result;
}

// The standard loop: turns over the enabled tools until one has no calls. A turn that calls
// `word_count` is run here (its arguments checked by the host first, each call shown), with
// any host tool of the same turn run by the host; other turns are the host's round.
static bool standard_loop(string_t *ret, loop_error_t *err) {
    agent_loop_world_list_string_t tools;
    wonopcode_agent_loop_tools_get_enabled_tools(&tools);
    wonopcode_agent_loop_providers_stream_options_t options = {0};
    bool ok = true;
    for (;;) {
        wonopcode_agent_loop_providers_collected_turn_t turn;
        string_t why;
        if (!wonopcode_agent_loop_providers_run_turn(&tools, &options, &turn, &why)) {
            err->tag = WONOPCODE_AGENT_LOOP_TYPES_LOOP_ERROR_PROVIDER_ERROR, err->val.provider_error = why;
            ok = false;
            break;
        }
        if (turn.tool_calls.len == 0) {
            *ret = turn.text, turn.text = (string_t){0};
            wonopcode_agent_loop_providers_collected_turn_free(&turn);
            break;
        }
        bool own = false;
        for (size_t i = 0; i < turn.tool_calls.len; i++) own |= is(&turn.tool_calls.ptr[i].name, "word_count");
        if (!own) {
            agent_loop_world_list_bool_t ran;
            if (wonopcode_agent_loop_tools_run_tool_round(turn.handle, &ran, &why)) {
                agent_loop_world_list_bool_free(&ran);
            } else {
                err->tag = WONOPCODE_AGENT_LOOP_TYPES_LOOP_ERROR_TOOL_ERROR, err->val.tool_error = why;
                ok = false;
            }
            wonopcode_agent_loop_providers_collected_turn_free(&turn);
            if (!ok) break;
            continue;
        }
        size_t n = turn.tool_calls.len;
        wonopcode_agent_loop_providers_tool_result_t *results = calloc(n, sizeof *results);
        for (size_t i = 0; i < n; i++) {
            wonopcode_agent_loop_providers_tool_call_t *call = &turn.tool_calls.ptr[i];
            results[i].call_id = call->id;
            wonopcode_agent_loop_ui_tool_start(&call->id, &call->name);
            if (is(&call->name, "word_count")) {
                string_t refused;
                if (wonopcode_agent_loop_custom_tools_check_arguments(&call->name, &call->arguments, &refused))
                    results[i].content = word_count(&call->arguments);
                else
                    results[i].content = refused, results[i].is_error = true;
            } else {
                wonopcode_agent_loop_tools_tool_execution_result_t done;
                if (wonopcode_agent_loop_tools_execute_tool(&call->name, &call->arguments, &done, &why)) {
                    results[i].content = done.content, done.content = (string_t){0};
                    results[i].is_error = !done.success;
                    wonopcode_agent_loop_tools_tool_execution_result_free(&done);
                } else {
                    results[i].content = why, results[i].is_error = true;
                }
            }
            wonopcode_agent_loop_ui_tool_result(&call->id, &results[i].content, results[i].is_error);
        }
        wonopcode_agent_loop_storage_message_t message = {
            .role = WONOPCODE_AGENT_LOOP_PROVIDERS_MESSAGE_ROLE_TOOL,
            .tool_results = {.is_some = true, .val = {.ptr = results, .len = n}}};
        wonopcode_agent_loop_storage_add_message(&message);
        for (size_t i = 0; i < n; i++) agent_loop_world_string_free(&results[i].content);
        free(results);
        wonopcode_agent_loop_providers_collected_turn_free(&turn);
    }
    agent_loop_world_list_string_free(&tools);
    return ok;
}

// A child of this component in `role` on the model of `tier`, with only `allowed` host tools.
static spawn_request_t specialist(string_t task, const char *role, int tier, string_t *allowed, size_t n) {
    const char *model = tier_model(tier);
    return (spawn_request_t){
        .module = {.tag = WONOPCODE_AGENT_LOOP_CONTEXT_CONTEXT_MODULE_SAME},
        .task = task,
        .allowed_tools = {.is_some = true, .val = {.ptr = allowed, .len = n}},
        .preferred_model = {.is_some = model != NULL, .val = text(model ? model : "")},
        .custom_data = {.is_some = true, .val = text(role)},
    };
}

bool exports_wonopcode_agent_loop_agent_loop_run_prompt(string_t *input, string_t *ret, loop_error_t *err) {
    wonopcode_agent_loop_storage_message_t prompt = {.role = WONOPCODE_AGENT_LOOP_PROVIDERS_MESSAGE_ROLE_USER,
                                                     .content = *input};
    spawn_request_t request;
    bool child = wonopcode_agent_loop_context_get_spawn_request(&request);
    bool lead = !child && input->len > 5 && !memcmp(input->ptr, "team:", 5);
    if (child) wonopcode_agent_loop_context_spawn_request_free(&request);
    if (!lead) {
        // A specialist (its host tools narrowed by its request), or a prompt for the lead itself.
        wonopcode_agent_loop_storage_add_message(&prompt);
        agent_loop_world_string_free(input);
        return standard_loop(ret, err);
    }
    string_t task = {.ptr = input->ptr + 5, .len = input->len - 5};
    string_t researching[] = {text("read"), text("grep")};
    spawn_request_t team[] = {specialist(task, "researcher", 0, researching, 2),
                              specialist(task, "counter", 1, NULL, 0)};
    wonopcode_agent_loop_context_list_spawn_request_t requests = {.ptr = team, .len = 2};
    wonopcode_agent_loop_context_list_result_context_result_string_t results;
    wonopcode_agent_loop_context_spawn_parallel(&requests, NULL, &results);
    size_t size = 1;
    for (size_t i = 0; i < results.len; i++) size += results.ptr[i].val.ok.response.len + 64;
    char *answer = malloc(size), *at = answer;
    *at = 0;
    for (size_t i = 0; i < results.len; i++) {
        wonopcode_agent_loop_context_result_context_result_string_t *r = &results.ptr[i];
        string_t *said = r->is_err ? &r->val.err : &r->val.ok.response;
        at += snprintf(at, size - (at - answer), "%s: %.*s\n", r->is_err ? "failed" : "answer",
                       (int)said->len, (const char *)said->ptr);
    }
    wonopcode_agent_loop_context_list_result_context_result_string_free(&results);
    agent_loop_world_string_free(input);
    agent_loop_world_string_dup(ret, answer);
    free(answer);
    return true;
}

void exports_wonopcode_agent_loop_agent_loop_get_name(string_t *ret) { agent_loop_world_string_dup(ret, "team"); }

void exports_wonopcode_agent_loop_agent_loop_get_capabilities(
    exports_wonopcode_agent_loop_agent_loop_loop_capabilities_t *ret) {
    memset(ret, 0, sizeof *ret);
    ret->streaming = ret->tool_observation = ret->supports_sub_contexts = ret->supports_custom_tools = true;
}

// Every instance registers `word_count`: a child's custom tools are its own.
bool exports_wonopcode_agent_loop_agent_loop_on_start(loop_error_t *err) {
    wonopcode_agent_loop_custom_tools_custom_tool_definition_t tool = {
        .id = text("word_count"),
        .name = text("word_count"),
        .description = text("Count the words of a text."),
        .parameters_schema = text("{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
                                  "\"required\":[\"text\"]}"),
        .enabled_by_default = true};
    string_t why;
    if (wonopcode_agent_loop_custom_tools_register_tool(&tool, &why)) return true;
    err->tag = WONOPCODE_AGENT_LOOP_TYPES_LOOP_ERROR_TOOL_ERROR, err->val.tool_error = why;
    return false;
}

bool exports_wonopcode_agent_loop_agent_loop_on_complete(string_t *result, loop_error_t *err) {
    agent_loop_world_string_free(result);
    return true;
}

bool exports_wonopcode_agent_loop_agent_loop_on_cancel(loop_error_t *err) { return true; }

// Calls the host starts itself (validation) reach the same tool.
bool exports_wonopcode_agent_loop_custom_tool_handler_handle_tool_call(string_t *tool_id, string_t *arguments,
                                                                       string_t *ret, string_t *err) {
    bool known = is(tool_id, "word_count");
    if (known) *ret = word_count(arguments);
    else agent_loop_world_string_dup(err, "team has no such tool");
    agent_loop_world_string_free(tool_id);
    agent_loop_world_string_free(arguments);
    return known;
}
