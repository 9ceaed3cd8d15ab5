#!/usr/bin/env python3
"""Supervised runs of the real agents: `runread run -- pi -p …` / `-- claude -p …` / `-- codex exec …` / `-- gemini -p …`
/ `-- copilot -p …` / `-- opencode run …`.

Pi twice: 0.73.1 (``@mariozechner/pi-coding-agent``) and 1.6.0 (``@earendil-works/pi-coding-agent``,
the harness's PI_PACKAGE/PI_VERSION); Codex twice: 0.171.0 as installed, and behind a shim that
answers ``--version`` with ``codex-cli 0.999.0`` (newer than any tested) and runs the real 0.171.0 —
supervised all the same, its runs recording 0.999.0 with ``versionTested: false``. Claude Code's,
Codex's and Pi 1.x's versions are readers.py's (the environment's CLAUDE_CODE_VERSION, CODEX_VERSION,
PI_PACKAGE/PI_VERSION, else the pins; scripts/agents-latest sets them to the newest releases); each run's
``versionTested`` must be true exactly within the tested range (readers.version_tested).

    python3 tests/agents/supervised.py --runread target/debug/runread

One part per agent (``PiRuns``, ``ClaudeRuns`` and ``CodexRuns`` at the end hold what differs:
how the agent's own stream and session files give the answer), each:

1. **The agent on its own.** The harness (``tests/agents/harness``, the repository's copy of
   ../shared/harness; the real CLI against its scripted model on loopback) plays the scenario
   (``scenarios/supervised-claude.json`` / ``supervised-codex.json``) without runread: each step's
   exit code is what the agent itself exits with, and its own event stream (Claude Code's stream-json
   ``result``; Codex's last ``agent_message`` before ``turn.completed``) what it reports as the answer.
2. **The same scenario under runread.** Again, with ``HARNESS_WRAP='["runread", "--home", H, "run",
   "--share", "orchestrator:final_answer,aggregate:1h", "--"]'`` (the reader ``orchestrator`` added
   first, its key kept apart): every step runs as ``runread --home H run --share … -- <claude> -p …``
   (``-- <codex> exec …``), each run shared with that reader as its target is pinned, the
   harness leaving the stream flag to runread. Per step: runread's exit code is the agent's own from
   part 1 (answered 0, the provider's 500 gives 1); its stderr says ``run <id>: answer verified against
   the session file and journaled (supervised evidence)`` for an answered step and ``run <id>: no
   answer: …`` for the failed one, naming the run as the session file records it; its stdout (the
   harness's ``events-N.jsonl``) holds the answer.
3. **The oracle: the agent's own record**, read with plain ``json`` from what this run wrote: Claude
   Code: the session file, each run a prompt line (its ``uuid`` the run id) up to the next, its answer
   the text blocks of the run's last response (its lines sharing ``message.id``) joined by ``\\n``
   when that response ended the turn, none when it is a synthetic API error; Codex: the rollout
   files, each run a turn (``turn_id``), its answer ``task_complete.last_agent_message``. Each answer
   must equal the scripted text and what the agent's own stream reported in part 1.
4. **Reading it back**, with the same home: the journal holds one 0600 entry per answered run (in
   0700 directories) naming the run and the answer's sha256; ``runread --home H runs --json`` lists
   exactly the runs, ``completed``/``available`` or ``failed``/``missing``; each run is granted
   (``grant --run <id> --features final_answer,aggregate``) and ``runread --home H serve`` started on
   a free loopback port. An answered run must read, byte for byte, as the agent's own answer through
   the Python SDK (tests/clients/read_final_answer.py ``--out``) and ``runread read … final-answer
   --out``; a raw MCP call (the SDK, ``tools/call``) must show ``read_final_answer`` with ``state``
   ``available``, ``evidence`` ``supervised``, ``foregroundFinalConfirmed`` true, and
   ``read_work_state`` with ``evidence`` ``supervised`` and foreground ``completed`` (``exit:0``). The
   failed run reads ``state`` ``missing`` with no text, foreground ``failed`` (``exit:1``), and
   ``runread read … final-answer`` refuses it. With only the ``orchestrator`` key (no grant by the
   owner after the run), another process reads every answered run the same way (supervised).

The Python SDK comes from the outside clients' cache ($RUNREAD_CLIENTS_CACHE, default
~/.cache/runread-clients), the agents from the harness's ($RUNREAD_HARNESS_CACHE, default
~/.cache/runread-harness), each installed on first use. Stdlib only.

Prints one PASS/FAIL line per check and ends with ``supervised: N passed, M failed``; exits 1 if any
check failed. ``--keep`` keeps the temp dir (it is also kept on failure). The harness runs in its own
process group; each ``runread serve`` is stopped at the end of its part.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# What this test shares with homes.py (the harness in a process group, runread with a clean environment, serve
# on a free port, the readers, the parts' main); it also puts tests/clients on sys.path.
from live import (  # noqa: E402
    HARNESS_TIMEOUT_S, SCENARIOS, Fatal, LivePart, jsonl, options, run_parts, sha, write_key,
)
from outside_clients import (  # noqa: E402
    KEY_RE, MODERN, SDK_CALLS, Results, cache_lock, ensure, ensure_venv, labeled, tail,
)
from readers import ANSI, CLAUDE_VERSION, CODEX_VERSION, PI_PACKAGE, PI_VERSION, version_tested  # noqa: E402

GEMINI_VERSION = os.environ.get("GEMINI_CLI_VERSION") or "0.61.0"
COPILOT_VERSION = os.environ.get("COPILOT_VERSION") or "1.0.102"
OPENCODE_VERSION = os.environ.get("OPENCODE_VERSION") or "1.18.33"

FEATURES = "final_answer,aggregate"  # read_final_answer and read_work_state (README, "The tools")
# The reader every step's run is shared with as it starts (`runread run --share`), added before the first.
SHARE_READER = "orchestrator"
VERIFIED = "answer verified against the session file and journaled (supervised evidence)"


def size(b: bytes | None) -> str:
    return "no answer" if b is None else f"{len(b)} B"


class Part(LivePart):
    """One agent's part. Subclasses give the per-agent data (LivePart's: agent, title, script, mock, version,
    scenario) and readings."""

    expect: list[str] = []  # per step: "answered" or "failed"
    own_stream = ""  # what the agent's own stream reports, in messages
    escapes_group = True  # `runread run` starts the agent in a process group of its own
    said_version = ""  # the version the agent answers `--version` with (runread records it): `version` if empty
    fails_nonzero = True  # the agent exits non-zero when its provider fails (Pi exits 0; its run says so)
    failed_foreground = ("failed", "exit:1")  # read_work_state's foreground (state, exit) of that step
    # `runread runs --json`'s status of an answered and of the failed step's run (the session file's)
    answered_status, failed_status = "completed", "failed"
    truncation_known = True  # read_final_answer's truncationKnown: the agent records how an answer ended
    shown = "runread --home H"

    def __init__(self, opts: argparse.Namespace, tmp: Path, res: Results, py: Path) -> None:
        super().__init__(opts, tmp, res)
        self.py = py
        self.oracle = f"{self.title}'s own answer"
        self.rhome = self.tmp / "rhome"  # runread creates it (0700) on the first `runread run`
        data = json.loads(self.scenario.read_text(encoding="utf-8"))
        self.steps, self.responses = data["steps"], data["responses"]
        # the scripted answers: the responses that neither call a tool nor fail, in order, one per answered step
        scripted = iter(r["text"].encode() for r in self.responses if not r.get("tool_calls") and "status" not in r)
        self.scripted = [next(scripted) if e == "answered" else None for e in self.expect]
        self.own_rc: list[Any] = []  # the agent's own exit code per step (part 1)
        self.own_answers: list[bytes | None] = []  # what its own stream reported per step
        self.runs: list[dict[str, Any]] = []  # per step: run_id, session, prompt, answer (bytes or None)
        self.targets: dict[str, dict[str, Any]] = {}  # run id -> runs --json target
        self.grants: list[dict[str, Any]] = []

    def recorded_version(self) -> str:
        return self.said_version or self.version

    def tested(self) -> bool:
        """What runread's `versionTested` must say of that version: within the versions its tests cover."""
        return version_tested(self.agent, self.recorded_version())

    def step_kind(self, n: int) -> str:
        s = self.steps[n]
        return "fork" if s.get("fork") else "continue" if s.get("continue") else "new"

    # ---- per agent (subclasses, and LivePart's install)

    def stream_answer(self, events: list[dict[str, Any]], n: int) -> bytes | None:
        """The answer the agent's own event stream reports for step n, or None for a failed step."""
        raise NotImplementedError

    def read_session_files(self, out: Path) -> list[dict[str, Any]]:
        """Every run in the session files, in the order written: run_id, session, prompt, answer, parent."""
        raise NotImplementedError

    # ---- 1 and 2: the harness

    def check_harness(self, mod: Any) -> None:
        ensure("HARNESS_WRAP" in (mod.__doc__ or ""), f"{self.script} does not document HARNESS_WRAP")

    def harness(self, out: Path, wrap: list[str] | None) -> tuple[dict[str, Any], float]:
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_WRAP"}
        if wrap:
            env["HARNESS_WRAP"] = json.dumps(wrap)
        # the harness's process group also holds `runread run`; the agent it starts is killed by pid (escapes_group)
        return self.run_harness(out, out.with_suffix(".log"), env)

    def alone(self) -> str:
        """Part 1: the agent without runread: its own exit codes and answers."""
        out = self.tmp / "alone"
        manifest, dt = self.harness(out, None)
        for n, step in enumerate(manifest["steps"]):
            events = jsonl(out / step["events"])
            answer = self.stream_answer(events, n)
            rc = step["exit_code"]
            err = ANSI.sub("", (out / step["stderr"]).read_text(errors="replace"))
            if self.expect[n] == "answered":
                ensure(rc == 0, f"step {n + 1} exited {rc}: {tail(err, 400)}")
                ensure(answer == self.scripted[n], f"step {n + 1}: {self.own_stream} ({size(answer)}) is not the "
                       f"scripted text ({size(self.scripted[n])})")
            else:
                ensure((rc != 0 or not self.fails_nonzero) and answer is None,
                       f"step {n + 1} (provider error): exit {rc}, answer {size(answer)}")
            self.own_rc.append(rc)
            self.own_answers.append(answer)
        return (f"{manifest['cli_version']}, {len(self.steps)} steps in {dt:.1f}s: exit codes {self.own_rc}; "
                f"{self.own_stream}: {', '.join(size(a) for a in self.own_answers)}")

    def supervised(self) -> str:
        """Part 2: the same scenario, every step under `runread --home H run --`."""
        self.out = self.tmp / "run"
        added = self.runread("reader", "add", SHARE_READER, "--json")
        ensure(added.returncode == 0, f"reader add exited {added.returncode}: {tail(added.stderr, 400)}")
        key = json.loads(added.stdout).get("key", "")
        ensure(KEY_RE.fullmatch(key) is not None, "reader add --json printed no key")
        self.share_key_file = write_key(self.tmp / "keys" / "share.txt", key)
        wrap = [str(self.opts.runread), "--home", str(self.rhome), "run", "--share",
                f"{SHARE_READER}:{FEATURES}:1h", "--"]
        self.manifest, dt = self.harness(self.out, wrap)
        self.workspace = Path(self.manifest["workspace"])
        rcs = [s["exit_code"] for s in self.manifest["steps"]]
        return f"HARNESS_WRAP={json.dumps(wrap)}: {len(self.steps)} steps in {dt:.1f}s, exit codes {rcs}"

    # ---- 3: the agent's own record

    def session_files(self) -> str:
        found = self.read_session_files(self.out)
        by_prompt = {}
        for r in found:
            ensure(r["prompt"] not in by_prompt, f"two runs with the prompt {r['prompt']!r}")
            by_prompt[r["prompt"]] = r
        ensure(len(found) == len(self.steps), f"{len(found)} runs in the session files for {len(self.steps)} steps")
        for n, step in enumerate(self.steps):
            r = by_prompt.get(step["prompt"])
            ensure(r is not None, f"step {n + 1}: no run with its prompt in the session files")
            kind = self.step_kind(n)
            if kind == "continue":
                ensure(r["session"] == self.runs[n - 1]["session"],
                       f"step {n + 1} (continue) in session {r['session']}, step {n} in {self.runs[n - 1]['session']}")
            elif kind == "fork":
                ensure(r["session"] not in {x["session"] for x in self.runs} and r["parent"] == self.runs[n - 1]["session"],
                       f"step {n + 1} (fork): session {r['session']}, parent {r['parent']}")
            want = self.scripted[n]
            ensure(r["answer"] == want, f"step {n + 1}: the session file's answer ({size(r['answer'])}) is not the "
                   f"scripted text ({size(want)})")
            ensure(r["answer"] == self.own_answers[n], f"step {n + 1}: the session file's answer ({size(r['answer'])}) "
                   f"!= {self.own_stream} on its own ({size(self.own_answers[n])})")
            self.runs.append(r)
        sessions = list(dict.fromkeys(r["session"] for r in self.runs))
        return (f"{len(sessions)} session(s) {', '.join(sessions)}; runs "
                + ", ".join(f"{r['run_id']} ({self.step_kind(n)}, {size(r['answer'])})" for n, r in enumerate(self.runs))
                + f"; each answer = the scripted text = {self.own_stream}")

    def step_exit(self, n: int) -> str:
        rc = self.manifest["steps"][n]["exit_code"]
        ensure(rc == self.own_rc[n], f"runread run exited {rc}; {self.title} on its own exited {self.own_rc[n]}")
        return f"exit {rc} = {self.title}'s own"

    def step_output(self, n: int) -> str:
        step, r = self.manifest["steps"][n], self.runs[n]
        err = ANSI.sub("", (self.out / step["stderr"]).read_text(encoding="utf-8", errors="replace"))
        stdout = (self.out / step["events"]).read_bytes()
        lines = [line for line in err.splitlines() if line.startswith("runread: run ")]
        shared = [line for line in lines if " shared with " in line]
        # the shared run's snapshot as it stands at the end (its size once it holds the answer)
        sealed = [line for line in lines if ": sealed for sharing (" in line or ": not sealed for sharing" in line]
        lines = [line for line in lines if line not in shared and line not in sealed]
        ensure(len(sealed) == 1 and sealed[0].startswith(f'runread: run {r["run_id"]}: sealed for sharing ('),
               f"runread's snapshot lines {sealed}; want one for run {r['run_id']}")
        ensure(len(shared) == 1 and shared[0].startswith(f'runread: run {r["run_id"]} shared with "{SHARE_READER}" (grant '),
               f"runread's share lines {shared}; want one for run {r['run_id']}")
        if self.expect[n] == "answered":
            want = f"runread: run {r['run_id']}: {VERIFIED}"
            ensure(lines == [want], f"runread's run lines {lines}; want [{want!r}]; stderr: {tail(err, 600)}")
            ensure(r["answer"] in stdout, f"stdout ({len(stdout)} B) does not hold the answer: {tail(stdout, 300)}")
            return f"stderr {want!r}; the answer on stdout"
        ensure(len(lines) == 1 and lines[0].startswith(f"runread: run {r['run_id']}: no answer: "),
               f"runread's run lines {lines}; want one 'runread: run {r['run_id']}: no answer: …'; stderr: {tail(err, 600)}")
        ensure("journaled" not in err, f"stderr says journaled: {tail(err, 600)}")
        return f"stderr {lines[0]!r}"

    # ---- 4: reading it back

    def runread_cmd(self) -> list[str]:
        return [str(self.opts.runread), "--home", str(self.rhome)]

    def journal(self) -> str:
        root = self.rhome / "journal"
        answered = {r["run_id"]: r for n, r in enumerate(self.runs) if self.expect[n] == "answered"}
        ensure(root.is_dir(), f"no journal at {root}")
        dirs = [root, *[p for p in root.rglob("*") if p.is_dir()]]
        files = [p for p in root.rglob("*") if p.is_file()]
        modes = {str(p.relative_to(self.rhome)): oct(p.stat().st_mode & 0o777) for p in dirs + files}
        ensure(all(p.stat().st_mode & 0o777 == 0o700 for p in dirs) and all(p.stat().st_mode & 0o777 == 0o600 for p in files),
               f"modes {modes}")
        entries = {}
        for p in files:
            e = json.loads(p.read_text(encoding="utf-8"))
            entries[(e.get("namespace") or {}).get("runId")] = e
        ensure(sorted(entries) == sorted(answered), f"journal entries name runs {sorted(map(str, entries))}; answered runs "
               f"{sorted(answered)}")
        for run_id, e in entries.items():
            want = answered[run_id]
            ensure(e.get("agent") == self.agent and e.get("agentVersion") == self.recorded_version()
                   and (e.get("namespace") or {}).get("sessionId") == want["session"]
                   and e.get("textSha256") == sha(want["answer"]) and e.get("textBytes") == len(want["answer"]),
                   f"entry of {run_id}: agent {e.get('agent')!r} {e.get('agentVersion')!r}, session "
                   f"{(e.get('namespace') or {}).get('sessionId')}, textSha256 {e.get('textSha256')}, textBytes "
                   f"{e.get('textBytes')}; want {self.agent} {self.recorded_version()}, {want['session']}, {sha(want['answer'])}, "
                   f"{len(want['answer'])}")
        return (f"{len(files)} entries (0600, directories 0700), one per answered run, each naming its run, agent "
                f"{self.agent} {self.recorded_version()} and the answer's sha256 and size")

    def show_version(self) -> str:
        """`runread show --json` of each run: the version the agent answered `runread run`, and whether tested."""
        shown = []
        for n, r in enumerate(self.runs):
            x = self.json_of("show", r["run_id"], "--json")
            got = (x.get("agentVersion"), x.get("versionTested"))
            want = (self.recorded_version(), self.tested())
            ensure(got == want, f"run {n + 1}: agentVersion/versionTested {got}; want {want}")
            shown.append(f"{r['run_id'][:13]}… {got[0]} tested={got[1]}")
        return "; ".join(shown)

    def runs_json(self) -> str:
        listed = self.json_of("runs", "--json")
        ids = [x["target"]["runId"] for x in listed]
        ensure(sorted(ids) == sorted(r["run_id"] for r in self.runs), f"runIds {ids}; the session files' "
               f"{[r['run_id'] for r in self.runs]}")
        by_id = {x["target"]["runId"]: x for x in listed}
        shown = []
        for n, r in enumerate(self.runs):
            x = by_id[r["run_id"]]
            want = ((self.answered_status, "available", len(r["answer"])) if self.expect[n] == "answered"
                    else (self.failed_status, "missing", 0))
            got = (x.get("status"), x.get("answerState"), x.get("finalBytes"))
            ensure(x.get("agent") == self.agent and x["target"].get("sessionId") == r["session"] and got == want
                   and x.get("prompt") == r["prompt"],
                   f"run {n + 1}: agent {x.get('agent')!r}, sessionId {x['target'].get('sessionId')} (want {r['session']}), "
                   f"status/answerState/finalBytes {got} (want {want}), prompt {x.get('prompt')!r}")
            self.targets[r["run_id"]] = x["target"]
            shown.append(f"{r['run_id'][:13]}… {self.agent} {got[0]} {got[1]}")
        return "; ".join(shown)

    def grant_all(self) -> str:
        for n, r in enumerate(self.runs):
            # A reader of its own for each run, so each grant shows a key of its own.
            g = self.json_of("grant", "--run", r["run_id"], "--features", FEATURES, "--expires", "15m",
                             "--to", f"test-{self.agent}-run{n + 1}", "--json")
            ensure(KEY_RE.fullmatch(g.get("key", "")) and g.get("grantId"), f"run {n + 1}: key/grantId {g.get('grantId')!r}")
            ensure(g.get("target") == self.targets[r["run_id"]],
                   f"run {n + 1}: granted target {g.get('target')} != runs --json's {self.targets[r['run_id']]}")
            ensure(sorted(g.get("features") or []) == sorted(FEATURES.split(",")), f"run {n + 1}: features {g.get('features')}")
            g["keyFile"] = write_key(self.tmp / "keys" / f"run{n + 1}.txt", g["key"])
            self.grants.append(g)
        return ", ".join(g["grantId"] for g in self.grants)

    def sdk(self, n: int) -> str:
        g, want = self.grants[n], self.runs[n]["answer"]
        s = self.sdk_read(self.py, g, want, self.out_file(f"sdk-run{n + 1}.txt"), MODERN)
        return f"{s['protocolVersion']}, {s.get('chunks')} chunk(s), {len(want)} B, sha256 {sha(want)[:12]}… = the agent's own"

    def cli_read(self, n: int) -> str:
        g, want = self.grants[n], self.runs[n]["answer"]
        out = self.out_file(f"cli-run{n + 1}.txt")
        if want is None:
            r = self.runread_read(g["keyFile"], "final-answer", "--out", str(out))
            ensure(r.returncode != 0 and not out.exists(), f"exit {r.returncode}, --out written: {out.exists()}")
            return f"refused (exit {r.returncode}): {tail(r.stderr or r.stdout, 200)}"
        return f"{self.cli_answer(g['keyFile'], want, out)} = the agent's own"

    def mcp(self, n: int, key_file: Path | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """tools/call read_final_answer and read_work_state through the SDK: their structuredContent (with
        run n's grant's key, or `key_file`)."""
        g = self.grants[n]
        calls = [["read_final_answer", {"target": g["target"]}], ["read_work_state", {"target": g["target"]}]]
        key = key_file or g["keyFile"]
        r = subprocess.run([str(self.py), "-c", SDK_CALLS, self.url, str(key), json.dumps(calls), "auto"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, env=self.read_env(), timeout=120)
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        out = json.loads(r.stdout.strip().splitlines()[-1])
        (self.out_file(f"mcp-run{n + 1}.json")).write_text(json.dumps(out, ensure_ascii=False, indent=1))
        ensure(out.get("protocolVersion") == MODERN, f"protocolVersion {out.get('protocolVersion')!r}")
        got = []
        for (tool, _), c in zip(calls, out["calls"]):
            ensure(c.get("form") == "result" and c.get("isError") is False, f"{tool}: {tail(json.dumps(c), 400)}")
            sc = c.get("structuredContent") or {}
            labeled(tool, sc)
            got.append(sc)
        return got[0], got[1]

    def mcp_answered(self, n: int, key_file: Path | None = None) -> str:
        fa, ws = self.mcp(n, key_file)
        want = self.runs[n]["answer"]
        seen = {k: fa.get(k) for k in ("state", "evidence", "foregroundFinalConfirmed", "readable", "byteOffset",
                                        "totalBytes", "sha256")}
        ensure(seen == {"state": "available", "evidence": "supervised", "foregroundFinalConfirmed": True, "readable": True,
                        "byteOffset": 0, "totalBytes": len(want), "sha256": sha(want)},
               f"read_final_answer {seen}; want available, supervised, foregroundFinalConfirmed true, {len(want)} B, {sha(want)}")
        ensure(fa.get("truncationKnown") is self.truncation_known,
               f"read_final_answer truncationKnown {fa.get('truncationKnown')!r}; want {self.truncation_known}")
        text = (fa.get("text") or "").encode()
        ensure(want.startswith(text) and text and (fa.get("eof") is not True or text == want),
               f"text ({len(text)} B, eof {fa.get('eof')!r}) is not the answer's first bytes")
        fg = ws.get("foreground") or {}
        ensure(ws.get("evidence") == "supervised" and fg.get("state") == "completed" and fg.get("exit") == "exit:0",
               f"read_work_state evidence {ws.get('evidence')!r}, foreground {fg}")
        return (f"read_final_answer state available, evidence supervised, foregroundFinalConfirmed true, "
                f"{len(text)} of {len(want)} B; read_work_state evidence supervised, foreground {fg.get('state')} "
                f"({fg.get('source')}, {fg.get('exit')}), aggregate {(ws.get('aggregate') or {}).get('state')}; "
                f"coverage.subagents says {((ws.get('coverage') or {}).get('subagents') or {}).get('reason')!r}")

    def mcp_failed(self, n: int) -> str:
        fa, ws = self.mcp(n)
        seen = {k: fa.get(k) for k in ("state", "readable", "text", "foregroundFinalConfirmed", "totalBytes", "sha256")}
        ensure(seen == {"state": "missing", "readable": False, "text": None, "foregroundFinalConfirmed": False,
                        "totalBytes": None, "sha256": None},
               f"read_final_answer {seen}; want state missing, no text")
        fg = ws.get("foreground") or {}
        want = self.failed_foreground
        ensure(ws.get("evidence") == "supervised" and (fg.get("state"), fg.get("exit")) == want,
               f"read_work_state evidence {ws.get('evidence')!r}, foreground {fg}; want {want}")
        return (f"read_final_answer state missing, readable false, text null (evidence {fa.get('evidence')}); "
                f"read_work_state evidence supervised, foreground {fg.get('state')} ({fg.get('source')}, {fg.get('exit')})")

    # ---- the part

    def run(self) -> None:
        self.must(f"tools: {self.title}", self.install_agent, f"no {self.title}")
        self.must(f"{self.title} on its own (no runread): exit codes and {self.own_stream}", self.alone, "no reference run")
        self.must("the same scenario under `runread --home H run --` (HARNESS_WRAP)", self.supervised,
                  "the supervised run did not complete")
        self.must("the session files (plain json): each step's run and the agent's own answer", self.session_files,
                  "the session files are not what the scenario should have written")
        for n in range(len(self.steps)):
            what = f"step {n + 1} ({self.step_kind(n)}, {self.expect[n]})"
            self.check(f"{what}: runread run's exit code", lambda n=n: self.step_exit(n))
            self.check(f"{what}: runread run's stderr and stdout", lambda n=n: self.step_output(n))
        self.check("journal: one entry per answered run", self.journal)
        self.check("runread --home H show --json: agentVersion (as answered) and versionTested", self.show_version)
        for what, fn in [("runread --home H runs --json", self.runs_json),
                         (f"runread --home H grant --run <id> --features {FEATURES} (every run)", self.grant_all),
                         ("runread --home H serve", self.serve)]:
            self.must(what, fn, f"`{what}` failed; nothing to read")
        for n in range(len(self.steps)):
            r = f"run {n + 1}"
            if self.expect[n] == "answered":
                self.check(f"{r}: python sdk read_final_answer.py --out", lambda n=n: self.sdk(n))
                self.check(f"{r}: runread read final-answer --out", lambda n=n: self.cli_read(n))
                self.check(f"{r}: MCP read_final_answer / read_work_state: supervised", lambda n=n: self.mcp_answered(n))
                self.check(f"{r}: shared as it started: the {SHARE_READER} key alone reads it, supervised",
                           lambda n=n: self.mcp_answered(n, self.share_key_file))
            else:
                self.check(f"{r} (failed): MCP read_final_answer / read_work_state", lambda n=n: self.mcp_failed(n))
                self.check(f"{r} (failed): runread read final-answer", lambda n=n: self.cli_read(n))
        self.check("runread serve still running", self.alive)


class ClaudeRuns(Part):
    agent, title, own_stream = "claude", "Claude Code", "the stream-json result"
    script, mock, version_attr, version = "claude-scenario.py", "mockanthropic.py", "CLAUDE_CODE_VERSION", CLAUDE_VERSION
    scenario = SCENARIOS / "supervised-claude.json"
    expect = ["answered", "answered", "failed"]

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_claude())

    def stream_answer(self, events: list[dict[str, Any]], n: int) -> bytes | None:
        results = [e for e in events if e.get("type") == "result"]
        ensure(len(results) == 1, f"step {n + 1}: {len(results)} result events")
        r = results[0]
        if r.get("is_error") is True:  # the provider error: `result` is Claude Code's error text, not an answer
            return None
        ensure(r.get("is_error") is False and r.get("subtype") == "success" and isinstance(r.get("result"), str),
               f"step {n + 1}: result event {json.dumps(r)[:300]}")
        return r["result"].encode()

    def read_session_files(self, out: Path) -> list[dict[str, Any]]:
        """Each prompt line starts a run; its answer is the last response's text blocks joined by \\n, when
        that response ended the turn (a synthetic API error message is no answer)."""
        files = sorted((out / "sessions").glob("*/*.jsonl"))
        ensure(len(files) == 1, f"session files {files}")
        runs: list[dict[str, Any]] = []
        for e in jsonl(files[0]):
            msg = e.get("message") or {}
            content = msg.get("content")
            if e.get("type") == "user" and not e.get("isMeta") and isinstance(content, str):
                ensure(e.get("cwd") == str(self.workspace), f"prompt line cwd {e.get('cwd')}")
                runs.append({"run_id": e["uuid"], "session": e["sessionId"], "prompt": content, "parent": None,
                             "lines": []})
            elif e.get("type") == "assistant" and runs:
                runs[-1]["lines"].append(e)
        for r in runs:
            lines = r.pop("lines")
            last = lines[-1] if lines else {}
            r["answer"] = None
            if last and not last.get("isApiErrorMessage") and last["message"].get("stop_reason") == "end_turn":
                final = [x for x in lines if x["message"].get("id") == last["message"]["id"]]
                r["answer"] = "\n".join(b["text"] for x in final for b in x["message"]["content"]
                                        if b.get("type") == "text").encode()
        return runs


class CodexRuns(Part):
    agent, title, own_stream = "codex", "Codex", "the last agent_message of the --json stream"
    script, mock, version_attr, version = "codex-scenario.py", "mockresponses.py", "CODEX_VERSION", CODEX_VERSION
    scenario = SCENARIOS / "supervised-codex.json"
    expect = ["answered", "answered", "answered", "failed"]

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_codex())

    def stream_answer(self, events: list[dict[str, Any]], n: int) -> bytes | None:
        kinds = [e.get("type") for e in events]
        if "turn.completed" not in kinds:
            ensure("turn.failed" in kinds, f"step {n + 1}: neither turn.completed nor turn.failed: {kinds}")
            return None
        messages = [e["item"]["text"] for e in events[: kinds.index("turn.completed")]
                    if e.get("type") == "item.completed" and (e.get("item") or {}).get("type") == "agent_message"]
        ensure(messages, f"step {n + 1}: no agent_message before turn.completed")
        return messages[-1].encode()

    def read_session_files(self, out: Path) -> list[dict[str, Any]]:
        """Each turn is a run (task_started's turn_id); its answer is task_complete.last_agent_message."""
        runs: list[dict[str, Any]] = []
        for f in sorted((out / "sessions").rglob("rollout-*.jsonl")):
            lines = jsonl(f)
            ensure(lines[0].get("type") == "session_meta", f"{f.name}: first line {lines[0].get('type')}")
            meta = lines[0]["payload"]
            ensure(meta.get("cwd") == str(self.workspace), f"{f.name}: cwd {meta.get('cwd')}")
            by_id: dict[str, dict[str, Any]] = {}
            for e in lines[1:]:
                p, kind = e.get("payload") or {}, e.get("type")
                if kind == "event_msg" and p.get("type") == "task_started":
                    by_id[p["turn_id"]] = {"run_id": p["turn_id"], "session": meta["id"],
                                           "parent": meta.get("forked_from_id"), "prompt": None, "answer": None}
                elif kind == "event_msg" and p.get("type") == "item_completed" and p["item"].get("type") == "UserMessage":
                    by_id[p["turn_id"]]["prompt"] = "".join(c.get("text", "") for c in p["item"]["content"])
                elif kind == "event_msg" and p.get("type") == "task_complete":
                    t = by_id[p["turn_id"]]
                    t["done"] = True
                    if p.get("last_agent_message") is not None:
                        t["answer"] = p["last_agent_message"].encode()
                    else:
                        ensure(p.get("error"), f"turn {p['turn_id']}: task_complete with neither an answer nor an error")
            ensure(all(t.get("done") for t in by_id.values()), f"{f.name}: a turn without task_complete")
            runs += by_id.values()
        return runs


