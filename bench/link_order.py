#!/usr/bin/env python3
"""Writes crates/runread/link/serve.order: the functions `runread serve` runs to start, to answer
a reader and to watch the agents' folders, one symbol per line, for the linker to lay out together
(lld's `--symbol-ordering-file`, passed by crates/runread/build.rs in release builds).

Why: the kernel maps a binary's code by windows around each page it touches (fault-around), and
fat LTO scatters the few megabytes a server runs at start over the whole 18 MiB of code, so an
idle `runread serve` held ~10 MiB of code resident where it runs ~2.7 MiB (bench/PROFILES.md,
"Issue 58"). Laid out together, that code is resident once.

How: a release `runread serve` (and `serve --watch`) under valgrind's callgrind, on a home prepared
as scripts/bench prepares it, while it starts, answers `server/discover`, `tools/list` and the
read tools a reader calls (final answer, history, status, artifacts in chunks) and idles; every
function callgrind saw run that the binary's symbol table holds, startup first. The names carry
their crates' hashes, which do not change with the code inside a function: a list goes stale only
slowly as functions are added or renamed, and a name the binary no longer has is skipped by the
linker. `scripts/bench` reports how many of the listed names the binary it measures holds.

    python3 bench/link_order.py [--runread target/release/runread]

Not part of the test suite. Needs valgrind (apt) and a release build."""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORDER = REPO / "crates" / "runread" / "link" / "serve.order"


def bench_module():
    spec = importlib.util.spec_from_file_location("bench_run", REPO / "bench" / "run.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = mod
    spec.loader.exec_module(mod)
    return mod


def executed(callgrind_out: Path) -> list[str]:
    """The functions callgrind saw run, in the order it first names them."""
    seen: dict[str, None] = {}
    for line in callgrind_out.read_text(errors="replace").splitlines():
        if line.startswith("fn="):
            name = line[3:].strip()
            m = re.match(r"\(\d+\)\s*(.*)", name)
            seen.setdefault(m.group(1) if m else name, None)
    return list(seen)


def profile(b, runread: Path, home, tmp: Path, name: str, extra: list[str], calls: bool) -> list[str]:
    """One `runread serve` under callgrind: ready, the calls, an idle second, then stopped."""
    port = b.free_port()
    out = tmp / f"callgrind.{name}"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=no", "--compress-strings=no",
           "--demangle=no", str(runread), "--home", str(home.home), "serve", "--listen", f"127.0.0.1:{port}", *extra]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        discover = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": b.META}}).encode()
        deadline = time.monotonic() + 120
        while True:
            try:
                status, _ = b.http_post(port, discover, b.mcp_headers("server/discover", None, home.key))
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"runread serve ({name}) did not answer under valgrind")
            time.sleep(0.2)
        if calls:
            listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": b.META}}).encode()
            b.http_post(port, listing, b.mcp_headers("tools/list", None, home.key))
            for tool, args in (("read_final_answer", {"target": home.target, "limit": b.CHUNK}),
                               ("read_history", {"target": home.target}),
                               ("read_work_state", {"target": home.target}),
                               ("read_target_metadata", {"target": home.target}),
                               ("list_artifacts", {"target": home.target}),
                               ("list_granted_targets", {})):
                b.http_post(port, b.tools_call(tool, args), b.mcp_headers("tools/call", tool, home.key))
            artifacts = json.loads(b.http_post(port, b.tools_call("list_artifacts", {"target": home.target}),
                                               b.mcp_headers("tools/call", "list_artifacts", home.key))[1])
            listed = (artifacts.get("result") or {}).get("structuredContent") or {}
            for art in (listed.get("artifacts") or [])[:1]:
                for offset in (0, 32768):
                    args = {"target": home.target, "artifactId": art.get("artifactId"), "version": art.get("version"),
                            "offset": offset}
                    b.http_post(port, b.tools_call("read_artifact", args), b.mcp_headers("tools/call", "read_artifact", home.key))
        time.sleep(2)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return executed(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runread", type=Path, default=REPO / "target" / "release" / "runread")
    opts = ap.parse_args()
    b = bench_module()
    nm = subprocess.run(["nm", "--defined-only", str(opts.runread)], capture_output=True, text=True, check=True).stdout
    code = {p[2] for p in (line.split() for line in nm.splitlines()) if len(p) == 3 and p[1] in "tTwW"}
    with tempfile.TemporaryDirectory(prefix="runread-order-") as t:
        tmp = Path(t)
        home = b.Home(opts.runread, tmp)
        start = profile(b, opts.runread, home, tmp, "start", [], calls=False)
        answer = profile(b, opts.runread, home, tmp, "answer", ["--calls-per-minute", "1000000"], calls=True)
        watch = profile(b, opts.runread, home, tmp, "watch", ["--watch", "--pi", str(tmp / "pi")], calls=False)
    order: dict[str, None] = {}
    for name in start + answer + watch:
        if name in code:
            order.setdefault(name, None)
    ORDER.parent.mkdir(parents=True, exist_ok=True)
    ORDER.write_text("".join(f"{n}\n" for n in order))
    print(f"{ORDER.relative_to(REPO)}: {len(order):,} functions (start {len(start):,}, answer {len(answer):,}, "
          f"watch {len(watch):,} seen by callgrind)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
