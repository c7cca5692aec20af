#!/usr/bin/env python3
"""Draws a wonopcode `--trace` file (Chrome trace-event JSON) as an SVG timeline: one row per
context track in path order, context and turn spans as bars, tool calls as thin bars under
them. Perfetto (ui.perfetto.dev) opens the same file interactively; this picture is for docs
and for machines without a browser.

Usage: python3 scripts/trace_svg.py TRACE.json OUT.svg
"""

import json
import sys
from html import escape

ROW = 54          # height of one context's row
LEFT = 150        # room for track names
WIDTH = 1100      # drawing width in pixels
COLORS = {"context": "#4c78a8", "turn": "#72b7b2", "tool": "#f58518"}


def main(source, target):
    events = json.load(open(source))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    order = {e["tid"]: e["args"]["sort_index"] for e in events if e.get("name") == "thread_sort_index"}
    rows = {tid: i for i, tid in enumerate(sorted(names, key=lambda t: order.get(t, t)))}
    spans = []  # (tid, start, end, category, label)
    for e in events:
        if e.get("ph") == "X":
            spans.append((e["tid"], e["ts"], e["ts"] + e["dur"], e["cat"], e["name"]))
    begun = {}
    for e in events:
        if e.get("ph") == "b":
            begun[e["id"]] = e
        elif e.get("ph") == "e" and e["id"] in begun:
            b = begun.pop(e["id"])
            spans.append((b["tid"], b["ts"], e["ts"], "tool", b["name"]))
    end = max((s[2] for s in spans), default=1) or 1
    scale = WIDTH / end
    height = ROW * len(rows) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="100%" height="100%" fill="white"/>',
    ]
    for tid, row in rows.items():
        y = 10 + row * ROW
        out.append(f'<text x="8" y="{y + 16}" font-weight="bold">{escape(names[tid])}</text>')
        out.append(f'<line x1="{LEFT}" y1="{y + ROW - 4}" x2="{LEFT + WIDTH}" y2="{y + ROW - 4}" stroke="#ddd"/>')
    lane = {"context": 0, "turn": 16, "tool": 32}
    for tid, start, stop, category, label in sorted(spans, key=lambda s: (s[3] != "context", s[1])):
        if tid not in rows:
            continue
        x = LEFT + start * scale
        w = max((stop - start) * scale, 1.5)
        y = 10 + rows[tid] * ROW + lane.get(category, 0)
        h = 14 if category != "tool" else 10
        out.append(
            f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{h}" rx="2" '
            f'fill="{COLORS.get(category, "#999")}"><title>{escape(label)}</title></rect>'
        )
        if w > 40:
            text = label if len(label) * 6 < w else label[: max(int(w / 6) - 1, 1)] + "…"
            out.append(f'<text x="{x + 3:.1f}" y="{y + h - 3}" fill="white">{escape(text)}</text>')
    ms = end / 1000
    out.append(f'<text x="{LEFT}" y="{height - 8}" fill="#555">0 ms</text>')
    out.append(f'<text x="{LEFT + WIDTH - 60}" y="{height - 8}" fill="#555">{ms:.0f} ms</text>')
    out.append("</svg>")
    open(target, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: trace_svg.py TRACE.json OUT.svg")
    main(sys.argv[1], sys.argv[2])
