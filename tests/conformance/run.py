#!/usr/bin/env python3
"""The official MCP conformance suite (server side) against ``runread serve``.

    python3 tests/conformance/run.py [--runread target/debug/runread]

1. Installs (once, into $RUNREAD_CONFORMANCE_CACHE, default ~/.cache/runread-conformance) an npm
   prefix with node (npm package ``node``, pinned) and @modelcontextprotocol/conformance (pinned).
   Later runs check the installed versions and reuse them; then nothing here needs the network.
2. Builds a throwaway runread home + workspace with the ``sample`` Pi fixture (only the header's
   ``cwd`` changed), ingests it, grants its 9554-byte run with every feature to one key, and starts
   ``runread serve`` on a free loopback port.
3. The suite cannot send extra headers, so it talks to a small loopback pass-through on another
   free port that adds ``x-runread-key: <key>`` to each request head and forwards everything else
   byte for byte (header order, casing, duplicates and whitespace, bodies, streamed responses).
   One exception: in Host and Origin a loopback authority naming the pass-through's port is given
   runread's port, so runread sees what the suite would send it directly (evil.example.com and
   any other value pass untouched).
4. Runs every server scenario the suite lists (``conformance list --server``), one at a time, in
   each protocol era it applies to, as runread serves both: at 2026-07-28 (``--spec-version
   2026-07-28``, the stateless wire) if the scenario lists it, and at the newest dated version it
   lists (``--spec-version 2025-11-25``: the ``initialize`` handshake) if it lists one. An
   extension scenario runs at the version the suite picks for it (2026-07-28). As in the suite's
   own ``--expected-failures`` mode, a check with status FAILURE or WARNING fails its scenario.
5. Compares with tests/conformance/expected-failures.txt: ``scenario-id  # reason`` lets the whole
   scenario fail, ``scenario-id:check-id  # reason`` only that check; ``scenario-id@VERSION…``
   narrows either to the run at that version. A failure not listed, or a listed failure that did
   not happen, fails this run.

Prints one line per scenario: PASS, SKIP (the suite found nothing to test: every check INFO or
SKIPPED), XFAIL (failed exactly as listed), FAIL (an unlisted failure), XPASS (a listed failure
that did not happen: the list is stale). Ends with ``conformance: N passed, M failed``
(N = PASS + SKIP + XFAIL; M = FAIL + XPASS + setup errors) and exits 1 if M > 0. The server and
the pass-through are stopped on every path.
"""

from __future__ import annotations

import argparse
import contextlib
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "clients"))
# Shared, dependency-free helpers of the outside-clients test (fixture placement, runread CLI, server
# start/stop, cache lock).
from outside_clients import (  # noqa: E402
    Fatal, Runread, cache_lock, final_answers, fixture_session, free_port, place_session, stop, tail,
    wait_for_port,
)

NODE_VERSION = "22.23.3"  # npm package `node`; the suite needs node >= 22
CONFORMANCE_VERSION = "0.2.0-alpha.12"  # the 2026-07-28 series (npm dist-tag `latest` is still 0.1.x)
CONFORMANCE_PKG = "@modelcontextprotocol/conformance"
CONFORMANCE_ENTRY = Path("node_modules/@modelcontextprotocol/conformance/dist/index.js")
SPEC = "2026-07-28"  # the modern era
DATED = ("2025-11-25", "2025-06-18", "2025-03-26")  # the dated era, newest first (runread serves all three)
EXPECTED_FILE = HERE / "expected-failures.txt"
KEY_HEADER = b"x-runread-key"
FEATURES = "final_answer,history,aggregate,metadata,artifacts,status"
SAMPLE_BYTES = 9554
KEY_RE = re.compile(r"^[0-9a-f]{64}$")
SCENARIO_RE = re.compile(r"^\s+- (\S+) \[([^\]]*)\]\s*$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the suite colours its output even with NO_COLOR


# --------------------------------------------------------------------------- results


class Tally:
    def __init__(self) -> None:
        self.counts = {"PASS": 0, "SKIP": 0, "XFAIL": 0, "FAIL": 0, "XPASS": 0}
        self.errors = 0

    def line(self, tag: str, name: str, detail: str = "") -> None:
        self.counts[tag] += 1
        print(f"{tag} {name}" + (f": {detail}" if detail else ""), flush=True)

    def error(self, name: str, detail: str) -> None:
        self.errors += 1
        print(f"FAIL {name}: {detail}", flush=True)

    @property
    def passed(self) -> int:
        return self.counts["PASS"] + self.counts["SKIP"] + self.counts["XFAIL"]

    @property
    def failed(self) -> int:
        return self.counts["FAIL"] + self.counts["XPASS"] + self.errors


# --------------------------------------------------------------------------- tools


def npm_versions(prefix: Path) -> tuple[str | None, str | None]:
    node = prefix / "node_modules" / ".bin" / "node"
    node_v = conf_v = None
    if node.exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            r = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30)
            if r.returncode == 0:
                node_v = r.stdout.strip().lstrip("v")
    pkg = prefix / "node_modules" / CONFORMANCE_PKG / "package.json"
    with contextlib.suppress(OSError, ValueError):
        conf_v = json.loads(pkg.read_text()).get("version")
    if not (prefix / CONFORMANCE_ENTRY).exists():
        conf_v = None
    return node_v, conf_v


