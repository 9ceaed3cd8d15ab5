#!/usr/bin/env python3
"""Users with real Claude Code and Codex homes: the agent writes the session, runread finds it and serves it.

    python3 tests/agents/homes.py --runread target/debug/runread

Claude Code's and Codex's parts, each the same four stages (the per-agent differences are the small classes
``ClaudeHome`` and ``CodexHome`` at the end: where the agent's directory is, what its oracle is, what
its session files record, what history and metadata must show):

1. Live: the real agent CLI, driven offline by the harness (``tests/agents/harness``, the repository's
   byte-identical copy of ../shared/harness; its scripted model on loopback), plays its scenario:
   * Claude Code 2.1.328, ``scenarios/claude-home.json``: a prompt, a ``Bash`` tool call, a 9,902-byte
     non-ASCII final answer streamed in 7 pieces (after a thinking block), then a ``--continue`` step.
     The oracle is the ``result`` event of each step's stream-json (OUTDIR/events-N.jsonl).
   * Codex 0.171.0, ``scenarios/codex-home.json``: a prompt, a reasoning item and an ``exec_command``
     call, a 9,908-byte non-ASCII final answer (after another reasoning item) streamed in 7 pieces,
     then ``codex exec resume <thread>`` and ``codex exec fork <thread>`` steps. The oracle is the
     last ``agent_message`` item before ``turn.completed`` of each step's ``exec --json`` stream, which
     must equal the turn's ``task_complete.last_agent_message`` in the rollout file.
   Those bytes are the oracle for everything below.
2. A user's HOME: a fresh directory whose ``.claude/projects`` (``.codex/sessions``) is exactly what
   the harness left in OUTDIR/sessions (copied byte for byte). The real ``runread`` runs as the user
   would run it, with that HOME, no ``--home`` and none of ``RUNREAD_*``, ``XDG_DATA_HOME``,
   ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``PI_CODING_AGENT_DIR`` in its environment, following README.md:
   ``runread workspace add OUTDIR/workspace``, ``runread ingest`` (no flag: it must find the agent's
   directory itself), ``runread runs`` and ``runread runs --json`` (the agent's runs, answer
   ``available``; the files are left to settle for 2 s first), one ``runread grant --run <prefix>
   --features final_answer,history,metadata --expires 15m --to test --json`` per run (the prefix is
   the run id's first 8 characters, or as many more as tell the runs apart: Codex's turn ids are
   UUIDv7s, whose first 8 characters are the same for turns in the same 65 s; an ambiguous 8-character
   prefix must be refused, naming the runs), ``runread serve`` on a free loopback port. runread's
   state goes where a user's would: ``$HOME/.local/share/runread``.
3. Three readers per run, each of which must give exactly the agent's own answer, byte for byte, and
   report its sha256: the Python SDK (tests/clients/read_final_answer.py, ``--mode auto`` and
   ``--mode legacy``), the MCP Inspector CLI (``--method tools/call --tool-name read_final_answer``,
   cursor by cursor, chunks assembled, ``--protocol-era modern`` and ``legacy``) and ``runread read …
   final-answer --out``. ``runread read … history`` must show the tool call by name and none of its
   input (nor the thinking / reasoning); the Inspector's ``read_target_metadata`` what the session
   file records.
4. The agent's directory elsewhere: ``~/.claude`` (``~/.codex``) moved to another directory named by
   ``CLAUDE_CONFIG_DIR`` (``CODEX_HOME``); ``runread ingest`` (no flag) must find
   ``$CLAUDE_CONFIG_DIR/projects`` (``$CODEX_HOME/sessions``) and the runs must be served from there.

The Python SDK and the Inspector come from the cache tests/clients/outside_clients.py fills
($RUNREAD_CLIENTS_CACHE, default ~/.cache/runread-clients; installed on first use), the agents from the
harness's ($RUNREAD_HARNESS_CACHE, default ~/.cache/runread-harness). Stdlib only.

Prints one PASS/FAIL line per check and ends with ``homes: N passed, M failed``; exits 1 if any
check failed. ``--agent claude|codex|gemini|copilot|opencode`` runs one part only (Gemini CLI, Copilot CLI and
OpenCode: ``PassiveHome``, a fresh HOME, ingest, watch, the variables that move their directories; OpenCode's
database, ``~/.local/share/opencode/opencode.db``, is copied in with its ``-wal``, later runs write straight
into it, ``XDG_DATA_HOME`` moves it with runread's own home, and a last run is read over MCP while OpenCode
writes it, under ``runread serve --watch``: only no answer or the whole scripted answer, never a part). ``--keep`` keeps the temp dir (the harness
OUTDIRs, the users' HOMEs, the serve logs, what each reader wrote); it is also kept on failure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# What this test shares with supervised.py (the harness in a process group, runread with a clean environment,
# serve on a free port, the readers, the parts' main); it also puts tests/clients on sys.path.
from live import HARNESS_TIMEOUT_S, SCENARIOS, LivePart, jsonl, options, run_parts, sha, write_key  # noqa: E402
# Shared, dependency-free helpers of the outside-clients test (results, the client cache, the label checks)
# and of the agents test (the pinned versions).
from outside_clients import (  # noqa: E402
    KEY_RE, LEGACY, MODERN, Results, cache_lock, stop, ensure, ensure_npm, ensure_venv, free_port, labeled, parse_block,
    tail, wait_for_port,
)
from readers import ANSI, CLAUDE_VERSION, CODEX_MODEL, CODEX_VERSION, OPENCODE_VERSION  # noqa: E402

GEMINI_CLI_VERSION = os.environ.get("GEMINI_CLI_VERSION", "0.61.0")  # the harness's variables, as it reads them
COPILOT_VERSION = os.environ.get("COPILOT_VERSION", "1.0.102")

FEATURES = "final_answer,history,metadata"
TOOL_OUTPUT = "hello wörld 🌍"  # notes.txt's first line, what each scenario's tool call printed
SETTLE_S = 2.0  # runread's settle window (serve --settle-ms default)
HISTORY_EVENT_MAX_BYTES = 8192  # an event's text is capped at this (runread's HISTORY_EVENT_MAX_BYTES)
PREFIX_MIN = 8  # how much of a run id the README's `grant --run` examples give
SDK_MODES = {"auto": MODERN, "legacy": LEGACY}
# Environment a user's shell would not have set for this test: runread's own, and the agents' places.
STRIP_ENV = ("XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "GEMINI_CLI_HOME", "COPILOT_HOME")
DOT_DIRS = (".pi", ".claude", ".codex", ".gemini", ".copilot", ".local/share/opencode")  # every agent's directory in a HOME


def tree(root: Path) -> dict[str, str]:
    """Every file under root (relative path -> sha256); anything but regular files and dirs is listed as such."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out[rel] = "(not a regular file)"
        elif p.is_file():
            out[rel] = sha(p.read_bytes())
    return out


def unique_prefix(run_id: str, others: list[str], at_least: int = PREFIX_MIN) -> str:
    """The shortest prefix of run_id, at least `at_least` characters, that no other run id starts with."""
    for n in range(at_least, len(run_id) + 1):
        if not any(o != run_id and o.startswith(run_id[:n]) for o in others):
            return run_id[:n]
    return run_id


class Shared:
    """What both parts use: options, the temp dir, the results, the outside clients (the Python SDK, the Inspector)."""

    def __init__(self, opts: argparse.Namespace, tmp: Path, res: Results) -> None:
        self.opts, self.tmp, self.res = opts, tmp, res
        self.py = self.node = self.inspector_entry = Path()

    def tools(self) -> None:
        with cache_lock(self.opts.cache):
            self.py, venv_desc = ensure_venv(self.opts.cache)
            self.res.record("tools: python venv", True, venv_desc)
            self.node, self.inspector_entry, npm_desc = ensure_npm(self.opts.cache)
            self.res.record("tools: node + inspector", True, npm_desc)