class GeminiRuns(Part):
    """Gemini CLI 0.61.0. Its chat file records no end of a response: each run is ``unknown`` in ``runs --json``
    (passively its answer is only a candidate), and the answered ones read ``available`` through the supervised
    proof, with ``truncationKnown`` false. A failed request exits with the HTTP status modulo 256 (500 → 244):
    ``missing``, its work state foreground ``unknown`` (the file records no failure, runread passes 244 on)."""

    agent, title, own_stream = "gemini", "Gemini CLI", "the assistant deltas after the last tool event, before result success"
    script, mock, version_attr, version = "gemini-scenario.py", "mockgemini.py", "GEMINI_CLI_VERSION", GEMINI_VERSION
    scenario = SCENARIOS / "supervised-gemini.json"
    expect = ["answered", "answered", "failed"]
    failed_foreground = ("unknown", "exit:244")  # the file records no failure; the proof says no answer
    answered_status, failed_status = "unknown", "unknown"
    truncation_known = False

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_gemini())

    def stream_answer(self, events: list[dict[str, Any]], n: int) -> bytes | None:
        results = [e for e in events if e.get("type") == "result"]
        ensure(len(results) == 1, f"step {n + 1}: {len(results)} result events")
        if results[0].get("status") != "success":
            return None
        kinds = [e.get("type") for e in events]
        after = max((i for i, k in enumerate(kinds) if k in ("tool_use", "tool_result")), default=-1) + 1
        text = "".join(e.get("content", "") for e in events[after:]
                       if e.get("type") == "message" and e.get("role") == "assistant")
        ensure(text, f"step {n + 1}: no assistant text after the last tool event")
        return text.encode()

    def read_session_files(self, out: Path) -> list[dict[str, Any]]:
        """Each `user` record with text (not the injected <session_context>) starts a run; each record's last line
        is its truth; the answer is the run's last `gemini` record's content when it has no tool calls and the run
        is in the final message list (a failed request's prompt is dropped by the next snapshot)."""
        runs: list[dict[str, Any]] = []
        for f in sorted((out / "sessions").glob("*/chats/session-*.jsonl")):
            lines = jsonl(f)
            records: dict[str, dict[str, Any]] = {}
            written: dict[str, int] = {}  # the line each record was last written at
            listed: tuple[int, set[Any]] = (-1, set())  # the last snapshot: its line and the ids it lists
            session = lines[0].get("sessionId")
            for i, e in enumerate(lines):
                if isinstance(e.get("id"), str):
                    records[e["id"]], written[e["id"]] = e, i
                elif isinstance((e.get("$set") or {}).get("messages"), list):
                    listed = (i, {m.get("id") for m in e["$set"]["messages"]})
            for rid, e in records.items():
                e["dropped"] = written[rid] < listed[0] and rid not in listed[1]
            if not records:
                continue  # a later-minute resume's stub
            current: dict[str, Any] | None = None
            for rid, e in records.items():
                content = e.get("content")
                if e.get("type") == "user" and isinstance(content, list) and any("text" in p for p in content):
                    text = "".join(p.get("text", "") for p in content)
                    if text.startswith("<session_context>"):
                        continue
                    current = {"run_id": rid, "session": session, "prompt": text, "parent": None, "answer": None,
                               "dropped": bool(e.get("dropped"))}
                    runs.append(current)
                elif e.get("type") == "gemini" and current is not None:
                    current["answer"] = None if e.get("toolCalls") or not isinstance(content, str) else content.encode()
            for r in runs:
                if r.pop("dropped", False):
                    r["answer"] = None
        return runs


