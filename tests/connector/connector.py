#!/usr/bin/env python3
"""A chat assistant's connector, offline: the official Python ``mcp`` SDK's OAuth client
(``OAuthClientProvider``: discovery, registration, PKCE) standing in for ChatGPT or Claude,
reaching runread through a TLS front that stands in for the owner's tunnel, with the owner's
approval given on the console in headless Chromium.

    python3 tests/connector/connector.py --runread target/debug/runread

0. The whole suite runs in a network and mount namespace of its own (``unshare --user
   --map-root-user --net --mount``: only loopback, and a hosts file bind-mounted over /etc/hosts
   in which ``runread.test``, ``chatgpt.com`` and ``pi.dev`` are 127.0.0.1; the machine's names
   are untouched and nothing leaves it). What needs the network is installed first, outside it:
   chromium, the venv, Codex and Pi through tests/agents/harness, the conformance suite. Without
   ``unshare`` the rest runs as before and the agents' checks (4.) fail, saying why.
1. Makes a test CA and a certificate for ``runread.test``, ``chatgpt.com``, ``pi.dev`` and
   ``localhost`` (openssl), a home holding the Pi ``sample`` fixture, and starts ``runread serve
   --public-url https://runread.test:PORT --cimd-allow-host localhost --cimd-allow-host chatgpt.com
   --cimd-allow-host pi.dev --console`` (``SSL_CERT_FILE`` names the test CA, as a system's roots
   would). A TLS front on loopback forwards the bytes to runread's loopback port, as a tunnel does.
2. Dynamic Client Registration: the SDK connects to the public URL, gets 401, discovers the
   metadata, registers, and sends the browser to the authorization page. The "browser" reads the
   page (its code, nothing of any run); the owner finds the request with that code on the
   console's Connections page, names the reader and shares the run right away; the page continues
   to the client's redirect with the code, ``state`` and ``iss``. The SDK exchanges it (PKCE) and
   reads the run's final answer, checked against the fixture file.
3. Client ID Metadata Document: the same with a client whose id is an HTTPS URL, served by a local
   HTTPS server this test starts (``localhost``, allowed with ``--cimd-allow-host``).
4. The real coding agents by their default OAuth path, configured with only the public URL:
   Codex 0.171.0 (``[mcp_servers.runread] url = …``; ``codex mcp login runread``, no flags) and
   Pi 1.6.0 (mcp.json ``{"url": …, "exposure": "direct"}``; ``pi mcp login runread --timeout
   90``). Each names its Client ID Metadata Document (``https://chatgpt.com/oauth/codex/client.json``,
   ``https://pi.dev/oauth/client.json``), which runread fetches from port 443 here (a document
   shaped like the publisher's: a native public client with the port-less redirect URI
   ``http://127.0.0.1/callback``), and a redirect URI on a loopback port it picked; it prints the
   authorization URL (and hands it to BROWSER / xdg-open, a script recording it). The test's
   browser opens the page, the owner approves on the console (naming the reader ``codex-cli`` /
   ``pi-cli``, sharing the run), the page continues to the agent's listener with code, ``state``
   and ``iss``, and the agent exchanges the code and stores its tokens. Then the agent reads the
   shared run with them: ``codex exec`` (codex-scenario.py, its scripted model calling
   ``read_final_answer``) and a Pi step (pi-scenario.py, ``-e builtin:mcp`` added by HARNESS_WRAP:
   the harness's ``--no-extensions`` turns MCP off). What reached the model must begin with runread's
   label (Codex: after its ``Wall time: … Output:`` prefix; Pi: inside runread's text block) and
   carry the answer's first chunk; the audit names the reader.
5. The official MCP conformance suite's authorization-server scenarios (``conformance
   authorization``, the suite tests/conformance pins: ``authorization-server-metadata-endpoint`` and
   ``authorization-code-grant``, its only scenarios for a server's OAuth side; its ``auth/*`` ones
   test clients) against the public URL, the owner approving the suite's request on the console.
6. Refusals: a metadata document at a host not allowed to be private (``127.0.0.1``), one that
   redirects to 169.254.169.254, an oversized one and a slow one are each ``invalid_client`` on
   the page; an approval posted without the console's CSRF token is refused and the request stays
   waiting; the page opens in the browser but not framed by another site.

Prints one PASS/FAIL line per check, ends with ``connector: N passed, M failed``. Installs into a
venv under $RUNREAD_CONNECTOR_CACHE (default ~/.cache/runread-connector) the pins of
requirements.txt (the SDK and selenium) on first use; chromium and chromium-driver from Debian as
tests/console/browser.py does.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import html as html_module
import http.server
import importlib.util
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REQUIREMENTS = HERE / "requirements.txt"
PUBLIC_HOST = "runread.test"
WAIT_SECS = 20
HARNESS = REPO / "tests" / "agents" / "harness"
# The real coding agents' own OAuth clients (pinned as in tests/agents/readers.py).
CODEX_VERSION = "0.171.0"
PI_PACKAGE = "@earendil-works/pi-coding-agent"
PI_VERSION = "1.6.0"
# The Client ID Metadata Documents the agents name by default, with no flags or client settings
# (`codex mcp login`, `pi mcp login`) when the authorization server advertises documents, public
# clients and RFC 9207's `iss` (runread does).
CODEX_CIMD = "https://chatgpt.com/oauth/codex/client.json"
PI_CIMD = "https://pi.dev/oauth/client.json"
# The hosts the agents' cases need resolved to loopback: the tunnel's public name and the hosts of
# the documents, which runread fetches itself (on port 443, as the URLs say).
NETNS_HOSTS = (PUBLIC_HOST, "chatgpt.com", "pi.dev")
# The documents as served here, in place of chatgpt.com's and pi.dev's. Codex's is shaped like the
# one OpenAI serves (as a public test fixture records it: a native public client whose redirect URIs
# are the port-less loopback `/callback`); Pi's the same (its docs: the redirect URI is
# http://127.0.0.1:<port>/callback). Neither is fetched from the internet by this test.
AGENT_DOCUMENTS = {
    ("chatgpt.com", "/oauth/codex/client.json"): {
        "client_id": CODEX_CIMD, "client_name": "Codex", "client_uri": "https://chatgpt.com/codex",
        "application_type": "native", "redirect_uris": ["http://127.0.0.1/callback", "http://localhost/callback"],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none"},
    ("pi.dev", "/oauth/client.json"): {
        "client_id": PI_CIMD, "client_name": "pi", "client_uri": "https://pi.dev",
        "application_type": "native", "redirect_uris": ["http://127.0.0.1/callback", "http://localhost/callback"],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none"},
}
LABEL = '{"trust":"untrusted_data","instructions":false,"tool":"read_final_answer"'
# Codex puts this in front of an MCP tool's output in the function_call_output it sends its model.
CODEX_OUTPUT_PREFIX = re.compile(r"\AWall time: [0-9.]+ seconds\nOutput:\n")
# Pi hands its model the text content: runread's labeled block.
PI_TAG = '<tool_result tool="read_final_answer" trust="untrusted">\n'
AGENT_PROMPT = "Read the final answer of the run shared with you through runread."
AGENT_DONE = "I read the shared final answer through runread."


def load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


BROWSER = load("console_browser", REPO / "tests" / "console" / "browser.py")


def ensure_venv() -> Path:
    cache = Path(os.environ.get("RUNREAD_CONNECTOR_CACHE", Path.home() / ".cache" / "runread-connector"))
    venv = cache / "venv"
    py = venv / "bin" / "python"
    pins = [line.strip() for line in REQUIREMENTS.read_text().splitlines() if "==" in line and not line.startswith("#")]
    probe = [str(py), "-c", "import importlib.metadata as m; print(' '.join(f'{n}=={m.version(n)}' for n in ('mcp', 'selenium')))"]
    if py.exists() and subprocess.run(probe, capture_output=True, text=True).stdout.split() == pins:
        return py
    print(f"connector: installing {' '.join(pins)} into {venv}", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", str(REQUIREMENTS)], check=True)
    return py


def make_certs(d: Path) -> tuple[Path, Path, Path]:
    """A test CA and a server certificate for runread.test, chatgpt.com, pi.dev and localhost: (ca, cert, key)."""
    ca_key, ca, key, csr, cert, ext = (d / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem", "ext.cnf"))
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=runread test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={PUBLIC_HOST}")
    sans = ",".join(f"DNS:{h}" for h in (*NETNS_HOSTS, "localhost"))
    ext.write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(cert),
        "-days", "2", "-extfile", str(ext))
    return ca, cert, key


class TlsFront:
    """The owner's tunnel, on loopback: TLS in, the same bytes out to runread's port."""

    def __init__(self, cert: Path, key: Path, upstream: int) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.upstream = upstream
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
            up = socket.create_connection(("127.0.0.1", self.upstream))
        except OSError:
            conn.close()
            return

        def pipe(a: socket.socket, b: socket.socket) -> None:
            with contextlib.suppress(OSError):
                while data := a.recv(65536):
                    b.sendall(data)
            with contextlib.suppress(OSError):
                b.shutdown(socket.SHUT_WR)

        t = threading.Thread(target=pipe, args=(up, tls), daemon=True)
        t.start()
        pipe(tls, up)
        t.join(timeout=30)
        for s in (tls, up):
            with contextlib.suppress(OSError):
                s.close()


def metadata_server(cert: Path, key: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    """Client ID Metadata Documents at https://localhost:PORT/…: a good one, and the bad ones."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            port = self.server.server_address[1]
            url = f"https://localhost:{port}{self.path}"
            if self.path == "/client.json":
                body = json.dumps({"client_id": url, "client_name": "ChatGPT stand-in (CIMD)",
                                   "redirect_uris": ["http://localhost:3119/callback"],
                                   "grant_types": ["authorization_code", "refresh_token"],
                                   "response_types": ["code"], "token_endpoint_auth_method": "none"}).encode()
            elif self.path == "/redirect.json":
                self.send_response(302)
                self.send_header("Location", "https://169.254.169.254/latest/meta-data")
                self.end_headers()
                return
            elif self.path == "/big.json":
                body = json.dumps({"client_id": url, "redirect_uris": ["https://a.example/cb"],
                                   "client_name": "x", "padding": "x" * 20000}).encode()
            elif self.path == "/slow.json":
                time.sleep(8)
                body = b"{}"
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, *a: Any) -> None:
            pass  # a client that gave up (runread at its deadline) is not an error here

    srv = Server(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


def agent_documents_server(cert: Path, key: Path) -> tuple[http.server.ThreadingHTTPServer, list[str]]:
    """chatgpt.com's and pi.dev's metadata documents at https://HOST/… (127.0.0.1:443 in the test's
    network namespace, where both names resolve to loopback), and the list of what was fetched."""
    fetched: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            host = (self.headers.get("Host") or "").lower()
            fetched.append(f"https://{host}{self.path}")
            doc = AGENT_DOCUMENTS.get((host, self.path))
            if doc is None:
                self.send_response(404)
                self.end_headers()
                return
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, *a: Any) -> None:
            pass

    srv = Server(("127.0.0.1", 443), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, fetched


def harness_modules() -> tuple[Any, Any]:
    """The vendored harness's codex-scenario.py and pi-scenario.py (Pi 1.x: PI_PACKAGE/PI_VERSION)."""
    codex = load("codex_scenario", HARNESS / "codex-scenario.py")
    pi = load("pi_scenario", HARNESS / "pi-scenario.py")
    pi.PI_PACKAGE, pi.PI_VERSION = PI_PACKAGE, PI_VERSION
    return codex, pi


def ensure_agents() -> None:
    """Installs Codex and Pi 1.x (with its Node) through the harness, outside the network namespace
    the agents' cases run in (installing needs the network; the cases need none)."""
    codex, pi = harness_modules()
    if codex.CODEX_VERSION != CODEX_VERSION:
        raise SystemExit(f"the harness pins Codex {codex.CODEX_VERSION}; this test is written for {CODEX_VERSION}")
    codex.ensure_codex()
    _, meta = pi.ensure_pi()
    pi.node_dir(meta)


class Login:
    """A real agent's `mcp login`, run until it prints runread's authorization URL, then waited for."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path, public: str, opened: Path,
                 config_dir: Path) -> None:
        self.opened, self.config_dir = opened, config_dir
        self.lines: list[str] = []
        self.url: str | None = None
        self.found = threading.Event()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
                                     stdin=subprocess.DEVNULL)
        pattern = re.compile(re.escape(f"{public}/authorize?") + r"\S+")

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                m = pattern.search(line)
                if m and self.url is None:
                    self.url = m.group(0)
                    self.found.set()
            self.found.set()

        threading.Thread(target=read, daemon=True).start()

    def output(self) -> str:
        return "".join(self.lines)

    def finish(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class AgentConnectors:
    """Codex 0.171.0 and Pi 1.6.0 sign in by their default path and read the shared run with the token.

    Each agent is configured with only runread's public URL; its `mcp login runread`, with no flags,
    reads runread's metadata, names its own Client ID Metadata Document (which runread fetches from
    chatgpt.com or pi.dev — here the loopback server above, in this network namespace) and listens on
    a loopback port it picks; the URL it prints is opened by the test's browser, the owner approves
    on the console (sharing the run), the page continues to the agent's listener, and the agent
    stores its tokens. Then the agent's scripted model (the harness) calls read_final_answer on the
    shared run, and what reached the model must carry runread's label and the answer."""

    def __init__(self, ctx: dict[str, Any]) -> None:
        self.checks, self.public, self.ca, self.tmp = ctx["checks"], ctx["public"], ctx["ca"], ctx["tmp"]
        self.fetch, self.approve, self.runread, self.home = ctx["fetch"], ctx["approve"], ctx["runread"], ctx["home"]
        self.target: dict[str, Any] = ctx["target"]
        self.answer: bytes = ctx["answer"].encode()
        self.fetched: list[str] = ctx["documents_fetched"]
        self.netns_error: str = ctx["netns_error"]
        self.observed: list[str] = ctx["observed"]
        self.codex_mod, self.pi_mod = harness_modules()

    def run(self) -> None:
        if self.netns_error:
            for agent in ("Codex", "Pi"):
                self.checks.check(f"{agent}'s default OAuth login: runs in a network namespace where "
                                  f"{', '.join(NETNS_HOSTS)} resolve to loopback", False, self.netns_error)
            return
        if self.codex_login():
            self.codex_read()
        if self.pi_login():
            self.pi_read()

    def check(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.check(name, ok, detail)
        return ok

    def login_and_approve(self, label: str, reader: str, login: Login, cimd: str) -> bool:
        """Waits for the authorization URL `login` prints; the test's browser opens it, the owner
        approves it on the console as `reader`, sharing the run, and the browser follows the page's
        redirect to the agent's listener. Whether the agent then exited 0 (its tokens stored)."""
        t0 = time.monotonic()
        login.found.wait(60)
        if not self.check(f"{label}: prints runread's authorization URL", login.url is not None, login.output()[-800:]):
            login.finish(5)
            return False
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(login.url or "").query))
        redirect = q.get("redirect_uri", "")
        self.check(f"{label}: names its Client ID Metadata Document {cimd} and a loopback redirect on a port it picked",
                   q.get("client_id") == cimd and q.get("code_challenge_method") == "S256"
                   and re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect) is not None,
                   json.dumps({k: q.get(k) for k in ("client_id", "redirect_uri", "code_challenge_method", "resource")}))
        self.observed.append(f"{label}: client_id {q.get('client_id')}, redirect_uri {redirect}, "
                             f"resource {q.get('resource')}, scope {q.get('scope')}")
        status, _, html = self.fetch(login.url)
        code = re.search(r'id="user-code">([A-Z0-9-]+)<', html)
        wait = waiting_page(html)
        if not (self.check(f"{label}: runread's page takes the request (runread fetched {cimd})",
                           status == 200 and bool(code) and bool(wait) and cimd in self.fetched,
                           f"{status} {html[-300:]} fetched={self.fetched}") and code):
            login.finish(5)
            return False
        self.approve(code.group(1), reader, True)
        location = ""
        for _ in range(30):
            status, headers, _ = self.fetch(f"{self.public}{wait}")
            if status == 303:
                location = headers.get("Location", headers.get("location", ""))
                break
            time.sleep(0.5)
        back = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
        self.check(f"{label}: the page continues to the agent's listener with code, state and iss",
                   location.startswith(redirect + "?") and bool(back.get("code")) and back.get("state") == q.get("state")
                   and back.get("iss") == self.public, location.split("?")[0])
        # The browser follows the redirect to the agent's loopback listener.
        with contextlib.suppress(OSError):
            urllib.request.urlopen(location, timeout=30).read()
        rc = login.finish(60)
        opened = login.opened.read_text().strip() if login.opened.exists() else ""
        said = " / ".join(x.strip() for x in login.lines if x.strip() and self.public not in x)
        self.observed.append(f"{label} ({time.monotonic() - t0:.1f}s) printed: {said[-300:]}; the browser it launched "
                             f"was given {'the same URL' if opened == login.url else repr(opened[:80])}; files in its "
                             f"config dir: {sorted(p.name for p in login.config_dir.iterdir())}")
        return self.check(f"{label}: exits 0 with its tokens stored", rc == 0, f"exit {rc}: {login.output()[-800:]}")

    def audit_names(self, label: str, reader: str) -> None:
        audit = subprocess.run([self.runread, "--home", str(self.home), "audit", "--reader", reader, "--json"],
                               capture_output=True, text=True, timeout=60)
        self.check(f"{label}: runread's audit names the reader {reader} for the read",
                   audit.returncode == 0 and "read_final_answer" in audit.stdout, audit.stdout[-300:] + audit.stderr[-300:])

    def check_chunk(self, label: str, text: str) -> None:
        """`text`, the result as the model got it (after the client's own wrapping), is runread's
        structuredContent: the label first, then the answer's first chunk."""
        try:
            d = json.loads(text)
        except ValueError:
            d = {}
        chunk = d.get("text") if isinstance(d.get("text"), str) else ""
        self.check(f"{label}: the model got runread's label first, then the shared answer",
                   text.startswith(LABEL) and d.get("state") == "available" and d.get("byteOffset") == 0 and bool(chunk)
                   and self.answer.startswith(chunk.encode()) and d.get("sha256") == hashlib.sha256(self.answer).hexdigest(),
                   text[:300])

    @staticmethod
    def recorder(path: Path, log: Path) -> None:
        """A stand-in for the browser launcher an agent runs (there is no browser for it here): it
        records the URL it was given."""
        path.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
        path.chmod(0o755)

    def codex_login(self) -> bool:
        """config.toml with only the URL; `codex mcp login runread`, no flags."""
        out = self.codex_out = self.tmp / "codex-agent"
        for d in ("codex", "home", "workspace", "bin"):
            (out / d).mkdir(parents=True)
        (out / "codex" / "config.toml").write_text(f'[mcp_servers.runread]\nurl = "{self.public}/mcp"\n')
        self.recorder(out / "bin" / "browser", out / "browser-opened.txt")
        env = {k: os.environ[k] for k in self.codex_mod.KEEP_ENV if k in os.environ}
        # Codex (Rust) takes the test CA as its roots from SSL_CERT_FILE, and its browser from BROWSER.
        env.update({"HOME": str(out / "home"), "CODEX_HOME": str(out / "codex"), "SSL_CERT_FILE": str(self.ca),
                    "BROWSER": str(out / "bin" / "browser")})
        login = Login([str(self.codex_mod.ensure_codex()), "mcp", "login", "runread"], env, out / "workspace",
                      self.public, out / "browser-opened.txt", out / "codex")
        return self.login_and_approve("Codex `codex mcp login runread`", "codex-cli", login, CODEX_CIMD)

    def codex_read(self) -> None:
        """`codex exec` (the harness, its model scripted) reads the shared run with the stored token."""
        out = self.codex_out
        scenario = out / "scenario.json"
        scenario.write_text(json.dumps({
            "model": "gpt-5.5",
            "responses": [{"tool_search": {"query": "runread read final answer", "limit": 8}},
                          {"tool_calls": [{"namespace": "mcp__runread", "name": "read_final_answer",
                                           "arguments": {"target": self.target}}]},
                          {"text": AGENT_DONE}],
            "steps": [{"prompt": AGENT_PROMPT, "timeout_s": 90}],
            # the harness writes its own config.toml: the server comes back as the same -c key
            "config": {"mcp_servers.runread.url": f"{self.public}/mcp"},
            "env": {"SSL_CERT_FILE": str(self.ca)}}))
        r = subprocess.run([sys.executable, str(HARNESS / "codex-scenario.py"), str(scenario), str(out)],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=240)
        manifest = out / "manifest.json"
        steps = json.loads(manifest.read_text())["steps"] if manifest.exists() else []
        stderr = out / "stderr-0.txt"
        self.check("Codex `codex exec` with the stored token: exits 0",
                   r.returncode == 0 and bool(steps) and steps[0]["exit_code"] == 0,
                   (r.stderr or r.stdout)[-600:] + (stderr.read_text(errors="replace")[-600:] if stderr.exists() else ""))
        reqs: dict[int, Any] = {}
        log = out / "llm-requests.jsonl"
        for line in log.read_text().splitlines() if log.exists() else []:
            e = json.loads(line)
            if e.get("n") is not None:
                reqs[e["n"]] = e["body"]
        outs = [i for i in (reqs.get(2) or {}).get("input", []) if isinstance(i, dict)
                and i.get("type") == "function_call_output" and i.get("call_id") == "call_mock_1_0"]
        output = outs[0].get("output") if len(outs) == 1 else ""
        if isinstance(output, list):
            output = "".join(p.get("text", "") for p in output if isinstance(p, dict))
        output = output if isinstance(output, str) else ""
        m = CODEX_OUTPUT_PREFIX.match(output)
        self.check("Codex: the function_call_output carries Codex's prefix, then runread's result", m is not None,
                   f"requests {sorted(reqs)}; {output[:300]}")
        if m:
            self.check_chunk("Codex", output[m.end():])
            self.observed.append(f"Codex's model got: {output[:160]!r}")
        self.audit_names("Codex", "codex-cli")

    def pi_login(self) -> bool:
        """mcp.json with only the URL and `"exposure": "direct"`; `pi mcp login runread`."""
        out = self.pi_out = self.tmp / "pi-agent"
        for d in ("agent", "home", "workspace", "bin"):
            (out / d).mkdir(parents=True)
        (out / "agent" / "mcp.json").write_text(json.dumps(
            {"mcpServers": {"runread": {"url": f"{self.public}/mcp", "exposure": "direct"}}}))
        cli, meta = self.pi_mod.ensure_pi()
        node = self.pi_mod.node_dir(meta)
        (out / "bin" / "pi").symlink_to(next(p for p in Path(cli).parents if p.name == "node_modules") / ".bin" / "pi")
        # Pi opens the page with xdg-open.
        self.recorder(out / "bin" / "xdg-open", out / "browser-opened.txt")
        # The harness starts Pi with --no-extensions, which also turns MCP off; explicit extensions
        # still load (Pi's cli.md), so its wrapper adds MCP back, and the event stream it leaves to one.
        wrap = out / "bin" / "pi-with-mcp"
        wrap.write_text('#!/bin/sh\npi="$1"; shift\nexec "$pi" -e builtin:mcp --mode json "$@"\n')
        wrap.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_WRAP", "BROWSER")}
        path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        # Node takes the test CA from NODE_EXTRA_CA_CERTS; the agent dir is the harness's (OUTDIR/agent).
        env.update({"PATH": f"{out / 'bin'}:{node}:{path}" if node else f"{out / 'bin'}:{path}", "HOME": str(out / "home"),
                    "PI_CODING_AGENT_DIR": str(out / "agent"), "NODE_EXTRA_CA_CERTS": str(self.ca), "PI_OFFLINE": "1",
                    "PI_TELEMETRY": "0", "PI_PACKAGE": PI_PACKAGE, "PI_VERSION": PI_VERSION,
                    "RUNREAD_HARNESS_CACHE": str(self.pi_mod.CACHE), "HARNESS_WRAP": json.dumps([str(wrap)])})
        self.pi_env = env
        login = Login(["pi", "mcp", "login", "runread", "--timeout", "90"], env, out / "workspace", self.public,
                      out / "browser-opened.txt", out / "agent")
        return self.login_and_approve("Pi `pi mcp login runread`", "pi-cli", login, PI_CIMD)

    def pi_read(self) -> None:
        """A Pi step (the harness, its model scripted) reads the shared run with the stored token."""
        out = self.pi_out
        scenario = out / "scenario.json"
        scenario.write_text(json.dumps({
            "responses": [{"tool_calls": [{"name": "mcp__runread__read_final_answer", "arguments": {"target": self.target}}]},
                          {"text": AGENT_DONE}],
            "steps": [{"prompt": AGENT_PROMPT, "timeout_s": 90}]}))
        r = subprocess.run([sys.executable, str(HARNESS / "pi-scenario.py"), str(scenario), str(out)], env=self.pi_env,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=240)
        manifest, events = out / "manifest.json", out / "events-0.jsonl"
        steps = json.loads(manifest.read_text())["steps"] if manifest.exists() else []
        self.check("Pi step with the stored token (-e builtin:mcp): exits 0",
                   r.returncode == 0 and bool(steps) and steps[0]["exit_code"] == 0,
                   (r.stderr or r.stdout)[-600:] + (events.read_text(errors="replace")[-600:] if events.exists() else ""))
        log = out / "llm-requests.jsonl"
        reqs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
        # the result ends the model's next request
        last = (reqs[1].get("messages") or [{}])[-1] if len(reqs) > 1 else {}
        content = last.get("content") if last.get("role") == "tool" else ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        content = content if isinstance(content, str) else ""
        end = "\n</tool_result>"
        labeled = content.startswith(PI_TAG + LABEL) and content.endswith(end)
        self.check("Pi: the tool message its model got is runread's labeled block", labeled,
                   f"{len(reqs)} requests; {content[:300]}")
        if labeled:
            self.check_chunk("Pi", content[len(PI_TAG):-len(end)])
            self.observed.append(f"Pi's model got: {content[:160]!r}")
        self.audit_names("Pi", "pi-cli")