class AgentHome(LivePart):
    """One agent's part. Subclasses give the per-agent data and the few agent-specific readings."""

    # ---- per-agent data (subclasses set these, and LivePart's: agent, title, script, mock, version, scenario,
    # oracle — what the oracle is in messages, "Claude Code's result")
    dot_dir = ""  # the agent's directory in HOME
    sessions_dir = ""  # its sessions directory inside that
    env_var = ""  # the variable naming the agent's directory elsewhere
    hidden: tuple[str, ...] = ()  # what the scenario's tool input and thinking carry: never in history
    tool = ""  # the tool the scenario's model calls
    meta_sources: dict[str, str] = {}  # read_target_metadata: where each field must say it comes from
    strip_env = STRIP_ENV  # runread and the readers run with none of these (nor RUNREAD_*)

    def __init__(self, sh: Shared) -> None:
        super().__init__(sh.opts, sh.tmp, sh.res)
        self.sh = sh
        # the readers share one HOME and one directory for what they write (file names begin with the agent)
        self.reader_home = sh.tmp / "reader-home"
        self.read_dir, self.read_prefix = sh.tmp / "read", f"{self.agent}-"
        self.grants: list[dict[str, Any]] = []
        self.targets: list[dict[str, Any]] = []
        self.answers: list[bytes] = []  # the agent's own answer of step N, UTF-8
        self.run_ids: list[str] = []  # in step order
        self.session_ids: list[str] = []  # each run's session, in step order
        self.moved: Path | None = None  # the agent's directory after the move (stage 4)
        self.moved_grants: list[dict[str, Any]] = []

    # ---- the per-agent readings (subclasses implement these, and LivePart's install)

    def oracles(self, manifest: dict[str, Any]) -> str:
        """From the step's event streams: self.answers and the steps' session ids; returns a summary."""
        raise NotImplementedError

    def session_files(self) -> str:
        """From the session files, read with plain json: self.run_ids, self.session_ids and what metadata needs."""
        raise NotImplementedError

    def want_metadata(self, n: int) -> dict[str, Any]:
        raise NotImplementedError

    def history(self, n: int, events: list[dict[str, Any]]) -> str:
        raise NotImplementedError

    # ----------------------------------------------------------------- runread as the user runs it

    def runread_env(self) -> dict[str, str]:
        """The user's: their HOME, no RUNREAD_* nor STRIP_ENV; after the move, the variable naming the agent's directory."""
        env = super().runread_env()
        env["HOME"] = str(self.user_home)
        if self.moved is not None:
            env[self.env_var] = str(self.moved)
        return env

    def runread_cwd(self) -> Path:
        return self.user_home

    # ----------------------------------------------------------------- 1. the agent writes the session

    def live(self) -> str:
        out = self.outdir = self.tmp / "run"
        self.steps = json.loads(self.scenario.read_text(encoding="utf-8"))["steps"]
        manifest, dt = self.run_harness(out, self.tmp / "harness.out")
        for n, step in enumerate(manifest["steps"]):
            err = ANSI.sub("", (out / step["stderr"]).read_text(errors="replace"))
            ensure(step["exit_code"] == 0, f"step {n} exited {step['exit_code']}: {tail(err, 800)}")
        detail = self.oracles(manifest)
        ensure(len(self.answers) == len(self.steps), f"{len(self.answers)} answers for {len(self.steps)} steps")
        # the scripted final texts: the responses that call no tool, in order
        self.responses = json.loads(self.scenario.read_text(encoding="utf-8"))["responses"]
        scripted = [r["text"] for r in self.responses if not r.get("tool_calls")]
        same = ["=" if a.decode() == s else "≠" for a, s in zip(self.answers, scripted)]
        sizes = ", ".join(f"{len(a)} B ({s} the scripted text)" for a, s in zip(self.answers, same))
        return f"{manifest['cli_version']}, {detail}, {len(self.steps)} steps exit 0 in {dt:.1f}s; {self.oracle}s: {sizes}"

    def check_hidden_present(self, raw: str) -> None:
        """The markers the readers must never see are in the session files (so their absence means something)."""
        missing = [h for h in self.hidden if h not in raw]
        ensure(not missing, f"the session files lack {missing}: the scenario did not run as written")

    # ----------------------------------------------------------------- 2. the user's HOME, runread as they run it

    def make_home(self) -> str:
        self.user_home = self.tmp / "user"
        self.sessions = self.user_home / self.dot_dir / self.sessions_dir
        self.sessions.parent.mkdir(parents=True)
        shutil.copytree(self.outdir / "sessions", self.sessions, symlinks=True)  # copy2: bytes and mtimes
        want, got = tree(self.outdir / "sessions"), tree(self.sessions)
        ensure(want == got and want, f"~/{self.dot_dir}/{self.sessions_dir} {got} != OUTDIR/sessions {want}")
        # a user runs runread after the agent is done: let the newest write settle (2 s), as runread requires
        newest = max(p.stat().st_mtime for p in self.sessions.rglob("*") if p.is_file())
        wait = newest + SETTLE_S + 0.3 - time.time()
        if wait > 0:
            time.sleep(wait)
        return (f"{self.sessions} = OUTDIR/sessions ({len(got)} file(s), same bytes); "
                f"waited {max(wait, 0):.1f}s for the settle window")

    def ingest(self, where: Path | None = None) -> str:
        where = where or self.sessions
        out = self.ok("ingest")
        ensure(str(where) + "/" in out, f"output does not name {where}/…: {tail(out, 600)}")
        others = [d for d in DOT_DIRS if d != self.dot_dir and f"/{d}" in out]
        ensure(not others, f"output names {others}: {tail(out, 600)}")
        old = self.user_home / self.dot_dir
        ensure(self.moved is None or str(old) not in out, f"output names {old}, which is gone: {tail(out, 600)}")
        want = len(self.run_ids)
        ensure(re.search(rf"\b{want} runs\b", out), f"output does not say {want} runs: {tail(out, 600)}")
        store = self.user_home / ".local" / "share" / "runread"
        ensure(store.is_dir(), f"no runread home at {store} (the default for this HOME)")
        shown = out.replace(str(self.moved), f"${self.env_var}") if self.moved else out
        return " / ".join(tail(shown.replace(str(self.user_home), "$HOME"), 300).splitlines())

    def runs_table(self) -> str:
        out = self.ok("runs")
        header, *lines = out.splitlines()
        ensure(header.split()[:2] == ["RUN", "AGENT"], f"header {header!r}")
        rows = [line for line in lines if any(s in line for s in self.session_ids)]
        ensure(len(rows) == len(self.run_ids) == len(lines), f"rows {rows} in {tail(out, 600)}")
        # the RUN column: the shortest prefix of the run id, at least PREFIX_MIN characters, that tells it apart
        shown = sorted(r.split()[0] for r in rows)
        want = sorted(self.prefix(n) for n in range(len(self.run_ids)))
        ensure(shown == want, f"RUN column {shown}; want {want} (the shortest distinct prefixes, at least {PREFIX_MIN} "
               f"characters, of the run ids {self.run_ids})")
        for row in rows:
            ensure(row.split()[1:4] == [self.agent, "completed", "available"], f"row {row!r}")
        return " | ".join(" ".join(r.split()) for r in rows)

    def runs_json(self) -> str:
        runs = self.json_of("runs", "--json")
        ensure(len(runs) == len(self.run_ids), f"{len(runs)} runs: {tail(json.dumps(runs), 600)}")
        ids = [r["target"]["runId"] for r in runs]
        ensure(sorted(ids) == sorted(self.run_ids), f"runIds {ids} != the session files' {self.run_ids}")
        by_id = {r["target"]["runId"]: r for r in runs}
        self.targets = []
        for n, run_id in enumerate(self.run_ids):
            r = by_id[run_id]
            ensure(r.get("agent") == self.agent and r["target"].get("sessionId") == self.session_ids[n]
                   and r.get("status") == "completed" and r.get("answerState") == "available"
                   and r.get("finalBytes") == len(self.answers[n]),
                   f"run {n + 1}: agent {r.get('agent')!r}, sessionId {r['target'].get('sessionId')!r} (want "
                   f"{self.session_ids[n]}), status {r.get('status')!r}, answerState {r.get('answerState')!r}, "
                   f"finalBytes {r.get('finalBytes')!r} ({self.oracle}: {len(self.answers[n])} B)")
            self.targets.append(r["target"])
        return "; ".join(f"run {n + 1} {t['runId']} (session {t['sessionId'][:8]}…): {self.agent}, completed, "
                         f"available, {len(self.answers[n])} B" for n, t in enumerate(self.targets))

    def prefix(self, n: int) -> str:
        return unique_prefix(self.run_ids[n], self.run_ids)

    def ambiguous_prefix(self) -> str:
        """`grant --run` with an 8-character prefix several runs share is refused, naming them all."""
        shared = {u[:PREFIX_MIN] for u in self.run_ids if sum(v.startswith(u[:PREFIX_MIN]) for v in self.run_ids) > 1}
        if not shared:
            return f"every run id differs in its first {PREFIX_MIN} characters this time: nothing to refuse"
        for p in sorted(shared):
            r = self.runread("grant", "--run", p, "--features", FEATURES, "--expires", "15m", "--to", "test", "--json")
            named = [u for u in self.run_ids if u.startswith(p)]
            ensure(r.returncode != 0 and not r.stdout.strip(),
                   f"--run {p}: exit {r.returncode}, stdout {tail(r.stdout, 300)}")
            ensure(f"names {len(named)} runs" in r.stderr and all(u in r.stderr for u in named),
                   f"--run {p}: {tail(r.stderr, 600)}")
        grants = self.json_of("grant", "list", "--json")
        ensure(grants == [], f"a refused grant left a grant: {tail(json.dumps(grants), 400)}")
        return (f"--run {', '.join(sorted(shared))} refused: 'names N runs; give one of these instead:', naming "
                f"each; no grant made")

    def grant(self, n: int, label: str = "") -> dict[str, Any]:
        # A reader of its own for each grant, so each shows a key of its own.
        g = self.json_of("grant", "--run", self.prefix(n), "--features", FEATURES, "--expires", "15m",
                         "--to", f"test-{self.agent}{label}-run{n + 1}", "--json")
        ensure(KEY_RE.fullmatch(g.get("key", "")) and g.get("grantId"), f"grant --json: key/grantId {g.get('grantId')!r}")
        ensure(g.get("target") == self.targets[n], f"granted target {g.get('target')} != runs --json's {self.targets[n]}")
        g["keyFile"] = write_key(self.sh.tmp / "keys" / f"{self.agent}{label}-run{n + 1}.txt", g["key"])
        return g

    # ----------------------------------------------------------------- 3. the readers

    def sdk(self, n: int, mode: str) -> str:
        g, want = self.grants[n], self.answers[n]
        out = self.out_file(f"sdk-{mode}-run{n + 1}.txt")
        s = self.sdk_read(self.sh.py, g, want, out, SDK_MODES[mode], *(["--mode", mode] if mode != "auto" else []))
        return f"{s['protocolVersion']}, {s.get('chunks')} chunks, {len(want)} B, sha256 {sha(want)[:12]}… = {self.oracle}"

    def inspector(self, key: str, *args: str, era: str = "modern") -> dict[str, Any]:
        """README.md's form: `… --cli URL --protocol-era ERA --stored-auth-only --header "x-runread-key: K" ARGS --format json`."""
        home = self.sh.tmp / "inspector-home"
        home.mkdir(exist_ok=True)
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"))
        env.pop("MCP_CATALOG_PATH", None)
        cmd = [str(self.sh.node), str(self.sh.inspector_entry), "--cli", self.url, "--protocol-era", era,
               "--stored-auth-only", "--header", f"x-runread-key: {key}", *args, "--format", "json"]
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, env=env)
        out = None
        with contextlib.suppress(ValueError):
            out = json.loads(r.stdout)
        ensure(r.returncode == 0 and isinstance(out, dict) and isinstance(out.get("result"), dict),
               f"{' '.join(args[:4])}: exit {r.returncode}: {tail(r.stdout + r.stderr, 600)}")
        return out["result"]

    def inspector_read(self, n: int, era: str = "modern") -> str:
        g, want = self.grants[n], self.answers[n]
        listed = self.inspector(g["key"], "--method", "tools/call", "--tool-name", "list_granted_targets", era=era)
        sc = listed.get("structuredContent") or {}
        labeled("list_granted_targets", sc)
        targets = [t.get("target") for t in sc.get("targets", []) if "final_answer" in t.get("features", [])]
        ensure(targets == [g["target"]], f"list_granted_targets: {targets} (granted {g['target']})")
        args: dict[str, Any] = {"target": g["target"]}
        parts: list[bytes] = []
        server_sha = None
        for call in range(len(want) // 4 + 3):
            result = self.inspector(g["key"], "--method", "tools/call", "--tool-name", "read_final_answer",
                                    "--tool-args-json", json.dumps(args, ensure_ascii=False), era=era)
            where = f"call {call}"
            ensure(result.get("isError") is False, f"{where}: isError {result.get('isError')!r}: {tail(json.dumps(result), 400)}")
            sc = result.get("structuredContent") or {}
            labeled("read_final_answer", sc)
            ensure(parse_block(result, "read_final_answer", "untrusted") == sc, f"{where}: text block JSON != structuredContent")
            ensure(sc.get("state") == "available" and sc.get("readable") is True and isinstance(sc.get("text"), str),
                   f"{where}: state {sc.get('state')!r}, readable {sc.get('readable')!r}")
            ensure(sc.get("byteOffset") == sum(map(len, parts)), f"{where}: byteOffset {sc.get('byteOffset')}")
            ensure(server_sha in (None, sc.get("sha256")), f"{where}: sha256 changed")
            server_sha = sc.get("sha256")
            parts.append(sc["text"].encode("utf-8"))
            if sc.get("eof") is True:
                break
            ensure(isinstance(sc.get("nextCursor"), str) and sc["nextCursor"], f"{where}: not eof, nextCursor {sc.get('nextCursor')!r}")
            args = {"target": g["target"], "cursor": sc["nextCursor"]}
        else:
            raise AssertionError(f"no eof after {len(parts)} calls")
        got = b"".join(parts)
        ensure(got == want, self.differs("assembled", got, want))
        ensure(server_sha == sha(want), f"reported sha256 {server_sha} != {sha(want)}")
        return f"{len(parts)} chunks assembled, {len(got)} B, sha256 {server_sha[:12]}… = {self.oracle}"

    def inspector_metadata(self, n: int, g: dict[str, Any] | None = None) -> str:
        """read_target_metadata against what the session file itself records."""
        g = g or self.grants[n]
        result = self.inspector(g["key"], "--method", "tools/call", "--tool-name", "read_target_metadata",
                                "--tool-args-json", json.dumps({"target": g["target"]}))
        ensure(result.get("isError") is False, f"isError {result.get('isError')!r}: {tail(json.dumps(result), 400)}")
        sc = result.get("structuredContent") or {}
        self.out_file(f"metadata-{g['grantId']}.json").write_text(json.dumps(sc, ensure_ascii=False, indent=1))
        labeled("read_target_metadata", sc)
        ensure(parse_block(result, "read_target_metadata", "untrusted") == sc, "text block JSON != structuredContent")
        value = {k: (v.get("value") if isinstance(v, dict) else v) for k, v in sc.items()}
        source = {k: v.get("source") for k, v in sc.items() if isinstance(v, dict)}
        want = self.want_metadata(n)
        want.update(agent=self.agent, workspacePath=str(self.workspace))
        diff = {k: (value.get(k), w) for k, w in want.items() if value.get(k) != w}
        diff.update({f"{k}.source": (source.get(k), w) for k, w in self.meta_sources.items() if source.get(k) != w})
        ensure(not diff, f"(got, want): {diff}")
        return (", ".join(f"{k} {v}" for k, v in want.items() if k != "workspacePath") + "; sources "
                + ", ".join(f"{k} {w}" for k, w in self.meta_sources.items()))

    def cli_final_answer(self, n: int, g: dict[str, Any] | None = None, label: str = "") -> str:
        g = g or self.grants[n]
        return f"{self.cli_answer(g['keyFile'], self.answers[n], self.out_file(f'cli{label}-run{n + 1}.txt'))} = {self.oracle}"

    def cli_history(self, n: int) -> str:
        g = self.grants[n]
        out = self.out_file(f"history-run{n + 1}.json")
        r = self.runread_read(g["keyFile"], "history", "--out", str(out))
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        raw = out.read_text(encoding="utf-8")
        events = json.loads(raw)
        ensure(isinstance(events, list) and events, f"history {tail(raw, 300)}")
        for h in self.hidden:
            ensure(h not in raw and h not in r.stdout + r.stderr, f"history holds {h!r} (a tool input or thinking)")
        return self.history(n, events)

    def truncated_answer(self, n: int, event: dict[str, Any]) -> str:
        """A history event holding the long answer: its first bytes (at most 8,192), marked truncated."""
        text = (event.get("text") or "").encode("utf-8")
        want = self.answers[n]
        ensure(len(want) > HISTORY_EVENT_MAX_BYTES, f"the answer is {len(want)} B: the scenario should exceed the cap")
        ensure(text and want.startswith(text) and len(text) <= HISTORY_EVENT_MAX_BYTES and event.get("truncated") is True,
               f"the last assistant event ({len(text)} B, truncated {event.get('truncated')!r}) is not the answer's "
               f"first bytes, truncated")
        return f"the answer's first {len(text)} B, truncated"

    # ----------------------------------------------------------------- 4. the agent's directory elsewhere

    def moved_checks(self) -> None:
        var = self.env_var
        moved = self.tmp / f"{self.dot_dir.lstrip('.')}-moved"
        os.rename(self.user_home / self.dot_dir, moved)  # ~/.<agent> is gone; the variable names its new place
        self.moved = moved

        self.check(f"{var}: runread ingest (no flag) finds ${var}/{self.sessions_dir}",
                   lambda: self.ingest(moved / self.sessions_dir))

        def runs() -> str:
            rs = self.json_of("runs", "--json")
            mine = [r for r in rs if r["target"]["runId"] in self.run_ids]
            ensure(len(mine) == len(rs), f"runs other than the session files': {tail(json.dumps(rs), 400)}")
            live = [r for r in mine if r.get("answerState") == "available"]
            ensure(sorted(r["target"]["runId"] for r in live) == sorted(self.run_ids),
                   f"available runs {[(r['target']['runId'], r.get('answerState')) for r in mine]}")
            session_of = dict(zip(self.run_ids, self.session_ids))
            ensure(all(r.get("agent") == self.agent and r["target"]["sessionId"] == session_of[r["target"]["runId"]]
                       for r in live), f"{live}")
            self.moved_targets = {r["target"]["runId"]: r["target"] for r in live}
            return (f"{len(rs)} runs listed, all available from the new place "
                    f"(generation {sorted({r['target'].get('generation') for r in live})}, "
                    f"before: {sorted({t.get('generation') for t in self.targets})})")

        if not self.check(f"{var}: runread runs --json", runs):
            return

        def old_key() -> str:
            """The key granted before the move: the exact answer again, or a refusal; never other bytes."""
            out = self.out_file("cli-oldkey-run1.txt")
            r = self.runread_read(self.grants[0]["keyFile"], "final-answer", "--out", str(out))
            if r.returncode == 0:
                ensure(out.read_bytes() == self.answers[0], f"the old key reads bytes other than {self.oracle}")
                return f"still reads the same answer: {tail(r.stderr, 120)}"
            ensure(not out.exists(), "a refused read wrote a file")
            return f"refused (exit {r.returncode}): {tail(r.stderr or r.stdout, 200)}"

        self.check(f"{var}: the key granted before the move", old_key)
        for n in range(len(self.run_ids)):
            def fresh(n: int = n) -> str:
                self.targets[n] = self.moved_targets[self.run_ids[n]]
                g = self.grant(n, label="-moved")
                self.moved_grants.append(g)
                return f"grant --run {self.prefix(n)} -> {g['grantId']}; " + self.cli_final_answer(n, g, "-moved")

            # metadata again for the last run (Codex's: the fork, whose parent must still be `available`)
            if (self.check(f"{var}: run {n + 1} granted again and read (runread read final-answer)", fresh)
                    and n == len(self.run_ids) - 1):
                self.check(f"{var}: run {n + 1} inspector read_target_metadata",
                           lambda n=n: self.inspector_metadata(n, self.moved_grants[-1]))

    # ----------------------------------------------------------------- the part

    def run(self) -> None:
        self.must(f"tools: {self.title}", self.install_agent, f"no {self.title}")
        self.must(f"{self.title}: a live session through the harness", self.live, "no session to read")
        self.must(f"session files: prompts, run ids, cwd, the {self.tool} call (plain json)", self.session_files,
                  "the session files are not what the scenario should have written")
        self.must(f"user HOME: ~/{self.dot_dir}/{self.sessions_dir} = the harness's sessions, byte for byte",
                  self.make_home, "no user HOME")
        steps = [
            ("runread workspace add OUTDIR/workspace", lambda: tail(self.ok("workspace", "add", str(self.workspace)), 200)),
            (f"runread ingest (no flag) finds ~/{self.dot_dir}/{self.sessions_dir}", self.ingest),
            ("runread runs", self.runs_table),
            ("runread runs --json", self.runs_json),
        ]
        for what, fn in steps:
            self.must(what, fn, f"`{what}` failed; nothing to grant")
        self.check(f"runread grant --run <first {PREFIX_MIN} chars> when several runs share them: refused",
                   self.ambiguous_prefix)
        for n in range(len(self.run_ids)):
            def grant(n: int = n) -> str:
                g = self.grant(n)
                self.grants.append(g)
                return f"--run {self.prefix(n)} -> {g['grantId']}, target runId {g['target']['runId']}"

            self.must(f"runread grant --run <prefix> --features {FEATURES} (run {n + 1})", grant, "grant failed")
        self.must("runread serve", self.serve, "serve failed")
        for n in range(len(self.run_ids)):
            r = f"run {n + 1}"
            for mode in SDK_MODES:
                self.check(f"{r}: python sdk read_final_answer.py --mode {mode}", lambda n=n, mode=mode: self.sdk(n, mode))
            for era in ("modern", "legacy"):
                self.check(f"{r}: inspector --protocol-era {era} read_final_answer (cursors)",
                           lambda n=n, era=era: self.inspector_read(n, era))
            self.check(f"{r}: runread read final-answer --out", lambda n=n: self.cli_final_answer(n))
            self.check(f"{r}: runread read history", lambda n=n: self.cli_history(n))
            self.check(f"{r}: inspector read_target_metadata", lambda n=n: self.inspector_metadata(n))
        self.moved_checks()
        self.check("runread serve still running", self.alive)


class ClaudeHome(AgentHome):
    agent, title, oracle = "claude", "Claude Code", "Claude Code's result"
    script, mock, version_attr, version = "claude-scenario.py", "mockanthropic.py", "CLAUDE_CODE_VERSION", CLAUDE_VERSION
    scenario = SCENARIOS / "claude-home.json"
    dot_dir, sessions_dir, env_var = ".claude", "projects", "CLAUDE_CONFIG_DIR"
    hidden = ("RUNREAD-HOMES-TOOL-INPUT", "RUNREAD-HOMES-TOOL-DESCRIPTION", "RUNREAD-HOMES-THINKING")
    tool = "Bash"
    meta_sources = {"cwd": "prompt_line", "gitBranch": "prompt_line", "agentVersion": "prompt_line",
                    "runModel": "assistant_messages"}

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_claude())

    def oracles(self, manifest: dict[str, Any]) -> str:
        """The `result` event of each step's stream-json; `--continue` stays in one session."""
        steps = manifest["steps"]
        sids = {s["session_id"] for s in steps}
        ensure(len(sids) == 1 and None not in sids, f"session ids {sids}: --continue should stay in one session")
        self.session_id = sids.pop()
        ensure(len(manifest["session_files"]) == 1 and self.session_id in manifest["session_files"][0],
               f"session files {manifest['session_files']}")
        for n, step in enumerate(steps):
            events = jsonl(self.outdir / step["events"])
            results = [e for e in events if e.get("type") == "result"]
            ensure(len(results) == 1, f"step {n}: {len(results)} result events")
            r = results[0]
            ensure(r.get("subtype") == "success" and r.get("is_error") is False and isinstance(r.get("result"), str)
                   and r.get("session_id") == self.session_id, f"step {n}: result event {json.dumps(r)[:300]}")
            ensure(any(e.get("type") == "assistant" for e in events), f"step {n}: no assistant event")
            self.answers.append(r["result"].encode("utf-8"))
        return f"session {self.session_id}"

    def session_files(self) -> str:
        """The prompt lines of the one session file: the runs' ids (the lines' uuids) and cwd."""
        files = sorted((self.outdir / "sessions").glob("*/*.jsonl"))
        ensure(len(files) == 1 and files[0].stem == self.session_id, f"session files {files}")
        self.workspace = Path(json.loads((self.outdir / "manifest.json").read_text())["workspace"])
        self.check_hidden_present(files[0].read_text(encoding="utf-8"))
        prompts, cwds, tool_uses, self.models = [], set(), [], set()
        self.prompt_lines: list[dict[str, Any]] = []
        for e in jsonl(files[0]):
            if e.get("cwd"):
                cwds.add(e["cwd"])
            content = (e.get("message") or {}).get("content")
            if e.get("type") == "user" and "turnPosition" in e and not e.get("isMeta") and isinstance(content, str):
                prompts.append((e["uuid"], content))
                self.prompt_lines.append(e)
            if e.get("type") == "assistant" and isinstance(content, list):
                tool_uses += [b.get("name") for b in content if b.get("type") == "tool_use"]
                self.models.add(e["message"].get("model"))
        ensure([p for _, p in prompts] == [s["prompt"] for s in self.steps], f"prompt lines {[p for _, p in prompts]}")
        ensure(cwds == {str(self.workspace)}, f"cwds {cwds} (workspace {self.workspace})")
        ensure(tool_uses == [self.tool], f"tool_use blocks {tool_uses}")
        self.run_ids = [u for u, _ in prompts]
        self.session_ids = [self.session_id] * len(self.run_ids)
        ensure(all(len(u) == 36 for u in self.run_ids) and len(set(self.run_ids)) == len(self.run_ids), f"run ids {self.run_ids}")
        ensure(len(self.models) == 1, f"assistant models {self.models}")
        ensure(all(line["version"] == self.version for line in self.prompt_lines),
               f"the prompt lines record Claude Code {[line['version'] for line in self.prompt_lines]}")
        return (f"{files[0].relative_to(self.outdir)}: prompts {', '.join(self.run_ids)}; cwd {self.workspace}; one "
                f"{self.tool} call; model {next(iter(self.models))}")

    def want_metadata(self, n: int) -> dict[str, Any]:
        line = self.prompt_lines[n]
        return {"cwd": line["cwd"], "agentVersion": line["version"], "gitBranch": line["gitBranch"],
                "runModel": next(iter(self.models))}

    def history(self, n: int, events: list[dict[str, Any]]) -> str:
        roles = [e.get("role") for e in events]
        calls = [c for e in events for c in (e.get("toolCalls") or [])]
        if n == 0:
            ensure(roles == ["user", "assistant", "toolResult", "assistant"], f"roles {roles}")
            ensure(calls == [self.tool] and events[1].get("toolCalls") == [self.tool],
                   f"toolCalls {calls}: want the name only")
            ensure(events[0].get("text") == self.prompt_lines[0]["message"]["content"], f"prompt {events[0].get('text')!r}")
            ensure(TOOL_OUTPUT in (events[2].get("text") or ""), f"toolResult text {events[2].get('text')!r}")
            return (f"{len(events)} events {roles}; toolCalls {json.dumps(calls)}; the tool's output shown; no tool "
                    f"input or thinking; {self.truncated_answer(0, events[3])}")
        ensure(roles == ["user", "assistant"] and not calls, f"roles {roles}, toolCalls {calls}")
        ensure(events[1].get("text") == self.answers[n].decode(), "the assistant event is not the answer")
        return f"{len(events)} events {roles}"


