// The package in a browser: headless Chromium (Debian's, which tools/setup.sh test installs) loads
// dist/index.js from a plain HTTP server — no cross-origin isolation headers, as the module needs
// no SharedArrayBuffer — the module fetches its .wasm beside itself, runs every example, and its
// answers must be the native reference's: the same bits, or the same refusal.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { basename, extname, join, normalize } from "node:path";
import { after, before, test } from "node:test";

import { assertSameOutcome, examples, nativeRun, packageDir, WHY } from "./native.js";

const chromium = process.env.CHROMIUM ?? "chromium";
const documents = examples;

const page = `<!doctype html><html><body>running<script type="module">
import { loadReference } from "/dist/index.js";
const results = {};
try {
  const reference = await loadReference();
  for (const [i, name] of ${JSON.stringify(documents.map((f) => basename(f)))}.entries()) {
    const text = await (await fetch("/document/" + i)).text();
    try {
      results[name] = reference.run(text, { tier: "prod", whyNoWebGPU: ${JSON.stringify(WHY)} });
    } catch (e) {
      if (!e.diagnostics) throw e;
      results[name] = { ok: false, diagnostics: e.diagnostics };
    }
  }
} catch (e) {
  results.error = String(e) + " " + (e.diagnostics ? JSON.stringify(e.diagnostics) : "");
}
const bytes = new TextEncoder().encode(JSON.stringify(results));
document.body.textContent = "RESULTS:" + btoa(String.fromCharCode(...bytes)) + ":END";
</script></body></html>`;

const types: Record<string, string> = { ".js": "text/javascript", ".wasm": "application/wasm", ".map": "application/json" };
let server: Server;
let origin = "";

before(async () => {
  server = createServer((req, res) => {
    const url = req.url ?? "/";
    const doc = /^\/document\/(\d+)$/.exec(url);
    if (url === "/") {
      res.writeHead(200, { "Content-Type": "text/html" }).end(page);
    } else if (doc && Number(doc[1]) < documents.length) {
      res.writeHead(200, { "Content-Type": "application/json" }).end(readFileSync(documents[Number(doc[1])]));
    } else if (url.startsWith("/dist/") && normalize(url) === url && types[extname(url)]) {
      try {
        res.writeHead(200, { "Content-Type": types[extname(url)] }).end(readFileSync(join(packageDir, url)));
      } catch {
        res.writeHead(404).end();
      }
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

// Chromium prints the page's DOM once its virtual time budget has run out.
function dumpDom(url: string): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), "scellis-wasm-chromium-"));
  const child = spawn(chromium, ["--headless=new", "--no-sandbox", "--disable-gpu", `--user-data-dir=${profile}`,
    "--virtual-time-budget=60000", "--dump-dom", url], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  return new Promise((done, fail) => {
    child.on("error", fail);
    child.on("close", (code) => {
      clearTimeout(timer);
      rmSync(profile, { recursive: true, force: true });
      code === 0 ? done(out) : fail(new Error(`${chromium} exited with ${code}: ${err.slice(-2000)}`));
    });
  });
}

const present = spawnSync(chromium, ["--version"], { encoding: "utf8" }).status === 0;

test("in headless Chromium: every example, the native reference's answer bit for bit",
  { skip: present ? false : `${chromium} is not installed (tools/setup.sh test installs it; CHROMIUM names another)` },
  async () => {
    const dom = await dumpDom(origin + "/");
    const encoded = /RESULTS:([A-Za-z0-9+/=]*):END/.exec(dom);
    assert.ok(encoded, `the page did not finish: ${dom.slice(0, 2000)}`);
    const results = JSON.parse(Buffer.from(encoded[1], "base64").toString("utf8"));
    assert.equal(results.error, undefined, results.error);
    assert.deepEqual(Object.keys(results).sort(), documents.map((f) => basename(f)).sort());
    for (const file of documents) assertSameOutcome(results[basename(file)], nativeRun(file, ["--tier=prod"]));
  });
