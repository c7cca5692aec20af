#!/usr/bin/env bash
# The client under test of the MCP conformance suite's client scenarios: wonopcode's MCP
# client (`wonopcode mcp`), pointed at the suite's test server. The suite runs this with the
# server's URL as the last argument, the scenario's name in MCP_CONFORMANCE_SCENARIO and, for
# some, what a user would have configured (a pre-registered OAuth client) as JSON in
# MCP_CONFORMANCE_CONTEXT. WONOPCODE_BIN names the binary under test.
set -euo pipefail
url="${!#}"
here="$(cd "$(dirname "$0")" && pwd)"
config="$(mktemp)"
# Each scenario signs in on its own (the suite runs them in parallel, all named `server`).
XDG_DATA_HOME="$(mktemp -d)"
export XDG_DATA_HOME
trap 'rm -rf "$config" "$XDG_DATA_HOME"' EXIT

# The server's entry, as a user would write it in the config file.
python3 - "$url" > "$config" <<'PY'
import json, os, sys
context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
entry = {"url": sys.argv[1]}
if os.environ.get("MCP_CONFORMANCE_SCENARIO") == "auth/basic-cimd":
    # The suite's stand-in for the document an organization publishes for its client.
    entry["oauth"] = {"client_metadata_url": "https://conformance-test.local/client-metadata.json"}
if "client_id" in context:
    entry["oauth"] = {"clientId": context["client_id"]}
    if "client_secret" in context:
        entry["oauth"]["client_secret_env_var"] = "CONFORMANCE_CLIENT_SECRET"
print(json.dumps({"mcp_servers": {"server": entry}}))
PY
CONFORMANCE_CLIENT_SECRET="$(python3 -c 'import json, os; print(json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}").get("client_secret", ""))')"
export CONFORMANCE_CLIENT_SECRET
# OAuth scenarios need no person to sign in: this "browser" follows the sign-in page's
# redirects back to wonopcode.
export BROWSER="python3 $here/browse.py"

wonopcode() {
  "${WONOPCODE_BIN:?WONOPCODE_BIN names the wonopcode binary}" mcp --config "$config" "$@"
}
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize) wonopcode list ;;
  tools_call) wonopcode call server add_numbers '{"a": 5, "b": 3}' ;;
  sse-retry) wonopcode call server test_reconnection ;;
  elicitation-sep1034-client-defaults) wonopcode --yes call server test_client_elicitation_defaults ;;
  # A tool call that needs more scopes than the sign-in got: signed in again, called again.
  auth/scope-step-up) wonopcode login server && wonopcode call server test-tool ;;
  auth/*) wonopcode login server && wonopcode list ;;
  *) wonopcode list ;;
esac