class CodexHome(AgentHome):
    agent, title, oracle = "codex", "Codex", "Codex's answer"
    script, mock, version_attr, version = "codex-scenario.py", "mockresponses.py", "CODEX_VERSION", CODEX_VERSION
    scenario = SCENARIOS / "codex-home.json"
    dot_dir, sessions_dir, env_var = ".codex", "sessions", "CODEX_HOME"
    # notes.txt's second line is in the tool's output only: Codex's history shows no tool output
    hidden = ("RUNREAD-HOMES-TOOL-INPUT", "RUNREAD-HOMES-THINKING", "RUNREAD-HOMES-TOOL-OUTPUT")
    tool = "exec_command"
    meta_sources = {"cwd": "session_meta", "agentVersion": "session_meta", "modelProvider": "session_meta",
                    "runModel": "turn_context", "parentSession": "session_meta"}

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_codex())

    def oracles(self, manifest: dict[str, Any]) -> str:
        """The last `agent_message` before `turn.completed` of each step's `exec --json` stream."""
        steps = manifest["steps"]
        self.step_sessions = [s["session_id"] for s in steps]
        for n, (step, sc) in enumerate(zip(steps, self.steps)):
            events = jsonl(self.outdir / step["events"])
            kinds = [e.get("type") for e in events]
            ensure(kinds[0] == "thread.started" and events[0].get("thread_id") == step["session_id"]
                   and kinds.count("turn.completed") == 1 and kinds[-1] == "turn.completed"
                   and not {"turn.failed", "error"} & set(kinds), f"step {n}: events {kinds}")
            messages = [e["item"]["text"] for e in events
                        if e.get("type") == "item.completed" and (e.get("item") or {}).get("type") == "agent_message"]
            ensure(messages and isinstance(messages[-1], str), f"step {n}: no agent_message")
            self.answers.append(messages[-1].encode("utf-8"))
            if sc.get("resume"):
                ensure(step["session_id"] == self.step_sessions[n - 1], f"step {n} (resume) in session {step['session_id']}")
            if sc.get("fork"):
                ensure(step["session_id"] not in self.step_sessions[:n], f"step {n} (fork) in session {step['session_id']}")
        sessions = list(dict.fromkeys(self.step_sessions))
        return f"thread{'s' if len(sessions) > 1 else ''} {', '.join(sessions)}"

    def session_files(self) -> str:
        """The rollouts: session_meta (thread id, cwd, CLI version, provider, fork parent), each turn's
        task_started (the run id), turn_context (model, cwd), prompt and task_complete (the answer)."""
        self.workspace = Path(json.loads((self.outdir / "manifest.json").read_text())["workspace"])
        files = sorted((self.outdir / "sessions").rglob("rollout-*.jsonl"))
        ensure(len(files) == len(set(self.step_sessions)), f"rollout files {files}")
        self.check_hidden_present("".join(f.read_text(encoding="utf-8") for f in files))
        self.meta: dict[str, dict[str, Any]] = {}
        turns: dict[str, list[dict[str, Any]]] = {}  # thread id -> its turns, in file order
        calls, reasoning = [], 0
        for f in files:
            lines = jsonl(f)
            ensure(lines[0].get("type") == "session_meta", f"{f.name}: first line {lines[0].get('type')}")
            meta = lines[0]["payload"]
            ensure(f.stem.endswith(meta["id"]), f"{f.name}: session_meta id {meta['id']}")
            self.meta[meta["id"]] = meta
            by_id: dict[str, dict[str, Any]] = {}
            for e in lines[1:]:
                p, kind = e.get("payload") or {}, e.get("type")
                if kind == "event_msg" and p.get("type") == "task_started":
                    by_id[p["turn_id"]] = {"turn_id": p["turn_id"], "session": meta["id"]}
                elif kind == "turn_context":
                    by_id[p["turn_id"]].update(model=p.get("model"), cwd=p.get("cwd"))
                elif kind == "event_msg" and p.get("type") == "item_completed" and p["item"].get("type") == "UserMessage":
                    by_id[p["turn_id"]]["prompt"] = "".join(c.get("text", "") for c in p["item"]["content"])
                elif kind == "event_msg" and p.get("type") == "task_complete":
                    by_id[p["turn_id"]]["answer"] = p.get("last_agent_message")
                elif kind == "response_item" and p.get("type") == "function_call":
                    calls.append((p.get("name"), p.get("arguments")))
                elif kind == "response_item" and p.get("type") == "reasoning":
                    reasoning += 1
            turns[meta["id"]] = list(by_id.values())
        # the steps' runs: each step's thread's next turn
        self.runs: list[dict[str, Any]] = []
        for n, sid in enumerate(self.step_sessions):
            ensure(turns.get(sid), f"step {n}: no turn left in thread {sid}")
            self.runs.append(turns[sid].pop(0))
        ensure(not any(turns.values()), f"turns no step made: {turns}")
        for n, t in enumerate(self.runs):
            ensure(t.get("prompt") == self.steps[n]["prompt"], f"run {n + 1}: prompt {t.get('prompt')!r}")
            ensure(t.get("answer") == self.answers[n].decode(), f"run {n + 1}: task_complete.last_agent_message "
                   f"({len((t.get('answer') or '').encode())} B) != the agent_message of events-{n}.jsonl")
            ensure(t.get("cwd") == str(self.workspace) and t.get("model") == CODEX_MODEL, f"run {n + 1}: turn_context {t}")
        for sid, meta in self.meta.items():
            ensure(meta.get("cwd") == str(self.workspace) and meta.get("cli_version") == self.version,
                   f"session_meta of {sid}: cwd {meta.get('cwd')}, cli_version {meta.get('cli_version')}")
        ensure([c for c, _ in calls] == [self.tool] and self.hidden[0] in calls[0][1], f"function_calls {calls}")
        ensure(reasoning == 2, f"{reasoning} reasoning items")
        self.run_ids = [t["turn_id"] for t in self.runs]
        self.session_ids = [t["session"] for t in self.runs]
        ensure(len(set(self.run_ids)) == len(self.run_ids), f"run ids {self.run_ids}")
        forks = {sid: m["forked_from_id"] for sid, m in self.meta.items() if m.get("forked_from_id")}
        return (f"{len(files)} rollouts: turns {', '.join(self.run_ids)}; cwd {self.workspace}; one {self.tool} call, "
                f"{reasoning} reasoning items; model {CODEX_MODEL}; forks {forks or 'none'}; task_complete = events")

    def want_metadata(self, n: int) -> dict[str, Any]:
        run, meta = self.runs[n], self.meta[self.session_ids[n]]
        parent = meta.get("forked_from_id")
        return {"cwd": meta["cwd"], "agentVersion": meta["cli_version"], "runModel": run["model"],
                "modelProvider": meta["model_provider"], "gitBranch": (meta.get("git") or {}).get("branch"),
                "parentSession": parent, "inheritedHistory": "available" if parent else None}

    def history(self, n: int, events: list[dict[str, Any]]) -> str:
        roles = [e.get("role") for e in events]
        calls = [c for e in events for c in (e.get("toolCalls") or [])]
        ensure(events[0].get("text") == self.steps[n]["prompt"], f"prompt {events[0].get('text')!r}")
        if n == 0:
            ensure(roles == ["user", "assistant", "assistant", "assistant"], f"roles {roles}")
            ensure(events[1].get("text") == self.responses[0]["text"], f"the text before the call {events[1].get('text')!r}")
            ensure(calls == [self.tool] and events[2].get("toolCalls") == [self.tool],
                   f"toolCalls {calls}: want the name only")
            return (f"{len(events)} events {roles}; toolCalls {json.dumps(calls)}; no tool input, output or reasoning; "
                    f"{self.truncated_answer(0, events[-1])}")
        ensure(roles == ["user", "assistant"] and not calls, f"roles {roles}, toolCalls {calls}")
        ensure(events[1].get("text") == self.answers[n].decode(), "the assistant event is not the answer")
        return f"{len(events)} events {roles}"


