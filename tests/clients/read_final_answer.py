#!/usr/bin/env python3
"""Outside client for runread: read a run's final answer with the official MCP Python SDK.

Speaks MCP 2026-07-28 (stateless, ``server/discover`` + per-request ``_meta``; ``--mode auto`` or
``pinned``) or the dated 2025-11-25 (``--mode legacy``: the ``initialize`` handshake) over
Streamable HTTP using ``mcp`` 2.x (see requirements.txt), sending the one custom
header ``x-runread-key``.

    python read_final_answer.py --url http://127.0.0.1:PORT/mcp --key-file KEY [--limit N] [--out FILE] [--mode auto|pinned|legacy]

Steps: list granted targets (tool ``list_granted_targets``), pick the first target
whose features include ``final_answer``, call ``read_final_answer`` following
``nextCursor`` until ``eof``, and verify every chunk (byteOffset continuity, bytes,
stable totalBytes/sha256/version, trust fields, the ``<tool_result ...>`` text block, and
that ``structuredContent`` begins with the label ``trust``, ``instructions``, ``tool``: in the
SDK's result, in the text block and in the raw HTTP response body) and finally the sha256 and
length of the whole UTF-8 answer.

On success prints one JSON line ``{"sha256", "totalBytes", "chunks", "ok": true}``
on stdout (plus a few informative fields) and exits 0. On any failure prints
``read_final_answer: FAIL: <reason>`` on stderr and exits 1 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import sys
from typing import Any, AsyncIterator

MODERN_VERSION = "2026-07-28"
# What mcp 2.3.0's Client(mode="legacy") offers in `initialize` (LATEST_HANDSHAKE_VERSION); a server that
# supports it must answer with the same version.
LEGACY_VERSION = "2025-11-25"
MODES = ("auto", "pinned", "legacy")
# runread's label: every structuredContent begins with these keys, in this order, before any content.
LABEL_KEYS = ["trust", "instructions", "tool"]
# tools/list shows a valid key every read tool, whatever it holds now (sorted)
READ_TOOLS = sorted([
    "list_granted_targets", "read_final_answer", "get_run", "wait_for_run", "read_history", "read_work_state",
    "read_target_metadata", "list_artifacts", "read_artifact", "request_access", "wait_for_access",
])
BLOCK_PREFIX = '<tool_result tool="{tool}" trust="{trust}">\n'
# runread's trust label per tool (as observed): the lowest trust of any field its output can carry.
# Content written by an agent or its tools is untrusted, and so is list_granted_targets (its session and
# run ids are the agent's); runread's own projections are medium. read_history.py and read_artifact.py
# import this.
TRUST = {
    "read_final_answer": "untrusted",
    "read_history": "untrusted",
    "read_artifact": "untrusted",
    "list_granted_targets": "untrusted",
    "list_artifacts": "untrusted",
    "get_run": "medium",
    "read_work_state": "medium",
    "read_target_metadata": "untrusted",
}
BLOCK_SUFFIX = "\n</tool_result>"
KEY_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_CHUNKS = 100_000
HTTP_NOTES: list[str] = []
# Observed in the raw HTTP responses (connect()'s hook): how many tools/call successes had their
# structuredContent's key order checked, the ones that did not begin with the label, and any
# Mcp-Session-Id header (runread serves both eras statelessly and issues none).
WIRE = {"labels": 0, "badLabels": [], "sessionIds": []}


class CheckError(Exception):
    """A verification failure; the message is printed as the reason."""


def fail(msg: str) -> None:
    raise CheckError(msg)


def read_key(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            key = f.read().strip()
    except OSError as e:
        fail(f"cannot read key file {path!r}: {e}")
    if not KEY_RE.fullmatch(key):
        fail(f"key file {path!r} does not hold exactly 64 lowercase hex characters")
    return key


def sdk_mode(mode: str) -> str:
    """The mcp 2.x ``Client(mode=...)`` value for --mode: auto (server/discover, falling back to
    initialize), the pinned 2026-07-28 (no discover), or legacy (the initialize handshake)."""
    return {"auto": "auto", "pinned": MODERN_VERSION, "legacy": "legacy"}[mode]


def expected_version(mode: str) -> str:
    return LEGACY_VERSION if mode == "legacy" else MODERN_VERSION


def check_version(client: Any, mode: str) -> None:
    want = expected_version(mode)
    if client.protocol_version != want:
        fail(f"negotiated protocol version {client.protocol_version!r} in --mode {mode}, expected {want!r}")


def label_error(tool: str, sc: Any) -> str | None:
    """Why sc does not begin with runread's label (trust, instructions, tool = this tool), or None."""
    if not isinstance(sc, dict):
        return f"{tool}: structuredContent is {type(sc).__name__}"
    first = list(sc)[: len(LABEL_KEYS)]
    if first != LABEL_KEYS:
        return f"{tool}: structuredContent begins with keys {first}, expected {LABEL_KEYS}"
    if sc.get("tool") != tool:
        return f"{tool}: structuredContent.tool is {sc.get('tool')!r}"
    return None


