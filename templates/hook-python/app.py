"""{{name}}: a wonopcode hook. Before a `bash` call it refuses commands containing a phrase
of its settings' `deny` list; everywhere else it has no say.

Build: python3 -m pip install -r requirements.txt && sh build.sh
Use: name {{name}}.wasm in a hook entry (see README.md).
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

# The phrases a command may not contain (the instance lives for the whole run).
DENY = ["rm -rf /"]


class Handler(exports.Handler):
    def configure(self, settings):
        global DENY
        try:
            value = json.loads(settings)
        except ValueError as e:
            raise Err(f"settings: {e}")
        if value is None:
            return
        if not isinstance(value, dict):
            raise Err("the settings must be a map")
        deny = value.get("deny", DENY)
        if not isinstance(deny, list) or not all(isinstance(p, str) for p in deny):
            raise Err("`deny` must be a list of strings")
        DENY = deny

    def before_tool(self, site, call):
        try:
            command = json.loads(call.arguments).get("command", "")
        except (ValueError, AttributeError):
            command = ""
        for phrase in DENY:
            if call.name == "bash" and phrase in command:
                verdict = types.ToolVerdict_Deny(f"commands containing `{phrase}` are not allowed")
                return types.BeforeToolAnswer(verdict=verdict, arguments=None)
        return types.BeforeToolAnswer(verdict=types.ToolVerdict_Pass(), arguments=None)

    def permission_request(self, site, call):
        return types.ToolVerdict_Pass()

    def after_tool(self, site, call, output, is_error):
        return None

    def on_turn(self, site, event):
        return types.TurnAnswer(block=None, context=None)
