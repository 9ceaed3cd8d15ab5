// The TypeScript SDK peer: @modelcontextprotocol/server (v2) with one tool, `echo`, returning a
// fixed CallToolResult read once into memory (the bytes runread's read_final_answer returned).
//
// Mode: createMcpHandler (MCP 2026-07-28 per-request serving, no session, no initialize),
// responseMode "json" (never SSE), legacy "reject", mounted on plain node:http with
// toNodeHandler from @modelcontextprotocol/node. The SDK builds a fresh McpServer per request
// from the factory: that is its design for this entry.
//
// Usage: node server.mjs PORT RESULT.json   (env BENCH_NODE_MODULES: the npm prefix's node_modules)
import http from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const mods = process.env.BENCH_NODE_MODULES;
const load = (p) => import(pathToFileURL(join(mods, p)).href);
const { McpServer, createMcpHandler } = await load("@modelcontextprotocol/server/dist/index.mjs");
const { toNodeHandler } = await load("@modelcontextprotocol/node/dist/index.mjs");

const [port, resultFile] = process.argv.slice(2);
const result = JSON.parse(readFileSync(resultFile, "utf8"));

const factory = () => {
  const server = new McpServer({ name: "ts-echo", version: "1.0.0" });
  server.registerTool("echo", { description: "Returns a fixed result from memory." }, async () => result);
  return server;
};
const handler = createMcpHandler(factory, { legacy: "reject", responseMode: "json" });
const serve = toNodeHandler(handler);
const httpServer = http.createServer((req, res) => {
  if (req.url !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  void serve(req, res);
});
httpServer.keepAliveTimeout = 60_000;
httpServer.listen(Number(port), "127.0.0.1", () => console.log(`listening 127.0.0.1:${port}`));