class PassiveHome(LivePart):
    """Gemini CLI's, Copilot CLI's and OpenCode's part: the real agent writes its runs into a fresh user's HOME, runread
    (no flags) ingests them, `runread watch` picks up a run the agent makes while it watches, `runread runs`
    names the agent, a grant is read over MCP (`runread read`, the Python SDK); then the agent's directory is
    moved and named by its variable. Its oracle is the scenario's scripted final text (what the agent's model
    answered), which the agent's own event stream must also carry."""

    oracle = "the scripted answer"
    strip_env = STRIP_ENV
    dot_rel = ""  # the sessions directory, relative to HOME (what the variable moves: its `~` or the dot dir)
    env_var = ""
    moved_rel = ""  # the sessions directory, relative to the directory the variable names
    harness_sessions = ""  # what of OUTDIR/sessions is the sessions directory
    answer_state, status = "available", "completed"
    watch_scenario = Path()

    def __init__(self, sh: Shared) -> None:
        super().__init__(sh.opts, sh.tmp, sh.res)
        self.sh = sh
        self.reader_home = sh.tmp / "reader-home"
        self.read_dir, self.read_prefix = sh.tmp / "read", f"{self.agent}-"
        self.user_home = self.tmp / "user"
        self.moved: Path | None = None
        self.answers: list[bytes] = []
        self.runs: list[dict[str, Any]] = []
        self.watcher: subprocess.Popen | None = None

    def runread_env(self) -> dict[str, str]:
        env = super().runread_env()
        env["HOME"] = str(self.user_home)
        if self.moved is not None:
            env[self.env_var] = str(self.moved)
        return env

    def runread_cwd(self) -> Path:
        return self.user_home

    def cleanup(self) -> None:
        stop(self.watcher)
        super().cleanup()

    def sessions(self) -> Path:
        return (self.moved / self.moved_rel) if self.moved else self.user_home / self.dot_rel

    def play(self, scenario: Path, out: Path) -> str:
        """The scenario played by the real agent; its scripted final texts appended to self.answers, each
        checked to be in the agent's own event stream of its step."""
        self.scenario = scenario
        self.steps = json.loads(scenario.read_text(encoding="utf-8"))["steps"]
        manifest, dt = self.run_harness(out, out.parent / f"{out.name}.harness.out")
        responses = json.loads(scenario.read_text(encoding="utf-8"))["responses"]
        scripted = [r["text"] for r in responses if not r.get("tool_calls")]
        ensure(len(scripted) == len(self.steps), f"{len(scripted)} final texts for {len(self.steps)} steps")
        for n, step in enumerate(manifest["steps"]):
            err = ANSI.sub("", (out / step["stderr"]).read_text(errors="replace"))
            ensure(step["exit_code"] == 0, f"step {n} exited {step['exit_code']}: {tail(err, 800)}")
            # the answer in the agent's own stream: its text, or its streamed pieces in a row
            pieces: list[str] = []

            def strings(v: Any) -> None:
                if isinstance(v, str):
                    pieces.append(v)
                elif isinstance(v, dict):
                    for x in v.values():
                        strings(x)
                elif isinstance(v, list):
                    for x in v:
                        strings(x)
            evs = jsonl(out / step["events"])
            for e in evs:
                strings(e)
            deltas = "".join(e["content"] for e in evs if e.get("role") == "assistant" and isinstance(e.get("content"), str))
            ensure(scripted[n] in "".join(pieces) or scripted[n] in deltas, f"step {n}: the answer is not in its event stream")
        self.answers += [t.encode() for t in scripted]
        return (f"{manifest['cli_version']}, {len(self.steps)} step(s) exit 0 in {dt:.1f}s; "
                f"{', '.join(str(len(t.encode())) + ' B' for t in scripted)} answered")

    def before_play(self, out: Path) -> None:
        """Before the watched run is played into OUTDIR `out` (agents whose run writes into the user's HOME)."""

    def copy_in(self, out: Path) -> str:
        self.ok("workspace", "add", str(Path(json.loads((out / "manifest.json").read_text())["workspace"])))
        src = out / "sessions" / self.harness_sessions
        dst = self.sessions()
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
        newest = max(p.stat().st_mtime for p in dst.rglob("*") if p.is_file())
        wait = newest + SETTLE_S + 0.3 - time.time()
        if wait > 0:
            time.sleep(wait)
        return (f"`runread workspace add OUTDIR/workspace`; {len([p for p in src.rglob('*') if p.is_file()])} file(s) "
                f"into {dst}")

    def ingest(self, want: int) -> str:
        out = self.ok("ingest")
        where = self.sessions()
        ensure(str(where) + "/" in out or str(where) in out, f"output does not name {where}: {tail(out, 600)}")
        ensure(re.search(rf"\b{want} runs?\b", out), f"output does not say {want} runs: {tail(out, 600)}")
        ensure((self.user_home / ".local" / "share" / "runread").is_dir(), "no runread home in ~/.local/share/runread")
        return " / ".join(tail(out.replace(str(self.user_home), "$HOME"), 300).splitlines())

    def runs_json(self, want: int) -> str:
        runs = self.json_of("runs", "--json")
        ensure(len(runs) == want, f"{len(runs)} runs (want {want}): {tail(json.dumps(runs), 600)}")
        # oldest first: the runs in the order the agent made them
        runs.sort(key=lambda r: r.get("startedAt") or r.get("updatedAt") or "")
        for n, r in enumerate(runs):
            ensure(r.get("agent") == self.agent and r.get("status") == self.status
                   and r.get("answerState") == self.answer_state,
                   f"run {n + 1}: agent {r.get('agent')!r}, status {r.get('status')!r}, answerState "
                   f"{r.get('answerState')!r} (want {self.agent}, {self.status}, {self.answer_state})")
            if self.answer_state == "available":
                ensure(r.get("finalBytes") in [len(a) for a in self.answers], f"run {n + 1}: finalBytes {r.get('finalBytes')}")
        self.runs = runs
        table = self.ok("runs")
        rows = [line for line in table.splitlines()[1:] if line.strip()]
        ensure(len(rows) == want and all(line.split()[1] == self.agent for line in rows), f"runs: {tail(table, 600)}")
        return "; ".join(f"{r['target']['runId']}: {self.agent}, {self.status}, {self.answer_state}" for r in runs)

    def grant(self, n: int, label: str = "") -> dict[str, Any]:
        t = self.runs[n]["target"]
        g = self.json_of("grant", "--run", t["runId"], "--features", FEATURES, "--expires", "15m",
                         "--to", f"test-{self.agent}{label}-run{n + 1}", "--json")
        ensure(KEY_RE.fullmatch(g.get("key", "")) and g.get("target") == t, f"grant --json: {g.get('target')} != {t}")
        g["keyFile"] = write_key(self.sh.tmp / "keys" / f"{self.agent}{label}-run{n + 1}.txt", g["key"])
        return g

    def answer_of(self, n: int) -> bytes:
        """Run n's oracle: the scripted answer whose length runs --json reports (the runs sort by time)."""
        return self.answers[n]

    def read_checks(self, n: int, label: str = "") -> None:
        g = self.grant(n, label)
        want = self.answer_of(n)
        if self.answer_state == "available":
            self.check(f"run {n + 1}{label}: runread read final-answer --out (MCP)",
                       lambda: self.cli_answer(g["keyFile"], want, self.out_file(f"cli{label}-run{n + 1}.txt"))
                       + f" = {self.oracle}")
            self.check(f"run {n + 1}{label}: python sdk read_final_answer.py",
                       lambda: (lambda s: f"{s['protocolVersion']}, {len(want)} B, sha256 {sha(want)[:12]}… = {self.oracle}")(
                           self.sdk_read(self.sh.py, g, want, self.out_file(f"sdk{label}-run{n + 1}.txt"), MODERN)))
        else:
            self.check(f"run {n + 1}{label}: read_final_answer says unknown, no answer served",
                       lambda: self.unknown_answer(g, n, label))
        self.check(f"run {n + 1}{label}: runread read history shows the answer's text", lambda: self.history(g, want, n, label))

    def unknown_answer(self, g: dict[str, Any], n: int, label: str) -> str:
        out = self.out_file(f"cli{label}-run{n + 1}.txt")
        r = self.runread_read(g["keyFile"], "final-answer", "--out", str(out))
        ensure(r.returncode != 0, f"exit 0: an answer was served ({out.stat().st_size if out.exists() else 0} B)")
        ensure("unknown" in r.stderr, f"stderr does not say unknown: {tail(r.stderr, 400)}")
        ensure(not out.exists() or out.read_bytes() == b"", "--out holds bytes")
        return f"exit {r.returncode}: {tail(r.stderr, 200).strip()}"

    def history(self, g: dict[str, Any], want: bytes, n: int, label: str) -> str:
        out = self.out_file(f"history{label}-run{n + 1}.json")
        r = self.runread_read(g["keyFile"], "history", "--out", str(out))
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        events = json.loads(out.read_text(encoding="utf-8"))
        texts = [e.get("text") for e in events if e.get("role") == "assistant"]
        ensure(texts and texts[-1] == want.decode(), f"the last assistant event {texts[-1:]!r} is not {want.decode()!r}")
        return f"{len(events)} events {[e.get('role') for e in events]}; the last assistant event = {self.oracle}"

    def watch(self) -> str:
        """`runread watch` running; the agent makes another run; it appears in `runread runs` while watching."""
        log = self.tmp / "watch.log"
        with open(log, "wb") as logf:
            self.watcher = subprocess.Popen([*self.runread_cmd(), "watch"], stdout=logf, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.runread_env(), cwd=self.runread_cwd(),
                                            start_new_session=True)
        time.sleep(2)
        ensure(self.watcher.poll() is None, f"runread watch exited {self.watcher.returncode}: {tail(log.read_bytes(), 400)}")
        before = len(self.json_of("runs", "--json"))
        self.before_play(self.tmp / "run2")
        played = self.play(self.watch_scenario, self.tmp / "run2")
        self.copy_in(self.tmp / "run2")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            runs = self.json_of("runs", "--json")
            if len(runs) == before + 1 and all(r.get("answerState") == self.answer_state for r in runs):
                break
            time.sleep(1)
        else:
            raise AssertionError(f"runs --json after 30 s: {tail(json.dumps(runs), 600)}")
        ensure(self.watcher.poll() is None, "runread watch exited")
        stop(self.watcher)
        self.watcher = None
        return f"{played}; run {before + 1} listed while watching"

    def moved_checks(self) -> None:
        var = self.env_var
        moved = self.tmp / f"{self.agent}-moved"
        old = self.user_home / self.dot_rel.split("/")[0]
        if self.moved_rel.startswith("."):  # the variable moves the agent's `~`: $VAR/.gemini/tmp
            moved.mkdir()
            os.rename(old, moved / old.name)
        else:  # the variable names the agent's directory itself: $VAR/session-state
            os.rename(old, moved)
        self.moved = moved
        n = len(self.answers)
        self.check(f"{var}: runread ingest (no flag) finds ${var}/{self.moved_rel}", lambda: self.ingest(n))
        self.check(f"{var}: runread runs --json", lambda: self.runs_json(n))
        self.read_checks(n - 1, label=f"-{var}")

    def run(self) -> None:
        self.must(f"{self.title} via the harness", self.install_agent, "agent install failed")
        self.user_home.mkdir()
        self.must(f"live: {self.scenario.name} played by the real {self.title}",
                  lambda: self.play(self.scenario, self.tmp / "run"), "the live run failed")
        self.must(f"~/{self.dot_rel} in a fresh HOME", lambda: self.copy_in(self.tmp / "run"), "no home")
        self.must("runread ingest (no flags) finds it", lambda: self.ingest(1), "ingest failed")
        self.must("runread runs / runs --json", lambda: self.runs_json(1), "runs failed")
        self.must("runread serve", self.serve, "serve failed")
        self.read_checks(0)
        self.must("runread watch picks up a new run", self.watch, "watch failed")
        self.must("runread runs --json after watching", lambda: self.runs_json(2), "runs failed")
        self.read_checks(1)
        self.moved_checks()
        self.check("runread serve still running", self.alive)