def ensure_npm(cache: Path) -> tuple[Path, Path, str]:
    prefix = cache / "npm"
    want = (NODE_VERSION, CONFORMANCE_VERSION)
    node = prefix / "node_modules" / ".bin" / "node"
    entry = prefix / CONFORMANCE_ENTRY
    desc = f"node {NODE_VERSION} + {CONFORMANCE_PKG}@{CONFORMANCE_VERSION}"
    if npm_versions(prefix) == want:
        return node, entry, f"{desc} (cached in {prefix})"
    npm = shutil.which("npm")
    if npm is None:
        raise Fatal("npm is not on PATH; it is needed once to fill the conformance cache")
    prefix.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log = cache / "npm-install.log"
    with open(log, "wb") as out:
        r = subprocess.run(
            [
                npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--save-exact",
                f"node@{NODE_VERSION}", f"{CONFORMANCE_PKG}@{CONFORMANCE_VERSION}",
            ],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=900,
        )
    if r.returncode != 0:
        raise Fatal(f"npm install failed (rc {r.returncode}); log {log}:\n{tail(log.read_bytes())}")
    got = npm_versions(prefix)
    if got != want:
        raise Fatal(f"after npm install {prefix} has node {got[0]}, conformance {got[1]}; want {want}; log {log}")
    return node, entry, f"{desc} (installed into {prefix} in {time.monotonic() - t0:.0f}s)"


# --------------------------------------------------------------------------- key-adding pass-through


