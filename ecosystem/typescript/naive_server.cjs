// A server on the official TypeScript SDK, written as its docs teach: on @modelcontextprotocol/sdk (v1),
// or on the v2 packages (@modelcontextprotocol/server) through ecosystem/typescript-v2/naive_server.cjs.
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
//   augmentation/list (empty lists: no middleware is offered): v1 through a schema of their own, v2 as
//   setRequestHandler(method, {params}, handler).
// What reaches the wire is up to the release (ecosystem/probe.py, the suite itself). The two generations
// differ only in their module names and in how a handler names its method (SDKS below).
"use strict";
const { z } = require("zod");

// What differs between the SDK's generations, the rest of the file is the same for both.
const SDKS = {
  v1: {
    suffix: "",
    stdio: () => require("@modelcontextprotocol/sdk/server/stdio.js"),
    McpServer: () => require("@modelcontextprotocol/sdk/server/mcp.js").McpServer,
    Server: () => require("@modelcontextprotocol/sdk/server/index.js").Server,
    inputSchema: (shape) => shape,
    handle: (server, method, handler) => {
      const types = require("@modelcontextprotocol/sdk/types.js");
      const schemas = { "tools/list": types.ListToolsRequestSchema, "tools/call": types.CallToolRequestSchema };
      const own = z.object({ method: z.literal(method), params: z.optional(z.object({}).passthrough()) });
      server.setRequestHandler(schemas[method] || own, handler);
    },
  },
  v2: {
    suffix: "-v2",
    stdio: () => require("@modelcontextprotocol/server/stdio"),
    McpServer: () => require("@modelcontextprotocol/server").McpServer,
    Server: () => require("@modelcontextprotocol/server").Server,
    inputSchema: (shape) => z.object(shape),
    handle: (server, method, handler) => {
      if (method === "tools/list" || method === "tools/call") server.setRequestHandler(method, handler);
      else server.setRequestHandler(method, { params: z.looseObject({}) }, handler);
    },
  },
};

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

function naive(sdk) {
  const McpServer = sdk.McpServer();
  const server = new McpServer({ name: `naive-typescript${sdk.suffix}`, version: "0.1.0" }, { capabilities: CAPABILITIES });
  for (const [name, [, shape, extra, body]] of Object.entries(TOOLS)) {
    server.registerTool(name, { description: `fixture ${name}`, inputSchema: sdk.inputSchema(shape), ...extra },
      async (args) => result(body(args || {})));
  }
  return server;
}

function lowlevel(sdk) {
  const Server = sdk.Server();
  const server = new Server({ name: `lowlevel-typescript${sdk.suffix}`, version: "0.1.0" }, { capabilities: CAPABILITIES });
  const tools = Object.entries(TOOLS).map(([name, [inputSchema, , extra]]) =>
    ({ name, description: `fixture ${name}`, inputSchema, ...extra }));
  sdk.handle(server, "tools/list", async () => ({ tools }));
  sdk.handle(server, "tools/call", async (request) => {
    const tool = TOOLS[request.params.name];
    if (!tool) return result([`unknown tool: ${request.params.name}`, true]);
    return result(tool[3](request.params.arguments || {}));
  });
  sdk.handle(server, "middleware/list", async () => ({ middleware: [] }));
  sdk.handle(server, "augmentation/list", async () => ({ augmentations: [] }));
  return server;
}

// Serve over stdio on the SDK generation `generation` ("v1" or "v2"), as argv names the use of it.
function main(generation) {
  const sdk = SDKS[generation];
  const variant = process.argv[2] || "naive";
  const server = variant === "lowlevel" ? lowlevel(sdk) : naive(sdk);
  const { StdioServerTransport } = sdk.stdio();
  server.connect(new StdioServerTransport()).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { main };
if (require.main === module) main("v1");
