#!/usr/bin/env python3
"""End-to-end test of runread against two outside MCP clients, in both protocol eras.

    python3 tests/clients/outside_clients.py --runread target/debug/runread

Both clients run in the modern era (2026-07-28: the SDK's ``--mode auto``/``pinned``, the Inspector's
``--protocol-era modern``) and in the dated era (the ``initialize`` handshake, 2025-11-25: the SDK's
``--mode legacy``, i.e. ``Client(mode="legacy")``, and ``--protocol-era legacy``); every negotiated
version is checked and listed at the end. Every tool result's ``structuredContent`` must begin with
the label ``trust``, ``instructions``, ``tool`` in the order received (on the HTTP wire for the SDK
readers, as printed by the Inspector).

1. Installs (once, into $RUNREAD_CLIENTS_CACHE, default ~/.cache/runread-clients) a venv
   with tests/clients/requirements.txt (the official Python SDK, mcp==2.3.0) and an npm
   prefix with node (npm package ``node``, pinned) and @modelcontextprotocol/inspector.
   Later runs reuse the cache after checking the installed versions; nothing here needs
   the network once the cache is filled.
2. Builds a throwaway runread home + workspace, registers the two known secrets
   (``runread secret add``), places the ``sample``, ``multi-run`` and ``secrets-history`` Pi
   fixtures (only the header line's ``cwd`` changed), registers, ingests, grants one run of
   sample and multi-run to its own key, each secrets-history run to a ``history`` key and its
   run 1 to an all-features key, and starts ``runread serve`` on a free loopback port.
3. Python SDK: read_final_answer.py in ``--mode auto`` and ``--mode pinned`` with the
   server's default limit and 4, 1000, 8192, and in ``--mode legacy`` (LEGACY_LIMITS), for both
   keys; the answer must equal the one computed here from the fixture file with plain json. A
   key that was never granted and a revoked key must fail without leaking any answer text (all
   three modes). ``runread read final-answer --out``.
4. MCP Inspector CLI, ``--protocol-era modern`` and ``legacy``: ``--method initialize`` (the
   negotiated version), tools/list, list_granted_targets, read_final_answer followed cursor by
   cursor (limit 4096) and reassembled here, a cross-key refusal and a bad key.
4b. stdio (``runread serve --stdio --key-file F``, launched by the client): stdio_read_final_answer.py
   (three keys, and three more reads in legacy mode: exact tools/list, whole answer vs the fixture),
   the Inspector in both eras (initialize, tools/list, list_granted_targets, one read_final_answer
   chunk), a never-granted key, and a dedicated key (one per era) revoked in the middle of a
   session, then at a fresh start; no stdio server left running.
5. secrets-history: read_history.py at limits 1, 2, 3, 7, 100 for both runs, checked against
   the session file read here (masking at the secrets' positions, no thinking or tool arguments,
   no secret prefix at a text end); tools/list per grant; an 8 MiB artifact registered, refused
   paths, and read back with read_artifact.py and ``runread read artifact``; read_work_state,
   read_target_metadata, get_run (granted and not), list_artifacts, the masked final answer. In
   the dated era: read_history.py (limits 2, 100: the same events), read_artifact.py, tools/list,
   and the state calls (equal to 2026-07-28's), through the SDK and the Inspector.
6. Supervised: the real Pi (0.73.1, installed by the harness) runs under ``runread run`` against the
   scripted model server (fixtures/pi/tools/mockllm.py); its run is read with the Python SDK:
   ``evidence: supervised``, ``foregroundFinalConfirmed: true``, the agent's exact bytes and sha256,
   and the supervisor's work state.
7. docs/clients.md: every command line of "Connecting an MCP client"'s block of exact commands ran here
   as written (key, port and paths substituted) and exited 0; the install line is ensure_venv's.

Prints one ``PASS``/``FAIL`` line per check and ends with
``outside_clients: N passed, M failed``; exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = REPO / "fixtures" / "pi"
READER = HERE / "read_final_answer.py"
STDIO_READER = HERE / "stdio_read_final_answer.py"
HISTORY_READER = HERE / "read_history.py"
ARTIFACT_READER = HERE / "read_artifact.py"
REQUIREMENTS = HERE / "requirements.txt"
# Where the exact outside-client commands are printed (docs/clients.md, "Connecting an MCP client").
CLIENTS_DOC = REPO / "docs" / "clients.md"

NODE_VERSION = "22.23.3"  # npm package `node` (a 22.x >= 22.19, the Inspector's engines floor)
INSPECTOR_VERSION = "2.12.0"
INSPECTOR_PKG = "@modelcontextprotocol/inspector"
INSPECTOR_ENTRY = Path("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")

SAMPLE_BYTES = 9554  # the sample fixture's long code-review answer
SDK_LIMITS: list[int | None] = [None, 4, 1000, 8192]
# The dated era (--mode legacy): every limit for the 935-byte multi-run answer, and all but 4 for
# the sample (its 2,400 calls at limit 4 already run twice, in auto and pinned).
LEGACY_LIMITS = {"sample": [None, 1000, 8192], "multi-run": [None, 4, 1000, 8192]}
# The protocol version each client mode must negotiate with runread: mcp 2.3.0 Client(mode="legacy")
# and the Inspector's --protocol-era legacy offer 2025-11-25 in `initialize`, which runread serves.
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
SDK_VERSION = {"auto": MODERN, "pinned": MODERN, "legacy": LEGACY}
ERA_VERSION = {"modern": MODERN, "legacy": LEGACY}
INSPECTOR_LIMIT = 4096
KEY_RE = re.compile(r"^[0-9a-f]{64}$")
BLOCK_SUFFIX = "\n</tool_result>"

# secrets-history (fixtures/pi/README.md): known secrets, what history must never show, and how it masks.
SECRETS = {"openai-test": "sk-runread-TEST-0123456789abcdef", "github-test": "ghp_RUNREADtestTOKEN000000000000"}
REDACTED = "[redacted]"
THINKING_MARK = "The user wants a configuration check"
TOOL_ARG_MARK = "cat config/settings.env"
HISTORY_LIMITS = [1, 2, 3, 7, 100]
LEGACY_HISTORY_LIMITS = [2, 100]
# what the scripted model answers in the supervised run (multi-byte UTF-8 across 16-byte chunks)
SUPERVISED_ANSWER = "Here: one file, notes.md — naïve résumé ✓ 日本語 🦀 (supervised)."
ALL_FEATURES = "final_answer,history,aggregate,metadata,artifacts,status"
# `runread artifact add` refuses a path any component of which contains auth/credential/secret/token,
# so the secrets-history session's cwd (where the artifact is made) gets a neutral name.
CWD_NAMES = {"secrets-history": "history-run"}
SH_DIR = CWD_NAMES["secrets-history"]
HISTORY_EVENT_MAX_BYTES = 8192  # runread_core::limits::HISTORY_EVENT_MAX_BYTES
ARTIFACT_BYTES = 8 * 1024 * 1024
ARTIFACT_CHUNK = 32768  # read_artifact's default (and largest) limit
ALL_TOOLS = sorted([
    "list_granted_targets", "read_final_answer", "get_run", "wait_for_run", "read_history", "read_work_state",
    "read_target_metadata", "list_artifacts", "read_artifact", "request_access", "wait_for_access",
])
# the tools that name no run: a grant's target never lists them
NO_RUN_TOOLS = ("list_granted_targets", "request_access", "wait_for_access")
# the label of each tool's text block (runread: the lowest trust of any field a tool's output can carry;
# anything an agent wrote, the ids it chose included, is untrusted, runread's own projections medium)
TRUST_LABEL = {
    "read_final_answer": "untrusted", "read_history": "untrusted", "read_artifact": "untrusted",
    "list_granted_targets": "untrusted", "list_artifacts": "untrusted", "get_run": "medium",
    "wait_for_run": "medium", "read_work_state": "medium", "read_target_metadata": "untrusted",
    "request_access": "medium", "wait_for_access": "medium",
}
# runread's label: every structuredContent begins with these keys, in this order (then the tool's fields)
LABEL_KEYS = ["trust", "instructions", "tool"]
# get_run of a run the key may not see (another key's, or missing): exactly this, in this order
GET_RUN_ABSENT = {"trust": "untrusted_data", "instructions": False, "tool": "get_run", "found": False}

# CLIENTS_DOC: the code block after this sentence holds the exact commands this test runs
# (readme_token below says what each placeholder stands for).
README_COMMANDS_INTRO = "These are the exact commands used to check outside clients"
README_URL = "http://127.0.0.1:7077/mcp"
NPX_INSPECTOR = ["npx", "-y", "-p", "node@22", "-p", f"{INSPECTOR_PKG}@{INSPECTOR_VERSION}", "--", "mcp-inspector"]
README_OUTPUTS = {"answer.txt", "history.json", "build.bin"}  # stand for output files in the temp dir
# every (client, transport, mode) whose negotiated protocol version this test records
NEGOTIATED = [f"Python SDK, {t}, --mode {m}" for t in ("HTTP", "stdio") for m in ("auto", "pinned", "legacy")] + [
    f"MCP Inspector CLI, {t}, --protocol-era {e}" for t in ("HTTP", "stdio") for e in ("modern", "legacy")]


class Fatal(Exception):
    """A setup step failed; the remaining checks cannot run."""


class Results:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def record(self, name: str, ok: bool, detail: str = "") -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        line = f"{'PASS' if ok else 'FAIL'} {name}"
        if detail:
            line += f": {detail}"
        print(line, flush=True)
        return ok

    def check(self, name: str, fn: Callable[[], str | None]) -> bool:
        """Run fn; a return value is the PASS detail, any exception is a FAIL."""
        try:
            detail = fn() or ""
        except Exception as e:  # noqa: BLE001 - every failure becomes a FAIL line
            return self.record(name, False, f"{type(e).__name__}: {e}" if not isinstance(e, AssertionError) else str(e))
        return self.record(name, True, detail)


def ensure(cond: Any, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


def tail(text: str | bytes, n: int = 1500) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = text.strip()
    return text if len(text) <= n else "…" + text[-n:]


# --------------------------------------------------------------------------- tools


@contextlib.contextmanager
def cache_lock(cache: Path):
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def pinned_requirements() -> dict[str, str]:
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            if not sep:
                raise Fatal(f"requirements.txt line {line!r} is not pinned with ==")
            pins[name.strip()] = version.strip()
    return pins


def venv_ok(py: Path, pins: dict[str, str]) -> bool:
    if not py.exists():
        return False
    probe = (
        "import importlib.metadata as m, json, sys\n"
        "import mcp, httpx2\n"
        "print(json.dumps({n: m.version(n) for n in json.loads(sys.argv[1])}))\n"
    )
    r = subprocess.run([str(py), "-c", probe, json.dumps(list(pins))], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return False
    try:
        return json.loads(r.stdout) == pins
    except ValueError:
        return False


def venv_install_commands(venv: Path) -> list[list[str]]:
    """README.md's `python3 -m venv .venv && .venv/bin/pip install -r tests/clients/requirements.txt`,
    with this python3 and the cache's venv."""
    return [[sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin" / "pip"), "install", "-r", str(REQUIREMENTS)]]


def readme_commands() -> list[str]:
    """The command lines of docs/clients.md's block of exact outside-client commands (backslash
    continuations joined, comments and blank lines dropped)."""
    text = CLIENTS_DOC.read_text(encoding="utf-8")
    i = text.find(README_COMMANDS_INTRO)
    start = text.find("```sh\n", i)
    end = text.find("\n```", start + 1)
    if i < 0 or start < 0 or end < 0:
        raise Fatal(f"docs/clients.md has no ```sh block after {README_COMMANDS_INTRO!r}")
    lines, cur = [], ""
    for raw in text[start + len("```sh\n") : end].splitlines():
        line = raw.strip()
        if not cur and (not line or line.startswith("#")):
            continue
        cur += line
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip() + " "
            continue
        lines.append(cur.strip())
        cur = ""
    if cur:
        lines.append(cur.strip())
    return lines


def ensure_venv(cache: Path) -> tuple[Path, str]:
    venv = cache / "venv"
    py = venv / "bin" / "python"
    pins = pinned_requirements()
    desc = " ".join(f"{n}=={v}" for n, v in pins.items())
    if venv_ok(py, pins):
        return py, f"{desc} (cached in {venv})"
    t0 = time.monotonic()
    log = cache / "pip-install.log"
    shutil.rmtree(venv, ignore_errors=True)
    with open(log, "wb") as out:
        for cmd in venv_install_commands(venv):  # README.md's `python3 -m venv .venv && .venv/bin/pip install -r …`
            r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=900)
            if r.returncode != 0:
                break
    if r.returncode != 0:
        raise Fatal(f"venv/pip install failed (rc {r.returncode}); log {log}:\n{tail(log.read_bytes())}")
    if not venv_ok(py, pins):
        raise Fatal(f"venv at {venv} still does not have {desc} after pip install; log {log}")
    return py, f"{desc} (installed into {venv} in {time.monotonic() - t0:.0f}s)"


def npm_versions(prefix: Path) -> tuple[str | None, str | None]:
    node = prefix / "node_modules" / ".bin" / "node"
    node_v = insp_v = None
    if node.exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            r = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30)
            if r.returncode == 0:
                node_v = r.stdout.strip().lstrip("v")
    pkg = prefix / "node_modules" / INSPECTOR_PKG / "package.json"
    with contextlib.suppress(OSError, ValueError):
        insp_v = json.loads(pkg.read_text()).get("version")
    if not (prefix / INSPECTOR_ENTRY).exists():
        insp_v = None
    return node_v, insp_v