class _Conn:
    """Buffered reads from the client side of one proxied connection."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _fill(self) -> bool:
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buf += data
        return True

    def until(self, marker: bytes, limit: int = 1 << 20) -> bytes | None:
        """Bytes up to and including marker; None on EOF before any byte; raises on EOF mid-way."""
        while marker not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("request head too large")
            if not self._fill():
                if self.buf:
                    raise ConnectionError("client closed mid-request")
                return None
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise ConnectionError("client closed mid-body")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


class KeyProxy:
    """127.0.0.1:<port> -> 127.0.0.1:<upstream>, adding one ``x-runread-key`` header to every request
    head. Nothing else is changed: the suite's Host, Origin and other headers (order, casing,
    duplicates, whitespace), bodies (Content-Length or chunked) and the server's responses (JSON or
    SSE, streamed) pass byte for byte. Requests on a kept-alive connection are framed one by one."""

    def __init__(self, upstream_port: int, key: str) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.key_line = KEY_HEADER + b": " + key.encode() + b"\r\n"
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        # The suite derives Host and Origin from its URL, i.e. this pass-through's port; in those two
        # headers (only) a loopback authority with this port becomes runread's, so runread sees what
        # the suite would send it directly. Any other value (evil.example.com, ...) is untouched.
        self.authority = [
            (f"{h}:{self.port}".encode(), f"{h}:{upstream_port}".encode()) for h in ("127.0.0.1", "localhost", "[::1]")
        ]
        self.socks: set[socket.socket] = set()
        self.lock = threading.Lock()
        self.closed = False
        self.requests = 0
        threading.Thread(target=self._accept, name="key-proxy", daemon=True).start()

    def _track(self, s: socket.socket) -> None:
        with self.lock:
            if self.closed:
                s.close()
                raise OSError("proxy closed")
            self.socks.add(s)

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(c,), daemon=True).start()

    def _handle(self, c: socket.socket) -> None:
        u = None
        try:
            self._track(c)
            u = socket.create_connection(self.upstream, timeout=10)
            u.settimeout(None)
            self._track(u)
            for s in (c, u):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pump, args=(u, c), daemon=True).start()
            conn = _Conn(c)
            while True:
                head = conn.until(b"\r\n\r\n")
                if head is None:
                    break
                with self.lock:
                    self.requests += 1
                u.sendall(self._rewrite(head[:-2]) + self.key_line + b"\r\n")
                self._body(conn, head, u)
            with contextlib.suppress(OSError):
                u.shutdown(socket.SHUT_WR)
        except (OSError, ValueError, ConnectionError):
            for s in (c, u):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)

    def _rewrite(self, head: bytes) -> bytes:
        lines = head.split(b"\r\n")
        for i, raw in enumerate(lines[1:], 1):
            name, sep, value = raw.partition(b":")
            if sep and name.strip().lower() in (b"host", b"origin"):
                for mine, theirs in self.authority:
                    value = value.replace(mine, theirs)
                lines[i] = name + sep + value
        return b"\r\n".join(lines)

    @staticmethod
    def _body(conn: _Conn, head: bytes, u: socket.socket) -> None:
        length, chunked = 0, False
        for raw in head.split(b"\r\n")[1:]:
            name, sep, value = raw.partition(b":")
            if not sep:
                continue
            n = name.strip().lower()
            if n == b"content-length":
                length = int(value.strip())
            elif n == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if chunked:
            while True:
                size_line = conn.until(b"\r\n")
                if size_line is None:
                    raise ConnectionError("client closed mid-chunk")
                u.sendall(size_line)
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while True:  # trailers, then the empty line
                        t = conn.until(b"\r\n")
                        if t is None:
                            raise ConnectionError("client closed in trailers")
                        u.sendall(t)
                        if t == b"\r\n":
                            return
                u.sendall(conn.exact(size + 2))
        elif length:
            u.sendall(conn.exact(length))

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
                with contextlib.suppress(OSError):
                    s.shutdown(how)

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


# --------------------------------------------------------------------------- scenarios


def list_scenarios(node: Path, entry: Path, cwd: Path) -> list[tuple[str, list[str]]]:
    r = subprocess.run([str(node), str(entry), "list", "--server"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, cwd=cwd, timeout=120)
    if r.returncode != 0:
        raise Fatal(f"conformance list --server exited {r.returncode}: {tail(r.stderr or r.stdout)}")
    out = []
    for line in r.stdout.splitlines():
        m = SCENARIO_RE.match(line)
        if m:
            out.append((m.group(1), [v.strip() for v in m.group(2).split(",")]))
    if not out:
        raise Fatal(f"conformance list --server listed no scenarios:\n{tail(r.stdout)}")
    return out


Key = tuple[str, "str | None"]  # (scenario id, the version an entry is narrowed to, or None: every run of it)


class Expected:
    """tests/conformance/expected-failures.txt. Each entry is ``scenario-id  # reason`` (the whole
    scenario may fail) or ``scenario-id:check-id  # reason`` (only that check may fail; every other
    check of the scenario is still enforced). ``scenario-id@VERSION`` (then optionally ``:check-id``)
    narrows the entry to the scenario's run at that protocol version; without it the entry applies
    to every era the scenario runs in. Blank lines and lines starting with ``#`` are comments."""

    def __init__(self, path: Path) -> None:
        self.whole: dict[Key, str] = {}
        self.checks: dict[Key, dict[str, str]] = {}
        for n, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            entry, sep, reason = line.partition("#")
            entry, reason = entry.strip(), reason.strip()
            if not sep or not reason or not entry or any(ch.isspace() for ch in entry):
                raise Fatal(f"{path.name}:{n}: want `scenario-id[@version][:check-id]  # reason`, got {raw!r}")
            head, colon, check = entry.partition(":")
            scenario, at, version = head.partition("@")
            if at and not version:
                raise Fatal(f"{path.name}:{n}: empty version in {entry!r}")
            key: Key = (scenario, version or None)
            if colon and not check:
                raise Fatal(f"{path.name}:{n}: empty check id in {entry!r}")
            # a run is covered by at most one whole entry, and never by a whole entry and check entries
            overlaps = [k for k in list(self.whole) + list(self.checks)
                        if k[0] == scenario and (k[1] is None or key[1] is None or k[1] == key[1])]
            if any(k in self.whole for k in overlaps) or (not colon and overlaps) or check in self.checks.get(key, {}):
                raise Fatal(f"{path.name}:{n}: {head} is already listed (a scenario's run is listed whole or by checks, once)")
            if colon:
                self.checks.setdefault(key, {})[check] = reason
            else:
                self.whole[key] = reason

    def keys(self) -> set[Key]:
        return set(self.whole) | set(self.checks)

    def whole_reason(self, name: str, version: str | None) -> str | None:
        return self.whole.get((name, version), self.whole.get((name, None)))

    def checks_for(self, name: str, version: str | None) -> dict[str, str]:
        return {**self.checks.get((name, None), {}), **self.checks.get((name, version), {})}

    def __len__(self) -> int:
        return len(self.whole) + sum(len(c) for c in self.checks.values())