class CopilotRuns(Part):
    """GitHub Copilot CLI 1.0.102 (its own-provider mode against mockllm.py). Its stream carries the session
    file's own event ids and ends with ``result`` (the session id, the exit code); its ``events.jsonl`` says how
    each run ended. A request the provider refuses (400) ends in ``session.error`` and exit 1: ``failed``/``missing``."""

    agent, title = "copilot", "Copilot CLI"
    own_stream = "the last main-agent assistant.message before result (exit code 0)"
    script, mock, version_attr, version = "copilot-scenario.py", "mockllm.py", "COPILOT_VERSION", COPILOT_VERSION
    scenario = SCENARIOS / "supervised-copilot.json"
    expect = ["answered", "answered", "failed"]

    def tested(self) -> bool:
        # readers.version_tested knows the agents readers.py covers; Copilot CLI's row of the same table
        row = re.search(r"^\| Copilot CLI \| ([0-9.]+) \| ([0-9.]+) \|$",
                        (HERE.parent.parent / "docs" / "agents.md").read_text(encoding="utf-8"), re.M)
        ensure(row is not None, "docs/agents.md's Versions table has no Copilot CLI row")
        def numbers(v: str) -> tuple[int, ...]:
            return tuple(int(x) for x in v.split("."))
        return numbers(row[1]) <= numbers(self.recorded_version()) <= numbers(row[2])

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_copilot()[0])

    @staticmethod
    def main_agent(e: dict[str, Any]) -> bool:
        return e.get("agentId") is None and (e.get("data") or {}).get("parentToolCallId") is None

    def stream_answer(self, events: list[dict[str, Any]], n: int) -> bytes | None:
        results = [e for e in events if e.get("type") == "result"]
        ensure(len(results) == 1, f"step {n + 1}: {len(results)} result events")
        if results[0].get("exitCode") != 0 or any(e.get("type") in ("abort", "session.error") for e in events):
            return None
        messages = [e for e in events if e.get("type") == "assistant.message" and self.main_agent(e)]
        ensure(messages and not messages[-1]["data"].get("toolRequests"), f"step {n + 1}: no final message")
        return messages[-1]["data"]["content"].encode()

    def read_session_files(self, out: Path) -> list[dict[str, Any]]:
        """Each main-agent `user.message` starts a run (its event id the run id); its answer is the run's last
        main-agent `assistant.message` without tool requests, none when the run holds a `session.error` or `abort`."""
        runs: list[dict[str, Any]] = []
        for f in sorted((out / "sessions" / "session-state").glob("*/events.jsonl")):
            lines = jsonl(f)
            session = next((e["data"]["sessionId"] for e in lines if e.get("type") == "session.start"), None)
            current: dict[str, Any] | None = None
            for e in lines:
                kind = e.get("type")
                if not self.main_agent(e):
                    continue
                if kind == "user.message":
                    current = {"run_id": e["id"], "session": session, "prompt": e["data"]["content"], "parent": None,
                               "answer": None, "failed": False}
                    runs.append(current)
                elif current is None:
                    continue
                elif kind == "assistant.message":
                    d = e["data"]
                    current["answer"] = None if d.get("toolRequests") else d.get("content", "").encode()
                elif kind in ("session.error", "abort"):
                    current["failed"] = True
            for r in runs:
                if r.pop("failed", False):
                    r["answer"] = None
        return runs


