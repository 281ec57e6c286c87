// The client of ecosystem/typescript/naive_client.cjs on the TypeScript SDK's v2 packages
// (@modelcontextprotocol/client); this path is the one the survival rows name.
//
//   NODE_PATH=DIR/node_modules node ecosystem/typescript-v2/naive_client.cjs '["python", "ecosystem/wire_server.py"]'
"use strict";
require("../typescript/naive_client.cjs").main("v2");
