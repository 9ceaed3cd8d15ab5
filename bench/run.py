#!/usr/bin/env python3
"""runread's benchmark run (what `scripts/bench` executes): builds release binaries, installs the
peers (cached under ~/.cache/runread-bench), measures everything side by side on loopback with
A and B interleaved, and writes BENCHMARKS.md. Not part of the test suite; nothing asserts a time.

    scripts/bench [--quick] [--only load,artifact,ingest,redact,footprint,gate,home,wake,snapshot] [--out FILE]

Items (issues 8 and 17):
  load       read_final_answer (granted, 4 KiB chunk, durable gate) through `runread serve` with 4
             keep-alive connections (wrk + Lua), against a stock rmcp echo server, the TypeScript SDK
             v2 and the Python SDK's MCPServer (FastMCP) echoing the same result bytes.
  artifact   an 8 MiB artifact through 32 KiB read_artifact chunks, every hash verified, against a
             plain HTTP GET of the same file from a static server.
  ingest     a large real Pi session (made by the harness) ingested into a fresh durable store,
             against Pi's own SessionManager loading it; and a large real session of each agent
             (Pi, Claude Code, Codex; made by the harness) against a bare pass that only validates
             every line as JSON (`runread-bench json-pass`).
  redact     Redactor::mask with 1,000 known secrets, against ripgrep (`rg -F -f`) on the same
             text and secrets.
  footprint  time from spawn to the first answered server/discover, and idle RSS.
  gate       `runread-bench gate`: durable start record vs in-memory store.
  home       a synthetic home of >= 2,000 real sessions, >= 1 GB (bench/home/make_home.py): first
             ingest vs json-pass, re-ingest vs stat-pass, `runread runs --json --limit 50`
             pages vs a SELECT of the same page, and `runread watch`'s memory over the first
             ingest.
  wake       `runread-bench wake`: wait_for_run's wake-up latency (commit -> answer) by the
             change feed, NOTIFY and the re-check, on SQLite and PostgreSQL.
  snapshot   `runread-bench snapshot`: a read from a shared run's snapshot (its file gone) beside
             the same read from the file, through the whole service.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import socket
import statistics
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
CACHE = Path(os.environ.get("RUNREAD_BENCH_CACHE", Path.home() / ".cache" / "runread-bench"))
HARNESS = Path(os.environ.get("RUNREAD_HARNESS_DIR", REPO.parent / "shared" / "harness"))
PI_VERSION = "0.73.1"
PI_DIST = Path(os.environ.get(
    "PI_DIST",
    Path.home() / ".cache" / "runread-harness" / f"pi-{PI_VERSION}" / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist",
))
NODE_FALLBACK = "22.23.3"  # npm package `node`, used only when the machine's node is older than 20
PROTOCOL = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "runread-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
CHUNK = 4096
# Issue 58's floor for idle memory: runread's idle RSS over the rmcp echo's after round two.
ROUND_TWO_RSS_RATIO = 1.61
ARTIFACT_BYTES = 8 * 1024 * 1024
ITEMS = ["load", "artifact", "ingest", "redact", "footprint", "gate", "home", "wake", "snapshot"]
AGENTS = ("pi", "claude", "codex")
AGENT_NAMES = {"pi": "Pi", "claude": "Claude Code", "codex": "Codex"}
# Two cores: every server gets CPU 1, every load generator or client CPU 0 (`taskset`).
SERVER_CPU, CLIENT_CPU = "1", "0"
T0 = time.monotonic()
# A whole run's raw samples, kept beside BENCHMARKS.md: what `--compare` reads by default.
LAST_RUN = BENCH / "last-run.json"
# How long `serve --watch` over the 2,000-session home idles before its RSS is read: its watcher's
# first pass (every file, nothing new) ends well within it, and its idle CPU, counted from 1 s
# after the first answer, spans two of its rescans (every 5 s).
WATCH_IDLE_MS = 11000
# The most CPU an idle `serve --watch` over the 2,000-session home may use, in % of one core: a
# daemon that runs all day is judged by what it costs while nothing happens (its rescan only).
WATCH_IDLE_CPU_MAX_PERCENT = 1.0
# The exit status of `--compare` when a figure moved the wrong way beyond its noise.
WORSE_EXIT = 3


def log(msg: str) -> None:
    print(f"[bench {time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("stdin", subprocess.DEVNULL)
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        raise SystemExit(f"command failed ({r.returncode}): {' '.join(map(str, cmd))}\n{(r.stderr or '')[-3000:]}{(r.stdout or '')[-2000:]}")
    return r


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def pinned(cpu: str, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *cmd] if shutil.which("taskset") and os.cpu_count() and os.cpu_count() >= 2 else cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, logf: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited {proc.returncode}: {logf.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise SystemExit(f"server on {port} did not come up: {logf.read_text()[-2000:]}")


class Servers:
    """Processes this run started; each stopped by its own handle."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, cmd: list[str], port: int, env: dict[str, str] | None = None) -> None:
        logf = self.tmp / f"{name}.log"
        with open(logf, "wb") as f:
            p = subprocess.Popen(pinned(SERVER_CPU, cmd), stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, start_new_session=True)
        self.procs[name] = p
        wait_port(port, p, logf)

    def stop(self, name: str) -> None:
        p = self.procs.pop(name, None)
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)


def http_post(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("POST", "/mcp", body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def mcp_headers(method: str, name: str | None, key: str | None) -> dict[str, str]:
    h = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": method,
    }
    if name:
        h["Mcp-Name"] = name
    if key:
        h["x-runread-key"] = key
    return h


def tools_call(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments, "_meta": META}}, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- installs


def ensure_apt(command: str, package: str) -> None:
    """Installs Debian's `package` when `command` is not on PATH (updating the index if needed)."""
    if shutil.which(command):
        return
    log(f"installing {package} (apt)")
    r = subprocess.run(["apt-get", "install", "-y", package], capture_output=True, text=True)
    if r.returncode != 0:
        run(["apt-get", "update"])
        run(["apt-get", "install", "-y", package])


def ensure_wrk() -> str:
    ensure_apt("wrk", "wrk")
    out = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    return (out.stdout + out.stderr).splitlines()[0].strip()


def ensure_rg() -> tuple[str, str]:
    ensure_apt("rg", "ripgrep")
    rg = shutil.which("rg") or "rg"
    return rg, run([rg, "--version"]).stdout.splitlines()[0].strip()


def node_version(node: str) -> tuple[int, ...]:
    out = run([node, "--version"]).stdout.strip().lstrip("v")
    return tuple(int(x) for x in out.split("."))


def ensure_node() -> str:
    node = shutil.which("node")
    if node and node_version(node) >= (20,):
        return node
    prefix = CACHE / "node"
    local = prefix / "node_modules" / ".bin" / "node"
    if not local.exists():
        log(f"installing node@{NODE_FALLBACK} (npm)")
        prefix.mkdir(parents=True, exist_ok=True)
        run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--save-exact", f"node@{NODE_FALLBACK}"])
    return str(local)


def ensure_npm_peers() -> Path:
    prefix = CACHE / "npm"
    prefix.mkdir(parents=True, exist_ok=True)
    want = json.loads((BENCH / "package.json").read_text())["dependencies"]

    def have() -> dict[str, str | None]:
        got = {}
        for name in want:
            pj = prefix / "node_modules" / name / "package.json"
            got[name] = json.loads(pj.read_text())["version"] if pj.exists() else None
        return got

    if have() != want:
        log("installing the TypeScript SDK peer (npm ci, pinned by bench/package-lock.json)")
        shutil.copyfile(BENCH / "package.json", prefix / "package.json")
        lock = BENCH / "package-lock.json"
        if lock.exists():
            shutil.copyfile(lock, prefix / "package-lock.json")
            run(["npm", "ci", "--no-audit", "--no-fund"], cwd=prefix)
        else:
            run(["npm", "install", "--no-audit", "--no-fund"], cwd=prefix)
        if have() != want:
            raise SystemExit(f"npm peers: have {have()}, want {want}")
    return prefix / "node_modules"


def ensure_venv(name: str = "venv", requirements: str = "requirements.txt") -> Path:
    venv = CACHE / name
    py = venv / "bin" / "python"
    pins = {}
    for line in (BENCH / requirements).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            n, _, v = line.partition("==")
            pins[n.strip()] = v.strip()
    probe = "import importlib.metadata as m, json, sys; print(json.dumps({n: m.version(n) for n in json.loads(sys.argv[1])}))"

    def ok() -> bool:
        if not py.exists():
            return False
        r = subprocess.run([str(py), "-c", probe, json.dumps(list(pins))], capture_output=True, text=True)
        return r.returncode == 0 and json.loads(r.stdout) == pins

    if not ok():
        log(f"installing a Python peer (venv {venv} + pip, pinned by bench/{requirements})")
        run([sys.executable, "-m", "venv", "--clear", str(venv)])
        run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-r", str(BENCH / requirements)])
        if not ok():
            raise SystemExit("venv does not have the pinned versions after pip install")
    return py


def ensure_pi() -> None:
    if (PI_DIST / "core" / "session-manager.js").exists():
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location("pi_scenario", HARNESS / "pi-scenario.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"harness not found at {HARNESS} (set RUNREAD_HARNESS_DIR)")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.ensure_pi()


def build() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    log(f"cargo build --release -p runread -p runread-bench (target {target})")
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "runread", "-p", "runread-bench"], cwd=REPO, check=True,
                   stdin=subprocess.DEVNULL)
    return target / "release"


# --------------------------------------------------------------------------- runread home


class Home:
    """A runread home prepared with the CLI, as an owner would: workspace add, ingest, grant."""

    def __init__(self, runread: Path, tmp: Path) -> None:
        self.runread = runread
        self.home = tmp / "home"
        self.home.mkdir(mode=0o700)
        self.ws = (tmp / "workspace").resolve()
        self.ws.mkdir()
        pi = tmp / "pi"
        src = sorted((REPO / "fixtures" / "pi" / "sample" / "sessions").glob("*.jsonl"))[0]
        data = src.read_bytes()
        first, nl, rest = data.partition(b"\n")
        header = json.loads(first)
        header["cwd"] = str(self.ws)
        out = pi / "sessions" / src.name
        out.parent.mkdir(parents=True)
        out.write_bytes(json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode() + nl + rest)
        past = time.time() - 120
        os.utime(out, (past, past))
        self.cli("workspace", "add", str(self.ws))
        self.cli("ingest", "--pi", str(pi))
        runs = json.loads(self.cli("runs", "--json"))
        run_ = max((r for r in runs if r.get("answerState") == "available"), key=lambda r: r.get("finalBytes") or 0)
        self.final_bytes = run_["finalBytes"]
        t = run_["target"]
        g = json.loads(self.cli("grant", "--run", t["runId"], "--session", t["sessionId"], "--features",
                                "final_answer,artifacts", "--expires", "2h", "--to", "bench", "--json"))
        self.key = g["key"]
        self.target = g["target"]
        self.key_file = tmp / "key"
        self.key_file.write_text(self.key + "\n")
        self.key_file.chmod(0o600)
        # The 8 MiB artifact: random bytes, registered by the owner's CLI.
        art = self.ws / "out" / "bench-artifact.bin"
        art.parent.mkdir()
        art.write_bytes(os.urandom(ARTIFACT_BYTES))
        self.artifact = art
        self.artifact_sha = hashlib.sha256(art.read_bytes()).hexdigest()
        self.cli("artifact", "add", "--run", t["runId"], "--session", t["sessionId"], "out/bench-artifact.bin",
                 "--name", "bench-artifact.bin", "--mime", "application/octet-stream")

    def cli(self, *args: str) -> str:
        return run([str(self.runread), "--home", str(self.home), *args]).stdout

    def serve_cmd(self, port: int) -> list[str]:
        # The load items are one key calling as fast as it can: the bound on calls per reader
        # (1,200 a minute by default) is lifted, or it would be what is measured.
        return [str(self.runread), "--home", str(self.home), "serve", "--listen", f"127.0.0.1:{port}",
                "--calls-per-minute", "1000000"]


