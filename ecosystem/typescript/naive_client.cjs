// A client on the official TypeScript SDK: what its user sees of the extension fields, on
// @modelcontextprotocol/sdk (v1) or on the v2 packages (@modelcontextprotocol/client) through
// ecosystem/typescript-v2/naive_client.cjs.
//
//   NODE_PATH=DIR/node_modules node ecosystem/typescript/naive_client.cjs '["python", "ecosystem/wire_server.py"]'
//
// typed: Client over StdioClientTransport as the docs teach; getServerCapabilities() and listTools().
// raw: client.request() with a result schema that keeps every member (tools/list, the extension
//   methods), and the initialize result read off the transport itself, before any schema.
// Prints one JSON object; ecosystem/probe.py judges it.
"use strict";
const { z } = require("zod");

// What differs between the SDK's generations: module names, and zod's spelling of an open object.
const SDKS = {
  v1: {
    suffix: "",
    Client: () => require("@modelcontextprotocol/sdk/client/index.js").Client,
    StdioClientTransport: () => require("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport,
    anything: () => z.object({}).passthrough(),
  },
  v2: {
    suffix: "-v2",
    Client: () => require("@modelcontextprotocol/client").Client,
    StdioClientTransport: () => require("@modelcontextprotocol/client/stdio").StdioClientTransport,
    anything: () => z.looseObject({}),
  },
};

async function observe(sdk, argv) {
  const [Client, StdioClientTransport, Anything] = [sdk.Client(), sdk.StdioClientTransport(), sdk.anything()];
  const params = { command: argv[0], args: argv.slice(1), stderr: "ignore" };
  const seen = { typed: {}, raw: {}, methods: {} };
  const client = new Client({ name: `naive-typescript${sdk.suffix}-client`, version: "0.1.0" });
  const transport = new StdioClientTransport(params);
  // The raw initialize result: the transport's messages, seen before the client parses them.
  const onmessage = () => transport.onmessage;
  await client.connect({
    start: () => transport.start(),
    send: (m, o) => transport.send(m, o),
    close: () => transport.close(),
    set onmessage(f) { transport.onmessage = (m) => { if (m.result && m.result.capabilities) seen.raw.capabilities = m.result.capabilities; f(m); }; },
    get onmessage() { return onmessage(); },
    set onclose(f) { transport.onclose = f; },
    set onerror(f) { transport.onerror = f; },
  });
  seen.typed.capabilities = client.getServerCapabilities();
  seen.typed.tools = (await client.listTools()).tools;
  try {
    seen.raw.tools = (await client.request({ method: "tools/list", params: {} }, Anything)).tools;
  } catch (err) {
    seen.raw.error = String(err);
  }
  for (const method of ["middleware/list", "augmentation/list"]) {
    try {
      await client.request({ method, params: {} }, Anything);
      seen.methods[method] = "answered";
    } catch (err) {
      seen.methods[method] = String(err).slice(0, 120);
    }
  }
  await client.close();
  return seen;
}

// Print what a client on the SDK generation `generation` ("v1" or "v2") sees of the server argv names.
function main(generation) {
  Promise.resolve().then(() => observe(SDKS[generation], JSON.parse(process.argv[2]))).then(
    (seen) => { console.log(JSON.stringify(seen)); process.exit(0); },
    (err) => { console.error(String(err && err.stack || err)); process.exit(1); },
  );
}

module.exports = { main };
if (require.main === module) main("v1");
