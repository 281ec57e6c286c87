// A server on the official TypeScript SDK (@modelcontextprotocol/sdk), written as its docs teach.
//
//   NODE_PATH=DIR/node_modules node ecosystem/typescript/naive_server.cjs naive|lowlevel
//
// It serves the suite's preprocessor and execution-requirements fixtures (conformance_memories,
// conformance_echo, the gated tools, conformance_side_effects) with the fixtures' behaviour, so
// the suite can judge it, and puts the extension fields where each use of the SDK lets it:
// naive: the high-level McpServer; registerTool gets the extension fields in its config beside
//   `_meta`, the capabilities go in the constructor's options. No handler for the extension
//   methods: the high-level API has none.
// lowlevel: the low-level Server; a tools/list handler returns the tools as plain objects, the
//   capabilities go in the constructor, and setRequestHandler serves middleware/list and
//   augmentation/list through a schema of their own (empty lists: no middleware is offered).
// What reaches the wire is up to the release (ecosystem/probe.py, the suite itself).
"use strict";
const { z } = require("zod");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");

const SATISFIED = new Set(["conformance:satisfied"]);
const GATED = {
  conformance_gated_ok: ["conformance:satisfied"],
  conformance_gated_unmet: ["conformance:unsatisfied"],
  conformance_gated_mixed: ["conformance:satisfied", "conformance:unsatisfied"],
  conformance_gated_case: ["Conformance:Satisfied"],
};
const OBJ = { type: "object", properties: {} };
const CAPABILITIES = { tools: {}, contextMiddleware: {}, augmentation: {},
  extensions: { "io.modelcontextprotocol/interceptors": { supportedEvents: ["tools/call"] } } };
let runs = 0;

// name -> [JSON Schema, zod shape (McpServer), extension fields, body]
const TOOLS = {
  conformance_memories: [
    { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    { query: z.string() }, { preprocessor: true, _meta: { "conformance/probe": "memories" } },
    (args) => [`conformance memories for: ${args.query}`, false],
  ],
  conformance_echo: [
    { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    { text: z.string() }, {}, (args) => [String(args.text), false],
  ],
  ...Object.fromEntries(Object.entries(GATED).map(([name, requirements]) => [name, [
    OBJ, {}, { execution: { taskSupport: "forbidden", requirements }, _meta: { "conformance/probe": "gated" } },
    () => {
      const unmet = requirements.filter((r) => !SATISFIED.has(r));
      if (unmet.length) return [`unmet execution requirements: ${unmet.join(", ")}`, true];
      runs += 1;
      return ["ran", false];
    },
  ]])),
  conformance_side_effects: [OBJ, {}, {}, () => [String(runs), false]],
};
const result = ([text, isError]) => ({ content: [{ type: "text", text }], ...(isError ? { isError: true } : {}) });

function naive() {
  const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
  const server = new McpServer({ name: "naive-typescript", version: "0.1.0" }, { capabilities: CAPABILITIES });
  for (const [name, [, shape, extra, body]] of Object.entries(TOOLS)) {
    server.registerTool(name, { description: `fixture ${name}`, inputSchema: shape, ...extra },
      async (args) => result(body(args || {})));
  }
  return server;
}

function lowlevel() {
  const { Server } = require("@modelcontextprotocol/sdk/server/index.js");
  const { ListToolsRequestSchema, CallToolRequestSchema } = require("@modelcontextprotocol/sdk/types.js");
  const server = new Server({ name: "lowlevel-typescript", version: "0.1.0" }, { capabilities: CAPABILITIES });
  const tools = Object.entries(TOOLS).map(([name, [inputSchema, , extra]]) =>
    ({ name, description: `fixture ${name}`, inputSchema, ...extra }));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = TOOLS[request.params.name];
    if (!tool) return result([`unknown tool: ${request.params.name}`, true]);
    return result(tool[3](request.params.arguments || {}));
  });
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