CONFORMANCE = REPO / "tests" / "conformance" / "run.py"
# Node resolves the tunnel's public name to the front on loopback, as this process does.
NODE_PRELOAD = f"""
const dns = require('dns');
const lookup = dns.lookup;
dns.lookup = function (host, ...rest) {{
  return lookup.call(this, host === '{PUBLIC_HOST}' ? '127.0.0.1' : host, ...rest);
}};
"""


def conformance_authorization(fetch: Any, approve: Any, public: str, ca: Path, tmp: Path, checks: Any) -> None:
    """Runs `conformance authorization` (the suite pinned in tests/conformance/run.py) against runread as
    the authorization server at `public`: every scenario it lists, each with a client registered
    for its callback. The authorization-code scenario prints the authorization URL and waits for the
    callback on loopback: the "browser" here reads the page's code, the owner approves it on the
    console, and the page's redirect is delivered to the suite's callback."""
    conf = load("conformance_run", CONFORMANCE)
    cache = Path(os.environ.get("RUNREAD_CONFORMANCE_CACHE") or Path.home() / ".cache" / "runread-conformance")
    with conf.cache_lock(cache):
        node, entry, _ = conf.ensure_npm(cache)
    listed = subprocess.run([str(node), str(entry), "list"], capture_output=True, text=True, timeout=120).stdout
    section = listed.split("Authorization server scenarios", 1)[-1]
    scenarios = [m.group(1) for m in map(conf.SCENARIO_RE.match, section.splitlines()) if m]
    checks.check("the conformance suite lists authorization-server scenarios", bool(scenarios), listed[-400:])
    preload = tmp / "resolve-public-name.js"
    preload.write_text(NODE_PRELOAD)
    env = dict(os.environ, NO_COLOR="1", FORCE_COLOR="0", NODE_EXTRA_CA_CERTS=str(ca),
               NODE_OPTIONS=f"--require {preload}")
    # One run of them all: the grant scenario takes the metadata the first one read.
    port = BROWSER.free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    req = urllib.request.Request(f"{public}/register", method="POST",
                                 data=json.dumps({"client_name": "conformance", "redirect_uris": [callback]}).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=str(ca)), timeout=30) as r:
        client_id = json.loads(r.read())["client_id"]
    out = tmp / "conformance-authorization"
    out.mkdir()
    p = subprocess.Popen([str(node), str(entry), "authorization", "--url", public, "--client-id", client_id,
                          "--resource", f"{public}/mcp", "--port", str(port), "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=out,
                         stdin=subprocess.DEVNULL)
    lines: list[str] = []
    try:
        assert p.stdout is not None
        for line in p.stdout:
            lines.append(line)
            if not line.startswith(f"{public}/authorize?"):
                continue
            _, _, html = fetch(line.strip())
            code = re.search(r'id="user-code">([A-Z0-9-]+)<', html)
            wait = waiting_page(html)
            if not (code and wait):
                break
            approve(code.group(1), "conformance", False)
            for _ in range(30):
                status, headers, _ = fetch(f"{public}{wait}")
                if status == 303:
                    # The browser follows the page's redirect to the suite's callback.
                    with contextlib.suppress(OSError):
                        urllib.request.urlopen(headers.get("Location", headers.get("location", "")), timeout=30).read()
                    break
                time.sleep(0.5)
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
    # Each scenario's checks are in a results folder named after it.
    files = sorted(out.glob("**/checks.json"))
    for name in scenarios:
        found = [c for f in files if f"-{name}-" in f.parent.name for c in json.loads(f.read_text())]
        checks.check(f"conformance authorization {name}: every check passes",
                     bool(found) and all(c.get("status") == "SUCCESS" for c in found),
                     json.dumps(found)[:600] + "".join(lines)[-600:])


def waiting_page(html: str) -> str | None:
    """The address the authorization page refreshes to, as a browser reads it from its meta refresh
    (it carries the client's `state`, which runread keeps only as a digest)."""
    m = re.search(r'http-equiv="refresh" content="\d+;url=([^"]+)"', html)
    return html_module.unescape(m.group(1)) if m else None


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a: Any, **k: Any) -> None:  # type: ignore[override]
        return None


