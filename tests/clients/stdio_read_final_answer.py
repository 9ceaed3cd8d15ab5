#!/usr/bin/env python3
"""Outside client for runread over stdio: read a run's final answer with the official MCP Python SDK.

Launches ``runread --home H serve --stdio --key-file F`` itself (the SDK's ``stdio_client``) and speaks
MCP 2026-07-28 (``--mode auto|pinned``) or 2025-11-25 (``--mode legacy``: the ``initialize`` handshake)
over its stdin/stdout; the key file stands in for the ``x-runread-key`` header.

    python stdio_read_final_answer.py --runread PATH --home H --key-file KEY [--limit N] [--out FILE] [--mode auto|pinned|legacy]

Steps: check the negotiated protocol version; ``tools/list``; ``list_granted_targets`` (block labeled
``trust="untrusted"`` and equal to structuredContent, trust fields), and ``tools/list`` must be exactly
``list_granted_targets`` plus the ``tools`` of the granted targets; then the first target with
``final_answer`` is read with ``read_final_answer`` following ``nextCursor`` until ``eof``, with the
same per-chunk and whole-answer checks as read_final_answer.py (shared code: ``read_all``; every
structuredContent must begin with the label ``trust``, ``instructions``, ``tool`` as the SDK received it).

On success prints one JSON line on stdout and exits 0:
``{"chunks", "ok": true, "protocolVersion", "sha256", "target", "tools", "totalBytes", "transport": "stdio", "version"}``.
On any failure prints ``stdio_read_final_answer: FAIL: <reason>`` on stderr (with what runread wrote
on its stderr, e.g. ``runread: invalid_key: …``) and exits 1 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, AsyncIterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import read_final_answer as rf  # noqa: E402  (the shared checks and the cursor loop)

SERVER_STDERR: list[str] = []  # what runread wrote on stderr, for the failure message


@contextlib.asynccontextmanager
async def connect_stdio(opts: argparse.Namespace, client_name: str) -> AsyncIterator[Any]:
    """An MCP Client on a `runread serve --stdio` it launches, in opts.mode ("auto"/"pinned"/"legacy").

    Checks the negotiated version (2026-07-28; 2025-11-25 in legacy mode). runread's stderr goes to a temp file; its text is kept in
    SERVER_STDERR when the session ends (also on failure).
    """
    from mcp import Client, Implementation
    from mcp.client.stdio import StdioServerParameters, stdio_client

    rf.read_key(opts.key_file)  # same format check as over HTTP; runread reads the file itself
    params = StdioServerParameters(
        command=str(opts.runread),
        args=["--home", str(opts.home), "serve", "--stdio", "--key-file", str(opts.key_file)],
    )
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as errlog:
        try:
            async with Client(
                stdio_client(params, errlog=errlog),
                mode=rf.sdk_mode(opts.mode),
                read_timeout_seconds=opts.timeout,
                client_info=Implementation(name=client_name, version="1"),
            ) as client:
                rf.check_version(client, opts.mode)
                yield client
        finally:
            errlog.seek(0)
            SERVER_STDERR.append(errlog.read())


async def granted(client: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """list_granted_targets (block, trust) and tools/list; tools/list must be every read tool (whatever
    the key holds), and so hold every tool the grants give."""
    names = sorted(t.name for t in (await client.list_tools()).tools)
    res = await client.call_tool("list_granted_targets", {})
    sc = rf.structured("list_granted_targets", res)
    if rf.check_block("list_granted_targets", res) != sc:
        rf.fail("list_granted_targets: JSON in the text block differs from structuredContent")
    rf.check_trust("list_granted_targets", sc)
    targets = sc.get("targets")
    if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
        rf.fail("list_granted_targets: structuredContent.targets is not a list of objects")
    want = sorted({"list_granted_targets"} | {tool for t in targets for tool in t.get("tools") or []})
    if names != rf.READ_TOOLS:
        rf.fail(f"tools/list {names} is not every read tool {rf.READ_TOOLS}")
    if not set(want) <= set(names):
        rf.fail(f"tools/list {names} lacks granted tools {want}")
    return targets, names


async def run(opts: argparse.Namespace) -> dict[str, Any]:
    async with connect_stdio(opts, "runread-stdio-read-final-answer") as client:
        targets, tools = await granted(client)
        target = next((t["target"] for t in targets if "final_answer" in (t.get("features") or [])), None)
        if not isinstance(target, dict):
            rf.fail(f"no granted target has feature 'final_answer' ({len(targets)} targets listed)")
        answer, summary = await rf.read_all(client, target, opts.limit)
        if opts.out:
            with open(opts.out, "wb") as f:
                f.write(answer)
        summary.update(ok=True, protocolVersion=client.protocol_version, target=target, tools=tools, transport="stdio")
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runread", required=True, help="the runread binary to launch")
    p.add_argument("--home", required=True, help="runread's home (passed as --home)")
    p.add_argument("--key-file", required=True, help="file holding the 64-hex read key (passed as --key-file)")
    p.add_argument("--limit", type=int, default=None, help="bytes per read_final_answer call (server default if unset)")
    p.add_argument("--out", default=None, help="write the verified answer (raw UTF-8) to this file")
    p.add_argument("--mode", choices=rf.MODES, default="auto",
                   help="auto: server/discover first (SDK default); pinned: assume 2026-07-28; legacy: initialize (2025-11-25)")
    p.add_argument("--timeout", type=float, default=60.0, help="per-request read timeout in seconds")
    opts = p.parse_args(argv)
    if opts.limit is not None and opts.limit < 1:
        p.error("--limit must be >= 1")
    try:
        summary = asyncio.run(run(opts))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # CheckError, MCPError, closed connection, possibly inside ExceptionGroups
        msg = rf.describe(e)
        err = " | ".join(line for s in SERVER_STDERR for line in s.strip().splitlines())
        if err:
            msg += f" [runread stderr: {err[-600:]}]"
        print(f"stdio_read_final_answer: FAIL: {msg}", file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
