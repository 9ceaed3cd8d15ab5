#!/usr/bin/env python3
"""Kept runs (issue 56) with the real Claude Code: kept as it settles, read after its file is gone, dropped to nothing.

    python3 tests/agents/keeps.py --runread target/debug/runread

One part, Claude Code 2.1.328 through the harness (``tests/agents/harness``, the repository's copy of
../shared/harness; its scripted model on loopback), scenario ``scenarios/claude-keeps.json``: a prompt, a
``Bash`` tool call, a 4,118-byte multi-line non-ASCII answer (forty lines, each with a token of its own,
worded so that no 8-byte piece of it is in a fresh home's database: its schema's SQL and comments;
checked first).
runread runs with a throwaway home (``--home``), an empty ``HOME`` and ``CLAUDE_CONFIG_DIR`` naming the
harness's own Claude Code config directory (``OUTDIR/claude``): runread reads the session file where the
real Claude Code wrote it, and the test deletes it there, as Claude Code's cleanup (``cleanupPeriodDays``)
does.

1. **Kept as it settles.** ``runread workspace add OUTDIR/workspace --name keeps-56`` and
   ``runread keep --workspace keeps-56`` *before* any session exists (``keep list --json``: valid JSON,
   no run); then Claude Code plays the scenario (the oracle: its stream-json ``result``, which must be
   the scripted text), the file is left to settle (2 s), ``runread ingest``: it says a keep rule kept
   one run, ``keep list --json`` names the run id, ``runread show RUN --json`` says ``sessionFile``
   ``there``, ``kept: true``, the prompt and ``answerText`` exactly the oracle.
2. **Read before.** A grant to reader ``keeps-before`` (``final_answer,history``), ``runread serve``,
   the Python ``mcp`` SDK (the cache of tests/clients/outside_clients.py) reads the answer cursor by
   cursor (``limit`` 1500: several chunks) and the whole history: ``evidence: session_file``, the
   answer byte for byte. The grant is revoked (its share's snapshot destroyed: no ``snapshots`` row).
3. **The file gone.** The session file (and its ``<session id>/`` directory) deleted; ``runread
   ingest`` again; ``runread show --json`` says ``gone_kept``, ``kept: true``, the same prompt and
   the same answer byte for byte; ``runs --json`` says ``gone_kept``. A reader granted now
   (``keeps-after``, the file gone: the share is made from the kept copy) reads over MCP with the SDK:
   every chunk ``evidence: kept``, the chunks make the oracle byte for byte (sha256 equal, the
   server's sha256 too); ``read_history`` ``evidence: kept``, its events the same as before.
   The database files hold the kept row (``kept_runs``, one, its ``data_key`` set): its sealed bytes
   and wrapped key are found in them (the search works), no 8-byte piece of the answer is (sealed,
   never in clear).
4. **Dropped.** ``keeps-after``'s grant revoked (a share's own snapshot lives while its grant does),
   ``runread keep drop RUN``, then ``runread keep drop --workspace keeps-56`` (the rule); then no
   ``kept_runs`` row (none with a ``data_key``), no ``snapshots`` row, and every file of the home
   (``runread.db``, ``-wal``, ``-shm``, ``gate-keys``) searched for every 8-byte piece of the answer, of
   the kept row's sealed bytes and of its wrapped data key finds none; ``keep list --json`` no longer
   names the run; ``runread show --json`` says ``gone_not_kept``, ``kept: false``, no answer text.

The agent comes from the harness's cache ($RUNREAD_HARNESS_CACHE, default ~/.cache/runread-harness), the
Python SDK from the outside clients' ($RUNREAD_CLIENTS_CACHE, default ~/.cache/runread-clients); both are
installed on first use. Stdlib only (the SDK runs in its venv).

Prints one PASS/FAIL line per check and ends with ``keeps: N passed, M failed``; exits 1 if any check
failed. ``--keep`` keeps the temp dir (the harness OUTDIR, runread's home, the serve log); it is also
kept on failure.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The harness in a process group, runread with a clean environment, serve on a free port, main; it also
# puts tests/clients on sys.path.
from live import SCENARIOS, LivePart, clean_env, jsonl, options, run_parts, sha, write_key  # noqa: E402
from outside_clients import (  # noqa: E402
    KEY_RE, MODERN, Fatal, Results, cache_lock, ensure, ensure_venv, labeled, tail,
)
from readers import ANSI, CLAUDE_VERSION  # noqa: E402

WORKSPACE = "keeps-56"  # the workspace's name, as `keep --workspace` gives it
FEATURES = "final_answer,history"
SETTLE_S = 2.0  # runread's settle window
READ_LIMIT = 1500  # bytes per read_final_answer call: the 4,118-byte answer in several chunks
PIECE = 8  # the database files are searched for every piece of this many bytes
# Environment a user's shell would not have set for this test: runread's own (RUNREAD_*, by clean_env) and the
# agents' places (CLAUDE_CONFIG_DIR is set to the harness's, below).
STRIP_ENV = ("XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "GEMINI_CLI_HOME", "COPILOT_HOME")

# The Python SDK (mcp 2.x), in its venv: list the granted targets, read the final answer cursor by cursor and
# the history page by page; every page's structuredContent and the text blocks, as JSON on stdout.
SDK_READ = r'''
import asyncio, json, sys
import httpx2
from mcp import Client, Implementation
from mcp.client.streamable_http import streamable_http_client

async def main():
    url, key_file, target, limit = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    key = open(key_file).read().strip()
    http = httpx2.AsyncClient(headers={"x-runread-key": key})
    out = {"answer": [], "history": []}
    async with http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        async with Client(transport, mode="auto",
                          client_info=Implementation(name="runread-keeps-test", version="1")) as client:
            out["protocolVersion"] = client.protocol_version
            r = await client.call_tool("list_granted_targets", {})
            out["targets"] = (r.structured_content or {}).get("targets")
            args = {"target": target, "limit": limit}
            for _ in range(200):
                r = await client.call_tool("read_final_answer", args)
                sc = r.structured_content or {}
                out["answer"].append({"isError": r.is_error, "sc": sc,
                                      "texts": [getattr(b, "text", None) for b in r.content]})
                if r.is_error or sc.get("eof") is not False or not sc.get("nextCursor"):
                    break
                args = {"target": target, "limit": limit, "cursor": sc["nextCursor"]}
            args = {"target": target}
            for _ in range(200):
                r = await client.call_tool("read_history", args)
                sc = r.structured_content or {}
                out["history"].append({"isError": r.is_error, "sc": sc})
                if r.is_error or sc.get("eof") is not False or not sc.get("nextCursor"):
                    break
                args = {"target": target, "cursor": sc["nextCursor"]}
    print(json.dumps(out))

asyncio.run(main())
'''


def strings(value: Any) -> list[str]:
    """Every string anywhere in a JSON value (keys and values)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def pieces_in(files: list[Path], needles: dict[str, bytes], n: int = PIECE) -> dict[str, list[str]]:
    """For each needle, where any of its n-byte pieces (at every offset) occurs in the files: `file@offset`s."""
    windows: dict[bytes, str] = {}
    for name, data in needles.items():
        for i in range(len(data) - n + 1):
            windows.setdefault(data[i:i + n], name)
    found: dict[str, list[str]] = {name: [] for name in needles}
    for f in files:
        data = f.read_bytes()
        for i in range(len(data) - n + 1):
            name = windows.get(data[i:i + n])
            if name is not None and len(found[name]) < 5:
                found[name].append(f"{f.name}@{i}")
    return found


