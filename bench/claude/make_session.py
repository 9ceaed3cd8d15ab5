#!/usr/bin/env python3
"""A large, real Claude Code session for the ingest comparison, made by the real Claude Code CLI
(2.1.328) driven by the harness's scripted model (../shared/harness/claude-scenario.py), cached by
scenario hash under the bench cache.

    python3 bench/claude/make_session.py [--harness DIR] [--cache DIR]   -> prints the session file's path

The scenario is the Pi one's (bench/harness_session.py): 20 prompts (`--continue` after the first),
each run 6 model turns of 20 `Bash` calls printing 30-line slices of a log file, then a final
answer. The file keeps its name, `<session id>.jsonl`.
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


def bash(command: str) -> dict[str, Any]:
    return {"name": "Bash", "arguments": {"command": command, "description": "Print a slice of the log"}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", type=Path, default=Path(os.environ.get("RUNREAD_HARNESS_DIR", REPO.parent / "shared" / "harness")))
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("RUNREAD_BENCH_CACHE", Path.home() / ".cache" / "runread-bench")))
    opts = ap.parse_args()
    # Keep every line: no automatic compaction (the mock reports small usage anyway).
    sc = harness_session.scenario(bash, {}, {"env": {"DISABLE_AUTO_COMPACT": "1", "BASH_MAX_OUTPUT_LENGTH": "100000"}})
    print(harness_session.make("claude-session", "claude-scenario.py", sc, opts.harness, opts.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
