"""What the live agent tests homes.py and supervised.py share. Stdlib only; not a test of its own.

Both drive the real Claude Code and Codex CLIs through the harness (``tests/agents/harness``), one part
per agent, each part in its own temp directory with its own ``runread serve``. This module holds:

* ``LivePart``, the base of each script's part class: the harness's pinned agent installed through
  its module, the scenario played in a process group of the harness's own (killed, with every process
  below it where the agent leaves that group, on a timeout, SIGTERM or at the end of the part),
  ``runread`` run with a clean environment (none of ``RUNREAD_*``), ``runread serve`` on a free
  loopback port, the readers (the Python SDK's ``tests/clients/read_final_answer.py``, ``runread
  read``) in an environment of their own, the check that the server is still running;
* ``options`` and ``run_parts``, the scripts' ``main``: the command line, the temp dir (kept with
  ``--keep`` or on failure), the parts run one after another (a part that cannot go on records a
  ``FAIL … setup`` line and the next one still runs), the serve logs' tails on failure and the closing
  ``NAME: N passed, M failed`` line;
* small helpers: ``sha``, ``jsonl``, ``descendants``, ``clean_env``, ``write_key``.

Results, ``ensure``, ``tail`` and server start/stop come from tests/clients/outside_clients.py (importing
this module puts tests/clients on ``sys.path``), the harness loader from readers.py.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "clients"))
sys.path.insert(0, str(HERE))
from outside_clients import (  # noqa: E402
    READER, Fatal, Results, ensure, free_port, stop, tail, wait_for_port,
)
from readers import load_harness  # noqa: E402

SCENARIOS = HERE / "scenarios"
HARNESS_TIMEOUT_S = 240
READ_LINE = re.compile(r"read (\d+) bytes in (\d+) chunks, sha256 ([0-9a-f]{64}) verified")  # runread read's stderr


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def descendants(root: int) -> list[int]:
    """The processes below root (from /proc), children before grandchildren."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(0), []):
            out.append(child)
            todo.append(child)
    return out


