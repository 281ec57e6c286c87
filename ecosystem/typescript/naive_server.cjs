// A server on the official TypeScript SDK (@modelcontextprotocol/sdk), written as its docs teach.
//
//   NODE_PATH=DIR/node_modules node ecosystem/typescript/naive_server.cjs naive|lowlevel
//
// naive: the high-level McpServer; registerTool gets the extension fields in its config beside
//   `_meta`, and the capabilities go in the constructor's options. No handler for the extension
//   methods: the high-level API has none.
// lowlevel: the low-level Server; a tools/list handler returns the tools as plain objects, the
//   capabilities go in the constructor, and setRequestHandler serves middleware/list and
//   augmentation/list through a schema of their own. What reaches the wire is up to the release
//   (ecosystem/probe.py).
"use strict";
const { z } = require("zod");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");

const OBJ = { type: "object", properties: {} };
const CAPABILITIES = { tools: {}, contextMiddleware: {}, augmentation: {} };
const TOOLS = [
  { name: "conformance_memories", description: "preprocessor fixture", inputSchema: OBJ, preprocessor: true,
    _meta: { "conformance/probe": "memories" } },
  { name: "conformance_gated_ok", description: "execution-requirements fixture", inputSchema: OBJ,
    execution: { taskSupport: "forbidden", requirements: ["conformance:satisfied"] },
    _meta: { "conformance/probe": "gated" } },
];
const text = (t) => ({ content: [{ type: "text", text: t }] });

function naive() {
  const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
  const server = new McpServer({ name: "naive-typescript", version: "0.1.0" }, { capabilities: CAPABILITIES });
  for (const { name, description, inputSchema, ...extra } of TOOLS) {
    server.registerTool(name, { description, inputSchema: {}, ...extra }, async () => text("ran"));
  }
  return server;
}

function lowlevel() {
  const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
  const { ListToolsRequestSchema, CallToolRequestSchema } = require("@modelcontextprotocol/sdk/types.js");
  const server = new Server({ name: "lowlevel-typescript", version: "0.1.0" }, { capabilities: CAPABILITIES });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async () => text("ran"));
  const method = (name) => z.object({ method: z.literal(name), params: z.optional(z.object({}).passthrough()) });
  server.setRequestHandler(method("middleware/list"), async () => ({ middleware: [] }));
  server.setRequestHandler(method("augmentation/list"), async () => ({ augmentations: [] }));
  return server;
}

const variant = process.argv[2] || "naive";
const server = variant === "lowlevel" ? lowlevel() : naive();
server.connect(new StdioServerTransport()).catch((err) => {
  console.error(err);
  process.exit(1);
});