FAILING = ("FAILURE", "WARNING")  # as the suite's own --expected-failures judges a check
SEVERITY = {"FAILURE": 4, "WARNING": 3, "SUCCESS": 2, "INFO": 1, "SKIPPED": 0}


def verdicts(checks: list[dict[str, Any]]) -> dict[str, str]:
    """check id -> its most severe status (ids can repeat within a scenario)."""
    out: dict[str, str] = {}
    for c in checks:
        cid, st = str(c.get("id")), str(c.get("status"))
        if cid not in out or SEVERITY.get(st, 5) > SEVERITY.get(out[cid], 5):
            out[cid] = st
    return out


def judge(name: str, version: str | None, checks: list[dict[str, Any]] | None, expected: Expected) -> tuple[str, str]:
    """(tag, detail) for one scenario run at one version: PASS, SKIP (no check passed or failed: the
    suite found nothing to test), XFAIL (failed as listed), FAIL (a failure not listed) or XPASS (a
    listed failure that did not happen: the list is stale)."""
    if not checks:
        return "FAIL", "the suite reported no checks"
    v = verdicts(checks)
    failing = [cid for cid, st in v.items() if st in FAILING]
    statuses = [c.get("status") for c in checks]  # shown as the suite counts them (ids can repeat)
    n_ok = statuses.count("SUCCESS")
    counts = f"{n_ok}/{n_ok + statuses.count('FAILURE') + statuses.count('WARNING')} checks"
    skipped = statuses.count("SKIPPED")
    if skipped:
        counts += f", {skipped} skipped"
    whole = expected.whole_reason(name, version)
    if whole is not None:
        if failing:
            return "XFAIL", f"{whole} ({counts})"
        return "XPASS", f"listed in expected-failures.txt but did not fail ({counts}); remove the entry"
    listed = expected.checks_for(name, version)
    unlisted = [cid for cid in failing if cid not in listed]
    if unlisted:
        return "FAIL", f"{counts} — " + describe_failures([c for c in checks if str(c.get("id")) in unlisted])
    stale = [cid for cid in listed if v.get(cid) not in FAILING]
    if stale:
        return "XPASS", (f"listed check(s) did not fail: "
                         + ", ".join(f"{cid} ({v.get(cid, 'absent')})" for cid in stale) + f" ({counts}); remove them")
    if listed:
        return "XFAIL", f"{counts}; the failing checks are the listed ones: {', '.join(failing)}"
    if n_ok == 0 and not failing:
        why = "; ".join(ANSI.sub("", str(c.get("errorMessage") or c.get("description") or ""))[:300] for c in checks)
        return "SKIP", f"no check passed or failed: {why}"
    warn = [cid for cid, st in v.items() if st == "WARNING"]
    return "PASS", counts + (f", warnings: {', '.join(warn)}" if warn else "")


def wires(versions: list[str]) -> list[str | None]:
    """The versions a scenario runs at: 2026-07-28 if it lists it, and the newest dated version it
    lists (runread serves both eras); None for an extension scenario (the suite's own choice)."""
    out: list[str | None] = [SPEC] if SPEC in versions else []
    out += [v for v in DATED if v in versions][:1]
    return out or [None]


def run_scenario(node: Path, entry: Path, url: str, name: str, version: str | None, out: Path,
                 timeout_ms: int, procs: list[subprocess.Popen]) -> dict[str, Any]:
    out.mkdir(parents=True)
    cmd = [str(node), str(entry), "server", "--url", url, "--scenario", name, "-o", str(out),
           "--timeout", str(timeout_ms)]
    if version:
        cmd += ["--spec-version", version]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         cwd=out, env=dict(os.environ, NO_COLOR="1", FORCE_COLOR="0"), start_new_session=True)
    procs.append(p)
    try:
        stdout, _ = p.communicate(timeout=timeout_ms / 1000 + 60)
    except subprocess.TimeoutExpired:
        kill_group(p)
        stdout, _ = p.communicate()
        stdout += b"\n[run.py: killed after the scenario timeout + 60 s]"
    finally:
        procs.remove(p)
    text = stdout.decode("utf-8", "replace")
    (out / "output.txt").write_text(text)
    files = sorted(out.glob("**/checks.json"))
    checks = json.loads(files[0].read_text()) if len(files) == 1 else None
    return {"rc": p.returncode, "output": text, "checks": checks, "seconds": time.monotonic() - t0}


