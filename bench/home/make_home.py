#!/usr/bin/env python3
"""A large synthetic runread home made of real session files, for the `home` bench item: every
session file of the fixtures in fixtures/{pi,claude,codex} and the three large real sessions
(bench/{pi,claude,codex}/make_session.py), each copied many times; cached under the bench cache by
a hash of its inputs (this script, its parameters, every input file's bytes) and regenerated only
when missing (a stale home-* next to it is removed then).

    python3 bench/home/make_home.py --large-pi F --large-claude F --large-codex F [--cache DIR]
        -> prints JSON: {"root", "pi", "claude", "codex", "workspaces", "sessions", "bytes", ...}

Each copy is a distinct, valid session, laid out as its agent lays out its own:
- its session id (Pi: the header `id`; Claude Code: `sessionId`; Codex: `session_meta.payload.id`)
  is replaced, in every byte of the copy and in the file name, by a new id of the same shape (the
  old id's first 15 characters — the time part of a UUID v7, and the version — kept, the rest
  from a hash of the old id and the copy's number). The files of one fixture are copied together
  with one id map, so a fork's references to its parent (Claude Code's `requestSessionId`, Codex's
  `forked_from_id` and `history_base.thread_id`) point at the parent's copy;
- its `"cwd":"…"` fields point at one of WORKSPACES directories under the home's root (the bench
  registers them with `runread workspace add`); Codex's `history_base.end_byte_offset` is moved to
  where the parent copy's line now ends, as Codex would have written it there;
- Pi: `pi/--<cwd with / as ->--/<time>_<id>.jsonl`; Claude Code: `claude/<escaped cwd>/<id>.jsonl`
  (subagent transcripts are not copied: they are not sessions); Codex:
  `codex/YYYY/MM/DD/rollout-<time>-<id>.jsonl` (the original date folders);
- mtimes fixed in the past (deterministic, settled).
Nothing else in a line changes: no record is made up.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
WORKSPACES = ("alpha", "beta", "gamma", "delta")
LARGE_COPIES = 20          # of each agent's large session: 60 sessions, ~1.1 GB
MIN_SESSIONS = 2000        # fixture sets are copied until the home has at least this many
MTIME_BASE = 1795910400    # 2026-11-30T00:00:00Z; copy n gets MTIME_BASE + n seconds
AGENTS = ("pi", "claude", "codex")


class Unit:
    """Session files copied together (one fixture, or one large session) with one id map."""

    def __init__(self, agent: str, name: str, root: Path, files: list[Path]) -> None:
        self.agent, self.name, self.root, self.files = agent, name, root, files
        self.data = {f: f.read_bytes() for f in files}


def fixture_units(agent: str) -> list[Unit]:
    units = []
    for d in sorted((FIXTURES / agent).iterdir()):
        sessions = d / "sessions"
        if not sessions.is_dir():
            continue
        files = sorted(p for p in sessions.rglob("*.jsonl") if "subagents" not in p.parts)
        if agent == "codex":
            files = [p for p in files if p.name.startswith("rollout-")]
        if files:
            units.append(Unit(agent, f"{agent}/{d.name}", sessions, files))
    return units


def first_lines(data: bytes, n: int = 64) -> list[dict[str, Any]]:
    out = []
    for line in data.split(b"\n")[:n]:
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            out.append(v)
    return out


def session_id(agent: str, data: bytes) -> str:
    for v in first_lines(data):
        sid = {"pi": v.get("id") if v.get("type") == "session" else None,
               "claude": v.get("sessionId"),
               "codex": (v.get("payload") or {}).get("id") if v.get("type") == "session_meta" else None}[agent]
        if isinstance(sid, str) and sid:
            return sid
    raise SystemExit(f"no {agent} session id in the first lines")


def original_cwd(data: bytes) -> str:
    for v in first_lines(data):
        cwd = v.get("cwd")
        if cwd is None and isinstance(v.get("payload"), dict):
            cwd = v["payload"].get("cwd")
        if isinstance(cwd, str) and cwd:
            return cwd
    raise SystemExit("no cwd in the first lines")


def new_id(old: str, salt: str) -> str:
    h = hashlib.sha256(f"{old}/{salt}".encode()).hexdigest()
    if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", old):
        raise SystemExit(f"unexpected session id shape {old!r}")
    return f"{old[:15]}{h[0:3]}-{old[19]}{h[3:6]}-{h[6:18]}"


def cwd_field(path: str) -> bytes:
    return b'"cwd":' + json.dumps(path, ensure_ascii=False).encode()


def claude_dir(cwd: str) -> str:
    return re.sub(r"[/._]", "-", cwd)


def pi_dir(cwd: str) -> str:
    return "--" + re.sub(r"[/\\:]", "-", cwd.lstrip("/")) + "--"


def placed(unit: Unit, src: Path, data: bytes, ids: dict[str, str], out: Path, cwd: str) -> Path:
    name = src.name
    for old, new in ids.items():
        name = name.replace(old, new)
    if unit.agent == "pi":
        # Pi names a file `<header timestamp, : and . as ->_<session id>.jsonl`.
        header = first_lines(data, 1)[0]
        stamp = re.sub(r"[:.]", "-", header["timestamp"])
        return out / "pi" / pi_dir(cwd) / f"{stamp}_{header['id']}.jsonl"
    if unit.agent == "claude":
        return out / "claude" / claude_dir(cwd) / name
    rel = src.relative_to(unit.root) if src.is_relative_to(unit.root) else Path("2026/11/30") / src.name
    date = rel.parent if len(rel.parts) == 4 else Path("2026/11/30")
    return out / "codex" / date / name


def rebase_codex_fork(data: bytes, copies: dict[str, bytes]) -> bytes:
    """A Codex fork's `history_base.end_byte_offset`, moved to where its parent copy's line
    `end_ordinal_exclusive - 1` now ends."""
    head, nl, rest = data.partition(b"\n")
    meta = json.loads(head)
    base = (meta.get("payload") or {}).get("history_base")
    if not base:
        return data
    parent = copies.get(base["thread_id"])
    if parent is None:
        raise SystemExit(f"a fork's parent {base['thread_id']} is not in its unit")
    offset, new = 0, None
    for line in parent.split(b"\n")[:-1]:
        offset += len(line) + 1
        with_ord = re.match(rb'\{"timestamp":"[^"]*","ordinal":(\d+)', line)
        if with_ord and int(with_ord.group(1)) == base["end_ordinal_exclusive"] - 1:
            new = offset
    if new is None:
        raise SystemExit("the fork's base line is not in its parent")
    old = f'"end_byte_offset":{base["end_byte_offset"]}'.encode()
    if old not in head:
        raise SystemExit("no compact end_byte_offset in the fork's first line")
    return head.replace(old, f'"end_byte_offset":{new}'.encode(), 1) + nl + rest


def copy_unit(unit: Unit, k: int, out: Path, ws: Path, counter: list[int]) -> list[tuple[Path, str, int]]:
    salt = f"{unit.name}/{k}"
    old_ids = {session_id(unit.agent, unit.data[f]) for f in unit.files}
    ids = {old: new_id(old, salt) for old in old_ids}
    cwd = str(ws)
    by_id: dict[str, bytes] = {}
    written = []
    for src in unit.files:
        data = unit.data[src]
        old_cwd = original_cwd(data)
        for old, new in ids.items():
            data = data.replace(old.encode(), new.encode())
        if cwd_field(old_cwd) not in data:
            raise SystemExit(f"{src}: no compact cwd field")
        data = data.replace(cwd_field(old_cwd), cwd_field(cwd))
        by_id[session_id(unit.agent, data)] = data
        written.append((src, data))
    result = []
    for src, data in written:
        if unit.agent == "codex":
            data = rebase_codex_fork(data, by_id)
        dst = placed(unit, src, data, ids, out, cwd)
        if dst.exists():
            raise SystemExit(f"two copies would be {dst}")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
        counter[0] += 1
        t = MTIME_BASE + counter[0]
        os.utime(dst, (t, t))
        result.append((dst, session_id(unit.agent, data), len(data)))
    return result


def input_key(units: list[Unit]) -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps([WORKSPACES, LARGE_COPIES, MIN_SESSIONS, MTIME_BASE]).encode())
    for u in units:
        for f in u.files:
            h.update(f"{u.name}/{f.name}\0".encode())
            h.update(hashlib.sha256(u.data[f]).digest())
    return h.hexdigest()[:16]


def generate(units: list[Unit], large: list[Unit], out: Path) -> dict[str, Any]:
    wss = [out / "workspaces" / w for w in WORKSPACES]
    for w in wss:
        w.mkdir(parents=True)
    counter = [0]
    files: list[tuple[Path, str, int]] = []
    n = 0
    for u in large:
        for k in range(LARGE_COPIES):
            files += copy_unit(u, k, out, wss[n % len(wss)], counter)
            n += 1
    per_set = sum(len(u.files) for u in units)
    sets = math.ceil(max(0, MIN_SESSIONS - len(files)) / per_set)
    for k in range(sets):
        for u in units:
            files += copy_unit(u, k, out, wss[n % len(wss)], counter)
            n += 1
    ids = [sid for _, sid, _ in files]
    if len(set(ids)) != len(ids):
        raise SystemExit("two copies share a session id")
    per_agent = {a: sum(1 for p, _, _ in files if p.relative_to(out).parts[0] == a) for a in AGENTS}
    return {"root": str(out), "pi": str(out / "pi"), "claude": str(out / "claude"), "codex": str(out / "codex"),
            "workspaces": [str(w) for w in wss], "sessions": len(files), "sessions_per_agent": per_agent,
            "bytes": sum(b for _, _, b in files), "large_copies": LARGE_COPIES, "fixture_sets": sets,
            "fixture_sessions_per_set": per_set}


def main() -> int:
    ap = argparse.ArgumentParser()
    for a in AGENTS:
        ap.add_argument(f"--large-{a}", type=Path, required=True)
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("RUNREAD_BENCH_CACHE", Path.home() / ".cache" / "runread-bench")))
    opts = ap.parse_args()
    units = [u for a in AGENTS for u in fixture_units(a)]
    large = [Unit(a, f"{a}/large", getattr(opts, f"large_{a}").parent, [getattr(opts, f"large_{a}")]) for a in AGENTS]
    key = input_key(units + large)
    out = opts.cache / f"home-{key}"
    done = out / "home.json"
    if done.exists():
        print(done.read_text())
        return 0
    # Made in place (the copies' cwds name it); home.json, written last, marks it complete.
    for stale in opts.cache.glob("home-*"):
        shutil.rmtree(stale)
    info = generate(units, large, out)
    text = json.dumps(info, indent=1)
    done.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
