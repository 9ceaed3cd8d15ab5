#!/usr/bin/env python3
"""The launchd agent (contrib/launchd/runread.plist), checked where launchd is not.

launchd ignores a key it does not know and expands nothing in a plist, so a typo or a `~` would
pass unnoticed until a Mac user's agent silently did nothing. This check reads the plist as
launchd does (Apple's plist format, through Python's plistlib), holds every key to the ones
launchd.plist(5) defines with their types and to what the systemd unit does (restart on failure,
graceful SIGTERM within 30 s, umask 0077), then runs its ProgramArguments exactly as launchd would
for a user agent — a home of its own, launchd's default PATH, the umask — and checks that the
command serves MCP on 127.0.0.1:7077, logs where the plist says, keeps its state owner-only in
the default home, and stops cleanly (exit 0, which launchd's KeepAlive does not restart) on
SIGTERM. Run it in a network namespace of its own (scripts/test does), so the default port is
free.

    unshare --net sh -c 'ip link set lo up && python3 tests/install/launchd.py --runread BIN'
"""

from __future__ import annotations

import argparse
import os
import plistlib
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

PLIST = Path(__file__).resolve().parents[2] / "contrib" / "launchd" / "runread.plist"
# launchd.plist(5) keys this agent may use, with their plist types.
KNOWN_KEYS = {
    "Label": str,
    "ProgramArguments": list,
    "RunAtLoad": bool,
    "KeepAlive": dict,
    "ThrottleInterval": int,
    "ExitTimeOut": int,
    "Umask": int,
    "ProcessType": str,
    "EnvironmentVariables": dict,
}
# launchd's PATH for a user agent.
LAUNCHD_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
# How long the served port may take to answer, and runread to stop after SIGTERM.
START_SECS = 30
DEFAULT_URL = "http://127.0.0.1:7077/mcp"


def check_keys(agent: dict) -> None:
    for key, value in agent.items():
        assert key in KNOWN_KEYS, f"{key}: not a launchd.plist key this agent should use"
        assert isinstance(value, KNOWN_KEYS[key]), f"{key}: {type(value).__name__}"
    assert agent["Label"] == "runread"
    assert all(isinstance(a, str) for a in agent["ProgramArguments"])
    assert agent["RunAtLoad"] is True
    # As systemd's Restart=on-failure: only an unsuccessful exit is restarted.
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["Umask"] == 0o077
    assert agent["ExitTimeOut"] == 30 and agent["ThrottleInterval"] == 5
    assert agent["ProcessType"] in {"Background", "Standard", "Adaptive", "Interactive"}


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
    except urllib.error.HTTPError:
        return True  # an HTTP answer (a GET on /mcp is refused): it serves
    except OSError:
        return False
    return True


def run_as_launchd(agent: dict, runread: Path, home: Path) -> None:
    bin_dir = home / ".cargo" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy2(runread, bin_dir / "runread")
    env = {"HOME": str(home), "PATH": LAUNCHD_PATH, "USER": os.environ.get("USER", "runner")}
    env.update(agent.get("EnvironmentVariables", {}))
    proc = subprocess.Popen(
        agent["ProgramArguments"],
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.umask(agent["Umask"]),
    )
    try:
        deadline = time.monotonic() + START_SECS
        while not answers(DEFAULT_URL):
            assert proc.poll() is None, f"the agent's command exited: {proc.returncode}"
            assert time.monotonic() < deadline, "the agent's command did not serve"
            time.sleep(0.2)
        # `exec`: launchd's pid is runread's, so its SIGTERM reaches runread.
        exe = Path(f"/proc/{proc.pid}/exe")
        if exe.exists():
            assert exe.resolve() == (bin_dir / "runread").resolve(), exe.resolve()
        log = home / "Library" / "Logs" / "runread.log"
        assert log.is_file(), "no log where the plist says"
        state = home / ".local" / "share" / "runread"
        assert state.is_dir() and stat.S_IMODE(state.stat().st_mode) & 0o077 == 0, oct(
            state.stat().st_mode
        )
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=agent["ExitTimeOut"])
        assert code == 0, f"SIGTERM: exit {code}, which KeepAlive would restart"
        print(f"launchd: {PLIST.name}: keys and types; serves {DEFAULT_URL}; logs to {log.name};")
        print("launchd: owner-only home; SIGTERM stops it cleanly (exit 0)")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runread", required=True, type=Path)
    opts = ap.parse_args()
    with PLIST.open("rb") as f:
        agent = plistlib.load(f)
    check_keys(agent)
    with tempfile.TemporaryDirectory(prefix="runread-launchd-") as tmp:
        run_as_launchd(agent, opts.runread.resolve(), Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