def tested_in_doc(title: str, version: str) -> bool:
    """Whether `version` is within the row of agent `title` in docs/agents.md's Versions table (readers.version_tested
    knows the agents readers.py covers)."""
    row = re.search(rf"^\| {re.escape(title)} \| ([0-9.]+) \| ([0-9.]+) \|$",
                    (HERE.parent.parent / "docs" / "agents.md").read_text(encoding="utf-8"), re.M)
    ensure(row is not None, f"docs/agents.md's Versions table has no {title} row")

    def numbers(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("-")[0].split("+")[0].split("."))
    return numbers(row[1]) <= numbers(version) <= numbers(row[2])


class OpenCodeRuns(Part):
    """OpenCode 1.18.33 (`opencode run`, a "mock" provider in its opencode.json against mockllm.py). Its
    ``--format json`` stream carries the database's own part and message ids, one line per part once saved; the
    run ends at a ``step_finish`` of reason ``stop`` (its answer: that message's text parts) or at an ``error``.
    Every session lives in one SQLite database (``home/.local/share/opencode/opencode.db``; the harness copies it
    to ``sessions/opencode.db``), runread naming one ``<database>#<session id>``. A request the provider refuses
    (400, not retried) ends in an ``error`` event and exit 1: ``failed``/``missing``."""

    agent, title = "opencode", "OpenCode"
    own_stream = "the text events of the message whose step_finish said stop"
    script, mock, version_attr, version = "opencode-scenario.py", "mockllm.py", "OPENCODE_VERSION", OPENCODE_VERSION
    scenario = SCENARIOS / "supervised-opencode.json"
    expect = ["answered", "answered", "failed"]

    def tested(self) -> bool:
        return tested_in_doc(self.title, self.recorded_version())

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_opencode()[0])

    def stream_answer(self, events: list[dict[str, Any]], n: int) -> bytes | None:
        if any(e.get("type") == "error" for e in events):
            return None
        ends = [e for e in events if e.get("type") == "step_finish"
                and (e.get("part") or {}).get("reason") in ("stop", "length")]
        ensure(len(ends) == 1, f"step {n + 1}: {len(ends)} step_finish events that end the run")
        message = ends[0]["part"].get("messageID")
        texts = [e["part"]["text"] for e in events if e.get("type") == "text" and e["part"].get("messageID") == message]
        ensure(texts, f"step {n + 1}: no text in the message that ended the run")
        return "\n".join(texts).encode()

    @staticmethod
    def unquoted(prompt: str) -> str:
        """`opencode run` stores a prompt holding a space in double quotes: one pair is not the user's."""
        return prompt[1:-1] if len(prompt) >= 2 and prompt[0] == prompt[-1] == '"' else prompt

    def read_session_files(self, out: Path) -> list[dict[str, Any]]:
        """Each top-level session's `user` messages start its runs (the message id the run id), in id order; the
        prompt is its text parts; the answer the text parts of the run's last assistant message (its `parentID`
        the prompt's id) joined by \\n when that message has `finish: stop`, none when it has an `error`."""
        db = sqlite3.connect(f"file:{out / 'sessions' / 'opencode.db'}?mode=ro", uri=True)
        try:
            sessions = [r[0] for r in db.execute("select id from session where parent_id is null order by time_created")]
            rows = db.execute("select id, session_id, data from message order by id").fetchall()
            parts = db.execute("select message_id, data from part order by id").fetchall()
        finally:
            db.close()
        texts: dict[str, list[str]] = {}
        for message_id, data in parts:
            p = json.loads(data)
            if p.get("type") == "text" and not p.get("synthetic") and not p.get("ignored") and p.get("text"):
                texts.setdefault(message_id, []).append(p["text"])
        runs: list[dict[str, Any]] = []
        by_id: dict[str, dict[str, Any]] = {}
        for message_id, session, data in rows:
            m = json.loads(data)
            if session not in sessions:
                continue
            if m.get("role") == "user":
                r = {"run_id": message_id, "session": session, "prompt": self.unquoted("".join(texts.get(message_id, []))),
                     "parent": None, "answer": None}
                runs.append(r)
                by_id[message_id] = r
            elif m.get("role") == "assistant" and m.get("parentID") in by_id:
                r = by_id[m["parentID"]]
                r["answer"] = ("\n".join(texts.get(message_id, [])).encode()
                               if m.get("finish") == "stop" and not m.get("error") else None)
        runs.sort(key=lambda r: (sessions.index(r["session"]), r["run_id"]))
        return runs


