// The test host's one import: ext-apps' own host side (AppBridge, PostMessageTransport), bundled by
// esbuild with what it imports (@modelcontextprotocol/client and /core, zod) into one browser ES module
// (tests/apps/host.py builds it once into its cache).
export { AppBridge, PostMessageTransport, getToolUiResourceUri, RESOURCE_MIME_TYPE } from "@modelcontextprotocol/ext-apps/app-bridge";
