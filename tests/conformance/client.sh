#!/usr/bin/env bash
# The client under test of the MCP conformance suite's client scenarios: wonopcode's MCP
# client (`wonopcode mcp`), pointed at the suite's test server. The suite runs this with the
# server's URL as the last argument and the scenario's name in MCP_CONFORMANCE_SCENARIO;
# WONOPCODE_BIN names the binary under test.
set -euo pipefail
url="${!#}"
wonopcode=("${WONOPCODE_BIN:?WONOPCODE_BIN names the wonopcode binary}" mcp --mcp "server=$url")
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize) exec "${wonopcode[@]}" list ;;
  tools_call) exec "${wonopcode[@]}" call server add_numbers '{"a": 5, "b": 3}' ;;
  sse-retry) exec "${wonopcode[@]}" call server test_reconnection ;;
  elicitation-sep1034-client-defaults)
    exec "${wonopcode[@]}" call server test_client_elicitation_defaults ;;
  *) exec "${wonopcode[@]}" list ;;
esac
