// The Studio in a real browser: `scellis studio` on a free port with a temporary store, the built
// canvas (web/dist) driven by Chromium through playwright-core. WebGPU in the tab runs on
// SwiftShader, the software Vulkan driver Debian's chromium ships, behind the Studio's opt-in for
// software adapters.
//
//   SCELLIS_BUILD=build node --test tests/studio/
//
// SCELLIS_BUILD names the build directory (default `build`); the canvas must be built
// (`npm --prefix web run build`). With SCELLIS_SCREENSHOTS=DIR the cases save PNGs of what they
// see into DIR (docs/images/ holds the committed ones).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const { chromium } = await import(pathToFileURL(path.join(repo, 'web/node_modules/playwright-core/index.mjs')).href);

const build = path.resolve(repo, process.env.SCELLIS_BUILD ?? 'build');
const scellis = path.join(build, 'scellis');
const webDist = path.join(repo, 'web/dist');
const chromiumPath = process.env.SCELLIS_CHROMIUM ?? '/usr/bin/chromium';
const swiftshader = process.env.VK_ICD_FILENAMES ?? '/usr/lib/chromium/vk_swiftshader_icd.json';
const screenshots = process.env.SCELLIS_SCREENSHOTS ? path.resolve(process.env.SCELLIS_SCREENSHOTS) : null;
const VIEWPORT = { width: 1280, height: 800 };
// SwiftShader compiles each pipeline on the CPU; a whole in-tab run takes seconds on two cores.
const SLOW = 60_000;

const example = (name) => JSON.parse(readFileSync(path.join(repo, 'examples', `${name}.json`), 'utf8'));
const errorCase = (name) => JSON.parse(readFileSync(path.join(repo, 'tests/errors', `${name}.json`), 'utf8'));

// ---------------------------------------------------------------- the server and the browsers

let studio; // { proc, base, store, log }
let gpuBrowser; // a persistent context with WebGPU on SwiftShader
const temporary = [];

function tempDir(prefix) {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  temporary.push(dir);
  return dir;
}

async function startStudio() {
  const store = tempDir('scellis-studio-store-');
  const proc = spawn(scellis, ['studio', '--port', '0', '--store', store, '--web-dir', webDist], {
    env: { ...process.env, VK_ICD_FILENAMES: swiftshader },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`scellis studio did not start in 30 s:\n${log}`)), 30_000);
    const onData = (chunk) => {
      log += chunk;
      const m = /serving on (http:\/\/[0-9.]+:\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`scellis studio exited (${code}) before serving:\n${log}`));
    });
  });
  return { proc, base, store, log: () => log };
}

