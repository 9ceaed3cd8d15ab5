"""Shared by bench/{pi,claude,codex}/make_session.py: a large real session made by a real agent
CLI driven by the harness's scripted model, cached by scenario hash (`make`; Pi's script keeps its
own cache layout).

The scenario: STEPS prompts (the first starts the session,
the rest continue it), each run doing TURNS model turns of CALLS parallel shell calls that print
30-line slices of a log file in the workspace, then a final answer.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

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


def scenario(call: Callable[[str], dict[str, Any]], step_extra: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`call(command)` is one shell tool call in the agent's tool vocabulary."""
    steps, responses = [], []
    n = 0
    for s in range(STEPS):
        steps.append({"prompt": f"Step {s + 1}: read the next part of logs/build.log and report what failed.",
                      "continue": s > 0, "timeout_s": 600, **step_extra})
        for t in range(TURNS):
            calls = []
            for _ in range(CALLS):
                start = (n * SLICE) % (LOG_LINES - SLICE) + 1
                calls.append(call(f"sed -n '{start},{start + SLICE - 1}p' logs/build.log"))
                n += 1
            responses.append({"text": f"Reading slices {t + 1}/{TURNS} of step {s + 1}.", "tool_calls": calls})
        body = "\n".join(f"- slice {k}: retries and a timeout in shard {(s * 7 + k) % 13}, then ✓ ok" for k in range(40))
        responses.append({"text": f"Step {s + 1} summary (naïve résumé, 日本語 ok):\n{body}\nNothing else failed.", "chunks": 3})
    return {"steps": steps, "responses": responses, "files": {"logs/build.log": log_file()}, **extra}


def make(prefix: str, script_name: str, sc: dict[str, Any], harness: Path, cache: Path) -> Path:
    """Runs the harness once per scenario hash; returns the cached session file (its original name
    kept, under CACHE/PREFIX-HASH/session/)."""
    blob = json.dumps(sc, sort_keys=True).encode()
    digest = hashlib.sha256(blob).hexdigest()[:16]
    out = cache / f"{prefix}-{digest}"
    keep = out / "session"
    done = out / "done.json"
    if done.exists():
        return keep / json.loads(done.read_text())["file"]
    script = harness / script_name
    if not script.exists():
        raise SystemExit(f"harness not found at {script} (set RUNREAD_HARNESS_DIR)")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    # The harness logs every model request (the whole context, each turn: hundreds of MiB here).
    (out / "llm-requests.jsonl").symlink_to("/dev/null")
    scen = out / "scenario.json"
    scen.write_bytes(blob)
    with open(out / "harness.log", "wb") as logf:
        r = subprocess.run([sys.executable, str(script), str(scen), str(out)], stdout=logf, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise SystemExit(f"harness failed (exit {r.returncode}); see {out / 'harness.log'}")
    manifest = json.loads((out / "manifest.json").read_text())
    bad = [s for s in manifest["steps"] if s["exit_code"] != 0]
    files = [f for f in manifest["session_files"] if "/subagents/" not in f]
    if bad or len(files) != 1:
        raise SystemExit(f"harness: {len(bad)} failed steps, {len(files)} session files; see {out}")
    src = out / files[0]
    keep.mkdir()
    shutil.copyfile(src, keep / src.name)
    # Only the session file is kept: the event streams, the agent's config dir and the workspace go.
    for p in list(out.iterdir()):
        if p.name not in ("session", "scenario.json", "manifest.json", "harness.log"):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
    done.write_text(json.dumps({"file": src.name, "agent_version": manifest.get("version"),
                                "cwd": manifest.get("workspace")}))
    return keep / src.name
