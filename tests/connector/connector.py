#!/usr/bin/env python3
"""A chat assistant's connector, offline: the official Python ``mcp`` SDK's OAuth client
(``OAuthClientProvider``: discovery, registration, PKCE) standing in for ChatGPT or Claude,
reaching runread through a TLS front that stands in for the owner's tunnel, with the owner's
approval given on the console in headless Chromium.

    python3 tests/connector/connector.py --runread target/debug/runread

1. Makes a test CA and a certificate for ``runread.test`` and ``localhost`` (openssl), a home
   holding the Pi ``sample`` fixture, and starts ``runread serve --public-url
   https://runread.test:PORT --cimd-allow-host localhost --console`` (``SSL_CERT_FILE`` names the
   test CA, as a system's roots would). A TLS front on loopback forwards the bytes to runread's
   loopback port, as a tunnel does; ``runread.test`` resolves to it inside this process.
2. Dynamic Client Registration: the SDK connects to the public URL, gets 401, discovers the
   metadata, registers, and sends the browser to the authorization page. The "browser" reads the
   page (its code, nothing of any run); the owner finds the request with that code on the
   console's Connections page, names the reader and shares the run right away; the page continues
   to the client's redirect with the code, ``state`` and ``iss``. The SDK exchanges it (PKCE) and
   reads the run's final answer, checked against the fixture file.
3. Client ID Metadata Document: the same with a client whose id is an HTTPS URL, served by a local
   HTTPS server this test starts (``localhost``, allowed with ``--cimd-allow-host``).
4. The official MCP conformance suite's authorization-server scenarios (``conformance
   authorization``, the suite tests/conformance pins: ``authorization-server-metadata-endpoint`` and
   ``authorization-code-grant``, its only scenarios for a server's OAuth side; its ``auth/*`` ones
   test clients) against the public URL, the owner approving the suite's request on the console.
5. Refusals: a metadata document at a host not allowed to be private (``127.0.0.1``), one that
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
    """A test CA and a server certificate for runread.test and localhost: (ca, cert, key)."""
    ca_key, ca, key, csr, cert, ext = (d / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem", "ext.cnf"))
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=runread test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={PUBLIC_HOST}")
    ext.write_text(f"subjectAltName=DNS:{PUBLIC_HOST},DNS:localhost\nextendedKeyUsage=serverAuth\n")
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
    try:
        # The front first (its port is the public URL's), then runread behind it.
        front = TlsFront(cert, key, mcp_port)
        front_port = front.port
        public = f"https://{PUBLIC_HOST}:{front_port}"
        env = dict(os.environ, SSL_CERT_FILE=str(ca))
        server = subprocess.Popen(
            [runread, "--home", str(home), "serve", "--listen", f"127.0.0.1:{mcp_port}", "--public-url", public,
             "--cimd-allow-host", "localhost", "--console", "--console-listen", f"127.0.0.1:{console_port}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        login = BROWSER.login_link(server)
        checks.check("runread serves with --public-url and prints the console's login link", bool(login), login)
        if not login:
            return 1
        meta, meta_port = metadata_server(cert, key)

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
    args = p.parse_args()
    if args.in_venv:
        return main_in_venv(args)
    BROWSER.ensure_browser()
    py = ensure_venv()
    return subprocess.run([str(py), __file__, "--in-venv", "--runread", args.runread, "--shots", args.shots]).returncode


if __name__ == "__main__":
    sys.exit(main())
