// The browser-side acceptance tests, in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core; no browser download):
//
//   node browser.mjs grpc-web <greeter url> <page port> <username>
//   node browser.mjs swagger  <greeter url> <page port> <username>
//
// A static server on 127.0.0.1:<page port> (another origin than the
// greeter, so every call is cross-origin and needs CORS) serves this
// directory: the gRPC-Web page (grpc-web.html, the Connect client of
// grpc-web-client.mjs with an import map onto node_modules) or Swagger UI
// (swagger-ui-dist) pointed at <greeter url>/openapi.json. Prints one JSON
// line of results; on failure writes a screenshot and prints its path.
import { createServer } from "node:http";
import { readFile, mkdir } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const [mode, greeter, pagePort, user] = process.argv.slice(2);
const root = fileURLToPath(new URL(".", import.meta.url));
const types = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json" };

const swaggerPage = `<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/node_modules/swagger-ui-dist/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/node_modules/swagger-ui-dist/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: ${JSON.stringify(greeter + "/openapi.json")}, dom_id: "#ui" });</script>
</body></html>`;

const server = createServer(async (req, res) => {
  const path = new URL(req.url, "http://x").pathname;
  if (path === "/swagger.html") {
    res.writeHead(200, { "content-type": "text/html" });
    return res.end(swaggerPage);
  }
  const file = normalize(join(root, path));
  if (!file.startsWith(root)) {
    res.writeHead(403);
    return res.end();
  }
  try {
    const body = await readFile(file);
    res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((ok) => server.listen(Number(pagePort), "127.0.0.1", ok));
const origin = `http://127.0.0.1:${pagePort}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage();
const console_ = [];
page.on("console", (m) => console_.push(`${m.type()}: ${m.text()}`));
page.on("pageerror", (e) => console_.push(`pageerror: ${e.message}`));
let failed = null;
try {
  if (mode === "grpc-web") {
    await page.goto(`${origin}/grpc-web.html`);
    const result = await page.evaluate(
      async ([url, name]) => window.runGreeter(url, name),
      [greeter, user],
    );
    console.log(JSON.stringify({ origin: await page.evaluate(() => location.origin), ...result }));
  } else if (mode === "swagger") {
    console.log(JSON.stringify(await swagger(page)));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
} catch (e) {
  failed = e;
} finally {
  if (failed) {
    await mkdir(join(root, "screenshots"), { recursive: true });
    const shot = join(root, "screenshots", `${mode}-${Date.now()}.png`);
    await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
    console.error(`FAILED: ${failed.stack ?? failed}\nscreenshot: ${shot}\nconsole:\n${console_.join("\n")}`);
  }
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);

/// Swagger UI: the spec loads (title shown), then "Try it out" on SayHello
/// and UserRegister, each executed; the status codes the UI shows.
async function swagger(page) {
  await page.goto(`${origin}/swagger.html`);
  await page.waitForSelector(".info .title", { timeout: 15000 });
  const title = (await page.textContent(".info .title")).trim();
  const out = { title };
  out.sayHello = await tryItOut(page, "Greeter_SayHello", async (op) => {
    await op.locator('input[placeholder="name"]').fill("swagger");
  });
  out.userRegister = await tryItOut(page, "Greeter_UserRegister", async (op) => {
    await op.locator("textarea.body-param__text").fill(JSON.stringify({ username: user, password: "pw" }));
  });
  return out;
}

async function tryItOut(page, operationId, fill) {
  const op = page.locator(`#operations-Greeter-${operationId}`);
  await op.locator(".opblock-summary").first().click();
  await op.locator("button.try-out__btn").click();
  await fill(op);
  await op.locator("button.execute").click();
  const code = op.locator(".live-responses-table .response .response-col_status").first();
  await code.waitFor({ timeout: 15000 });
  const body = await op.locator(".live-responses-table .response .response-col_description pre").first().textContent();
  return { status: (await code.textContent()).trim(), body: body.trim() };
}
