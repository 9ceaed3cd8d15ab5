#!/usr/bin/env python3
"""Real coding agents read a granted final answer from runread over MCP, with the documented configs.

    python3 tests/agents/readers.py --runread target/debug/runread

The real Claude Code CLI, the real Codex CLI and the real Pi 1.x, driven offline by the harness's
scripted model servers (tests/agents/harness: claude-scenario.py + mockanthropic.py, codex-scenario.py +
mockresponses.py, pi-scenario.py + mockllm.py; each installs its pinned agent once into $RUNREAD_HARNESS_CACHE, default
~/.cache/runread-harness, with npm), connect to runread with the client configs of README.md
("Share a run with Claude Code and Codex") and docs/clients.md ("Client configurations"), each read
from those files by its ``<!-- client-config: NAME -->`` marker
and handed to the client verbatim (only the port, the key file's path and, for stdio,
``runread`` -> this binary's absolute path substituted). The HTTP configs hold no key: they read it
from ``$RUNREAD_KEY`` (Claude Code, Codex and Pi expand it). Each Claude Code and Codex HTTP case
runs the README's ``key-file-env`` lines as printed (``<key>`` substituted) with sh in the case's
HOME, which store the key in ~/.config/runread/claude-code.key (0600) and export it; what they
export is the RUNREAD_KEY of the case's client steps. After the case the key's bytes must be in no
file under the case's directory but that one (and the test's own wire-*.txt records of the HTTP
bytes). The scripted model finds runread's
``read_final_answer`` tool, calls it with the exact target ``runread grant --json`` printed, and
answers. The test then reads what the client handed its model in the next model request
(llm-requests.jsonl) and checks that it carries runread's trust label ahead of the answer text:
it must begin ``{"trust":"untrusted_data","instructions":false,"tool":"read_final_answer"``, and
its ``text`` must be the first chunk of the granted answer (byte offset 0, the answer's sha256).

Setup: a throwaway home and workspace with the ``sample`` Pi fixture (only the header's cwd
changed), ingest, one grant (``final_answer``) whose key is also written to a key file (0600),
``runread serve`` on a free loopback port, and in front of it a byte-exact recording HTTP
pass-through (the clients' URL): it records every request and response, from which each case
reports the protocol version the client actually spoke (its handshake, and the version every later
request states). Over stdio the pipe is private to the client and the runread it launches, so
there the version is the one the client itself logged as negotiated (Claude Code's
``--debug-file``: ``negotiatedProtocolVersion``; Codex's ``RUST_LOG=rmcp::service=info``:
``Service initialized as client peer_info ... protocol_version``); over HTTP both are recorded
and must agree. A stdio runread finds the home through the client's HOME
(``$HOME/.local/share/runread``, a symlink to the test's home), as a user's would.

Cases, run one after another against the one server:
  1. claude-http         ``claude -p ... --mcp-config FILE``, FILE = block ``mcp-servers-http``
  2. claude-stdio        ``--mcp-config FILE``, FILE = block ``mcp-servers-stdio``
  2b. claude-project-http  block ``mcp-servers-http`` as the project's ``.mcp.json`` (no flag; the
                         project's servers approved in the user's settings, enableAllProjectMcpServers)
  3. claude-mcp-add-http / claude-mcp-add-stdio
                         the ``claude-http-command`` / ``claude-stdio-command`` blocks run with
                         sh in the harness's CLAUDE_CONFIG_DIR/HOME environment, then
                         ``claude mcp list`` (it health-checks: runread must be "Connected"), then a
                         harness step that uses the added server (no --mcp-config); over HTTP
                         (``claude mcp add-json``) Claude Code's .claude.json must hold the header as
                         the text ``${RUNREAD_KEY}``, which it expands from its environment, and a
                         ``claude mcp list`` without RUNREAD_KEY first is refused (the text sent, 403)
                         and recorded in mcp-needs-auth-cache.json, deleted as docs/clients.md says
  4. codex-http          block ``codex-http`` (``env_http_headers``), parsed with tomllib, as ``-c``
                         dotted keys
  5. codex-http-2026     the same plus ``features.mcp_2026_07_28 = true``
  6. codex-stdio         block ``codex-stdio``
  7. claude-reader-once  Claude Code configured once (``runread reader add``, then the
                         ``claude-http-command`` block), three runs shared with that reader one after
                         another (``grant --to``: no new key), each read in a step of its own through
                         ``list_granted_targets`` and ``read_final_answer``; one grant revoked, then
                         that run reads ``grant_revoked`` while another still reads
  8. codex-reader-once   the same with the real Codex CLI, one ``codex-http`` config for every step
  8b. codex-bearer      the ``codex-http`` block with ``bearer_token_env_var = "RUNREAD_KEY"`` in place of
                         ``env_http_headers`` (the usual habit): each request carries ``Authorization:
                         Bearer <key>``, each is refused 400 ``authorization_header`` with the fixed message
                         naming the header and ``x-runread-key``; no runread tool reaches the model
  9. claude-waits-on-codex  the real Codex under ``runread run --share READER:final_answer,status:1h``
                         (its scripted model holding its answer), and Claude Code configured once with
                         READER's key calling ``wait_for_run`` then ``read_final_answer`` on that run:
                         ``runread runs --json`` names the reader waiting while the answer is not yet
                         available, the wait answers ``settled:true``, the answer is supervised
  10. pi-env-key         Pi 1.6.0 configured once with the ``pi-command`` block run with sh (its agent dir
                         the harness's), the reader's key only in RUNREAD_KEY; ``pi mcp list`` (runread
                         connected); then Pi's model calls ``list_granted_targets``, then
                         ``read_final_answer`` and follows nextCursor until eof (a further harness step,
                         ``--continue``, per chunk: a scripted model echoes the cursor it got); the key
                         in no file Pi wrote
  11. pi-mcp-json        the same with the ``pi-mcp-json`` block as Pi's mcp.json
 12. claude-first-waits-by-label  the handoff in the usual order: Claude Code connected and calling
                         ``wait_for_run {"label": …}`` before anything is shared with it, then two real
                         Codex runs under ``runread run --share … --label …`` at once (two labels, two
                         answers); the wait answers settled for its label, ``list_granted_targets`` names
                         the run by it, the delegate's stdout JSON line names the same target, and a second
                         step reads exactly that run's answer
 13. claude-waits-on-pi-by-label  the same with the real Pi 1.6.0 as the delegate under ``runread run``
 14. claude-requests-denied / claude-requests-expiry / claude-requests-approved  access requests: Claude Code
                         configured once with a reader's key and no grant; the home's latest Codex run made
                         first (the real Codex under ``runread run``, shared with no one). Step A: its model calls
                         ``request_access {"agent": "codex", "latest": 1, "reason": …}`` (pending, an id, no
                         run); step B, on a thread: ``wait_for_access`` then ``read_final_answer`` of that run;
                         while the wait is on the wire ``runread requests --json`` lists the request with exactly
                         that one run and the owner decides with ``runread requests deny|approve ID``: denied (no
                         targets, the read refused not_granted) or approved (exactly that target, the read the
                         Codex answer) or, through a second ``runread serve --request-expiry-seconds 5``
                         behind the same pass-through, left to expire (the wait answers expired, the read refused)
Pi's harness starts it with --no-extensions, which also turns MCP off: HARNESS_WRAP names a wrapper
adding ``-e builtin:mcp --mode json``. Pi hands its model runread's text block (tag line, then the
JSON with the label first), which must carry the structuredContent recorded on the wire.
Claude Code's model loads the deferred MCP tool with ToolSearch (``select:mcp__runread__read_final_answer``)
and calls it; Codex's model runs its client-side ``tool_search`` and then calls
``{"namespace": "mcp__runread", "name": "read_final_answer"}`` (model gpt-5.5). What the model gets is
compared, key order included, with the structuredContent recorded on the wire (over stdio: with the
one recorded over HTTP). Codex puts two lines of its own (``Wall time: … seconds``, ``Output:``) in
front of an MCP tool's output; there the label must come first right after them.

Prints one PASS/FAIL line per check (each case: the protocol version spoken, the client version
and the first 200 characters of what reached the model) and ends with
``agents: N passed, M failed``; exits 1 if any check failed. ``--keep`` keeps the temp dir (each
case's harness OUTDIR, the recorded HTTP exchanges, serve.log); it is also kept on failure.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# Where the client configs a user pastes are printed: each marker occurs once across these files.
CONFIG_DOCS = (REPO / "README.md", REPO / "docs" / "clients.md")
sys.path.insert(0, str(REPO / "tests" / "clients"))
# Shared, dependency-free helpers of the outside-clients test (results, fixture placement, runread
# CLI, server start/stop).
from outside_clients import (  # noqa: E402
    Fatal, Results, Runread, ensure, final_answers, fixture_session, free_port, place_session, stop, tail,
    wait_for_port,
)

# The agents' versions the suites (this one, homes.py, supervised.py) run, from the harness's own variables
# (CLAUDE_CODE_VERSION, CODEX_VERSION, PI_PACKAGE, PI_VERSION, which its scripts read when loaded), so the test
# and the harness always agree; unset, today's pins. scripts/agents-latest sets them to the newest releases.
CLAUDE_VERSION = os.environ.get("CLAUDE_CODE_VERSION") or "2.1.328"
CODEX_VERSION = os.environ.get("CODEX_VERSION") or "0.171.0"
# Pi 1.x (the harness's PI_PACKAGE/PI_VERSION; it brings its own Node 22 into the harness cache).
PI_PACKAGE = os.environ.get("PI_PACKAGE") or "@earendil-works/pi-coding-agent"
PI_VERSION = os.environ.get("PI_VERSION") or "1.6.0"
# Gemini CLI, Copilot CLI and OpenCode, the runs the `*-reads-gemini-copilot-opencode` cases read (the harness's
# variables too).
GEMINI_CLI_VERSION = os.environ.get("GEMINI_CLI_VERSION") or "0.61.0"
COPILOT_VERSION = os.environ.get("COPILOT_VERSION") or "1.0.102"
OPENCODE_VERSION = os.environ.get("OPENCODE_VERSION") or "1.18.33"
GEMINI_ANSWER = "Gemini's report, supervised: two files changed — naïve 日本語 🎉"
COPILOT_ANSWER = "Copilot's report, read passively: all tests pass — naïve 日本語 🎉"
OPENCODE_ANSWER = "OpenCode's report, read from its database: one session, all green — naïve 日本語 🎉 «✓»"
# Where the versions runread's tests cover are stated for people: the table under "Versions", which a Rust
# test (runread's suite, `words`) holds equal to `Agent::tested_versions`, what `versionTested` follows.
AGENTS_DOC = REPO / "docs" / "agents.md"
TESTED_ROW = re.compile(r"^\| (Pi|Claude Code|Codex|Gemini CLI) \| ([0-9]+\.[0-9]+\.[0-9]+)[^|]* \| ([0-9]+\.[0-9]+\.[0-9]+)[^|]* \|$",
                        re.M)


def tested_versions() -> dict[str, tuple[str, str]]:
    """The oldest and newest tested version per agent (``pi``, ``claude``, ``codex``, ``gemini``), from AGENTS_DOC."""
    names = {"Pi": "pi", "Claude Code": "claude", "Codex": "codex", "Gemini CLI": "gemini"}
    rows = TESTED_ROW.findall(AGENTS_DOC.read_text(encoding="utf-8"))
    got = {names[agent]: (oldest, newest) for agent, oldest, newest in rows}
    if len(rows) != len(names) or len(got) != len(names):
        raise Fatal(f"{AGENTS_DOC.relative_to(REPO)}: the Versions table has rows {rows}, not one per agent")
    return got


def version_tested(agent: str, version: str) -> bool:
    """What runread's `versionTested` says of `version` (X.Y.Z): within the agent's tested range."""
    def numbers(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("-")[0].split("+")[0].split("."))
    oldest, newest = tested_versions()[agent]
    return numbers(oldest) <= numbers(version) <= numbers(newest)
CODEX_MODEL = "gpt-5.5"
SAMPLE_BYTES = 9554
KEY_RE = re.compile(r"^[0-9a-f]{64}$")
SAFE_PATH = re.compile(r"^/[A-Za-z0-9/._+-]+$")  # pasted into JSON, TOML and sh without quoting
README_PORT = "7077"
README_KEY_FILE = "/home/me/.config/runread/claude.key"
# The environment variable the HTTP configs read the key from, and where the README's
# `key-file-env` block stores the key (relative to HOME).
KEY_ENV = "RUNREAD_KEY"
README_STORED_KEY = Path(".config/runread/claude-code.key")
# What runread answers an `Authorization` header on the keyed door (runread_core::ErrorCode).
AUTHORIZATION_CODE = "authorization_header"
AUTHORIZATION_MESSAGE = ("runread does not accept an Authorization header here; send the read key as the "
                         "x-runread-key header")
# What must reach the model first: runread's trust label, then the tool's name.
LABEL = '{"trust":"untrusted_data","instructions":false,"tool":"read_final_answer"'
CLAUDE_TOOL = "mcp__runread__read_final_answer"  # Claude Code: mcp__<server>__<tool>
CODEX_NAMESPACE = "mcp__runread"
PI_TOOL = "mcp__runread__{}"  # Pi: mcp__<server>__<tool>, declared to its model with "exposure": "direct"
# Pi hands its model an MCP result's text content, and runread's text block opens with this tag line.
PI_TAG = '<tool_result tool="read_final_answer" trust="untrusted">\n'
PI_TAG_END = "\n</tool_result>"
# Codex puts this in front of an MCP tool's output in the function_call_output it sends its model.
CODEX_OUTPUT_PREFIX = re.compile(r"\AWall time: [0-9.]+ seconds\nOutput:\n")
# ... and in front of an MCP tool's error result (isError: runread's refusal), with no line break after it.
CODEX_ERROR_PREFIX = re.compile(r"\AWall time: [0-9.]+ seconds\nOutput:(?!\n)")
PROMPT = "Read the final answer of the run granted to you through runread."
DONE = "I read the granted final answer through runread."
STEP_TIMEOUT_S = 90
# The agent waited on (claude-waits-on-codex): how long its scripted model holds its answer, so that
# the reader's wait is open while the run works, and the answer it then gives.
CODEX_HOLD_MS = 25_000
WAITED_ANSWER = "The report the orchestrator waited for: one file, all green."
# Access requests (issue 55): the reader that asks (configured once, no grant), the latest Codex run it asks for
# (the real Codex under `runread run`, shared with no one), and what a request's id and life are.
ASKING_READER = "claude-asks"
REQUESTED_PROMPT = "Write the report another assistant will ask the owner for."
REQUESTED_ANSWER = "Codex's report, asked for by another assistant: three files changed, tests green — naïve 日本語 ✓"
# A request id is opaque to the reader: `q-` and lowercase hex (its length is the core's: 64 random bits today).
REQUEST_ID = re.compile(r"^q-[0-9a-f]{16,64}$")
# How long the expiry case's requests wait (`serve --request-expiry-seconds`: at least 5; the default is 10 minutes).
REQUEST_EXPIRY_S = 5
ACCESS_CASES = ("claude-requests-denied", "claude-requests-expiry", "claude-requests-approved")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BLOCK_RE = re.compile(r"<!-- client-config: ([a-z0-9-]+) -->\n```[a-z]*\n(.*?)```", re.S)


# --------------------------------------------------------------------------- README blocks


def readme_blocks() -> dict[str, str]:
    """Every ``client-config`` block of CONFIG_DOCS by name; a name found twice (in one file or
    across them), or a marker without its fenced block, is fatal."""
    blocks: dict[str, str] = {}
    where: dict[str, str] = {}
    for doc in CONFIG_DOCS:
        text = doc.read_text(encoding="utf-8")
        rel = doc.relative_to(REPO)
        found = BLOCK_RE.findall(text)
        for name, body in found:
            if name in blocks:
                raise Fatal(f"{rel}: client-config {name} appears twice (also in {where[name]})")
            blocks[name], where[name] = body, str(rel)
        markers = re.findall(r"<!-- client-config: ([^ ]+) -->", text)
        if sorted(markers) != sorted(name for name, _ in found):
            raise Fatal(f"{rel}: markers {markers} but fenced blocks under them only for "
                        f"{sorted(name for name, _ in found)}")
    return blocks


def substitute(name: str, block: str, subs: list[tuple[str, str]]) -> str:
    """Each (old, new) must occur exactly once in the block: the README's text is used as is."""
    for old, new in subs:
        n = block.count(old)
        if n != 1:
            raise Fatal(f"README block {name}: {old!r} occurs {n} times (want exactly 1): {block!r}")
        block = block.replace(old, new)
    return block


