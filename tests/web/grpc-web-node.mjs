// Node run of grpc-web-client.mjs: node grpc-web-node.mjs <base url> <username>
import { run } from "./grpc-web-client.mjs";

const [baseUrl, user] = process.argv.slice(2);
console.log(JSON.stringify(await run(baseUrl, user)));
// The Watch stream was abandoned mid-way; do not wait for sockets to idle out.
process.exit(0);