class GeminiHome(PassiveHome):
    agent, title = "gemini", "Gemini CLI"
    script, mock, version_attr, version = "gemini-scenario.py", "mockgemini.py", "GEMINI_CLI_VERSION", GEMINI_CLI_VERSION
    scenario = SCENARIOS / "gemini" / "tool-then-answer.json"
    watch_scenario = SCENARIOS / "gemini-home-watch.json"
    dot_rel, env_var, moved_rel, harness_sessions = ".gemini/tmp", "GEMINI_CLI_HOME", ".gemini/tmp", ""
    # Gemini CLI records no stop reason: a passive run's status and answer are unknown, its answer never served
    answer_state = status = "unknown"

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_gemini())

    def copy_in(self, out: Path) -> str:
        """Each harness run has a HOME of its own, where its workspace (named `workspace`) gets the slug
        `workspace`; in one user's HOME Gemini CLI gives a second project of that name another slug
        (`projects.json`), so the second run's slug directory is copied under `workspace-1`, and
        `~/.gemini/projects.json` holds both."""
        ws = json.loads((out / "manifest.json").read_text())["workspace"]
        self.ok("workspace", "add", ws)
        tmp = self.sessions()
        tmp.mkdir(parents=True, exist_ok=True)
        registry = tmp.parent / "projects.json"
        projects = json.loads(registry.read_text())["projects"] if registry.exists() else {}
        copied = 0
        for src in sorted((out / "sessions").iterdir()):
            slug, k = src.name, 0
            while (tmp / slug).exists():
                k += 1
                slug = f"{src.name}-{k}"
            shutil.copytree(src, tmp / slug, symlinks=True)
            projects[ws] = slug
            copied += len([p for p in src.rglob("*") if p.is_file()])
        registry.write_text(json.dumps({"projects": projects}, indent=2))
        newest = max(p.stat().st_mtime for p in tmp.rglob("*") if p.is_file())
        wait = newest + SETTLE_S + 0.3 - time.time()
        if wait > 0:
            time.sleep(wait)
        return f"`runread workspace add OUTDIR/workspace`; {copied} file(s) into {tmp} (slugs {sorted(projects.values())})"