def toml_dotted(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A parsed TOML table as Codex `-c` dotted keys (tables flattened; leaves are scalars or arrays)."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        if "." in k or "=" in k:
            raise Fatal(f"TOML key {k!r} cannot be expressed as a dotted -c key")
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(toml_dotted(v, key + "."))
        else:
            out[key] = v
    return out


# --------------------------------------------------------------------------- recording pass-through


class RecordingProxy:
    """127.0.0.1:<port> -> 127.0.0.1:<upstream>, byte for byte in both directions (nothing added or
    changed: runread accepts a loopback Host with any port, and an Origin equal to http:// + that
    Host), recording each connection's two byte streams. ``take()`` returns the connections recorded
    since the last call, each parsed into (request, response) exchanges."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.conns: list[dict[str, Any]] = []
        self.socks: set[socket.socket] = set()
        self.closed = False
        threading.Thread(target=self._accept, name="recording-proxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(c,), daemon=True).start()

    def _handle(self, c: socket.socket) -> None:
        rec = {"up": bytearray(), "down": bytearray(), "done": threading.Event(), "t": time.time()}
        try:
            u = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            c.close()
            return
        u.settimeout(None)
        with self.lock:
            if self.closed:
                c.close()
                u.close()
                return
            self.socks.update((c, u))
            self.conns.append(rec)
        for s in (c, u):
            with contextlib.suppress(OSError):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        down = threading.Thread(target=self._pump, args=(u, c, rec["down"]), daemon=True)
        down.start()
        self._pump(c, u, rec["up"])
        down.join(timeout=30)
        for s in (c, u):
            with contextlib.suppress(OSError):
                s.close()
        with self.lock:
            self.socks.discard(c)
            self.socks.discard(u)
        rec["done"].set()

    def _pump(self, src: socket.socket, dst: socket.socket, buf: bytearray) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self.lock:
                    buf.extend(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
                with contextlib.suppress(OSError):
                    s.shutdown(how)

    def sent(self, needle: bytes) -> bool:
        """Whether a client has sent `needle` on any connection since the last take (a call in flight
        is seen before it is answered)."""
        with self.lock:
            return any(needle in rec["up"] for rec in self.conns)

    def take(self, settle: float = 2.0) -> list[dict[str, Any]]:
        """The connections since the last take (waiting up to `settle` s for open ones to finish),
        each {"exchanges": [{"request": ..., "response": ...}], "raw_up": bytes, "raw_down": bytes}."""
        with self.lock:
            conns, self.conns = self.conns, []
        deadline = time.monotonic() + settle
        for rec in conns:
            rec["done"].wait(timeout=max(0.0, deadline - time.monotonic()))
        out = []
        for rec in conns:
            with self.lock:
                up, down = bytes(rec["up"]), bytes(rec["down"])
            reqs = parse_http(up, response=False)
            resps = parse_http(down, response=True)
            out.append({"t": rec["t"], "raw_up": up, "raw_down": down,
                        "exchanges": [{"request": r, "response": resps[i] if i < len(resps) else None}
                                      for i, r in enumerate(reqs)]})
        return sorted(out, key=lambda c: c["t"])

    def close(self) -> None:
        with self.lock:
            self.closed = True
            socks, self.socks = list(self.socks), set()
        with contextlib.suppress(OSError):
            self.listener.close()
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()


def parse_http(data: bytes, response: bool) -> list[dict[str, Any]]:
    """HTTP/1.1 messages in one direction of a connection: start line, headers (in order, names
    lower-cased), body (Content-Length, chunked, or for a response without either: to the end)."""
    msgs: list[dict[str, Any]] = []
    i = 0
    while i < len(data):
        j = data.find(b"\r\n\r\n", i)
        if j < 0:
            msgs.append({"start": "(incomplete)", "headers": [], "body": data[i:]})
            break
        lines = data[i:j].decode("latin-1").split("\r\n")
        headers = [(n.strip().lower(), v.strip()) for n, _, v in (line.partition(":") for line in lines[1:])]
        h = dict(headers)
        i = j + 4
        body = b""
        status = None
        if response:
            parts = lines[0].split(" ", 2)
            status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        if "chunked" in h.get("transfer-encoding", "").lower():
            while i < len(data):
                k = data.find(b"\r\n", i)
                if k < 0:
                    break
                size = int(data[i:k].split(b";")[0].strip() or b"0", 16)
                i = k + 2
                if size == 0:
                    end = data.find(b"\r\n\r\n", i - 2)
                    i = len(data) if end < 0 else end + 4
                    break
                body += data[i:i + size]
                i += size + 2
        elif "content-length" in h:
            n = int(h["content-length"])
            body, i = data[i:i + n], i + n
        elif response and status is not None and status >= 200 and status not in (204, 304):
            body, i = data[i:], len(data)
        msgs.append({"start": lines[0], "headers": headers, "status": status, "body": body})
    return msgs


def jsonrpc_of(msg: dict[str, Any] | None, hook: Callable | None = None) -> Any:
    """The JSON-RPC payload of a request or response body (JSON, or the first data of an SSE stream);
    `hook` is json's object_pairs_hook (e.g. to keep key order)."""
    if msg is None or not msg["body"]:
        return None
    ctype = dict(msg["headers"]).get("content-type", "")
    body = msg["body"].decode("utf-8", "replace")
    if "text/event-stream" in ctype:
        body = next((line[5:].strip() for line in body.splitlines() if line.startswith("data:")), "")
    try:
        return json.loads(body, object_pairs_hook=hook)
    except ValueError:
        return None


def meta_version(params: Any) -> str | None:
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict):
        for k, v in meta.items():
            if k.endswith("protocolVersion") and isinstance(v, str):
                return v
    return None


def wire_summary(conns: list[dict[str, Any]]) -> dict[str, Any]:
    """What the client said on the wire: the handshake, the protocol version of each call, and the
    raw structuredContent of the first successful tools/call read_final_answer."""
    calls: list[dict[str, Any]] = []
    for conn in conns:
        for ex in conn["exchanges"]:
            req, resp = ex["request"], ex["response"]
            body = jsonrpc_of(req)
            body = body if isinstance(body, dict) else {}  # e.g. a GET, or a body that is not JSON
            params = body.get("params") if isinstance(body.get("params"), dict) else {}
            rbody = jsonrpc_of(resp)
            calls.append({
                "http": req["start"].split(" ")[0],
                "method": body.get("method"),
                "status": resp["status"] if resp else None,
                "header": dict(req["headers"]).get("mcp-protocol-version"),
                "meta": meta_version(params),
                "params": params,
                "result": rbody.get("result") if isinstance(rbody, dict) else None,
                "error": rbody.get("error") if isinstance(rbody, dict) else None,
                "ordered": jsonrpc_of(resp, hook=lambda pairs: pairs),
            })
    s: dict[str, Any] = {"calls": calls, "handshake": None, "version": None, "client": None, "structured_raw": None}
    init = next((c for c in calls if c["method"] == "initialize"), None)
    disc = next((c for c in calls if c["method"] == "server/discover"), None)
    tool_calls = [c for c in calls if c["method"] == "tools/call"]
    if init is not None:
        asked = init["params"].get("protocolVersion")
        got = (init["result"] or {}).get("protocolVersion")
        info = init["params"].get("clientInfo") or {}
        s["client"] = f"{info.get('name')} {info.get('version')}"
        s["handshake"] = f"initialize (asked {asked}, server answered {got}, HTTP {init['status']})"
        s["version"] = got
    elif disc is not None:
        res = disc["result"] or {}
        s["handshake"] = (f"server/discover (HTTP {disc['status']}, server offered {res.get('supportedVersions')}; "
                          f"request header {disc['header']}, _meta {disc['meta']})")
    # every request after the handshake states its version: the MCP-Protocol-Version header (both eras)
    # and, at 2026-07-28, _meta["io.modelcontextprotocol/protocolVersion"]
    stated = sorted({v for c in calls if c["method"] != "initialize" for v in (c["header"], c["meta"]) if v})
    s["stated"] = stated
    s["tools_call_versions"] = sorted({v for c in tool_calls for v in (c["header"], c["meta"]) if v})
    if init is None and len(stated) == 1:
        s["version"] = stated[0]
    elif init is not None and stated and stated != [s["version"]]:
        s["version"] = f"{s['version']} (but later requests stated {stated})"
    if s["client"] is None:
        for c in calls:
            meta = c["params"].get("_meta") if isinstance(c.get("params"), dict) else None
            info = next((v for k, v in (meta or {}).items() if k.endswith("clientInfo") and isinstance(v, dict)), None)
            if info:
                s["client"] = f"{info.get('name')} {info.get('version')}"
                break
    for c in tool_calls:
        if c["params"].get("name") == "read_final_answer" and c["result"] and not c["result"].get("isError"):
            s["structured_raw"] = dict(dict(c["ordered"])["result"]).get("structuredContent")  # key order as sent
            break
    s["methods"] = [f"{c['http']} {c['method']} -> {c['status']}" for c in calls]
    return s


# --------------------------------------------------------------------------- harness


