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
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import harness_session  # noqa: E402


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def scenario() -> dict[str, Any]:
    """The shared scenario (bench/harness_session.py) in Pi's tool vocabulary, each step in JSON
    mode with a 300 s timeout."""
    return harness_session.scenario(bash, {"mode": "json", "timeout_s": 300}, {})


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