class CopilotHome(PassiveHome):
    agent, title = "copilot", "Copilot CLI"
    script, mock, version_attr, version = "copilot-scenario.py", "mockllm.py", "COPILOT_VERSION", COPILOT_VERSION
    scenario = SCENARIOS / "copilot" / "tool-then-answer.json"
    watch_scenario = SCENARIOS / "copilot-home-watch.json"
    dot_rel, env_var, moved_rel, harness_sessions = ".copilot/session-state", "COPILOT_HOME", "session-state", "session-state"

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_copilot()[0])


# What reads final answers while a run writes them (the live OpenCode stage): the Python SDK client of
# tests/clients/read_final_answer.py (its `connect`: the key header, the negotiated version), calling
# read_final_answer on one target every 0.2 s, each answer followed cursor by cursor to its end, one JSON line
# per read ({"state", "readable", "evidence", "hasText" (a non-empty text in the first chunk), "text" (the whole
# answer) when readable, ...} or {"error"}); after STOP exists, one
# last read. Argv: URL KEY_FILE TARGET_JSON STOP.
POLLER = r"""
import argparse, asyncio, json, os, sys, time
sys.path.insert(0, os.environ["RUNREAD_TEST_CLIENTS"])
import read_final_answer as rfa

url, key_file, target, stop = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]

async def main():
    opts = argparse.Namespace(url=url, key_file=key_file, mode="auto", timeout=30.0)
    async with rfa.connect(opts, "runread-live-poll") as client:
        while True:
            last = os.path.exists(stop)
            rec = {"t": time.time()}
            args = {"target": target}
            parts = []
            while True:
                res = await client.call_tool("read_final_answer", args)
                if res.is_error:
                    rec["error"] = " ".join(getattr(c, "text", "") for c in res.content)[:500]
                    break
                sc = res.structured_content or {}
                if not parts:
                    rec.update({k: sc.get(k) for k in ("state", "readable", "evidence", "sha256", "totalBytes")})
                    rec["hasText"] = sc.get("text") not in (None, "")
                if sc.get("readable") is not True:
                    break
                parts.append(sc.get("text") or "")
                if sc.get("eof") is True or not sc.get("nextCursor"):
                    rec["eof"] = sc.get("eof")
                    rec["text"] = "".join(parts)
                    break
                args = {"target": target, "cursor": sc["nextCursor"]}
            print(json.dumps(rec, ensure_ascii=False), flush=True)
            if last:
                return
            await asyncio.sleep(0.2)

asyncio.run(main())
"""
# read_final_answer's states while a run has no answer yet (or none to give): never with text
NOT_YET = ("missing", "saving", "unknown")