def ensure_npm(cache: Path) -> tuple[Path, Path, str]:
    prefix = cache / "npm"
    want = (NODE_VERSION, INSPECTOR_VERSION)
    node = prefix / "node_modules" / ".bin" / "node"
    entry = prefix / INSPECTOR_ENTRY
    desc = f"node {NODE_VERSION} + {INSPECTOR_PKG}@{INSPECTOR_VERSION}"
    if npm_versions(prefix) == want:
        return node, entry, f"{desc} (cached in {prefix})"
    npm = shutil.which("npm")
    if npm is None:
        raise Fatal("npm is not on PATH; it is needed once to fill the client cache")
    prefix.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log = cache / "npm-install.log"
    with open(log, "wb") as out:
        r = subprocess.run(
            [
                npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--save-exact",
                f"node@{NODE_VERSION}", f"{INSPECTOR_PKG}@{INSPECTOR_VERSION}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=900,
        )
    if r.returncode != 0:
        raise Fatal(f"npm install failed (rc {r.returncode}); log {log}:\n{tail(log.read_bytes())}")
    got = npm_versions(prefix)
    if got != want:
        raise Fatal(f"after npm install {prefix} has node {got[0]}, inspector {got[1]}; want {want}; log {log}")
    return node, entry, f"{desc} (installed into {prefix} in {time.monotonic() - t0:.0f}s)"


# --------------------------------------------------------------------------- fixtures


def fixture_session(name: str) -> Path:
    files = sorted((FIXTURES / name / "sessions").glob("*.jsonl"))
    if len(files) != 1:
        raise Fatal(f"expected one session file in fixtures/pi/{name}/sessions, found {len(files)}")
    return files[0]


def final_answers(path: Path) -> dict[str, str | None]:
    """Independent oracle: per run (keyed by the id of its user message), the text blocks of the
    last assistant message with stopReason "stop" and no toolCall, joined with "\\n"."""
    runs: dict[str, str | None] = {}
    current = None
    for raw in path.read_bytes().splitlines():
        entry = json.loads(raw)
        if entry.get("type") != "message":
            continue
        msg = entry["message"]
        blocks = msg.get("content") if isinstance(msg.get("content"), list) else []
        if msg.get("role") == "user":
            current = entry["id"]
            runs[current] = None
        elif (
            current is not None
            and msg.get("role") == "assistant"
            and msg.get("stopReason") == "stop"
            and not any(b.get("type") == "toolCall" for b in blocks)
        ):
            runs[current] = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
    return runs


def message_text(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def history_oracle(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Independent oracle for read_history: per run (keyed by the id of its user message), the
    messages of the active branch (from the last entry back through parentId), in order, with
    role, toolName, toolCalls (names), the text (text blocks joined with "\n") and ``hidden``: what
    must never be shown (thinking blocks, tool-call commands)."""
    entries = [json.loads(raw) for raw in path.read_bytes().splitlines()[1:] if raw.strip()]
    by_id = {e["id"]: e for e in entries if "id" in e}
    branch: list[dict[str, Any]] = []
    cur = entries[-1].get("id")
    while cur is not None:
        branch.append(by_id[cur])
        cur = by_id[cur].get("parentId")
    branch.reverse()
    runs: dict[str, list[dict[str, Any]]] = {}
    current = None
    for e in branch:
        if e.get("type") != "message":
            continue
        msg = e["message"]
        blocks = [b for b in msg.get("content") or [] if isinstance(b, dict)] if isinstance(msg.get("content"), list) else []
        if msg.get("role") == "user":
            current = e["id"]
            runs[current] = []
        if current is None:
            continue
        calls = [b for b in blocks if b.get("type") == "toolCall"]
        runs[current].append({
            "entryId": e["id"],
            "role": msg.get("role"),
            "toolName": msg.get("toolName") if msg.get("role") == "toolResult" else None,
            "toolCalls": [b.get("name") for b in calls],
            "text": message_text(msg),
            "hidden": [b["thinking"] for b in blocks if b.get("type") == "thinking" and b.get("thinking")]
            + [str(b["arguments"]["command"]) for b in calls if isinstance(b.get("arguments"), dict) and "command" in b["arguments"]],
        })
    return runs


def mask(text: str) -> str:
    for secret in SECRETS.values():
        text = text.replace(secret, REDACTED)
    return text


def secret_leak(text: str) -> str | None:
    """A known secret, or a 16-byte piece of one, in text."""
    for name, secret in SECRETS.items():
        if secret in text:
            return f"secret {name}"
        for i in range(len(secret) - 15):
            if secret[i : i + 16] in text:
                return f"a piece of secret {name} ({secret[i:i + 16][:4]}…)"
    return None


def secret_prefix_at_end(text: str) -> str | None:
    """A proper prefix (4+ bytes) of a known secret at the very end of text."""
    for name, secret in SECRETS.items():
        for k in range(len(secret) - 1, 3, -1):
            if text.endswith(secret[:k]):
                return f"{k}-byte prefix of secret {name}"
    return None


def place_session(src: Path, pi_dir: Path, cwd: Path) -> tuple[str, Path]:
    """Copy src into pi_dir/sessions with only the header's cwd replaced; mtime 60 s ago."""
    data = src.read_bytes()
    first, nl, rest = data.partition(b"\n")
    header = json.loads(first)
    if header.get("type") != "session" or "cwd" not in header:
        raise Fatal(f"{src.name}: first line is not a session header with cwd")
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    if json.dumps(header, **compact).encode() != first:
        raise Fatal(f"{src.name}: header line does not round-trip through json; cannot replace only cwd")
    header["cwd"] = str(cwd)
    out = pi_dir / "sessions" / src.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(json.dumps(header, **compact).encode() + nl + rest)
    past = time.time() - 60
    os.utime(out, (past, past))
    return header["id"], out


# --------------------------------------------------------------------------- runread


class Runread:
    def __init__(self, binary: Path, home: Path) -> None:
        self.binary = binary
        self.home = home
        self.env = dict(os.environ, RUNREAD_HOME=str(home))

    def run(self, *args: str, timeout: float = 120, input: str | None = None) -> subprocess.CompletedProcess[str]:
        stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
        return subprocess.run(
            [str(self.binary), "--home", str(self.home), *args],
            capture_output=True, text=True, env=self.env, timeout=timeout, **stdin,
        )

    def ok(self, *args: str) -> str:
        r = self.run(*args)
        if r.returncode != 0:
            raise Fatal(f"runread {' '.join(args)} exited {r.returncode}: {tail(r.stderr or r.stdout)}")
        return r.stdout


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Fatal(f"runread serve exited {proc.returncode} before listening: {tail(log.read_bytes())}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise Fatal(f"runread serve did not accept on 127.0.0.1:{port} within {timeout:.0f}s: {tail(log.read_bytes())}")


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


# --------------------------------------------------------------------------- the test


class Suite:
    def __init__(self, opts: argparse.Namespace, tmp: Path, res: Results) -> None:
        self.opts = opts
        self.tmp = tmp
        self.res = res
        self.url = ""
        self.answers: dict[str, bytes] = {}  # runId -> independent final answer (UTF-8)
        self.inspector_calls = 0
        self.ran: list[tuple[list[str], int]] = []  # (argv, exit status) of every client command run
        self.keys: set[str] = set()  # every key granted (or made up) here, and the files holding them
        self.key_files: set[str] = set()
        self.versions: dict[str, set[str]] = {}  # "client, transport, mode" -> protocol versions it negotiated

    def run_cmd(self, cmd: list[str], timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run one client command (recorded for the README check)."""
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout, env=env)
        self.ran.append((cmd, r.returncode))
        return r

    def negotiated(self, who: str, version: Any, want: str) -> None:
        self.versions.setdefault(who, set()).add(str(version))
        ensure(version == want, f"{who} negotiated protocol version {version!r}, expected {want!r}")

    # ---- leak check: no answer text (nor its sha256) may appear in a refusal's output
    def leaked(self, text: str) -> str | None:
        for run_id, raw in self.answers.items():
            answer = raw.decode("utf-8")
            if hashlib.sha256(raw).hexdigest() in text:
                return f"sha256 of {run_id}'s answer"
            pieces = [ln.strip() for ln in answer.splitlines() if len(ln.strip()) >= 8]
            pieces += [answer[i : i + 24] for i in range(0, max(len(answer) - 24, 0) + 1, 12)]
            for p in pieces:
                if p and p in text:
                    return f"{run_id}'s answer text {p[:40]!r}"
        return None

    # ---- Python SDK (read_final_answer.py)
    def reader(self, key_file: Path, mode: str, limit: int | None, out: Path | None,
               stdio: bool = False) -> subprocess.CompletedProcess[str]:
        if stdio:  # stdio_read_final_answer.py launches `runread serve --stdio` itself
            cmd = [str(self.py), str(STDIO_READER), "--runread", str(self.opts.runread), "--home", str(self.rr.home),
                   "--key-file", str(key_file), "--mode", mode, "--timeout", "30"]
        else:
            # README.md's form: `.venv/bin/python tests/clients/read_final_answer.py --url URL --key-file F [--mode M] --out F`
            cmd = [str(self.py), str(READER), "--url", self.url, "--key-file", str(key_file)]
            if mode != "auto":
                cmd += ["--mode", mode]
        if limit is not None:
            cmd += ["--limit", str(limit)]
        if out is not None:
            cmd += ["--out", str(out)]
        return self.run_cmd(cmd)

    def sdk_read(self, grant: dict[str, Any], mode: str, limit: int | None, stdio: bool = False,
                 expected: bytes | None = None, tools: list[str] | None = None) -> Callable[[], str]:
        """expected: the answer (default: the fixture's); tools: what tools/list must be (stdio reader only)."""
        run_id = grant["target"]["runId"]
        expected = self.answers[run_id] if expected is None else expected
        out = self.tmp / f"sdk-{'stdio-' if stdio else ''}{run_id}-{mode}-{limit or 'default'}.txt"

        def go() -> str:
            t0 = time.monotonic()
            r = self.reader(grant["keyFile"], mode, limit, out, stdio)
            dt = time.monotonic() - t0
            ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
            lines = r.stdout.strip().splitlines()
            ensure(len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}")
            s = json.loads(lines[0])
            want_sha = hashlib.sha256(expected).hexdigest()
            ensure(s.get("ok") is True, f"ok is {s.get('ok')!r}")
            self.negotiated(f"Python SDK, {'stdio' if stdio else 'HTTP'}, --mode {mode}", s.get("protocolVersion"), SDK_VERSION[mode])
            ensure(s.get("target") == grant["target"], f"read target {s.get('target')} != granted {grant['target']}")
            ensure(s.get("sha256") == want_sha, f"printed sha256 {s.get('sha256')} != fixture's {want_sha}")
            ensure(s.get("totalBytes") == len(expected), f"totalBytes {s.get('totalBytes')} != {len(expected)}")
            got = out.read_bytes()
            ensure(got == expected, f"--out file ({len(got)} bytes) differs from the fixture's answer ({len(expected)} bytes)")
            if stdio:
                ensure(s.get("transport") == "stdio", f"transport {s.get('transport')!r}")
                ensure(tools is None or s.get("tools") == tools, f"tools/list {s.get('tools')}, expected {tools}")
                leak = secret_leak(got.decode("utf-8") + r.stdout + r.stderr)  # r.stderr includes runread's stderr
                ensure(leak is None, f"answer or output holds {leak}")
            chunks = s.get("chunks")
            wire = ""
            if not stdio:  # every tools/call success's structuredContent checked on the wire; no session
                ensure(isinstance(chunks, int) and s.get("wireLabels") == chunks + 1,
                       f"wireLabels {s.get('wireLabels')!r}: not list_granted_targets + {chunks} chunks")
                ensure(s.get("sessionIds") == [], f"Mcp-Session-Id issued: {s.get('sessionIds')}")
                wire = f", label first in {s['wireLabels']} responses"
            if limit is not None:
                ensure(
                    isinstance(chunks, int) and math.ceil(len(expected) / limit) <= chunks <= len(expected),
                    f"{chunks} chunks is impossible for {len(expected)} bytes at limit {limit}",
                )
            return f"{s['protocolVersion']}, {chunks} chunks, {len(got)} bytes, sha256 {want_sha[:12]}…{wire} ({dt:.1f}s)"

        return go

    def sdk_refused(self, key_file: Path, mode: str, must_contain: list[str], stdio: bool = False) -> Callable[[], str]:
        def go() -> str:
            r = self.reader(key_file, mode, None, None, stdio)
            ensure(r.returncode == 1, f"exit {r.returncode}, expected 1 (stdout {tail(r.stdout, 300)!r})")
            ensure(r.stdout.strip() == "", f"stdout not empty: {tail(r.stdout, 300)!r}")
            for needle in must_contain:
                ensure(needle in r.stderr, f"stderr lacks {needle!r}: {tail(r.stderr, 600)}")
            leak = self.leaked(r.stdout + r.stderr)
            ensure(leak is None, f"refusal output contains {leak}")
            return tail(r.stderr, 300)

        return go

    def sdk_probe(self, key_file: Path, target: dict[str, Any], mode: str = MODERN) -> dict[str, Any]:
        """One tools/call read_final_answer through the SDK (Client mode: pinned 2026-07-28, or "legacy"),
        reporting how it was refused."""
        probe = self.tmp / "sdk_probe.py"
        probe.write_text(SDK_PROBE)
        r = subprocess.run(
            [str(self.py), str(probe), self.url, str(key_file), json.dumps(target), mode],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        )
        ensure(r.returncode == 0 and r.stdout.strip(), f"probe exited {r.returncode}: {tail(r.stderr, 600)}")
        leak = self.leaked(r.stdout + r.stderr)
        ensure(leak is None, f"probe output contains {leak}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    # ---- MCP Inspector CLI
    def inspector(self, key: str, *args: str, era: str = "modern") -> tuple[int, Any, str, str]:
        """README.md's form: `… --cli URL --protocol-era ERA --stored-auth-only --header "x-runread-key: K" ARGS --format json`."""
        return self.run_inspector([
            self.url, "--protocol-era", era, "--stored-auth-only",
            "--header", f"x-runread-key: {key}", *args, "--format", "json",
        ])

    def inspector_stdio(self, key_file: Path, *args: str, era: str = "modern") -> tuple[int, Any, str, str]:
        """The Inspector launching `runread serve --stdio --key-file key_file` as its server."""
        return self.run_inspector([
            "--protocol-era", era, "--format", "json", *args,
            "--", str(self.opts.runread), "--home", str(self.rr.home), "serve", "--stdio", "--key-file", str(key_file),
        ])

    def insp(self, grant: dict[str, Any], stdio: bool, *args: str, era: str = "modern") -> tuple[int, Any, str, str]:
        if stdio:
            return self.inspector_stdio(grant["keyFile"], *args, era=era)
        return self.inspector(grant["key"], *args, era=era)

    def run_inspector(self, cli_args: list[str]) -> tuple[int, Any, str, str]:
        cmd = [str(self.node), str(self.inspector_entry), "--cli", *cli_args]
        home = self.tmp / "inspector-home"
        home.mkdir(exist_ok=True)
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"))
        env.pop("MCP_CATALOG_PATH", None)
        self.inspector_calls += 1
        r = self.run_cmd(cmd, timeout=120, env=env)
        parsed = None
        with contextlib.suppress(ValueError):
            parsed = json.loads(r.stdout)
        return r.returncode, parsed, r.stdout, r.stderr

    def insp_initialize(self, grant: dict[str, Any], era: str, stdio: bool = False) -> str:
        """`--method initialize` prints what the Inspector negotiated (protocolVersion, serverInfo, capabilities)."""
        rc, out, raw, err = self.insp(grant, stdio, "--method", "initialize", era=era)
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        r = out["result"]
        self.negotiated(f"MCP Inspector CLI, {'stdio' if stdio else 'HTTP'}, --protocol-era {era}",
                        r.get("protocolVersion"), ERA_VERSION[era])
        ensure((r.get("serverInfo") or {}).get("name") == "runread", f"serverInfo {r.get('serverInfo')}")
        ensure("tools" in (r.get("capabilities") or {}), f"capabilities {r.get('capabilities')}")
        return f"protocolVersion {r['protocolVersion']}, serverInfo {r['serverInfo']}, capabilities {json.dumps(r['capabilities'])}"

    def insp_tools_list(self, grant: dict[str, Any], stdio: bool = False, era: str = "modern") -> str:
        rc, out, raw, err = self.insp(grant, stdio, "--method", "tools/list", era=era)
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        names = [t.get("name") for t in out["result"].get("tools", [])]
        ensure(sorted(names) == ALL_TOOLS, f"tools/list names {names}")
        return f"tools {names}"

    def insp_list_targets(self, grant: dict[str, Any], stdio: bool = False, era: str = "modern") -> str:
        rc, out, raw, err = self.insp(grant, stdio, "--method", "tools/call", "--tool-name", "list_granted_targets", era=era)
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        result = out["result"]
        ensure(result.get("isError") is False, f"isError {result.get('isError')!r}")
        sc = result.get("structuredContent") or {}
        targets = sc.get("targets")
        ensure(isinstance(targets, list) and len(targets) == 1, f"expected exactly the one granted target, got {targets}")
        ensure(targets[0].get("target") == grant["target"], f"listed {targets[0].get('target')} != granted {grant['target']}")
        ensure("final_answer" in targets[0].get("features", []), f"features {targets[0].get('features')}")
        ensure(sc.get("trust") == "untrusted_data" and sc.get("instructions") is False, f"trust fields {sc}")
        labeled("list_granted_targets", sc)
        payload = parse_block(result, "list_granted_targets", "untrusted")
        ensure(payload == sc, "text block JSON differs from structuredContent")
        return f"target runId {grant['target']['runId']}, features {targets[0].get('features')}, label first"

    def insp_read_all(self, grant: dict[str, Any], era: str = "modern") -> str:
        target = grant["target"]
        expected = self.answers[target["runId"]]
        max_calls = math.ceil(len(expected) / INSPECTOR_LIMIT) + 2
        args: dict[str, Any] = {"target": target, "limit": INSPECTOR_LIMIT}
        parts: list[bytes] = []
        server_sha = None
        for call in range(max_calls):
            rc, out, raw, err = self.inspector(
                grant["key"], "--method", "tools/call", "--tool-name", "read_final_answer",
                "--tool-args-json", json.dumps(args), era=era,
            )
            where = f"call {call}"
            ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"{where}: exit {rc}: {tail(raw + err, 600)}")
            result = out["result"]
            ensure(result.get("isError") is False, f"{where}: isError {result.get('isError')!r}")
            sc = result.get("structuredContent") or {}
            ensure(parse_block(result, "read_final_answer", "untrusted") == sc, f"{where}: text block JSON != structuredContent")
            labeled("read_final_answer", sc)
            ensure(sc.get("readable") is True and sc.get("trust") == "untrusted_data", f"{where}: readable/trust {sc}")
            text = sc.get("text")
            ensure(isinstance(text, str), f"{where}: text is {type(text).__name__}")
            chunk = text.encode("utf-8")
            running = sum(map(len, parts))
            ensure(sc.get("byteOffset") == running, f"{where}: byteOffset {sc.get('byteOffset')} != {running}")
            ensure(0 < len(chunk) <= INSPECTOR_LIMIT, f"{where}: chunk of {len(chunk)} bytes at limit {INSPECTOR_LIMIT}")
            ensure(server_sha in (None, sc.get("sha256")), f"{where}: sha256 changed")
            server_sha = sc.get("sha256")
            parts.append(chunk)
            if sc.get("eof") is True:
                break
            cursor = sc.get("nextCursor")
            ensure(isinstance(cursor, str) and cursor, f"{where}: not eof but nextCursor {cursor!r}")
            args = {"target": target, "cursor": cursor, "limit": INSPECTOR_LIMIT}
        else:
            raise AssertionError(f"no eof after {max_calls} calls")
        answer = b"".join(parts)
        want = hashlib.sha256(expected).hexdigest()
        got = hashlib.sha256(answer).hexdigest()
        ensure(got == want, f"reassembled sha256 {got} != fixture's {want} ({len(answer)} vs {len(expected)} bytes)")
        ensure(server_sha == want, f"server sha256 {server_sha} != fixture's {want}")
        return f"{len(parts)} calls, {len(answer)} bytes, sha256 {want[:12]}…, label first"

    def insp_cross_key(self, key: str, other_target: dict[str, Any], era: str = "modern") -> str:
        rc, out, raw, err = self.inspector(
            key, "--method", "tools/call", "--tool-name", "read_final_answer",
            "--tool-args-json", json.dumps({"target": other_target, "limit": INSPECTOR_LIMIT}), era=era,
        )
        ensure(rc != 0, "exit 0 for a target this key was not granted")
        ensure(isinstance(out, dict) and "result" in out, f"exit {rc}, no result: {tail(raw + err, 600)}")
        refusal = parse_refusal(out["result"])
        ensure(refusal.get("code") == "not_granted", f"refusal code {refusal.get('code')!r}")
        leak = self.leaked(raw + err)
        ensure(leak is None, f"refusal contains {leak}")
        return f"exit {rc}, isError with {refusal}"

    def insp_bad_key(self, key: str, target: dict[str, Any], era: str = "modern") -> str:
        rc, out, raw, err = self.inspector(
            key, "--method", "tools/call", "--tool-name", "read_final_answer",
            "--tool-args-json", json.dumps({"target": target, "limit": INSPECTOR_LIMIT}), era=era,
        )
        combined = raw + err
        ensure(rc == 3, f"exit {rc}, expected 3 (auth_required): {tail(combined, 600)}")
        ensure("auth_required" in combined and "403" in combined, f"no auth_required/403 in output: {tail(combined, 600)}")
        leak = self.leaked(combined)
        ensure(leak is None, f"refusal contains {leak}")
        return f"exit 3, {tail(raw or err, 200)}"

    def insp_revoked(self, grant: dict[str, Any], stdio: bool = False, era: str = "modern") -> str:
        target = grant["target"]
        rc, out, raw, err = self.insp(
            grant, stdio, "--method", "tools/call", "--tool-name", "read_final_answer",
            "--tool-args-json", json.dumps({"target": target, "limit": INSPECTOR_LIMIT}), era=era,
        )
        combined = raw + err
        ensure(rc != 0, f"exit 0 with a revoked key: {tail(combined, 300)}")
        leak = self.leaked(combined)
        ensure(leak is None, f"refusal contains {leak}")
        return f"exit {rc}, {tail(err or raw, 200)}"

    # ---- secrets-history setup
    def check_oracle(self) -> str:
        """The fixture holds what fixtures/pi/README.md says, so the history checks mean something."""
        runs = list(self.oracle.items())
        ensure(len(runs) == 2, f"{len(runs)} runs on the active branch")
        (r1, m1), (r2, m2) = runs
        sk, ghp = SECRETS["openai-test"], SECRETS["github-test"]
        ensure([m["role"] for m in m1] == ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant"],
               f"run 1 roles {[m['role'] for m in m1]}")
        ensure(len(m2) == 11, f"run 2 has {len(m2)} messages")
        ensure(sk in m1[2]["text"] and sk in m1[-1]["text"] and ghp in m1[-1]["text"], "run 1 secrets not where expected")
        ends = [m for m in m2 if m["text"].endswith(sk)]
        ensure(len(ends) == 1 and ends[0]["role"] == "toolResult", "run 2 has no tool output ending with the sk secret")
        hidden = [h for m in m1 + m2 for h in m["hidden"]]
        ensure(any(h.startswith(THINKING_MARK) for h in hidden), "no thinking block starting with the expected text")
        ensure(TOOL_ARG_MARK in hidden, f"no tool call with command {TOOL_ARG_MARK!r}")
        for m in m1 + m2:
            for h in hidden + [THINKING_MARK]:
                ensure(h not in m["text"], f"hidden content {h[:30]!r} also in a visible text (oracle unusable)")
        n = sum(m["text"].count(s) for m in m1 + m2 for s in SECRETS.values())
        return f"runs {r1} ({len(m1)} messages), {r2} ({len(m2)} messages), {n} secret occurrences, {len(hidden)} hidden blocks"

    def add_secrets(self) -> str:
        for name, value in SECRETS.items():
            r = self.rr.run("secret", "add", "--name", name, input=value)
            ensure(r.returncode == 0, f"secret add {name} exited {r.returncode}: {tail(r.stderr or r.stdout, 300)}")
            leak = secret_leak(r.stdout + r.stderr)
            ensure(leak is None, f"secret add {name} printed {leak}")
        r = self.rr.run("secret", "list")
        ensure(r.returncode == 0, f"secret list exited {r.returncode}")
        ensure(all(n in r.stdout for n in SECRETS), f"secret list lacks a name: {r.stdout!r}")
        leak = secret_leak(r.stdout + r.stderr)
        ensure(leak is None, f"secret list printed {leak}")
        return f"{sorted(SECRETS)} added; secret list shows the names, no values"

    # ---- generic SDK calls (one process, pinned 2026-07-28 or legacy)
    def sdk_calls(self, key_file: Path, calls: list[tuple[str, dict[str, Any]]], mode: str = MODERN) -> dict[str, Any]:
        """tools/list and the calls in one SDK session, Client(mode=mode): "2026-07-28" (pinned) or "legacy"."""
        probe = self.tmp / "sdk_calls.py"
        if not probe.exists():
            probe.write_text(SDK_CALLS)
        r = subprocess.run(
            [str(self.py), str(probe), self.url, str(key_file), json.dumps(calls), mode],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        )
        ensure(r.returncode == 0 and r.stdout.strip(), f"sdk_calls exited {r.returncode}: {tail(r.stderr, 600)}")
        leak = secret_leak(r.stdout + r.stderr)
        ensure(leak is None, f"sdk_calls output contains {leak}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    @staticmethod
    def valid(tool: str, result: dict[str, Any]) -> dict[str, Any]:
        """A success: structuredContent, the labeled block equal to it, trust fields, a start record id."""
        ensure(result.get("form") == "result", f"{tool}: {result}")
        ensure(result.get("isError") is False, f"{tool}: isError {result.get('isError')!r}: {tail(str(result.get('content')), 300)}")
        sc = result.get("structuredContent")
        ensure(isinstance(sc, dict), f"{tool}: structuredContent is {type(sc).__name__}")
        ensure(parse_block(result, tool, TRUST_LABEL[tool]) == sc, f"{tool}: text block JSON != structuredContent")
        ensure(sc.get("trust") == "untrusted_data" and sc.get("instructions") is False,
               f"{tool}: trust {sc.get('trust')!r}, instructions {sc.get('instructions')!r}")
        labeled(tool, sc)
        start = (result.get("_meta") or {}).get("io.runread/startId")
        ensure(isinstance(start, str) and start, f"{tool}: no _meta io.runread/startId")
        return sc

    # ---- 7. history
    def history_read(self, grant: dict[str, Any], limit: int | None, out: Path, mode: str = "auto") -> Callable[[], str]:
        run_id = grant["target"]["runId"]

        def go() -> str:
            t0 = time.monotonic()
            cmd = [str(self.py), str(HISTORY_READER), "--url", self.url, "--key-file", str(grant["keyFile"]),
                   "--out", str(out), "--timeout", "30", "--mode", mode]
            if limit is not None:
                cmd += ["--limit", str(limit)]
            r = self.run_cmd(cmd)
            ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
            leak = secret_leak(r.stdout + r.stderr)
            ensure(leak is None, f"read_history.py output contains {leak}")
            lines = r.stdout.strip().splitlines()
            ensure(len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}")
            s = json.loads(lines[0])
            ensure(s.get("ok") is True and s.get("eof") is True, f"ok {s.get('ok')!r}, eof {s.get('eof')!r}")
            ensure(s.get("target") == grant["target"], f"read target {s.get('target')} != granted {grant['target']}")
            ensure(s.get("gap") is False and s.get("redactionPending") is False,
                   f"gap {s.get('gap')!r} {s.get('gapReasons')}, redactionPending {s.get('redactionPending')!r}")
            n = len(self.oracle[run_id])
            ensure(s.get("events") == n, f"{s.get('events')} events, the fixture's run has {n} messages")
            if limit is not None:
                ensure(s.get("pages") >= math.ceil(n / limit), f"{s.get('pages')} pages for {n} events at limit {limit}")
            self.negotiated(f"Python SDK, HTTP, --mode {mode}", s.get("protocolVersion"), SDK_VERSION[mode])
            ensure(s.get("wireLabels") == s.get("pages") + 1, f"wireLabels {s.get('wireLabels')!r} for {s.get('pages')} pages")
            ensure(s.get("sessionIds") == [], f"Mcp-Session-Id issued: {s.get('sessionIds')}")
            self.histories[(run_id, limit if mode == "auto" else f"{mode}-{limit}")] = json.loads(out.read_text(encoding="utf-8"))
            return (f"{s['protocolVersion']}, {s['pages']} pages, {n} events {s['firstSequence']}..{s['lastSequence']}, "
                    f"truncated={s['truncated']}, upserts {s['upserts']} ({time.monotonic() - t0:.1f}s)")

        return go

    def history_checks(self) -> None:
        res = self.res
        self.histories: dict[tuple[str, int | None], list[dict[str, Any]]] = {}
        jobs = [
            (f"sdk read_history run {i + 1} ({g['target']['runId']}) limit={limit}",
             self.history_read(g, limit, self.tmp / f"history-{g['target']['runId']}-{limit}.json"))
            for i, g in enumerate(self.g_hist)
            for limit in HISTORY_LIMITS
        ] + [
            (f"sdk legacy read_history run {i + 1} ({g['target']['runId']}) limit={limit}",
             self.history_read(g, limit, self.tmp / f"history-{g['target']['runId']}-legacy-{limit}.json", "legacy"))
            for i, g in enumerate(self.g_hist)
            for limit in LEGACY_HISTORY_LIMITS
        ]
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, self.opts.jobs))
        try:
            futures = [(name, pool.submit(capture, fn)) for name, fn in jobs]
            for name, fut in futures:
                ok, detail = fut.result()
                res.record(name, ok, detail)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

        for i, g in enumerate(self.g_hist):
            run_id = g["target"]["runId"]
            label = f"history run {i + 1} ({run_id})"
            res.check(f"{label}: identical for limits {HISTORY_LIMITS}", lambda r=run_id: self.history_identical(r))
            res.check(f"{label}: sequences, roles, tool names as in the fixture", lambda r=run_id: self.history_shape(r))
            res.check(f"{label}: texts = fixture with secrets -> {REDACTED}", lambda r=run_id: self.history_texts(r))
            res.check(f"{label}: no secret (or its prefix at an end), thinking or tool arguments",
                      lambda r=run_id: self.history_hidden(r))
            res.check(f"{label}: runread read history gives the same events", lambda g=g: self.history_cli(g))
            res.check(f"{label}: the dated era (legacy, limits {LEGACY_HISTORY_LIMITS}) gives the same events",
                      lambda r=run_id: self.history_legacy(r))
        res.check("inspector read_history run 2 (one page, limit 100)", lambda: self.insp_history(self.g_hist[1]))
        res.check("inspector legacy read_history run 2 (one page, limit 100)",
                  lambda: self.insp_history(self.g_hist[1], era="legacy"))

    def history_of(self, run_id: str) -> list[dict[str, Any]]:
        got = [self.histories.get((run_id, limit)) for limit in HISTORY_LIMITS]
        ensure(all(h is not None for h in got), "not every limit's read succeeded")
        return got[0]  # type: ignore[return-value]

    def history_legacy(self, run_id: str) -> str:
        base = self.history_of(run_id)
        for limit in LEGACY_HISTORY_LIMITS:
            got = self.histories.get((run_id, f"legacy-{limit}"))
            ensure(got is not None, f"the legacy read at limit {limit} failed")
            ensure(got == base, f"legacy limit {limit} differs from the 2026-07-28 reads")
        return f"{len(base)} events, identical"

    def history_identical(self, run_id: str) -> str:
        base = self.history_of(run_id)
        for limit in HISTORY_LIMITS[1:]:
            other = self.histories[(run_id, limit)]
            ensure(other == base, f"limit {limit} differs from limit {HISTORY_LIMITS[0]}")
        return f"{len(base)} events, identical across {len(HISTORY_LIMITS)} limits"

    def history_shape(self, run_id: str) -> str:
        events, want = self.history_of(run_id), self.oracle[run_id]
        seqs = [e["sequence"] for e in events]
        ensure(seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"sequences not contiguous: {seqs}")
        ensure(len(events) == len(want), f"{len(events)} events, fixture {len(want)}")
        for e, m in zip(events, want):
            where = f"seq {e['sequence']} ({m['entryId']})"
            ensure(e["role"] == m["role"], f"{where}: role {e['role']!r}, fixture {m['role']!r}")
            ensure(e["toolName"] == m["toolName"], f"{where}: toolName {e['toolName']!r}, fixture {m['toolName']!r}")
            ensure(e["toolCalls"] == m["toolCalls"], f"{where}: toolCalls {e['toolCalls']}, fixture {m['toolCalls']}")
            ensure(e["readable"] is True and e["bodyUnavailable"] is False and e["redactionPending"] is False,
                   f"{where}: readable {e['readable']}, bodyUnavailable {e['bodyUnavailable']}, redactionPending {e['redactionPending']}")
        return f"seq {seqs[0]}..{seqs[-1]}: {' '.join(e['role'] for e in events)}"

    def history_texts(self, run_id: str) -> str:
        events, want = self.history_of(run_id), self.oracle[run_id]
        notes = []
        for e, m in zip(events, want):
            where = f"seq {e['sequence']}"
            expected, text = mask(m["text"]), e["text"]
            ensure(isinstance(text, str), f"{where}: text is {text!r}")
            if e["truncated"]:
                ensure(text != expected and expected.startswith(text), f"{where}: truncated text is not a prefix of the fixture's")
                ensure(HISTORY_EVENT_MAX_BYTES - 4 < len(text.encode()) <= HISTORY_EVENT_MAX_BYTES,
                       f"{where}: truncated to {len(text.encode())} bytes")
                notes.append(f"seq {e['sequence']} truncated {len(m['text'].encode())}->{len(text.encode())} B")
            else:
                ensure(text == expected, f"{where}: text differs from the fixture's ({len(text)} vs {len(expected)} chars)")
            # secrets in the part of the fixture's text that was returned
            n = expected[: len(text)].count(REDACTED) if e["truncated"] else sum(m["text"].count(s) for s in SECRETS.values())
            if n:
                ensure(text.count(REDACTED) >= n, f"{where}: {n} secrets, {text.count(REDACTED)} {REDACTED}")
                at_end = m["text"].endswith(tuple(SECRETS.values()))
                if at_end:
                    ensure(text.endswith(REDACTED), f"{where}: the text ended with a secret but ends {text[-12:]!r}")
                notes.append(f"seq {e['sequence']}: {n}x {REDACTED}" + (" (at the end)" if at_end else ""))
        ensure(any(REDACTED in n for n in notes), "no masked secret in this run (fixture?)")
        return "; ".join(notes)

    def history_hidden(self, run_id: str) -> str:
        hidden = [h for m in self.oracle[run_id] for h in m["hidden"]] + [THINKING_MARK, TOOL_ARG_MARK]
        windows = [h[i : i + 40] for h in hidden if len(h) > 40 for i in range(0, len(h) - 40, 20)]
        for e in self.history_of(run_id):
            text = e["text"] or ""
            where = f"seq {e['sequence']}"
            leak = secret_leak(text) or secret_prefix_at_end(text)
            ensure(leak is None, f"{where}: text holds {leak}")
            for h in hidden + windows:
                ensure(h not in text, f"{where}: text holds hidden content {h[:40]!r}")
        return f"{len(hidden)} hidden strings (thinking, commands) and {len(windows)} 40-char windows absent"

    def runread_read(self, key_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """README.md's `runread read --url URL --key-file F COMMAND --out F`, as a reader runs it: no --home,
        and an environment without RUNREAD_HOME whose HOME is empty (the reader needs nothing of the owner's)."""
        home = self.tmp / "reader-home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("RUNREAD_HOME", "RUNREAD_STORE", "XDG_DATA_HOME")}
        env["HOME"] = str(home)
        return self.run_cmd([str(self.opts.runread), "read", "--url", self.url, "--key-file", str(key_file), *args],
                            timeout=300, env=env)

    def cli_final_answer(self, grant: dict[str, Any]) -> str:
        out = self.tmp / f"cli-answer-{grant['target']['runId']}.txt"
        r = self.runread_read(grant["keyFile"], "final-answer", "--out", str(out))
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 400)}")
        want = self.answers[grant["target"]["runId"]]
        ensure(out.read_bytes() == want, f"--out ({out.stat().st_size} B) differs from the fixture's answer ({len(want)} B)")
        return tail(r.stderr or r.stdout, 160)

    def history_cli(self, grant: dict[str, Any]) -> str:
        out = self.tmp / f"cli-history-{grant['target']['runId']}.json"
        r = self.runread_read(grant["keyFile"], "history", "--out", str(out))
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 400)}")
        leak = secret_leak(r.stdout + r.stderr)
        ensure(leak is None, f"output holds {leak}")
        got = json.loads(out.read_text(encoding="utf-8"))
        ensure(got == self.history_of(grant["target"]["runId"]), "differs from read_history.py's events")
        return f"{len(got)} events, equal; {tail(r.stderr or r.stdout, 80)}"

    def insp_history(self, grant: dict[str, Any], era: str = "modern") -> str:
        rc, out, raw, err = self.inspector(
            grant["key"], "--method", "tools/call", "--tool-name", "read_history",
            "--tool-args-json", json.dumps({"target": grant["target"], "limit": 100}), era=era,
        )
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        leak = secret_leak(raw + err)
        ensure(leak is None, f"output holds {leak}")
        result = out["result"]
        ensure(result.get("isError") is False, f"isError {result.get('isError')!r}")
        sc = result.get("structuredContent") or {}
        ensure(parse_block(result, "read_history", "untrusted") == sc, "text block JSON != structuredContent")
        labeled("read_history", sc)
        ensure(sc.get("eof") is True, f"eof {sc.get('eof')!r}")
        ensure(sc.get("events") == self.history_of(grant["target"]["runId"]), "events differ from the SDK's")
        return f"{len(sc['events'])} events, eof, equal to the SDK's"

    # ---- 6a. a reader configured once
    def reader_once(self, runs: list[dict[str, Any]]) -> str:
        rr = self.rr
        added = json.loads(rr.ok("reader", "add", "outside-sdk-once", "--url", self.url, "--json"))
        ensure(KEY_RE.fullmatch(added.get("key", "")) is not None, "reader add --json printed no key")
        key_file = self.tmp / "key-outside-sdk-once"
        key_file.write_text(added["key"] + "\n")
        key_file.chmod(0o600)
        self.keys.add(added["key"])
        self.key_files.add(str(key_file))
        grants = []
        for n, run in enumerate(runs):
            t = run["target"]
            g = json.loads(rr.ok("grant", "--run", t["runId"], "--session", t["sessionId"], "--features",
                                 "final_answer", "--expires", "15m", "--to", "outside-sdk-once", "--json"))
            ensure(g.get("newReader") is False and "key" not in g and g.get("readerId") == added.get("readerId"),
                   f"run {n + 1}: grant to the reader showed a key or named another reader")
            grants.append(g)
            out = self.sdk_calls(key_file, [("list_granted_targets", {}), ("read_final_answer", {"target": t})])
            listed = [x.get("target") for x in self.valid("list_granted_targets", out["calls"][0]).get("targets", [])]
            ensure(len(listed) == n + 1 and listed[0] == t, f"run {n + 1}: listed {len(listed)}, newest {listed[:1]}")
            sc = self.valid("read_final_answer", out["calls"][1])
            ensure(sc.get("state") == "available" and sc.get("totalBytes") == run.get("finalBytes"),
                   f"run {n + 1}: state {sc.get('state')!r}, totalBytes {sc.get('totalBytes')} (want {run.get('finalBytes')})")
        rr.ok("grant", "revoke", grants[1]["grantId"])
        out = self.sdk_calls(key_file, [("read_final_answer", {"target": runs[1]["target"]}),
                                        ("read_final_answer", {"target": runs[0]["target"]})])
        revoked = out["calls"][0]
        ensure(revoked.get("isError") is True, f"the revoked run read: {tail(str(revoked), 300)}")
        refusal = json.loads(revoked["content"][0]["text"])
        ensure(refusal.get("code") == "grant_revoked", f"refusal {refusal}")
        ensure(self.valid("read_final_answer", out["calls"][1]).get("state") == "available", "the reader's other run")
        return (f"{len(runs)} runs shared with one key (no new key each time), each listed newest first and read; "
                f"run 2 revoked: grant_revoked, run 1 still read")

    # ---- 8. tools per grant
    def tools_checks(self) -> None:
        cases = [(f"history key run {i + 1}", g, ["list_granted_targets", "read_history"]) for i, g in enumerate(self.g_hist)]
        cases.append(("all-features key", self.g_all, ALL_TOOLS))
        for label, g, want in cases:
            self.res.check(f"sdk tools/list {label}: exactly {len(want)} tools", lambda g=g, want=want: self.tools_of(g, want))
        self.res.check(f"sdk legacy tools/list all-features key: exactly {len(ALL_TOOLS)} tools",
                       lambda: self.tools_of(self.g_all, ALL_TOOLS, "legacy"))
        self.res.check("inspector tools/list all-features key", lambda: self.insp_all_tools(self.g_all["key"]))
        self.res.check("inspector legacy tools/list all-features key", lambda: self.insp_all_tools(self.g_all["key"], era="legacy"))

    def tools_of(self, grant: dict[str, Any], want: list[str], mode: str = MODERN) -> str:
        out = self.sdk_calls(grant["keyFile"], [("list_granted_targets", {})], mode)
        ensure(out.get("protocolVersion") == (LEGACY if mode == "legacy" else MODERN), f"protocolVersion {out.get('protocolVersion')!r}")
        # tools/list is every read tool whatever the key holds; the target lists what its grant allows
        ensure(out["tools"] == ALL_TOOLS, f"tools/list {out['tools']}, expected every read tool")
        sc = self.valid("list_granted_targets", out["calls"][0])
        targets = sc.get("targets") or []
        ensure(len(targets) == 1 and targets[0].get("target") == grant["target"], f"targets {targets}")
        ensure(sorted(targets[0].get("features", [])) == sorted(grant["featureList"]),
               f"features {targets[0].get('features')}, granted {grant['featureList']}")
        listed = sorted(targets[0].get("tools", []))
        # the tools a grant's features let its key call on the target (not those that name no run)
        ensure(listed == [t for t in want if t not in NO_RUN_TOOLS], f"target's tools {listed}")
        return f"tools/list: all {len(ALL_TOOLS)}; the target lists tools {listed}"

    def insp_all_tools(self, key: str, era: str = "modern") -> str:
        rc, out, raw, err = self.inspector(key, "--method", "tools/list", era=era)
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        names = sorted(t.get("name") for t in out["result"].get("tools", []))
        ensure(names == ALL_TOOLS, f"tools/list names {names}")
        return f"{len(names)} tools"

    # ---- 9. artifacts
    def artifact_checks(self) -> None:
        res, rr, ws = self.res, self.rr, self.ws
        t = self.g_all["target"]
        rel = Path(SH_DIR) / "out" / "build-output.bin"
        self.art_path = ws / rel
        self.art_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.art_path, "wb") as f:
            f.write(os.urandom(ARTIFACT_BYTES))
        self.art_sha = hashlib.sha256(self.art_path.read_bytes()).hexdigest()

        def add() -> str:
            r = rr.run("artifact", "add", "--run", t["runId"], "--session", t["sessionId"], str(rel),
                       "--name", rel.name, "--mime", "application/octet-stream")
            ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 400)}")
            ensure(self.art_sha in r.stdout + r.stderr, f"output does not name the sha256: {tail(r.stdout + r.stderr, 300)}")
            return tail(r.stdout + r.stderr, 200)

        res.check(f"runread artifact add 8 MiB random file to run 1 ({rel})", add)

        # refusals: a credential-like name, traversal, a symlink, known secrets (plain, and across a 64 KiB boundary)
        d = ws / SH_DIR
        (d / ".env").write_text("APP_ENV=staging\nLOG_LEVEL=info\n")
        (ws.parent / "x").write_text("outside the workspace\n")
        link = d / "out" / "link.bin"
        link.symlink_to(self.art_path.name)
        (d / "out" / "leak.log").write_text(f"deploy ok\nOPENAI_API_KEY={SECRETS['openai-test']}\ndone\n")
        blob = bytearray(os.urandom(1 << 17))
        blob[(1 << 16) - 13 : (1 << 16) + 19] = SECRETS["github-test"].encode()
        (d / "out" / "straddle.bin").write_bytes(bytes(blob))
        refusals = [
            (".env", f"{SH_DIR}/.env", r"credential|\.env"),
            ("../x", "../x", r"travers|outside|\.\."),
            ("a symlink", f"{SH_DIR}/out/link.bin", r"symlink"),
            ("a file with a known secret", f"{SH_DIR}/out/leak.log", r"known secret"),
            ("a known secret across a 64 KiB boundary", f"{SH_DIR}/out/straddle.bin", r"known secret"),
        ]
        for label, path, pattern in refusals:
            res.check(f"runread artifact add refuses {label}", lambda path=path, pattern=pattern: self.art_refused(path, pattern))

        res.check("sdk read_artifact.py: 8 MiB artifact, every chunk verified", self.art_sdk)
        res.check("sdk legacy read_artifact.py: 8 MiB artifact, every chunk verified", lambda: self.art_sdk("legacy"))
        res.check("runread read artifact --out: byte-identical", self.art_cli)

    def art_refused(self, path: str, pattern: str) -> str:
        t = self.g_all["target"]
        r = self.rr.run("artifact", "add", "--run", t["runId"], "--session", t["sessionId"], path)
        msg = (r.stdout + r.stderr).strip()
        ensure(r.returncode != 0, f"exit 0: {tail(msg, 300)}")
        ensure(re.search(pattern, msg, re.I), f"message does not name the refusal ({pattern}): {tail(msg, 300)}")
        leak = secret_leak(msg)
        ensure(leak is None, f"message holds {leak}")
        return f"exit {r.returncode}: {tail(msg, 120)}"

    def art_sdk(self, mode: str = "auto") -> str:
        out = self.tmp / f"artifact-sdk-{mode}.bin"
        t0 = time.monotonic()
        r = self.run_cmd([str(self.py), str(ARTIFACT_READER), "--url", self.url, "--key-file", str(self.g_all["keyFile"]),
                          "--out", str(out), "--timeout", "30", "--mode", mode])
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        s = json.loads(r.stdout.strip().splitlines()[-1])
        self.negotiated(f"Python SDK, HTTP, --mode {mode}", s.get("protocolVersion"), SDK_VERSION[mode])
        ensure(isinstance(s.get("wireLabels"), int) and s["wireLabels"] >= s.get("chunks", 0) + 2,
               f"wireLabels {s.get('wireLabels')!r} for {s.get('chunks')} chunks")
        ensure(s.get("sessionIds") == [], f"Mcp-Session-Id issued: {s.get('sessionIds')}")
        ensure(s.get("ok") is True and s.get("sha256") == self.art_sha and s.get("size") == ARTIFACT_BYTES,
               f"summary {s}, local sha256 {self.art_sha}")
        ensure(s.get("chunks") == ARTIFACT_BYTES // ARTIFACT_CHUNK, f"{s.get('chunks')} chunks")
        ensure(s.get("name") == "build-output.bin" and s.get("mime") == "application/octet-stream", f"name/mime {s}")
        ensure(out.read_bytes() == self.art_path.read_bytes(), "--out bytes differ from the original")
        return f"{s['protocolVersion']}, {s['chunks']} chunks, {s['size']} bytes, sha256 {self.art_sha[:12]}… ({time.monotonic() - t0:.1f}s)"

    def art_cli(self) -> str:
        out = self.tmp / "artifact-cli.bin"
        r = self.runread_read(self.g_all["keyFile"], "artifact", "--out", str(out))
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 400)}")
        ensure(out.read_bytes() == self.art_path.read_bytes(), "--out bytes differ from the original")
        return tail(r.stderr or r.stdout, 160)

    # ---- 10. work state, metadata, get_run, list_artifacts, masked final answer
    def state_checks(self) -> None:
        res, t = self.res, self.g_all["target"]
        other = dict(t, runId=self.g_hist[1]["target"]["runId"])  # exists, granted to another key only
        missing = dict(t, runId="no-such-run")
        calls = [
            ("read_work_state", {"target": t}),
            ("read_target_metadata", {"target": t}),
            ("get_run", {"target": t}),
            ("get_run", {"target": other}),
            ("get_run", {"target": missing}),
            ("list_artifacts", {"target": t}),
        ]
        got: dict[str, Any] = {}

        def fetch() -> str:
            got.update(self.sdk_calls(self.g_all["keyFile"], calls))
            ensure(len(got["calls"]) == len(calls), f"{len(got['calls'])} results")
            return f"{len(calls)} calls in one SDK session"

        if not res.check("sdk all-features key: state, metadata, get_run, list_artifacts", fetch):
            return
        r = got["calls"]
        res.check("read_work_state validates", lambda: self.work_state(r[0]))
        res.check("read_target_metadata validates", lambda: self.metadata(r[1]))
        res.check("get_run granted run 1", lambda: self.get_run_found(r[2]))
        res.check("get_run ungranted run 2 and a missing run: {found: false}", lambda: self.get_run_absent(r[3], r[4]))
        res.check("list_artifacts: exactly the one registered artifact", lambda: self.list_artifacts(r[5]))
        res.check("inspector get_run ungranted run 2", lambda: self.insp_get_run_absent(other))
        res.check("inspector legacy get_run ungranted run 2", lambda: self.insp_get_run_absent(other, era="legacy"))
        res.check("sdk legacy all-features key: state, metadata, get_run, list_artifacts as in 2026-07-28",
                  lambda: self.state_legacy(calls, r))
        res.check("sdk read_final_answer run 1 (all-features key): secrets masked", self.masked_answer)

    def state_legacy(self, calls: list[tuple[str, dict[str, Any]]], modern: list[dict[str, Any]]) -> str:
        """The same calls in the dated era (one SDK session, initialize 2025-11-25): each validates, and
        equals the 2026-07-28 answer (read_work_state: but for observedAt)."""
        got = self.sdk_calls(self.g_all["keyFile"], calls, "legacy")
        self.negotiated("Python SDK, HTTP, --mode legacy", got.get("protocolVersion"), LEGACY)
        ensure(got["tools"] == ALL_TOOLS, f"tools/list {got['tools']}")
        ensure(len(got["calls"]) == len(calls), f"{len(got['calls'])} results")
        for (tool, _), a, b in zip(calls, got["calls"], modern):
            sa, sb = self.valid(tool, a), self.valid(tool, b)
            if tool == "read_work_state":
                sa, sb = ({k: v for k, v in x.items() if k != "observedAt"} for x in (sa, sb))
            ensure(sa == sb, f"{tool}: legacy {json.dumps(sa)[:300]} != modern {json.dumps(sb)[:300]}")
        return f"{got['protocolVersion']}, {len(calls)} calls equal to 2026-07-28's (read_work_state but for observedAt)"

    # ---- 11. a supervised run: the real Pi through `runread run`, read by the Python SDK
    def supervised_run(self, rr: Runread, tmp: Path, grant: Callable[..., dict[str, Any]]) -> dict[str, Any] | None:
        """Runs Pi 0.73.1 under `runread run` against the scripted model server; grants its run."""
        res = self.res
        out: dict[str, Any] = {}

        def go() -> str:
            pi = subprocess.run([sys.executable, str(FIXTURES / "tools" / "ensure-pi.py")], capture_output=True,
                                text=True, timeout=600)
            ensure(pi.returncode == 0, f"installing Pi: {tail(pi.stderr)}")
            root = tmp / "supervised"
            ws, agent, sessions = root / "sup-ws", root / "agent", root / "sessions"
            for d in (ws, agent, sessions):
                d.mkdir(parents=True)
            (ws / "notes.md").write_text("# notes\n")
            port = free_port()
            (agent / "models.json").write_text(json.dumps({"providers": {"mock": {
                "baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions", "apiKey": "mock",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False}, "models": [{"id": "mock-1"}]}}}))
            scenario = root / "scenario.json"
            scenario.write_text(json.dumps({"responses": [
                {"text": "Looking.", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
                {"text": SUPERVISED_ANSWER, "chunks": 5},
            ]}))
            mock = subprocess.Popen([sys.executable, str(FIXTURES / "tools" / "mockllm.py"), str(scenario), str(port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(200):
                    with contextlib.suppress(OSError):
                        socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                        break
                    time.sleep(0.05)
                r = subprocess.run(
                    [str(rr.binary), "--home", str(rr.home), "run", "--", pi.stdout.strip(), "--provider", "mock",
                     "--model", "mock-1", "--session-dir", str(sessions), "--no-extensions", "--no-skills",
                     "--no-prompt-templates", "--no-context-files", "-p", "What is in here?"],
                    cwd=ws, env=dict(rr.env, PI_CODING_AGENT_DIR=str(agent)), capture_output=True, text=True, timeout=300,
                )
            finally:
                stop(mock)
            ensure(r.returncode == 0, f"runread run exited {r.returncode}: {tail(r.stderr)}")
            ensure("journaled (supervised evidence)" in r.stderr, f"runread run: {tail(r.stderr)}")
            sup = [x for x in json.loads(rr.ok("runs", "--json")) if x.get("prompt") == "What is in here?"]
            ensure(len(sup) == 1, f"{len(sup)} runs with the supervised prompt")
            out["grant"] = grant(sup[0], "outside-supervised", "final_answer,aggregate")
            return f"Pi exited 0; run {sup[0]['target']['runId']} journaled"

        if not res.check("supervised: runread run -- pi (real Pi 0.73.1, scripted model)", go):
            return None
        return out["grant"]

    def supervised_checks(self, g: dict[str, Any] | None) -> None:
        res = self.res
        if g is None:
            res.record("supervised: reads", False, "no supervised run to read")
            return
        expected = SUPERVISED_ANSWER.encode("utf-8")
        res.check("supervised: sdk pinned limit=16 reassembles the agent's exact bytes",
                  self.sdk_read(g, "pinned", 16, expected=expected))
        got: dict[str, Any] = {}

        def fetch() -> str:
            got.update(self.sdk_calls(g["keyFile"], [("read_final_answer", {"target": g["target"]}),
                                                     ("read_work_state", {"target": g["target"]})]))
            return "2 calls"

        if not res.check("supervised: sdk read_final_answer + read_work_state", fetch):
            return

        def final() -> str:
            sc = self.valid("read_final_answer", got["calls"][0])
            ensure(sc.get("evidence") == "supervised", f"evidence {sc.get('evidence')!r}")
            ensure(sc.get("foregroundFinalConfirmed") is True, f"foregroundFinalConfirmed {sc.get('foregroundFinalConfirmed')!r}")
            ensure(sc.get("state") == "available" and sc.get("text") == SUPERVISED_ANSWER, f"state {sc.get('state')!r}")
            ensure(sc.get("sha256") == hashlib.sha256(expected).hexdigest(), f"sha256 {sc.get('sha256')}")
            ensure(sc.get("aggregateCompletionConfirmed") is False, "aggregate completion claimed")
            return f"evidence supervised, foregroundFinalConfirmed true, sha256 {sc['sha256'][:12]}…"

        def state() -> str:
            sc = self.valid("read_work_state", got["calls"][1])
            ensure(sc.get("evidence") == "supervised", f"evidence {sc.get('evidence')!r}")
            ensure(sc["foreground"].get("state") == "completed" and sc["foreground"].get("source") == "supervisor",
                   f"foreground {sc['foreground']}")
            ensure(sc["foreground"].get("exit") == "exit:0", f"exit {sc['foreground'].get('exit')!r}")
            ensure(sc["coverage"]["background"]["state"] == "complete", f"background {sc['coverage']['background']}")
            return f"foreground {sc['foreground']['state']} ({sc['foreground']['exit']}), aggregate {sc['aggregate']['state']}"

        res.check("supervised: read_final_answer says supervised, foregroundFinalConfirmed, exact sha256", final)
        res.check("supervised: read_work_state from the supervisor", state)

    def work_state(self, result: dict[str, Any]) -> str:
        sc = self.valid("read_work_state", result)
        ensure(sc.get("evidence") == "session_file", f"evidence {sc.get('evidence')!r}")
        ensure(sc.get("wholeMachineIdleConfirmed") is False, "wholeMachineIdleConfirmed is not false")
        cov = sc.get("coverage") or {}
        ensure(sorted(cov) == ["background", "queue", "session", "subagents", "supervisor"], f"coverage kinds {sorted(cov)}")
        for kind, c in cov.items():
            ensure(c.get("state") in ("complete", "incomplete") and isinstance(c.get("reason"), str) and c["reason"],
                   f"coverage.{kind} {c}")
        ensure(cov["session"]["state"] == "complete", f"coverage.session {cov['session']}")
        if sc.get("completionConfirmed"):
            ensure(all(c["state"] == "complete" for c in cov.values()) and sc.get("fresh") is True,
                   "completionConfirmed without full, fresh coverage")
        ensure(isinstance(sc.get("observedAt"), str) and re.match(r"^\d{4}-\d\d-\d\dT", sc["observedAt"]), f"observedAt {sc.get('observedAt')!r}")
        fg, agg = sc.get("foreground") or {}, sc.get("aggregate") or {}
        return (f"foreground {fg.get('state')} ({fg.get('source')}), aggregate {agg.get('state')}, "
                f"completionConfirmed {sc.get('completionConfirmed')}, fresh {sc.get('fresh')}")

    def metadata(self, result: dict[str, Any]) -> str:
        sc = self.valid("read_target_metadata", result)
        entries = [json.loads(raw) for raw in self.sh_src.read_bytes().splitlines()]
        mc = next(e for e in entries if e.get("type") == "model_change")
        saved = f"{mc['provider']}/{mc['modelId']}"
        run_models = sorted({f"{e['message']['provider']}/{e['message']['model']}" for e in entries
                             if e.get("type") == "message" and e["message"].get("role") == "assistant"})
        fields = ("workspaceName", "workspacePath", "sessionName", "savedModel", "runModel")
        for f in fields:
            v = sc.get(f)
            ensure(isinstance(v, dict) and isinstance(v.get("source"), str), f"{f}: {v!r}")
        ensure(sc["workspacePath"]["value"] == str(self.ws), f"workspacePath {sc['workspacePath']}, registered {self.ws}")
        ensure(sc["workspaceName"]["value"] == self.ws.name, f"workspaceName {sc['workspaceName']}")
        ensure(sc["savedModel"]["value"] == saved, f"savedModel {sc['savedModel']}, fixture {saved}")
        ensure(sc.get("runModels") == run_models and sc["runModel"]["value"] in run_models,
               f"runModel {sc['runModel']}, runModels {sc.get('runModels')}, fixture {run_models}")
        # Every sourced field that is null, and only those, is named in unknownFields.
        nulls = sorted(f for f, v in sc.items()
                       if isinstance(v, dict) and "source" in v and "value" in v and v["value"] is None)
        ensure(sorted(sc.get("unknownFields") or []) == nulls, f"unknownFields {sc.get('unknownFields')}, null fields {nulls}")
        return f"workspace {sc['workspaceName']['value']!r}, model {saved}, unknown {nulls}"

    def get_run_found(self, result: dict[str, Any]) -> str:
        sc = self.valid("get_run", result)
        t = self.g_all["target"]
        ensure(sc.get("found") is True and sc.get("status") == "completed", f"found {sc.get('found')!r}, status {sc.get('status')!r}")
        want_rev = {k: t[k] for k in ("instance", "revision", "generation")}
        ensure(sc.get("revision") == want_rev, f"revision {sc.get('revision')}, target {want_rev}")
        ensure(sc.get("origin") == "passive", f"origin {sc.get('origin')!r}")
        started = self.sh_runs[0].get("startedAt")
        ensure(sc.get("startedAt") == started, f"startedAt {sc.get('startedAt')!r}, runs --json {started!r}")
        ensure(isinstance(sc.get("eventSequence"), int), f"eventSequence {sc.get('eventSequence')!r}")
        return f"completed, eventSequence {sc['eventSequence']}, {sc.get('startedAt')} .. {sc.get('finishedAt')}"

    def get_run_absent(self, other: dict[str, Any], missing: dict[str, Any]) -> str:
        want = GET_RUN_ABSENT
        a, b = self.valid("get_run", other), self.valid("get_run", missing)
        ensure(a == want, f"ungranted run: {a}")
        ensure(b == want, f"missing run: {b}")
        ensure(other["content"] == missing["content"], "the two answers' text blocks differ")
        return json.dumps(a)

    def list_artifacts(self, result: dict[str, Any]) -> str:
        sc = self.valid("list_artifacts", result)
        arts = sc.get("artifacts") or []
        ensure(sc.get("total") == 1 and len(arts) == 1 and sc.get("nextOffset") is None,
               f"total {sc.get('total')}, {[a.get('name') for a in arts]} (refused files must not be registered)")
        a = arts[0]
        ensure(a.get("size") == ARTIFACT_BYTES and a.get("sha256") == self.art_sha and a.get("name") == "build-output.bin"
               and a.get("mime") == "application/octet-stream" and a.get("kind") == "generated", f"artifact {a}")
        return f"{a['artifactId']} {a['name']} {a['size']} B, version {a['version'][:12]}…"

    def insp_get_run_absent(self, other: dict[str, Any], era: str = "modern") -> str:
        rc, out, raw, err = self.inspector(
            self.g_all["key"], "--method", "tools/call", "--tool-name", "get_run", "--tool-args-json", json.dumps({"target": other}),
            era=era,
        )
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        sc = out["result"].get("structuredContent")
        ensure(sc == GET_RUN_ABSENT, f"structuredContent {sc}")
        labeled("get_run", sc)
        return json.dumps(sc)

    def masked_answer(self) -> str:
        run_id = self.g_all["target"]["runId"]
        expected = mask(self.answers[run_id].decode("utf-8")).encode("utf-8")
        out = self.tmp / "sdk-masked-answer.txt"
        r = self.reader(self.g_all["keyFile"], "pinned", 1000, out)
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        got = out.read_bytes()
        leak = secret_leak(got.decode("utf-8") + r.stdout + r.stderr)
        ensure(leak is None, f"answer holds {leak}")
        ensure(got == expected, f"answer ({len(got)} B) != fixture's with secrets masked ({len(expected)} B)")
        s = json.loads(r.stdout.strip().splitlines()[-1])
        ensure(s.get("sha256") == hashlib.sha256(expected).hexdigest(), "server sha256 is not the masked text's")
        return f"{len(self.answers[run_id])} B in the fixture -> {len(got)} B, {s.get('chunks')} chunks at limit 1000"

    # ---- 6b. stdio transport: `runread serve --stdio --key-file F`, launched by the client
    def stdio_checks(self, g_sample: dict[str, Any], g_multi: dict[str, Any], g_srev: dict[str, Any],
                     g_srev_legacy: dict[str, Any]) -> None:
        res = self.res
        t0 = time.monotonic()
        two = ALL_TOOLS  # tools/list is every read tool, whatever the grant
        masked = mask(self.answers[self.g_all["target"]["runId"]].decode("utf-8")).encode("utf-8")
        jobs = [
            (f"stdio sdk auto limit=default sample ({g_sample['target']['runId']})",
             self.sdk_read(g_sample, "auto", None, stdio=True, tools=two)),
            (f"stdio sdk pinned limit=64 multi-run ({g_multi['target']['runId']})",
             self.sdk_read(g_multi, "pinned", 64, stdio=True, tools=two)),
            (f"stdio sdk auto all-features key ({self.g_all['target']['runId']}): {len(ALL_TOOLS)} tools, masked answer",
             self.sdk_read(self.g_all, "auto", None, stdio=True, expected=masked, tools=ALL_TOOLS)),
            (f"stdio sdk legacy limit=default sample ({g_sample['target']['runId']})",
             self.sdk_read(g_sample, "legacy", None, stdio=True, tools=two)),
            (f"stdio sdk legacy limit=64 multi-run ({g_multi['target']['runId']})",
             self.sdk_read(g_multi, "legacy", 64, stdio=True, tools=two)),
            (f"stdio sdk legacy all-features key ({self.g_all['target']['runId']}): {len(ALL_TOOLS)} tools, masked answer",
             self.sdk_read(self.g_all, "legacy", None, stdio=True, expected=masked, tools=ALL_TOOLS)),
        ]
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, self.opts.jobs))
        try:
            futures = [(name, pool.submit(capture, fn)) for name, fn in jobs]
            for name, fut in futures:
                ok, detail = fut.result()
                res.record(name, ok, detail)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

        res.check("inspector stdio initialize: negotiated version (modern)", lambda: self.insp_initialize(g_sample, "modern", stdio=True))
        res.check("inspector stdio tools/list", lambda: self.insp_tools_list(g_sample, stdio=True))
        res.check("inspector stdio list_granted_targets", lambda: self.insp_list_targets(g_sample, stdio=True))
        res.check("inspector stdio read_final_answer one chunk", lambda: self.insp_stdio_chunk(g_sample))
        res.check("inspector stdio legacy initialize: negotiated version (legacy)",
                  lambda: self.insp_initialize(g_sample, "legacy", stdio=True))
        res.check("inspector stdio legacy list_granted_targets", lambda: self.insp_list_targets(g_sample, stdio=True, era="legacy"))
        res.check("inspector stdio legacy read_final_answer one chunk", lambda: self.insp_stdio_chunk(g_sample, era="legacy"))
        for mode in ("auto", "legacy"):
            res.check(f"stdio sdk {mode} wrong key: refused at startup (invalid_key)",
                      self.sdk_refused(self.wrong_file, mode, ["invalid_key"], stdio=True))
        res.check("inspector stdio wrong key refused", lambda: self.insp_stdio_bad_key())
        res.check("stdio sdk: revoked during a session, the next request is refused", lambda: self.stdio_revoke(g_srev))
        res.check("stdio sdk legacy: revoked during a session, the next request is refused",
                  lambda: self.stdio_revoke(g_srev_legacy, "legacy"))
        for mode in ("auto", "legacy"):
            res.check(f"stdio sdk {mode} revoked key: refused at a fresh start (grant_revoked)",
                      self.sdk_refused(g_srev["keyFile"], mode, ["grant_revoked"], stdio=True))
        res.check("inspector stdio revoked key refused", lambda: self.insp_revoked(g_srev, stdio=True))
        res.check("inspector stdio legacy revoked key refused", lambda: self.insp_revoked(g_srev, stdio=True, era="legacy"))
        res.check("no runread --stdio process left running", self.stdio_orphans)
        print(f"(stdio checks: {time.monotonic() - t0:.1f}s)", flush=True)

    def insp_stdio_chunk(self, grant: dict[str, Any], era: str = "modern") -> str:
        target = grant["target"]
        expected = self.answers[target["runId"]]
        rc, out, raw, err = self.inspector_stdio(
            grant["keyFile"], "--method", "tools/call", "--tool-name", "read_final_answer",
            "--tool-args-json", json.dumps({"target": target, "limit": INSPECTOR_LIMIT}), era=era,
        )
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        result = out["result"]
        ensure(result.get("isError") is False, f"isError {result.get('isError')!r}")
        sc = result.get("structuredContent") or {}
        ensure(parse_block(result, "read_final_answer", "untrusted") == sc, "text block JSON != structuredContent")
        labeled("read_final_answer", sc)
        ensure(sc.get("trust") == "untrusted_data" and sc.get("instructions") is False and sc.get("readable") is True,
               f"trust {sc.get('trust')!r}, instructions {sc.get('instructions')!r}, readable {sc.get('readable')!r}")
        chunk = (sc.get("text") or "").encode("utf-8")
        ensure(sc.get("byteOffset") == 0 and 0 < len(chunk) <= INSPECTOR_LIMIT and expected.startswith(chunk),
               f"byteOffset {sc.get('byteOffset')}, chunk of {len(chunk)} bytes is not the answer's start")
        want = hashlib.sha256(expected).hexdigest()
        ensure(sc.get("sha256") == want and sc.get("totalBytes") == len(expected),
               f"sha256 {sc.get('sha256')}, totalBytes {sc.get('totalBytes')}; fixture {want}, {len(expected)}")
        ensure(sc.get("eof") is False and isinstance(sc.get("nextCursor"), str) and sc["nextCursor"],
               f"eof {sc.get('eof')!r}, nextCursor {sc.get('nextCursor')!r}")
        return f"label untrusted and first, {len(chunk)} of {len(expected)} bytes, sha256 {want[:12]}…, nextCursor given"

    def insp_stdio_bad_key(self) -> str:
        rc, out, raw, err = self.inspector_stdio(self.wrong_file, "--method", "tools/list")
        combined = raw + err
        ensure(rc != 0, f"exit 0 with a never-granted key: {tail(combined, 300)}")
        ensure("invalid_key" in err, f"runread's invalid_key not in stderr: {tail(combined, 400)}")
        leak = self.leaked(combined)
        ensure(leak is None, f"output contains {leak}")
        said = next((ln for ln in err.splitlines() if "invalid_key" in ln), "")
        return f"exit {rc}, stderr {said.strip()!r}"

    def stdio_revoke(self, grant: dict[str, Any], mode: str = "auto") -> str:
        """One stdio session: a chunk, `runread grant revoke` from outside, then the next chunk must be refused."""
        probe = self.tmp / "stdio_revoke_probe.py"
        probe.write_text(STDIO_REVOKE_PROBE)
        revoke = [str(self.opts.runread), "--home", str(self.rr.home), "grant", "revoke", grant["grantId"]]
        r = subprocess.run(
            [str(self.py), str(probe), str(HERE), str(self.opts.runread), str(self.rr.home), str(grant["keyFile"]),
             json.dumps(grant["target"]), json.dumps(revoke), mode],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        )
        ensure(r.returncode == 0 and r.stdout.strip(), f"probe exited {r.returncode}: {tail(r.stderr, 600)}")
        p = json.loads(r.stdout.strip().splitlines()[-1])
        before, rev, after = p.get("before") or {}, p.get("revoke") or {}, p.get("after") or {}
        self.negotiated(f"Python SDK, stdio, --mode {mode}", p.get("protocolVersion"), SDK_VERSION[mode])
        # "before" holds the answer's sha256 (not its text); everything after the revoke must hold neither
        leak = self.leaked(json.dumps({k: v for k, v in p.items() if k != "before"}) + r.stderr)
        ensure(leak is None, f"probe output after the revoke contains {leak}")
        ensure(before.get("isError") is False and before.get("byteOffset") == 0 and before.get("bytes", 0) > 0
               and before.get("sha256") == hashlib.sha256(self.answers[grant["target"]["runId"]]).hexdigest()
               and before.get("nextCursor"), f"first chunk before the revoke: {before}")
        ensure(rev.get("rc") == 0, f"grant revoke exited {rev.get('rc')}: {rev.get('stderr')}")
        state = {g["grantId"]: g for g in json.loads(self.rr.ok("grant", "list", "--json"))}.get(grant["grantId"], {}).get("state")
        ensure(state == "revoked", f"grant list says {state!r}")
        if after.get("form") == "error":  # a JSON-RPC error is fine too, if it names the refusal
            ensure(re.search(r"grant_revoked|invalid_key|grant_", json.dumps(after)), f"error does not name the refusal: {after}")
            how = f"JSON-RPC error {after.get('code')} {after.get('data')}"
        else:
            ensure(after.get("form") == "result" and after.get("isError") is True and after.get("structured") is None,
                   f"the next chunk was not refused: {str(after)[:300]}")
            texts = after.get("texts") or []
            ensure(len(texts) == 1, f"refusal has {len(texts)} content blocks")
            refusal = json.loads(texts[0])
            ensure(set(refusal) == {"code", "message"} and refusal["code"] == "grant_revoked", f"refusal {refusal}")
            how = f"isError {texts[0]}"
        ensure(p.get("toolsAfter") in (ALL_TOOLS, None),
               f"tools/list after the revoke: {p.get('toolsAfter')}")
        return f"{p['protocolVersion']}: chunk 1 {before['bytes']} B; after revoke: {how}; tools/list {p.get('toolsAfter')}"

    def stdio_orphans(self) -> str:
        """Every client closed its stdio server: no runread process of this test's home with --stdio remains."""
        home = str(self.rr.home)
        left = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                argv = (d / "cmdline").read_bytes().split(b"\0")
                if b"--stdio" in argv and home.encode() in argv:
                    left.append(d.name)
        ensure(not left, f"still running: pids {left}")
        return "none"

    # ---- what was negotiated, and README.md's commands
    def versions_summary(self) -> str:
        missing = [w for w in NEGOTIATED if w not in self.versions]
        ensure(not missing, f"no negotiated version recorded for {missing}")
        several = {w: sorted(v) for w, v in self.versions.items() if len(v) != 1}
        ensure(not several, f"more than one version: {several}")
        return "; ".join(f"{w}: {next(iter(self.versions[w]))}" for w in NEGOTIATED)

    def readme_token(self, want: str, got: str) -> bool:
        """One README token against one token of a command run here (placeholders: README_URL, key.txt,
        <key>, .venv, tests/…, the output file names)."""
        if want == README_URL:
            return got == self.url
        if want == "key.txt":
            return got in self.key_files
        if want == ".venv":
            return got == str(self.opts.cache / "venv")
        if want.startswith("tests/"):
            return got == str(REPO / want)
        if want in README_OUTPUTS:
            return got.startswith(str(self.tmp) + os.sep) and got.endswith(Path(want).suffix)
        if "<key>" in want:
            pre, _, post = want.partition("<key>")
            return (len(got) >= len(pre) + len(post) and got.startswith(pre) and got.endswith(post)
                    and got[len(pre) : len(got) - len(post)] in self.keys)
        return want == got

    def readme_match(self, tokens: list[str], argv: list[str]) -> bool:
        """Is argv README.md's command `tokens`, with the key, port and paths substituted? The programs:
        `npx -y -p node@22 -p @modelcontextprotocol/inspector@V -- mcp-inspector` is the cached node + the
        Inspector's entry (the same package the npx line runs), `runread` the binary under test,
        `.venv/bin/python`/`.venv/bin/pip` the cached venv's, `python3` this one."""
        venv_bin = self.opts.cache / "venv" / "bin"
        programs = [(NPX_INSPECTOR, [str(self.node), str(self.inspector_entry)]), (["runread"], [str(self.opts.runread)]),
                    ([".venv/bin/python"], [str(venv_bin / "python")]), ([".venv/bin/pip"], [str(venv_bin / "pip")]),
                    (["python3"], [sys.executable])]
        for prog, real in programs:
            if tokens[: len(prog)] == prog:
                if argv[: len(real)] != real:
                    return False
                tokens, argv = tokens[len(prog):], argv[len(real):]
                break
        else:
            return False
        return len(tokens) == len(argv) and all(self.readme_token(w, g) for w, g in zip(tokens, argv))

    def readme_check(self) -> str:
        """Every command line of docs/clients.md's block ran here, as written (key, port, paths substituted), and
        exited 0: the install line is ensure_venv's, the key file is written as `echo` writes it."""
        lines = readme_commands()
        notes, missing = [], []
        for line in lines:
            tokens = shlex.split(line)
            if "&&" in tokens:  # python3 -m venv .venv && .venv/bin/pip install -r tests/clients/requirements.txt
                parts, cur = [], []
                for t in tokens + ["&&"]:
                    if t == "&&":
                        parts.append(cur)
                        cur = []
                    else:
                        cur.append(t)
                want = venv_install_commands(self.opts.cache / "venv")
                ensure(len(parts) == len(want) and all(self.readme_match(p, w) for p, w in zip(parts, want)),
                       f"{line!r} is not what ensure_venv runs: {want}")
                notes.append("install = ensure_venv's (runs when the cache is empty)")
            elif tokens == ["echo", "<key>", ">", "key.txt"]:
                written = {f: Path(f).read_text() for f in self.key_files}
                bad = [f for f, text in written.items() if text[:-1] not in self.keys or not text.endswith("\n")]
                ensure(not bad, f"key files not written as `echo KEY > FILE` would: {bad}")
                notes.append(f"{len(written)} key files as echo writes them")
            else:
                hits = sum(1 for argv, rc in self.ran if rc == 0 and self.readme_match(tokens, argv))
                if hits:
                    notes.append(f"{tokens[0] if tokens[0] != 'npx' else 'inspector'} … {' '.join(tokens[-3:])}: {hits}x")
                else:
                    missing.append(line)
        ensure(not missing, "never run as written with exit 0: " + " | ".join(missing))
        return f"{len(lines)} commands; " + "; ".join(notes)

    # ---- the whole run
    def run(self) -> None:
        opts, res, tmp = self.opts, self.res, self.tmp

        # 1. tools
        with cache_lock(opts.cache):
            self.py, venv_desc = ensure_venv(opts.cache)
            res.record("tools: python venv", True, venv_desc)
            self.node, self.inspector_entry, npm_desc = ensure_npm(opts.cache)
            res.record("tools: node + inspector", True, npm_desc)

        # 2. home, workspace, fixtures, ingest, runs, grants
        home = tmp / "home"
        home.mkdir(mode=0o700)
        ws = tmp / "workspace"
        pi = tmp / "pi"
        sessions: dict[str, str] = {}
        for name in ("sample", "multi-run", "secrets-history"):
            src = fixture_session(name)
            cwd = ws / CWD_NAMES.get(name, name)
            cwd.mkdir(parents=True)
            sid, _ = place_session(src, pi, cwd)
            sessions[name] = sid
            for run_id, text in final_answers(src).items():
                if text is not None:
                    self.answers[run_id] = text.encode("utf-8")
        self.ws = ws
        self.sh_src = fixture_session("secrets-history")
        self.oracle = history_oracle(self.sh_src)
        res.check("fixture secrets-history: oracle", self.check_oracle)
        rr = Runread(opts.runread, home)
        self.rr = rr
        res.check("runread secret add (both known secrets, before serve)", self.add_secrets)
        rr.ok("workspace", "add", str(ws))
        rr.ok("ingest", "--pi", str(pi))
        runs = json.loads(rr.ok("runs", "--json"))

        def check_runs() -> str:
            by_id = {r["target"]["runId"]: r for r in runs}
            ensure(sorted(by_id) == sorted(self.answers), f"runs {sorted(by_id)} != fixture runs {sorted(self.answers)}")
            for run_id, raw in self.answers.items():
                r = by_id[run_id]
                ensure(
                    r.get("status") == "completed" and r.get("answerState") == "available" and r.get("finalBytes") == len(raw),
                    f"run {run_id}: status {r.get('status')!r}, answerState {r.get('answerState')!r}, "
                    f"finalBytes {r.get('finalBytes')!r} (fixture: {len(raw)})",
                )
            return f"{len(runs)} runs, finalBytes match the fixtures"

        res.check("runread runs --json", check_runs)

        def pick(session: str, cond: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
            cands = [r for r in runs if r["target"]["sessionId"] == sessions[session] and r.get("status") == "completed"
                     and r.get("answerState") == "available" and cond(r)]
            if not cands:
                raise Fatal(f"no suitable {session} run in runread runs --json")
            return max(cands, key=lambda r: r.get("finalBytes") or 0)

        sample_run = pick("sample", lambda r: r.get("finalBytes") == SAMPLE_BYTES)
        multi_run = pick("multi-run", lambda r: True)  # its longest answer (935 bytes, multi-byte UTF-8)

        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"

        def grant(run: dict[str, Any], label: str, features: str = "final_answer") -> dict[str, Any]:
            t = run["target"]
            out = rr.ok("grant", "--run", t["runId"], "--session", t["sessionId"], "--features", features,
                        "--expires", "15m", "--to", label, "--url", self.url, "--json")
            g = json.loads(out)
            if not KEY_RE.fullmatch(g.get("key", "")) or g.get("target") != t or not g.get("grantId"):
                raise Fatal(f"grant output unexpected: target {g.get('target')} (want {t}), grantId {g.get('grantId')!r}")
            key_file = tmp / f"key-{label}"
            key_file.write_text(g["key"] + "\n")
            key_file.chmod(0o600)
            g["keyFile"] = key_file
            g["featureList"] = features.split(",")
            self.keys.add(g["key"])
            self.key_files.add(str(key_file))
            return g

        g_sup = self.supervised_run(rr, tmp, grant)
        g_sample = grant(sample_run, "outside-sample")
        g_multi = grant(multi_run, "outside-multi")
        self.sh_runs = [next(r for r in runs if r["target"]["runId"] == run_id) for run_id in self.oracle]
        if len(self.sh_runs) != 2 or any(r["target"]["sessionId"] != sessions["secrets-history"] for r in self.sh_runs):
            raise Fatal(f"secrets-history runs {[r['target'] for r in self.sh_runs]} unexpected")
        self.g_hist = [grant(r, f"outside-history-{i + 1}", "history") for i, r in enumerate(self.sh_runs)]
        self.g_all = grant(self.sh_runs[0], "outside-all", ALL_FEATURES)
        all_keys = [g["key"] for g in (g_sample, g_multi, *self.g_hist, self.g_all)]
        res.record(
            "setup: workspace, ingest, grants",
            len(set(all_keys)) == len(all_keys),
            f"sample run {g_sample['target']['runId']} ({SAMPLE_BYTES} B), multi-run run {g_multi['target']['runId']} "
            f"({len(self.answers[g_multi['target']['runId']])} B), secrets-history runs "
            f"{[g['target']['runId'] for g in self.g_hist]} (history, one key each) and "
            f"{self.g_all['target']['runId']} ({ALL_FEATURES}), {len(all_keys)} separate keys",
        )

        # 3. serve
        log = tmp / "serve.log"
        with open(log, "wb") as logf:
            # The suite reads answers 4 bytes a call (2,389 calls for the sample) with one key from
            # several clients at once: the bound on calls per reader (a product default, tested on
            # its own in runread-service's call_rate) is lifted, or it would be what is measured.
            self.server = subprocess.Popen(
                [str(opts.runread), "--home", str(home), "serve", "--listen", f"127.0.0.1:{port}",
                 "--calls-per-minute", "1000000"],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=rr.env, start_new_session=True,
            )
        self.server_log = log
        wait_for_port(port, self.server, log)
        res.record("setup: runread serve", True, self.url)

        # 4. Python SDK reads (two at a time; results printed in order)
        # (sdk auto limit=default sample is README.md's command line, and sdk legacy limit=default sample its --mode legacy one)
        jobs = [
            (f"sdk {mode} limit={limit or 'default'} {label} ({g['target']['runId']})", self.sdk_read(g, mode, limit))
            for label, g in (("sample", g_sample), ("multi-run", g_multi))
            for mode in ("auto", "pinned", "legacy")
            for limit in (SDK_LIMITS if mode != "legacy" else LEGACY_LIMITS[label])
        ]
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs))
        try:
            futures = [(name, pool.submit(capture, fn)) for name, fn in jobs]
            for name, fut in futures:
                ok, detail = fut.result()
                res.record(name, ok, detail)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

        wrong = secrets.token_hex(32)
        while wrong in (g_sample["key"], g_multi["key"]):
            wrong = secrets.token_hex(32)
        wrong_file = tmp / "key-wrong"
        wrong_file.write_text(wrong + "\n")
        wrong_file.chmod(0o600)
        self.wrong_file = wrong_file
        self.keys.add(wrong)
        self.key_files.add(str(wrong_file))
        for mode in ("auto", "pinned", "legacy"):
            res.check(f"sdk {mode} wrong key refused", self.sdk_refused(wrong_file, mode, ["invalid_key", "HTTP 403"]))
        res.check("runread read final-answer --out (README command)", lambda: self.cli_final_answer(g_sample))

        # 5. MCP Inspector CLI, both eras (`--protocol-era modern`: 2026-07-28; `legacy`: initialize, 2025-11-25)
        for era in ("modern", "legacy"):
            e = "" if era == "modern" else "legacy "
            res.check(f"inspector {e}initialize: negotiated version ({era})", lambda era=era: self.insp_initialize(g_sample, era))
            res.check(f"inspector {e}tools/list", lambda era=era: self.insp_tools_list(g_sample, era=era))
            for label, g in (("sample", g_sample), ("multi-run", g_multi)):
                res.check(f"inspector {e}list_granted_targets {label}", lambda g=g, era=era: self.insp_list_targets(g, era=era))
                res.check(f"inspector {e}read_final_answer cursors {label}", lambda g=g, era=era: self.insp_read_all(g, era=era))
            res.check(f"inspector {e}key cannot read another key's target",
                      lambda era=era: self.insp_cross_key(g_sample["key"], g_multi["target"], era=era))
            res.check(f"inspector {e}wrong key refused", lambda era=era: self.insp_bad_key(wrong, g_sample["target"], era=era))

        # 6. revocation: a third key for the sample run works, then is revoked
        g_rev = grant(sample_run, "outside-revoke")
        res.check("sdk pinned revocable key reads before revoke", self.sdk_read(g_rev, "pinned", None))
        out = rr.run("grant", "revoke", g_rev["grantId"])

        def check_revoke() -> str:
            ensure(out.returncode == 0, f"grant revoke exited {out.returncode}: {tail(out.stderr)}")
            listed = {g["grantId"]: g for g in json.loads(rr.ok("grant", "list", "--json"))}
            ensure(listed.get(g_rev["grantId"], {}).get("state") == "revoked", f"grant list: {listed.get(g_rev['grantId'])}")
            ensure(all(listed[g["grantId"]].get("state") == "live" for g in (g_sample, g_multi)), "other grants not live")
            return f"{g_rev['grantId']} revoked, the other two still live"

        res.check("runread grant revoke", check_revoke)
        for mode in ("auto", "pinned", "legacy"):
            res.check(f"sdk {mode} revoked key refused", self.sdk_refused(g_rev["keyFile"], mode, []))

        def check_revoked_probe(mode: str) -> str:
            p = self.sdk_probe(g_rev["keyFile"], g_rev["target"], mode)
            if p.get("form") == "error":
                code = (p.get("data") or {}).get("code") if isinstance(p.get("data"), dict) else None
                ensure(403 in p.get("httpStatuses", []), f"JSON-RPC error without HTTP 403: {p}")
                ensure(code in ("grant_revoked", "invalid_key"), f"data.code {code!r}: {p}")
                return f"HTTP 403, JSON-RPC error {p.get('code')} data.code={code}"
            ensure(p.get("form") == "result" and p.get("isError") is True, f"not refused: {p}")
            texts = p.get("texts") or []
            ensure(len(texts) == 1, f"refusal has {len(texts)} content blocks")
            refusal = json.loads(texts[0])
            ensure(set(refusal) == {"code", "message"} and refusal["code"] == "grant_revoked", f"refusal {refusal}")
            ensure(p.get("protocolVersion") == (LEGACY if mode == "legacy" else MODERN), f"protocolVersion {p.get('protocolVersion')!r}")
            return f"{p['protocolVersion']}: HTTP {p.get('httpStatuses')}, tools/call isError {texts[0]}"

        res.check("sdk pinned revoked key: read_final_answer refusal code", lambda: check_revoked_probe(MODERN))
        res.check("sdk legacy revoked key: read_final_answer refusal code", lambda: check_revoked_probe("legacy"))
        res.check("inspector revoked key refused", lambda: self.insp_revoked(g_rev))
        res.check("inspector legacy revoked key refused", lambda: self.insp_revoked(g_rev, era="legacy"))

        # 6a. a reader configured once: its key file written once, three runs shared with it one
        # after another (no new key), each listed newest first and read; one revoked, the others read.
        res.check("sdk reader configured once: three runs shared one by one, one revoked",
                  lambda: self.reader_once([sample_run, multi_run, next(
                      r for r in runs if r["target"]["sessionId"] == sessions["multi-run"]
                      and r["target"] != multi_run["target"] and r.get("answerState") == "available")]))

        # 6b. the same over stdio (`runread serve --stdio --key-file F`, launched by each client)
        self.stdio_checks(g_sample, g_multi, grant(sample_run, "outside-stdio-revoke"),
                          grant(sample_run, "outside-stdio-revoke-legacy"))

        def check_server_alive() -> str:
            ensure(self.server.poll() is None, f"runread serve exited {self.server.returncode}: {tail(log.read_bytes())}")
            return f"{self.inspector_calls} Inspector invocations in all"

        # 7.-10. secrets-history: history, tools per grant, artifacts, work state / metadata / get_run
        self.history_checks()
        self.tools_checks()
        self.artifact_checks()
        self.state_checks()
        self.supervised_checks(g_sup)

        def check_log() -> str:
            leak = secret_leak(log.read_text(encoding="utf-8", errors="replace"))
            ensure(leak is None, f"serve.log contains {leak}")
            return f"{log.stat().st_size} bytes, no known secret"

        res.check("serve.log holds no known secret", check_log)
        res.check("runread serve still running", check_server_alive)
        res.check("protocol versions negotiated", self.versions_summary)
        res.check("README.md: every command of 'Connecting an MCP client' ran as written", self.readme_check)


def capture(fn: Callable[[], str]) -> tuple[bool, str]:
    try:
        return True, fn() or ""
    except Exception as e:  # noqa: BLE001
        return False, str(e) if isinstance(e, AssertionError) else f"{type(e).__name__}: {e}"


def parse_block(result: dict[str, Any], tool: str, trust: str) -> Any:
    content = result.get("content") or []
    ensure(len(content) == 1 and content[0].get("type") == "text", f"{tool}: content {[c.get('type') for c in content]}")
    text = content[0]["text"]
    prefix = f'<tool_result tool="{tool}" trust="{trust}">\n'
    ensure(text.startswith(prefix) and text.endswith(BLOCK_SUFFIX), f"{tool}: text block framing: {text[:80]!r}")
    payload = json.loads(text[len(prefix) : -len(BLOCK_SUFFIX)])
    labeled(f"{tool}", payload, where="text block")
    return payload


def labeled(tool: str, sc: Any, where: str = "structuredContent") -> None:
    """sc begins with runread's label, in the order received: trust, instructions, tool (= this tool)."""
    first = list(sc)[: len(LABEL_KEYS)] if isinstance(sc, dict) else None
    ensure(first == LABEL_KEYS and sc.get("tool") == tool,
           f"{tool}: {where} begins with keys {first}, tool {sc.get('tool') if isinstance(sc, dict) else None!r}; "
           f"expected {LABEL_KEYS}, tool {tool!r}")


def parse_refusal(result: dict[str, Any]) -> dict[str, Any]:
    ensure(result.get("isError") is True, f"isError {result.get('isError')!r}")
    content = result.get("content") or []
    ensure(len(content) == 1 and content[0].get("type") == "text", f"refusal content {content}")
    refusal = json.loads(content[0]["text"])
    ensure(isinstance(refusal, dict) and set(refusal) == {"code", "message"}, f"refusal text {content[0]['text']!r}")
    return refusal


SDK_PROBE = r'''
import asyncio, json, sys
import httpx2
from mcp import Client, Implementation
from mcp.client.streamable_http import streamable_http_client

async def main():
    url, key_file, target, mode = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    key = open(key_file).read().strip()
    statuses = []
    async def hook(r):
        statuses.append(r.status_code)
    http = httpx2.AsyncClient(headers={"x-runread-key": key}, event_hooks={"response": [hook]})
    out = {}
    try:
        async with http:
            transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
            async with Client(transport, mode=mode,
                              client_info=Implementation(name="runread-outside-probe", version="1")) as client:
                r = await client.call_tool("read_final_answer", {"target": target})
                out = {"form": "result", "protocolVersion": client.protocol_version, "isError": r.is_error,
                       "texts": [getattr(b, "text", None) for b in r.content],
                       "structured": r.structured_content}
    except BaseException as e:
        while hasattr(e, "exceptions") and len(e.exceptions) == 1:
            e = e.exceptions[0]
        out = {"form": "error", "type": type(e).__name__, "message": str(e)[:500]}
        err = getattr(e, "error", None)
        if err is not None:
            out.update(code=err.code, message=err.message, data=err.data)
    out["httpStatuses"] = statuses
    print(json.dumps(out, default=str))

asyncio.run(main())
'''


SDK_CALLS = r'''
import asyncio, json, sys
import httpx2
from mcp import Client, Implementation
from mcp.client.streamable_http import streamable_http_client

async def main():
    url, key_file, calls, mode = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    key = open(key_file).read().strip()
    http = httpx2.AsyncClient(headers={"x-runread-key": key})
    out = {"tools": None, "calls": []}
    async with http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        async with Client(transport, mode=mode,
                          client_info=Implementation(name="runread-outside-calls", version="1")) as client:
            out["protocolVersion"] = client.protocol_version
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            for name, args in calls:
                try:
                    r = await client.call_tool(name, args)
                    out["calls"].append({"form": "result", **r.model_dump(mode="json", by_alias=True)})
                except Exception as e:
                    while hasattr(e, "exceptions") and len(e.exceptions) == 1:
                        e = e.exceptions[0]
                    out["calls"].append({"form": "error", "type": type(e).__name__, "message": str(e)[:500]})
    print(json.dumps(out))

asyncio.run(main())
'''


STDIO_REVOKE_PROBE = r'''
import asyncio, argparse, json, subprocess, sys
sys.path.insert(0, sys.argv[1])
import stdio_read_final_answer as s

def info(e):
    while hasattr(e, "exceptions") and len(e.exceptions) == 1:
        e = e.exceptions[0]
    out = {"form": "error", "type": type(e).__name__, "message": str(e)[:500]}
    err = getattr(e, "error", None)
    if err is not None:
        out.update(code=err.code, message=err.message, data=err.data)
    return out

async def main():
    runread, home, key_file, target, revoke = sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]), json.loads(sys.argv[6])
    opts = argparse.Namespace(runread=runread, home=home, key_file=key_file, mode=sys.argv[7], timeout=30)
    out = {}
    async with s.connect_stdio(opts, "runread-outside-stdio-revoke") as client:
        out["protocolVersion"] = client.protocol_version
        await client.list_tools()
        r = await client.call_tool("read_final_answer", {"target": target, "limit": 4096})
        sc = r.structured_content or {}
        # no answer text in the output: its size and the server's sha256 only
        out["before"] = {"isError": r.is_error, "byteOffset": sc.get("byteOffset"), "bytes": len((sc.get("text") or "").encode()),
                         "sha256": sc.get("sha256"), "nextCursor": sc.get("nextCursor")}
        p = subprocess.run(revoke, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        out["revoke"] = {"rc": p.returncode, "stderr": p.stderr[-300:]}
        try:
            r = await client.call_tool("read_final_answer", {"target": target, "cursor": sc.get("nextCursor"), "limit": 4096})
            out["after"] = {"form": "result", "isError": r.is_error, "texts": [getattr(b, "text", None) for b in r.content],
                            "structured": r.structured_content}
        except Exception as e:
            out["after"] = info(e)
        try:
            out["toolsAfter"] = sorted(t.name for t in (await client.list_tools(cache_mode="bypass")).tools)
        except Exception as e:
            out["toolsAfter"] = None
            out["toolsAfterError"] = info(e)
    out["serverStderr"] = s.SERVER_STDERR
    print(json.dumps(out, default=str))

asyncio.run(main())
'''


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runread", required=True, type=Path, help="the runread binary to test")
    p.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("RUNREAD_CLIENTS_CACHE") or Path.home() / ".cache" / "runread-clients"),
        help="where the venv and npm prefix live ($RUNREAD_CLIENTS_CACHE, default ~/.cache/runread-clients)",
    )
    p.add_argument("--jobs", type=int, default=2, help="Python SDK reads run in parallel (default 2)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (home, logs) for debugging")
    opts = p.parse_args(argv)
    opts.runread = opts.runread.resolve()
    opts.cache = opts.cache.expanduser().resolve()

    res = Results()
    started = time.monotonic()
    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="runread-outside-")))
    suite = Suite(opts, tmp, res)
    suite.server = None

    def on_sigterm(*_: Any) -> None:
        # e.g. a CI timeout: stop the server now (running reads then fail fast), then unwind.
        stop(suite.server)
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if not (opts.runread.is_file() and os.access(opts.runread, os.X_OK)):
            raise Fatal(f"--runread {opts.runread} is not an executable file")
        suite.run()
    except Fatal as e:
        res.record("setup", False, str(e))
    except (AssertionError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        res.record("unexpected error", False, f"{type(e).__name__}: {e}")
    except (KeyboardInterrupt, SystemExit) as e:
        res.record("interrupted", False, type(e).__name__)
    finally:
        stop(suite.server)
        if res.failed and getattr(suite, "server_log", None) and suite.server_log.exists():
            print(f"--- runread serve log (tail) ---\n{tail(suite.server_log.read_bytes(), 3000)}\n---", flush=True)
        if opts.keep or (res.failed and any(tmp.iterdir())):
            print(f"temp dir kept: {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"({time.monotonic() - started:.1f}s)", flush=True)
    print(f"outside_clients: {res.passed} passed, {res.failed} failed", flush=True)
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