def load_harness(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), path)
    if spec is None or spec.loader is None:
        raise Fatal(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def first(text: str, n: int = 200) -> str:
    return json.dumps(text[:n], ensure_ascii=False)


class Readers:
    def __init__(self, opts: argparse.Namespace, tmp: Path, res: Results) -> None:
        self.opts, self.tmp, self.res = opts, tmp, res
        self.server: subprocess.Popen | None = None
        self.server_log: Path | None = None
        self.proxy: RecordingProxy | None = None
        self.observed: list[tuple[str, str, str, str]] = []  # (case, client version, protocol, transport)
        self.case = ""
        self.notes: list[str] = []  # what the current case observed, printed under its PASS/FAIL line
        # the first structuredContent recorded on the wire (over stdio, what the model got is compared with it)
        self.reference: tuple[str, Any] | None = None
        # Per case directory: the environment its client steps get (RUNREAD_KEY, from key_in_env).
        self.case_env: dict[Path, dict[str, str]] = {}
        # What the access-request cases share (access_setup), made by whichever of them runs first.
        self.access: dict[str, Any] | None = None

    def note(self, line: str) -> None:
        key = getattr(self, "key", None)
        self.notes.append(line.replace(key, "<key>") if key else line)

    def cleanup(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
        stop(self.server)

    # ----------------------------------------------------------------- setup

    def setup(self) -> None:
        opts, tmp = self.opts, self.tmp
        harness = opts.harness
        for f in ("claude-scenario.py", "codex-scenario.py", "mockanthropic.py", "mockresponses.py", "pi-scenario.py",
                  "mockllm.py", "gemini-scenario.py", "mockgemini.py", "copilot-scenario.py"):
            if not (harness / f).is_file():
                raise Fatal(f"harness file {harness / f} missing (--harness / $RUNREAD_HARNESS_DIR)")
        self.blocks = readme_blocks()
        want = {"mcp-servers-http", "mcp-servers-stdio", "claude-http-command", "claude-stdio-command", "codex-http",
                "codex-stdio", "key-file-env", "pi-mcp-json", "pi-command"}
        if not want <= set(self.blocks):
            raise Fatal(f"README.md and docs/clients.md lack client-config blocks {sorted(want - set(self.blocks))}")

        t0 = time.monotonic()
        self.claude_mod = load_harness(harness / "claude-scenario.py", "claude-scenario")
        self.codex_mod = load_harness(harness / "codex-scenario.py", "codex-scenario")
        if self.claude_mod.CLAUDE_CODE_VERSION != CLAUDE_VERSION or self.codex_mod.CODEX_VERSION != CODEX_VERSION:
            raise Fatal(f"harness pins Claude Code {self.claude_mod.CLAUDE_CODE_VERSION}, Codex "
                        f"{self.codex_mod.CODEX_VERSION}; this test is written for {CLAUDE_VERSION}, {CODEX_VERSION}")
        self.pi_mod = load_harness(harness / "pi-scenario.py", "pi-scenario")
        # The harness reads PI_PACKAGE/PI_VERSION from its environment when loaded; its steps get them too.
        self.pi_mod.PI_PACKAGE, self.pi_mod.PI_VERSION = PI_PACKAGE, PI_VERSION
        try:
            self.claude_bin = Path(self.claude_mod.ensure_claude())
            self.codex_bin = Path(self.codex_mod.ensure_codex())
            pi_cli, pi_meta = self.pi_mod.ensure_pi()
            self.pi_node = self.pi_mod.node_dir(pi_meta)
        except (subprocess.CalledProcessError, SystemExit, OSError) as e:
            raise Fatal(f"installing the agents through the harness failed: {e}") from None
        if pi_meta.get("version") != PI_VERSION:
            raise Fatal(f"the harness installed {PI_PACKAGE} {pi_meta.get('version')}, not {PI_VERSION}")
        # The npm `pi` link, as `pi mcp add` is typed (the harness starts its steps through it under HARNESS_WRAP).
        self.pi_bin = next(p for p in Path(pi_cli).parents if p.name == "node_modules") / ".bin" / "pi"
        print(f"agents: Claude Code {CLAUDE_VERSION} ({self.claude_bin}), Codex {CODEX_VERSION} ({self.codex_bin}), "
              f"Pi {PI_VERSION} ({self.pi_bin}); ready in {time.monotonic() - t0:.1f}s", flush=True)

        home = tmp / "home"
        home.mkdir(mode=0o700)
        ws, pi = tmp / "workspace", tmp / "pi"
        cwd = ws / "sample"
        cwd.mkdir(parents=True)
        src = fixture_session("sample")
        sid, _ = place_session(src, pi, cwd)
        # Three more runs (one session), for the reader configured once and shared them one by one.
        multi_src = fixture_session("multi-run")
        multi_cwd = ws / "multi"
        multi_cwd.mkdir()
        multi_sid, _ = place_session(multi_src, pi, multi_cwd)
        rr = Runread(opts.runread, home)
        rr.ok("workspace", "add", str(ws))
        rr.ok("ingest", "--pi", str(pi))
        runs = json.loads(rr.ok("runs", "--json"))
        cands = [r for r in runs if r["target"]["sessionId"] == sid and r.get("status") == "completed"
                 and r.get("answerState") == "available" and r.get("finalBytes") == SAMPLE_BYTES]
        if len(cands) != 1:
            raise Fatal(f"expected one available {SAMPLE_BYTES}-byte sample run: {tail(json.dumps(runs), 600)}")
        t = cands[0]["target"]
        answer = final_answers(src).get(t["runId"])
        if answer is None or len(answer.encode()) != SAMPLE_BYTES:
            raise Fatal(f"fixture oracle: run {t['runId']} has no {SAMPLE_BYTES}-byte answer")
        self.answer = answer.encode("utf-8")
        multi_answers = final_answers(multi_src)
        self.shared_runs = [(r["target"], multi_answers.get(r["target"]["runId"])) for r in runs
                            if r["target"]["sessionId"] == multi_sid and r.get("answerState") == "available"]
        if len(self.shared_runs) != 3 or any(a is None for _, a in self.shared_runs):
            raise Fatal(f"expected three available multi-run runs with answers: {tail(json.dumps(runs), 600)}")
        port = free_port()
        g = json.loads(rr.ok("grant", "--run", t["runId"], "--session", t["sessionId"], "--features", "final_answer",
                             "--expires", "30m", "--to", "agents", "--url", f"http://127.0.0.1:{port}/mcp", "--json"))
        if not KEY_RE.fullmatch(g.get("key", "")) or g.get("target") != t:
            raise Fatal(f"grant --json unexpected: target {g.get('target')} (want {t})")
        self.key, self.target = g["key"], g["target"]
        keydir = tmp / "config"
        keydir.mkdir(mode=0o700)
        self.key_file = keydir / "claude.key"
        self.key_file.write_text(self.key + "\n")
        self.key_file.chmod(0o600)
        self.home = home
        for p in (opts.runread, self.key_file):
            if not SAFE_PATH.fullmatch(str(p)):
                raise Fatal(f"path {p} has characters that would need quoting in the configs")

        self.server_log = tmp / "serve.log"
        with open(self.server_log, "wb") as logf:
            self.server = subprocess.Popen(
                [str(opts.runread), "--home", str(home), "serve", "--listen", f"127.0.0.1:{port}"],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=rr.env, start_new_session=True,
            )
        wait_for_port(port, self.server, self.server_log)
        self.server_port = port
        self.proxy = RecordingProxy(port)
        self.res.record("setup: ingest, grant, serve", True,
                        f"run {t['runId']} ({SAMPLE_BYTES} B) granted (final_answer); runread serve on 127.0.0.1:{port}, "
                        f"clients use the recording pass-through 127.0.0.1:{self.proxy.port}")

    # ----------------------------------------------------------------- configs

    def http_subs(self) -> list[tuple[str, str]]:
        """The HTTP configs hold no key (they read it from $RUNREAD_KEY): only the port changes."""
        return [(f"127.0.0.1:{README_PORT}", f"127.0.0.1:{self.proxy.port}")]

    def key_in_env(self, out: Path, key: str) -> dict[str, str]:
        """The README's `key-file-env` lines as printed (the key substituted), run with sh in the case's
        HOME: the first stores the key in ~/.config/runread/claude-code.key, the second exports it.
        Checks the file (the key, one line, mode 0600) and that the export gives the key; the client's
        environment gets RUNREAD_KEY from it (self.harness adds it to every step of the case)."""
        lines = substitute("key-file-env", self.blocks["key-file-env"], [("<key>", key)])
        home = out / "home"
        r = subprocess.run(["sh", "-c", lines + f'printf "%s" "${KEY_ENV}"'], cwd=out, capture_output=True, text=True,
                           env={"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                           stdin=subprocess.DEVNULL, timeout=30)
        ensure(r.returncode == 0 and r.stdout == key, f"the key-file-env lines exited {r.returncode}, exported "
                                                       f"{len(r.stdout)} chars: {tail(r.stderr, 300)}")
        stored = home / README_STORED_KEY
        ensure(stored.read_text() == key + "\n", "the stored key file does not hold the key on one line")
        mode = stored.stat().st_mode & 0o777
        ensure(mode == 0o600, f"the stored key file has mode {mode:o}, not 600")
        self.case_env[out] = {KEY_ENV: r.stdout}
        return self.case_env[out]

    def key_in_no_file(self, out: Path, key: str) -> str:
        """The key's bytes are in no file under the case's directory (the client's config dir, HOME,
        the workspace, the client's logs) but the one the `key-file-env` lines stored and this test's own
        records of the HTTP bytes (wire-*.txt, which carry the header). runread's home (a symlink under
        HOME for stdio) is not entered."""
        needle, stored = key.encode(), out / "home" / README_STORED_KEY
        holders, files = [], 0
        for root, dirs, names in os.walk(out):  # does not follow the symlink to runread's home
            for n in names:
                f = Path(root) / n
                if f == stored or (f.parent == out and n.startswith("wire-")) or f.is_symlink():
                    continue
                files += 1
                if needle in f.read_bytes():
                    holders.append(str(f.relative_to(out)))
        ensure(not holders, f"the key is written in {holders}")
        return f"the key is in none of the case's {files} other files"

    def config(self, name: str) -> str:
        block = self.blocks[name]
        if name in ("mcp-servers-http", "claude-http-command", "codex-http"):
            return substitute(name, block, self.http_subs())
        if name in ("pi-mcp-json", "pi-command"):
            # The key stays in the client's environment (RUNREAD_KEY): only the port is substituted.
            ensure(block.count("${RUNREAD_KEY}") == 1 and "<key>" not in block,
                   f"block {name} should name ${{RUNREAD_KEY}} once and no <key>: {block!r}")
            return substitute(name, block, [(f"127.0.0.1:{README_PORT}", f"127.0.0.1:{self.proxy.port}")])
        runread = str(self.opts.runread)
        first_sub = {"mcp-servers-stdio": ('"command": "runread"', f'"command": "{runread}"'),
                     "claude-stdio-command": ("-- runread serve", f"-- {runread} serve"),
                     "codex-stdio": ('command = "runread"', f'command = "{runread}"')}[name]
        return substitute(name, block, [first_sub, (README_KEY_FILE, str(self.key_file))])

    # ----------------------------------------------------------------- running a scenario

    def case_dir(self, name: str) -> Path:
        out = self.tmp / "cases" / name
        (out / "home" / ".local" / "share").mkdir(parents=True)
        # a stdio runread launched by the client finds its home as a user's would: $HOME/.local/share/runread
        (out / "home" / ".local" / "share" / "runread").symlink_to(self.home)
        (out / "workspace").mkdir()
        return out

    def harness(self, agent: str, out: Path, scenario: dict[str, Any]) -> dict[str, Any]:
        if out in self.case_env:  # the key, exported by the README's lines (key_in_env)
            scenario = dict(scenario, env={**scenario.get("env", {}), **self.case_env[out]})
        path = out.parent / f"{out.name}.scenario.json"
        path.write_text(json.dumps(scenario, indent=1))
        script = self.opts.harness / f"{agent}-scenario.py"
        r = subprocess.run([sys.executable, str(script), str(path), str(out)], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=STEP_TIMEOUT_S * len(scenario["steps"]) + 120)
        (out / "harness.out").write_text(r.stdout + r.stderr)
        ensure(r.returncode == 0, f"{script.name} exited {r.returncode}: {tail(r.stderr or r.stdout, 800)}")
        manifest = json.loads((out / "manifest.json").read_text())
        for i, step in enumerate(manifest["steps"]):
            err = (out / step["stderr"]).read_text(errors="replace")
            ensure(step["exit_code"] == 0, f"step {i} exited {step['exit_code']}: {tail(ANSI.sub('', err), 800)}")
        return manifest

    def wire(self, out: Path, label: str) -> dict[str, Any]:
        """The HTTP traffic since the last take, saved raw (out/wire-LABEL.txt) and summarized."""
        conns = self.proxy.take()
        with open(out / f"wire-{label}.txt", "wb") as f:
            for n, c in enumerate(conns):
                f.write(b"===== connection %d: client -> runread\n" % n + c["raw_up"])
                f.write(b"\n===== connection %d: runread -> client\n" % n + c["raw_down"] + b"\n")
        return wire_summary(conns)

    def requests(self, out: Path) -> dict[int, dict[str, Any]]:
        reqs: dict[int, dict[str, Any]] = {}
        for line in (out / "llm-requests.jsonl").read_text().splitlines():
            e = json.loads(line)
            if e.get("n") is not None:
                reqs[e["n"]] = e["body"]
        return reqs

    # ----------------------------------------------------------------- what reached the model

    def check_label(self, text: str, wire: dict[str, Any] | None) -> str:
        """`text` is what the model received as the tool's result (after any client prefix)."""
        if text.startswith("<tool_result"):
            raise AssertionError(f"the client passed runread's text content block, not structuredContent: {first(text)}")
        try:
            obj = json.loads(text, object_pairs_hook=lambda pairs: pairs)
        except ValueError as e:
            raise AssertionError(f"the tool result the model got is not JSON ({e}): {first(text)}") from None
        keys = [k for k, _ in obj]
        d = dict(obj)
        if wire is not None:
            ensure(wire.get("structured_raw") is not None, "no successful tools/call read_final_answer on the wire")
            ensure(obj == wire["structured_raw"],
                   "what the model got differs from the structuredContent runread sent (keys, order or values): "
                   f"model {keys[:5]}…, wire {[k for k, _ in wire['structured_raw']][:5]}…")
            form = "structuredContent JSON (equal to what runread sent, keys in the same order)"
            if self.reference is None:
                self.reference = (self.case, wire["structured_raw"])
        elif self.reference is not None:
            ensure(obj == self.reference[1], f"what the model got differs from the structuredContent runread sent "
                                             f"in {self.reference[0]} (same grant, same chunk)")
            form = f"structuredContent JSON (equal to what runread sent over HTTP in {self.reference[0]}, same key order)"
        else:
            form = "structuredContent JSON"
        ensure(text.startswith(LABEL), f"the label is not first: keys in order {keys[:5]}…; starts {first(text, 120)}")
        ensure(d.get("state") == "available" and d.get("byteOffset") == 0 and d.get("totalBytes") == SAMPLE_BYTES,
               f"state {d.get('state')!r}, byteOffset {d.get('byteOffset')!r}, totalBytes {d.get('totalBytes')!r}")
        chunk = d.get("text") or ""
        ensure(chunk.encode() == self.answer[:d.get("bytes", -1)] and len(chunk) > 0,
               f"text ({len(chunk.encode())} B) is not the answer's first {d.get('bytes')} bytes")
        ensure(d.get("sha256") == hashlib.sha256(self.answer).hexdigest(), f"sha256 {d.get('sha256')}")
        start = json.dumps(self.answer[:48].decode(), ensure_ascii=False)[1:-1]
        at = text.find(start)
        ensure(at > len(LABEL), f"the answer's first bytes are not after the label (found at {at})")
        return f"{form}, {len(text)} chars, label first, the answer's first bytes at char {at}, {d['bytes']} of {SAMPLE_BYTES} bytes"

    # ----------------------------------------------------------------- Claude Code

    def claude_scenario(self, args: list[str], debug: Path) -> dict[str, Any]:
        return {
            "responses": [
                {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": f"select:{CLAUDE_TOOL}", "max_results": 5}}]},
                {"tool_calls": [{"name": CLAUDE_TOOL, "arguments": {"target": self.target}}]},
                {"text": DONE},
            ],
            "steps": [{"prompt": PROMPT, "args": args + ["--debug-file", str(debug)], "timeout_s": STEP_TIMEOUT_S}],
        }

    @staticmethod
    def claude_negotiated(debug: Path) -> str | None:
        """Claude Code's own record: 'Connection established with capabilities: {..."negotiatedProtocolVersion"...}'."""
        if not debug.exists():
            return None
        found = None
        for line in debug.read_text(errors="replace").splitlines():
            if 'MCP server "runread": Connection established with capabilities:' in line:
                caps = json.loads(line.split("capabilities:", 1)[1])
                found = f"{caps.get('negotiatedProtocolVersion')} ({caps.get('protocolEra')} era)"
        return found

    def claude_read(self, case: str, transport: str, out: Path, manifest: dict[str, Any], debug: Path,
                    wire: dict[str, Any] | None) -> str:
        events = [json.loads(line) for line in (out / "events-0.jsonl").read_text().splitlines() if line.strip()]
        init = next((e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), {})
        servers = {s.get("name"): s.get("status") for s in init.get("mcp_servers", [])}
        ensure(servers.get("runread") == "connected", f"init event mcp_servers {init.get('mcp_servers')}")
        ensure(CLAUDE_TOOL in init.get("tools", []), f"{CLAUDE_TOOL} not among the session's tools")
        reqs = self.requests(out)
        ensure(sorted(reqs) == [0, 1, 2], f"scripted model requests {sorted(reqs)} (want 0, 1, 2)")
        names1 = [t.get("name") for t in reqs[1].get("tools", [])]
        ensure(CLAUDE_TOOL in names1, f"after ToolSearch the model's tools lack {CLAUDE_TOOL}: {names1}")
        last = reqs[2]["messages"][-1]
        results = [b for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_result"]
        ensure(last.get("role") == "user" and len(results) == 1 and results[0].get("tool_use_id") == "toolu_mock_1_0",
               f"request 2 does not end with the tool_result of toolu_mock_1_0: {json.dumps(last)[:300]}")
        tr = results[0]
        ensure(not tr.get("is_error"), f"tool_result is_error: {json.dumps(tr)[:400]}")
        content = tr.get("content")
        if isinstance(content, list):
            kinds = [b.get("type") for b in content]
            ensure(kinds == ["text"], f"tool_result content blocks {kinds}")
            content = content[0]["text"]
        ensure(isinstance(content, str), f"tool_result content {type(content).__name__}")
        client_said = self.claude_negotiated(debug)
        ensure(client_said is not None, f"no 'Connection established' line for runread in {debug.name}")
        proto = self.protocol(wire, client_said)
        version = manifest.get("cli_version")
        self.observed.append((case, version, proto, transport))
        self.note(f"client: {version}; protocol: {proto}")
        self.note(f"model saw (first 200 chars of the tool_result): {first(content)}")
        result = next((e for e in events if e.get("type") == "result"), {})
        ensure(result.get("subtype") == "success" and result.get("result") == DONE, f"result event {json.dumps(result)[:300]}")
        return f"tool_result: {self.check_label(content, wire)}"

    def protocol(self, wire: dict[str, Any] | None, client_said: str) -> str:
        """The version spoken: on the wire (HTTP), which must agree with the client's own record."""
        if wire is None:
            return f"{client_said} — the client's own record (stdio: no wire record)"
        text = (f"{wire['version']} on the wire: {wire['handshake']}; later requests stated {wire['stated']}; "
                f"client on the wire: {wire['client']}; {len(wire['methods'])} HTTP exchanges "
                f"({', '.join(dict.fromkeys(wire['methods']))}); the client's own record: {client_said}")
        if wire["version"] is None or client_said.split(" ")[0] != wire["version"]:
            self.note(f"protocol: {text}")
            raise AssertionError(f"the wire ({wire['version']}) and the client's record ({client_said}) disagree or are unclear")
        return text

    def case_claude_mcp_config(self, case: str, block: str, transport: str, project: bool = False) -> str:
        """`claude -p --mcp-config FILE`, FILE = the block; or (`project`) the block as the project's
        `.mcp.json` in the workspace, no flag, the project's servers approved once in the user's settings
        (`enableAllProjectMcpServers`, what answering Claude Code's approval prompt records)."""
        out = self.case_dir(case)
        if transport == "HTTP":
            self.key_in_env(out, self.key)
        cfg = out / "workspace" / ".mcp.json" if project else out / "mcp.json"
        cfg.write_text(self.config(block))
        json.loads(cfg.read_text())  # the documented block must be valid JSON as printed
        if project:
            (out / "claude").mkdir(exist_ok=True)
            (out / "claude" / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
        debug = out / "claude-debug.txt"
        self.proxy.take(settle=0)
        args = [] if project else ["--mcp-config", str(cfg)]
        manifest = self.harness("claude", out, self.claude_scenario(args, debug))
        wire = self.wire(out, "read") if transport == "HTTP" else None
        if transport == "stdio":
            stray = self.proxy.take(settle=0)
            ensure(not stray, f"{len(stray)} HTTP connections during a stdio case")
        read = self.claude_read(case, transport, out, manifest, debug, wire)
        return f"{read}; {self.key_in_no_file(out, self.key)}"

    def claude_env(self, out: Path) -> dict[str, str]:
        """The environment claude-scenario.py gives the agent (CLAUDE_CONFIG_DIR, HOME, ...), with `claude`
        on PATH. ANTHROPIC_BASE_URL names a loopback port nothing listens on: with it unset, `claude mcp
        list` first spends ~17 s failing to fetch remote managed settings and policy limits from
        api.anthropic.com (5 retries each), although it reaches runread without them."""
        bindir = out / "bin"
        for d in (bindir, out / "claude", out / "tmp"):
            d.mkdir(exist_ok=True)
        link = bindir / "claude"
        if not link.exists():
            link.symlink_to(self.claude_bin)
        env = {k: os.environ[k] for k in self.claude_mod.KEEP_ENV if k in os.environ}
        env["PATH"] = f"{bindir}:{env.get('PATH', '/usr/local/bin:/usr/bin:/bin')}"
        env.setdefault("SHELL", "/bin/bash")
        env.update({
            "HOME": str(out / "home"), "CLAUDE_CONFIG_DIR": str(out / "claude"), "CLAUDE_CODE_TMPDIR": str(out / "tmp"),
            "TMPDIR": str(out / "tmp"), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{free_port()}",
            "ANTHROPIC_API_KEY": "mock", "NO_PROXY": "127.0.0.1,localhost", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0", "IS_SANDBOX": "1",
        })
        return env

    def case_claude_mcp_add(self, case: str, block: str, transport: str) -> str:
        out = self.case_dir(case)
        env = self.claude_env(out)
        if transport == "HTTP":
            env.update(self.key_in_env(out, self.key))
        ws = out / "workspace"
        command = self.config(block)
        self.proxy.take(settle=0)
        add = subprocess.run(["sh", "-c", command], cwd=ws, env=env, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=60)
        (out / "mcp-add.out").write_text(add.stdout + add.stderr)
        ensure(add.returncode == 0, f"`{command.strip()}` exited {add.returncode}: {tail(add.stdout + add.stderr, 600)}")
        if transport == "HTTP":
            self.note(f"without RUNREAD_KEY: {self.claude_list_unset(out, ws, env)}")
        list_debug = out / "mcp-list-debug.txt"
        t0 = time.monotonic()
        ls = subprocess.run(["claude", "--debug-file", str(list_debug), "mcp", "list"], cwd=ws, env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90)
        list_s = time.monotonic() - t0
        (out / "mcp-list.out").write_text(ls.stdout + ls.stderr)
        line = next((x for x in ls.stdout.splitlines() if x.startswith("runread:")), None)
        ensure(ls.returncode == 0 and line is not None and "Connected" in line and "✔" in line,
               f"`claude mcp list` exited {ls.returncode}: {tail(ls.stdout + ls.stderr, 600)}")
        list_wire = self.wire(out, "mcp-list") if transport == "HTTP" else None
        self.note(f"`{command.strip()}` -> {add.stdout.strip().splitlines()[0]}")
        self.note(f"`claude mcp list` ({list_s:.1f}s): {line.strip()}; protocol: "
                  f"{self.protocol(list_wire, self.claude_negotiated(list_debug) or '(no record)')}")
        debug = out / "claude-debug.txt"
        manifest = self.harness("claude", out, self.claude_scenario([], debug))
        wire = self.wire(out, "read") if transport == "HTTP" else None
        read = self.claude_read(case, transport, out, manifest, debug, wire)
        stored = self.claude_stored_header(out) if transport == "HTTP" else "the key file's path"
        return (f"`claude mcp list`: {line.strip()}; then a step with no --mcp-config: {read}; Claude Code's config holds "
                f"{stored}; {self.key_in_no_file(out, self.key)}")

    def claude_list_unset(self, out: Path, ws: Path, env: dict[str, str]) -> str:
        """`claude mcp list` from a shell that did not export RUNREAD_KEY: Claude Code warns, sends the
        text ``${RUNREAD_KEY}`` as the header, and runread refuses it (403 invalid_key): not connected."""
        unset = {k: v for k, v in env.items() if k != KEY_ENV}
        ls = subprocess.run(["claude", "mcp", "list"], cwd=ws, env=unset, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=90)
        (out / "mcp-list-unset.out").write_text(ls.stdout + ls.stderr)
        line = next((x for x in ls.stdout.splitlines() if x.startswith("runread:")), "")
        ensure("Connected" not in line or "✘" in line, f"connected without RUNREAD_KEY: {line}")
        conns = self.proxy.take()
        sent = {dict(ex["request"]["headers"]).get("x-runread-key") for c in conns for ex in c["exchanges"]}
        codes = {(ex["response"] or {}).get("status") for c in conns for ex in c["exchanges"]}
        ensure(sent == {"${" + KEY_ENV + "}"} and codes == {403},
               f"without RUNREAD_KEY Claude Code sent x-runread-key {sent}, answered {codes}")
        warned = next((x.strip() for x in (ls.stdout + ls.stderr).splitlines() if "Missing environment" in x), "(no warning)")
        # Claude Code then remembers runread as needing authentication and leaves it out of its sessions
        # for a while, even once the key is exported; docs/clients.md tells the user to delete this file.
        cache = out / "claude" / "mcp-needs-auth-cache.json"
        ensure(cache.exists() and "runread" in json.loads(cache.read_text()),
               f"Claude Code did not record runread as needing authentication ({cache.name})")
        cache.unlink()
        return (f"sent the text ${{{KEY_ENV}}}, refused 403; `claude mcp list`: {line.strip()}; {warned}; "
                f"recorded runread in {cache.name} (deleted, as docs/clients.md says)")

    @staticmethod
    def claude_stored_header(out: Path) -> str:
        """What `claude mcp add-json` wrote as runread's header in CLAUDE_CONFIG_DIR/.claude.json (local
        scope: under the project): the text ``${RUNREAD_KEY}``, expanded only when Claude Code connects."""
        conf = json.loads((out / "claude" / ".claude.json").read_text())
        found = [p.get("mcpServers", {}).get("runread") for p in conf.get("projects", {}).values()]
        found = [f for f in found if f] + ([conf["mcpServers"]["runread"]] if "runread" in conf.get("mcpServers", {}) else [])
        ensure(len(found) == 1, f"{len(found)} runread servers in .claude.json")
        header = (found[0].get("headers") or {}).get("x-runread-key")
        ensure(header == "${" + KEY_ENV + "}", f"the stored x-runread-key header is {header!r}")
        return f"x-runread-key {header!r}"

    # ----------------------------------------------------------------- a reader configured once

    def reader_step(self, out: Path, n: int, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """One `claude -p` step (a new session, the server `claude mcp add` configured once) whose scripted
        model finds each runread tool with ToolSearch and calls it; what reached the model for each call:
        {"tool", "is_error", "json"} (the tool_result's text, parsed)."""
        responses: list[dict[str, Any]] = []
        found: set[str] = set()
        call_at: list[tuple[int, str]] = []
        for tool, args in calls:
            name = f"mcp__runread__{tool}"
            if name not in found:
                found.add(name)
                responses.append({"tool_calls": [{"name": "ToolSearch", "arguments": {"query": f"select:{name}", "max_results": 5}}]})
            call_at.append((len(responses), tool))
            responses.append({"tool_calls": [{"name": name, "arguments": args}]})
        responses.append({"text": DONE})
        (out / "llm-requests.jsonl").unlink(missing_ok=True)
        debug = out / f"claude-debug-{n}.txt"
        self.harness("claude", out, {"responses": responses, "steps": [
            {"prompt": PROMPT, "args": ["--debug-file", str(debug)], "timeout_s": STEP_TIMEOUT_S}]})
        reqs = self.requests(out)
        ensure(sorted(reqs) == list(range(len(responses))), f"step {n}: scripted model requests {sorted(reqs)}")
        seen = []
        for at, tool in call_at:
            # the call's tool_result: in the last message, or before a system reminder Claude Code appends after it
            msgs = reqs[at + 1]["messages"]
            last = next((m for m in reversed(msgs) if m.get("role") != "system"), msgs[-1])
            results = [b for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_result"
                       and b.get("tool_use_id") == f"toolu_mock_{at}_0"]
            ensure(len(results) == 1, f"step {n}: no tool_result of {tool} in request {at + 1}: {json.dumps(last)[:300]}")
            content = results[0].get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
            try:
                parsed = json.loads(content)
            except (TypeError, ValueError):
                raise AssertionError(f"step {n}: {tool}'s result is not JSON: {first(str(content))}") from None
            seen.append({"tool": tool, "is_error": bool(results[0].get("is_error")), "json": parsed})
        return seen

    def shares_one_by_one(self, reader: str, reader_id: str, step: Callable[[int, list[tuple[str, dict[str, Any]]]],
                                                                            list[dict[str, Any]]]) -> str:
        """The owner shares three runs with `reader` one after another (`grant --to`: no new key), and
        after each `step` reads it through list_granted_targets and read_final_answer; then one grant is
        revoked and `step` reads that run (refused grant_revoked) and another (still read)."""
        rr = Runread(self.opts.runread, self.home)
        grants, shown = [], []
        for n, (target, answer) in enumerate(self.shared_runs):
            g = json.loads(rr.ok("grant", "--run", target["runId"], "--session", target["sessionId"], "--features",
                                 "final_answer", "--expires", "30m", "--to", reader, "--json"))
            ensure(g.get("newReader") is False and "key" not in g and g.get("readerId") == reader_id,
                   f"grant to an existing reader: newReader {g.get('newReader')!r}, key shown {'key' in g}")
            grants.append(g)
            listed, read = step(n, [("list_granted_targets", {}), ("read_final_answer", {"target": target})])
            targets = [t.get("target") for t in listed["json"].get("targets", [])]
            ensure(not listed["is_error"] and len(targets) == n + 1 and targets[0] == target,
                   f"run {n + 1}: list_granted_targets gave {len(targets)} targets, newest {targets[:1]}")
            d = read["json"]
            ensure(not read["is_error"] and d.get("state") == "available" and d.get("byteOffset") == 0
                   and answer.encode().startswith((d.get("text") or "\0").encode())
                   and d.get("sha256") == hashlib.sha256(answer.encode()).hexdigest(),
                   f"run {n + 1}: read_final_answer gave state {d.get('state')!r}, sha256 {d.get('sha256')}")
            shown.append(f"run {n + 1}: listed newest of {n + 1}, read {d.get('bytes')} B")
        rr.ok("grant", "revoke", grants[1]["grantId"])
        revoked, still = step(3, [("read_final_answer", {"target": self.shared_runs[1][0]}),
                                  ("read_final_answer", {"target": self.shared_runs[0][0]})])
        ensure(revoked["is_error"] and revoked["json"].get("code") == "grant_revoked",
               f"the revoked run: is_error {revoked['is_error']}, {json.dumps(revoked['json'])[:200]}")
        ensure(not still["is_error"] and still["json"].get("state") == "available",
               f"the reader's other run after the revocation: {json.dumps(still['json'])[:200]}")
        self.proxy.take(settle=0)
        return "; ".join(shown) + "; run 2 revoked: its read refused grant_revoked, run 1 still read"

    def add_reader(self, name: str) -> tuple[str, str]:
        """`runread reader add NAME --json`: its key and id."""
        added = json.loads(Runread(self.opts.runread, self.home).ok("reader", "add", name, "--json"))
        key = added.get("key", "")
        ensure(KEY_RE.fullmatch(key) is not None, "reader add --json printed no key")
        return key, added.get("readerId", "")

    def claude_configured_once(self, case: str, key: str) -> Path:
        """The case's directory, with Claude Code configured once with `key` by the README's
        `claude mcp add` block as printed (the port and the key substituted)."""
        out = self.case_dir(case)
        self.key_in_env(out, key)
        command = substitute("claude-http-command", self.blocks["claude-http-command"], self.http_subs())
        add = subprocess.run(["sh", "-c", command], cwd=out / "workspace", env=self.claude_env(out), capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, timeout=60)
        ensure(add.returncode == 0, f"`{command.strip()}` exited {add.returncode}: {tail(add.stdout + add.stderr, 600)}")
        return out

    def case_claude_reader_once(self) -> str:
        """Claude Code configured once with a reader's key (`runread reader add`, then the README's
        `claude mcp add` block as printed), then [`shares_one_by_one`], each read a `claude -p` step of
        its own; the client's config is never touched again."""
        key, reader_id = self.add_reader("claude-code-once")
        out = self.claude_configured_once("claude-reader-once", key)
        shared = self.shares_one_by_one(
            "claude-code-once", reader_id, lambda n, calls: self.reader_step(out, n, calls))
        return f"`claude mcp add-json` once; {shared}; {self.key_in_no_file(out, key)}"

    def case_claude_waits_on_codex(self) -> str:
        """An agent hands work to another and waits for it: the real Codex runs under
        `runread run --share READER:final_answer,status:1h` (its scripted model answers only after
        CODEX_HOLD_MS), while the real Claude Code, configured once with READER's key (the README's
        `claude mcp add` block), calls `wait_for_run` on the shared run and then `read_final_answer`.
        While the wait is open the owner's `runread runs --json` names the reader as waiting on a run
        whose answer is not yet available; the wait answers `settled:true` once the supervised run
        settled, and the answer read right after is the scripted text, on supervised evidence."""
        reader = "orchestrator-waits"
        key, _ = self.add_reader(reader)
        out = self.claude_configured_once("claude-waits-on-codex", key)
        rr = Runread(self.opts.runread, self.home)
        codex, codex_out, codex_log = self.codex_under_run("codex-under-run", reader, None, WAITED_ANSWER, CODEX_HOLD_MS)
        try:
            target = None
            deadline = time.monotonic() + STEP_TIMEOUT_S
            while target is None and time.monotonic() < deadline and codex.poll() is None:
                grants = json.loads(rr.ok("grant", "list", "--json"))
                target = next((g["target"] for g in grants if g.get("to") == reader), None)
                time.sleep(0.2)
            ensure(target is not None, f"the run was not shared with {reader} as it started (codex exit {codex.poll()})")
            stepped: dict[str, Any] = {}

            def step() -> None:
                try:
                    stepped["seen"] = self.reader_step(out, 0, [("wait_for_run", {"target": target, "timeoutSeconds": 50}),
                                                                ("read_final_answer", {"target": target})])
                except BaseException as e:  # reported below, on the test's thread
                    stepped["error"] = e

            claude = threading.Thread(target=step, daemon=True)
            claude.start()
            waiting_seen = None
            while claude.is_alive() and waiting_seen is None:
                for r in json.loads(rr.ok("runs", "--json")):
                    if r["target"]["runId"] == target["runId"] and reader in r.get("waitingReaders", []):
                        waiting_seen = r
                time.sleep(0.2)
        except BaseException:
            codex.kill()
            codex_log.close()
            raise
        (rc,) = self.settle_handoff(claude, stepped, [(codex, codex_log)], STEP_TIMEOUT_S * 3)
        ensure(rc == 0, f"the Codex harness under runread run exited {rc}: {tail((codex_out.parent / 'codex-under-run.out').read_text())}")
        ensure(waiting_seen is not None, f"`runread runs --json` never named {reader} as waiting on the run")
        ensure(waiting_seen.get("answerState") != "available",
               f"while the reader waited the run's answer was already {waiting_seen.get('answerState')!r}: nothing was waited for")
        waited, read = stepped["seen"]
        w = waited["json"]
        ensure(not waited["is_error"] and w.get("settled") is True and w.get("status") == "completed" and w.get("found") is True,
               f"wait_for_run gave {json.dumps(w)[:300]}")
        d = read["json"]
        ensure(not read["is_error"] and d.get("state") == "available" and d.get("evidence") == "supervised"
               and d.get("text") == WAITED_ANSWER and d.get("sha256") == hashlib.sha256(WAITED_ANSWER.encode()).hexdigest(),
               f"read_final_answer right after the wait gave {json.dumps(d)[:300]}")
        self.proxy.take(settle=0)
        return (f"Codex under `runread run --share {reader}:…` held {CODEX_HOLD_MS / 1000:.0f}s; `runread runs` showed "
                f"{reader} waiting while the answer was {waiting_seen.get('answerState')!r}; wait_for_run answered "
                f"settled:true, status completed; read_final_answer: available, evidence supervised, the scripted text")

    def codex_under_run(self, name: str, reader: str | None, label: str | None, answer: str,
                        hold_ms: int, prompt: str | None = None) -> tuple[subprocess.Popen, Path, Any]:
        """The real Codex under `runread run --share READER:final_answer,status:1h` (and `--label LABEL`
        when given; no reader: shared with none), its scripted model answering `answer` after `hold_ms`:
        (the harness process, its OUTDIR, its log)."""
        codex_out = self.tmp / "cases" / name
        shared = ["--share", f"{reader}:final_answer,status:1h"] if reader else []
        labelled = ["--label", label] if label else []
        wrap = [str(self.opts.runread), "--home", str(self.home), "run", "--workspace", str(codex_out / "workspace"),
                *shared, *labelled, "--"]
        if prompt is None:
            prompt = f"Do the task labelled {label}." if label else "Write the report the orchestrator waits for."
        scenario = codex_out.parent / f"{name}.scenario.json"
        scenario.write_text(json.dumps({"model": CODEX_MODEL, "responses": [{"text": answer, "delay_ms": hold_ms}],
                                        "steps": [{"prompt": prompt, "timeout_s": STEP_TIMEOUT_S}]}))
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_WRAP"}
        env["HARNESS_WRAP"] = json.dumps(wrap)
        log = open(codex_out.parent / f"{name}.out", "w")
        proc = subprocess.Popen([sys.executable, str(self.opts.harness / "codex-scenario.py"), str(scenario), str(codex_out)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        return proc, codex_out, log

    def pi_under_run(self, name: str, reader: str, label: str, answer: str, hold_ms: int) -> tuple[subprocess.Popen, Path, Any]:
        """The real Pi 1.6.0 under `runread run --share READER:final_answer,status:1h --label LABEL` (the
        vendored harness with PI_PACKAGE/PI_VERSION; `runread run` adds its `--mode json`), its scripted
        model answering `answer` after `hold_ms`: (the harness process, its OUTDIR, its log)."""
        pi_out = self.tmp / "cases" / name
        wrap = [str(self.opts.runread), "--home", str(self.home), "run", "--workspace", str(pi_out / "workspace"),
                "--share", f"{reader}:final_answer,status:1h", "--label", label, "--"]
        scenario = pi_out.parent / f"{name}.scenario.json"
        scenario.write_text(json.dumps({"responses": [{"text": answer, "delay_ms": hold_ms}],
                                        "steps": [{"prompt": f"Do the task labelled {label}."}]}))
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_WRAP"}
        env.update({"HARNESS_WRAP": json.dumps(wrap), "PI_PACKAGE": PI_PACKAGE, "PI_VERSION": PI_VERSION,
                    "PI_OFFLINE": "1", "PI_TELEMETRY": "0"})
        log = open(pi_out.parent / f"{name}.out", "w")
        proc = subprocess.Popen([sys.executable, str(self.opts.harness / "pi-scenario.py"), str(scenario), str(pi_out)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        return proc, pi_out, log

    @staticmethod
    def settle_handoff(claude: threading.Thread, stepped: dict[str, Any], delegates: list[tuple[subprocess.Popen, Any]],
                       join_s: float) -> list[int]:
        """The reader's step joined (its error raised here) and each delegate's harness waited for: their
        exit codes. A delegate still running when this gives up is killed; every log is closed."""
        try:
            claude.join(join_s)
            ensure(not claude.is_alive(), "the Claude Code step did not end")
            if "error" in stepped:
                raise stepped["error"]
            return [proc.wait(timeout=STEP_TIMEOUT_S) for proc, _ in delegates]
        finally:
            for proc, log in delegates:
                if proc.poll() is None:
                    proc.kill()
                log.close()

    def claude_waiting_by_label(self, out: Path, label: str) -> tuple[threading.Thread, dict[str, Any]]:
        """A Claude Code step (configured in `out`) whose model calls `wait_for_run {"label": label}` and
        then `list_granted_targets`, started on a thread of its own; returns once its wait is on the wire
        (the call sent, not yet answered): the thread, and where it leaves what it saw ("seen") or its
        error ("error")."""
        stepped: dict[str, Any] = {}

        def step() -> None:
            try:
                stepped["seen"] = self.reader_step(out, 0, [("wait_for_run", {"label": label, "timeoutSeconds": 50}),
                                                            ("list_granted_targets", {})])
            except BaseException as e:  # reported by the caller, on the test's thread
                stepped["error"] = e

        self.proxy.take(settle=0)
        claude = threading.Thread(target=step, daemon=True)
        claude.start()
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while claude.is_alive() and not self.proxy.sent(b'"wait_for_run"') and time.monotonic() < deadline:
            time.sleep(0.1)
        ensure(self.proxy.sent(b'"wait_for_run"'),
               f"Claude Code never called wait_for_run before anything was shared: {stepped.get('error')}")
        return claude, stepped

    def case_claude_first_waits_by_label(self) -> str:
        """The handoff in the usual order: Claude Code (configured once with the orchestrator's key) is
        connected and waiting before anything is shared with it — its scripted model calls
        `wait_for_run {"label": L}` — and only then are two Codex runs started under `runread run --share
        orchestrator:… --label …`, with two labels and two answers, at once. The wait answers once the
        run labelled L is shared and settled; `list_granted_targets` (same step) names that run by L; a
        second step reads its answer: exactly the scripted text of L's run, not the other's. Each
        delegate's stdout carries its exact target as one JSON line, which must be the listed one."""
        reader = "orchestrator-first"
        key, _ = self.add_reader(reader)
        out = self.claude_configured_once("claude-first-waits-by-label", key)
        wanted, other = "handoff: review PR 42", "handoff: fix the flaky test"
        answers = {wanted: "The review of PR 42: two risks, both in the parser.",
                   other: "The flaky test is fixed: a race in the fixture."}
        claude, stepped = self.claude_waiting_by_label(out, wanted)
        rr = Runread(self.opts.runread, self.home)
        ensure(not [g for g in json.loads(rr.ok("grant", "list", "--json")) if g.get("to") == reader],
               "a run was shared with the orchestrator before it waited")
        delegates = [self.codex_under_run(f"codex-label-{i}", reader, label, answers[label], 8_000)
                     for i, label in enumerate((other, wanted))]
        codes = self.settle_handoff(claude, stepped, [(proc, log) for proc, _, log in delegates], STEP_TIMEOUT_S * 2)
        ensure(codes == [0, 0], f"the Codex harnesses under runread run exited {codes}")
        waited, listed = stepped["seen"]
        w = waited["json"]
        ensure(not waited["is_error"] and w.get("found") is True and w.get("settled") is True
               and w.get("status") == "completed" and w.get("origin") == "supervised",
               f"wait_for_run by label gave {json.dumps(w)[:300]}")
        by_label = [t for t in listed["json"].get("targets", []) if t.get("label") == wanted]
        ensure(len(by_label) == 1, f"list_granted_targets by label: {json.dumps(listed['json'])[:400]}")
        target = by_label[0]["target"]
        ensure(w.get("revision", {}).get("generation") == target.get("generation"), "the wait and the listing differ")
        printed = []
        for _, codex_out, _ in delegates:
            for line in (codex_out / "events-0.jsonl").read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    obj = json.loads(line)
                    if isinstance(obj, dict) and obj.get("runread") == "shared":
                        printed.append(obj)
        mine = [p for p in printed if p.get("label") == wanted]
        ensure(len(printed) == 2 and len(mine) == 1 and mine[0].get("target") == target
               and mine[0].get("readers") == [reader],
               f"the delegates' stdout JSON lines: {json.dumps(printed)[:500]}")
        (read,) = self.reader_step(out, 1, [("read_final_answer", {"target": target})])
        d = read["json"]
        ensure(not read["is_error"] and d.get("text") == answers[wanted] and d.get("evidence") == "supervised",
               f"read_final_answer of the labelled run gave {json.dumps(d)[:300]}")
        self.proxy.take(settle=0)
        return (f"Claude Code waited by label before any share; two Codex runs shared at once; the wait answered "
                f"settled for {wanted!r} (supervised), listed by its label, its stdout line named the same target, "
                f"and the read gave that run's text, not the other's")

    def case_claude_waits_on_pi_by_label(self) -> str:
        """The same handoff with Pi 1.6.0 as the delegate: Claude Code waiting by label before the share,
        then the real Pi 1.6.0 under `runread run --share … --label …`; the wait answers settled on
        supervised evidence, the listing names the run by its label, and the answer read is Pi's."""
        reader = "orchestrator-of-pi"
        key, _ = self.add_reader(reader)
        out = self.claude_configured_once("claude-waits-on-pi-by-label", key)
        label, answer = "handoff: summarize the changelog", "The changelog, summarized: three fixes and one feature."
        claude, stepped = self.claude_waiting_by_label(out, label)
        proc, pi_out, log = self.pi_under_run("pi-label", reader, label, answer, 4_000)
        (rc,) = self.settle_handoff(claude, stepped, [(proc, log)], STEP_TIMEOUT_S * 2)
        ensure(rc == 0, f"the Pi harness under runread run exited {rc}: {tail((pi_out.parent / 'pi-label.out').read_text())}")
        waited, listed = stepped["seen"]
        w = waited["json"]
        ensure(not waited["is_error"] and w.get("found") is True and w.get("settled") is True
               and w.get("origin") == "supervised", f"wait_for_run by label gave {json.dumps(w)[:300]}")
        by_label = [t for t in listed["json"].get("targets", []) if t.get("label") == label]
        ensure(len(by_label) == 1, f"list_granted_targets by label: {json.dumps(listed['json'])[:400]}")
        (read,) = self.reader_step(out, 1, [("read_final_answer", {"target": by_label[0]["target"]})])
        d = read["json"]
        ensure(not read["is_error"] and d.get("text") == answer and d.get("evidence") == "supervised",
               f"read_final_answer of Pi's labelled run gave {json.dumps(d)[:300]}")
        self.proxy.take(settle=0)
        return (f"Claude Code waited by label before the share; Pi {PI_VERSION} under runread run --label; settled, "
                f"supervised, listed by its label, its answer read exactly")

    # ----------------------------------------------------------------- access requests (issue 55)

    def access_setup(self) -> dict[str, Any]:
        """What the three access-request cases share, made once (whichever of them runs first): a reader
        with no grant and Claude Code configured once with its key (the README's `claude mcp add` block as
        printed), and the home's latest Codex run — the real Codex under `runread run`, shared with no
        one, so that the newest Codex run of the home is one whose answer the test knows, whatever ran
        before. Checks that it is the newest Codex run `runread runs --json` lists, completed, its answer
        available and exactly the scripted size."""
        if self.access is not None:
            return self.access
        key, reader_id = self.add_reader(ASKING_READER)
        out = self.claude_configured_once("claude-requests-access", key)
        for case in ACCESS_CASES:  # where a failing case's artifacts are said to be
            (out.parent / case).symlink_to(out.name)
        proc, codex_out, log = self.codex_under_run("codex-requested", None, None, REQUESTED_ANSWER, 0,
                                                    prompt=REQUESTED_PROMPT)
        try:
            rc = proc.wait(timeout=STEP_TIMEOUT_S + 120)
        finally:
            if proc.poll() is None:
                proc.kill()
            log.close()
        ensure(rc == 0, f"the Codex harness under runread run exited {rc}: "
                        f"{tail((codex_out.parent / 'codex-requested.out').read_text(errors='replace'))}")
        rr = Runread(self.opts.runread, self.home)
        codex_runs = [r for r in json.loads(rr.ok("runs", "--json")) if r.get("agent") == "codex"]
        ensure(codex_runs and codex_runs[0].get("prompt") == REQUESTED_PROMPT,
               f"the newest Codex run `runread runs --json` lists is not the one just made: "
               f"{json.dumps(codex_runs[:1], ensure_ascii=False)[:400]}")
        latest = codex_runs[0]
        ensure(latest.get("status") == "completed" and latest.get("answerState") == "available"
               and latest.get("finalBytes") == len(REQUESTED_ANSWER.encode()),
               f"the latest Codex run: {json.dumps(latest, ensure_ascii=False)[:400]}")
        ensure(not [g for g in json.loads(rr.ok("grant", "list", "--json")) if g.get("to") == ASKING_READER],
               f"{ASKING_READER} holds a grant before asking")
        self.access = {"reader": ASKING_READER, "reader_id": reader_id, "key": key, "out": out,
                       "target": latest["target"], "steps": 0}
        return self.access

    def access_step(self, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """One `claude -p` step of the reader configured once (`reader_step`), numbered across the cases."""
        a = self.access
        a["steps"] += 1
        return self.reader_step(a["out"], a["steps"], calls)

    def request_codex(self, reason: str) -> tuple[str, dict[str, Any], float, float]:
        """Step A: the scripted model finds `request_access` and calls it with `{"agent": "codex", "latest": 1,
        "reason": REASON}`. What reached the model: the request's id, `state: "pending"`, an `expiresAt`,
        nothing of any run (no id of the Codex run in it). Returns (id, the answer, wall clock before and
        after the step)."""
        before = time.time()
        (asked,) = self.access_step([("request_access", {"agent": "codex", "latest": 1, "reason": reason})])
        after = time.time()
        d = asked["json"]
        ensure(not asked["is_error"] and REQUEST_ID.fullmatch(str(d.get("requestId"))) and d.get("state") == "pending"
               and isinstance(d.get("expiresAt"), str),
               f"request_access gave is_error {asked['is_error']}, {json.dumps(d)[:300]}")
        target = self.access["target"]
        text = json.dumps(d)
        ensure(target["runId"] not in text and target["sessionId"] not in text and "targets" not in d,
               f"request_access's answer names a run: {text[:300]}")
        return d["requestId"], d, before, after

    def owner_request(self, request_id: str) -> dict[str, Any] | None:
        """The pending request `runread requests --json` lists with this id (None: not listed)."""
        listed = json.loads(Runread(self.opts.runread, self.home).ok("requests", "--json"))
        ensure(isinstance(listed, list), f"`runread requests --json` is not a list: {json.dumps(listed)[:300]}")
        found = [r for r in listed if r.get("requestId") == request_id]
        ensure(len(found) <= 1, f"`runread requests --json` lists {request_id} {len(found)} times")
        return found[0] if found else None

    def check_listed(self, request_id: str, reason: str, expires_at: str) -> dict[str, Any]:
        """`runread requests --json` lists the request: this reader, what it asked (agent codex, latest 1,
        the default features), its reason, the expiry the reader was told, and exactly one matching run,
        the latest Codex run."""
        r = self.owner_request(request_id)
        ensure(r is not None, f"`runread requests --json` does not list {request_id}")
        target = self.access["target"]
        matches = r.get("matches")
        ensure(r.get("reader") == ASKING_READER and r.get("agent") == "codex" and r.get("latest") == 1
               and r.get("reason") == reason and r.get("features") == ["final_answer", "status"]
               and r.get("expiresAt") == expires_at,
               f"`runread requests --json` shows {json.dumps(r, ensure_ascii=False)[:500]}")
        ensure(isinstance(matches, list) and len(matches) == 1 and matches[0].get("target") == target,
               f"`runread requests --json`: matches {json.dumps(matches, ensure_ascii=False)[:500]} "
               f"(want exactly the latest Codex run {target['runId']})")
        return r

    def decided_while_waiting(self, request_id: str, reason: str, expires_at: str, decide: list[str],
                              timeout_s: int = 50) -> tuple[list[dict[str, Any]], str]:
        """Step B: the scripted model calls `wait_for_access {"requestId": ID}` and then `read_final_answer`
        of the latest Codex run's target (the test knows it; a scripted model cannot learn it in the
        step). The step runs on a thread of its own; once the wait is on the wire (sent, not answered)
        the owner checks `runread requests --json` (`check_listed`) and decides with `runread requests
        DECIDE...` (the CLI, as the owner would). What reached the model for both calls, and the CLI's
        output. A check failing before the decision denies the request, so the wait ends at once."""
        target = self.access["target"]
        stepped: dict[str, Any] = {}

        def step() -> None:
            try:
                stepped["seen"] = self.access_step([
                    ("wait_for_access", {"requestId": request_id, "timeoutSeconds": timeout_s}),
                    ("read_final_answer", {"target": target})])
            except BaseException as e:  # reported below, on the test's thread
                stepped["error"] = e

        rr = Runread(self.opts.runread, self.home)
        self.proxy.take(settle=0)
        claude = threading.Thread(target=step, daemon=True)
        claude.start()
        decided = None
        try:
            deadline = time.monotonic() + STEP_TIMEOUT_S
            while claude.is_alive() and not self.proxy.sent(b'"wait_for_access"') and time.monotonic() < deadline:
                time.sleep(0.1)
            ensure(self.proxy.sent(b'"wait_for_access"'), f"Claude Code never called wait_for_access: {stepped.get('error')}")
            ensure(claude.is_alive(), f"the step ended before the owner decided: {stepped.get('error')}")
            self.check_listed(request_id, reason, expires_at)
            r = rr.run("requests", *decide, request_id)
            ensure(r.returncode == 0, f"`runread requests {' '.join(decide)} ID` exited {r.returncode}: {tail(r.stderr, 400)}")
            decided = r
        finally:
            if decided is None:  # end the wait now rather than after its timeout
                rr.run("requests", "deny", request_id)
            claude.join(STEP_TIMEOUT_S * 2)
        ensure(not claude.is_alive(), "the Claude Code step did not end")
        if "error" in stepped:
            raise stepped["error"]
        ensure(self.owner_request(request_id) is None, f"`runread requests --json` still lists {request_id} once decided")
        said = (decided.stdout.strip().splitlines() or [""])[0]
        return stepped["seen"], said

    def reader_grants(self) -> list[dict[str, Any]]:
        """Every grant `runread grant list --json` shows for the asking reader, in any state."""
        grants = json.loads(Runread(self.opts.runread, self.home).ok("grant", "list", "--json"))
        return [g for g in grants if g.get("to") == ASKING_READER]

    def reason_in_no_log(self, reason: str, *logs: Path) -> str:
        """The request's reason (the reader's text) reaches no serve log in clear."""
        holders = [log.name for log in logs if reason.encode() in log.read_bytes()]
        ensure(not holders, f"the request's reason is in {holders} in clear")
        return f"the reason in no log ({', '.join(log.name for log in logs)})"

    def not_granted(self, read: dict[str, Any], what: str) -> None:
        ensure(read["is_error"] and read["json"].get("code") == "not_granted",
               f"read_final_answer of the Codex run {what}: is_error {read['is_error']}, {json.dumps(read['json'])[:300]}")

    def case_claude_requests_denied(self) -> str:
        """Claude Code asks for the latest Codex run (`request_access`), waits (`wait_for_access`), the owner
        denies it with `runread requests deny ID` while the wait is on the wire: the wait answers `denied`
        with no target, no grant is made, and reading the Codex run is refused `not_granted`."""
        a = self.access_setup()
        reason = "The owner asked me to read what Codex just did in this project (denied case)."
        request_id, asked, _, _ = self.request_codex(reason)
        (waited, read), said = self.decided_while_waiting(request_id, reason, asked["expiresAt"], ["deny"])
        w = waited["json"]
        ensure(not waited["is_error"] and w.get("requestId") == request_id and w.get("state") == "denied"
               and w.get("targets") == [], f"wait_for_access after the denial gave {json.dumps(w)[:300]}")
        self.not_granted(read, "after the denial")
        ensure(not self.reader_grants(), f"{ASKING_READER} holds a grant after the denial")
        self.proxy.take(settle=0)
        return (f"request {request_id} pending; `runread requests --json` listed it with the one latest Codex run; "
                f"`runread requests deny` ({said!r}) while the wait was on the wire; wait_for_access answered denied, "
                f"no targets; read_final_answer refused not_granted; no grant; "
                f"{self.reason_in_no_log(reason, self.server_log)}; {self.key_in_no_file(a['out'], a['key'])}")

    def expiring_server(self) -> tuple[subprocess.Popen, Path]:
        """A second `runread serve` on the same home whose requests wait REQUEST_EXPIRY_S seconds
        (`--request-expiry-seconds`, the owner's setting), the recording pass-through switched to it, so
        that Claude Code, configured once with the pass-through's URL, reaches it unchanged: (the server,
        its log)."""
        port = free_port()
        log = self.tmp / "serve-expiry.log"
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                [str(self.opts.runread), "--home", str(self.home), "serve", "--listen", f"127.0.0.1:{port}",
                 "--request-expiry-seconds", str(REQUEST_EXPIRY_S)],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=Runread(self.opts.runread, self.home).env, start_new_session=True)
        try:
            wait_for_port(port, proc, log)
        except Fatal:
            stop(proc)
            raise
        self.proxy.upstream = ("127.0.0.1", port)
        return proc, log

    def case_claude_requests_expiry(self) -> str:
        """A request nobody decides expires. A request waits 10 minutes by default; the owner's `serve
        --request-expiry-seconds N` shortens that, so this case asks a second `runread serve` (same home,
        N = REQUEST_EXPIRY_S) through the same pass-through. Its `expiresAt` is N s after it was filed
        (between the step's start and end, to the second); `wait_for_access` (timeout 50 s, longer than N)
        answers `expired` with no target; the read is refused `not_granted`; the owner's `runread requests
        --json` no longer lists it, and `runread requests approve ID` of it is refused (exits non-zero,
        no grant made)."""
        a = self.access_setup()
        reason = "The owner asked me to read what Codex just did in this project (undecided case)."
        server, log = self.expiring_server()
        try:
            request_id, d, before, after = self.request_codex(reason)
            expires = datetime.datetime.fromisoformat(d["expiresAt"].replace("Z", "+00:00")).timestamp()
            ensure(before + REQUEST_EXPIRY_S - 1 <= expires <= after + REQUEST_EXPIRY_S + 1,
                   f"expiresAt {d['expiresAt']} is not {REQUEST_EXPIRY_S} s after the request (filed between "
                   f"{datetime.datetime.fromtimestamp(before, datetime.UTC).isoformat()} and "
                   f"{datetime.datetime.fromtimestamp(after, datetime.UTC).isoformat()})")
            waited, read = self.access_step([("wait_for_access", {"requestId": request_id, "timeoutSeconds": 50}),
                                             ("read_final_answer", {"target": a["target"]})])
            ensure(server.poll() is None, f"the second runread serve exited {server.returncode}: {tail(log.read_bytes())}")
        finally:
            self.proxy.upstream = ("127.0.0.1", self.server_port)
            stop(server)
        w = waited["json"]
        ensure(not waited["is_error"] and w.get("requestId") == request_id and w.get("state") == "expired"
               and w.get("targets") == [], f"wait_for_access of a request left undecided gave {json.dumps(w)[:300]}")
        self.not_granted(read, "once its request expired")
        ensure(self.owner_request(request_id) is None, f"`runread requests --json` still lists {request_id} once expired")
        late = Runread(self.opts.runread, self.home).run("requests", "approve", request_id)
        ensure(late.returncode != 0, f"`runread requests approve` of the expired request exited 0: {tail(late.stdout, 300)}")
        ensure(not self.reader_grants(), f"{ASKING_READER} holds a grant after its request expired")
        self.proxy.take(settle=0)
        said = (late.stderr.strip().splitlines() or [""])[-1]
        return (f"`serve --request-expiry-seconds {REQUEST_EXPIRY_S}`: request {request_id} expires {d['expiresAt']}, "
                f"{REQUEST_EXPIRY_S} s after it was filed; wait_for_access (50 s) answered expired, no targets; "
                f"read_final_answer refused not_granted; no longer listed; a late `runread requests approve` "
                f"refused ({said!r}); no grant; {self.reason_in_no_log(reason, log)}")

    def case_claude_requests_approved(self) -> str:
        """Claude Code asks for the latest Codex run, waits, and the owner approves it with `runread requests
        approve ID` while the wait is on the wire: the wait answers `approved` with exactly that run's
        target (the features asked for, an expiry), the owner's grant list shows one grant of it to the
        reader, and the model's `read_final_answer` of that target in the same step gives the Codex run's
        answer exactly (its sha256). The reason never reaches serve.log in clear."""
        a = self.access_setup()
        reason = "The owner asked me to read what Codex just did in this project (approved case)."
        request_id, asked, _, _ = self.request_codex(reason)
        (waited, read), said = self.decided_while_waiting(request_id, reason, asked["expiresAt"], ["approve"])
        w = waited["json"]
        targets = w.get("targets") or []
        ensure(not waited["is_error"] and w.get("requestId") == request_id and w.get("state") == "approved"
               and len(targets) == 1 and targets[0].get("target") == a["target"]
               and targets[0].get("features") == ["final_answer", "status"] and isinstance(targets[0].get("expiresAt"), str),
               f"wait_for_access after the approval gave {json.dumps(w)[:400]} (want exactly {a['target']['runId']})")
        grants = self.reader_grants()
        ensure(len(grants) == 1 and grants[0].get("target") == a["target"] and grants[0].get("state") == "live"
               and grants[0].get("features") == ["final_answer", "status"],
               f"after the approval {ASKING_READER} holds {len(grants)} grants: {json.dumps(grants)[:400]}")
        d = read["json"]
        ensure(not read["is_error"] and d.get("state") == "available" and d.get("text") == REQUESTED_ANSWER
               and d.get("eof") is True and d.get("sha256") == hashlib.sha256(REQUESTED_ANSWER.encode()).hexdigest(),
               f"read_final_answer of the approved target gave {json.dumps(d, ensure_ascii=False)[:400]}")
        in_no_log = self.reason_in_no_log(reason, self.server_log)
        self.proxy.take(settle=0)
        return (f"request {request_id} pending; `runread requests --json` listed it with the one latest Codex run; "
                f"`runread requests approve` ({said!r}) while the wait was on the wire; wait_for_access answered "
                f"approved with exactly that target; one grant; read_final_answer gave the Codex run's answer "
                f"({len(REQUESTED_ANSWER.encode())} B, sha256 {d['sha256'][:12]}…, evidence {d.get('evidence')}); "
                f"{in_no_log}; {self.key_in_no_file(a['out'], a['key'])}")

    def codex_reader_step(self, out: Path, config: dict[str, Any], n: int,
                          calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """One `codex exec` step with `config` (the README's block, the same every time) whose scripted model
        runs its tool_search and calls each runread tool; what reached the model for each call."""
        responses: list[dict[str, Any]] = [{"tool_search": {"query": "runread granted targets final answer", "limit": 8}}]
        call_at: list[tuple[int, str]] = []
        for tool, args in calls:
            call_at.append((len(responses), tool))
            responses.append({"tool_calls": [{"namespace": CODEX_NAMESPACE, "name": tool, "arguments": args}]})
        responses.append({"text": DONE})
        (out / "llm-requests.jsonl").unlink(missing_ok=True)
        self.harness("codex", out, {"model": CODEX_MODEL, "responses": responses,
                                    "steps": [{"prompt": PROMPT, "timeout_s": STEP_TIMEOUT_S}], "config": config})
        reqs = self.requests(out)
        ensure(sorted(reqs) == list(range(len(responses))), f"step {n}: scripted model requests {sorted(reqs)}")
        seen = []
        for at, tool in call_at:
            outs = [i for i in reqs[at + 1].get("input", []) if isinstance(i, dict)
                    and i.get("type") == "function_call_output" and i.get("call_id") == f"call_mock_{at}_0"]
            ensure(len(outs) == 1, f"step {n}: request {at + 1} has {len(outs)} outputs for {tool}")
            output = outs[0].get("output")
            if isinstance(output, list):
                output = "".join(p.get("text", "") for p in output if isinstance(p, dict))
            ok, err = CODEX_OUTPUT_PREFIX.match(output or ""), CODEX_ERROR_PREFIX.match(output or "")
            ensure(ok or err, f"step {n}: {tool}'s output lacks Codex's 'Wall time: … Output:' prefix: {first(output)}")
            try:
                parsed = json.loads(output[(ok or err).end():])
            except ValueError:
                raise AssertionError(f"step {n}: {tool}'s output is not JSON after Codex's prefix: {first(output)}") from None
            seen.append({"tool": tool, "is_error": err is not None, "json": parsed})
        return seen

    def case_codex_reader_once(self) -> str:
        """Codex with one reader's key in the README's `codex-http` block, the same config for every
        step, then [`shares_one_by_one`], each read a `codex exec` step of its own."""
        key, reader_id = self.add_reader("codex-once")
        out = self.case_dir("codex-reader-once")
        self.key_in_env(out, key)
        text = substitute("codex-http", self.blocks["codex-http"], self.http_subs())
        config = toml_dotted(tomllib.loads(text))
        shared = self.shares_one_by_one(
            "codex-once", reader_id, lambda n, calls: self.codex_reader_step(out, config, n, calls))
        return f"one `codex-http` config; {shared}; {self.key_in_no_file(out, key)}"

    # ----------------------------------------------------------------- Codex

    def codex_scenario(self, config: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": CODEX_MODEL,
            "responses": [
                {"tool_search": {"query": "runread read final answer", "limit": 8}},
                {"tool_calls": [{"namespace": CODEX_NAMESPACE, "name": "read_final_answer",
                                 "arguments": {"target": self.target}}]},
                {"text": DONE},
            ],
            "steps": [{"prompt": PROMPT, "timeout_s": STEP_TIMEOUT_S}],
            "config": config,
            # the rmcp client logs the server's InitializeResult at INFO ("Service initialized as client")
            "env": {"RUST_LOG": "error,rmcp::service=info"},
        }

    @staticmethod
    def codex_negotiated(stderr: Path) -> str | None:
        m = None
        for line in ANSI.sub("", stderr.read_text(errors="replace")).splitlines():
            if "Service initialized as client" in line:
                m = re.search(r'protocol_version: ProtocolVersion\("([^"]+)"\)', line) or m
        return m.group(1) if m else None

    def case_codex(self, case: str, block: str, transport: str, extra: dict[str, Any]) -> str:
        out = self.case_dir(case)
        if transport == "HTTP":
            self.key_in_env(out, self.key)
        text = self.config(block)
        (out / "config-block.toml").write_text(text)
        config = toml_dotted(tomllib.loads(text))
        ensure(all(k.startswith("mcp_servers.runread.") for k in config), f"unexpected keys {sorted(config)}")
        config.update(extra)
        self.proxy.take(settle=0)
        manifest = self.harness("codex", out, self.codex_scenario(config))
        wire = self.wire(out, "read") if transport == "HTTP" else None
        if transport == "stdio":
            stray = self.proxy.take(settle=0)
            ensure(not stray, f"{len(stray)} HTTP connections during a stdio case")
        events = [json.loads(line) for line in (out / "events-0.jsonl").read_text().splitlines() if line.strip()]
        calls = [e["item"] for e in events if e.get("type") == "item.completed"
                 and (e.get("item") or {}).get("type") == "mcp_tool_call"]
        ensure(len(calls) == 1 and calls[0].get("server") == "runread" and calls[0].get("tool") == "read_final_answer"
               and calls[0].get("status") == "completed" and not calls[0].get("error"),
               f"mcp_tool_call items: {json.dumps(calls)[:500]}")
        reqs = self.requests(out)
        ensure(sorted(reqs) == [0, 1, 2], f"scripted model requests {sorted(reqs)} (want 0, 1, 2)")
        found = [i for i in reqs[1].get("input", []) if isinstance(i, dict) and i.get("type") == "tool_search_output"]
        ns = [t for i in found for t in i.get("tools", []) if t.get("name") == CODEX_NAMESPACE]
        ensure(ns and "read_final_answer" in [t.get("name") for t in ns[0].get("tools", [])],
               f"tool_search_output does not offer {CODEX_NAMESPACE}.read_final_answer: {json.dumps(found)[:400]}")
        outs = [i for i in reqs[2].get("input", []) if isinstance(i, dict) and i.get("type") == "function_call_output"
                and i.get("call_id") == "call_mock_1_0"]
        ensure(len(outs) == 1, f"request 2 has {len(outs)} function_call_output items for call_mock_1_0")
        output = outs[0].get("output")
        if isinstance(output, list):
            kinds = [p.get("type") for p in output]
            ensure(kinds == ["input_text"], f"function_call_output content items {kinds}")
            output = output[0]["text"]
        ensure(isinstance(output, str), f"function_call_output {type(output).__name__}")
        client_said = self.codex_negotiated(out / "stderr-0.txt")
        ensure(client_said is not None, "no 'Service initialized as client' line in stderr-0.txt")
        proto = self.protocol(wire, client_said)
        version = manifest.get("cli_version")
        self.observed.append((case, version, proto, transport))
        self.note(f"client: {version}; protocol: {proto}")
        self.note(f"model saw (first 200 chars of the function_call_output): {first(output)}")
        agent_msgs = [e["item"].get("text") for e in events if e.get("type") == "item.completed"
                      and (e.get("item") or {}).get("type") == "agent_message"]
        ensure(agent_msgs == [DONE], f"agent messages {agent_msgs}")
        m = CODEX_OUTPUT_PREFIX.match(output)
        ensure(m is not None, f"function_call_output does not start with Codex's 'Wall time: … Output:' prefix: {first(output)}")
        return (f"function_call_output: Codex's prefix {m.group(0)!r}, then {self.check_label(output[m.end():], wire)}; "
                f"{self.key_in_no_file(out, self.key)}")

    def case_codex_bearer(self) -> str:
        """The usual habit: Codex configured to send the key as a bearer token (`bearer_token_env_var`
        instead of the README's `env_http_headers`). runread refuses each request at its door with the
        fixed `authorization_header` code and message, which name the header and say where the key goes,
        and nothing of what was sent; Codex does not connect, so its model is offered no runread tool."""
        out = self.case_dir("codex-bearer")
        self.key_in_env(out, self.key)
        table = tomllib.loads(self.config("codex-http"))
        server = table["mcp_servers"]["runread"]
        ensure(server.pop("env_http_headers", None) is not None, "the codex-http block has no env_http_headers")
        server["bearer_token_env_var"] = KEY_ENV
        self.proxy.take(settle=0)
        manifest = self.harness("codex", out, {
            "model": CODEX_MODEL, "responses": [{"text": DONE}],
            "steps": [{"prompt": PROMPT, "timeout_s": STEP_TIMEOUT_S}], "config": toml_dotted(table),
            "env": {"RUST_LOG": "error"}})  # Codex logs why an MCP server did not start at ERROR
        conns = self.proxy.take()
        exchanges = [ex for c in conns for ex in c["exchanges"]]
        ensure(exchanges, "Codex made no request to runread")
        codes = []
        for ex in exchanges:
            req, resp = ex["request"], ex["response"]
            headers = dict(req["headers"])
            ensure(headers.get("authorization") == f"Bearer {self.key}" and "x-runread-key" not in headers,
                   f"{req['start']}: Authorization {'present' if 'authorization' in headers else 'absent'}, "
                   f"x-runread-key {'present' if 'x-runread-key' in headers else 'absent'}")
            ensure(resp is not None and resp["status"] == 400, f"{req['start']}: answered {resp and resp['status']}")
            err = (jsonrpc_of(resp) or {}).get("error") or {}
            ensure(err.get("message") == AUTHORIZATION_MESSAGE and (err.get("data") or {}).get("code") == AUTHORIZATION_CODE,
                   f"{req['start']}: refused with {json.dumps(err)[:300]}")
            ensure(self.key.encode() not in resp["body"] and b"Bearer" not in resp["body"],
                   "the refusal's body carries what was sent")
            codes.append(f"{req['start'].split(' ')[0]} -> {resp['status']} {AUTHORIZATION_CODE}")
        with open(out / "wire-refused.txt", "wb") as f:
            for n, c in enumerate(conns):
                f.write(b"===== connection %d: client -> runread\n" % n + c["raw_up"])
                f.write(b"\n===== connection %d: runread -> client\n" % n + c["raw_down"] + b"\n")
        reqs = self.requests(out)
        offered = [t.get("name") for r in reqs.values() for t in r.get("tools", []) if isinstance(t, dict)]
        ensure(not any(str(n).startswith(CODEX_NAMESPACE) for n in offered), f"the model was offered {offered}")
        said = [line for line in ANSI.sub("", (out / "stderr-0.txt").read_text(errors="replace")).splitlines()
                if "runread" in line and "PATH aliases" not in line]
        self.note(f"client: {manifest.get('cli_version')}; Codex said: {first(said[0] if said else '(nothing about runread)', 300)}")
        return (f"{len(exchanges)} requests, each with Authorization: Bearer <key> and no x-runread-key, each refused: "
                f"{', '.join(dict.fromkeys(codes))}, message {AUTHORIZATION_MESSAGE!r}; no runread tool offered to the "
                f"model; {self.key_in_no_file(out, self.key)}")

    # ----------------------------------------------------------------- Pi

    def pi_env(self, out: Path, key: str | None) -> dict[str, str]:
        """The environment pi-scenario.py gives Pi (it keeps the caller's and adds PI_CODING_AGENT_DIR =
        OUTDIR/agent), for the `pi mcp` commands run beside its steps: `pi` on PATH with its Node first,
        HOME in the case, RUNREAD_KEY holding the reader's key (the printed configs name ${RUNREAD_KEY}),
        PI_OFFLINE (no catalog refreshes or update checks), and HARNESS_WRAP naming a wrapper that adds
        ``-e builtin:mcp``: the harness starts Pi with --no-extensions, which also turns its MCP support
        off, and explicit ``-e`` extensions still load (cli.md). The harness leaves the event-stream flag
        to a wrapper, so the wrapper adds ``--mode json`` too."""
        bindir = out / "bin"
        for d in (bindir, out / "agent", out / "home"):
            d.mkdir(exist_ok=True)
        link = bindir / "pi"
        if not link.exists():
            link.symlink_to(self.pi_bin)
        wrap = bindir / "pi-with-mcp"
        wrap.write_text('#!/bin/sh\n# the harness runs: WRAP <pi> ARGS...\npi="$1"; shift\n'
                        'exec "$pi" -e builtin:mcp --mode json "$@"\n')
        wrap.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_WRAP", "RUNREAD_KEY")}
        path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        env["PATH"] = f"{bindir}:{self.pi_node}:{path}" if self.pi_node else f"{bindir}:{path}"
        env.update({"HOME": str(out / "home"), "PI_CODING_AGENT_DIR": str(out / "agent"), "PI_PACKAGE": PI_PACKAGE,
                    "PI_VERSION": PI_VERSION, "PI_OFFLINE": "1", "PI_TELEMETRY": "0",
                    # where the harness installed Pi (by default under HOME, which the case moves)
                    "RUNREAD_HARNESS_CACHE": str(self.pi_mod.CACHE),
                    "HARNESS_WRAP": json.dumps([str(wrap)])})
        if key is not None:
            env["RUNREAD_KEY"] = key
        return env

    def pi_mcp_list(self, out: Path, env: dict[str, str]) -> str:
        """`pi mcp list`: it connects to every enabled server; runread must be connected with its tools."""
        ls = subprocess.run(["pi", "mcp", "list"], cwd=out / "workspace", env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=90)
        (out / "mcp-list.out").write_text(ls.stdout + ls.stderr)
        lines = ls.stdout.splitlines()
        head = next((x for x in lines if x.startswith("runread:")), None)
        tools = next((x.strip() for x in lines if x.strip().startswith("tools:")), "")
        ensure(ls.returncode == 0 and head is not None and "connected" in head and "read_final_answer" in tools,
               f"`pi mcp list` exited {ls.returncode}: {tail(ls.stdout + ls.stderr, 600)}")
        return f"{head.strip()}; {tools[:160]}"

    def pi_step(self, out: Path, env: dict[str, str], n: int, calls: list[tuple[str, dict[str, Any]]],
                cont: bool) -> tuple[list[dict[str, Any]], list[str]]:
        """One harness run of Pi (its own scripted model server; `cont`: the step continues the session
        before it): the model calls each runread tool in turn, then answers. The requests its model got
        (llm-requests.jsonl, one Chat Completions body a line) and, for each call, the text of the tool
        message that carried the result to the model."""
        responses: list[dict[str, Any]] = [{"tool_calls": [{"name": PI_TOOL.format(tool), "arguments": args}]}
                                           for tool, args in calls]
        responses.append({"text": DONE})
        path = out.parent / f"{out.name}.scenario-{n}.json"
        path.write_text(json.dumps({"responses": responses, "steps": [
            {"prompt": PROMPT if not cont else "Go on reading the granted final answer.", "continue": cont,
             "timeout_s": STEP_TIMEOUT_S}]}, indent=1))
        log = out / "llm-requests.jsonl"
        log.unlink(missing_ok=True)
        r = subprocess.run([sys.executable, str(self.opts.harness / "pi-scenario.py"), str(path), str(out)], env=env,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=STEP_TIMEOUT_S + 120)
        (out / f"harness-{n}.out").write_text(r.stdout + r.stderr)
        events = out / "events-0.jsonl"
        kept = out / f"events-step{n}.jsonl"
        if events.exists():
            events.replace(kept)
        ensure(r.returncode == 0, f"pi-scenario.py exited {r.returncode}: {tail(r.stderr or r.stdout, 800)}")
        manifest = json.loads((out / "manifest.json").read_text())
        ensure(manifest["pi_version"] == PI_VERSION and manifest["steps"][0]["exit_code"] == 0,
               f"step {n}: Pi {manifest['pi_version']} exited {manifest['steps'][0]['exit_code']}: "
               f"{tail(kept.read_text(errors='replace') if kept.exists() else '', 800)}")
        reqs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        log.replace(out / f"llm-requests-step{n}.jsonl")
        ensure(len(reqs) == len(responses), f"step {n}: the scripted model got {len(reqs)} requests (want {len(responses)})")
        declared = [t.get("function", {}).get("name") for t in reqs[0].get("tools", [])]
        for tool, _ in calls:
            ensure(PI_TOOL.format(tool) in declared, f"step {n}: Pi did not declare {PI_TOOL.format(tool)} to its model: {declared}")
        seen = []
        for i, (tool, _) in enumerate(calls):
            # the result ends the next request (a continued session repeats the server's call ids, so
            # earlier steps' tool messages with the same id are further up)
            last = (reqs[i + 1].get("messages") or [{}])[-1]
            ensure(last.get("role") == "tool" and last.get("tool_call_id") == f"call_{i}_0",
                   f"step {n}: request {i + 1} does not end with the tool message of call_{i}_0 ({tool}): {json.dumps(last)[:300]}")
            content = last.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
            ensure(isinstance(content, str) and content, f"step {n}: {tool}'s tool message has no text: {json.dumps(last)[:300]}")
            seen.append(content)
        return reqs, seen

    @staticmethod
    def pi_block_json(content: str, tool: str, trust: str) -> str:
        """The JSON inside runread's text block as Pi's model got it: tag line, JSON, closing tag."""
        tag = f'<tool_result tool="{tool}" trust="{trust}">\n'
        ensure(content.startswith(tag) and content.endswith(PI_TAG_END),
               f"{tool}: what reached the model is not runread's labeled block: {first(content, 160)}")
        return content[len(tag):-len(PI_TAG_END)]

    def pi_read(self, out: Path, env: dict[str, str], wire_label: str) -> str:
        """Pi's model calls list_granted_targets, then read_final_answer with the target it listed, and
        follows nextCursor until eof: a cursor is runread's opaque, keyed value, which a scripted model
        can only echo once it has seen it, so each further chunk is a step of its own that continues the
        session (`pi --continue`), scripted with the cursor the previous step's model got. Checks each
        result the model got: runread's block (tag, then the label first), the first equal to the
        structuredContent recorded on the wire, the chunks together the granted answer."""
        self.proxy.take(settle=0)
        _, seen = self.pi_step(out, env, 0, [("list_granted_targets", {}), ("read_final_answer", {"target": self.target})],
                               cont=False)
        wire = self.wire(out, wire_label)
        listed = json.loads(self.pi_block_json(seen[0], "list_granted_targets", "untrusted"))
        targets = [t.get("target") for t in listed.get("targets", [])]
        ensure(self.target in targets, f"list_granted_targets gave {targets}")
        body = self.pi_block_json(seen[1], "read_final_answer", "untrusted")
        ensure(seen[1].startswith(PI_TAG + LABEL), f"the label is not first in the block: {first(seen[1], 160)}")
        label = self.check_label(body, wire)
        self.note(f"client on the wire: {wire['client']}; protocol: {wire['version']} ({wire['handshake']})")
        self.observed.append((self.case, str(wire["client"]), str(wire["version"]), "HTTP"))
        self.note(f"model saw (first 200 chars of the tool message): {first(seen[1])}")
        chunk = json.loads(body)
        got = chunk["text"].encode()
        sizes = [len(got)]
        n = 1
        while chunk.get("eof") is not True:
            ensure(n < 6 and isinstance(chunk.get("nextCursor"), str), f"chunk {n - 1}: eof {chunk.get('eof')!r}, no nextCursor")
            _, seen = self.pi_step(out, env, n, [("read_final_answer", {"target": self.target, "cursor": chunk["nextCursor"]})],
                                   cont=True)
            ensure(seen[0].startswith(PI_TAG + LABEL), f"chunk {n}: the label is not first: {first(seen[0], 160)}")
            chunk = json.loads(self.pi_block_json(seen[0], "read_final_answer", "untrusted"))
            ensure(chunk.get("byteOffset") == len(got) and chunk.get("sha256") == hashlib.sha256(self.answer).hexdigest(),
                   f"chunk {n}: byteOffset {chunk.get('byteOffset')}, sha256 {chunk.get('sha256')}")
            got += chunk["text"].encode()
            sizes.append(len(chunk["text"].encode()))
            n += 1
        ensure(got == self.answer, f"the {len(sizes)} chunks make {len(got)} bytes, not the {SAMPLE_BYTES}-byte answer")
        self.proxy.take(settle=0)
        return (f"list_granted_targets listed the target; read_final_answer until eof in {len(sizes)} chunks "
                f"({' + '.join(map(str, sizes))} = {SAMPLE_BYTES} bytes, the answer byte for byte); "
                f"chunk 0 as the model got it: runread's block, {label}")

    def pi_key_nowhere(self, out: Path, key: str) -> str:
        """The key is in no file of the case (Pi's agent dir, sessions, HOME, what its model was sent)
        but the test's own record of the wire, where Pi sent it in the header, ${RUNREAD_KEY} expanded."""
        wire = (out / "wire-read.txt").read_bytes()
        ensure(re.search(rb"(?im)^x-runread-key: " + re.escape(key.encode()) + rb"\r$", wire) is not None,
               "Pi's requests on the wire do not carry the key from RUNREAD_KEY in x-runread-key")
        files = [p for p in out.rglob("*") if p.is_file() and not p.is_symlink() and not p.name.startswith("wire-")]
        leaked = [str(p.relative_to(out)) for p in files if key.encode() in p.read_bytes()]
        ensure(not leaked, f"the key is written in {leaked}")
        cfg = json.loads((out / "agent" / "mcp.json").read_text())
        header = ((cfg.get("mcpServers") or {}).get("runread") or {}).get("headers", {}).get("x-runread-key")
        ensure(header == "${RUNREAD_KEY}", f"Pi's mcp.json holds x-runread-key {header!r}")
        return f"the key is in none of the {len(files)} files Pi and its model server wrote; mcp.json holds ${{RUNREAD_KEY}}"

    def case_pi_env_key(self) -> str:
        """Pi 1.x configured once with the `pi-command` block as printed (run with sh where Pi's agent
        dir is the harness's), `pi mcp list` (runread connected), then Pi's model reads the granted
        answer to its end; the key lives only in RUNREAD_KEY."""
        key, _ = self.add_reader("pi-env")
        rr = Runread(self.opts.runread, self.home)
        g = json.loads(rr.ok("grant", "--run", self.target["runId"], "--session", self.target["sessionId"], "--features",
                             "final_answer", "--expires", "30m", "--to", "pi-env", "--json"))
        ensure(g.get("target") == self.target, f"grant to pi-env: target {g.get('target')}")
        out = self.case_dir("pi-env-key")
        env = self.pi_env(out, key)
        command = self.config("pi-command")
        add = subprocess.run(["sh", "-c", command], cwd=out / "workspace", env=env, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=60)
        (out / "mcp-add.out").write_text(add.stdout + add.stderr)
        ensure(add.returncode == 0, f"`{command.strip()}` exited {add.returncode}: {tail(add.stdout + add.stderr, 600)}")
        self.note(f"`{command.strip()}` -> {add.stdout.strip().splitlines()[0] if add.stdout.strip() else '(no output)'}")
        self.proxy.take(settle=0)
        listed = self.pi_mcp_list(out, env)
        self.note(f"`pi mcp list`: {listed}")
        read = self.pi_read(out, env, "read")
        return f"{read}; {self.pi_key_nowhere(out, key)}"

    def case_pi_mcp_json(self) -> str:
        """The `pi-mcp-json` block written as Pi's mcp.json (in its agent dir), the key in RUNREAD_KEY."""
        key, _ = self.add_reader("pi-json")
        rr = Runread(self.opts.runread, self.home)
        rr.ok("grant", "--run", self.target["runId"], "--session", self.target["sessionId"], "--features",
              "final_answer", "--expires", "30m", "--to", "pi-json", "--json")
        out = self.case_dir("pi-mcp-json")
        env = self.pi_env(out, key)
        text = self.config("pi-mcp-json")
        json.loads(text)  # the documented block must be valid JSON as printed
        (out / "agent" / "mcp.json").write_text(text)
        self.proxy.take(settle=0)
        self.note(f"`pi mcp list`: {self.pi_mcp_list(out, env)}")
        read = self.pi_read(out, env, "read")
        return f"{read}; {self.pi_key_nowhere(out, key)}"

    # ----------------------------------------------------------------- main
    # ----------------------------------------------------------------- Gemini CLI, Copilot CLI and OpenCode runs read

    def gemini_copilot_runs(self, case: str, reader: str) -> list[tuple[str, dict[str, Any], str]]:
        """Three runs shared with `reader`: the real Gemini CLI under `runread run --share READER:final_answer:1h
        --label …` (the harness's HARNESS_WRAP), the real Copilot CLI's own session files (no runread
        while it ran) ingested passively (`runread ingest --copilot`) and granted with `grant --run … --to
        READER`, and the same with the real OpenCode's database (`opencode_run`). Each: (agent, target, the
        scripted answer)."""
        rr = Runread(self.opts.runread, self.home)
        base = self.tmp / "cases" / f"{case}-runs"
        base.mkdir(parents=True)
        label = f"{case}: the gemini report"
        before = {json.dumps(x["target"], sort_keys=True) for x in json.loads(rr.ok("runs", "--json"))}
        gem_out = base / "gemini"
        wrap = [str(self.opts.runread), "--home", str(self.home), "run", "--workspace", str(gem_out / "workspace"),
                "--share", f"{reader}:final_answer:1h", "--label", label, "--"]
        scenario = base / "gemini.scenario.json"
        scenario.write_text(json.dumps({"responses": [{"text": GEMINI_ANSWER, "chunks": 3}],
                                        "steps": [{"prompt": "Write the report.", "timeout_s": STEP_TIMEOUT_S}]}))
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_WRAP"}
        env.update(HARNESS_WRAP=json.dumps(wrap), GEMINI_CLI_VERSION=GEMINI_CLI_VERSION)
        r = subprocess.run([sys.executable, str(self.opts.harness / "gemini-scenario.py"), str(scenario), str(gem_out)],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=STEP_TIMEOUT_S + 120)
        (base / "gemini.out").write_text(r.stdout + r.stderr)
        ensure(r.returncode == 0, f"gemini-scenario.py under runread run exited {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        gm = json.loads((gem_out / "manifest.json").read_text())
        ensure(GEMINI_CLI_VERSION in str(gm.get("cli_version")) and gm["steps"][0]["exit_code"] == 0,
               f"Gemini CLI {gm.get('cli_version')!r}, exit {gm['steps'][0]['exit_code']}")
        cop_out = base / "copilot"
        scenario = base / "copilot.scenario.json"
        scenario.write_text(json.dumps({"responses": [{"text": COPILOT_ANSWER, "chunks": 3}],
                                        "steps": [{"prompt": "Write the report.", "timeout_s": STEP_TIMEOUT_S}]}))
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_WRAP"}
        env["COPILOT_VERSION"] = COPILOT_VERSION
        r = subprocess.run([sys.executable, str(self.opts.harness / "copilot-scenario.py"), str(scenario), str(cop_out)],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=STEP_TIMEOUT_S + 120)
        (base / "copilot.out").write_text(r.stdout + r.stderr)
        ensure(r.returncode == 0, f"copilot-scenario.py exited {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        cm = json.loads((cop_out / "manifest.json").read_text())
        ensure(COPILOT_VERSION in str(cm.get("cli_version")) and cm["steps"][0]["exit_code"] == 0,
               f"Copilot CLI {cm.get('cli_version')!r}, exit {cm['steps'][0]['exit_code']}")
        time.sleep(2.5)  # runread's settle window
        for args in (("workspace", "add", str(cop_out / "workspace")),
                     ("ingest", "--copilot", str(cop_out / "copilot" / "session-state"))):
            r2 = rr.run(*args)
            ensure(r2.returncode == 0, f"runread {' '.join(args)} exited {r2.returncode}: {tail(r2.stderr, 400)}")
        runs = json.loads(rr.ok("runs", "--json"))
        gem = [x for x in runs if x.get("agent") == "gemini" and json.dumps(x["target"], sort_keys=True) not in before]
        cop = [x for x in runs if x.get("agent") == "copilot" and x["target"]["sessionId"] == cm["steps"][0]["session_id"]]
        ensure(len(gem) == 1 and gem[0].get("answerState") == "available",
               f"the supervised Gemini run: {tail(json.dumps(gem), 400)}")
        ensure(len(cop) == 1 and cop[0].get("answerState") == "available"
               and cop[0].get("finalBytes") == len(COPILOT_ANSWER.encode()),
               f"the passive Copilot run: {tail(json.dumps(cop), 400)}")
        g = json.loads(rr.ok("grant", "--run", cop[0]["target"]["runId"], "--session", cop[0]["target"]["sessionId"],
                             "--features", "final_answer", "--expires", "30m", "--to", reader, "--json"))
        ensure(g.get("target") == cop[0]["target"] and "key" not in g, f"grant to {reader}: {g.get('target')}")
        oc = self.opencode_run(base, rr, reader)
        self.note(f"Gemini CLI {GEMINI_CLI_VERSION} under runread run --share (run {gem[0]['target']['runId']}); "
                  f"Copilot CLI {COPILOT_VERSION} ingested passively (run {cop[0]['target']['runId']}), granted; "
                  f"OpenCode {OPENCODE_VERSION}'s database ingested passively (run {oc['runId']}), granted")
        self.gemini_label = label
        return [("gemini", gem[0]["target"], GEMINI_ANSWER), ("copilot", cop[0]["target"], COPILOT_ANSWER),
                ("opencode", oc, OPENCODE_ANSWER)]

    def opencode_run(self, base: Path, rr: Runread, reader: str) -> dict[str, Any]:
        """The real OpenCode alone (its own data directory, no runread while it ran), its database ingested
        passively (`runread ingest --opencode DIR`: the directory holding opencode.db, its -wal beside it) and
        the run granted with `grant --run … --to READER`. The run's target."""
        out = base / "opencode"
        scenario = base / "opencode.scenario.json"
        scenario.write_text(json.dumps({"responses": [{"text": OPENCODE_ANSWER, "chunks": 3}],
                                        "steps": [{"prompt": "Write the report.", "timeout_s": STEP_TIMEOUT_S}]}))
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_WRAP"}
        env["OPENCODE_VERSION"] = OPENCODE_VERSION
        r = subprocess.run([sys.executable, str(self.opts.harness / "opencode-scenario.py"), str(scenario), str(out)],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=STEP_TIMEOUT_S + 120)
        (base / "opencode.out").write_text(r.stdout + r.stderr)
        ensure(r.returncode == 0, f"opencode-scenario.py exited {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        m = json.loads((out / "manifest.json").read_text())
        ensure(OPENCODE_VERSION in str(m.get("cli_version")) and m["steps"][0]["exit_code"] == 0,
               f"OpenCode {m.get('cli_version')!r}, exit {m['steps'][0]['exit_code']}")
        time.sleep(2.5)  # runread's settle window
        for args in (("workspace", "add", str(out / "workspace")), ("ingest", "--opencode", m["data_dir"])):
            r2 = rr.run(*args)
            ensure(r2.returncode == 0, f"runread {' '.join(args)} exited {r2.returncode}: {tail(r2.stderr, 400)}")
        runs = json.loads(rr.ok("runs", "--json"))
        oc = [x for x in runs if x.get("agent") == "opencode" and x["target"]["sessionId"] == m["steps"][0]["session_id"]]
        ensure(len(oc) == 1 and oc[0].get("answerState") == "available"
               and oc[0].get("finalBytes") == len(OPENCODE_ANSWER.encode()),
               f"the passive OpenCode run: {tail(json.dumps(oc), 400)}")
        g = json.loads(rr.ok("grant", "--run", oc[0]["target"]["runId"], "--session", oc[0]["target"]["sessionId"],
                             "--features", "final_answer", "--expires", "30m", "--to", reader, "--json"))
        ensure(g.get("target") == oc[0]["target"] and "key" not in g, f"grant to {reader}: {g.get('target')}")
        return oc[0]["target"]

    def reads_gemini_copilot(self, runs: list[tuple[str, dict[str, Any], str]],
                             step: Callable[[int, list[tuple[str, dict[str, Any]]]], list[dict[str, Any]]]) -> str:
        """One reader step: list_granted_targets names every run; read_final_answer of each is exactly the answer
        (a passive run's evidence the session file's)."""
        listed, *reads = step(0, [("list_granted_targets", {})] + [("read_final_answer", {"target": t}) for _, t, _ in runs])
        targets = [t.get("target") for t in listed["json"].get("targets", [])]
        ensure(not listed["is_error"] and len(targets) == len(runs) and all(t in targets for _, t, _ in runs),
               f"list_granted_targets: {json.dumps(listed['json'])[:400]}")
        labels = [t.get("label") for t in listed["json"].get("targets", []) if t.get("target") == runs[0][1]]
        ensure(labels == [self.gemini_label], f"the Gemini run's label in the listing: {labels}")
        shown = []
        for (agent, _, answer), read in zip(runs, reads):
            d = read["json"]
            ensure(not read["is_error"] and d.get("state") == "available" and d.get("text") == answer
                   and d.get("eof") is True and d.get("sha256") == hashlib.sha256(answer.encode()).hexdigest()
                   and d.get("evidence") == ("supervised" if agent == "gemini" else "session_file"),
                   f"{agent}: read_final_answer gave {json.dumps(d, ensure_ascii=False)[:400]}")
            shown.append(f"{agent}: {len(answer.encode())} B exactly, evidence {d.get('evidence')}")
        self.proxy.take(settle=0)
        return f"list_granted_targets named all {len(runs)}; " + "; ".join(shown)

    def case_claude_reads_gemini_copilot(self) -> str:
        """Claude Code configured once (`claude mcp add-json`) with a reader's key reads a supervised Gemini
        CLI run, a passive Copilot CLI run and a passive OpenCode run through list_granted_targets and
        read_final_answer."""
        key, _ = self.add_reader("claude-of-gemini-copilot")
        out = self.claude_configured_once("claude-reads-gemini-copilot-opencode", key)
        runs = self.gemini_copilot_runs("claude-reads-gemini-copilot-opencode", "claude-of-gemini-copilot")
        read = self.reads_gemini_copilot(runs, lambda n, calls: self.reader_step(out, n, calls))
        return f"Claude Code {CLAUDE_VERSION}: {read}; {self.key_in_no_file(out, key)}"

    def case_codex_reads_gemini_copilot(self) -> str:
        """The same with Codex and the README's `codex-http` block."""
        key, _ = self.add_reader("codex-of-gemini-copilot")
        out = self.case_dir("codex-reads-gemini-copilot-opencode")
        self.key_in_env(out, key)
        config = toml_dotted(tomllib.loads(substitute("codex-http", self.blocks["codex-http"], self.http_subs())))
        runs = self.gemini_copilot_runs("codex-reads-gemini-copilot-opencode", "codex-of-gemini-copilot")
        read = self.reads_gemini_copilot(runs, lambda n, calls: self.codex_reader_step(out, config, n, calls))
        return f"Codex {CODEX_VERSION}: {read}; {self.key_in_no_file(out, key)}"


    def run(self) -> None:
        self.setup()
        cases: list[tuple[str, Callable[[], str]]] = [
            ("claude-http", lambda: self.case_claude_mcp_config("claude-http", "mcp-servers-http", "HTTP")),
            ("claude-stdio", lambda: self.case_claude_mcp_config("claude-stdio", "mcp-servers-stdio", "stdio")),
            ("claude-project-http", lambda: self.case_claude_mcp_config("claude-project-http", "mcp-servers-http", "HTTP",
                                                                        project=True)),
            ("claude-mcp-add-http", lambda: self.case_claude_mcp_add("claude-mcp-add-http", "claude-http-command", "HTTP")),
            ("claude-mcp-add-stdio", lambda: self.case_claude_mcp_add("claude-mcp-add-stdio", "claude-stdio-command", "stdio")),
            ("claude-reader-once", self.case_claude_reader_once),
            ("codex-reader-once", self.case_codex_reader_once),
            ("codex-http", lambda: self.case_codex("codex-http", "codex-http", "HTTP", {})),
            ("codex-http-2026", lambda: self.case_codex("codex-http-2026", "codex-http", "HTTP",
                                                        {"features.mcp_2026_07_28": True})),
            ("codex-stdio", lambda: self.case_codex("codex-stdio", "codex-stdio", "stdio", {})),
            ("codex-bearer", self.case_codex_bearer),
            ("claude-waits-on-codex", self.case_claude_waits_on_codex),
            ("pi-env-key", self.case_pi_env_key),
            ("pi-mcp-json", self.case_pi_mcp_json),
            ("claude-first-waits-by-label", self.case_claude_first_waits_by_label),
            ("claude-waits-on-pi-by-label", self.case_claude_waits_on_pi_by_label),
            ("claude-reads-gemini-copilot-opencode", self.case_claude_reads_gemini_copilot),
            ("codex-reads-gemini-copilot-opencode", self.case_codex_reads_gemini_copilot),
            # in this order: a run approved stays granted, so the denial and the undecided request come first
            ("claude-requests-denied", self.case_claude_requests_denied),
            ("claude-requests-expiry", self.case_claude_requests_expiry),
            ("claude-requests-approved", self.case_claude_requests_approved),
        ]
        for name, fn in cases:
            if self.opts.case and name not in self.opts.case:
                continue
            if self.server.poll() is not None:
                raise Fatal(f"runread serve exited {self.server.returncode} before {name}: {tail(self.server_log.read_bytes())}")
            t0 = time.monotonic()
            self.notes, self.case = [], name
            ok = self.res.check(name, fn)
            for line in self.notes:
                print(f"    {line}", flush=True)
            print(f"    ({time.monotonic() - t0:.1f}s)", flush=True)
            if not ok:
                print(f"    artifacts: {self.tmp / 'cases' / name}", flush=True)
        def alive() -> str:
            ensure(self.server.poll() is None, f"runread serve exited {self.server.returncode}")
            return "after every case"

        self.res.check("runread serve still running", alive)
        if self.observed:
            print("observed (client, version, transport, protocol):", flush=True)
            for case, version, proto, transport in self.observed:
                print(f"  {case}: {version}, {transport}, {proto.split(' ')[0]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runread", required=True, type=Path, help="the runread binary to test")
    p.add_argument("--harness", type=Path,
                   default=Path(os.environ.get("RUNREAD_HARNESS_DIR") or REPO / "tests" / "agents" / "harness"),
                   help="the agent harness ($RUNREAD_HARNESS_DIR; default tests/agents/harness, "
                        "this repository's copy of the agents' test harness)")
    p.add_argument("--case", action="append", help="run only this case (repeatable; for debugging)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (cases, serve.log)")
    opts = p.parse_args(argv)
    opts.runread = opts.runread.resolve()
    opts.harness = opts.harness.resolve()

    res = Results()
    started = time.monotonic()
    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="runread-agents-")))
    readers = Readers(opts, tmp, res)

    def on_sigterm(*_: Any) -> None:
        readers.cleanup()
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if not (opts.runread.is_file() and os.access(opts.runread, os.X_OK)):
            raise Fatal(f"--runread {opts.runread} is not an executable file")
        readers.run()
    except Fatal as e:
        res.record("setup", False, str(e))
    except (AssertionError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        res.record("unexpected error", False, f"{type(e).__name__}: {e}")
    except (KeyboardInterrupt, SystemExit) as e:
        res.record("interrupted", False, type(e).__name__)
    finally:
        readers.cleanup()
        if res.failed and readers.server_log is not None and readers.server_log.exists():
            print(f"--- runread serve log (tail) ---\n{tail(readers.server_log.read_bytes(), 3000)}\n---", flush=True)
        if opts.keep or (res.failed and any(tmp.iterdir())):
            print(f"temp dir kept: {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"({time.monotonic() - started:.1f}s)", flush=True)
    print(f"agents: {res.passed} passed, {res.failed} failed", flush=True)
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