class PiRuns(Part):
    """Pi 0.73.1, the harness's default package. Its harness writes no stderr file and no cli_version: the
    parts' wrap captures each step's stderr (``stderr/stderr-N.txt``) and the manifest's ``pi_version`` is
    checked instead."""

    agent, title, own_stream = "pi", "Pi", "the last assistant message_end of the --mode json stream"
    script, mock, version_attr, version = "pi-scenario.py", "mockllm.py", "PI_VERSION", "0.73.1"
    package = "@mariozechner/pi-coding-agent"
    scenario = SCENARIOS / "supervised-pi.json"
    expect = ["answered", "answered", "failed"]
    fails_nonzero = False
    failed_foreground = ("failed", "exit:0")  # Pi exits 0; runread reads the failed run from its stream

    def pi_env(self) -> dict[str, str]:
        return {"PI_PACKAGE": self.package, "PI_VERSION": self.version}

    def install_agent(self) -> str:
        # The harness reads PI_PACKAGE/PI_VERSION when loaded: set for the load (and the steps, pi_env).
        saved = {k: os.environ.get(k) for k in self.pi_env()}
        os.environ.update(self.pi_env())
        try:
            return super().install_agent()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def install(self, mod: Any) -> Path:
        cli, meta = mod.ensure_pi()
        ensure(meta.get("name") == self.package and meta.get("version") == self.version,
               f"the harness installed {meta.get('name')} {meta.get('version')}")
        return Path(cli)

    def harness(self, out: Path, wrap: list[str] | None) -> tuple[dict[str, Any], float]:
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_WRAP"}
        env.update(self.pi_env())
        if wrap:
            (out / "stderr").mkdir(parents=True, exist_ok=True)
            # each step's stderr into stderr/stderr-N.txt, N the steps before it (the harness discards stderr)
            keep = ["sh", "-c", 'n=$(ls "$0" | wc -l); exec "$@" 2>"$0/stderr-$((n))".txt', str(out / "stderr")]
            env["HARNESS_WRAP"] = json.dumps(keep + wrap)
        return self.run_harness(out, out.with_suffix(".log"), env)

    def run_harness(self, out: Path, log_path: Path, env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
        script = self.opts.harness / self.script
        t0 = time.monotonic()
        with open(log_path, "wb") as log:
            self.harness_proc = subprocess.Popen([sys.executable, str(script), str(self.scenario), str(out)], stdout=log,
                                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                                 start_new_session=True)
            try:
                rc = self.harness_proc.wait(timeout=HARNESS_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.harness_proc.pid, signal.SIGKILL)
                self.harness_proc.wait()
                raise Fatal(f"{script.name} did not finish in {HARNESS_TIMEOUT_S}s") from None
        dt = time.monotonic() - t0
        if rc != 0:
            raise Fatal(f"{script.name} exited {rc}: {tail(log_path.read_bytes(), 800)}")
        manifest = json.loads((out / "manifest.json").read_text())
        ensure(len(manifest["steps"]) == len(self.steps), f"{len(manifest['steps'])} steps ran of {len(self.steps)}")
        ensure(manifest.get("pi_version") == self.version and manifest.get("pi_package") == self.package,
               f"pi {manifest.get('pi_package')} {manifest.get('pi_version')}")
        manifest["cli_version"] = f"{self.package} {self.version}"
        for n, step in enumerate(manifest["steps"]):
            err = out / "stderr" / f"stderr-{n}.txt"
            if not err.exists():  # on its own: the harness discarded it
                err.parent.mkdir(exist_ok=True)
                err.write_text("")
            step["stderr"] = str(err.relative_to(out))
        return manifest, dt

    def stream_answer(self, events: list[dict[str, Any]], n: int) -> bytes | None:
        ends = [e["message"] for e in events if e.get("type") == "message_end"
                and (e.get("message") or {}).get("role") == "assistant"]
        ensure(ends, f"step {n + 1}: no assistant message_end")
        last = ends[-1]
        if last.get("stopReason") == "error":
            return None
        ensure(last.get("stopReason") == "stop", f"step {n + 1}: last stopReason {last.get('stopReason')!r}")
        return "\n".join(b["text"] for b in last["content"] if b.get("type") == "text").encode()

    def read_session_files(self, out: Path) -> list[dict[str, Any]]:
        """Each user message starts a run (its entry id the run id); its answer is the run's last assistant
        message's text blocks joined by \\n when it stopped normally (none when the provider failed)."""
        files = sorted((out / "sessions").rglob("*.jsonl"))
        ensure(len(files) == 1, f"session files {files}")
        lines = jsonl(files[0])
        header = lines[0]
        ensure(header.get("type") == "session" and header.get("cwd") == str(self.workspace), f"header {header}")
        runs: list[dict[str, Any]] = []
        for e in lines[1:]:
            msg = e.get("message") or {}
            if e.get("type") != "message":
                continue
            if msg.get("role") == "user":
                content = msg.get("content")
                prompt = content if isinstance(content, str) else "".join(
                    b.get("text", "") for b in content if b.get("type") == "text")
                runs.append({"run_id": e["id"], "session": header["id"], "prompt": prompt, "parent": None, "last": None})
            elif msg.get("role") == "assistant" and runs:
                runs[-1]["last"] = msg
        for r in runs:
            last = r.pop("last") or {}
            r["answer"] = ("\n".join(b["text"] for b in last.get("content", []) if b.get("type") == "text").encode()
                           if last.get("stopReason") == "stop" else None)
        return runs


class Pi1Runs(PiRuns):
    """Pi 1.x (PI_VERSION, 1.6.0 unless set), the package's new name since 0.74 (needs Node 22, which the
    harness brings)."""

    part = f"pi-{PI_VERSION}"
    version, package = PI_VERSION, PI_PACKAGE


class CodexNewerRuns(CodexRuns):
    """Codex behind a shim answering `codex-cli 0.999.0` (newer than any tested) that runs the real 0.171.0:
    supervised as usual, its runs recording 0.999.0, not tested."""

    part, said_version = "codex-0.999.0", "0.999.0"

    def harness(self, out: Path, wrap: list[str] | None) -> tuple[dict[str, Any], float]:
        if wrap:
            real = self.tmp / "real-codex"
            shim_dir = self.tmp / "shim"
            shim_dir.mkdir(exist_ok=True)
            shim = shim_dir / "codex"
            # what runread asks: `codex --version`; anything else runs the real CLI given as the first word
            shim.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "codex-cli 0.999.0"; exit 0; fi\n'
                            f'exec "$(cat {real})" "$@"\n')
            shim.chmod(0o755)
            # the harness appends the real codex's path and its arguments: swap the path for the shim's
            swapper = shim_dir / "swap.py"
            swapper.write_text(
                "import os, sys\n"
                "# argv: REALFILE SHIM runread... -- REAL args...: runs runread with SHIM in REAL's place\n"
                "real_file, shim, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
                "k = cmd.index('--')\n"
                "open(real_file, 'w').write(cmd[k + 1])\n"
                "cmd[k + 1] = shim\n"
                "os.execvp(cmd[0], cmd)\n")
            wrap = [sys.executable, str(swapper), str(real), str(shim), *wrap]
        return super().harness(out, wrap)


AGENTS = {"pi": PiRuns, Pi1Runs.part: Pi1Runs, "claude": ClaudeRuns, "codex": CodexRuns,
          "codex-0.999.0": CodexNewerRuns, "gemini": GeminiRuns, "copilot": CopilotRuns, "opencode": OpenCodeRuns}


def main(argv: list[str] | None = None) -> int:
    opts = options(argv, __doc__, AGENTS, "harness OUTDIRs, runread homes, serve logs")

    def start(tmp: Path, res: Results):
        with cache_lock(opts.cache):
            py, venv_desc = ensure_venv(opts.cache)
        res.record("tools: python venv", True, venv_desc)
        return lambda cls: cls(opts, tmp, res, py)

    return run_parts(opts, "supervised", AGENTS, start)


if __name__ == "__main__":
    sys.exit(main())
