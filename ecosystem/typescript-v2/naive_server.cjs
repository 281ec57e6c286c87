// The naive and low-level servers of ecosystem/typescript/naive_server.cjs on the TypeScript SDK's v2 packages
// (@modelcontextprotocol/server); this path is the one the survival rows and the dashboard's runs name.
//
//   NODE_PATH=DIR/node_modules node ecosystem/typescript-v2/naive_server.cjs naive|lowlevel
"use strict";
require("../typescript/naive_server.cjs").main("v2");
