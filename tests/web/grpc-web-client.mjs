// The greeter's gRPC-Web side through Connect's gRPC-Web transport, with
// stubs generated from proto/ (setup.sh). Shared by the Node run
// (grpc-web-node.mjs) and the browser page (grpc-web.html): it takes the
// base URL and returns what each call gave, as JSON-able objects, for the
// Rust test to assert on.
import { createClient, ConnectError } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { Greeter } from "./gen/helloworld/v1/greeter_pb.js";
import { Health } from "./gen/grpc/health/v1/health_pb.js";
import { ErrorInfoSchema, BadRequestSchema } from "./gen/google/rpc/error_details_pb.js";

export async function run(baseUrl, user) {
  const transport = createGrpcWebTransport({ baseUrl });
  const greeter = createClient(Greeter, transport);
  const health = createClient(Health, transport);
  const out = {};
  out.sayHello = (await greeter.sayHello({ name: "web" })).message;
  out.register = (await greeter.userRegister({ username: user, password: "pw" })).result;
  out.duplicate = await failure(() => greeter.userRegister({ username: user, password: "pw" }));
  out.invalid = await failure(() => greeter.userRegister({ username: "", password: "pw" }));
  const list = await greeter.userList({ pageSize: 10 });
  out.users = list.users.map((u) => u.username);
  // Server streaming: the first status of Watch, then hang up.
  for await (const status of health.watch({ service: "helloworld.v1.Greeter" })) {
    out.watch = status.status;
    break;
  }
  return out;
}

async function failure(call) {
  try {
    await call();
    return { ok: true };
  } catch (e) {
    const err = ConnectError.from(e);
    const info = err.findDetails(ErrorInfoSchema)[0];
    const bad = err.findDetails(BadRequestSchema)[0];
    return {
      code: err.code,
      message: err.rawMessage,
      reason: info?.reason,
      domain: info?.domain,
      fields: bad?.fieldViolations.map((v) => v.field),
    };
  }
}
