"""The MCP Apps test host's server side (run by tests/apps/host.py in the outside clients' venv, which
holds the official MCP Python SDK): two loopback origins and a relay to `runread serve`.

- Origin A (http://127.0.0.1:PORT_A), the host: `/` is host.html, `/app-bridge.js` the esbuild bundle of
  ext-apps' app-bridge, and `POST /rpc` the relay: `{"method", "params"}` (plus, for the test's own
  probes, `"key"` naming a key file and `"announce": false`) is sent to runread's /mcp by the Python SDK
  (MCP 2026-07-28) as a client that announces `io.modelcontextprotocol/ui` (unless told not to) and
  answered as `{"result": …}` or `{"error": {"code", "message"}}`. The page's AppBridge (made with no
  MCP client) forwards the view's `tools/call` here, same-origin: no CORS needed on runread.
- Origin B (http://localhost:PORT_B), the sandbox proxy: `/sandbox.html?csp=JSON`, sent with the
  Content-Security-Policy header built from the resource's `_meta.ui.csp` (the spec's restrictive
  default plus declared domains).
- `POST /control` (origin A): `{"hold": true}` makes the relay hold every later `tools/call` that
  carries a cursor (a next chunk) until `{"hold": false}`; `GET /control` says how many are held.

Every JSON-RPC request the SDK sends is appended to the --trace file (one JSON line each).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
from mcp import Client, Implementation
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

HERE = Path(__file__).resolve().parent
UI_EXTENSION = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
MODE = "2026-07-28"

# The host policy for a view (MCP Apps spec, "Host Behavior": the restrictive default, which allows
# nothing remote), widened only by the domains the resource declares.
BASE_CSP = {
    "default-src": ["'none'"],
    "script-src": ["'unsafe-inline'"],
    "style-src": ["'unsafe-inline'"],
    "img-src": ["data:"],
    "media-src": ["data:"],
    "font-src": ["'none'"],
    "connect-src": ["'none'"],
    "frame-src": ["'none'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'none'"],
}


def clean_domains(v: object) -> list[str]:
    # As basic-host does: a domain with a quote, separator or space is dropped.
    return [d for d in (v if isinstance(v, list) else []) if isinstance(d, str) and d
            and not any(c in d for c in ";\r\n'\" ,")]


def csp_header(csp: dict) -> str:
    policy = {k: list(v) for k, v in BASE_CSP.items()}

    def widen(directive: str, domains: list[str]) -> None:
        if domains:
            policy[directive] = [d for d in policy[directive] if d != "'none'"] + domains

    res = clean_domains(csp.get("resourceDomains"))
    for d in ("script-src", "style-src", "img-src", "media-src", "font-src"):
        widen(d, res)
    widen("connect-src", clean_domains(csp.get("connectDomains")))
    widen("frame-src", clean_domains(csp.get("frameDomains")))
    widen("base-uri", clean_domains(csp.get("baseUriDomains")))
    return "; ".join(f"{k} {' '.join(v)}" for k, v in policy.items())


class Relay:
    def __init__(self, url: str, key_file: Path, trace: Path | None) -> None:
        self.url = url
        self.key_file = key_file
        self.trace = trace
        self.trace_lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.hold = threading.Event()  # set: next chunks are let through
        self.hold.set()
        self.held = 0
        self.calls = 0

    async def _trace(self, request: httpx2.Request) -> None:
        if self.trace is None:
            return
        body = request.content.decode("utf-8", "replace")
        with self.trace_lock, self.trace.open("a") as f:
            f.write(json.dumps({"headers": {k: v for k, v in request.headers.items() if k.lower() != "x-runread-key"},
                                "body": body}) + "\n")

    async def _call(self, key: str, announce: bool, method: str, params: dict) -> dict:
        http = httpx2.AsyncClient(headers={"x-runread-key": key}, event_hooks={"request": [self._trace]}, timeout=60)
        ext = [advertise(UI_EXTENSION, {"mimeTypes": [MIME]})] if announce else None
        async with http:
            transport = streamable_http_client(self.url, http_client=http, terminate_on_close=False)
            async with Client(transport, mode=MODE, cache=None, extensions=ext,
                              client_info=Implementation(name="runread-apps-test-host", version="1")) as client:
                try:
                    if method == "tools/list":
                        r = await client.list_tools()
                    elif method == "tools/call":
                        r = await client.call_tool(params["name"], params.get("arguments") or {})
                    elif method == "resources/read":
                        r = await client.read_resource(params["uri"])
                    elif method == "resources/list":
                        r = await client.list_resources()
                    else:
                        return {"error": {"code": -32601, "message": f"the relay does not forward {method}"}}
                except MCPError as e:
                    err = getattr(e, "error", None)
                    return {"error": {"code": getattr(err, "code", None), "message": getattr(err, "message", str(e)),
                                      "data": getattr(err, "data", None)}}
                return {"result": r.model_dump(mode="json", by_alias=True, exclude_none=True)}

    def call(self, body: dict) -> dict:
        method, params = body.get("method"), body.get("params") or {}
        if method == "tools/call" and (params.get("arguments") or {}).get("cursor"):
            self.held += 1
            self.hold.wait(120)
            self.held -= 1
        self.calls += 1
        key_file = Path(body["key"]) if body.get("key") else self.key_file
        key = key_file.read_text().strip()
        fut = asyncio.run_coroutine_threadsafe(self._call(key, body.get("announce", True), method, params), self.loop)
        try:
            return fut.result(90)
        except Exception as e:  # noqa: BLE001 — reported to the page and the test as is
            while hasattr(e, "exceptions") and len(e.exceptions) == 1:
                e = e.exceptions[0]
            return {"error": {"code": None, "message": f"relay: {type(e).__name__}: {e}"[:800]}}


def handler(relay: Relay, bundle: Path, origin: str):  # type: ignore[no-untyped-def]
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def send(self, code: int, ctype: str, body: bytes, extra: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            u = urllib.parse.urlsplit(self.path)
            if origin == "host" and u.path == "/":
                self.send(200, "text/html; charset=utf-8", (HERE / "host.html").read_bytes())
            elif origin == "host" and u.path == "/app-bridge.js":
                self.send(200, "text/javascript; charset=utf-8", bundle.read_bytes())
            elif origin == "host" and u.path == "/control":
                self.send(200, "application/json", json.dumps({"held": relay.held, "calls": relay.calls}).encode())
            elif origin == "sandbox" and u.path == "/sandbox.html":
                q = urllib.parse.parse_qs(u.query).get("csp", ["{}"])[0]
                try:
                    csp = json.loads(q)
                except ValueError:
                    csp = {}
                self.send(200, "text/html; charset=utf-8", (HERE / "sandbox.html").read_bytes(),
                          {"Content-Security-Policy": csp_header(csp if isinstance(csp, dict) else {})})
            else:
                self.send(404, "text/plain", b"not found")

        def do_POST(self) -> None:  # noqa: N802
            if origin != "host":
                return self.send(404, "text/plain", b"not found")
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path == "/rpc":
                self.send(200, "application/json", json.dumps(relay.call(body)).encode())
            elif self.path == "/control":
                if body.get("hold"):
                    relay.hold.clear()
                else:
                    relay.hold.set()
                self.send(200, "application/json", b"{}")
            else:
                self.send(404, "text/plain", b"not found")

    return H


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mcp", required=True, help="runread's MCP endpoint")
    p.add_argument("--key-file", required=True, type=Path, help="the host's reader key")
    p.add_argument("--bundle", required=True, type=Path)
    p.add_argument("--host-port", type=int, required=True)
    p.add_argument("--sandbox-port", type=int, required=True)
    p.add_argument("--trace", type=Path)
    a = p.parse_args()
    relay = Relay(a.mcp, a.key_file, a.trace)
    host = ThreadingHTTPServer(("127.0.0.1", a.host_port), handler(relay, a.bundle, "host"))
    sandbox = ThreadingHTTPServer(("127.0.0.1", a.sandbox_port), handler(relay, a.bundle, "sandbox"))
    threading.Thread(target=sandbox.serve_forever, daemon=True).start()
    print("relay ready", flush=True)
    host.serve_forever()


if __name__ == "__main__":
    main()