class KeepsClaude(LivePart):
    agent, title, oracle = "claude", "Claude Code", "Claude Code's result"
    script, mock, version_attr, version = "claude-scenario.py", "mockanthropic.py", "CLAUDE_CODE_VERSION", CLAUDE_VERSION
    scenario = SCENARIOS / "claude-keeps.json"
    strip_env = STRIP_ENV

    def __init__(self, opts: Any, root: Path, res: Results) -> None:
        super().__init__(opts, root, res)
        self.outdir = self.tmp / "run"
        self.workspace = self.outdir / "workspace"
        self.config = self.outdir / "claude"  # the harness's CLAUDE_CONFIG_DIR: where Claude Code writes its sessions
        self.home = self.tmp / "runread-home"
        self.user_home = self.tmp / "user"  # an empty HOME: runread finds no other agent's sessions
        self.py = Path()
        self.answer = b""
        self.prompt = ""
        self.session_id = self.run_id = ""
        self.session_file = Path()
        self.history_before: list[dict[str, Any]] = []
        self.kept_row: dict[str, bytes] = {}
        self.grants: dict[str, dict[str, Any]] = {}

    def install(self, mod: Any) -> Path:
        return Path(mod.ensure_claude())

    # ----------------------------------------------------------------- runread with a home of its own

    def runread_cmd(self) -> list[str]:
        return [str(self.opts.runread), "--home", str(self.home)]

    def runread_env(self) -> dict[str, str]:
        return clean_env(self.strip_env, HOME=str(self.user_home), CLAUDE_CONFIG_DIR=str(self.config))

    def show(self) -> dict[str, Any]:
        return self.json_of("show", self.run_id[:8], "--json")

    def keep_list(self) -> Any:
        r = self.runread("keep", "list", "--json")
        ensure(r.returncode == 0, f"`keep list --json` exited {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        try:
            return json.loads(r.stdout)
        except ValueError:
            raise AssertionError(f"`keep list --json` is not JSON: {tail(r.stdout, 400)}") from None

    def db(self, sql: str) -> list[tuple[Any, ...]]:
        """A query on the home's SQLite store, read-only, the connection closed at once."""
        con = sqlite3.connect(f"file:{self.home / 'runread.db'}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    def home_files(self) -> list[Path]:
        return sorted(p for p in self.home.rglob("*") if p.is_file())

    # ----------------------------------------------------------------- 1. kept as it settles

    def rule_first(self) -> str:
        self.workspace.mkdir(parents=True)
        (self.config / "projects").mkdir(parents=True)
        self.user_home.mkdir()
        added = self.ok("workspace", "add", str(self.workspace), "--name", WORKSPACE)
        # the search below means something only if a home without the run holds none of the answer's pieces
        scripted = json.loads(self.scenario.read_text(encoding="utf-8"))["responses"][-1]["text"].encode("utf-8")
        found = pieces_in(self.home_files(), {"answer": scripted})["answer"]
        ensure(not found, f"a fresh home already holds pieces of the scripted answer (reword it): {found}")
        return f"{tail(added, 200)}; no {PIECE}-byte piece of the scripted answer in the fresh home's files"

    def keep_rule(self) -> str:
        out = self.ok("keep", "--workspace", WORKSPACE)
        listed = self.keep_list()
        return f"{tail(out, 200)}; keep list --json: valid JSON, {len(json.dumps(listed))} B"

    def live(self) -> str:
        self.steps = json.loads(self.scenario.read_text(encoding="utf-8"))["steps"]
        manifest, dt = self.run_harness(self.outdir, self.tmp / "harness.out")
        step = manifest["steps"][0]
        err = ANSI.sub("", (self.outdir / step["stderr"]).read_text(errors="replace"))
        ensure(step["exit_code"] == 0, f"exited {step['exit_code']}: {tail(err, 800)}")
        results = [e for e in jsonl(self.outdir / step["events"]) if e.get("type") == "result"]
        ensure(len(results) == 1 and results[0].get("subtype") == "success" and isinstance(results[0].get("result"), str),
               f"result events {json.dumps(results)[:400]}")
        self.session_id = results[0]["session_id"]
        self.answer = results[0]["result"].encode("utf-8")
        scripted = json.loads(self.scenario.read_text(encoding="utf-8"))["responses"][-1]["text"]
        ensure(self.answer == scripted.encode("utf-8"), f"{self.oracle} ({len(self.answer)} B) is not the scripted text")
        files = sorted((self.config / "projects").glob("*/*.jsonl"))
        ensure(len(files) == 1 and files[0].stem == self.session_id, f"session files {files}")
        self.session_file = files[0]
        prompts = [e for e in jsonl(files[0]) if e.get("type") == "user" and "turnPosition" in e and not e.get("isMeta")
                   and isinstance((e.get("message") or {}).get("content"), str)]
        ensure(len(prompts) == 1, f"{len(prompts)} prompt lines")
        self.run_id, self.prompt = prompts[0]["uuid"], prompts[0]["message"]["content"]
        ensure(self.prompt == self.steps[0]["prompt"], f"prompt line {self.prompt!r}")
        return (f"{manifest['cli_version']} in {dt:.1f}s; {files[0].relative_to(self.config)}; run {self.run_id}; "
                f"{len(self.answer)} B answer, sha256 {sha(self.answer)[:12]}… = the scripted text")

    def ingest(self) -> str:
        newest = max(p.stat().st_mtime for p in (self.config / "projects").rglob("*") if p.is_file())
        wait = newest + SETTLE_S + 0.3 - time.time()
        if wait > 0:
            time.sleep(wait)
        out = self.ok("ingest")
        ensure(re.search(r"\b1 run\(s\) kept by a keep rule", out), f"ingest does not say a keep rule kept 1 run: {tail(out, 600)}")
        return " / ".join(tail(out.replace(str(self.tmp), "$TMP"), 400).splitlines())

    def listed(self) -> str:
        listed = self.keep_list()
        ensure(self.run_id in strings(listed), f"keep list --json does not name {self.run_id}: {tail(json.dumps(listed), 600)}")
        return f"names {self.run_id}"

    def shown_before(self) -> str:
        s = self.show()
        ensure(s.get("sessionFile") == "there", f"sessionFile {s.get('sessionFile')!r}")
        ensure(s.get("kept") is True, f"kept {s.get('kept')!r}")
        ensure(s.get("prompt") == self.prompt, f"prompt {s.get('prompt')!r}")
        ensure(isinstance(s.get("answerText"), str) and s["answerText"].encode() == self.answer,
               self.differs("answerText", (s.get("answerText") or "").encode(), self.answer))
        return f"sessionFile there, kept true, prompt and answer ({len(self.answer)} B) = {self.oracle}"

    # ----------------------------------------------------------------- 2. and 3. the readers

    def grant(self, reader: str) -> str:
        g = self.json_of("grant", "--run", self.run_id[:8], "--features", FEATURES, "--expires", "15m",
                         "--to", reader, "--json")
        ensure(KEY_RE.fullmatch(g.get("key", "")) and g.get("grantId"), f"grant --json: grantId {g.get('grantId')!r}")
        ensure(g["target"].get("runId") == self.run_id, f"granted target {g['target']}")
        g["keyFile"] = write_key(self.tmp / "keys" / f"{reader}.txt", g["key"])
        self.grants[reader] = g
        return f"{g['grantId']} to {reader}, target run {g['target']['runId']}"

    def sdk(self, reader: str) -> dict[str, Any]:
        g = self.grants[reader]
        cmd = [str(self.py), "-c", SDK_READ, self.url, str(g["keyFile"]), json.dumps(g["target"]), str(READ_LIMIT)]
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           env=self.read_env(), timeout=120)
        ensure(r.returncode == 0, f"the SDK exited {r.returncode}: {tail(r.stderr or r.stdout, 800)}")
        out = json.loads(r.stdout.strip().splitlines()[-1])
        (self.tmp / f"sdk-{reader}.json").write_text(json.dumps(out, ensure_ascii=False, indent=1))
        ensure(out.get("protocolVersion") == MODERN, f"protocolVersion {out.get('protocolVersion')!r}")
        listed = [t.get("target") for t in out.get("targets") or []]
        ensure(listed == [g["target"]], f"list_granted_targets: {listed}")
        return out

    def final_answer(self, out: dict[str, Any], evidence: str) -> str:
        parts: list[bytes] = []
        for n, page in enumerate(out["answer"]):
            sc = page["sc"]
            ensure(page["isError"] is False, f"call {n}: isError: {tail(json.dumps(page), 400)}")
            labeled("read_final_answer", sc)
            ensure(sc.get("state") == "available" and sc.get("readable") is True and isinstance(sc.get("text"), str),
                   f"call {n}: state {sc.get('state')!r}, readable {sc.get('readable')!r}")
            ensure(sc.get("evidence") == evidence, f"call {n}: evidence {sc.get('evidence')!r}, want {evidence!r}")
            ensure(sc.get("byteOffset") == sum(map(len, parts)), f"call {n}: byteOffset {sc.get('byteOffset')}")
            ensure(sc.get("sha256") == sha(self.answer), f"call {n}: the server's sha256 {sc.get('sha256')} != {sha(self.answer)}")
            parts.append(sc["text"].encode("utf-8"))
        ensure(out["answer"] and out["answer"][-1]["sc"].get("eof") is True, "no eof")
        got = b"".join(parts)
        ensure(got == self.answer, self.differs("assembled", got, self.answer))
        return (f"{len(parts)} chunks, evidence {evidence}, {len(got)} B, sha256 {sha(got)[:12]}… = {self.oracle}")

    def history(self, out: dict[str, Any], evidence: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for n, page in enumerate(out["history"]):
            sc = page["sc"]
            ensure(page["isError"] is False, f"page {n}: isError: {tail(json.dumps(page), 400)}")
            labeled("read_history", sc)
            ensure(sc.get("evidence") == evidence, f"page {n}: evidence {sc.get('evidence')!r}, want {evidence!r}")
            ensure(sc.get("readable") is True and sc.get("gap") is False, f"page {n}: readable {sc.get('readable')!r}, "
                   f"gap {sc.get('gap')!r} {sc.get('gapReasons')}")
            events += sc.get("events") or []
        ensure(out["history"] and out["history"][-1]["sc"].get("eof") is True, "no eof")
        roles = [e.get("role") for e in events]
        ensure(roles == ["user", "assistant", "toolResult", "assistant"], f"roles {roles}")
        ensure(events[0].get("text") == self.prompt, f"the user event {events[0].get('text')!r}")
        ensure((events[-1].get("text") or "").encode() == self.answer, "the last assistant event is not the answer")
        return events

    def read_before(self) -> str:
        out = self.sdk("keeps-before")
        said = self.final_answer(out, "session_file")
        self.history_before = self.history(out, "session_file")
        return f"{said}; history {len(self.history_before)} events, evidence session_file"

    def revoke(self, reader: str) -> str:
        g = self.grants[reader]
        self.ok("grant", "revoke", g["grantId"])
        rows = self.db("SELECT count(*) FROM snapshots")[0][0]
        ensure(rows == 0, f"{rows} snapshots rows after revoking the run's only grant")
        return f"{g['grantId']} revoked; no snapshots row (the share's own copy destroyed)"

    def delete(self) -> str:
        sub = self.session_file.with_suffix("")
        self.session_file.unlink()
        if sub.is_dir():
            shutil.rmtree(sub)
        left = sorted(str(p.relative_to(self.config)) for p in (self.config / "projects").rglob("*") if p.is_file())
        ensure(not left, f"left in projects: {left}")
        out = self.ok("ingest")
        return f"{self.session_file.relative_to(self.config)} deleted; ingest again: {tail(out, 200)!r}"

    def shown_gone(self) -> str:
        s = self.show()
        ensure(s.get("sessionFile") == "gone_kept", f"sessionFile {s.get('sessionFile')!r}")
        ensure(s.get("kept") is True, f"kept {s.get('kept')!r}")
        ensure(s.get("prompt") == self.prompt, f"prompt {s.get('prompt')!r}")
        got = (s.get("answerText") or "").encode()
        ensure(got == self.answer, self.differs("answerText", got, self.answer))
        runs = self.json_of("runs", "--json")
        mine = [r for r in runs if r["target"]["runId"] == self.run_id]
        ensure(len(mine) == 1 and mine[0].get("sessionFile") == "gone_kept",
               f"runs --json: {tail(json.dumps(mine), 400)}")
        return f"sessionFile gone_kept (runs --json too), kept true, the prompt and {len(got)} B answer = {self.oracle}"

    def read_after(self) -> str:
        out = self.sdk("keeps-after")
        said = self.final_answer(out, "kept")
        events = self.history(out, "kept")
        ensure(events == self.history_before, f"history differs from before: {tail(json.dumps(events), 400)} vs "
               f"{tail(json.dumps(self.history_before), 400)}")
        return f"{said}; history {len(events)} events, evidence kept, the same as before"

    def sealed(self) -> str:
        rows = self.db("SELECT sealed, data_key FROM kept_runs")
        ensure(len(rows) == 1 and rows[0][0] and rows[0][1], f"kept_runs: {len(rows)} rows, "
               f"data_key {'set' if rows and rows[0][1] else 'NULL'}")
        self.kept_row = {"sealed bytes": bytes(rows[0][0]), "wrapped data key": bytes(rows[0][1])}
        found = pieces_in(self.home_files(), {**self.kept_row, "answer": self.answer})
        ensure(found["sealed bytes"] and found["wrapped data key"], f"the search misses the kept row: {found}")
        ensure(not found["answer"], f"pieces of the answer in clear: {found['answer']}")
        return (f"one kept_runs row ({len(self.kept_row['sealed bytes'])} B sealed, data_key set), found by the "
                f"search; no {PIECE}-byte piece of the answer in {[p.name for p in self.home_files()]}")

    # ----------------------------------------------------------------- 4. dropped

    def drop(self) -> str:
        run = self.ok("keep", "drop", self.run_id[:8])
        rule = self.ok("keep", "drop", "--workspace", WORKSPACE)
        return f"{tail(run, 150)!r}; {tail(rule, 150)!r}"

    def rows_gone(self) -> str:
        kept = self.db("SELECT count(*) FROM kept_runs")[0][0]
        keyed = self.db("SELECT count(*) FROM kept_runs WHERE data_key IS NOT NULL")[0][0]
        snaps = self.db("SELECT count(*) FROM snapshots")[0][0]
        ensure((kept, keyed, snaps) == (0, 0, 0), f"kept_runs {kept} (with a data_key {keyed}), snapshots {snaps}")
        return "kept_runs 0 (0 with a data_key), snapshots 0"

    def nothing_left(self) -> str:
        files = self.home_files()
        found = pieces_in(files, {**self.kept_row, "answer": self.answer})
        ensure(not any(found.values()), f"found: {found}")
        sizes = ", ".join(f"{p.name} {p.stat().st_size} B" for p in files)
        return f"no {PIECE}-byte piece of the answer, the sealed bytes or the wrapped key in {sizes}"

    def listed_no_more(self) -> str:
        listed = self.keep_list()
        ensure(self.run_id not in strings(listed), f"keep list --json still names {self.run_id}: {tail(json.dumps(listed), 400)}")
        return "the run is not listed"

    def shown_dropped(self) -> str:
        s = self.show()
        ensure(s.get("sessionFile") == "gone_not_kept", f"sessionFile {s.get('sessionFile')!r}")
        ensure(s.get("kept") is False, f"kept {s.get('kept')!r}")
        ensure(not s.get("answerText"), f"answerText still {len((s.get('answerText') or '').encode())} B")
        return "sessionFile gone_not_kept, kept false, no answer text"

    # ----------------------------------------------------------------- the part

    def tools(self) -> str:
        with cache_lock(self.opts.cache):
            self.py, desc = ensure_venv(self.opts.cache)
        return desc

    def run(self) -> None:
        self.must("tools: Claude Code", self.install_agent, "no Claude Code")
        self.must("tools: python venv (mcp SDK)", self.tools, "no Python SDK")
        self.must(f"runread workspace add OUTDIR/workspace --name {WORKSPACE}", self.rule_first, "no workspace")
        self.must(f"runread keep --workspace {WORKSPACE} before any session (keep list --json)", self.keep_rule,
                  "no keep rule")
        self.must("Claude Code: a live session through the harness", self.live, "no session")
        self.must("runread ingest: the rule keeps the run as it settles", self.ingest, "not ingested")
        self.check("runread keep list --json names the run", self.listed)
        self.must("runread show --json: the file there, kept, the answer", self.shown_before, "not shown")
        self.must("runread grant to keeps-before", lambda: self.grant("keeps-before"), "no grant")
        self.must("runread serve", self.serve, "no server")
        self.must("python sdk before the deletion: read_final_answer and read_history (evidence session_file)",
                  self.read_before, "nothing to compare with")
        self.must("runread grant revoke (keeps-before): its snapshot destroyed", lambda: self.revoke("keeps-before"),
                  "a share's snapshot would stand in for the kept copy")
        self.must("the session file deleted (as Claude Code's cleanup does), ingest again", self.delete, "not deleted")
        self.check("runread show --json: gone_kept, the same answer byte for byte", self.shown_gone)
        self.must("runread grant to keeps-after, the file gone", lambda: self.grant("keeps-after"), "no grant")
        self.check("python sdk after the deletion: read_final_answer and read_history (evidence kept), byte for byte",
                   self.read_after)
        self.must("the database: the kept row sealed, no piece of the answer in clear", self.sealed, "no kept row")
        self.must("runread grant revoke (keeps-after): its snapshot destroyed", lambda: self.revoke("keeps-after"),
                  "a share's snapshot would stay")
        self.must(f"runread keep drop RUN, runread keep drop --workspace {WORKSPACE}", self.drop, "not dropped")
        self.check("no kept_runs row, no data key, no snapshots row", self.rows_gone)
        self.check(f"the home's files searched for every {PIECE}-byte piece: nothing left", self.nothing_left)
        self.check("runread keep list --json: the run no longer listed", self.listed_no_more)
        self.check("runread show --json: gone_not_kept", self.shown_dropped)
        self.check("runread serve still running", self.alive)


AGENTS: dict[str, type[LivePart]] = {"claude": KeepsClaude}


def main(argv: list[str] | None = None) -> int:
    opts = options(argv, __doc__ or "", AGENTS, "the harness OUTDIR, runread's home, the serve log")
    return run_parts(opts, "keeps", AGENTS, lambda tmp, res: lambda cls: cls(opts, tmp, res))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Fatal as e:
        print(f"keeps: {e}", file=sys.stderr)
        sys.exit(1)