def kill_group(p: subprocess.Popen) -> None:
    if p.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5)


def describe_failures(checks: list[dict[str, Any]], limit: int = 700) -> str:
    parts = []
    for c in checks:
        if c.get("status") in FAILING:
            msg = c.get("errorMessage") or c.get("description") or ""
            part = f"[{c.get('id')}] {c.get('status')}: {ANSI.sub('', str(msg))}"
            if c.get("details"):
                part += f" details: {json.dumps(c['details'], separators=(',', ':'))}"
            parts.append(part[:limit])
    return "; ".join(parts)


# --------------------------------------------------------------------------- main


class Run:
    def __init__(self, opts: argparse.Namespace, tmp: Path, tally: Tally) -> None:
        self.opts, self.tmp, self.tally = opts, tmp, tally
        self.server: subprocess.Popen | None = None
        self.server_log: Path | None = None
        self.proxy: KeyProxy | None = None
        self.procs: list[subprocess.Popen] = []

    def cleanup(self) -> None:
        for p in list(self.procs):
            kill_group(p)
        if self.proxy is not None:
            self.proxy.close()
        stop(self.server)

    def setup_server(self) -> tuple[str, str]:
        tmp = self.tmp
        home = tmp / "home"
        home.mkdir(mode=0o700)
        ws, pi = tmp / "workspace", tmp / "pi"
        cwd = ws / "sample"
        cwd.mkdir(parents=True)
        src = fixture_session("sample")
        sid, _ = place_session(src, pi, cwd)
        answers = {k: v for k, v in final_answers(src).items() if v is not None}
        rr = Runread(self.opts.runread, home)
        rr.ok("workspace", "add", str(ws))
        rr.ok("ingest", "--pi", str(pi))
        runs = json.loads(rr.ok("runs", "--json"))
        cands = [r for r in runs if r["target"]["sessionId"] == sid and r.get("status") == "completed"
                 and r.get("answerState") == "available" and r.get("finalBytes") == SAMPLE_BYTES]
        if len(cands) != 1 or len(answers.get(cands[0]["target"]["runId"], "").encode()) != SAMPLE_BYTES:
            raise Fatal(f"expected one available {SAMPLE_BYTES}-byte sample run, runread runs --json: {tail(json.dumps(runs), 600)}")
        t = cands[0]["target"]
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        g = json.loads(rr.ok("grant", "--run", t["runId"], "--session", t["sessionId"], "--features", FEATURES,
                             "--expires", "2h", "--to", "conformance", "--url", url, "--json"))
        if not KEY_RE.fullmatch(g.get("key", "")) or g.get("target") != t:
            raise Fatal(f"grant --json unexpected: target {g.get('target')} (want {t})")
        self.server_log = tmp / "serve.log"
        with open(self.server_log, "wb") as logf:
            self.server = subprocess.Popen(
                [str(self.opts.runread), "--home", str(home), "serve", "--listen", f"127.0.0.1:{port}"],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=rr.env, start_new_session=True,
            )
        wait_for_port(port, self.server, self.server_log)
        return url, g["key"]

    def main(self) -> None:
        opts, tally = self.opts, self.tally
        expected = Expected(EXPECTED_FILE)
        with cache_lock(opts.cache):
            node, entry, desc = ensure_npm(opts.cache)
        print(f"tools: {desc}", flush=True)
        scenarios = list_scenarios(node, entry, self.tmp)
        known = {n: wires(v) for n, v in scenarios}
        for name, version in sorted(expected.keys(), key=lambda k: (k[0], k[1] or "")):
            if name not in known:
                tally.error(f"expected-failures.txt: {name}", "not a server scenario of this conformance version")
            elif version is not None and version not in known[name]:
                tally.error(f"expected-failures.txt: {name}@{version}",
                            f"{name} runs at {', '.join(str(v) for v in known[name])} only")
        if opts.scenario:
            unknown = [s for s in opts.scenario if s not in known]
            if unknown:
                raise Fatal(f"unknown scenario(s): {', '.join(unknown)}")
            scenarios = [s for s in scenarios if s[0] in opts.scenario]

        direct_url, key = self.setup_server()
        self.proxy = KeyProxy(int(direct_url.rsplit(":", 1)[1].split("/")[0]), key)
        url = f"http://127.0.0.1:{self.proxy.port}/mcp"
        print(f"server: runread serve at {direct_url}; the suite uses {url} (adds {KEY_HEADER.decode()})", flush=True)
        runs = [(name, version) for name, versions in scenarios for version in wires(versions)]
        print(f"scenarios: {len(scenarios)} server scenarios, {len(runs)} runs ({sum(1 for _, v in runs if v == SPEC)} at "
              f"{SPEC}, {sum(1 for _, v in runs if v in DATED)} in the dated era, {sum(1 for _, v in runs if v is None)} "
              f"extensions); expected-failures.txt lists {len(expected.whole)} whole scenarios and "
              f"{len(expected) - len(expected.whole)} single checks", flush=True)

        results_dir = self.tmp / "results"
        for name, version in runs:
            wire = version or f"{SPEC} (extension)"
            label = f"{name} [{wire}]"
            if self.server.poll() is not None:
                raise Fatal(f"runread serve exited {self.server.returncode} before {name}: {tail(self.server_log.read_bytes())}")
            r = run_scenario(node, entry, url, name, version, results_dir / f"{name}@{version or 'extension'}",
                             opts.timeout_ms, self.procs)
            if r["checks"]:
                tag, detail = judge(name, version, r["checks"], expected)
            else:
                # the suite itself broke (crash, timeout): never an expected failure
                tag, detail = "FAIL", f"no checks.json (rc {r['rc']}): {tail(ANSI.sub('', r['output']), 800)}"
            if opts.verbose and tag == "XFAIL":
                detail += " — " + describe_failures(r["checks"])
            tally.line(tag, label, f"{detail} ({r['seconds']:.1f}s)")
        if self.server.poll() is not None:
            tally.error("runread serve", f"exited {self.server.returncode}: {tail(self.server_log.read_bytes())}")
        c = tally.counts
        print(f"scenarios: {c['PASS']} pass, {c['SKIP']} skipped by the suite, {c['XFAIL']} expected failures, {c['FAIL']} fail, "
              f"{c['XPASS']} unexpectedly pass; {self.proxy.requests} requests through the key pass-through", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runread", type=Path, default=REPO / "target" / "debug" / "runread",
                   help="the runread binary to test (default target/debug/runread)")
    p.add_argument("--cache", type=Path,
                   default=Path(os.environ.get("RUNREAD_CONFORMANCE_CACHE") or Path.home() / ".cache" / "runread-conformance"),
                   help="where node and the suite are installed ($RUNREAD_CONFORMANCE_CACHE, default ~/.cache/runread-conformance)")
    p.add_argument("--scenario", action="append", help="run only this scenario (repeatable; for debugging)")
    p.add_argument("--timeout-ms", type=int, default=30000, help="the suite's per-scenario timeout (default 30000)")
    p.add_argument("--verbose", action="store_true", help="also show the failing checks of expected failures")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (home, serve.log, per-scenario results)")
    opts = p.parse_args(argv)
    opts.runread = opts.runread.resolve()
    opts.cache = opts.cache.expanduser().resolve()

    tally = Tally()
    started = time.monotonic()
    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="runread-conformance-")))
    run = Run(opts, tmp, tally)

    def on_sigterm(*_: Any) -> None:
        run.cleanup()
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if not (opts.runread.is_file() and os.access(opts.runread, os.X_OK)):
            raise Fatal(f"--runread {opts.runread} is not an executable file")
        run.main()
    except Fatal as e:
        tally.error("setup", str(e))
    except (subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        tally.error("unexpected error", f"{type(e).__name__}: {e}")
    except (KeyboardInterrupt, SystemExit) as e:
        tally.error("interrupted", type(e).__name__)
    finally:
        run.cleanup()
        if tally.failed and run.server_log is not None and run.server_log.exists():
            print(f"--- runread serve log (tail) ---\n{tail(run.server_log.read_bytes(), 3000)}\n---", flush=True)
        if opts.keep or (tally.failed and any(tmp.iterdir())):
            print(f"temp dir kept: {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"({time.monotonic() - started:.1f}s)", flush=True)
    print(f"conformance: {tally.passed} passed, {tally.failed} failed", flush=True)
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