def clean_env(strip: tuple[str, ...] = (), **overrides: str) -> dict[str, str]:
    """This process's environment without runread's own variables (RUNREAD_*) and `strip`, plus overrides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNREAD_") and k not in strip}
    env.update(overrides)
    return env


def write_key(key_file: Path, key: str) -> Path:
    """A grant's key in a 0600 file (in a 0700 directory), as README's `echo "<key>" > key.txt`."""
    key_file.parent.mkdir(mode=0o700, exist_ok=True)
    key_file.write_text(key + "\n")
    key_file.chmod(0o600)
    return key_file


class LivePart:
    """One agent's part of a live test. The scripts' subclasses give the test; theirs, the agent's data."""

    agent = ""  # runread's name for the agent: the part's directory and its check names' prefix
    part = ""  # when one agent has two parts (two versions): the part's directory and prefix instead
    title = ""  # the agent's name in check names and messages
    script = ""  # the harness script; its scripted model server is `mock`
    mock = ""
    version_attr = ""  # the harness module's pinned-version constant
    version = ""
    scenario = Path()
    oracle = ""  # the agent's own answer, as messages call it
    strip_env: tuple[str, ...] = ()  # besides RUNREAD_*, what runread's and the readers' environments lack
    escapes_group = False  # whether processes below the harness leave its process group (then killed by pid)
    shown = "runread"  # runread's command line as error messages show it

    def __init__(self, opts: argparse.Namespace, root: Path, res: Results) -> None:
        self.opts, self.res, self.root = opts, res, root
        self.tmp = root / (self.part or self.agent)
        self.tmp.mkdir()
        self.harness_proc: subprocess.Popen | None = None
        self.server: subprocess.Popen | None = None
        self.server_log = self.tmp / "serve.log"
        self.url = ""
        self.steps: list[dict[str, Any]] = []  # the scenario's steps
        self.reader_home = self.tmp / "reader-home"  # the readers' (empty) HOME
        self.read_dir, self.read_prefix = self.tmp / "read", ""  # where what the readers wrote goes

    def name(self, what: str) -> str:
        return f"{self.part or self.agent}: {what}"

    def run(self) -> None:
        """The part's checks, recorded in self.res; Fatal when the part cannot go on (subclasses)."""
        raise NotImplementedError

    def check(self, what: str, fn: Callable[[], str | None]) -> bool:
        """One check, named for the agent: fn's return value is the PASS detail, an exception a FAIL."""
        return self.res.check(self.name(what), fn)

    def must(self, what: str, fn: Callable[[], str | None], why: str) -> None:
        """A check the rest of the part needs: when it fails, the part stops with Fatal(why)."""
        if not self.check(what, fn):
            raise Fatal(why)

    def cleanup(self) -> None:
        if self.harness_proc is not None and self.harness_proc.poll() is None:
            stray = descendants(self.harness_proc.pid) if self.escapes_group else []
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.harness_proc.pid, signal.SIGKILL)
            for pid in stray:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            self.harness_proc.wait()
        stop(self.server)

    # ----------------------------------------------------------------- the harness

    def install(self, mod: Any) -> Path:
        """The agent's CLI, installed through the harness module (subclasses)."""
        raise NotImplementedError

    def check_harness(self, mod: Any) -> None:
        """What the test needs of the harness module besides the pinned version (subclasses may add)."""

    def install_agent(self) -> str:
        script = self.opts.harness / self.script
        if not script.is_file() or not (self.opts.harness / self.mock).is_file():
            raise Fatal(f"harness {self.opts.harness} lacks {self.script} / {self.mock} (--harness / $RUNREAD_HARNESS_DIR)")
        mod = load_harness(script, script.stem)
        pinned = getattr(mod, self.version_attr)
        if pinned != self.version:
            raise Fatal(f"harness pins {self.title} {pinned}; this test is written for {self.version}")
        self.check_harness(mod)
        t0 = time.monotonic()
        try:
            cli = self.install(mod)
        except (subprocess.CalledProcessError, SystemExit, OSError) as e:
            raise Fatal(f"installing {self.title} through the harness failed: {e}") from None
        return f"{self.version} ({cli}; {time.monotonic() - t0:.1f}s)"

    def run_harness(self, out: Path, log_path: Path, env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
        """The scenario played into OUTDIR `out`: its manifest (every step ran, the pinned CLI) and how long it took."""
        script = self.opts.harness / self.script
        t0 = time.monotonic()
        with open(log_path, "wb") as log:
            # its own process group, so a timeout or SIGTERM takes the agent and the scripted model server with it
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
        ensure(self.version in str(manifest.get("cli_version", "")), f"cli_version {manifest.get('cli_version')!r}")
        return manifest, dt

    # ----------------------------------------------------------------- runread

    def runread_cmd(self) -> list[str]:
        """runread and its global options (before the subcommand)."""
        return [str(self.opts.runread)]

    def runread_env(self) -> dict[str, str]:
        return clean_env(self.strip_env)

    def runread_cwd(self) -> Path:
        return self.tmp

    def runread(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.runread_cmd(), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env=self.runread_env(), cwd=self.runread_cwd(), timeout=timeout)

    def ok(self, *args: str) -> str:
        """stdout and stderr of a command that must succeed."""
        r = self.runread(*args)
        ensure(r.returncode == 0, f"`{self.shown} {' '.join(args)}` exited {r.returncode}: {tail(r.stderr or r.stdout, 800)}")
        return r.stdout + r.stderr

    def json_of(self, *args: str) -> Any:
        r = self.runread(*args)
        ensure(r.returncode == 0, f"`{self.shown} {' '.join(args)}` exited {r.returncode}: {tail(r.stderr or r.stdout, 800)}")
        return json.loads(r.stdout)

    def serve(self) -> str:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        with open(self.server_log, "wb") as logf:
            self.server = subprocess.Popen([*self.runread_cmd(), "serve", "--listen", f"127.0.0.1:{port}"],
                                           stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=self.runread_env(), cwd=self.runread_cwd(), start_new_session=True)
        wait_for_port(port, self.server, self.server_log)
        return self.url

    def alive(self) -> str:
        ensure(self.server is not None and self.server.poll() is None, f"runread serve exited {self.server.returncode}")
        return "after every check"

    # ----------------------------------------------------------------- the readers

    def read_env(self) -> dict[str, str]:
        """A reader's environment: nothing of the owner's (no RUNREAD_*, an empty HOME of its own)."""
        self.reader_home.mkdir(exist_ok=True)
        return clean_env(self.strip_env, HOME=str(self.reader_home))

    def out_file(self, name: str) -> Path:
        out = self.read_dir / f"{self.read_prefix}{name}"
        out.parent.mkdir(exist_ok=True)
        return out

    def differs(self, what: str, got: bytes, want: bytes) -> str:
        return (f"{what} ({len(got)} B, sha256 {sha(got)[:12]}…) differs from {self.oracle} "
                f"({len(want)} B, sha256 {sha(want)[:12]}…)")

    def sdk_read(self, py: Path, g: dict[str, Any], want: bytes, out: Path, protocol: str,
                 *args: str) -> dict[str, Any]:
        """README.md's `.venv/bin/python tests/clients/read_final_answer.py --url URL --key-file F [ARGS] --out F`:
        exactly `want` in `out`, its sha256 and size reported, `protocol` negotiated. Its summary line."""
        cmd = [str(py), str(READER), "--url", self.url, "--key-file", str(g["keyFile"]), *args, "--out", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=self.read_env(), timeout=120)
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        s = json.loads(r.stdout.strip().splitlines()[-1])
        ensure(s.get("ok") is True and s.get("protocolVersion") == protocol,
               f"ok {s.get('ok')!r}, protocolVersion {s.get('protocolVersion')!r} (want {protocol})")
        ensure(s.get("target") == g["target"], f"read target {s.get('target')} != granted {g['target']}")
        got = out.read_bytes()
        ensure(got == want, self.differs("--out", got, want))
        ensure(s.get("sha256") == sha(want) and s.get("totalBytes") == len(want),
               f"reported sha256 {s.get('sha256')}, totalBytes {s.get('totalBytes')}; want {sha(want)}, {len(want)}")
        return s

    def runread_read(self, key_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.opts.runread), "read", "--url", self.url, "--key-file", str(key_file), *args],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, env=self.read_env(), timeout=120)

    def cli_answer(self, key_file: Path, want: bytes, out: Path) -> str:
        """`runread read … final-answer --out FILE`: exactly `want`, its size and sha256 in the
        `read N bytes in C chunks, sha256 … verified` line, which is returned."""
        r = self.runread_read(key_file, "final-answer", "--out", str(out))
        ensure(r.returncode == 0, f"exit {r.returncode}: {tail(r.stderr or r.stdout, 600)}")
        m = READ_LINE.search(r.stderr)
        ensure(m is not None, f"no 'read … sha256 … verified' line: {tail(r.stderr, 300)}")
        got = out.read_bytes()
        ensure(got == want, self.differs("--out", got, want))
        ensure(m.group(3) == sha(want) and int(m.group(1)) == len(want), f"reported {m.group(0)!r}; want {len(want)} B, {sha(want)}")
        return m.group(0)


