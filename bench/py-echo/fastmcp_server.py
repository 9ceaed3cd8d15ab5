"""The standalone FastMCP peer (PyPI `fastmcp` 4.x) with one tool, `echo`, returning a fixed
CallToolResult read once into memory (the bytes runread's read_final_answer returned); FastMCP
passes a returned CallToolResult through unchanged.

Mode: http_app(stateless_http=True, json_response=True): MCP 2026-07-28 requests served per
request (no initialize, no session), one JSON body each; uvicorn, one worker, access log off.

Usage: python fastmcp_server.py PORT RESULT.json
"""
import json
import sys

import uvicorn
from fastmcp import FastMCP
from mcp_types import CallToolResult

port, result_file = int(sys.argv[1]), sys.argv[2]
with open(result_file, encoding="utf-8") as f:
    RESULT = CallToolResult.model_validate(json.load(f))

mcp = FastMCP("fastmcp-echo")


@mcp.tool(description="Returns a fixed result from memory.")
def echo(target: dict | None = None, limit: int | None = None) -> CallToolResult:
    # The same arguments runread's read_final_answer takes (validated by the SDK), ignored.
    return RESULT


app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)
print(f"listening 127.0.0.1:{port}", flush=True)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
