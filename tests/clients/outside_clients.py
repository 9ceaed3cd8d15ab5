#!/usr/bin/env python3
"""End-to-end test of runread against two outside MCP clients.

    python3 tests/clients/outside_clients.py --runread target/debug/runread

1. Installs (once, into $RUNREAD_CLIENTS_CACHE, default ~/.cache/runread-clients) a venv
   with tests/clients/requirements.txt (the official Python SDK, mcp==2.3.0) and an npm
   prefix with node (npm package ``node``, pinned) and @modelcontextprotocol/inspector.
   Later runs reuse the cache after checking the installed versions; nothing here needs
   the network once the cache is filled.
2. Builds a throwaway runread home + workspace, places the ``sample`` and ``multi-run``
   Pi fixtures (only the header line's ``cwd`` changed), registers, ingests, grants one
   run of each to its own key, and starts ``runread serve`` on a free loopback port.
3. Python SDK: read_final_answer.py in ``--mode auto`` and ``--mode pinned`` with the
   server's default limit and 4, 1000, 8192, for both keys; the answer must equal the one
   computed here from the fixture file with plain json. A key that was never granted and
   a revoked key must fail without leaking any answer text.
4. MCP Inspector CLI: tools/list, list_granted_targets, read_final_answer followed
   cursor by cursor (limit 4096) and reassembled here, a cross-key refusal and a bad key.

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
HISTORY_READER = HERE / "read_history.py"
ARTIFACT_READER = HERE / "read_artifact.py"
REQUIREMENTS = HERE / "requirements.txt"

NODE_VERSION = "22.23.3"  # npm package `node` (a 22.x >= 22.19, the Inspector's engines floor)
INSPECTOR_VERSION = "2.12.0"
INSPECTOR_PKG = "@modelcontextprotocol/inspector"
INSPECTOR_ENTRY = Path("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")

SAMPLE_BYTES = 9554  # the sample fixture's long code-review answer
SDK_LIMITS: list[int | None] = [None, 4, 1000, 8192]
INSPECTOR_LIMIT = 4096
KEY_RE = re.compile(r"^[0-9a-f]{64}$")
BLOCK_SUFFIX = "\n</tool_result>"

# secrets-history (fixtures/pi/README.md): known secrets, what history must never show, and how it masks.
SECRETS = {"openai-test": "sk-runread-TEST-0123456789abcdef", "github-test": "ghp_RUNREADtestTOKEN000000000000"}
REDACTED = "[redacted]"
THINKING_MARK = "The user wants a configuration check"
TOOL_ARG_MARK = "cat config/settings.env"
HISTORY_LIMITS = [1, 2, 3, 7, 100]
ALL_FEATURES = "final_answer,history,aggregate,metadata,artifacts,status"
HISTORY_EVENT_MAX_BYTES = 8192  # runread_core::limits::HISTORY_EVENT_MAX_BYTES
ARTIFACT_BYTES = 8 * 1024 * 1024
ARTIFACT_CHUNK = 32768  # read_artifact's default (and largest) limit
ALL_TOOLS = sorted([
    "list_granted_targets", "read_final_answer", "get_run", "read_history", "read_work_state",
    "read_target_metadata", "list_artifacts", "read_artifact",
])
# the label of each tool's text block (runread: agent content is untrusted, its own projections medium)
TRUST_LABEL = {
    "read_final_answer": "untrusted", "read_history": "untrusted", "read_artifact": "untrusted",
    "list_granted_targets": "medium", "list_artifacts": "medium", "get_run": "medium",
    "read_work_state": "medium", "read_target_metadata": "medium",
}


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


def ensure_venv(cache: Path) -> tuple[Path, str]:
    venv = cache / "venv"
    py = venv / "bin" / "python"
    pins = pinned_requirements()
    desc = " ".join(f"{n}=={v}" for n, v in pins.items())
    if venv_ok(py, pins):
        return py, f"{desc} (cached in {venv})"
    t0 = time.monotonic()
    log = cache / "pip-install.log"
    with open(log, "wb") as out:
        r = subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], stdout=out, stderr=subprocess.STDOUT, timeout=300)
        if r.returncode == 0:
            r = subprocess.run(
                [str(py), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-r", str(REQUIREMENTS)],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=900,
            )
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
    def reader(self, key_file: Path, mode: str, limit: int | None, out: Path | None) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.py), str(READER), "--url", self.url, "--key-file", str(key_file), "--mode", mode, "--timeout", "30"]
        if limit is not None:
            cmd += ["--limit", str(limit)]
        if out is not None:
            cmd += ["--out", str(out)]
        return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)

    def sdk_read(self, grant: dict[str, Any], mode: str, limit: int | None) -> Callable[[], str]:
        run_id = grant["target"]["runId"]
        expected = self.answers[run_id]
        out = self.tmp / f"sdk-{run_id}-{mode}-{limit or 'default'}.txt"

        def go() -> str:
            t0 = time.monotonic()
            r = self.reader(grant["keyFile"], mode, limit, out)
            dt = time.monotonic() - t0
            ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
            lines = r.stdout.strip().splitlines()
            ensure(len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}")
            s = json.loads(lines[0])
            want_sha = hashlib.sha256(expected).hexdigest()
            ensure(s.get("ok") is True, f"ok is {s.get('ok')!r}")
            ensure(s.get("protocolVersion") == "2026-07-28", f"protocolVersion {s.get('protocolVersion')!r}")
            ensure(s.get("target") == grant["target"], f"read target {s.get('target')} != granted {grant['target']}")
            ensure(s.get("sha256") == want_sha, f"printed sha256 {s.get('sha256')} != fixture's {want_sha}")
            ensure(s.get("totalBytes") == len(expected), f"totalBytes {s.get('totalBytes')} != {len(expected)}")
            got = out.read_bytes()
            ensure(got == expected, f"--out file ({len(got)} bytes) differs from the fixture's answer ({len(expected)} bytes)")
            chunks = s.get("chunks")
            if limit is not None:
                ensure(
                    isinstance(chunks, int) and math.ceil(len(expected) / limit) <= chunks <= len(expected),
                    f"{chunks} chunks is impossible for {len(expected)} bytes at limit {limit}",
                )
            return f"{chunks} chunks, {len(got)} bytes, sha256 {want_sha[:12]}… ({dt:.1f}s)"

        return go

    def sdk_refused(self, key_file: Path, mode: str, must_contain: list[str]) -> Callable[[], str]:
        def go() -> str:
            r = self.reader(key_file, mode, None, None)
            ensure(r.returncode == 1, f"exit {r.returncode}, expected 1 (stdout {tail(r.stdout, 300)!r})")
            ensure(r.stdout.strip() == "", f"stdout not empty: {tail(r.stdout, 300)!r}")
            for needle in must_contain:
                ensure(needle in r.stderr, f"stderr lacks {needle!r}: {tail(r.stderr, 600)}")
            leak = self.leaked(r.stdout + r.stderr)
            ensure(leak is None, f"refusal output contains {leak}")
            return tail(r.stderr, 300)

        return go

    def sdk_probe(self, key_file: Path, target: dict[str, Any]) -> dict[str, Any]:
        """One tools/call read_final_answer through the SDK (pinned), reporting how it was refused."""
        probe = self.tmp / "sdk_probe.py"
        probe.write_text(SDK_PROBE)
        r = subprocess.run(
            [str(self.py), str(probe), self.url, str(key_file), json.dumps(target)],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        )
        ensure(r.returncode == 0 and r.stdout.strip(), f"probe exited {r.returncode}: {tail(r.stderr, 600)}")
        leak = self.leaked(r.stdout + r.stderr)
        ensure(leak is None, f"probe output contains {leak}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    # ---- MCP Inspector CLI
    def inspector(self, key: str, *args: str) -> tuple[int, Any, str, str]:
        cmd = [
            str(self.node), str(self.inspector_entry), "--cli", self.url,
            "--protocol-era", "modern", "--stored-auth-only",
            "--header", f"x-runread-key: {key}", "--format", "json", *args,
        ]
        home = self.tmp / "inspector-home"
        home.mkdir(exist_ok=True)
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"))
        env.pop("MCP_CATALOG_PATH", None)
        self.inspector_calls += 1
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120)
        parsed = None
        with contextlib.suppress(ValueError):
            parsed = json.loads(r.stdout)
        return r.returncode, parsed, r.stdout, r.stderr

    def insp_tools_list(self, key: str) -> str:
        rc, out, raw, err = self.inspector(key, "--method", "tools/list")
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        names = [t.get("name") for t in out["result"].get("tools", [])]
        ensure(sorted(names) == ["list_granted_targets", "read_final_answer"], f"tools/list names {names}")
        return f"tools {names}"

    def insp_list_targets(self, grant: dict[str, Any]) -> str:
        rc, out, raw, err = self.inspector(grant["key"], "--method", "tools/call", "--tool-name", "list_granted_targets")
        ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"exit {rc}: {tail(raw + err, 600)}")
        result = out["result"]
        ensure(result.get("isError") is False, f"isError {result.get('isError')!r}")
        sc = result.get("structuredContent") or {}
        targets = sc.get("targets")
        ensure(isinstance(targets, list) and len(targets) == 1, f"expected exactly the one granted target, got {targets}")
        ensure(targets[0].get("target") == grant["target"], f"listed {targets[0].get('target')} != granted {grant['target']}")
        ensure("final_answer" in targets[0].get("features", []), f"features {targets[0].get('features')}")
        ensure(sc.get("trust") == "untrusted_data" and sc.get("instructions") is False, f"trust fields {sc}")
        payload = parse_block(result, "list_granted_targets", "medium")
        ensure(payload == sc, "text block JSON differs from structuredContent")
        return f"target runId {grant['target']['runId']}, features {targets[0].get('features')}"

    def insp_read_all(self, grant: dict[str, Any]) -> str:
        target = grant["target"]
        expected = self.answers[target["runId"]]
        max_calls = math.ceil(len(expected) / INSPECTOR_LIMIT) + 2
        args: dict[str, Any] = {"target": target, "limit": INSPECTOR_LIMIT}
        parts: list[bytes] = []
        server_sha = None
        for call in range(max_calls):
            rc, out, raw, err = self.inspector(
                grant["key"], "--method", "tools/call", "--tool-name", "read_final_answer",
                "--tool-args-json", json.dumps(args),
            )
            where = f"call {call}"
            ensure(rc == 0 and isinstance(out, dict) and "result" in out, f"{where}: exit {rc}: {tail(raw + err, 600)}")
            result = out["result"]
            ensure(result.get("isError") is False, f"{where}: isError {result.get('isError')!r}")
            sc = result.get("structuredContent") or {}
            ensure(parse_block(result, "read_final_answer", "untrusted") == sc, f"{where}: text block JSON != structuredContent")
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
        return f"{len(parts)} calls, {len(answer)} bytes, sha256 {want[:12]}…"

    def insp_cross_key(self, key: str, other_target: dict[str, Any]) -> str:
        rc, out, raw, err = self.inspector(
            key, "--method", "tools/call", "--tool-name", "read_final_answer",
            "--tool-args-json", json.dumps({"target": other_target, "limit": INSPECTOR_LIMIT}),
        )
        ensure(rc != 0, "exit 0 for a target this key was not granted")
        ensure(isinstance(out, dict) and "result" in out, f"exit {rc}, no result: {tail(raw + err, 600)}")
        refusal = parse_refusal(out["result"])
        ensure(refusal.get("code") == "not_granted", f"refusal code {refusal.get('code')!r}")
        leak = self.leaked(raw + err)
        ensure(leak is None, f"refusal contains {leak}")
        return f"exit {rc}, isError with {refusal}"

    def insp_bad_key(self, key: str, target: dict[str, Any]) -> str:
        rc, out, raw, err = self.inspector(
            key, "--method", "tools/call", "--tool-name", "read_final_answer",
            "--tool-args-json", json.dumps({"target": target, "limit": INSPECTOR_LIMIT}),
        )
        combined = raw + err
        ensure(rc == 3, f"exit {rc}, expected 3 (auth_required): {tail(combined, 600)}")
        ensure("auth_required" in combined and "403" in combined, f"no auth_required/403 in output: {tail(combined, 600)}")
        leak = self.leaked(combined)
        ensure(leak is None, f"refusal contains {leak}")
        return f"exit 3, {tail(raw or err, 200)}"

    def insp_revoked(self, key: str, target: dict[str, Any]) -> str:
        rc, out, raw, err = self.inspector(
            key, "--method", "tools/call", "--tool-name", "read_final_answer",
            "--tool-args-json", json.dumps({"target": target, "limit": INSPECTOR_LIMIT}),
        )
        combined = raw + err
        ensure(rc != 0, f"exit 0 with a revoked key: {tail(combined, 300)}")
        leak = self.leaked(combined)
        ensure(leak is None, f"refusal contains {leak}")
        return f"exit {rc}, {tail(err or raw, 200)}"

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
            cwd = ws / name
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
            return g

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
            self.server = subprocess.Popen(
                [str(opts.runread), "--home", str(home), "serve", "--listen", f"127.0.0.1:{port}"],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=rr.env, start_new_session=True,
            )
        self.server_log = log
        wait_for_port(port, self.server, log)
        res.record("setup: runread serve", True, self.url)

        # 4. Python SDK reads (two at a time; results printed in order)
        jobs = [
            (f"sdk {mode} limit={limit or 'default'} {label} ({g['target']['runId']})", self.sdk_read(g, mode, limit))
            for label, g in (("sample", g_sample), ("multi-run", g_multi))
            for mode in ("auto", "pinned")
            for limit in SDK_LIMITS
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
        for mode in ("auto", "pinned"):
            res.check(f"sdk {mode} wrong key refused", self.sdk_refused(wrong_file, mode, ["invalid_key", "HTTP 403"]))

        # 5. MCP Inspector CLI
        res.check("inspector tools/list", lambda: self.insp_tools_list(g_sample["key"]))
        for label, g in (("sample", g_sample), ("multi-run", g_multi)):
            res.check(f"inspector list_granted_targets {label}", lambda g=g: self.insp_list_targets(g))
            res.check(f"inspector read_final_answer cursors {label}", lambda g=g: self.insp_read_all(g))
        res.check("inspector key cannot read another key's target",
                  lambda: self.insp_cross_key(g_sample["key"], g_multi["target"]))
        res.check("inspector wrong key refused", lambda: self.insp_bad_key(wrong, g_sample["target"]))

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
        for mode in ("auto", "pinned"):
            res.check(f"sdk {mode} revoked key refused", self.sdk_refused(g_rev["keyFile"], mode, []))

        def check_revoked_probe() -> str:
            p = self.sdk_probe(g_rev["keyFile"], g_rev["target"])
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
            return f"HTTP {p.get('httpStatuses')}, tools/call isError {texts[0]}"

        res.check("sdk pinned revoked key: read_final_answer refusal code", check_revoked_probe)
        res.check("inspector revoked key refused", lambda: self.insp_revoked(g_rev["key"], g_rev["target"]))

        def check_server_alive() -> str:
            ensure(self.server.poll() is None, f"runread serve exited {self.server.returncode}: {tail(log.read_bytes())}")
            return f"{self.inspector_calls} Inspector invocations in all"

        # 7.-10. secrets-history: history, tools per grant, artifacts, work state / metadata / get_run
        self.history_checks()
        self.tools_checks()
        self.artifact_checks()
        self.state_checks()

        def check_log() -> str:
            leak = secret_leak(log.read_text(encoding="utf-8", errors="replace"))
            ensure(leak is None, f"serve.log contains {leak}")
            return f"{log.stat().st_size} bytes, no known secret"

        res.check("serve.log holds no known secret", check_log)
        res.check("runread serve still running", check_server_alive)


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
    return json.loads(text[len(prefix) : -len(BLOCK_SUFFIX)])


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
    url, key_file, target = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    key = open(key_file).read().strip()
    statuses = []
    async def hook(r):
        statuses.append(r.status_code)
    http = httpx2.AsyncClient(headers={"x-runread-key": key}, event_hooks={"response": [hook]})
    out = {}
    try:
        async with http:
            transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
            async with Client(transport, mode="2026-07-28",
                              client_info=Implementation(name="runread-outside-probe", version="1")) as client:
                r = await client.call_tool("read_final_answer", {"target": target})
                out = {"form": "result", "isError": r.is_error,
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