# --------------------------------------------------------------------------- main


def options(argv: list[str] | None, doc: str, agents: dict[str, type[LivePart]], keep: str) -> argparse.Namespace:
    """The scripts' command line; `keep` says what --keep keeps."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--runread", required=True, type=Path, help="the runread binary to test")
    p.add_argument("--agent", action="append", choices=sorted(agents), help="run only this agent's part (repeatable)")
    p.add_argument("--harness", type=Path,
                   default=Path(os.environ.get("RUNREAD_HARNESS_DIR") or HERE / "harness"),
                   help="the agent harness ($RUNREAD_HARNESS_DIR; default tests/agents/harness, "
                        "this repository's copy of ../shared/harness)")
    p.add_argument("--cache", type=Path,
                   default=Path(os.environ.get("RUNREAD_CLIENTS_CACHE") or Path.home() / ".cache" / "runread-clients"),
                   help="the outside clients' cache ($RUNREAD_CLIENTS_CACHE, default ~/.cache/runread-clients)")
    p.add_argument("--keep", action="store_true", help=f"keep the temp dir ({keep})")
    opts = p.parse_args(argv)
    opts.runread = opts.runread.resolve()
    opts.harness = opts.harness.resolve()
    opts.cache = opts.cache.expanduser().resolve()
    return opts


def run_parts(opts: argparse.Namespace, test: str, agents: dict[str, type[LivePart]],
              start: Callable[[Path, Results], Callable[[type[LivePart]], LivePart]]) -> int:
    """Run the agents' parts one after another in a temp dir `runread-TEST-…`; the exit code.

    `start(tmp, res)` readies what every part needs (its checks recorded in res) and returns how to make
    a part of a class. A part that cannot go on (Fatal) records `AGENT: setup`; the next part still runs."""
    res = Results()
    started = time.monotonic()
    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix=f"runread-{test}-")))
    parts: list[LivePart] = []

    def on_sigterm(*_: Any) -> None:
        for part in parts:
            part.cleanup()
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if not (opts.runread.is_file() and os.access(opts.runread, os.X_OK)):
            raise Fatal(f"--runread {opts.runread} is not an executable file")
        make = start(tmp, res)
        for name in opts.agent or list(agents):
            part = make(agents[name])
            parts.append(part)
            try:
                part.run()
            except Fatal as e:  # this part cannot go on; the next one can
                res.record(part.name("setup"), False, str(e))
            except (AssertionError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
                res.record(part.name("unexpected error"), False, f"{type(e).__name__}: {e}")
            finally:
                part.cleanup()
    except Fatal as e:
        res.record("setup", False, str(e))
    except (AssertionError, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
        res.record("unexpected error", False, f"{type(e).__name__}: {e}")
    except (KeyboardInterrupt, SystemExit) as e:
        res.record("interrupted", False, type(e).__name__)
    finally:
        for part in parts:
            part.cleanup()
            if res.failed and part.server_log.exists():
                print(f"--- {part.agent}: runread serve log (tail) ---\n{tail(part.server_log.read_bytes(), 3000)}\n---",
                      flush=True)
        if opts.keep or (res.failed and any(tmp.iterdir())):
            print(f"temp dir kept: {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"({time.monotonic() - started:.1f}s)", flush=True)
    print(f"{test}: {res.passed} passed, {res.failed} failed", flush=True)
    return 1 if res.failed else 0