async function stopStudio(s) {
  if (!s || s.proc.exitCode !== null) return;
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGTERM');
  const timer = setTimeout(() => s.proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

// A fresh Chromium profile each launch; WebGPU only when asked, and then on SwiftShader.
async function launch({ webgpu }) {
  const args = ['--headless=new', '--no-sandbox'];
  args.push(webgpu ? '--enable-unsafe-webgpu' : '--disable-features=WebGPU');
  return chromium.launchPersistentContext(tempDir('scellis-chromium-'), {
    executablePath: chromiumPath,
    headless: true,
    args,
    env: { ...process.env, VK_ICD_FILENAMES: swiftshader },
    viewport: VIEWPORT,
  });
}

// The viewport as it is, saved as DIR/<name>.png when SCELLIS_SCREENSHOTS=DIR.
async function shot(page, name) {
  if (!screenshots) return;
  mkdirSync(screenshots, { recursive: true });
  await page.screenshot({ path: path.join(screenshots, `${name}.png`) });
}

before(async () => {
  assert.ok(existsSync(scellis), `no ${scellis}: build the scellis target (SCELLIS_BUILD names the build directory)`);
  assert.ok(existsSync(path.join(webDist, 'index.html')), 'web/dist is not built: npm --prefix web run build');
  studio = await startStudio();
  gpuBrowser = await launch({ webgpu: true });
});

after(async () => {
  await gpuBrowser?.close();
  await stopStudio(studio);
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------- page helpers

// A page of the Studio with the op table and the gallery loaded and the first validation done.
// With softwareAdapter, the page starts opted in to SwiftShader (the setting the probe panel's box
// keeps in local storage), as a user who ticked it before.
async function openStudio(context, url = '/', { softwareAdapter = false } = {}) {
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  if (softwareAdapter) await page.addInitScript(() => localStorage.setItem('scellis.allowSoftwareAdapter', 'true'));
  await page.goto(studio.base + url);
  await page.getByTestId('palette-matmul').waitFor();
  await waitValidated(page);
  return page;
}

async function waitValidated(page, state = 'ok') {
  const status = page.getByTestId('validation-status');
  await assertEventually(async () => (await status.getAttribute('data-state')) === state, () => status.textContent(), `validation ${state}`);
}

// Validation has answered for the canvas as it is now, whatever its verdict.
async function settled(page) {
  const status = page.getByTestId('validation-status');
  await assertEventually(async () => (await status.getAttribute('data-state')) !== 'pending', () => status.textContent(), 'validation settled');
}

async function assertEventually(check, describe, what, timeout = 20_000) {
  const end = Date.now() + timeout;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) assert.fail(`${what}: not reached in ${timeout} ms (last: ${await describe()})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The software adapter is a GPU to the Studio only once the user opts in (the probe panel's box).
async function optInToSoftwareAdapter(page) {
  const banner = page.getByTestId('banner');
  await banner.waitFor();
  assert.match(await banner.textContent(), /swiftshader, a software rasterizer/);
  await page.getByTestId('panel-tab-probe').click();
  await page.getByTestId('allow-software').check();
  await assertEventually(
    async () => /runs in the tab/.test(await page.getByTestId('probe-browser-verdict').textContent()),
    () => page.getByTestId('probe-browser-verdict').textContent(),
    'the tab accepts the software adapter',
  );
  await banner.waitFor({ state: 'hidden' });
}

async function centerOf(locator) {
  const b = await locator.boundingBox();
  assert.ok(b, 'element is not laid out');
  return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
}

// Draws a wire with the mouse, from a node's output handle to an input port ("node.port").
async function drawWire(page, from, to, { release = true } = {}) {
  const [node, port] = to.split('.');
  const a = await centerOf(page.getByTestId(`port-${from}-out`));
  const b = await centerOf(page.getByTestId(`port-${node}-${port}`));
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2, { steps: 5 });
  await page.mouse.move(b.x, b.y, { steps: 5 });
  if (release) await page.mouse.up();
}

// Drags a node by its header so that its top-left corner lands at (x, y) in the canvas.
async function moveNode(page, id, x, y) {
  const canvas = await page.getByTestId('canvas').boundingBox();
  const head = page.getByTestId(`node-${id}`).locator('.op-node-head');
  const grip = await head.boundingBox();
  const node = await page.getByTestId(`node-${id}`).boundingBox();
  const dx = grip.x + 8 - node.x;
  const dy = grip.y + grip.height / 2 - node.y;
  await page.mouse.move(grip.x + 8, grip.y + grip.height / 2);
  await page.mouse.down();
  await page.mouse.move(canvas.x + x + dx, canvas.y + y + dy, { steps: 8 });
  await page.mouse.up();
}

// Selects a wire from the keyboard (Tab to it, Enter), as a user does where wires run close
// together and a click could take a neighbour.
async function selectEdge(page, id) {
  const edge = page.getByTestId(`rf__edge-${id}`);
  await edge.focus();
  await page.keyboard.press('Enter');
  await assertEventually(async () => /\bselected\b/.test(await edge.getAttribute('class')), () => edge.getAttribute('class'), `wire ${id} selected`);
}

const edgeCount = (page) => page.locator('.react-flow__edge').count();

async function selectNode(page, id) {
  await page.getByTestId(`node-${id}`).locator('.op-node-head').click();
  await page.getByTestId('inspector').locator('code', { hasText: id }).first().waitFor();
}

async function setAttr(page, id, attr, text) {
  const field = page.getByTestId(`attr-${id}-${attr}`);
  await field.fill(text);
  assert.equal(await page.getByTestId(`attr-error-${attr}`).count(), 0, `${id}.${attr} = ${text} was refused`);
}

async function setOutput(page, id, name) {
  await selectNode(page, id);
  await page.getByTestId('output-name').fill(name);
  await page.getByTestId('output-name').press('Enter');
  await page.getByTestId(`node-${id}`).getByText(`output “${name}”`).waitFor();
}

const numbers = (text) => text.trim().split(/\s+/).map(Number);

async function tableValues(page, testid) {
  const table = page.getByTestId(testid);
  await table.waitFor();
  return numbers(await table.getAttribute('data-values'));
}

function assertClose(got, want, what, { rtol = 2e-5, atol = 1e-6 } = {}) {
  assert.equal(got.length, want.length, `${what}: ${got.length} values, expected ${want.length}`);
  for (let i = 0; i < want.length; ++i) {
    const ok = Math.abs(got[i] - want[i]) <= atol + rtol * Math.abs(want[i]);
    assert.ok(ok, `${what}[${i}] = ${got[i]}, expected ${want[i]} (all: ${got.join(' ')} vs ${want.join(' ')})`);
  }
}

// ---------------------------------------------------------------- independent expectations

// The engine's counter-based generator (SplitMix64's finalizer over seed and counter, 24 bits to
// [0, 1)), written again here so that parameter values come from the seed, not from the engine.
const MASK = (1n << 64n) - 1n;
function counterUniform(seed, counter) {
  let z = (BigInt(seed) * 0x9e3779b97f4a7c15n + BigInt(counter) + 0x632be59bd9b4e019n) & MASK;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  z ^= z >> 31n;
  z = ((z + 0x9e3779b97f4a7c15n) * 0xbf58476d1ce4e5b9n) & MASK;
  z ^= z >> 29n;
  return Number(z >> 40n) / 16777216;
}

// center_columns in float64: centered = x - mean over rows; y = centered · w, w uniform(-1, 1,
// seed 7) stored as f32.
function centerColumnsExpected() {
  const N = 4, D = 3, K = 2;
  const x = Array.from({ length: N * D }, (_, i) => i + 1);
  const mean = Array.from({ length: D }, (_, j) => x.filter((_, i) => i % D === j).reduce((s, v) => s + v, 0) / N);
  const centered = x.map((v, i) => v - mean[i % D]);
  const w = Array.from({ length: D * K }, (_, i) => Math.fround(-1 + Math.fround(2 * counterUniform(7, i))));
  const y = [];
  for (let i = 0; i < N; ++i)
    for (let k = 0; k < K; ++k) {
      let s = 0;
      for (let j = 0; j < D; ++j) s += centered[i * D + j] * w[j * K + k];
      y.push(s);
    }
  return { centered, y };
}

// A uniform initializer as the engine draws it in f32; kaiming_uniform is U(±1/sqrt(fan_in)).
function uniformInit(count, seed, low, high) {
  const lo = Math.fround(low);
  const span = Math.fround(high - low);
  return Array.from({ length: count }, (_, i) => Math.fround(lo + Math.fround(span * counterUniform(seed, i))));
}

// mlp_step's loss before any update, in float64: mean cross-entropy of
// relu(x·w1 + b1)·w2 + b2 against the labels.
function mlpStepInitialLoss() {
  const doc = example('mlp_step');
  const param = (id) => doc.nodes.find((n) => n.id === id).params;
  const { N, D, H, C } = doc.dims;
  const x = param('x').data;
  const labels = param('labels').data;
  const kaiming = (id, fanIn, count) => uniformInit(count, param(id).init.seed, -1 / Math.sqrt(fanIn), 1 / Math.sqrt(fanIn));
  const w1 = kaiming('w1', D, D * H);
  const w2 = kaiming('w2', H, H * C);
  const b1 = uniformInit(H, param('b1').init.seed, param('b1').init.low, param('b1').init.high);
  const b2 = uniformInit(C, param('b2').init.seed, param('b2').init.low, param('b2').init.high);
  let total = 0;
  for (let r = 0; r < N; ++r) {
    const hidden = Array.from({ length: H }, (_, h) => Math.max(0, b1[h] + Array.from({ length: D }, (_, d) => x[r * D + d] * w1[d * H + h]).reduce((a, b) => a + b, 0)));
    const logits = Array.from({ length: C }, (_, c) => b2[c] + hidden.reduce((a, v, h) => a + v * w2[h * C + c], 0));
    const top = Math.max(...logits);
    const logSum = top + Math.log(logits.reduce((a, l) => a + Math.exp(l - top), 0));
    total += logSum - logits[labels[r]];
  }
  return total / N;
}

// Game of Life on a torus, one generation.
function lifeStep(cells, rows, cols) {
  return cells.map((alive, i) => {
    const r = Math.floor(i / cols);
    const c = i % cols;
    let n = 0;
    for (let dr = -1; dr <= 1; ++dr)
      for (let dc = -1; dc <= 1; ++dc)
        if (dr || dc) n += cells[((r + dr + rows) % rows) * cols + ((c + dc + cols) % cols)];
    return n === 3 || (alive && n === 2) ? 1 : 0;
  });
}

// ---------------------------------------------------------------- API helpers

async function api(method, route, body, headers = { 'Content-Type': 'application/json' }) {
  const res = await fetch(studio.base + route, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: the caller says whether that is wrong
  }
  return { status: res.status, type: res.headers.get('content-type') ?? '', json, text };
}

// A request exactly as written, for paths fetch would normalise ("/../").
function rawRequest(method, rawPath, { headers = {}, body = '' } = {}) {
  const url = new URL(studio.base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: rawPath, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let json = null;
        try {
          json = JSON.parse(text);
        } catch {
          // checked by the caller
        }
        resolve({ status: res.statusCode, type: res.headers['content-type'] ?? '', json, text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function listFiles(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...listFiles(p).map((f) => path.join(name, f)));
    else out.push(name);
  }
  return out.sort();
}

// ---------------------------------------------------------------- the cases

test('center_columns built by hand on the canvas, lowered, and run in the tab on WebGPU', { timeout: 150_000 }, async () => {
  const page = await openStudio(gpuBrowser);
  await optInToSoftwareAdapter(page);
  await page.getByTestId('panel-tab-ladder').click();

  await page.getByTestId('new-doc').click();
  await assertEventually(async () => (await page.locator('.react-flow__node').count()) === 0, () => page.locator('.react-flow__node').count(), 'an empty canvas');
  await settled(page);

  for (const [name, size] of [['N', '4'], ['D', '3'], ['K', '2']]) {
    await page.getByTestId('dim-new').fill(name);
    await page.getByTestId('dim-new').press('Enter');
    await page.getByTestId(`dim-${name}`).fill(size);
  }

  // Sources and ops from the palette: dragged onto the canvas, one added by a click; then each
  // moved by its header to its place (left to right in the order data flows).
  const canvas = page.getByTestId('canvas');
  for (const op of ['input', 'param', 'mean', 'sub']) {
    await page.getByTestId(`palette-${op}`).dragTo(canvas, { targetPosition: { x: 400, y: 200 } });
    await page.getByTestId(`node-${op}`).waitFor();
  }
  await page.getByTestId('palette-matmul').click();
  await page.getByTestId('node-matmul').waitFor();
  const place = { matmul: [600, 280], sub: [420, 150], mean: [230, 20], param: [20, 280], input: [20, 20] };
  for (const [id, [x, y]] of Object.entries(place)) await moveNode(page, id, x, y);
  await settled(page);

  await selectNode(page, 'input');
  await setAttr(page, 'input', 'name', 'dataset');
  await setAttr(page, 'input', 'shape', '["N", "D"]');
  await setAttr(page, 'input', 'dtype', 'f32');
  await setAttr(page, 'input', 'data', '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]');
  await selectNode(page, 'param');
  await setAttr(page, 'param', 'name', 'weights');
  await setAttr(page, 'param', 'shape', '["D", "K"]');
  await setAttr(page, 'param', 'init', '{"kind": "uniform", "low": -1, "high": 1, "seed": 7}');
  await selectNode(page, 'mean');
  await setAttr(page, 'mean', 'axis', '0');

  for (const [from, to] of [['input', 'mean.a'], ['input', 'sub.a'], ['mean', 'sub.b'], ['sub', 'matmul.a'], ['param', 'matmul.b']]) {
    // Nodes grow and shrink with their diagnostics: draw each wire on a settled canvas.
    await settled(page);
    await drawWire(page, from, to);
  }
  assert.equal(await edgeCount(page), 5);
  await setOutput(page, 'matmul', 'y');
  await setOutput(page, 'sub', 'centered');
  await page.locator('.react-flow__pane').click({ position: { x: 5, y: 5 } });
  await waitValidated(page);
  await shot(page, 'studio-canvas');

  // The document the canvas holds is the example's graph, node for node and wire for wire (the
  // canvas names nodes by their op; the example's name and memory budget are not drawn).
  await page.getByTestId('save').click();
  await page.waitForURL(/\/w\/sha256:[0-9a-f]{64}$/);
  const savedId = decodeURIComponent(new URL(page.url()).pathname.slice('/w/'.length));
  const built = (await api('GET', `/api/documents/${savedId}`)).json.document;
  const ids = { x: 'input', w: 'param', mean: 'mean', xc: 'sub', y: 'matmul' };
  const want = example('center_columns');
  const rename = (ref) => ref.replace(/^[^.]+/, (id) => ids[id]);
  assert.deepEqual(built.dims, want.dims);
  assert.equal(built.determinism, want.determinism);
  assert.deepEqual(
    Object.fromEntries(built.nodes.map((n) => [n.id, { type: n.type, params: n.params ?? {} }])),
    Object.fromEntries(want.nodes.map((n) => [ids[n.id], { type: n.type, params: n.params ?? {} }])),
  );
  assert.deepEqual(new Set(built.wires.map((w) => `${w.from}->${w.to}`)), new Set(want.wires.map((w) => `${rename(w.from)}->${rename(w.to)}`)));
  assert.deepEqual(new Set(built.outputs.map((o) => `${o.name}=${o.from}`)), new Set(want.outputs.map((o) => `${o.name}=${rename(o.from)}`)));

  // Every rung of the ladder.
  await page.getByTestId('rung-tab-doc').click();
  assert.match(await page.getByTestId('rung-doc').textContent(), /node matmul = matmul a=sub, b=param/);
  await page.getByTestId('rung-tab-block').click();
  await page.getByTestId('rung-block').getByText(/block %matmul = matmul/).waitFor();
  await page.getByTestId('rung-tab-webir').click();
  assert.match(await page.getByTestId('rung-webir').textContent(), /matmul/);
  await page.getByTestId('rung-tab-kernel').click();
  const wgsl = page.getByTestId('wgsl');
  await wgsl.waitFor();
  assert.match(await wgsl.textContent(), /@compute\s+@workgroup_size/);
  assert.ok((await page.locator('[data-testid^="kernel-"]').count()) >= 1);
  await shot(page, 'studio-wgsl');
  await page.getByTestId('rung-tab-execplan').click();
  assert.equal(await page.getByTestId('plan-verdict').getAttribute('data-verdict'), 'green');
  await page.getByTestId('memory-chart').waitFor();
  await shot(page, 'studio-plan');

  // Run in the tab (WebGPU on SwiftShader), then the page's own check against the CPU reference.
  await page.getByTestId('panel-tab-run').click();
  await page.getByTestId('run-tab').click();
  const comparison = page.getByTestId('comparison');
  await comparison.waitFor({ timeout: SLOW });
  assert.match(await page.getByTestId('result-tab-backend').textContent(), /webgpu/);
  assert.equal(await comparison.getAttribute('data-ok'), 'true', await comparison.textContent());
  assert.match(await comparison.textContent(), /matches the CPU reference/);
  const expected = centerColumnsExpected();
  assertClose(await tableValues(page, 'result-table-result-tab-y'), expected.y, 'y in the tab');
  assertClose(await tableValues(page, 'result-table-result-tab-centered'), expected.centered, 'centered in the tab', { rtol: 0, atol: 0 });
  assertClose(await tableValues(page, 'result-table-result-reference-y'), expected.y, 'y on the CPU reference');
  await page.close();
});

// The gallery's MLP (fashion_mlp: 784-256-10 on Fashion-MNIST) trains on the server; the steps
// field caps each epoch, so a few steps an epoch keep the run short.
test('the MLP trains on the server from the page and its loss curve falls', { timeout: 120_000 }, async () => {
  const page = await openStudio(gpuBrowser, '/', { softwareAdapter: true });
  await page.getByTestId('gallery-fashion_mlp').click();
  await page.getByTestId('node-loss').waitFor();
  await waitValidated(page);
  await page.getByTestId('panel-tab-run').click();
  await page.getByTestId('run-steps').fill('16');
  await page.getByTestId('train-server').click();
  await page.locator('[data-testid="result-train"], [data-testid="run-error"]').first().waitFor({ timeout: SLOW });
  assert.equal(await page.getByTestId('run-error').count(), 0, await page.getByTestId('run-error').textContent().catch(() => ''));
  const curve = page.getByTestId('loss-curve');
  const points = Number(await curve.getAttribute('data-points'));
  const first = Number(await curve.getAttribute('data-first'));
  const last = Number(await curve.getAttribute('data-last'));
  // 10 epochs of 16 steps, a progress event after every submission of 8.
  assert.equal(points, 20, `${points} points on the loss curve`);
  assert.ok(Number.isFinite(first) && Number.isFinite(last), `loss ${first} → ${last}`);
  // Cross-entropy over 10 classes: ln 10 ≈ 2.30 for a uniform guess; the first point, after 8
  // steps, is already below it, and the last well below the first.
  assert.ok(first > 1 && first < Math.log(10), `first loss ${first}`);
  assert.ok(last < 0.75 * first, `the loss did not fall: ${first} → ${last}`);
  // The polyline has a vertex per point, its y (SVG: down is larger) lower at the end.
  const vertices = (await curve.locator('polyline').getAttribute('points')).trim().split(/\s+/).map((v) => v.split(',').map(Number));
  assert.equal(vertices.length, points);
  assert.ok(vertices[vertices.length - 1][1] > vertices[0][1], 'the curve is not drawn falling');
  assert.match(await page.getByTestId('train-info').textContent(), /epoch 10: .*test_accuracy/);
  await curve.scrollIntoViewIfNeeded();
  await shot(page, 'studio-loss-curve');
  await page.close();
});

// mlp_step carries its training step in the device program: steps run in the tab train it (the
// page feeds each step's number), and the loss output draws the curve step by step.
test('the MLP step trains in the tab on WebGPU: the first loss as in float64, then falling, as the CPU reference', { timeout: 120_000 }, async () => {
  const page = await openStudio(gpuBrowser, '/', { softwareAdapter: true });
  await page.getByTestId('gallery-mlp_step').click();
  await page.getByTestId('node-loss').waitFor();
  await waitValidated(page);
  await page.getByTestId('panel-tab-run').click();
  const steps = 12;
  await page.getByTestId('run-steps').fill(String(steps));
  await page.getByTestId('run-tab').click();
  const curve = page.getByTestId('loss-curve');
  await curve.waitFor();
  await assertEventually(async () => Number(await curve.getAttribute('data-points')) === steps, () => curve.getAttribute('data-points'), `${steps} steps in the tab`, SLOW);
  assert.match(await page.getByTestId('result-tab-backend').textContent(), /webgpu/);
  const first = Number(await curve.getAttribute('data-first'));
  const last = Number(await curve.getAttribute('data-last'));
  const expected = mlpStepInitialLoss();
  assert.ok(Math.abs(first - expected) <= 1e-4 * expected, `first loss ${first}, float64 ${expected}`);
  assert.ok(last < 0.9 * first, `the loss did not fall: ${first} → ${last}`);

  // The server's run of the same steps (its step numbers fed as training feeds them) is the
  // reference the page compares with.
  await page.locator('[data-testid="comparison"], [data-testid="run-error"]').first().waitFor({ timeout: SLOW });
  assert.equal(await page.getByTestId('run-error').count(), 0, await page.getByTestId('run-error').textContent().catch(() => ''));
  assert.equal(await page.getByTestId('comparison').getAttribute('data-ok'), 'true');
  await page.close();
});

// life_steps carries its grid from step to step: the tab animates it, one step a frame.
test('a carried document animates in the tab: the glider of life_steps after 8 steps', { timeout: 120_000 }, async () => {
  const page = await openStudio(gpuBrowser, '/', { softwareAdapter: true });
  await page.getByTestId('gallery-life_steps').click();
  await page.getByTestId('node-1').waitFor();
  // The graph declares no determinism tier; the run needs one, chosen on the page.
  await page.getByTestId('doc-tier').selectOption('prod');
  await waitValidated(page);
  await page.getByTestId('panel-tab-run').click();
  const steps = 8;
  await page.getByTestId('run-steps').fill(String(steps));
  await page.getByTestId('run-tab').click();
  await page.locator('[data-testid="comparison"], [data-testid="run-error"]').first().waitFor({ timeout: SLOW });
  assert.equal(await page.getByTestId('run-error').count(), 0, await page.getByTestId('run-error').textContent().catch(() => ''));
  assert.equal(await page.getByTestId('comparison').getAttribute('data-ok'), 'true');
  assert.match(await page.getByTestId('result-tab').textContent(), new RegExp(`steps ${steps}`));

  const start = example('life_steps').nodes[0].data;
  let want = start;
  for (let i = 0; i < steps; ++i) want = lifeStep(want, 16, 16);
  // By hand: a glider moves one cell down and right every 4 generations.
  const moved = start.map((_, i) => start[((Math.floor(i / 16) + 14) % 16) * 16 + ((i % 16) + 14) % 16]);
  assert.deepEqual(want, moved);
  assert.deepEqual(await tableValues(page, 'result-table-result-tab-next'), want);
  assert.deepEqual(await tableValues(page, 'result-table-result-reference-next'), want);
  await page.close();
});

// The tab's own device earns receipts: the server hands out the cases, the tab runs them, the
// server judges them; a run in the tab then says its kernel is conformed on this device.
test('the tab conforms its WebGPU device and its run counts the receipt', { timeout: 150_000 }, async () => {
  const page = await openStudio(gpuBrowser, '/', { softwareAdapter: true });
  await page.getByTestId('gallery-life_steps').click();
  await page.getByTestId('node-1').waitFor();
  await page.getByTestId('doc-tier').selectOption('prod');
  await waitValidated(page);
  await page.getByTestId('panel-tab-probe').click();
  await page.getByTestId('tab-conform-tier').selectOption('prod');
  await page.getByTestId('tab-conform-op').selectOption('life');
  await page.getByTestId('tab-conform-start').click();
  const row = page.getByTestId('tab-conform-row-life');
  await row.waitFor({ timeout: SLOW });
  assert.equal(await page.getByTestId('tab-conform-error').count(), 0);
  assert.match(await row.textContent(), /passed.*receipt sha256:/);
  assert.match(await page.getByTestId('tab-conform-profile').textContent(), /webgpu;browser;vendor=/);
  await shot(page, 'studio-tab-conformance');

  await page.getByTestId('panel-tab-run').click();
  await page.getByTestId('run-steps').fill('2');
  await page.getByTestId('run-tab').click();
  await page.getByTestId('tab-receipts').waitFor({ timeout: SLOW });
  assert.match(await page.getByTestId('tab-receipts').textContent(), /receipts: 1\/1 kernels conformed on this tab's device/);
  await page.close();
});

test('a saved document has its own address, reloads the same, and a run record opens at /r/<id>', { timeout: 120_000 }, async () => {
  const page = await openStudio(gpuBrowser, '/', { softwareAdapter: true });
  await page.getByTestId('gallery-center_columns').click();
  await waitValidated(page);
  await page.getByTestId('save').click();
  await page.waitForURL(/\/w\/sha256:[0-9a-f]{64}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.slice('/w/'.length));
  assert.equal(await page.getByTestId('save-url').getAttribute('href'), `/w/${id}`);

  // The store holds the example itself, under the id the server gives that example.
  const validated = await api('POST', '/api/validate', { document: example('center_columns') });
  assert.equal(validated.status, 200);
  assert.equal(validated.json.content_id, id);
  const stored = await api('GET', `/api/documents/${id}`);
  assert.equal(stored.status, 200);
  assert.deepEqual(stored.json.document, example('center_columns'));

  // A fresh page at that address, in a browser profile of its own (nothing of the first page's
  // local storage), shows the same document.
  const nodesOf = async (p) => (await p.locator('[data-testid^="node-"][data-op]').evaluateAll((els) => els.map((e) => `${e.dataset.testid}:${e.dataset.op}`))).sort();
  const edgesOf = async (p) => (await p.locator('.react-flow__edge').evaluateAll((els) => els.map((e) => e.dataset.testid))).sort();
  const freshBrowser = await launch({ webgpu: true });
  try {
    const fresh = await openStudio(freshBrowser, `/w/${id}`, { softwareAdapter: true });
    assert.equal(await fresh.getByTestId('doc-source').textContent(), 'center_columns');
    assert.match(await fresh.getByTestId('validation-status').textContent(), new RegExp(id.slice(0, 15)));
    assert.deepEqual(await nodesOf(fresh), await nodesOf(page));
    assert.deepEqual(await edgesOf(fresh), await edgesOf(page));
    assert.equal((await nodesOf(fresh)).length, 5);
    assert.equal((await edgesOf(fresh)).length, 5);

    // Run on the server, then open the run's record.
    await fresh.getByTestId('panel-tab-run').click();
    await fresh.getByTestId('run-server').click();
    const recordLink = fresh.getByTestId('result-server-record');
    await recordLink.waitFor({ timeout: SLOW });
    await recordLink.click();
    await fresh.waitForURL(/\/r\/sha256:[0-9a-f]{64}$/);
    const runId = decodeURIComponent(new URL(fresh.url()).pathname.slice('/r/'.length));
    await fresh.getByTestId('run-record').waitFor();
    assert.equal(await fresh.getByTestId('record-document_id').textContent(), id);
    assert.equal(await fresh.getByTestId('record-backend').textContent(), 'cpu');
    const record = await api('GET', `/api/runs/${runId}`);
    assert.equal(record.status, 200);
    assert.equal(record.json.document_id, id);
    assertClose(await tableValues(fresh, 'result-table-record-result-centered'), centerColumnsExpected().centered, 'recorded centered', { rtol: 0, atol: 0 });
    assert.equal(record.json.kind, 'scellis.run-record/2');
    await fresh.getByTestId('record-replay').click();
    const verdict = fresh.getByTestId('replay-verdict');
    await verdict.waitFor({ timeout: SLOW });
    assert.equal(await verdict.getAttribute('data-agree'), 'true', await verdict.textContent());
    assert.match(await verdict.textContent(), /agrees with the record bit for bit/);
  } finally {
    await freshBrowser.close();
  }
  await page.close();
});

test('without WebGPU the tab runs the CPU reference in WebAssembly behind a banner, bit for bit, and the server too', { timeout: 120_000 }, async () => {
  const browser = await launch({ webgpu: false });
  try {
    // Opted in to software adapters, so the banner is about the missing WebGPU, not SwiftShader.
    const page = await openStudio(browser, '/', { softwareAdapter: true });
    const banner = page.getByTestId('banner');
    await banner.waitFor();
    await assertEventually(async () => /compiled to WebAssembly/.test(await banner.textContent()), () => banner.textContent(), 'the WebAssembly banner');
    assert.match(await banner.textContent(), /NO WEBGPU IN THIS TAB — .*CPU reference compiled to WebAssembly.*: no WebGPU adapter is available/);
    assert.match(await page.getByTestId('runnability').textContent(), /runs here on the CPU reference in WebAssembly, and on the server \(cpu\)/);
    await shot(page, 'studio-no-webgpu');

    // In the tab: the WebAssembly reference, compared with the server's native reference bit for bit.
    await page.getByTestId('panel-tab-run').click();
    await page.getByTestId('run-tab').click();
    await page.locator('[data-testid="comparison"], [data-testid="run-error"]').first().waitFor({ timeout: SLOW });
    assert.equal(await page.getByTestId('run-error').count(), 0, await page.getByTestId('run-error').textContent().catch(() => ''));
    const comparison = page.getByTestId('comparison');
    assert.equal(await comparison.getAttribute('data-ok'), 'true');
    assert.equal(await comparison.getAttribute('data-bits'), 'true');
    assert.match(await comparison.textContent(), /bit for bit/);
    assert.match(await page.getByTestId('result-tab').textContent(), /WebAssembly/);
    const expected = centerColumnsExpected();
    assertClose(await tableValues(page, 'result-table-result-tab-centered'), expected.centered, 'centered in WebAssembly', { rtol: 0, atol: 0 });
    assertClose(await tableValues(page, 'result-table-result-tab-y'), expected.y, 'y in WebAssembly');

    // The banner's offer opens the server run, which works too.
    await page.getByTestId('panel-tab-ladder').click();
    await page.getByTestId('banner-run-server').click();
    await page.getByTestId('run-server').click();
    await page.getByTestId('result-server').waitFor({ timeout: SLOW });
    assert.match(await page.getByTestId('result-server-backend').textContent(), /cpu/);
    assertClose(await tableValues(page, 'result-table-result-server-centered'), expected.centered, 'centered on the server', { rtol: 0, atol: 0 });
    assertClose(await tableValues(page, 'result-table-result-server-y'), expected.y, 'y on the server');
    // The banner stays: it is not a passing notice.
    assert.ok(await banner.isVisible());
  } finally {
    await browser.close();
  }
});

test('a bad wire is refused as it is drawn; a red plan shows its diagnostic on the canvas', { timeout: 120_000 }, async () => {
  const page = await openStudio(gpuBrowser, '/', { softwareAdapter: true });
  await page.getByTestId('gallery-center_columns').click();
  await waitValidated(page);
  const before = await edgeCount(page);

  // A second wire into mean.a, which x already feeds.
  await drawWire(page, 'w', 'mean.a', { release: false });
  const refusal = page.getByTestId('wire-refusal');
  await refusal.waitFor();
  assert.match(await refusal.textContent(), /wire refused: mean\.a already has a wire \(from x\)/);
  await page.mouse.up();
  assert.equal(await edgeCount(page), before);

  // With x → mean.a deleted, y → mean.a would close a cycle through xc and y.
  await selectEdge(page, 'x->mean.a');
  await page.keyboard.press('Delete');
  assert.equal(await edgeCount(page), before - 1);
  assert.equal(await page.getByTestId('rf__edge-x->mean.a').count(), 0);
  await drawWire(page, 'y', 'mean.a', { release: false });
  await assertEventually(async () => /close a cycle/.test(await refusal.textContent()), () => refusal.textContent(), 'the cycle refused');
  await page.mouse.up();
  assert.equal(await edgeCount(page), before - 1);
  await page.getByTestId('undo').click();
  assert.equal(await edgeCount(page), before);
  await waitValidated(page);
  await refusal.waitFor({ state: 'hidden' });

  // A diagnostic whose pointer names a node is drawn on that node.
  const badAxis = example('center_columns');
  badAxis.nodes.find((n) => n.id === 'mean').params.axis = 5;
  await page.getByTestId('paste-open').click();
  await page.getByTestId('paste-text').fill(JSON.stringify(badAxis));
  await page.getByTestId('paste-load').click();
  await waitValidated(page, 'error');
  const onMean = page.getByTestId('node-diags-mean');
  await onMean.waitFor();
  assert.match(await onMean.textContent(), /bad-axis/);
  assert.equal(await page.getByTestId('node-x').getAttribute('data-diagnostics'), '0');

  // A plan over its memory budget: its finding names no node, so it is drawn over the canvas.
  await page.getByTestId('paste-open').click();
  await page.getByTestId('paste-text').fill(JSON.stringify(errorCase('budget_tiny')));
  await page.getByTestId('paste-load').click();
  await waitValidated(page, 'error');
  const overCanvas = page.getByTestId('canvas-diags').locator('[data-code="memory-over-budget"]');
  await overCanvas.waitFor();
  assert.match(await overCanvas.textContent(), /the plan needs 2\.0 MiB .*over the budget of 1\.0 KiB/);
  assert.equal(await page.locator('[data-testid^="diag-"][data-code="memory-over-budget"]').count(), 1);
  for (const id of ['a', 'b', 'p']) assert.equal(await page.getByTestId(`node-${id}`).getAttribute('data-diagnostics'), '0');
  // The ExecPlan rung shows the red plan: its finding, and the budget line across the chart.
  await page.getByTestId('panel-tab-ladder').click();
  await page.getByTestId('rung-tab-execplan').click();
  const verdict = page.getByTestId('plan-verdict');
  await verdict.waitFor();
  assert.equal(await verdict.getAttribute('data-verdict'), 'red');
  assert.match(await page.getByTestId('plan-findings').textContent(), /memory-over-budget/);
  assert.match(await page.getByTestId('memory-chart').textContent(), /allocated 2\.0 MiB, peak live 2\.0 MiB, budget 1\.0 KiB/);
  assert.equal(await page.getByTestId('memory-chart').locator('.budget-line').count(), 1);
  await shot(page, 'studio-red-plan');
  await page.close();
});

test('a list port takes a wire per entry, shows their order, reorders, and saves the wires in that order', { timeout: 90_000 }, async () => {
  const joins = {
    format: 'scellis.workflow/1',
    name: 'joins',
    determinism: 'prod',
    nodes: [
      { id: 'a', type: 'input', params: { shape: [1, 3], data: [1, 2, 3] } },
      { id: 'b', type: 'input', params: { shape: [1, 3], data: [4, 5, 6] } },
      { id: 'cat', type: 'concat', params: { axis: 0 } },
    ],
    wires: [
      { from: 'b', to: 'cat.inputs' },
      { from: 'a', to: 'cat.inputs' },
    ],
    outputs: [{ name: 'y', from: 'cat' }],
  };
  const page = await openStudio(gpuBrowser);
  await page.getByTestId('paste-open').click();
  await page.getByTestId('paste-text').fill(JSON.stringify(joins));
  await page.getByTestId('paste-load').click();
  await waitValidated(page);
  const entries = page.getByTestId('port-entries-cat-inputs');
  assert.equal(await entries.textContent(), '[2]');

  // A third entry drawn with the mouse, from a source the list already holds.
  await drawWire(page, 'b', 'cat.inputs');
  await assertEventually(async () => (await entries.textContent()) === '[3]', () => entries.textContent(), 'three entries');
  const labels = async () => (await page.locator('.react-flow__edge-textwrapper').allTextContents()).sort();
  assert.deepEqual(await labels(), ['inputs[0]', 'inputs[1]', 'inputs[2]']);

  // The inspector lists the entries in order; moving the first down swaps it with the second.
  await selectNode(page, 'cat');
  const order = () => page.getByTestId('list-cat-inputs').locator('li code').allTextContents();
  assert.deepEqual(await order(), ['b', 'a', 'b']);
  await page.getByTestId('list-down-cat-inputs-0').click();
  assert.deepEqual(await order(), ['a', 'b', 'b']);
  await waitValidated(page);
  await shot(page, 'studio-list-port');

  // The saved document wires the port once per entry, in that order.
  await page.getByTestId('save').click();
  await page.waitForURL(/\/w\/sha256:[0-9a-f]{64}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.slice('/w/'.length));
  const stored = await api('GET', `/api/documents/${id}`);
  assert.equal(stored.status, 200);
  assert.deepEqual(stored.json.document.wires, [
    { from: 'a', to: 'cat.inputs' },
    { from: 'b', to: 'cat.inputs' },
    { from: 'b', to: 'cat.inputs' },
  ]);
  await page.close();
});

test('hostile requests get a 4xx with a JSON diagnostic and write nothing', { timeout: 60_000 }, async () => {
  const storeBefore = listFiles(studio.store);
  const expectRefusal = (r, status, code, what) => {
    assert.equal(r.status, status, `${what}: ${r.status} ${r.text.slice(0, 300)}`);
    assert.match(r.type, /application\/json/, what);
    assert.ok(r.json && typeof r.json.error === 'object', `${what}: no JSON error body: ${r.text.slice(0, 200)}`);
    assert.equal(r.json.error.code, code, what);
    assert.ok(Array.isArray(r.json.diagnostics) && r.json.diagnostics.length >= 1, what);
  };
  const doc = example('center_columns');

  // Over the cap (16 MiB by default), refused from its Content-Length.
  const version = await api('GET', '/api/version');
  const cap = version.json.max_request_bytes;
  const big = JSON.stringify({ document: doc, padding: 'x'.repeat(cap) });
  expectRefusal(await api('POST', '/api/documents', big), 413, 'request-too-large', 'oversized body');

  for (const type of ['text/plain', 'application/x-www-form-urlencoded', '']) {
    const headers = type ? { 'Content-Type': type } : {};
    expectRefusal(await rawRequest('POST', '/api/documents', { headers, body: JSON.stringify({ document: doc }) }), 415, 'unsupported-media-type', `content type "${type}"`);
  }

  for (const body of ['{"document": ', '{"document": {}} trailing', "{'document': 1}", '{"a": 1, "a": 2}']) {
    expectRefusal(await api('POST', '/api/documents', body), 400, 'bad-json', `malformed JSON ${body}`);
  }
  expectRefusal(await api('POST', '/api/documents', '[1, 2]'), 400, 'bad-request', 'a body that is no object');
  expectRefusal(await api('POST', '/api/documents', { document: doc, path: '/tmp/x' }), 400, 'unknown-field', 'an unknown field');

  // Ids that try to leave the store; fetch would normalise "..", so these go out as written.
  for (const id of ['..%2F..%2Fetc%2Fpasswd', '..%2F..%2F..%2F..%2Fetc%2Fpasswd', 'sha256:..%2F..%2Fetc%2Fpasswd', '%2Fetc%2Fpasswd', 'sha256:' + '0'.repeat(63) + '%00', 'sha256:' + 'A'.repeat(64)]) {
    for (const kind of ['documents', 'runs']) {
      const r = await rawRequest('GET', `/api/${kind}/${id}`);
      expectRefusal(r, 400, 'bad-id', `/api/${kind}/${id}`);
      assert.doesNotMatch(r.text, /root:/);
    }
    const page = await rawRequest('GET', `/w/${id}`);
    assert.equal(page.status, 400, `/w/${id}`);
    assert.doesNotMatch(page.text, /root:/);
  }
  // A well-formed id the store lacks.
  expectRefusal(await api('GET', `/api/documents/sha256:${'0'.repeat(64)}`), 404, 'store-object-missing', 'a missing document');
  // Static files never leave the built Studio.
  for (const p of ['/../../../../etc/passwd', '/assets/../../../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/assets/..%2F..%2F..%2Fetc%2Fpasswd']) {
    const r = await rawRequest('GET', p);
    assert.ok(r.status >= 400 && r.status < 500, `${p}: ${r.status}`);
    assert.doesNotMatch(r.text, /root:/, p);
  }
  // A document the engine refuses is not stored.
  const refused = await api('POST', '/api/documents', { document: { ...doc, nodes: [...doc.nodes, { id: 'z', type: 'relu' }] } });
  assert.equal(refused.status, 422, refused.text.slice(0, 300));
  assert.deepEqual(listFiles(studio.store), storeBefore);
});