def main_in_venv(args: argparse.Namespace) -> int:
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    reader_mod = load("read_final_answer", REPO / "tests" / "clients" / "read_final_answer.py")
    oracle = load("outside_clients", REPO / "tests" / "clients" / "outside_clients.py")
    runread = str(Path(args.runread).resolve())
    checks = BROWSER.Checks()
    tmp = Path(tempfile.mkdtemp(prefix="runread-connector-"))
    home, workspace, sessions, certs = tmp / "home", tmp / "workspace", tmp / "sessions", tmp / "certs"
    for d in (home, workspace, sessions, certs):
        d.mkdir()
    workspace = workspace.resolve()
    ca, cert, key = make_certs(certs)
    ca_ctx = ssl.create_default_context(cafile=str(ca))

    # runread.test is the tunnel's public name: here it is the TLS front on loopback.
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *a: Any, **k: Any) -> Any:
        # anyio hands the name over IDNA-encoded, as bytes.
        name = host.decode() if isinstance(host, bytes) else host
        return real_getaddrinfo("127.0.0.1" if name == PUBLIC_HOST else host, *a, **k)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]

    def rr(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([runread, "--home", str(home), *a], capture_output=True, text=True, timeout=120, check=True)

    rr("workspace", "add", str(workspace), "--name", "demo")
    session = BROWSER.place_pi("sample", sessions, workspace)
    rr("ingest", "--pi", str(sessions))
    answers = oracle.final_answers(session)

    mcp_port, console_port = BROWSER.free_port(), BROWSER.free_port()
    front = None
    server = None
    driver = None
    meta = None
    documents = None
    try:
        # The front first (its port is the public URL's), then runread behind it.
        front = TlsFront(cert, key, mcp_port)
        front_port = front.port
        public = f"https://{PUBLIC_HOST}:{front_port}"
        env = dict(os.environ, SSL_CERT_FILE=str(ca))
        server = subprocess.Popen(
            [runread, "--home", str(home), "serve", "--listen", f"127.0.0.1:{mcp_port}", "--public-url", public,
             "--cimd-allow-host", "localhost", "--cimd-allow-host", "chatgpt.com", "--cimd-allow-host", "pi.dev",
             "--console", "--console-listen", f"127.0.0.1:{console_port}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        login = BROWSER.login_link(server)
        checks.check("runread serves with --public-url and prints the console's login link", bool(login), login)
        if not login:
            return 1
        meta, meta_port = metadata_server(cert, key)
        # chatgpt.com's and pi.dev's documents: port 443 is this namespace's own (never the machine's).
        documents, documents_fetched = agent_documents_server(cert, key) if not args.netns_error else (None, [])

        # The browser finds the public name where the tunnel is, and takes the test CA's
        # certificate there, as a user's browser would take the tunnel's.
        driver = BROWSER.headless_chromium(f"--host-resolver-rules=MAP {PUBLIC_HOST} 127.0.0.1",
                                           "--ignore-certificate-errors")
        wait = WebDriverWait(driver, WAIT_SECS)
        driver.get(login)
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "table.runs")))
        console = f"http://127.0.0.1:{console_port}"
        run_id = next(iter(answers))

        def fetch(url: str) -> tuple[int, dict[str, str], str]:
            req = urllib.request.Request(url)
            opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ca_ctx), NoRedirect)
            try:
                with opener.open(req, timeout=30) as r:
                    return r.status, dict(r.headers), r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, dict(e.headers), e.read().decode()

        def approve_on_console(code: str, reader: str, share: bool) -> None:
            driver.get(f"{console}/connections")
            section = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f"section[data-code='{code}']")))
            name = section.find_element(By.NAME, "name")
            name.clear()
            name.send_keys(reader)
            if share:
                section.find_element(By.NAME, "run").send_keys(run_id)
            section.find_element(By.CSS_SELECTOR, "form.approve button[type=submit]").click()
            wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "p.ok")))

        async def connect_and_read(label: str, metadata: OAuthClientMetadata, metadata_url: str | None,
                                   reader: str, redirect: str) -> None:
            seen: dict[str, str] = {}

            class Storage:
                def __init__(self) -> None:
                    self.tokens = None
                    self.client = None

                async def get_tokens(self):  # type: ignore[no-untyped-def]
                    return self.tokens

                async def set_tokens(self, t):  # type: ignore[no-untyped-def]
                    self.tokens = t

                async def get_client_info(self):  # type: ignore[no-untyped-def]
                    return self.client

                async def set_client_info(self, c):  # type: ignore[no-untyped-def]
                    self.client = c

            async def redirect_handler(url: str) -> None:
                # The browser opens the public page: what the client asks, a code, no run.
                status, headers, html = await asyncio.to_thread(fetch, url)
                code = re.search(r'id="user-code">([A-Z0-9-]+)<', html)
                wait = waiting_page(html)
                checks.check(f"{label}: the public page shows a code and no run", status == 200 and bool(code)
                             and bool(wait) and run_id not in html, f"{status} {html[:300]}")
                checks.check(f"{label}: the public page refuses framing",
                             "frame-ancestors 'none'" in headers.get("content-security-policy", "")
                             and headers.get("x-frame-options") == "DENY", json.dumps(headers))
                seen["code"] = code.group(1) if code else ""
                seen["wait"] = wait or ""
                # The owner approves the request with the same code on the console.
                await asyncio.to_thread(approve_on_console, seen["code"], reader, True)

            async def callback_handler() -> AuthorizationCodeResult:
                # The page refreshes until the owner decided, then continues to the client.
                for _ in range(30):
                    status, headers, _ = await asyncio.to_thread(fetch, f"{public}{seen['wait']}")
                    if status == 303:
                        location = headers.get("Location", headers.get("location", ""))
                        checks.check(f"{label}: the page continues to the registered redirect", location.startswith(redirect + "?"), location)
                        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
                        return AuthorizationCodeResult(code=q.get("code", ""), state=q.get("state"), iss=q.get("iss"))
                    await asyncio.sleep(0.5)
                raise SystemExit(f"{label}: the page never continued")

            provider = OAuthClientProvider(server_url=f"{public}/mcp", client_metadata=metadata, storage=Storage(),
                                           redirect_handler=redirect_handler, callback_handler=callback_handler,
                                           client_metadata_url=metadata_url)
            http = httpx2.AsyncClient(auth=provider, verify=ca_ctx, timeout=30)
            async with http:
                async with Client(streamable_http_client(f"{public}/mcp", http_client=http, terminate_on_close=False),
                                  mode="auto") as client:
                    tools = sorted(t.name for t in (await client.list_tools()).tools)
                    checks.check(f"{label}: the connected client lists the shared run's tools",
                                 "read_final_answer" in tools and "list_granted_targets" in tools, str(tools))
                    target = await reader_mod.pick_target(client, "final_answer")
                    raw, summary = await reader_mod.read_all(client, target, None)
                    expected = answers.get(target["runId"]) or ""
                    checks.check(f"{label}: reads the shared run's final answer, byte for byte",
                                 bool(raw) and raw == expected.encode() and summary["sha256"] == hashlib.sha256(raw).hexdigest(),
                                 f"{raw[:80]!r} vs {expected[:80]!r}")
            checks.check(f"{label}: the client registered how the issue says",
                         bool(seen.get("code")) and provider.context.client_info is not None
                         and (provider.context.client_info.client_id == metadata_url if metadata_url
                              else provider.context.client_info.client_id.startswith("dcr_")),
                         str(provider.context.client_info))
            audit = subprocess.run([runread, "--home", str(home), "audit", "--reader", reader, "--json"],
                                   capture_output=True, text=True, timeout=60)
            checks.check(f"{label}: the audit names the reader of the connector's reads",
                         audit.returncode == 0 and "read_final_answer" in audit.stdout, audit.stdout[-300:] + audit.stderr[-300:])

        dcr_meta = OAuthClientMetadata(client_name="ChatGPT stand-in (DCR)", redirect_uris=["http://localhost:3118/callback"],
                                       grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                       token_endpoint_auth_method="none")
        asyncio.run(connect_and_read("DCR", dcr_meta, None, "chatgpt-dcr", "http://localhost:3118/callback"))
        cimd_url = f"https://localhost:{meta_port}/client.json"
        cimd_meta = OAuthClientMetadata(client_name="ChatGPT stand-in (CIMD)", redirect_uris=["http://localhost:3119/callback"],
                                        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                        token_endpoint_auth_method="none")
        asyncio.run(connect_and_read("CIMD", cimd_meta, cimd_url, "chatgpt-cimd", "http://localhost:3119/callback"))

        # The real coding agents' default OAuth paths: `codex mcp login`, `pi mcp login`.
        t_agents = time.monotonic()
        runs = json.loads(rr("runs", "--json").stdout)
        agents_ctx = {"checks": checks, "public": public, "ca": ca, "tmp": tmp, "fetch": fetch, "approve": approve_on_console,
                      "runread": runread, "home": home, "answer": answers[run_id], "netns_error": args.netns_error,
                      "target": next(r["target"] for r in runs if r["target"]["runId"] == run_id),
                      "documents_fetched": documents_fetched, "observed": []}
        try:
            AgentConnectors(agents_ctx).run()
        except (OSError, ValueError, KeyError, IndexError, subprocess.SubprocessError) as e:
            checks.check("the agents' default OAuth logins ran to the end", False, f"{type(e).__name__}: {e}")
        for line in agents_ctx["observed"]:
            print(f"      {line}", flush=True)
        print(f"      (the agents' cases: {time.monotonic() - t_agents:.1f}s)", flush=True)

        # The official MCP conformance suite's authorization-server scenarios (its only ones for a
        # server's OAuth side), against the public URL, the owner approving on the console.
        conformance_authorization(fetch, approve_on_console, public, ca, tmp, checks)

        # Metadata documents runread must not take.
        verifier_challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

        def authorize_url(client_id: str, redirect: str = "https://a.example/cb") -> str:
            q = urllib.parse.urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": redirect,
                                        "code_challenge": verifier_challenge, "code_challenge_method": "S256",
                                        "resource": f"{public}/mcp", "state": "s"})
            return f"{public}/authorize?{q}"

        for what, url in [
            ("a host not allowed to be private (127.0.0.1)", f"https://127.0.0.1:{meta_port}/client.json"),
            ("a redirect to 169.254.169.254", f"https://localhost:{meta_port}/redirect.json"),
            ("an oversized document", f"https://localhost:{meta_port}/big.json"),
            ("a slow document", f"https://localhost:{meta_port}/slow.json"),
        ]:
            status, headers, html = fetch(authorize_url(url))
            checks.check(f"a metadata document at {what} is invalid_client, no redirect",
                         status == 401 and '<p id="error">invalid_client</p>' in html and "location" not in {k.lower() for k in headers},
                         f"{status} {html[-200:]}")

        # An approval without the console's CSRF token.
        status, _, html = fetch(authorize_url(f"https://localhost:{meta_port}/client.json", "http://localhost:3119/callback"))
        pending = re.search(r"request=([0-9a-f]{64})", html)
        code = re.search(r'id="user-code">([A-Z0-9-]+)<', html)
        driver.get(f"{console}/connections")
        result = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/connections/approve', {method: 'POST', headers: {'content-type': 'application/x-www-form-urlencoded'},"
            " body: 'request=' + arguments[0] + '&name=forged&feature=final_answer&expires=1d'})"
            ".then(r => done(r.status)).catch(e => done(String(e)));",
            pending.group(1) if pending else "")
        driver.get(f"{console}/connections")
        still = bool(code) and f"data-code=\"{code.group(1)}\"" in driver.page_source
        checks.check("an approval without the console's CSRF token is refused and the request still waits",
                     isinstance(result, int) and result >= 400 and still, f"{result} still={still}")
        shots = Path(args.shots)
        shots.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shots / "connections.png"))

        # The public page, framed by another site: the browser refuses to show it.
        page = authorize_url(f"https://localhost:{meta_port}/client.json", "http://localhost:3119/callback")
        driver.get(page)
        shown = driver.find_elements(By.ID, "user-code")
        driver.save_screenshot(str(shots / "authorize.png"))
        framing = tmp / "framing"
        framing.mkdir()
        (framing / "index.html").write_text(f'<!doctype html><iframe id="f" src="{page}" width=800 height=400></iframe>')
        site = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(framing)))
        threading.Thread(target=site.serve_forever, daemon=True).start()
        try:
            driver.get(f"http://127.0.0.1:{site.server_address[1]}/index.html")
            time.sleep(2)  # the frame's navigation settles (its outcome is read below, not timed)
            driver.switch_to.frame("f")
            framed = driver.find_elements(By.ID, "user-code")
            driver.switch_to.default_content()
        finally:
            site.shutdown()
        checks.check("the public page opens in the browser but not inside another site's frame",
                     bool(shown) and not framed, f"shown={len(shown)} framed={len(framed)}")
    finally:
        if driver is not None:
            driver.quit()
        if meta is not None:
            meta.shutdown()
        if documents is not None:
            documents.shutdown()
        if server is not None:
            server.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=10)
            if server.poll() is None:
                server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"connector: {checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runread", required=True, help="the runread binary")
    p.add_argument("--shots", default=str(REPO / "target" / "console-screenshots"))
    p.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--netns-error", default="", help=argparse.SUPPRESS)
    p.add_argument("--in-netns", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.in_venv:
        if not (args.in_netns or args.netns_error):
            # Port 443 and the agents' hosts are the namespace's: never bind the machine's.
            args.netns_error = "not started in the test's network namespace (run connector.py without --in-venv)"
        return main_in_venv(args)
    started = time.monotonic()
    BROWSER.ensure_browser()
    py = ensure_venv()
    # Everything that needs the network is installed here, before the namespace that has none.
    ensure_agents()
    conf = load("conformance_run", CONFORMANCE)
    conf_cache = Path(os.environ.get("RUNREAD_CONFORMANCE_CACHE") or Path.home() / ".cache" / "runread-conformance")
    with conf.cache_lock(conf_cache):
        conf.ensure_npm(conf_cache)
    cmd = [str(py), __file__, "--in-venv", "--runread", str(Path(args.runread).resolve()), "--shots", args.shots]
    with tempfile.TemporaryDirectory(prefix="runread-connector-netns-") as d:
        prefix, error = netns(Path(d))
        rc = subprocess.run(prefix + cmd + (["--netns-error", error] if error else ["--in-netns"])).returncode
    print(f"connector: {time.monotonic() - started:.1f}s in all", flush=True)
    return rc


def netns(d: Path) -> tuple[list[str], str]:
    """The command prefix that runs the suite in a network and mount namespace of its own, where
    NETNS_HOSTS resolve to 127.0.0.1 (a hosts file bind-mounted over /etc/hosts; the machine's is
    untouched) and only loopback exists — so chatgpt.com and pi.dev are the test's servers, and
    nothing reaches the internet. ([], reason) when it cannot be made: the agents' cases then fail
    with the reason, the rest run as before."""
    hosts = d / "hosts"
    real = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else "127.0.0.1 localhost\n"
    hosts.write_text(real.rstrip("\n") + f"\n127.0.0.1 {' '.join(NETNS_HOSTS)}\n")
    prefix = ["unshare", "--user", "--map-root-user", "--net", "--mount", "sh", "-c",
              'mount --bind "$0" /etc/hosts && ip link set lo up && exec "$@"', str(hosts)]
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return [], "unshare or ip (util-linux, iproute2) not found: cannot make the network namespace"
    probe = subprocess.run(prefix + ["getent", "hosts", "chatgpt.com"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0 or not probe.stdout.startswith("127.0.0.1"):
        return [], f"unshare --user --map-root-user --net --mount failed ({probe.returncode}): {(probe.stderr or probe.stdout)[-300:]}"
    return prefix, ""


if __name__ == "__main__":
    sys.exit(main())
