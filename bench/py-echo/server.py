"""The Python peer: the official MCP SDK's MCPServer (FastMCP, renamed in mcp 2.x) with one tool,
`echo`, returning a fixed CallToolResult read once into memory (the bytes runread's
read_final_answer returned).

Mode: streamable_http_app(stateless_http=True, json_response=True): MCP 2026-07-28 requests are
served per request (no initialize, no session), answered with one JSON body; uvicorn, one worker,
its default loop and HTTP parser, access log off.

Usage: python server.py PORT RESULT.json
"""
import json
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

port, result_file = int(sys.argv[1]), sys.argv[2]
with open(result_file, encoding="utf-8") as f:
    RESULT = CallToolResult.model_validate(json.load(f))

mcp = MCPServer("py-echo")


@mcp.tool(description="Returns a fixed result from memory.")
def echo(target: dict | None = None, limit: int | None = None) -> CallToolResult:
    # The same arguments runread's read_final_answer takes (validated by the SDK), ignored.
    return RESULT


app = mcp.streamable_http_app(json_response=True, stateless_http=True)
print(f"listening 127.0.0.1:{port}", flush=True)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