def check_label(tool: str, sc: Any) -> None:
    err = label_error(tool, sc)
    if err:
        fail(err)


def check_block(tool: str, result: Any) -> dict[str, Any]:
    """Check the single untrusted text block and return its parsed JSON payload."""
    texts = [c for c in result.content if getattr(c, "type", None) == "text"]
    if len(texts) != 1 or len(result.content) != 1:
        fail(f"{tool}: expected exactly one text content block, got {[getattr(c, 'type', '?') for c in result.content]}")
    text = texts[0].text
    prefix = BLOCK_PREFIX.format(tool=tool, trust=TRUST.get(tool, "untrusted"))
    if not text.startswith(prefix.rstrip("\n")):
        fail(f"{tool}: text block does not start with {prefix.rstrip()!r}: {text[:80]!r}")
    if not text.startswith(prefix) or not text.endswith(BLOCK_SUFFIX):
        fail(f"{tool}: text block is not '<tool_result ...>\\n{{json}}\\n</tool_result>'")
    inner = text[len(prefix) : -len(BLOCK_SUFFIX)]
    try:
        payload = json.loads(inner)
    except ValueError as e:
        fail(f"{tool}: text block JSON does not parse: {e}")
    err = label_error(tool, payload)
    if err:
        fail(f"text block: {err}")
    return payload


def check_trust(tool: str, sc: dict[str, Any]) -> None:
    if sc.get("trust") != "untrusted_data":
        fail(f"{tool}: structuredContent.trust is {sc.get('trust')!r}, expected 'untrusted_data'")
    if sc.get("instructions") is not False:
        fail(f"{tool}: structuredContent.instructions is {sc.get('instructions')!r}, expected false")


def structured(tool: str, result: Any) -> dict[str, Any]:
    if result.is_error:
        texts = " ".join(getattr(c, "text", "") for c in result.content)
        fail(f"{tool}: tool returned isError=true: {texts[:500]}")
    sc = result.structured_content
    if not isinstance(sc, dict):
        fail(f"{tool}: structuredContent missing or not an object: {type(sc).__name__}")
    check_label(tool, sc)  # in the order the SDK hands it on (as received)
    if WIRE["badLabels"]:
        fail(f"on the wire: {WIRE['badLabels'][0]}")
    return sc


