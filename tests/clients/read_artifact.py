#!/usr/bin/env python3
"""Outside client for runread: download one artifact with the official MCP Python SDK.

    python read_artifact.py --url http://127.0.0.1:PORT/mcp --key-file KEY --out FILE [--id ARTIFACT_ID] [--limit N]

Steps: ``tools/list`` (must list ``list_granted_targets``, ``list_artifacts``, ``read_artifact``),
pick the first granted target with feature ``artifacts``, ``list_artifacts`` (its block is labeled
``trust="untrusted"``: names come from files; paged by ``nextOffset``), choose the artifact (``--id``, or the only one), then
``read_artifact`` from offset 0 following ``nextOffset`` until ``eof``. Every chunk is checked:
the ``<tool_result tool="read_artifact" trust="untrusted">`` block equals ``structuredContent``,
trust fields, ``offset`` = bytes so far, ``data`` is strict base64 of exactly ``bytes`` bytes whose
sha256 is ``chunkSha256``, ``artifactId``/``version``/``size``/``sha256``/``mime`` never change,
``nextOffset`` = ``offset + bytes`` until eof. At the end the length is ``size`` and the sha256 of
the whole is ``sha256`` (and what ``list_artifacts`` said).

On success writes the bytes to ``--out``, prints one JSON line (``"ok": true``, sha256, size,
chunks, …) and exits 0; otherwise ``read_artifact: FAIL: <reason>`` on stderr, exit 1.
Needs read_final_answer.py beside it (shared helpers).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import hashlib
import json
import sys
from typing import Any

sys.dont_write_bytecode = True  # importing the helpers must not leave __pycache__/ in the source tree
from read_final_answer import (MODES, check_block, check_trust, connect, describe, fail, pick_target, require_tools,
                               structured, wire_summary)

MAX_CHUNKS = 1_000_000


def checked(tool: str, where: str, res: Any) -> dict[str, Any]:
    sc = structured(tool, res)
    if check_block(tool, res) != sc:
        fail(f"{where}: JSON in the text block differs from structuredContent")
    check_trust(where, sc)
    return sc


async def run(opts: argparse.Namespace) -> dict[str, Any]:
    async with connect(opts, "runread-read-artifact") as client:
        await require_tools(client, "list_granted_targets", "list_artifacts", "read_artifact")
        target = await pick_target(client, "artifacts")

        listed: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            sc = checked("list_artifacts", f"list_artifacts offset {offset}", await client.call_tool(
                "list_artifacts", {"target": target, "offset": offset}))
            page = sc.get("artifacts")
            if not isinstance(page, list):
                fail("list_artifacts: artifacts is not a list")
            listed += page
            nxt = sc.get("nextOffset")
            if nxt is not None and (not isinstance(nxt, int) or nxt <= offset):
                fail(f"list_artifacts: nextOffset {nxt!r} after offset {offset}")
            offset = nxt
        if opts.id is not None:
            chosen = [a for a in listed if a.get("artifactId") == opts.id]
        else:
            chosen = listed
        if len(chosen) != 1:
            fail(f"{len(chosen)} artifacts match (listed: {[a.get('artifactId') for a in listed]}); pass --id")
        art = chosen[0]

        parts: list[bytes] = []
        running = 0
        chunks = 0
        first: dict[str, Any] | None = None
        while True:
            args: dict[str, Any] = {"target": target, "artifactId": art["artifactId"], "version": art["version"]}
            if running:
                args["offset"] = running
            if opts.limit is not None:
                args["limit"] = opts.limit
            where = f"read_artifact chunk {chunks} (offset {running})"
            sc = checked("read_artifact", where, await client.call_tool("read_artifact", args))
            if sc.get("offset") != running:
                fail(f"{where}: offset {sc.get('offset')!r}")
            try:
                data = base64.b64decode(sc.get("data", ""), validate=True)
            except (binascii.Error, ValueError, TypeError) as e:
                fail(f"{where}: data is not strict base64: {e}")
            if sc.get("bytes") != len(data):
                fail(f"{where}: bytes {sc.get('bytes')!r} != decoded length {len(data)}")
            if opts.limit is not None and len(data) > opts.limit:
                fail(f"{where}: {len(data)} bytes at limit {opts.limit}")
            if hashlib.sha256(data).hexdigest() != sc.get("chunkSha256"):
                fail(f"{where}: chunkSha256 {sc.get('chunkSha256')!r} != sha256 of the decoded chunk")
            if first is None:
                first = sc
                for f, want in (("artifactId", art["artifactId"]), ("version", art["version"]),
                                ("size", art.get("size")), ("sha256", art.get("sha256"))):
                    if sc.get(f) != want:
                        fail(f"{where}: {f} {sc.get(f)!r} != list_artifacts' {want!r}")
            else:
                for f in ("artifactId", "version", "size", "sha256", "mime"):
                    if sc.get(f) != first.get(f):
                        fail(f"{where}: {f} changed between chunks")
            parts.append(data)
            running += len(data)
            chunks += 1
            if sc.get("eof") is True:
                if sc.get("nextOffset") is not None:
                    fail(f"{where}: eof with nextOffset {sc.get('nextOffset')!r}")
                break
            if not data:
                fail(f"{where}: empty chunk before eof")
            if sc.get("nextOffset") != running:
                fail(f"{where}: nextOffset {sc.get('nextOffset')!r} != {running}")
            if chunks >= MAX_CHUNKS:
                fail(f"more than {MAX_CHUNKS} chunks without eof")

        assert first is not None
        whole = b"".join(parts)
        if len(whole) != first["size"]:
            fail(f"read {len(whole)} bytes, size says {first['size']}")
        digest = hashlib.sha256(whole).hexdigest()
        if digest != first["sha256"]:
            fail(f"sha256 mismatch: computed {digest}, server says {first['sha256']}")
        with open(opts.out, "wb") as f:
            f.write(whole)
        return {
            "ok": True,
            "protocolVersion": client.protocol_version,
            "target": target,
            "artifactId": art["artifactId"],
            "name": art.get("name"),
            "mime": first.get("mime"),
            "version": art["version"],
            "size": len(whole),
            "sha256": digest,
            "chunks": chunks,
            **wire_summary(),
        }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="MCP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    p.add_argument("--key-file", required=True, help="file holding the 64-hex x-runread-key")
    p.add_argument("--out", required=True, help="write the verified artifact bytes here")
    p.add_argument("--id", default=None, help="artifactId (default: the target's only artifact)")
    p.add_argument("--limit", type=int, default=None, help="bytes per read_artifact call (server default if unset)")
    p.add_argument("--mode", choices=MODES, default="auto", help="auto, pinned (2026-07-28) or legacy (2025-11-25), as in read_final_answer.py")
    p.add_argument("--timeout", type=float, default=60.0, help="per-request read timeout in seconds")
    opts = p.parse_args(argv)
    if opts.limit is not None and opts.limit < 1:
        p.error("--limit must be >= 1")
    try:
        summary = asyncio.run(run(opts))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # CheckError, MCPError, httpx2 errors, possibly inside anyio ExceptionGroups
        print(f"read_artifact: FAIL: {describe(e)}", file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