class OpenCodeHome(PassiveHome):
    """OpenCode 1.18.33: every session in one SQLite database (WAL mode), ``~/.local/share/opencode/opencode.db``
    (``$XDG_DATA_HOME/opencode`` when set, which also moves runread's own home to ``$XDG_DATA_HOME/runread``);
    runread names a session ``<database>#<session id>``. The first run's database is copied in with its ``-wal``
    (never the ``.db`` alone, never the ``-shm``); later runs write straight into the user's database (the
    harness's OpenCode data directory a symlink to it), while ``runread watch`` / ``serve --watch`` watch it;
    the last one is read over MCP while it runs."""

    agent, title = "opencode", "OpenCode"
    script, mock, version_attr, version = "opencode-scenario.py", "mockllm.py", "OPENCODE_VERSION", OPENCODE_VERSION
    scenario = SCENARIOS / "opencode" / "tool-then-answer.json"
    watch_scenario = SCENARIOS / "opencode-home-watch.json"
    live_scenario = SCENARIOS / "opencode-home-live.json"
    dot_rel, env_var, moved_rel, harness_sessions = ".local/share/opencode", "XDG_DATA_HOME", "opencode", ""
    DB = "opencode.db"

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_opencode()[0])

    def data_home(self) -> Path:
        """The XDG data directory: OpenCode's folder and runread's home are both in it."""
        return self.moved if self.moved else self.user_home / ".local" / "share"

    def db(self) -> Path:
        return self.sessions() / self.DB

    def before_play(self, out: Path) -> None:
        """The harness's HOME gets the user's OpenCode data directory: the real OpenCode writes the run into the
        very database runread watches."""
        data = out / "home" / ".local" / "share"
        data.mkdir(parents=True)
        (data / "opencode").symlink_to(self.sessions())
        (out / "workspace").mkdir(parents=True, exist_ok=True)
        self.ok("workspace", "add", str(out / "workspace"))

    def copy_in(self, out: Path) -> str:
        self.ok("workspace", "add", str(Path(json.loads((out / "manifest.json").read_text())["workspace"])))
        src, dst = out / "home" / ".local" / "share" / "opencode", self.sessions()
        if src.resolve() == dst.resolve():  # the run wrote into the user's database itself
            files = [p for p in dst.iterdir() if p.name.startswith(self.DB)]
            return f"the run wrote into {self.db()} itself ({', '.join(sorted(p.name for p in files))})"
        dst.mkdir(parents=True, exist_ok=True)
        ensure((src / self.DB).is_file(), f"no {src / self.DB}")
        names = [n for n in (self.DB, f"{self.DB}-wal") if (src / n).is_file()]
        for n in names:  # the database and its log together (bytes and mtimes); the -shm index is OpenCode's own
            shutil.copy2(src / n, dst / n)
        ensure(not (dst / f"{self.DB}-shm").exists(), "an -shm in the user's folder")
        for n in names:
            ensure(sha((src / n).read_bytes()) == sha((dst / n).read_bytes()), f"{n} differs after the copy")
        newest = max((dst / n).stat().st_mtime for n in names)
        wait = newest + SETTLE_S + 0.3 - time.time()
        if wait > 0:
            time.sleep(wait)
        sizes = ", ".join(f"{n} {(dst / n).stat().st_size} B" for n in names)
        return f"`runread workspace add OUTDIR/workspace`; {sizes} into {dst} (not the -shm)"

    def ingest(self, want: int) -> str:
        out = self.ok("ingest")
        # the session read is named by its database: `<db path>#ses_…`
        ensure(re.search(re.escape(str(self.db())) + r"#ses_[0-9A-Za-z]+", out),
               f"output does not name {self.db()}#ses_…: {tail(out, 600)}")
        ensure(re.search(rf"\b{want} runs?\b", out), f"output does not say {want} runs: {tail(out, 600)}")
        home = self.data_home() / "runread"
        ensure(home.is_dir(), f"no runread home in {home}")
        if self.moved is not None:
            old = self.user_home / self.dot_rel
            ensure(str(old) not in out, f"output names {old}, which is gone: {tail(out, 600)}")
        shown = out.replace(str(self.moved), f"${self.env_var}") if self.moved else out
        return " / ".join(tail(shown.replace(str(self.user_home), "$HOME"), 300).splitlines())

    def runs_json(self, want: int) -> str:
        done = super().runs_json(want)
        # the target names OpenCode's own ids: its session `ses_…`, the run its prompt message `msg_…`
        for r in self.runs:
            t = r["target"]
            ensure(re.fullmatch(r"ses_[0-9A-Za-z]+", t["sessionId"]) and re.fullmatch(r"msg_[0-9A-Za-z]+", t["runId"]),
                   f"target {t}: want OpenCode's session id ses_… and message id msg_…")
        return done + "; sessions ses_…, runs msg_…"

    def moved_checks(self) -> None:
        """XDG_DATA_HOME names another directory: the user's whole data directory (runread's home and OpenCode's
        folder) moved there; runread serve restarted with it (the old one's home is gone)."""
        var = self.env_var
        moved = self.tmp / "xdg-data"
        stop(self.server)
        self.server = None
        os.rename(self.user_home / ".local" / "share", moved)
        self.moved = moved
        n = len(self.answers)
        self.must(f"{var}: runread serve with ${var}/runread", self.serve, "serve failed")
        self.check(f"{var}: runread ingest (no flag) finds ${var}/{self.moved_rel}/{self.DB}", lambda: self.ingest(n))
        self.check(f"{var}: runread runs --json", lambda: self.runs_json(n))
        self.read_checks(n - 1, label=f"-{var}")

    # ----------------------------------------------------------------- a read while OpenCode writes

    def live_read(self) -> str:
        """`runread serve --watch` on the user's data directory; the real OpenCode plays a run that takes seconds
        (a `sleep 3` tool call, then a held, many-piece answer) into that database; as soon as `runread runs`
        lists it, it is granted to a reader, whose MCP client (the Python SDK) reads its final answer every 0.2 s
        while it runs and after. Every answer read is either none (missing / saving / unknown, no text) or exactly
        the scripted text, never a part of it; the last one is available, exact, evidence session_file."""
        stop(self.server)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        with open(self.tmp / "serve-watch.log", "wb") as logf:
            self.server = subprocess.Popen([*self.runread_cmd(), "serve", "--watch", "--listen", f"127.0.0.1:{port}"],
                                           stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=self.runread_env(), cwd=self.runread_cwd(), start_new_session=True)
        self.server_log = self.tmp / "serve-watch.log"
        wait_for_port(port, self.server, self.server_log)
        responses = json.loads(self.live_scenario.read_text(encoding="utf-8"))["responses"]
        want = [r["text"] for r in responses if not r.get("tool_calls")][0]
        out = self.tmp / "run3"
        before = {r["target"]["runId"] for r in self.json_of("runs", "--json")}
        self.before_play(out)
        self.scenario = self.live_scenario
        self.steps = json.loads(self.live_scenario.read_text(encoding="utf-8"))["steps"]
        result: dict[str, Any] = {}

        def harness() -> None:
            try:
                result["manifest"] = self.run_harness(out, self.tmp / "run3.harness.out")
            except BaseException as e:  # noqa: BLE001 - reported below
                result["error"] = e
        t0 = time.monotonic()
        th = threading.Thread(target=harness, daemon=True)
        th.start()
        new: list[dict[str, Any]] = []
        listed: list[str] = []  # answerState as runs --json showed the run
        deadline = time.monotonic() + 60
        while not new and time.monotonic() < deadline and th.is_alive():
            new = [r for r in self.json_of("runs", "--json") if r["target"]["runId"] not in before]
            if not new:
                time.sleep(0.2)
        ensure(len(new) == 1, f"the run never appeared in runs --json while OpenCode ran ({len(new)} new runs; "
                              f"harness {'running' if th.is_alive() else 'done: ' + str(result.get('error'))})")
        listed.append(new[0].get("answerState"))
        target, seen_at = new[0]["target"], time.monotonic() - t0
        g = self.json_of("grant", "--run", target["runId"], "--features", "final_answer", "--expires", "15m",
                         "--to", "test-opencode-live", "--json")
        ensure(g.get("target") == target and KEY_RE.fullmatch(g.get("key", "")), f"grant --json: {g.get('target')}")
        key = write_key(self.sh.tmp / "keys" / "opencode-live.txt", g["key"])
        stop_file, lines = self.tmp / "live-poll.stop", self.tmp / "live-poll.jsonl"
        env = self.read_env()
        env["RUNREAD_TEST_CLIENTS"] = str(HERE.parent / "clients")
        with open(lines, "wb") as pout, open(self.tmp / "live-poll.err", "wb") as perr:
            poller = subprocess.Popen([str(self.sh.py), "-c", POLLER, self.url, str(key), json.dumps(target), str(stop_file)],
                                      stdout=pout, stderr=perr, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        try:
            th.join(HARNESS_TIMEOUT_S + 10)
            ensure("manifest" in result, f"the live run: {result.get('error')!r}")
            running_reads = len(jsonl(lines)) if lines.exists() else 0
            manifest = result["manifest"][0]
            ensure(manifest["steps"][0]["exit_code"] == 0, f"the live run exited {manifest['steps'][0]['exit_code']}")
            # settle: runread's window after OpenCode's last write, then the answer must be available
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                r = [x for x in self.json_of("runs", "--json") if x["target"] == target]
                listed.append(r[0].get("answerState") if r else None)
                if r and r[0].get("answerState") == "available":
                    break
                time.sleep(0.5)
            time.sleep(1)
            stop_file.touch()
            poller.wait(timeout=60)
        finally:
            stop(poller)
        ensure(poller.returncode == 0, f"the poller exited {poller.returncode}: {tail((self.tmp / 'live-poll.err').read_bytes(), 800)}")
        reads = jsonl(lines)
        ensure(reads, "no read recorded")
        torn = []
        for k, rd in enumerate(reads):
            ensure("error" not in rd, f"read {k + 1}: a tool error: {rd.get('error')}")
            if rd.get("readable") is True:
                if rd.get("text") != want or rd.get("sha256") != sha(want.encode()) or rd.get("eof") is not True:
                    torn.append((k + 1, rd.get("state"), len((rd.get("text") or "").encode())))
            else:
                ensure(rd.get("state") in NOT_YET and not rd.get("hasText"),
                       f"read {k + 1}: state {rd.get('state')!r}, text {rd.get('hasText')} (not readable)")
        ensure(not torn, f"reads that were not the final text (read, state, bytes): {torn[:5]} (want {len(want.encode())} B)")
        last = reads[-1]
        ensure(last.get("state") == "available" and last.get("text") == want and last.get("evidence") == "session_file",
               f"the last read: state {last.get('state')!r}, evidence {last.get('evidence')!r}, "
               f"{len((last.get('text') or '').encode())} B")
        states = [rd.get("state") for rd in reads]
        moves = [s for k, s in enumerate(states) if k == 0 or s != states[k - 1]]
        ensure(states[0] != "available", f"the first read was already {states[0]!r}: nothing was read while it ran")
        listed_moves = [s for k, s in enumerate(listed) if k == 0 or s != listed[k - 1]]
        return (f"listed after {seen_at:.1f}s ({listed_moves[0]}), granted; {len(reads)} reads ({running_reads} while "
                f"OpenCode ran): states {' → '.join(map(str, moves))}; runs --json {' → '.join(map(str, listed_moves))}; "
                f"{sum(1 for rd in reads if rd.get('readable'))} available reads, each exactly the {len(want.encode())} B "
                f"answer; never a part of it; evidence {last.get('evidence')}")

    def run(self) -> None:
        super().run()
        self.must("a read while OpenCode writes: serve --watch, the reader sees the run move and settle, never a torn "
                  "answer", self.live_read, "the live read failed")
        self.check("runread serve --watch still running", self.alive)


AGENTS = {"claude": ClaudeHome, "codex": CodexHome, "gemini": GeminiHome, "copilot": CopilotHome,
          "opencode": OpenCodeHome}


def main(argv: list[str] | None = None) -> int:
    opts = options(argv, __doc__, AGENTS, "harness OUTDIRs, user HOMEs, serve logs")

    def start(tmp: Path, res: Results):
        shared = Shared(opts, tmp, res)
        shared.tools()
        return lambda cls: cls(shared)

    return run_parts(opts, "homes", AGENTS, start)


if __name__ == "__main__":
    sys.exit(main())