@contextlib.asynccontextmanager
async def connect(opts: argparse.Namespace, client_name: str) -> AsyncIterator[Any]:
    """An MCP Client on opts.url with the key from opts.key_file, in opts.mode ("auto"/"pinned"/"legacy").

    Checks the negotiated version (2026-07-28; 2025-11-25 in legacy mode). A response hook reads each
    JSON response body (httpx caches it for the SDK) and checks that a tools/call success's
    structuredContent begins with the label, in the bytes as sent (WIRE). Shared by read_history.py
    and read_artifact.py.
    """
    # Imported here so `--help` works without the SDK installed.
    import httpx2
    from mcp import Client, Implementation
    from mcp.client.streamable_http import streamable_http_client

    key = read_key(opts.key_file)

    async def note_status(response: Any) -> None:
        # The SDK turns a non-2xx reply without a JSON-RPC body into a generic
        # "Server returned an error response"; remember the status for the message.
        if response.status_code >= 300:
            method = response.request.headers.get("mcp-method", response.request.method)
            HTTP_NOTES.append(f"{method} -> HTTP {response.status_code}")
        sid = response.headers.get("mcp-session-id")
        if sid is not None and sid not in WIRE["sessionIds"]:
            WIRE["sessionIds"].append(sid)
        if response.status_code != 200 or not response.headers.get("content-type", "").lower().startswith("application/json"):
            return
        try:  # the legacy era sends no mcp-method/mcp-name headers: take the tool from the request body
            req = json.loads(response.request.content)
            if req.get("method") != "tools/call":
                return
            tool = req["params"]["name"]
            body = json.loads(await response.aread())  # keeps the key order as sent
        except Exception:  # noqa: BLE001 - not a tools/call, or not JSON: nothing to check (WIRE counts what was)
            return
        res = body.get("result") if isinstance(body, dict) else None
        if isinstance(res, dict) and res.get("isError") is not True and "structuredContent" in res:
            WIRE["labels"] += 1
            err = label_error(tool, res["structuredContent"])
            if err:
                WIRE["badLabels"].append(err)

    # The custom header goes on the httpx2 client; the SDK layers its own headers
    # (accept, content-type, mcp-protocol-version, mcp-method, mcp-name) on top.
    http = httpx2.AsyncClient(
        headers={"x-runread-key": key},
        timeout=httpx2.Timeout(30.0, read=opts.timeout),
        event_hooks={"response": [note_status]},
    )
    transport = streamable_http_client(opts.url, http_client=http, terminate_on_close=False)
    async with http:
        client_cm = Client(
            transport,
            mode=sdk_mode(opts.mode),
            read_timeout_seconds=opts.timeout,
            client_info=Implementation(name=client_name, version="1"),
        )
        async with client_cm as client:
            check_version(client, opts.mode)
            yield client


def wire_summary() -> dict[str, Any]:
    """For the printed summary (HTTP readers): labels checked on the wire, Mcp-Session-Id headers seen."""
    return {"wireLabels": WIRE["labels"], "sessionIds": list(WIRE["sessionIds"])}


async def require_tools(client: Any, *needed: str) -> list[str]:
    tools = await client.list_tools()
    names = sorted(t.name for t in tools.tools)
    for n in needed:
        if n not in names:
            fail(f"tools/list does not list {n!r} (got {names})")
    return names


async def pick_target(client: Any, feature: str, run_id: str | None = None) -> dict[str, Any]:
    """list_granted_targets (block checked, trust untrusted), then the first target granting feature."""
    res = await client.call_tool("list_granted_targets", {})
    sc = structured("list_granted_targets", res)
    if check_block("list_granted_targets", res) != sc:
        fail("list_granted_targets: JSON in the text block differs from structuredContent")
    check_trust("list_granted_targets", sc)
    targets = sc.get("targets")
    if not isinstance(targets, list):
        fail("list_granted_targets: structuredContent.targets is not a list")
    for t in targets:
        if (
            isinstance(t, dict)
            and isinstance(t.get("target"), dict)
            and feature in (t.get("features") or [])
            and (run_id is None or t["target"].get("runId") == run_id)
        ):
            return t["target"]
    fail(f"no granted target has feature {feature!r}" + (f" and runId {run_id!r}" if run_id else "") + f" ({len(targets)} targets listed)")
    raise AssertionError("unreachable")


