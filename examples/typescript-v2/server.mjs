// A small MCP server with the context extensions on the TypeScript SDK v2 (@modelcontextprotocol/server), over stdio.
//
//   npm install
//   node server.mjs
//   mcp-ext-conformance server --command "node server.mjs"
//
// It offers a preprocessor tool (`preprocessor: true`), a tool gated by `execution.requirements`, one context
// middleware and one interceptor. SDK: the high-level McpServer drops tool fields it does not know, so this
// uses the low-level Server: its tools/list handler returns plain objects, which reach the wire as they are.
// v2 takes custom methods in setRequestHandler(method, {params: schema}, handler).
import { ProtocolError, Server } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

const SIGNED_IN = "auth:signed_in"; // an opaque requirement string (SEP-2487): matched exactly, never interpreted
const EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/g;
const API_KEY = /\bsk-[A-Za-z0-9]{16,}/;
const OBJECT = { type: "object", properties: {} };
const TOOLS = [
  { name: "current_context", description: "Today's date, for the host to put before every prompt.",
    inputSchema: OBJECT, preprocessor: true },
  { name: "sign_in", description: "Sign in; post_note needs it.", inputSchema: OBJECT },
  { name: "post_note", description: "Post a note (needs a signed-in session).",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    execution: { requirements: [SIGNED_IN] } },
];
const MIDDLEWARE = [{ name: "redact_emails", description: "Replaces e-mail addresses in text blocks with [EMAIL].",
  inputSchema: { type: "object", properties: {}, additionalProperties: false } }];
const INTERCEPTORS = [{ name: "no_api_keys", type: "validation", description: "Rejects payloads carrying an API key.",
  hooks: [{ events: ["tools/call"], phase: "request" }] }];
const satisfied = new Set(); // one stdio process is one session

const invalid = (message) => new ProtocolError(-32602, message);
const text = (value, isError = false) => ({ content: [{ type: "text", text: value }], ...(isError ? { isError } : {}) });
const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

function* strings(value, path = "$") { // every string in a JSON value, with its JSONPath
  if (typeof value === "string") yield [path, value];
  else if (Array.isArray(value)) for (const [i, item] of value.entries()) yield* strings(item, `${path}[${i}]`);
  else if (isObject(value)) for (const [key, item] of Object.entries(value)) yield* strings(item, `${path}.${key}`);
}

function middlewareInvoke({ name, context, arguments: args = {} }) {
  if (name !== "redact_emails") throw invalid(`Unknown middleware: ${JSON.stringify(name)}`);
  if (!Array.isArray(context) || !context.every(isObject)) throw invalid("context must be an array of content blocks");
  if (!isObject(args) || Object.keys(args).length) throw invalid("redact_emails takes no arguments");
  return { content: context.map((b) => (b.type === "text" ? { ...b, text: b.text.replace(EMAIL, "[EMAIL]") } : b)) };
}

function interceptorInvoke(params) {
  const { name, event, phase, config } = params;
  if (name !== "no_api_keys") throw invalid(`Unknown interceptor: ${JSON.stringify(name)}`);
  if (typeof event !== "string" || !["request", "response"].includes(phase) || !("payload" in params)) {
    throw invalid("interceptor/invoke needs name, event, phase and payload");
  }
  if (event !== "tools/call" || phase !== "request") throw invalid(`no_api_keys does not hook ${event} in the ${phase} phase`);
  if (config !== undefined && !(isObject(config) && !Object.keys(config).length)) throw invalid("no_api_keys takes no config");
  const messages = [...strings(params.payload)].filter(([, s]) => API_KEY.test(s))
    .map(([path]) => ({ path, message: "looks like an API key", severity: "error" }));
  return { interceptor: name, type: "validation", phase, valid: !messages.length,
    ...(messages.length ? { severity: "error", messages } : {}) };
}

const server = new Server({ name: "example-typescript-v2", version: "1.0.0" }, {
  // SDK: capabilities are passed through as given, so the extensions' go here.
  capabilities: { tools: {}, contextMiddleware: {},
    extensions: { "io.modelcontextprotocol/interceptors": { supportedEvents: ["tools/call"] } } },
});
server.setRequestHandler("tools/list", async () => ({ tools: TOOLS }));
server.setRequestHandler("tools/call", async ({ params: { name, arguments: args = {} } }) => {
  const tool = TOOLS.find((t) => t.name === name);
  if (!tool) throw invalid(`Unknown tool: ${name}`);
  const unmet = (tool.execution?.requirements ?? []).filter((r) => !satisfied.has(r));
  if (unmet.length) return text(`unmet execution requirements: ${unmet.join(", ")}`, true); // before the body runs
  if (name === "current_context") return text(`Today is ${new Date().toDateString()}.`);
  if (name === "sign_in") { satisfied.add(SIGNED_IN); return text("signed in"); }
  return text(`posted: ${args.text ?? ""}`);
});
// SDK: a custom method's params are parsed with a schema of our own; these pass through unchecked.
const any = { params: z.looseObject({}) };
server.setRequestHandler("middleware/list", any, async () => ({ middleware: MIDDLEWARE }));
server.setRequestHandler("middleware/invoke", any, async (params) => middlewareInvoke(params));
server.setRequestHandler("interceptors/list", any, async (params) => ({ interceptors: INTERCEPTORS.filter(
  (i) => !params.event || i.hooks.some((h) => h.events.includes(params.event) || h.events.includes("*"))) }));
server.setRequestHandler("interceptor/invoke", any, async (params) => interceptorInvoke(params));

await server.connect(new StdioServerTransport());