# --------------------------------------------------------------------------- items


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of every thread of `pid` so far (from /proc)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def wrk_once(port: int, body: Path, headers: Path, mark: str, seconds: int) -> dict[str, float]:
    env = dict(os.environ, BENCH_BODY=str(body), BENCH_HEADERS=str(headers), BENCH_MARK=mark)
    r = run(pinned(CLIENT_CPU, ["wrk", "-t1", "-c4", f"-d{seconds}s", "--timeout", "10s", "-s", str(BENCH / "wrk" / "mcp.lua"),
                                f"http://127.0.0.1:{port}/mcp"]), env=env)
    out = r.stdout
    vals = dict(re.findall(r"^(bad|p50_us|p99_us|requests|duration_us) (\d+)$", out, re.M))
    errors = re.search(r"Socket errors: (.*)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    rps = int(vals["requests"]) / (int(vals["duration_us"]) / 1e6)
    return {"rps": rps, "p50_ms": int(vals["p50_us"]) / 1e3, "p99_ms": int(vals["p99_us"]) / 1e3,
            "bad": int(vals["bad"]) + (int(non2xx.group(1)) if non2xx else 0), "socket_errors": errors.group(1) if errors else "",
            "requests": int(vals["requests"])}


def capture(port: int, home: Home, tmp: Path) -> tuple[bytes, dict[str, str], dict[str, Any], str]:
    """One exact working read_final_answer request against `runread serve`; its result is what every
    echo peer returns (written to tmp/result.json)."""
    rr_body = tools_call("read_final_answer", {"target": home.target, "limit": CHUNK})
    rr_headers = mcp_headers("tools/call", "read_final_answer", home.key)
    status, raw = http_post(port, rr_body, rr_headers)
    resp = json.loads(raw)
    result = resp.get("result") or {}
    sc = result.get("structuredContent") or {}
    # A chunk ends on a UTF-8 character boundary: up to 3 bytes short of the limit.
    if status != 200 or sc.get("readable") is not True or not (CHUNK - 3 <= (sc.get("bytes") or 0) <= CHUNK):
        raise SystemExit(f"read_final_answer did not answer a readable 4 KiB chunk: {status} {raw[:500]!r}")
    (tmp / "result.json").write_text(json.dumps(result))
    return rr_body, rr_headers, result, sc["sha256"]


def store_copy(home: "Home", dest: Path) -> Path:
    """A consistent copy of the home's store (SQLite's online backup, while `runread serve` runs): the
    durable echo writes into it, so its tables, indexes and records are the ones runread writes."""
    dest.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{home.home / 'runread.db'}?mode=ro", uri=True)
    dst = sqlite3.connect(dest)
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    return dest


def durable_echo_cmd(bins: Path, port: int, store: Path, results: list[str], tool: str) -> list[str]:
    return [str(bins / "runread-bench"), "durable-echo-server", "--listen", f"127.0.0.1:{port}", *results, "--store", str(store),
            "--as", tool]


def item_load(ctx: dict[str, Any], servers: Servers, home: Home, bins: Path, node: str, node_modules: Path, py: Path, fmpy: Path,
              rounds: int, seconds: int) -> dict[str, Any]:
    tmp = servers.tmp
    port = free_port()
    servers.start("runread", home.serve_cmd(port), port)
    rr_body, rr_headers, result, mark = capture(port, home, tmp)
    payload = tmp / "result.json"
    durable_store = store_copy(home, tmp / "durable-echo.db")
    peers = {
        "rmcp-echo": lambda p: [str(bins / "runread-bench"), "echo-server", "--listen", f"127.0.0.1:{p}", "--result", str(payload)],
        "durable-echo": lambda p: durable_echo_cmd(bins, p, durable_store, ["--result", str(payload)], "read_final_answer"),
        "ts-sdk": lambda p: [node, str(BENCH / "ts-echo" / "server.mjs"), str(p), str(payload)],
        "python-sdk": lambda p: [str(py), str(BENCH / "py-echo" / "server.py"), str(p), str(payload)],
        "fastmcp": lambda p: [str(fmpy), str(BENCH / "py-echo" / "fastmcp_server.py"), str(p), str(payload)],
    }
    env = dict(os.environ, BENCH_NODE_MODULES=str(node_modules))
    targets = {"runread": (port, rr_body, rr_headers)}
    for name, cmd in peers.items():
        p = free_port()
        servers.start(name, cmd(p), p, env=env)
        body = tools_call("echo", {"target": home.target, "limit": CHUNK})
        headers = mcp_headers("tools/call", "echo", None)
        st, out = http_post(p, body, headers)
        got = json.loads(out).get("result") or {}
        if st != 200 or got.get("content") != result["content"] or got.get("structuredContent") != result["structuredContent"]:
            raise SystemExit(f"{name} did not echo the same result: {st} {out[:400]!r}")
        targets[name] = (p, body, headers)
    ctx["load_response_bytes"] = {n: len(http_post(p, b, h)[1]) for n, (p, b, h) in targets.items()}
    files = {}
    for name, (p, body, headers) in targets.items():
        bf, hf = tmp / f"{name}.body", tmp / f"{name}.headers"
        bf.write_bytes(body)
        hf.write_text("".join(f"{k}: {v}\n" for k, v in headers.items()))
        files[name] = (p, bf, hf)
    log("load: warm-up")
    for name, (p, bf, hf) in files.items():
        wrk_once(p, bf, hf, mark, 2)
    samples: dict[str, list[dict[str, float]]] = {n: [] for n in files}
    names = list(files)
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            p, bf, hf = files[name]
            cpu0 = process_cpu_s(servers.procs[name].pid)
            s = wrk_once(p, bf, hf, mark, seconds)
            s["cpu_us_per_req"] = (process_cpu_s(servers.procs[name].pid) - cpu0) / max(s["requests"], 1) * 1e6
            samples[name].append(s)
            log(f"load round {r + 1}/{rounds} {name}: {s['rps']:.0f} req/s p50 {s['p50_ms']:.2f} ms p99 {s['p99_ms']:.2f} ms bad {s['bad']}")
    for name in list(files):
        servers.stop(name)
    return {"samples": samples, "mark": mark}


def item_artifact(servers: Servers, home: Home, bins: Path, rounds: int) -> dict[str, Any]:
    port, sport = free_port(), free_port()
    servers.start("runread-art", home.serve_cmd(port), port)
    servers.start("static", [str(bins / "runread-bench"), "static-server", "--listen", f"127.0.0.1:{sport}", "--file", str(home.artifact)], sport)
    # The durable echo answers runread's own results for the same calls, each with a durable start record and receipt.
    results = servers.tmp / "artifact-results.json"
    run(pinned(CLIENT_CPU, [str(bins / "runread-bench"), "artifact-record", "--url", f"http://127.0.0.1:{port}/mcp", "--key-file",
                            str(home.key_file), "--out", str(results)]))
    eport = free_port()
    store = store_copy(home, servers.tmp / "durable-echo-art.db")
    servers.start("durable-echo-art", durable_echo_cmd(bins, eport, store, ["--results", str(results)], "read_artifact"), eport)
    r = run(pinned(CLIENT_CPU, [str(bins / "runread-bench"), "artifact", "--url", f"http://127.0.0.1:{port}/mcp", "--key-file",
                                str(home.key_file), "--static-url", f"http://127.0.0.1:{sport}/file", "--sha256", home.artifact_sha,
                                "--rounds", str(rounds), "--echo-url", f"http://127.0.0.1:{eport}/mcp"]))
    servers.stop("runread-art")
    servers.stop("static")
    servers.stop("durable-echo-art")
    return json.loads(r.stdout.strip().splitlines()[-1])


def large_session(agent: str) -> Path:
    """The agent's large real session, made once by the real agent through the harness (cached)."""
    r = subprocess.run([sys.executable, str(BENCH / agent / "make_session.py"), "--harness", str(HARNESS), "--cache", str(CACHE)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"could not make the large {AGENT_NAMES[agent]} session: {r.stderr[-2000:]}")
    return Path(r.stdout.strip().splitlines()[-1])


def json_pass_s(bins: Path, args: list[str], repeats: int) -> tuple[list[float], dict[str, Any]]:
    """`runread-bench json-pass` in one process: in-process seconds of each pass after the first."""
    out = json.loads(run([str(bins / "runread-bench"), "json-pass", *args, "--repeats", str(repeats + 1)]).stdout)
    return out["seconds"][1:], out


def item_ingest(bins: Path, node: str, rounds: int) -> dict[str, Any]:
    sessions = {a: large_session(a) for a in AGENTS}
    session = sessions["pi"]
    ensure_pi()
    rr, pi_open, pi_ctx = [], [], []
    info: dict[str, Any] = {}
    pi_info: dict[str, Any] = {}
    for i in range(rounds):
        a = json.loads(run([str(bins / "runread-bench"), "ingest", "--session", str(session), "--repeats", "3", "--warmup", "1"]).stdout)
        b = json.loads(run([node, str(BENCH / "pi" / "pi-load.mjs"), str(session), "3", "1"], env=dict(os.environ, PI_DIST=str(PI_DIST))).stdout)
        rr.append(median(a["seconds"]))
        pi_open.append(median(b["open_s"]))
        pi_ctx.append(median(b["open_context_s"]))
        info, pi_info = a, b
        log(f"ingest round {i + 1}/{rounds}: runread {rr[-1] * 1e3:.0f} ms, Pi open {pi_open[-1] * 1e3:.0f} ms, open+context {pi_ctx[-1] * 1e3:.0f} ms")
    size = session.stat().st_size
    agents: dict[str, Any] = {}
    for agent, path in sessions.items():
        ing, ing_cpu, js, jsha = [], [], [], []
        a_info: dict[str, Any] = {}
        j_info: dict[str, Any] = {}
        sides = ["runread", "json", "json+sha256"]
        for i in range(rounds):
            for side in sides[i % 3:] + sides[: i % 3]:
                if side == "runread":
                    a_info = json.loads(run([str(bins / "runread-bench"), "ingest", "--agent", agent, "--session", str(path),
                                             "--repeats", "3", "--warmup", "1"]).stdout)
                    ing.append(median(a_info["seconds"]))
                    ing_cpu.append(median(a_info.get("cpu_seconds") or [0.0]))
                elif side == "json":
                    secs, j_info = json_pass_s(bins, ["--file", str(path)], 3)
                    js.append(median(secs))
                else:
                    secs, _ = json_pass_s(bins, ["--file", str(path), "--sha256"], 3)
                    jsha.append(median(secs))
            log(f"ingest {agent} round {i + 1}/{rounds}: runread {ing[-1] * 1e3:.0f} ms (CPU {ing_cpu[-1] * 1e3:.0f} ms), json-pass {js[-1] * 1e3:.0f} ms, "
                f"json-pass + SHA-256 {jsha[-1] * 1e3:.0f} ms")
        agents[agent] = {"session": str(path), "bytes": path.stat().st_size, "lines": j_info["lines"], "invalid_lines": j_info["invalid_lines"],
                         "runs": a_info["runs"], "runread_s": ing, "runread_cpu_s": ing_cpu, "json_s": js, "json_sha_s": jsha}
    return {"session": str(session), "bytes": size, "entries": info["entries"], "runs": info["runs"], "pi_entries": pi_info["entries"],
            "pi_messages": pi_info["messages"], "runread_s": rr, "pi_open_s": pi_open, "pi_context_s": pi_ctx, "agents": agents}


def item_redact(bins: Path, tmp: Path, rg: str, quick: bool) -> dict[str, Any]:
    r = run(pinned(CLIENT_CPU, [str(bins / "runread-bench"), "redact", "--secrets", "1000", "--mib", "32" if quick else "64",
                                "--repeats", "3" if quick else "7", "--write-dir", str(tmp / "redact"), "--rg", rg]))
    out = json.loads(r.stdout)
    shutil.rmtree(tmp / "redact", ignore_errors=True)
    return out


def item_footprint(tmp: Path, home: Home, bins: Path, node: str, node_modules: Path, py: Path, fmpy: Path, rounds: int) -> dict[str, Any]:
    payload = tmp / "result.json"
    cmds = {
        "runread": lambda p: home.serve_cmd(p),
        "rmcp-echo": lambda p: [str(bins / "runread-bench"), "echo-server", "--listen", f"127.0.0.1:{p}", "--result", str(payload)],
        "ts-sdk": lambda p: [node, str(BENCH / "ts-echo" / "server.mjs"), str(p), str(payload)],
        "python-sdk": lambda p: [str(py), str(BENCH / "py-echo" / "server.py"), str(p), str(payload)],
        "fastmcp": lambda p: [str(fmpy), str(BENCH / "py-echo" / "fastmcp_server.py"), str(p), str(payload)],
    }
    env = dict(os.environ, BENCH_NODE_MODULES=str(node_modules))
    out: dict[str, list[dict[str, float]]] = {n: [] for n in cmds}
    names = list(cmds)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            p = free_port()
            res = run([str(bins / "runread-bench"), "ready", "--port", str(p), "--key", home.key, "--idle-ms", "1000", "--",
                       *pinned(SERVER_CPU, cmds[name](p))], env=env)
            out[name].append(json.loads(res.stdout))
            log(f"footprint round {r + 1}/{rounds} {name}: ready {out[name][-1]['ready_ms']:.1f} ms, RSS {out[name][-1]['rss_kib'] / 1024:.1f} MiB")
    return out


def link_order_coverage(runread: Path) -> dict[str, int]:
    """How many of the functions crates/runread/link/serve.order lists the measured binary holds:
    the list lays out what `serve` runs (crates/runread/build.rs); names it no longer finds are
    laid out anywhere, and their code is resident by the page again."""
    listed = (REPO / "crates" / "runread" / "link" / "serve.order").read_text().split()
    nm = subprocess.run(["nm", "--defined-only", str(runread)], capture_output=True, text=True).stdout
    names = {p[2] for p in (line.split() for line in nm.splitlines()) if len(p) == 3}
    return {"listed": len(listed), "found": sum(1 for n in listed if n in names)}


def item_gate(bins: Path, quick: bool) -> dict[str, Any]:
    args = ["--calls", "500", "--rounds", "3"] if quick else ["--calls", "2000", "--rounds", "5"]
    r = run([str(bins / "runread-bench"), "gate", *args])
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\| (\d+) \| (\d+) \| (\d+) \|", line)
        if m:
            rows[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return {"text": r.stdout, "rows": rows, "args": args, "allocs": allocations_per_call(bins)}


def allocations_per_call(bins: Path) -> dict[str, float]:
    """Heap allocations (blocks and bytes) per `read_final_answer` call through the service, counted by
    valgrind's DHAT (a counting allocator in place of the program's): `runread-bench gate` run with two call
    counts, the difference over the difference in calls, so setup and warm-up cancel out."""
    ensure_apt("valgrind", "valgrind")
    totals = {}
    calls = (100, 300)
    with tempfile.TemporaryDirectory(prefix="runread-dhat-") as d:
        for n in calls:
            out = Path(d) / f"dhat-{n}.json"
            r = run(["valgrind", "--tool=dhat", f"--dhat-out-file={out}", str(bins / "runread-bench"), "gate", "--calls", str(n),
                     "--rounds", "1"])
            m = re.search(r"Total:\s+([\d,]+) bytes in ([\d,]+) blocks", r.stderr)
            if not m:
                raise SystemExit(f"dhat said no totals: {r.stderr[-400:]}")
            totals[n] = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    # Each `gate` run makes its calls four times over: two stores (durable, in memory) x two concurrencies.
    dcalls = 4 * (calls[1] - calls[0])
    return {"blocks": (totals[calls[1]][1] - totals[calls[0]][1]) / dcalls, "bytes": (totals[calls[1]][0] - totals[calls[0]][0]) / dcalls,
            "calls": dcalls}


def item_wake(bins: Path, quick: bool) -> dict[str, Any]:
    """`runread-bench wake`: wait_for_run's wake-up latency on SQLite and on the PostgreSQL the tests use."""
    args = ["--rounds", "8" if quick else "20", "--pg"]
    r = run([str(bins / "runread-bench"), "wake", *args])
    return {"text": r.stdout, "args": args}


def item_snapshot(bins: Path, quick: bool) -> dict[str, Any]:
    """`runread-bench snapshot`: reads from a snapshot beside reads from the file, per call."""
    args = ["--calls", "50" if quick else "200", "--rounds", "3" if quick else "7"]
    r = run([str(bins / "runread-bench"), "snapshot", *args])
    return {"rows": [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")], "args": args}


# `runread ingest --json`'s counts, by the names the report uses.
INGEST_FIELDS = {"files": "files", "new": "newOrReread", "appended": "appended", "unchanged": "unchanged",
                 "outside": "outsideWorkspaces", "not_sessions": "notSessions", "unreadable": "unreadable",
                 "bytes_read": "bytesRead", "malformed": "malformedLines", "torn": "tornFiles", "runs": "runs"}
PAGE = 50


def timed(cmd: list[str]) -> tuple[float, str]:
    """Wall seconds of one whole process (spawn to exit), and its stdout."""
    t = time.perf_counter()
    out = run(cmd).stdout
    return time.perf_counter() - t, out


def ingest_summary(out: str) -> dict[str, int]:
    """The counts `runread ingest --json` printed (sizes in bytes)."""
    try:
        report = json.loads(out)
        return {name: int(report[key]) for name, key in INGEST_FIELDS.items()}
    except (ValueError, KeyError, TypeError):
        raise SystemExit(f"runread ingest --json printed no report: {out[-500:]}")


def make_home() -> dict[str, Any]:
    large = {a: large_session(a) for a in AGENTS}
    r = run([sys.executable, str(BENCH / "home" / "make_home.py"), "--cache", str(CACHE),
             *[x for a in AGENTS for x in (f"--large-{a}", str(large[a]))]], timeout=3600)
    return json.loads(r.stdout)


class RunreadHome:
    """A fresh runread home (its own store) with the synthetic home's workspaces registered."""

    def __init__(self, runread: Path, path: Path, info: dict[str, Any]) -> None:
        self.runread, self.path = runread, path
        path.mkdir(mode=0o700)
        for ws in info["workspaces"]:
            self.cli("workspace", "add", ws, "--name", Path(ws).name)
        self.dirs = [x for a in AGENTS for x in (f"--{a}", info[a])]

    def cli(self, *args: str) -> str:
        return run([str(self.runread), "--home", str(self.path), *args]).stdout

    def cmd(self, *args: str) -> list[str]:
        return [str(self.runread), "--home", str(self.path), *args]

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def vmrss_kib(pid: int) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def watch_memory(h: RunreadHome) -> dict[str, Any]:
    """`runread watch` over the home, from spawn to the end of its first pass (the line it prints
    after it): VmRSS sampled every 100 ms."""
    import threading

    p = subprocess.Popen(h.cmd("watch", *h.dirs), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                         text=True, start_new_session=True)
    first = threading.Event()
    line: list[str] = []

    def reader() -> None:
        assert p.stdout is not None
        for text in p.stdout:
            line.append(text.strip())
            first.set()
        first.set()

    threading.Thread(target=reader, daemon=True).start()
    t0 = time.perf_counter()
    samples: list[tuple[float, int]] = []
    try:
        while not first.is_set():
            kib = vmrss_kib(p.pid)
            if kib is not None:
                samples.append((time.perf_counter() - t0, kib))
            if first.wait(0.05):
                break
            if time.perf_counter() - t0 > 1800:
                raise SystemExit("runread watch: no first pass after 30 min")
        took = time.perf_counter() - t0
        end = vmrss_kib(p.pid)
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
    if not samples or end is None:
        raise SystemExit(f"runread watch exited early: {line[-1:] }")
    at10 = next(k for t, k in samples if t >= 0.1 * took) if any(t >= 0.1 * took for t, _ in samples) else samples[-1][1]
    # Flat means the pass does not keep what it has read: the second half's peak against the first's.
    first_half = [k for t, k in samples if t < took / 2] or [samples[0][1]]
    second_half = [k for t, k in samples if t >= took / 2] + [end]
    return {"seconds": took, "start_kib": samples[0][1], "at10_kib": at10, "peak_kib": max(k for _, k in samples + [(took, end)]),
            "first_half_peak_kib": max(first_half), "second_half_peak_kib": max(second_half),
            "end_kib": end, "samples": len(samples), "line": line[0] if line else ""}


def page_args(kind: str, native: bool) -> tuple[list[str], list[str]]:
    """(`runread runs` arguments, `runread-bench select-page` arguments) of one page."""
    extra = {"newest": [], "agent": ["--agent", "claude"], "workspace": ["--workspace", "beta"]}[kind]
    rr = ["runs", "--json", "--limit", str(PAGE), *extra] if native else ["runs", "--json"]
    return rr, ["--limit", str(PAGE), *extra]


def page_keys(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for r in rows:
        if "target" in r:
            out.append((r["target"]["sessionId"], r["target"]["runId"]))
        else:
            run_ = r["run"]
            out.append((r["sessionId"], run_.get("run_id") or run_.get("runId") or ""))
    return out


def item_home(bins: Path, tmp: Path, quick: bool) -> dict[str, Any]:
    info = make_home()
    log(f"home: {info['sessions']:,} sessions, {info['bytes'] / 1e9:.2f} GB at {info['root']}")
    runread = bins / "runread"
    dirs = [x for a in AGENTS for x in ("--dir", info[a])]
    rounds, repeats = (1, 3) if quick else (3, 7)
    first: dict[str, list[float]] = {"runread_s": [], "json_s": [], "json_inproc_s": [], "json_sha_s": []}
    summary: dict[str, int] = {}
    jinfo: dict[str, Any] = {}
    h: RunreadHome | None = None
    run([str(bins / "runread-bench"), "json-pass", *dirs])  # warm-up: the whole home in the page cache for both sides
    for i in range(rounds):
        if h is not None:
            h.remove()
        sides = ["runread", "json", "json+sha256"]
        for side in sides[i % 3:] + sides[: i % 3]:
            if side == "runread":
                h = RunreadHome(runread, tmp / f"home-{i}", info)
                cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                dt, out = timed(h.cmd("ingest", "--json", *h.dirs))
                cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                summary = ingest_summary(out)
                first["runread_s"].append(dt)
                first.setdefault("runread_cpu_s", []).append(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime)
            elif side == "json":
                dt, out = timed([str(bins / "runread-bench"), "json-pass", *dirs])
                jinfo = json.loads(out)
                first["json_s"].append(dt)
                first["json_inproc_s"].append(jinfo["seconds"][0])
            else:
                dt, _ = timed([str(bins / "runread-bench"), "json-pass", "--sha256", *dirs])
                first["json_sha_s"].append(dt)
        log(f"home first ingest {i + 1}/{rounds}: runread {first['runread_s'][-1]:.1f} s ({summary['new']} new, {summary['runs']} runs), "
            f"json-pass {first['json_s'][-1]:.1f} s, json-pass + SHA-256 {first['json_sha_s'][-1]:.1f} s")
    assert h is not None
    if summary["new"] != info["sessions"] or summary["not_sessions"] or summary["unreadable"] or summary["outside"]:
        log(f"home: the first ingest did not take every copy as a new session: {summary}")
    again: dict[str, list[float]] = {"runread_s": [], "stat_s": [], "stat_inproc_s": []}
    resummary: dict[str, int] = {}
    for i in range(repeats):
        dt, out = timed(h.cmd("ingest", "--json", *h.dirs))
        resummary = ingest_summary(out)
        again["runread_s"].append(dt)
        dt, out = timed([str(bins / "runread-bench"), "stat-pass", *dirs])
        again["stat_s"].append(dt)
        again["stat_inproc_s"].append(json.loads(out)["seconds"][0])
    log(f"home re-ingest: runread {median(again['runread_s']) * 1e3:.0f} ms, stat-pass {median(again['stat_s']) * 1e3:.0f} ms")
    probe = subprocess.run(h.cmd("runs", "--json", "--limit", "1"), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    native = probe.returncode == 0
    if not native:
        log("home: `runread runs` refuses --limit; timing `runread runs --json` (the whole list) instead")
    store = h.path / "runread.db"
    pages: dict[str, Any] = {}
    for kind in ("newest", "agent", "workspace"):
        rr_args, sel_args = page_args(kind, native)
        rr_s, sel_s = [], []
        rr_out = sel_out = ""
        for i in range(repeats):
            dt, rr_out = timed(h.cmd(*rr_args))
            rr_s.append(dt)
            dt, sel_out = timed([str(bins / "runread-bench"), "select-page", "--store", str(store), *sel_args])
            sel_s.append(dt)
        rr_rows, sel_rows = json.loads(rr_out), json.loads(sel_out)
        pages[kind] = {"runread_s": rr_s, "select_s": sel_s, "runread_rows": len(rr_rows), "select_rows": len(sel_rows),
                       "same_rows": page_keys(rr_rows[:PAGE]) == page_keys(sel_rows) if native else None,
                       "runread_args": rr_args, "select_args": sel_args}
        log(f"home page {kind}: runread {median(rr_s) * 1e3:.0f} ms ({len(rr_rows)} rows), select {median(sel_s) * 1e3:.0f} ms ({len(sel_rows)} rows)")
    store_bytes = sum(p.stat().st_size for p in h.path.glob("runread.db*"))
    assert h is not None
    wf = watch_footprint(bins, h, info, summary, rr_rows, 2 if quick else 3)
    h.remove()
    w = RunreadHome(runread, tmp / "home-watch", info)
    mem = watch_memory(w)
    w.remove()
    log(f"home watch: {mem['seconds']:.1f} s, RSS start {mem['start_kib'] / 1024:.1f} MiB, at 10% {mem['at10_kib'] / 1024:.1f}, "
        f"peak {mem['peak_kib'] / 1024:.1f}, end {mem['end_kib'] / 1024:.1f}")
    return {"info": info, "first": first, "summary": summary, "json": jinfo, "again": again, "resummary": resummary,
            "native_pages": native, "pages": pages, "store_bytes": store_bytes, "watch": mem, "watch_footprint": wf}


def idle_cpu_percent(spawns: list[dict[str, Any]]) -> float | None:
    """The median CPU a server used while idle (`runread-bench ready`'s idle_cpu_ticks over its
    idle_counted_ms), in % of one core; None for a run recorded before it was measured."""
    tick_s = 1 / os.sysconf("SC_CLK_TCK")
    per = [x["idle_cpu_ticks"] * tick_s / (x["idle_counted_ms"] / 1000) * 100
           for x in spawns if x.get("idle_cpu_ticks") is not None and x.get("idle_counted_ms")]
    return median(per) if per else None


def watch_footprint(bins: Path, h: RunreadHome, info: dict[str, Any], summary: dict[str, int], rows: list[dict[str, Any]],
                    spawns: int) -> dict[str, Any]:
    """Issue 58's daemon row: `runread serve --watch` over the ingested home, idle after its first
    answer and its watcher's first pass, beside `runread serve` on the same home."""
    target = next(r["target"] for r in rows if "target" in r)
    key = json.loads(h.cli("grant", "--run", target["runId"], "--session", target["sessionId"], "--features", "final_answer",
                           "--expires", "2h", "--to", "bench-watch", "--json"))["key"]
    cmds = {"serve": lambda p: h.cmd("serve", "--listen", f"127.0.0.1:{p}"),
            "serve-watch": lambda p: h.cmd("serve", "--watch", *h.dirs, "--listen", f"127.0.0.1:{p}")}
    out: dict[str, list[dict[str, float]]] = {n: [] for n in cmds}
    for r in range(spawns):
        for name in list(cmds)[::1 if r % 2 == 0 else -1]:
            port = free_port()
            res = run([str(bins / "runread-bench"), "ready", "--port", str(port), "--key", key, "--idle-ms", str(WATCH_IDLE_MS), "--",
                       *pinned(SERVER_CPU, cmds[name](port))])
            out[name].append(json.loads(res.stdout))
            log(f"home footprint {r + 1}/{spawns} {name}: RSS {out[name][-1]['rss_kib'] / 1024:.1f} MiB")
    return {"spawns": out, "sessions": info["sessions"], "runs": summary.get("runs", 0), "idle_ms": WATCH_IDLE_MS}


# --------------------------------------------------------------------------- report


def versions(node: str, node_modules: Path, py: Path, fmpy: Path, wrk: str) -> dict[str, str]:
    lock = (REPO / "Cargo.lock").read_text()

    def crate(name: str) -> str:
        m = re.search(rf'name = "{re.escape(name)}"\nversion = "([^"]+)"', lock)
        return m.group(1) if m else "?"

    def pkg(name: str) -> str:
        pj = node_modules / name / "package.json"
        return json.loads(pj.read_text())["version"] if pj.exists() else "?"

    pyv = subprocess.run([str(py), "-c", "import importlib.metadata as m, sys; print(sys.version.split()[0], m.version('mcp'), m.version('uvicorn'), m.version('starlette'))"],
                         capture_output=True, text=True).stdout.split()
    fmv = subprocess.run([str(fmpy), "-c", "import importlib.metadata as m; print(m.version('fastmcp'), 'on mcp', m.version('mcp') + ', uvicorn', m.version('uvicorn'))"],
                         capture_output=True, text=True).stdout.strip()
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    pi_pkg = PI_DIST.parent / "package.json"
    return {
        "runread": f"{crate('runread')} (git {rev}{', with uncommitted changes' if dirty else ''}), release profile",
        "rustc": rustc,
        "rmcp": crate("rmcp"), "axum": crate("axum"), "hyper": crate("hyper"), "tokio": crate("tokio"), "rusqlite": crate("rusqlite"),
        "aho-corasick": crate("aho-corasick"), "reqwest": crate("reqwest"),
        "node": run([node, "--version"]).stdout.strip(),
        "@modelcontextprotocol/server": pkg("@modelcontextprotocol/server"),
        "@modelcontextprotocol/node": pkg("@modelcontextprotocol/node"),
        "@modelcontextprotocol/core": pkg("@modelcontextprotocol/core"),
        "python": pyv[0] if pyv else "?", "mcp (Python SDK)": pyv[1] if len(pyv) > 1 else "?",
        "uvicorn": pyv[2] if len(pyv) > 2 else "?", "starlette": pyv[3] if len(pyv) > 3 else "?",
        "fastmcp (standalone)": fmv or "?",
        "pi-coding-agent": json.loads(pi_pkg.read_text())["version"] if pi_pkg.exists() else "?",
        "wrk": wrk,
    }


def machine() -> dict[str, str]:
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    load = os.getloadavg()
    return {"nproc": run(["nproc"]).stdout.strip(), "cpu": cpu, "kernel": platform.release(), "memory": mem,
            "load average at start": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
            "fsync": f"{fsync_latency_us():.0f} µs (median of {FSYNC_SAMPLES} × a 4 KiB write + fdatasync in the temporary "
                     "directory the stores use; every durable commit pays at least one)"}


FSYNC_SAMPLES = 200


def fsync_latency_us() -> float:
    """The disk's durable-write latency, which bounds every durable commit (rows 1, 3 and 6)."""
    with tempfile.TemporaryDirectory() as d:
        fd = os.open(Path(d) / "probe", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            block, samples = os.urandom(4096), []
            for i in range(FSYNC_SAMPLES):
                t = time.perf_counter()
                os.pwrite(fd, block, (i % 16) * 4096)
                os.fdatasync(fd)
                samples.append((time.perf_counter() - t) * 1e6)
            return median(samples)
        finally:
            os.close(fd)


def fmt(x: float, d: int = 0) -> str:
    return f"{x:,.{d}f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "n/a"


def spread(xs: list[float]) -> float | None:
    """Run-to-run noise of one figure within a run: half the range of its rounds over their median
    (None with fewer than two rounds)."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2 or not median(xs):
        return None
    return (max(xs) - min(xs)) / 2 / abs(median(xs))


def ratio_noise(a: list[float], b: list[float]) -> float | None:
    """The noise of the ratio of two figures measured side by side: the spread of the per-round
    ratios when the rounds pair up (they interleave), else the two spreads added."""
    if len(a) == len(b) and len(a) >= 2 and all(b):
        return spread([x / y for x, y in zip(a, b)])
    sa, sb = spread(a), spread(b)
    return None if sa is None or sb is None else sa + sb


@dataclasses.dataclass
class Goal:
    """One goal: `name` starts with its number in `issue`'s list of goals. `value` is the figure the
    goal judges (a ratio, or a bound's milliseconds), `higher_better` its good direction and `noise`
    its relative run-to-run spread in this run: what `--compare` reads."""
    name: str
    target: str
    measured: str
    met: bool | None
    issue: str = "17"
    value: float | None = None
    higher_better: bool = True
    noise: float | None = None


def goal_row(goals: list[Goal], name: str, target: str, measured: str, met: bool | None, issue: str = "17",
             value: float | None = None, higher_better: bool = True, noise: float | None = None) -> None:
    goals.append(Goal(name, target, measured, met, issue, value, higher_better, noise))


def home_section(h: dict[str, Any], sections: list[str], goals: list[Goal]) -> None:
    info, f, a = h["info"], h["first"], h["again"]
    gb = info["bytes"] / 1e9
    ri, js, jsi = median(f["runread_s"]), median(f["json_s"]), median(f["json_inproc_s"])
    ra, st, sti = median(a["runread_s"]), median(a["stat_s"]), median(a["stat_inproc_s"])
    s, w = h["summary"], h["watch"]
    per = ", ".join(f"{AGENT_NAMES[k]} {v:,}" for k, v in info["sessions_per_agent"].items())
    rows = ["| what | runread | reference | runread ÷ reference |", "|---|---|---|---|",
            f"| first ingest of the whole home | `runread ingest`: {ri:.2f} s ({fmt(info['bytes'] / 1e6 / ri)} MB/s) | "
            f"`runread-bench json-pass`: {js:.2f} s ({fmt(info['bytes'] / 1e6 / js)} MB/s; in process {jsi:.2f} s) | "
            f"{ratio(js, ri)} (throughput) |",
            *([f"| the digest's floor (not runread: the same bare pass taking every line's SHA-256, one thread) | — | "
               f"`runread-bench json-pass --sha256`: {median(f['json_sha_s']):.2f} s | its ÷ the bare pass: "
               f"{ratio(js, median(f['json_sha_s']))} (throughput) |"] if f.get("json_sha_s") else []),
            *([f"| the work against two cores (not a goal: `runread ingest`'s CPU time, every thread's, from the kernel's "
               f"accounting of the child) | CPU {median(f['runread_cpu_s']):.2f} s, {median(f['runread_cpu_s']) / ri:.2f} cores busy on "
               f"average; ÷ 2 cores: {median(f['runread_cpu_s']) / 2:.2f} s | `runread-bench json-pass`: {js:.2f} s | the most this "
               f"work reaches on two cores: {ratio(js, median(f['runread_cpu_s']) / 2)} (throughput) |"] if f.get("runread_cpu_s") else []),
            f"| re-ingest, nothing changed | `runread ingest`: {ra * 1e3:.1f} ms | `runread-bench stat-pass`: {st * 1e3:.1f} ms "
            f"(in process {sti * 1e3:.1f} ms) | {ratio(ra, st)} (time) |"]
    names = {"newest": "newest page", "agent": "newest page of `--agent claude`", "workspace": "newest page of `--workspace beta`"}
    for kind, p in h["pages"].items():
        rr, sel = median(p["runread_s"]), median(p["select_s"])
        same = {True: "same rows", False: "**rows differ**", None: "not compared"}[p["same_rows"]]
        rows.append(f"| {names[kind]} | `runread {' '.join(p['runread_args'])}`: {rr * 1e3:.1f} ms ({p['runread_rows']:,} rows) | "
                    f"`runread-bench select-page {' '.join(p['select_args'])}`: {sel * 1e3:.1f} ms ({p['select_rows']} rows; {same}) | "
                    f"{ratio(rr, sel)} (time) |")
    fallback = ("" if h["native_pages"] else
                " **This runread refuses `runs --limit` (the paginated listing is not on this branch yet): each runread row times "
                "`runread runs --json`, the whole list, unfiltered; the SELECT rows are the page.**")
    mib = 1024
    sections.append("## 7. A real home: 2,000 sessions, 1 GB\n\n"
                    f"The home (`bench/home/make_home.py`, cached by its inputs): {info['sessions']:,} session files ({per}), "
                    f"{gb:.2f} GB: the session files of every fixture in `fixtures/{{pi,claude,codex}}` copied {info['fixture_sets']} times "
                    f"and each agent's large real session (section 3) {info['large_copies']} times. Each copy is a distinct valid session: "
                    "a new session id of the same shape in every byte and in the file name (the files of one fixture share one id "
                    "map, so forks point at their parent's copy; Codex's `history_base.end_byte_offset` follows), its `cwd` fields in one "
                    "of four workspaces the bench registers (`runread workspace add`), laid out as each agent lays out its own, mtimes "
                    "in the past; nothing else changed. "
                    f"The first ingest read {s['new']:,} new sessions ({s['runs']:,} runs, {s['malformed']} malformed lines, "
                    f"{s['torn']} files ending in an unfinished line: the fixtures' own; {s['not_sessions']} not sessions, "
                    f"{s['unreadable']} unreadable or duplicate, {s['outside']} outside workspaces); the store then held "
                    f"{h['store_bytes'] / 1e6:.0f} MB (the index: where each line is and its digest, no texts). The re-ingest found "
                    f"{h['resummary']['unchanged']:,} files unchanged, {h['resummary']['appended']:,} appended, "
                    f"{h['resummary']['new']:,} read again; new bytes read: {h['resummary']['bytes_read']:,}.\n\n"
                    "Every figure is the wall time of a whole process (spawn to exit), as a user runs it: `runread --home H ingest --json --pi D "
                    "--claude D --codex D` into a fresh home, then again with nothing changed; `runread runs --json --limit 50` (and "
                    "filtered by `--agent`, `--workspace`) on the ingested home. References: `runread-bench json-pass --dir D…` (the "
                    "same files, every line validated as JSON into `IgnoredAny`, 64 KiB buffered reader), `runread-bench stat-pass "
                    "--dir D…` (the same directories walked, every session file `stat`ed) and `runread-bench select-page --store "
                    "H/runread.db` (the same page, newest first in the store's order, straight from SQLite: `runs` joined with "
                    "`sessions` and `workspaces`, `run_json` parsed, printed as JSON). First ingest: "
                    f"{len(f['runread_s'])} round(s), a fresh home each, the two alternating; the rest {len(a['runread_s'])} repeats, "
                    f"alternating; medians. Page cache warm (one untimed `json-pass` over the whole home first; it fits in memory).{fallback}\n\n"
                    + "\n".join(rows) + "\n\n"
                    f"Memory: `runread --home H watch --pi D --claude D --codex D` on a fresh home, from spawn until it prints its first "
                    f"pass (the whole home ingested, {w['seconds']:.1f} s), VmRSS sampled every 50 ms ({w['samples']} samples): start "
                    f"{w['start_kib'] / mib:.1f} MiB, after 10% of the pass {w['at10_kib'] / mib:.1f} MiB, peak of the first half "
                    f"{w['first_half_peak_kib'] / mib:.1f} MiB, of the second half {w['second_half_peak_kib'] / mib:.1f} MiB, "
                    f"end {w['end_kib'] / mib:.1f} MiB. \"Flat\" is read as: memory does not grow with what the pass has read — the "
                    "second half's peak ≤ 1.2× the first half's (the pass holds at most a few files being read at once, "
                    "whatever the home's size).\n")
    goal_row(goals, "4. home: first ingest ÷ bare JSON pass over the same files (throughput)", "≥ 0.50×", ratio(js, ri), js / ri >= 0.5,
             value=js / ri, noise=ratio_noise(f["json_s"], f["runread_s"]))
    goal_row(goals, "4. home: re-ingest, nothing changed ÷ stat of the same files (time)", "≤ 2×", ratio(ra, st), ra <= 2 * st,
             value=ra / st, higher_better=False, noise=ratio_noise(a["runread_s"], a["stat_s"]))
    for kind, p in h["pages"].items():
        rr, sel = median(p["runread_s"]), median(p["select_s"])
        note = "" if h["native_pages"] else " (fallback: whole list)"
        goal_row(goals, f"4. home: `runread runs --json` {names[kind]} ÷ SELECT of the same page (time)", "≤ 2×",
                 ratio(rr, sel) + note, rr <= 2 * sel, value=rr / sel, higher_better=False,
                 noise=ratio_noise(p["runread_s"], p["select_s"]))
    goal_row(goals, "4. home: `runread watch` memory over the first ingest (second half's peak ÷ first half's)", "≤ 1.2×",
             f"{ratio(w['second_half_peak_kib'], w['first_half_peak_kib'])} ({w['first_half_peak_kib'] / mib:.1f} → "
             f"{w['second_half_peak_kib'] / mib:.1f} MiB)",
             w["second_half_peak_kib"] <= 1.2 * w["first_half_peak_kib"],
             value=w["second_half_peak_kib"] / w["first_half_peak_kib"], higher_better=False)


def write_report(out: Path | None, res: dict[str, Any], opts: argparse.Namespace, mach: dict[str, str], vers: dict[str, str],
                 reps: dict[str, Any], started: str, took: float, previous: tuple[str, dict[str, str]] = ("", {}),
                 comparison: str = "") -> list[Goal]:
    """Writes the report to `out` (unless None) and returns its goals."""
    L: list[str] = []
    goals: list[Goal] = []
    sections: list[str] = []

    if "load" in res:
        s = res["load"]["samples"]
        med = {n: {k: median([x.get(k, 0.0) for x in v]) for k in ("rps", "p50_ms", "p99_ms", "cpu_us_per_req")} for n, v in s.items()}
        bad = {n: sum(x["bad"] for x in v) for n, v in s.items()}
        reqs = {n: sum(x["requests"] for x in v) for n, v in s.items()}
        rr = med["runread"]

        def per_round(key: str, peer: str) -> dict[str, Any]:
            """The goal's figure (runread ÷ peer) and its noise from the interleaved rounds."""
            mine, theirs = [x.get(key, 0.0) for x in s["runread"]], [x.get(key, 0.0) for x in s[peer]]
            return {"value": rr[key] / med[peer][key], "higher_better": key == "rps", "noise": ratio_noise(mine, theirs)}

        rows = ["| server | mode | requests/s | p50 ms | p99 ms | server CPU µs / request | runread ÷ server (req/s) | bad responses / requests |",
                "|---|---|---|---|---|---|---|---|"]
        modes = {
            "runread": "`runread serve`: guards, key admission, durable gate (SQLite WAL, synchronous=FULL start record + receipt, group commit), masking, labels",
            "rmcp-echo": "stock rmcp Streamable HTTP, stateless, JSON responses, `axum::serve`",
            "durable-echo": "the rmcp echo plus the gate's durable writes: a start record and a receipt of runread's sizes through runread's own SQLite store (WAL, synchronous=FULL, group commit), on one blocking-thread hop per call",
            "ts-sdk": "`createMcpHandler` (2026-07-28 per-request), `responseMode: json`, node:http",
            "python-sdk": "official Python SDK `MCPServer` (FastMCP's successor in mcp 2.x), `streamable_http_app(stateless_http, json_response)`, uvicorn",
            "fastmcp": "standalone FastMCP 4 (PyPI `fastmcp`), `http_app(stateless_http, json_response)`, uvicorn",
        }
        for n in s:
            m = med[n]
            rows.append(f"| {n} | {modes[n]} | {fmt(m['rps'])} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {fmt(m['cpu_us_per_req'])} | "
                        f"{'—' if n == 'runread' else ratio(rr['rps'], m['rps'])} | {bad[n]} / {fmt(reqs[n])} |")
        sizes = res.get("load_response_bytes", {})
        sections.append("## 1. Tool-call throughput and latency: `read_final_answer` vs echo servers\n\n"
                        f"`tools/call` over MCP {PROTOCOL} Streamable HTTP, 4 keep-alive connections (`wrk -t1 -c4`, {reps['load_seconds']} s per run, "
                        f"{reps['load_rounds']} rounds; servers rotated in each round; medians of the rounds). Every response was checked by the "
                        "Lua script (HTTP 200 and the answer's sha256 in the body). Response bytes: "
                        + ", ".join(f"{n} {b:,}" for n, b in sizes.items()) + ".\n\n" + "\n".join(rows) + "\n\nStack ceiling: the stock rmcp echo (the same stack, no work) does "
                        f"{ratio(med['rmcp-echo']['rps'], med['ts-sdk']['rps'])} the TypeScript SDK's requests/s and "
                        f"{ratio(med['rmcp-echo']['rps'], med['python-sdk']['rps'])} the Python SDK's"
                        + (f" and {ratio(med['rmcp-echo']['rps'], med['fastmcp']['rps'])} FastMCP's. " if "fastmcp" in med else ". ")
                        + 
                        f"Server CPU per request is every thread's user + system time during the run (from /proc) over the requests "
                        f"served: runread {fmt(rr['cpu_us_per_req'])} µs against the rmcp echo's {fmt(med['rmcp-echo']['cpu_us_per_req'])} µs, on "
                        "one core (see the profiles).\n\nPer round (req/s): "
                        + "; ".join(f"{n}: {', '.join(fmt(x['rps']) for x in v)}" for n, v in s.items()) + ".\n")
        if "durable-echo" in med:
            de, echo_ = med["durable-echo"], med["rmcp-echo"]
            sections[-1] += ("\nThe durable echo (the limit durability sets): "
                             f"{fmt(de['rps'])} requests/s, {ratio(de['rps'], echo_['rps'])} the plain echo's, at {fmt(de['cpu_us_per_req'])} µs of "
                             f"server CPU per request ({fmt(de['cpu_us_per_req'] - echo_['cpu_us_per_req'])} µs more than the plain echo: what the two "
                             f"durable writes cost). runread: {ratio(rr['rps'], de['rps'])} its requests/s at {ratio(rr['cpu_us_per_req'], de['cpu_us_per_req'])} "
                             "its CPU per request.\n")
            goal_row(goals, "1. tool calls: `read_final_answer` requests/s ÷ the durable echo's (4 connections)", "≥ 0.70×",
                     ratio(rr["rps"], de["rps"]), rr["rps"] >= 0.7 * de["rps"], "37", **per_round("rps", "durable-echo"))
            goal_row(goals, "1. tool calls: server CPU per request ÷ the durable echo's", "≤ 1.5×",
                     f"{ratio(rr['cpu_us_per_req'], de['cpu_us_per_req'])} ({fmt(rr['cpu_us_per_req'])} vs {fmt(de['cpu_us_per_req'])} µs)",
                     rr["cpu_us_per_req"] <= 1.5 * de["cpu_us_per_req"], "37", **per_round("cpu_us_per_req", "durable-echo"))
            goal_row(goals, "2. CPU per call: server CPU per request ÷ the durable echo's", "≤ 1.2×",
                     f"{ratio(rr['cpu_us_per_req'], de['cpu_us_per_req'])} ({fmt(rr['cpu_us_per_req'])} vs {fmt(de['cpu_us_per_req'])} µs)",
                     rr["cpu_us_per_req"] <= 1.2 * de["cpu_us_per_req"], "58", **per_round("cpu_us_per_req", "durable-echo"))
            goal_row(goals, "2. CPU per call: `read_final_answer` requests/s ÷ the durable echo's (4 connections)", "≥ 0.90×",
                     ratio(rr["rps"], de["rps"]), rr["rps"] >= 0.9 * de["rps"], "58", **per_round("rps", "durable-echo"))
        echo = med["rmcp-echo"]
        goal_row(goals, "1. tool calls: `read_final_answer` requests/s ÷ stock rmcp echo's (4 connections)", "≥ 0.50×",
                 ratio(rr["rps"], echo["rps"]), rr["rps"] >= 0.5 * echo["rps"], **per_round("rps", "rmcp-echo"))
        goal_row(goals, "1. tool calls: server CPU per request ÷ the echo's", "≤ 3×",
                 f"{ratio(rr['cpu_us_per_req'], echo['cpu_us_per_req'])} ({fmt(rr['cpu_us_per_req'])} vs {fmt(echo['cpu_us_per_req'])} µs)",
                 rr["cpu_us_per_req"] <= 3 * echo["cpu_us_per_req"], **per_round("cpu_us_per_req", "rmcp-echo"))
    if "artifact" in res:
        a = res["artifact"]
        mib = a["bytes"] / 1048576
        ra, rp, hb = median(a["runread_s"]), median(a["runread_pooled_s"]), median(a["http_s"])
        sections.append("## 2. Artifact transfer: 8 MiB\n\n"
                        f"runread: `runread_mcp::client::Client::read_artifact` over `runread serve` — `list_artifacts`, then {a['chunks']} "
                        "`read_artifact` calls of 32 KiB (base64 in JSON), each chunk's sha256, the offsets and the whole file's sha256 verified. "
                        f"runread's client keeps its connections and has up to {a['in_flight']} chunk calls in flight (the server's cap). "
                        "The one-at-a-time row makes the same calls with the same checks (labels with `runread_mcp::client::verify_label`) "
                        "one after another over one keep-alive connection (a bench-side rmcp client): each chunk's whole round trip. Plain HTTP: one GET of the same file from a static axum server (file read from disk per request), reqwest, sha256 "
                        f"verified. {len(a['runread_s'])} rounds after a warm-up, the three alternating; medians. Servers on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}.\n\n"
                        "| path | seconds | MiB/s | ÷ plain HTTP (throughput) |\n|---|---|---|---|\n"
                        f"| runread's client (`Client::read_artifact`: kept connections, chunk calls in flight) | {ra:.3f} | {fmt(mib / ra, 1)} | {ratio(hb, ra)} |\n"
                        f"| the same calls and checks, one at a time (bench-side client) | {rp:.3f} | {fmt(mib / rp, 1)} | {ratio(hb, rp)} |\n"
                        f"| plain HTTP GET | {hb:.4f} | {fmt(mib / hb, 1)} | — |\n")
        if a.get("durable_echo_s"):
            de = median(a["durable_echo_s"])
            sections[-1] += (f"| the durable echo, through runread's client (as the first row) | {de:.3f} | {fmt(mib / de, 1)} | {ratio(hb, de)} |\n\n"
                             "The durable echo (`runread-bench durable-echo-server --results`) answers each call with the exact result runread "
                             "returned for it (`runread-bench artifact-record`: `list_granted_targets`, `list_artifacts` and every chunk) after "
                             "a durable start record and receipt of runread's sizes: the same client, checks and calls in flight. "
                             f"Its chunk rate: {a['chunks'] / de:,.0f} chunks/s ({a['chunks'] / ra:,.0f} for runread).\n")
            goal_row(goals, "2. artifacts: 8 MiB through runread's client ÷ the durable echo's chunk rate × 32 KiB (throughput)", "≥ 0.70×",
                     f"{ratio(de, ra)} ({mib / ra:.1f} vs {mib / de:.1f} MiB/s)", de / ra >= 0.7, "37",
                     value=de / ra, noise=ratio_noise(a["durable_echo_s"], a["runread_s"]))
            goal_row(goals, "3. artifacts: 8 MiB through runread's client ÷ the durable echo's chunk rate × 32 KiB (throughput)", "≥ 0.90×",
                     f"{ratio(de, ra)} ({mib / ra:.1f} vs {mib / de:.1f} MiB/s)", de / ra >= 0.9, "58",
                     value=de / ra, noise=ratio_noise(a["durable_echo_s"], a["runread_s"]))
        goal_row(goals, "2. artifacts: 8 MiB through `runread read … artifact` (runread's client) ÷ plain HTTP GET (throughput)", "≥ 0.25×",
                 f"{ratio(hb, ra)} ({mib / ra:.1f} vs {mib / hb:.1f} MiB/s; one call at a time {ratio(hb, rp)})", hb / ra >= 0.25,
                 value=hb / ra, noise=ratio_noise(a["http_s"], a["runread_s"]))
    if "ingest" in res:
        g = res["ingest"]
        mb = g["bytes"] / 1e6
        r_, po, pc = median(g["runread_s"]), median(g["pi_open_s"]), median(g["pi_context_s"])
        sections.append("## 3. Ingest: a large real Pi session\n\n"
                        f"The session: written by the real Pi {vers['pi-coding-agent']} driven by the harness's scripted model "
                        f"(`bench/pi/make_session.py`): {g['bytes']:,} bytes, {g['entries']:,} lines, {g['pi_entries']:,} entries as Pi counts them, "
                        f"{g['runs']} runs. runread: `runread_ingest::ingest_dir` (what `runread ingest` runs) into a fresh durable SQLite store "
                        "each time: read, parse, hash, cut runs, commit. Pi: `SessionManager.open` (read, parse, index), and open + "
                        "`buildSessionContext` (the branch's messages). Each side runs in its own process, 1 warm-up + 3 timed loads, median per "
                        f"process; {len(g['runread_s'])} processes each, alternating; medians of those.\n\n"
                        "| loader | ms | MB/s | runread ÷ loader (throughput) |\n|---|---|---|---|\n"
                        f"| runread ingest (durable store) | {r_ * 1e3:.1f} | {fmt(mb / r_, 1)} | — |\n"
                        f"| Pi SessionManager.open | {po * 1e3:.1f} | {fmt(mb / po, 1)} | {ratio(po, r_)} |\n"
                        f"| Pi open + buildSessionContext | {pc * 1e3:.1f} | {fmt(mb / pc, 1)} | {ratio(pc, r_)} |\n")
        goal_row(goals, "3. ingest of the large Pi session ÷ Pi's `SessionManager.open` (throughput)", "≥ 5×", ratio(po, r_), po / r_ >= 5,
                 value=po / r_, noise=ratio_noise(g["pi_open_s"], g["runread_s"]))
        rows, cpu_rows = [], []
        for agent, x in g.get("agents", {}).items():
            ri, js = median(x["runread_s"]), median(x["json_s"])
            # Older result files have no CPU times.
            if x.get("runread_cpu_s") and median(x["runread_cpu_s"]) > 0:
                rc = median(x["runread_cpu_s"])
                cpu_rows.append(f"| {AGENT_NAMES[agent]} | {ri * 1e3:.1f} | {rc * 1e3:.1f} | {rc / ri:.2f} | {rc / 2 * 1e3:.1f} | "
                                f"{js * 1e3:.1f} | {js / 0.5 * 1e3:.1f} | {ratio(js, rc / 2)} |")
            # Older result files have no digest pass.
            jh = median(x["json_sha_s"]) if x.get("json_sha_s") else None
            digest = (f"{jh * 1e3:.1f} | {ratio(js, jh)} |" if jh else "— | — |")
            rows.append(f"| {AGENT_NAMES[agent]} | {x['bytes'] / 1e6:.1f} MB, {x['lines']:,} lines, {x['runs']} runs | {ri * 1e3:.1f} | "
                        f"{fmt(x['bytes'] / 1e6 / ri, 1)} | {js * 1e3:.1f} | {fmt(x['bytes'] / 1e6 / js, 1)} | {ratio(js, ri)} | {digest}")
            goal_row(goals, f"3. ingest of a large {AGENT_NAMES[agent]} session ÷ bare JSON pass (throughput)", "≥ 0.50×",
                     ratio(js, ri), js / ri >= 0.5, value=js / ri, noise=ratio_noise(x["json_s"], x["runread_s"]))
        if rows:
            sections.append("### Each agent's large session: ingest vs a bare JSON pass\n\n"
                            "The sessions: written by the real agents driven by the harness's scripted model, the same scenario for each "
                            "(`bench/{pi,claude,codex}/make_session.py`: 20 prompts, each run 6 model turns of 20 shell calls printing "
                            "30-line slices of a log, then a final answer). runread: `runread-bench ingest --agent A` (as above: the file "
                            "laid out as the agent lays out its own, `ingest_dir` into a fresh durable store; 1 warm-up + 3 timed, "
                            "median). Bare pass: `runread-bench json-pass --file F`: the file read through a 64 KiB `BufReader`, every "
                            "line parsed by serde_json into `serde::de::IgnoredAny` one at a time, nothing kept (1 warm-up + 3 timed, "
                            "median). Digest floor: `runread-bench json-pass --file F --sha256`, the same pass taking each line's "
                            "SHA-256 as well (`runread_core::sha256_hex`, the digest ingest keeps of every line so that what a reader "
                            "is later served can be checked against it): the least an ingest that keeps the invariant does, on one "
                            "thread; its ratio to the bare pass is the most such an ingest can reach on one core. "
                            f"All in process, page cache warm; {len(next(iter(g['agents'].values()))['runread_s'])} processes "
                            "each, rotated; medians.\n\n"
                            "| agent | session | runread ingest ms | MB/s | JSON pass ms | MB/s | runread ÷ JSON pass (throughput) | "
                            "JSON pass + SHA-256 of every line ms | its ÷ JSON pass (the digest's ceiling, one core) |\n"
                            "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
        if cpu_rows:
            sections.append("### Each agent's large session: the work against two cores\n\n"
                            "The same runread loads as above, with the process's CPU time over each timed load "
                            "(`CLOCK_PROCESS_CPUTIME_ID`: every thread's, the reader's, the digest thread's and the committing "
                            "thread's). This machine has two cores, so no schedule of that work takes less wall time than half "
                            "of it: the last column is the most any ingest doing exactly this work could reach against the bare "
                            "pass here, however it were spread over the cores.\n\n"
                            "| agent | runread ingest ms (wall) | CPU ms (all threads) | cores busy on average | CPU ÷ 2 ms (the least wall "
                            "time two cores take for it) | JSON pass ms | wall time goal 3 needs (JSON pass ÷ 0.5) ms | JSON pass "
                            "÷ (CPU ÷ 2): the most this work reaches on two cores |\n"
                            "|---|---|---|---|---|---|---|---|\n" + "\n".join(cpu_rows) + "\n")
    if "redact" in res:
        d = res["redact"]
        m, c, n = median(d["mask_s"]), median(d["copy_s"]), median(d["naive_s"])
        gbs, cgbs, ngbs = d["bytes"] / m / 1e9, d["bytes"] / c / 1e9, d["naive_bytes"] / n / 1e9
        sections.append("## 4. Redaction: 1,000 known secrets\n\n"
                        f"`Redactor::mask` over {d['bytes'] / 1048576:.0f} MiB of agent text (the bundled real Pi session, repeated), masked in "
                        f"{d['pieces']:,} pieces of 64 KiB (the largest final answer runread publishes), with {d['secrets']:,} secrets of 27–51 bytes "
                        f"sharing the prefix `sk-`; {d['planted']:,} occurrences planted (one per ~34 KiB), {d['masked']:,} masked (a secret cut by a "
                        "piece boundary is in neither piece). References on the same pieces: a plain copy (the memory-bandwidth ceiling of "
                        f"anything that returns a new string) and a per-secret `contains`+`replace` loop (first 1 MiB). One thread on CPU {CLIENT_CPU}; "
                        f"{len(d['mask_s'])} repeats, interleaved; medians.\n\n"
                        "| method | GB/s | runread ÷ method |\n|---|---|---|\n"
                        f"| runread `Redactor::mask` (one Aho-Corasick automaton) | {gbs:.2f} | — |\n"
                        f"| plain copy (`to_owned`) | {cgbs:.2f} | {gbs / cgbs:.2f}× |\n"
                        f"| naive per-secret `str::replace` | {ngbs:.3f} | {gbs / ngbs:.0f}× |\n")
        if d.get("rg_s"):
            rgs, rge = median(d["rg_s"]), median(d["rg_empty_s"])
            rggbs = d["bytes"] / rgs / 1e9
            # The search alone: the whole process less its time on an empty file (spawn, compiling the 1,000 literals, as
            # Redactor::new is outside runread's timing). The goal is read against this, the stricter figure.
            netgbs = d["bytes"] / max(rgs - rge, 1e-9) / 1e9
            sections[-1] += (f"| ripgrep `rg -F -f secrets.txt --count-matches text.txt`, the search alone (less its fixed cost) | {netgbs:.2f} | {gbs / netgbs:.2f}× |\n"
                             f"| the same, whole process | {rggbs:.2f} | {gbs / rggbs:.2f}× |\n\n"
                             f"ripgrep runs on the exact text and secrets `Redactor::mask` used (written by `runread-bench redact --write-dir`), "
                             f"one process per repeat, interleaved with the rows above on the same CPU; it counted {d['rg_count']:,} matches. "
                             f"Its time includes spawning and compiling the 1,000 literals: on an empty file it takes {rge * 1e3:.1f} ms "
                             f"(of {rgs * 1e3:.1f} ms); the first ripgrep row subtracts it.\n")
            goal_row(goals, "5. redaction: `Redactor::mask` ÷ ripgrep `rg -F -f` (throughput, same text and 1,000 secrets; rg's search alone)", "≥ 1×",
                     f"{gbs / netgbs:.2f}× ({gbs:.2f} vs {netgbs:.2f} GB/s; whole rg process {gbs / rggbs:.2f}×)", gbs >= netgbs,
                     value=gbs / netgbs, noise=ratio_noise(d["rg_s"], d["mask_s"]))
    if "footprint" in res:
        f = res["footprint"]
        rows = ["| server | ready ms (spawn → first answered server/discover) | idle RSS MiB | of which anonymous | of which file-backed (binary, libraries) | peak RSS MiB | runread ÷ server (RSS) |",
                "|---|---|---|---|---|---|---|"]
        med = {n: (median([x["ready_ms"] for x in v]), median([x["rss_kib"] for x in v]) / 1024, median([x["hwm_kib"] for x in v]) / 1024,
                   median([x["anon_kib"] for x in v]) / 1024, median([x["file_kib"] for x in v]) / 1024)
               for n, v in f.items()}
        for n, (rd, rss, hwm, anon, filed) in med.items():
            rows.append(f"| {n} | {rd:.1f} | {rss:.1f} | {anon:.1f} | {filed:.1f} | {hwm:.1f} | {'—' if n == 'runread' else ratio(med['runread'][1], rss)} |")
        sections.append("## 5. Footprint\n\n"
                        "`runread-bench ready` spawns the server (pinned to CPU 1), polls with a raw `server/discover` POST every 0.25 ms until "
                        "one is answered (200 with a result), then waits 1 s idle and reads VmRSS/VmHWM from /proc. runread serves the "
                        f"prepared home (SQLite store, 1 grant, 1 artifact). {len(next(iter(f.values())))} spawns each, rotated; medians."
                        + (f" The binary measured holds {res['link_order']['found']:,} of the {res['link_order']['listed']:,} functions "
                           "`crates/runread/link/serve.order` lists for the linker to lay out together (what `serve` runs to start, "
                           "answer and watch; `bench/link_order.py` lists them again)." if res.get("link_order") else "")
                        + "\n\n" + "\n".join(rows) + "\n")
        rr_, ec = med["runread"], med["rmcp-echo"]
        rss_of = {n: [x["rss_kib"] for x in v] for n, v in f.items()}
        rss_goal = {"value": rr_[1] / ec[1], "higher_better": False, "noise": ratio_noise(rss_of["runread"], rss_of["rmcp-echo"])}
        rss_text = f"{ratio(rr_[1], ec[1])} ({rr_[1]:.1f} vs {ec[1]:.1f} MiB)"
        goal_row(goals, "6. footprint: idle RSS ÷ the stock echo's", "≤ 1.3×", rss_text, rr_[1] <= 1.3 * ec[1], **rss_goal)
        goal_row(goals, "3. footprint: idle RSS ÷ the plain echo's (issue 17's goal 6)", "≤ 1.3×", rss_text, rr_[1] <= 1.3 * ec[1], "37",
                 **rss_goal)
        goal_row(goals, "1. idle memory: `runread serve` idle RSS ÷ the rmcp echo's", "≤ 1.3×", rss_text, rr_[1] <= 1.3 * ec[1], "58",
                 **rss_goal)
        goal_row(goals, "1. idle memory: the same, against round two's ratio (the least this round must reach)", f"≤ {ROUND_TWO_RSS_RATIO}×",
                 rss_text, rr_[1] <= ROUND_TWO_RSS_RATIO * ec[1], "58", **rss_goal)
        goal_row(goals, "6. footprint: ready (spawn → first answer) ÷ the stock echo's", "≤ 2×", f"{ratio(rr_[0], ec[0])} ({rr_[0]:.1f} vs {ec[0]:.1f} ms)",
                 rr_[0] <= 2 * ec[0], value=rr_[0] / ec[0], higher_better=False,
                 noise=ratio_noise([x["ready_ms"] for x in f["runread"]], [x["ready_ms"] for x in f["rmcp-echo"]]))
        wf = res.get("home", {}).get("watch_footprint")
        if wf:
            wmed = {n: median([x["rss_kib"] for x in v]) / 1024 for n, v in wf["spawns"].items()}
            wanon = {n: median([x["anon_kib"] for x in v]) / 1024 for n, v in wf["spawns"].items()}
            wfile = {n: median([x["file_kib"] for x in v]) / 1024 for n, v in wf["spawns"].items()}
            wready = {n: median([x["ready_ms"] for x in v]) for n, v in wf["spawns"].items()}
            whwm = {n: median([x["hwm_kib"] for x in v]) / 1024 for n, v in wf["spawns"].items()}
            for n, what in (("serve", "runread serve, the 2,000-session home (section 7)"),
                            ("serve-watch", "runread serve --watch, the same home and its agents' folders")):
                sections[-1] = sections[-1].rstrip("\n") + (
                    f"\n| {what} | {wready[n]:.1f} | {wmed[n]:.1f} | {wanon[n]:.1f} | {wfile[n]:.1f} | {whwm[n]:.1f} | "
                    f"{ratio(wmed[n], ec[1])} of the echo |\n")
            sections[-1] += (f"\nThe last two rows: the same measure on the home of section 7 ({wf['sessions']:,} sessions, "
                             f"{wf['runs']:,} runs in its store), as a daemon runs all day: `runread serve --watch --pi D --claude D "
                             f"--codex D` idle {wf['idle_ms'] / 1000:.0f} s after its first answer (its watcher's first pass, "
                             "over every file, nothing new, ended within it), beside `runread serve` on the same home; "
                             f"{len(wf['spawns']['serve'])} spawns each, alternating; medians.\n")
            goal_row(goals, f"1. idle memory: `runread serve --watch` over {wf['sessions']:,} sessions, idle RSS ÷ the rmcp echo's",
                     "a figure (no bound set)", f"{ratio(wmed['serve-watch'], ec[1])} ({wmed['serve-watch']:.1f} MiB)", None, "58",
                     value=wmed["serve-watch"] / ec[1], higher_better=False,
                     noise=spread([x["rss_kib"] for x in wf["spawns"]["serve-watch"]]))
            wcpu = {n: idle_cpu_percent(v) for n, v in wf["spawns"].items()}
            if wcpu["serve-watch"] is not None:
                counted = wf["spawns"]["serve-watch"][0]["idle_counted_ms"] / 1000
                sections[-1] += (f"\nCPU while idle (user + system, from 1 s after the first answer to the end of the pause, "
                                 f"{counted:.0f} s; medians): `runread serve` {wcpu['serve']:.2f}%, `runread serve --watch` "
                                 f"{wcpu['serve-watch']:.2f}% of one core.\n")
                goal_row(goals, f"1. idle CPU: `runread serve --watch` over {wf['sessions']:,} sessions, % of one core while idle",
                         f"≤ {WATCH_IDLE_CPU_MAX_PERCENT}% (a daemon's bound, set here)", f"{wcpu['serve-watch']:.2f}%",
                         wcpu["serve-watch"] <= WATCH_IDLE_CPU_MAX_PERCENT, "58", value=max(wcpu["serve-watch"], 0.01),
                         higher_better=False, noise=spread([x["idle_cpu_ticks"] or 0 for x in wf["spawns"]["serve-watch"]]))
    if "gate" in res:
        g = res["gate"]
        txt = "\n".join(line for line in g["text"].splitlines() if line.startswith("|"))
        ratios = "; ".join(f"{c} task(s): {a / b:.2f}× of in-memory" for c, (a, b) in sorted(g["rows"].items()))
        sections.append("## 6. The gate's cost: durable start record vs in-memory store\n\n"
                        f"`runread-bench gate {' '.join(g['args'])}`: `read_final_answer` through the whole service (admission, gate, re-check, "
                        "label), no HTTP, with the start records and receipts durable in a SQLite file (synchronous=FULL) against the same with "
                        "the store in memory (a measurement, not a product mode). Rounds interleave A and B; medians. The last column is how "
                        "many durable writes (start records and receipts, two per call) shared one SQLite group commit, that is one fsync "
                        "(see the machine's fsync latency below).\n\n"
                        + txt + f"\n\nDurable ÷ in-memory: {ratios}.\n")
        if g.get("allocs"):
            al = g["allocs"]
            sections[-1] += (f"\nHeap allocations per `read_final_answer` call through the service (no HTTP; valgrind's DHAT counting "
                             f"every allocation, over {al['calls']:,} calls, half on each store): {al['blocks']:.0f} blocks, "
                             f"{al['bytes'] / 1024:.1f} KiB.\n")
    if "home" in res:
        home_section(res["home"], sections, goals)
    if "wake" in res:
        w = res["wake"]
        txt = "\n".join(line for line in w["text"].splitlines() if line.startswith("|"))
        held = "\n".join(line for line in w["text"].splitlines() if "waits held at once" in line)
        sections.append("## 8. Waiting for a run: wake-up latency\n\n"
                        f"`runread-bench wake {' '.join(w['args'])}` (PostgreSQL: a fresh database per round on `RUNREAD_TEST_PG`'s server): a reader waits on a running run through the whole "
                        "service (`wait_for_run`: the wait, then the gated call); the run's last line is appended and ingested. "
                        "From the commit (when the committing store's own feed announced it) to the waiting call's answer, for "
                        "each way the wait learns of it: the change feed in one process; another process on the same SQLite file "
                        "(the waiting store's `data_version` watcher, every 20 ms while a call waits); another process on PostgreSQL "
                        "(`NOTIFY`); the same with the gateway's listener off (the re-check). Rounds interleave the four; medians "
                        "and p99.\n\n" + txt + "\n\n" + held + "\n")
        ways = next((json.loads(line)["ways"] for line in w["text"].splitlines() if line.startswith("{")), [])
        for way in ways:
            if "data_version" in way["way"]:
                goal, bound, issue = "≤ 100 ms after the commit (issue 50: across processes)", 100, "37"
            elif "re-check" in way["way"]:
                goal, bound, issue = "≤ 2 s after the commit (issue 34: one re-check, every 1 s, then the call)", 2000, "37"
            else:
                goal, bound, issue = "≤ 1 s after the commit (issue 34: within a second)", 1000, "37"
            goal_row(goals, f"4. wake-up: {way['way']}, p99", goal, f"{way['p99_ms']:.1f} ms (median {way['median_ms']:.1f})",
                     way["p99_ms"] <= bound, issue, value=way["p99_ms"], higher_better=False)
    if "snapshot" in res:
        s = res["snapshot"]
        rows = "\n".join(f"| `{r['tool']}` | {r['file_us']:.0f} | {r['snapshot_us']:.0f} | {r['snapshot_over_file']:.2f}× |" for r in s["rows"])
        sections.append("## 9. Reading a shared run from its snapshot\n\n"
                        f"`runread-bench snapshot {' '.join(s['args'])}`: one SQLite home, the Pi sample's longest run shared (its snapshot "
                        "sealed); each round times the same calls through the whole service (admission, gate, adapter, label) with the "
                        "session file there, then moved away (served from the snapshot). Medians of the rounds, µs per call.\n\n"
                        "| tool | file | snapshot | snapshot ÷ file |\n|---|---|---|---|\n" + rows + "\n")
        for r in s["rows"]:
            goal_row(goals, f"4. snapshot: `{r['tool']}` from a shared run's snapshot ÷ from its file (µs per call)", "≤ 1.2×",
                     f"{r['snapshot_over_file']:.2f}× ({r['snapshot_us']:.0f} vs {r['file_us']:.0f} µs)", r["snapshot_over_file"] <= 1.2, "37",
                     value=r["snapshot_over_file"], higher_better=False)

    if out is None:
        return goals
    L.append("# runread benchmarks\n")
    L.append(f"Generated by `scripts/bench{' --quick' if opts.quick else ''}` on {started} in {took / 60:.1f} min. "
             "Every figure below is measured in this one run on this machine; nothing is carried over from elsewhere. "
             "Performance is measured, not asserted: no test times anything.\n")
    heads = {
        "58": "## Goals (issue 58): round four — idle memory, and closing on the durable limit\n\nThe same references as "
              "issue 37's (below): the rmcp echo for memory, the durable echo for calls and artifacts, each measured side by side "
              "in this run; idle memory must at least come back to round two's ratio.",
        "37": "## Goals (issue 37): against the limit durability sets\n\nrunread commits a durable start record and a receipt for "
              "every tool call (the reference contracts require that barrier), which the plain echo does not. The *durable echo* is the "
              "plain rmcp echo plus exactly that durable work, through runread's own store, and nothing else: the limit runread can "
              "approach. Each goal is a ratio (or, from issue 34, a bound) measured side by side in this run.",
        "17": "## Goals (issue 17)\n\nEach goal is a ratio of two figures measured side by side in this run (the method of each is in its "
              "section below).",
    }
    for issue, head in heads.items():
        mine = sorted((g for g in goals if g.issue == issue), key=lambda g: g.name.split(".", 1)[0])
        if not mine:
            continue
        prev_label, prev = previous
        if prev:
            L.append(head + f"\n\n| goal | target | measured | previous run ({prev_label}) | met |\n|---|---|---|---|---|")
        else:
            L.append(head + "\n\n| goal | target | measured | met |\n|---|---|---|---|")
        for g in mine:
            met = {True: "yes", False: "**no**", None: "—"}[g.met]
            was = f" {prev.get(g.name) or prev.get(PREVIOUSLY.get(g.name, ''), '—')} |" if prev else ""
            L.append(f"| {g.name} | {g.target} | {g.measured} |{was} {met} |")
        missed = [g for g in mine if g.met is False]
        L.append("\n" + (f"{len(missed)} of {len(mine)} goals missed; see [Profiles of the missed goals](#profiles-of-the-missed-goals)."
                         if missed else "All goals met.") + "\n")
    L.append("## Machine\n\n" + "\n".join(f"- {k}: {v}" for k, v in mach.items())
             + "\n- shared: this machine's 2 cores are shared with other work (builds); the load average above shows how busy it was.\n")
    L.append("## Versions\n\n" + "\n".join(f"- {k}: {v}" for k, v in vers.items()) + "\n")
    L.append("## Method\n\n"
             "- Everything on loopback (127.0.0.1). Release builds (`cargo build --release --locked -p runread -p runread-bench`).\n"
             f"- Two cores: each server is pinned to CPU {SERVER_CPU} and each load generator or client to CPU {CLIENT_CPU} (`taskset`), so "
             "every server gets one core, whether it is multi-threaded (runread, rmcp: tokio) or not (node, Python).\n"
             "- A and B interleave: load runs rotate the server order each round; transfer, ingest and redaction alternate A and B within "
             "each round. Figures are medians of the rounds; ratios are of medians.\n"
             "- The echo peers return the exact `result` that runread returned for the same request (a 4 KiB chunk of the sample run's "
             "9,554-byte answer, its label and structured content), read once into memory. They skip what runread does per call: "
             "transport guards, key admission (hash lookup), the durable gate (start record + receipt in SQLite, synchronous=FULL), "
             "re-check, known-secret masking, labeling.\n"
             "- The durable echo (`runread-bench durable-echo-server`, issue 37) is the rmcp echo plus, per call, exactly the durable "
             "work runread's gate does: a start record and then a receipt, written through runread's own `SqliteStore` (the same "
             "schema, statements, replay check and group commit, WAL, synchronous=FULL) into a copy of the home's store taken "
             "while `runread serve` ran, on one hop to a blocking thread per call as the gate makes it. Each call writes a copy of "
             "runread's own records of that tool (the sealed input included) with fresh ids of the same lengths: the same bytes "
             "per call. Nothing else: no admission, sealing, reading, masking or labels.\n"
             "- Peer modes (each its cheapest correct mode for MCP 2026-07-28: no `initialize`, no session id): rmcp — "
             "`StreamableHttpServerConfig` with `legacy_session_mode(false)`, `json_response(true)`, `NeverSessionManager`; TypeScript SDK v2 — "
             "`createMcpHandler(factory, {legacy: 'reject', responseMode: 'json'})` (a fresh `McpServer` per request, the SDK's design) "
             "behind `toNodeHandler` on `node:http`; Python SDK — `MCPServer` (FastMCP's successor in mcp 2.x) "
             "`streamable_http_app(stateless_http=True, json_response=True)` on uvicorn (one worker, h11, asyncio); standalone FastMCP 4 "
             "(PyPI `fastmcp`) — `http_app(stateless_http=True, json_response=True)`, same uvicorn. The Python tools take the same "
             "arguments as `read_final_answer` (validated by the SDK, then ignored). "
             "Every request carries the 2026-07-28 headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and the per-request `_meta`.\n"
             "- Issue 17's goals are ratios against references measured in the same run: the stock rmcp echo (tool calls, CPU per "
             "request, footprint); a plain HTTP GET of the same file (artifacts); Pi's `SessionManager.open` and, per agent, a bare "
             "pass validating every line as JSON (`runread-bench json-pass`: serde_json into `IgnoredAny`, one line at a time, "
             "64 KiB buffered reader) over the same file (ingest); for the home, `json-pass` over all its files (first ingest), "
             "`runread-bench stat-pass` (walk and `stat` every file; re-ingest), `runread-bench select-page` (the same page of runs "
             "straight from the SQLite store; `runread runs` pages) and the RSS early in the pass (`runread watch`'s memory); "
             "ripgrep `rg -F -f` on the same text and secrets (redaction). Throughput ratios are runread ÷ reference (≥ is "
             "better); time and size ratios are runread ÷ reference (≤ is better). Each section says what is timed: in process, "
             "or a whole process from spawn to exit.\n"
             f"- Repeats: {json.dumps(reps)}.\n")
    L.extend(sections)
    notes = BENCH / "PROFILES.md"
    if notes.exists():
        L.append(notes.read_text())
    L.append("## Reproduce\n\n```sh\n"
             f"scripts/bench            # the whole run ({took / 60:.0f} min here, the release build included); writes BENCHMARKS.md\n"
             "scripts/bench --quick    # fewer, shorter repeats\n"
             "scripts/bench --only load,footprint --out /tmp/b.md\n"
             "scripts/bench --quick --only ingest,redact,home --out /tmp/b.md   # issue 17's new references\n"
             "scripts/bench --json raw.json; scripts/bench --from-json raw.json   # keep the samples; rewrite the report\n```\n\n"
             "Installs on first use (cached in `~/.cache/runread-bench`): wrk (apt), "
             "the TypeScript SDK (npm, `bench/package.json` + lock), the Python SDK and FastMCP (PyPI, `bench/requirements*.txt`), Pi (npm, through the "
             "harness, `~/.cache/runread-harness`), Claude Code and Codex (npm, through the harness), ripgrep (apt). The large Pi, "
             "Claude Code and Codex sessions are made once by the real agents and cached by their scenario's hash "
             "(`bench/{pi,claude,codex}/make_session.py`); the synthetic home (~1.25 GB) once per set of inputs "
             "(`bench/home/make_home.py`).\n")
    if comparison:
        L.append(comparison)
    out.write_text("\n".join(L))
    return goals


# Issue 58's goals read figures earlier goals already had: a report before them shows those.
PREVIOUSLY = {
    "1. idle memory: `runread serve` idle RSS ÷ the rmcp echo's": "3. footprint: idle RSS ÷ the plain echo's (issue 17's goal 6)",
    "1. idle memory: the same, against round two's ratio (the least this round must reach)":
        "3. footprint: idle RSS ÷ the plain echo's (issue 17's goal 6)",
    "2. CPU per call: server CPU per request ÷ the durable echo's": "1. tool calls: server CPU per request ÷ the durable echo's",
    "2. CPU per call: `read_final_answer` requests/s ÷ the durable echo's (4 connections)":
        "1. tool calls: `read_final_answer` requests/s ÷ the durable echo's (4 connections)",
    "3. artifacts: 8 MiB through runread's client ÷ the durable echo's chunk rate × 32 KiB (throughput)":
        "2. artifacts: 8 MiB through runread's client ÷ the durable echo's chunk rate × 32 KiB (throughput)",
}


def previous_goals(out: Path, started: str) -> tuple[str, dict[str, str]]:
    """The goals' measured figures in the report `out` is about to replace, by goal, and that run's
    date and commit: the report keeps the last two runs' figures side by side. A report of the same
    run (rewritten with --from-json) hands on its own previous column instead."""
    try:
        text = out.read_text()
    except OSError:
        return "", {}
    when = re.search(r"Generated by `scripts/bench[^`]*` on (.+?) in ", text)
    commit = re.search(r"^- runread: .*\(git ([0-9a-f]+)", text, re.M)
    same_run = bool(when) and when.group(1) == started
    column = 3 if same_run else 2
    figures: dict[str, str] = {}
    label = ""
    in_goals = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_goals = line.startswith("## Goals")
        elif in_goals and line.startswith("| goal |"):
            head = re.search(r"\| previous run \((.*?)\) \|", line)
            label = label or (head.group(1) if head else "")
        elif in_goals and line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if len(cells) >= 5 or (len(cells) >= 4 and not same_run):
                figures.setdefault(cells[0], cells[column])
    if not same_run:
        label = ", ".join(m.group(1).split(" ")[0] for m in (when, commit) if m)
    return (label, figures) if label or not same_run else ("", {})


def compare(goals: list[Goal], base: list[Goal], base_label: str) -> tuple[str, int]:
    """Each goal's figure against the same goal in an earlier run, and how many moved the wrong
    way by more than the run-to-run noise measured (the larger of the two runs' spreads)."""
    by_name = {g.name: g for g in base if g.value}
    rows, worse = [], 0
    for g in goals:
        b = by_name.get(g.name)
        if g.value is None or b is None or b.value is None:
            continue
        change = g.value / b.value
        noises = [n for n in (g.noise, b.noise) if n is not None]
        noise = max(noises) if noises else None
        wrong_way = change < 1 if g.higher_better else change > 1
        if noise is None:
            verdict = "noise not measured (one round)"
        elif abs(change - 1) <= noise:
            verdict = "within noise"
        elif wrong_way:
            verdict, worse = "**worse, beyond noise**", worse + 1
        else:
            verdict = "better, beyond noise"
        rows.append(f"| {g.issue} | {g.name} | {b.value:.3g} | {g.value:.3g} | {'↑' if g.higher_better else '↓'} | {change:.2f}× | "
                    f"{'—' if noise is None else f'±{noise * 100:.0f}%'} | {verdict} |")
    text = (f"## Against an earlier run (`--compare {base_label}`)\n\nEach goal's figure beside the same goal in the earlier run's "
            "raw samples. The noise is the larger of the two runs' own spreads of that figure (half the range of its rounds over "
            "their median; for a ratio, of the per-round ratios): a move within it is not told apart from chance. "
            f"{worse} figure(s) moved the wrong way beyond it.\n\n"
            "| issue | goal | earlier | now | better is | now ÷ earlier | noise | verdict |\n|---|---|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n")
    return text, worse


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer and shorter repeats")
    ap.add_argument("--only", default=",".join(ITEMS), help="comma-separated items: " + ",".join(ITEMS))
    ap.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    ap.add_argument("--no-build", action="store_true", help="use the release binaries already built")
    ap.add_argument("--json", type=Path, help="also write the raw samples here")
    ap.add_argument("--from-json", type=Path, help="only rewrite the report from raw samples a previous --json wrote")
    ap.add_argument("--compare", type=Path, metavar="BASE.json", nargs="?", const=LAST_RUN,
                    help="print each goal's figure against an earlier run's raw samples (--json, or bench/last-run.json) and "
                         f"exit {WORSE_EXIT} if one moved the wrong way by more than the noise measured")
    opts = ap.parse_args()
    if opts.from_json:
        d = json.loads(opts.from_json.read_text())
        opts.quick = d.get("quick", False)
        worse = finish(opts, d["results"], d["machine"], d["versions"], d["repeats"], d.get("started", "?"), d.get("took", 0.0))
        log(f"wrote {opts.out} from {opts.from_json}")
        return WORSE_EXIT if worse else 0
    only = [x for x in opts.only.split(",") if x]
    unknown = set(only) - set(ITEMS)
    if unknown:
        ap.error(f"unknown items {sorted(unknown)}")
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    mach = machine()
    reps = ({"load_rounds": 3, "load_seconds": 3, "artifact_rounds": 3, "ingest_processes": 3, "footprint_spawns": 3}
            if opts.quick else
            {"load_rounds": 5, "load_seconds": 8, "artifact_rounds": 7, "ingest_processes": 5, "footprint_spawns": 5})
    CACHE.mkdir(parents=True, exist_ok=True)
    wrk = ensure_wrk()
    node = ensure_node()
    node_modules = ensure_npm_peers()
    py = ensure_venv()
    fmpy = ensure_venv("venv-fastmcp", "requirements-fastmcp.txt")
    rg, rg_version = ensure_rg() if "redact" in only else ("rg", "")
    bins = (Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release") if opts.no_build else build()
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="runread-bench-") as t:
        tmp = Path(t)
        servers = Servers(tmp)
        try:
            home = Home(bins / "runread", tmp)
            log(f"home ready: run answer {home.final_bytes} bytes, artifact {home.artifact_sha[:12]}…")
            ctx: dict[str, Any] = {}
            if "load" in only:
                log("load: read_final_answer vs echo peers")
                res["load"] = item_load(ctx, servers, home, bins, node, node_modules, py, fmpy, reps["load_rounds"], reps["load_seconds"])
                res["load_response_bytes"] = ctx.get("load_response_bytes", {})
            elif "footprint" in only:
                port = free_port()
                servers.start("runread", home.serve_cmd(port), port)
                capture(port, home, tmp)
                servers.stop("runread")
            if "artifact" in only:
                log("artifact transfer")
                res["artifact"] = item_artifact(servers, home, bins, reps["artifact_rounds"])
            if "ingest" in only:
                log("ingest")
                res["ingest"] = item_ingest(bins, node, reps["ingest_processes"])
            if "redact" in only:
                log("redaction")
                res["redact"] = item_redact(bins, tmp, rg, opts.quick)
            if "footprint" in only:
                log("footprint")
                res["footprint"] = item_footprint(tmp, home, bins, node, node_modules, py, fmpy, reps["footprint_spawns"])
                res["link_order"] = link_order_coverage(bins / "runread")
            if "gate" in only:
                log("gate")
                res["gate"] = item_gate(bins, opts.quick)
            if "home" in only:
                log("home")
                res["home"] = item_home(bins, tmp, opts.quick)
            if "wake" in only:
                log("wake-up latency")
                res["wake"] = item_wake(bins, opts.quick)
            if "snapshot" in only:
                log("snapshot reads")
                res["snapshot"] = item_snapshot(bins, opts.quick)
        finally:
            servers.stop_all()
    vers = versions(node, node_modules, py, fmpy, wrk)
    if rg_version:
        vers["ripgrep"] = rg_version
    for agent in ("claude", "codex"):
        # A run of some items only (--only) may have made no agent session: no version to say.
        with contextlib.suppress(OSError, ValueError, KeyError, StopIteration):
            done = next(CACHE.glob(f"{agent}-session-*/done.json"))
            vers[{"claude": "claude-code", "codex": "codex"}[agent]] = json.loads(done.read_text())["agent_version"]
    took = time.monotonic() - T0
    raw = json.dumps({"results": res, "machine": mach, "versions": vers, "repeats": reps, "started": started,
                      "took": took, "quick": opts.quick}, indent=1, default=str)
    if opts.json:
        opts.json.write_text(raw)
    worse = finish(opts, res, mach, vers, reps, started, took)
    # A whole run into the report keeps its raw samples beside it: the next run's `--compare` base.
    if opts.out.resolve() == (REPO / "BENCHMARKS.md").resolve() and set(opts.only.split(",")) == set(ITEMS) and not opts.quick:
        LAST_RUN.write_text(raw)
    log(f"wrote {opts.out} ({took / 60:.1f} min)")
    return WORSE_EXIT if worse else 0


def finish(opts: argparse.Namespace, res: dict[str, Any], mach: dict[str, str], vers: dict[str, str], reps: dict[str, Any],
           started: str, took: float) -> int:
    """Writes the report (beside the figures of the report it replaces and, with --compare, against
    an earlier run's samples); prints the comparison; returns how many figures moved the wrong way."""
    comparison, worse = "", 0
    if opts.compare:
        base = json.loads(opts.compare.read_text())
        base_goals = write_report(None, base["results"], opts, base["machine"], base["versions"], base["repeats"],
                                  base.get("started", "?"), base.get("took", 0.0))
        now_goals = write_report(None, res, opts, mach, vers, reps, started, took)
        label = f"{opts.compare.name}: {base.get('started', '?')}, runread {base.get('versions', {}).get('runread', '?')}"
        comparison, worse = compare(now_goals, base_goals, label)
        print(comparison)
    write_report(opts.out, res, opts, mach, vers, reps, started, took, previous_goals(opts.out, started), comparison)
    return worse


if __name__ == "__main__":
    sys.exit(main())