async def read_all(client: Any, target: dict[str, Any], limit: int | None) -> tuple[bytes, dict[str, Any]]:
    """read_final_answer of target, following nextCursor until eof, every chunk and the whole checked.

    Returns the answer's UTF-8 bytes and {"sha256", "totalBytes", "chunks", "version"}. Shared with
    stdio_read_final_answer.py (the same reads over the stdio transport).
    """
    parts: list[bytes] = []
    running = 0
    chunks = 0
    cursor: str | None = None
    first: dict[str, Any] | None = None
    seen_cursors: set[str] = set()
    while True:
        args: dict[str, Any] = {"target": target}
        if cursor is not None:
            args["cursor"] = cursor
        if limit is not None:
            args["limit"] = limit
        res = await client.call_tool("read_final_answer", args)
        sc = structured("read_final_answer", res)
        where = f"read_final_answer chunk {chunks}"
        payload = check_block("read_final_answer", res)
        if payload != sc:
            fail(f"{where}: JSON in the text block differs from structuredContent")
        check_trust(where, sc)
        if sc.get("readable") is not True:
            fail(f"{where}: answer not readable (state={sc.get('state')!r}, readable={sc.get('readable')!r})")
        text = sc.get("text")
        if not isinstance(text, str):
            fail(f"{where}: text is not a string")
        raw = text.encode("utf-8")
        if sc.get("byteOffset") != running:
            fail(f"{where}: byteOffset {sc.get('byteOffset')!r} != running length {running}")
        if "bytes" in sc and sc["bytes"] != len(raw):
            fail(f"{where}: bytes {sc['bytes']!r} != UTF-8 length of text {len(raw)}")
        if first is None:
            first = sc
            for f in ("sha256", "totalBytes"):
                if f not in sc:
                    fail(f"{where}: missing {f}")
        else:
            for f in ("sha256", "totalBytes", "version"):
                if sc.get(f) != first.get(f):
                    fail(f"{where}: {f} changed between chunks ({first.get(f)!r} -> {sc.get(f)!r})")
        parts.append(raw)
        running += len(raw)
        chunks += 1
        if sc.get("eof") is True:
            break
        cursor = sc.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            fail(f"{where}: eof is false but nextCursor is {cursor!r}")
        if cursor in seen_cursors:
            fail(f"{where}: nextCursor repeats {cursor!r}")
        seen_cursors.add(cursor)
        if not raw:
            fail(f"{where}: empty chunk before eof")
        if chunks >= MAX_CHUNKS:
            fail(f"more than {MAX_CHUNKS} chunks without eof")

    assert first is not None
    answer = b"".join(parts)
    if len(answer) != first["totalBytes"]:
        fail(f"answer is {len(answer)} bytes, totalBytes says {first['totalBytes']}")
    digest = hashlib.sha256(answer).hexdigest()
    if digest != first["sha256"]:
        fail(f"sha256 mismatch: computed {digest}, server says {first['sha256']}")
    return answer, {"sha256": digest, "totalBytes": len(answer), "chunks": chunks, "version": first.get("version")}


async def run(opts: argparse.Namespace) -> dict[str, Any]:
    async with connect(opts, "runread-read-final-answer") as client:
        await require_tools(client, "list_granted_targets", "read_final_answer")
        target = await pick_target(client, "final_answer")
        answer, summary = await read_all(client, target, opts.limit)
        if opts.out:
            with open(opts.out, "wb") as f:
                f.write(answer)
        summary.update(ok=True, protocolVersion=client.protocol_version, target=target, **wire_summary())
    return summary


def describe(e: BaseException) -> str:
    while hasattr(e, "exceptions") and len(getattr(e, "exceptions")) == 1:  # unwrap (Base)ExceptionGroup
        e = e.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(e, CheckError):
        msg = str(e)
    elif isinstance(e, ImportError):
        msg = f"{e} (pip install -r requirements.txt)"
    elif type(e).__name__ == "MCPError":
        err = e.error  # type: ignore[attr-defined]
        msg = f"MCP error {err.code}: {err.message}"
        if err.data is not None:
            msg += f" data={json.dumps(err.data)[:300]}"
    elif isinstance(e, RuntimeError):
        # e.g. structuredContent failing the tool's outputSchema, or no mutual protocol version.
        msg = f"client error: {e}"
    else:
        msg = f"{type(e).__name__}: {e}"
    if HTTP_NOTES:
        msg += f" [non-2xx replies: {', '.join(HTTP_NOTES[-4:])}]"
    return msg


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="MCP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    p.add_argument("--key-file", required=True, help="file holding the 64-hex x-runread-key")
    p.add_argument("--limit", type=int, default=None, help="bytes per read_final_answer call (server default if unset)")
    p.add_argument("--out", default=None, help="write the verified answer (raw UTF-8) to this file")
    p.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="auto: probe server/discover first (SDK default); pinned: assume 2026-07-28, send no server/discover; "
        "legacy: the initialize handshake, which must negotiate 2025-11-25",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="per-request read timeout in seconds")
    opts = p.parse_args(argv)
    if opts.limit is not None and opts.limit < 1:
        p.error("--limit must be >= 1")
    try:
        summary = asyncio.run(run(opts))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # CheckError, MCPError, httpx2 errors, possibly inside anyio ExceptionGroups
        print(f"read_final_answer: FAIL: {describe(e)}", file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
