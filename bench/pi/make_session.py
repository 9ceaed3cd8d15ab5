#!/usr/bin/env python3
"""A large, real Pi session for the ingest comparison, made by the real Pi agent (0.73.1) driven
by the harness's scripted model (../shared/harness/pi-scenario.py), cached by scenario hash.

    python3 bench/pi/make_session.py [--harness DIR] [--cache DIR]   -> prints the session file's path

The scenario: STEPS prompts (the first starts the session, the rest `continue: true` it), each
run doing TURNS model turns of CALLS parallel `bash` calls that print 30-line slices of a log file
in the workspace, then a final answer: ~2,600 entries, several MiB. Pi's auto-compaction is off
(settings.json in the agent dir) so every entry stays; the mock reports small token usage anyway.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEPS, TURNS, CALLS, SLICE = 20, 6, 20, 30
LOG_LINES = 6000
WORDS = ("build", "test", "cache", "fetch", "resolve", "link", "warn", "ok", "naïve", "résumé",
         "retry", "timeout", "spawn", "exit", "✓", "parse", "index", "shard", "merge", "emit")


def log_file() -> str:
    lines = []
    for i in range(LOG_LINES):
        h = hashlib.sha256(str(i).encode()).hexdigest()
        words = " ".join(WORDS[int(h[j], 16) + (j % 5)] for j in range(8))
        lines.append(f"{i:05d} 2026-11-30T01:{(i // 60) % 60:02d}:{i % 60:02d}Z [{h[:8]}] {words} {h[8:40]}")
    return "\n".join(lines) + "\n"


def scenario() -> dict:
    steps, responses = [], []
    n = 0
    for s in range(STEPS):
        steps.append({"prompt": f"Step {s + 1}: read the next part of logs/build.log and report what failed.",
                      "continue": s > 0, "mode": "json", "timeout_s": 300})
        for t in range(TURNS):
            calls = []
            for c in range(CALLS):
                start = (n * SLICE) % (LOG_LINES - SLICE) + 1
                calls.append({"name": "bash", "arguments": {"command": f"sed -n '{start},{start + SLICE - 1}p' logs/build.log"}})
                n += 1
            responses.append({"text": f"Reading slices {t + 1}/{TURNS} of step {s + 1}.", "tool_calls": calls})
        body = "\n".join(f"- slice {k}: retries and a timeout in shard {(s * 7 + k) % 13}, then ✓ ok" for k in range(40))
        responses.append({"text": f"Step {s + 1} summary (naïve résumé, 日本語 ok):\n{body}\nNothing else failed.", "chunks": 3})
    return {"steps": steps, "responses": responses, "files": {"logs/build.log": log_file()}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", type=Path, default=Path(os.environ.get("RUNREAD_HARNESS_DIR", REPO.parent / "shared" / "harness")))
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("RUNREAD_BENCH_CACHE", Path.home() / ".cache" / "runread-bench")))
    opts = ap.parse_args()
    sc = scenario()
    blob = json.dumps(sc, sort_keys=True).encode()
    digest = hashlib.sha256(blob).hexdigest()[:16]
    out = opts.cache / f"pi-session-{digest}"
    done = out / "session.jsonl"
    if done.exists():
        print(done)
        return 0
    script = opts.harness / "pi-scenario.py"
    if not script.exists():
        print(f"harness not found at {script} (set RUNREAD_HARNESS_DIR)", file=sys.stderr)
        return 1
    if out.exists():
        shutil.rmtree(out)
    (out / "agent").mkdir(parents=True)
    # Keep every entry: no auto-compaction (it would also consume scripted responses).
    (out / "agent" / "settings.json").write_text(json.dumps({"compaction": {"enabled": False}}))
    # The harness logs every model request (the whole context, each turn: hundreds of MiB here).
    (out / "llm-requests.jsonl").symlink_to(os.devnull)
    scen = out / "scenario.json"
    scen.write_bytes(blob)
    with open(out / "harness.log", "wb") as logf:
        r = subprocess.run([sys.executable, str(script), str(scen), str(out)], stdout=logf, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        print(f"harness failed (exit {r.returncode}); see {out / 'harness.log'}", file=sys.stderr)
        return 1
    manifest = json.loads((out / "manifest.json").read_text())
    bad = [s for s in manifest["steps"] if s["exit_code"] != 0]
    files = manifest["session_files"]
    if bad or len(files) != 1:
        print(f"harness: {len(bad)} failed steps, {len(files)} session files; see {out}", file=sys.stderr)
        return 1
    shutil.copyfile(out / files[0], done)
    for ev in out.glob("events-*.jsonl"):  # the event streams (~100 MiB) are not needed
        ev.unlink()
    print(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
