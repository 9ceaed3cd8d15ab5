#!/usr/bin/env python3
"""Outside client for runread: read a run's history with the official MCP Python SDK.

    python read_history.py --url http://127.0.0.1:PORT/mcp --key-file KEY [--limit N] [--out FILE]

Steps: ``tools/list`` (must list ``list_granted_targets`` and ``read_history``), list granted
targets and pick the first whose features include ``history`` (or the one with ``--run``),
then call ``read_history`` page by page, following ``nextCursor`` until ``eof`` (or until
a cursor repeats with nothing pending), and **upsert** the events by ``sequence``.

Every page is checked: ``isError`` false, one text block
``<tool_result tool="read_history" trust="untrusted">\\n{json}\\n</tool_result>`` whose JSON
equals ``structuredContent``, ``trust``/``instructions``, every event's field types, sequences
increasing within a page and not above ``highWaterSequence``. At the end: without a ``gap``,
the sequences are contiguous, and at ``eof`` the last one equals ``highWaterSequence``.

On success prints one JSON line (``"ok": true``, counts, flags) and exits 0; ``--out`` gets the
upserted events, sorted by sequence, as a JSON array (the shape ``runread read history --out``
writes). On failure prints ``read_history: FAIL: <reason>`` on stderr and exits 1 (2 for usage
errors). Needs read_final_answer.py beside it (shared helpers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

sys.dont_write_bytecode = True  # importing the helpers must not leave __pycache__/ in the source tree
from read_final_answer import (MODES, check_block, check_trust, connect, describe, fail, pick_target, require_tools,
                               structured, wire_summary)

TOOL = "read_history"
MAX_PAGES = 100_000
EVENT_FIELDS = {
    "sequence": int,
    "role": str,
    "toolName": (str, type(None)),
    "toolCalls": list,
    "text": (str, type(None)),
    "readable": bool,
    "truncated": bool,
    "upstreamTruncated": bool,
    "bodyUnavailable": bool,
    "redactionPending": bool,
}


def check_event(where: str, ev: Any) -> dict[str, Any]:
    if not isinstance(ev, dict):
        fail(f"{where}: event is not an object")
    for name, typ in EVENT_FIELDS.items():
        if name not in ev:
            fail(f"{where}: event lacks {name!r}")
        v = ev[name]
        if isinstance(v, bool) and typ is int:
            fail(f"{where}: {name} is a boolean")
        if not isinstance(v, typ):
            fail(f"{where}: {name} is {type(v).__name__}")
    if ev["sequence"] < 1:
        fail(f"{where}: sequence {ev['sequence']} < 1")
    if not all(isinstance(t, str) for t in ev["toolCalls"]):
        fail(f"{where}: toolCalls holds a non-string")
    return ev


async def run(opts: argparse.Namespace) -> dict[str, Any]:
    async with connect(opts, "runread-read-history") as client:
        await require_tools(client, "list_granted_targets", TOOL)
        target = await pick_target(client, "history", opts.run)

        events: dict[int, dict[str, Any]] = {}
        upserts = changed = polls = 0
        pages = 0
        cursor: str | None = None
        seen: set[str] = set()
        high_water: int | None = None
        flags = {"gap": False, "truncated": False, "redactionPending": False}
        gap_reasons: set[str] = set()
        eof = caught_up = False
        while not eof:
            args: dict[str, Any] = {"target": target}
            if cursor is not None:
                args["cursor"] = cursor
            if opts.limit is not None:
                args["limit"] = opts.limit
            res = await client.call_tool(TOOL, args)
            where = f"{TOOL} page {pages}"
            sc = structured(TOOL, res)
            if check_block(TOOL, res) != sc:
                fail(f"{where}: JSON in the text block differs from structuredContent")
            check_trust(where, sc)
            if sc.get("readable") is not True:
                fail(f"{where}: readable is {sc.get('readable')!r}")
            page = sc.get("events")
            if not isinstance(page, list):
                fail(f"{where}: events is not a list")
            if opts.limit is not None and len(page) > opts.limit:
                fail(f"{where}: {len(page)} events at limit {opts.limit}")
            hw = sc.get("highWaterSequence")
            if hw is not None and (not isinstance(hw, int) or isinstance(hw, bool)):
                fail(f"{where}: highWaterSequence is {hw!r}")
            if high_water is not None and hw is not None and hw < high_water:
                fail(f"{where}: highWaterSequence went back from {high_water} to {hw}")
            if hw is not None:
                high_water = hw
            last = 0
            pending = bool(sc.get("redactionPending"))
            for i, raw in enumerate(page):
                ev = check_event(f"{where} event {i}", raw)
                seq = ev["sequence"]
                if seq <= last:
                    fail(f"{where}: sequence {seq} after {last} in one page")
                if hw is not None and seq > hw:
                    fail(f"{where}: sequence {seq} above highWaterSequence {hw}")
                last = seq
                pending = pending or ev["redactionPending"]
                if seq in events:
                    upserts += 1
                    changed += events[seq] != ev
                events[seq] = ev
            for f in flags:
                v = sc.get(f)
                if not isinstance(v, bool):
                    fail(f"{where}: {f} is {v!r}")
                flags[f] = flags[f] or v
            gap_reasons.update(sc.get("gapReasons") or [])
            pages += 1
            eof = sc.get("eof") is True
            if eof:
                break
            nxt = sc.get("nextCursor")
            if not isinstance(nxt, str) or not nxt:
                fail(f"{where}: eof is false but nextCursor is {nxt!r}")
            if nxt in seen:
                if not pending:
                    caught_up = True  # the server has nothing more for now
                    break
                polls += 1
                if polls > opts.max_polls:
                    fail(f"{where}: still redactionPending after {opts.max_polls} polls")
                await asyncio.sleep(opts.poll_interval)
            seen.add(nxt)
            cursor = nxt
            if pages >= MAX_PAGES:
                fail(f"more than {MAX_PAGES} pages without eof")

        seqs = sorted(events)
        if seqs and not flags["gap"] and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            fail(f"sequences not contiguous without a gap flag: {seqs}")
        if eof and seqs and high_water is not None and seqs[-1] != high_water:
            fail(f"last sequence {seqs[-1]} != highWaterSequence {high_water} at eof")
        ordered = [events[s] for s in seqs]
        if opts.out:
            with open(opts.out, "w", encoding="utf-8") as f:
                json.dump(ordered, f, ensure_ascii=False, indent=2, sort_keys=True)
                f.write("\n")
        return {
            "ok": True,
            "protocolVersion": client.protocol_version,
            "target": target,
            "pages": pages,
            "events": len(ordered),
            "firstSequence": seqs[0] if seqs else None,
            "lastSequence": seqs[-1] if seqs else None,
            "highWaterSequence": high_water,
            "eof": eof,
            "caughtUp": caught_up,
            "upserts": upserts,
            "upsertsChanged": changed,
            "gap": flags["gap"],
            "gapReasons": sorted(gap_reasons),
            "truncated": flags["truncated"],
            "redactionPending": any(e["redactionPending"] for e in ordered),
            **wire_summary(),
        }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="MCP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    p.add_argument("--key-file", required=True, help="file holding the 64-hex x-runread-key")
    p.add_argument("--limit", type=int, default=None, help="events per read_history page (server default if unset)")
    p.add_argument("--out", default=None, help="write the upserted events (JSON array, by sequence) to this file")
    p.add_argument("--run", default=None, help="read the granted target with this runId (default: the first with history)")
    p.add_argument("--mode", choices=MODES, default="auto", help="auto, pinned (2026-07-28) or legacy (2025-11-25), as in read_final_answer.py")
    p.add_argument("--timeout", type=float, default=60.0, help="per-request read timeout in seconds")
    p.add_argument("--max-polls", type=int, default=20, help="re-reads of a repeated cursor while redaction is pending")
    p.add_argument("--poll-interval", type=float, default=0.25, help="seconds between those re-reads")
    opts = p.parse_args(argv)
    if opts.limit is not None and opts.limit < 1:
        p.error("--limit must be >= 1")
    try:
        summary = asyncio.run(run(opts))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # CheckError, MCPError, httpx2 errors, possibly inside anyio ExceptionGroups
        print(f"read_history: FAIL: {describe(e)}", file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
