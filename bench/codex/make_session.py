#!/usr/bin/env python3
"""A large, real Codex session (rollout) for the ingest comparison, made by the real Codex CLI
(0.171.0) driven by the harness's scripted model (../shared/harness/codex-scenario.py), cached by
scenario hash under the bench cache.

    python3 bench/codex/make_session.py [--harness DIR] [--cache DIR]   -> prints the session file's path

The scenario is the Pi one's (bench/harness_session.py): 20 prompts (`codex exec resume --last`
after the first), each run 6 model turns of 20 `exec_command` calls printing 30-line slices of a
log file, then a final answer. The file keeps its name, `rollout-<local time>-<thread id>.jsonl`.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import harness_session  # noqa: E402


def exec_command(command: str) -> dict[str, Any]:
    return {"name": "exec_command", "arguments": {"cmd": command}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", type=Path, default=Path(os.environ.get("RUNREAD_HARNESS_DIR", REPO.parent / "shared" / "harness")))
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("RUNREAD_BENCH_CACHE", Path.home() / ".cache" / "runread-bench")))
    opts = ap.parse_args()
    sc = harness_session.scenario(exec_command, {}, {})
    print(harness_session.make("codex-session", "codex-scenario.py", sc, opts.harness, opts.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
