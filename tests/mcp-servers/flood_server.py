"""A stdio MCP server speaking JSON-RPC by hand, so it can misbehave exactly: `flood` sends
N `notifications/tools/list_changed` and N `notifications/message` before it answers, and
`lists` says how many times its tool list was asked for, and `huge` answers with a text of N
MiB on one line. The end-to-end tests use it to see wonopcode coalesce a flood of re-lists
instead of starting one per notification, and end a call at once on an answer over the
limit of one message instead of waiting for its timeout."""
import json
import sys

lists = 0
TOOLS = [
    {"name": "flood", "description": "Sends N list_changed and N log notifications.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "lists", "description": "How many times tools/list was called.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "huge", "description": "Answers with N MiB of text.",
     "inputSchema": {"type": "object", "properties": {"mib": {"type": "integer"}}, "required": ["mib"]}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value):
    return {"content": [{"type": "text", "text": str(value)}], "isError": False}


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        lists += 1
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call" and message["params"]["name"] == "flood":
        n = int(message["params"].get("arguments", {}).get("n", 0))
        for i in range(n):
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "x" * 200}})
        send({"jsonrpc": "2.0", "id": ident, "result": text(f"sent {n}")})
    elif method == "tools/call" and message["params"]["name"] == "huge":
        mib = int(message["params"].get("arguments", {}).get("mib", 0))
        send({"jsonrpc": "2.0", "id": ident, "result": text("x" * (mib << 20))})
    elif method == "tools/call" and message["params"]["name"] == "lists":
        send({"jsonrpc": "2.0", "id": ident, "result": text(lists)})
    else:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
