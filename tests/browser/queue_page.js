/* tests/browser/queue_page.js: the browser test of DESIGN.md 18 "The browser test", run by
 * queue_page.sh (which starts the real front, consumer and voucher) with Node.js and npm's
 * playwright-core driving Debian's /usr/bin/chromium, headless; never a downloaded browser.
 *
 * Scenario (a room of STOCK units, overbook 100%, PAGES buyers):
 *   1. every page opens /sale/V#token=<its own JWT> (SECKILL_PAGE_FRAGMENT_TOKEN=1), shows
 *      Join, joins, and shows "places are drawn at the start" before begin;
 *   2. the sale opens: every page shows its position, together a permutation of 1..PAGES;
 *      exactly STOCK pages (positions 1..STOCK) show Buy; they buy: each shows its UNPAID
 *      order with Cancel;
 *   3. every other page turns to sold out with STOCK held units and never sends a purchase;
 *   4. the buyer at position 1 cancels on their page; the page at position STOCK+1 turns to
 *      Buy within 2 s of the cancel's answer and buys;
 *   5. the active orders are paid by signed callbacks; every waiting page turns to sold out
 *      with no unit held and the room closed; the buyers' pages show their paid order;
 *   6. every page is reloaded and shows the same state;
 *   7. one page opens a link with another token: it asks before replacing the stored one
 *      (the test declines), keeps it and removes the fragment from the address bar.
 * It fails on any page error (uncaught exception), any console.error but Chromium's own
 * "Failed to load resource" lines for the answers the scenario expects, and any answer of
 * the API the scenario did not expect. A screenshot per state goes to OUT/.
 *
 * Environment: BASE (http://host:port of the front), VOUCHER, TOKENS (a file, one JWT a
 * line, PAGES lines), STOCK, PAY_SECRET (the payment provider's secret), PRICE (minor
 * units), CURRENCY, OUT (the run's output folder), NODE_MODULES (playwright-core's
 * node_modules), CHROMIUM (default /usr/bin/chromium). Exit 0 iff every check held. */
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { chromium } = require(path.join(process.env.NODE_MODULES, 'playwright-core'));

const BASE = process.env.BASE;
const V = process.env.VOUCHER;
const STOCK = Number(process.env.STOCK || 5);
const PRICE = String(process.env.PRICE || '500');
const CURRENCY = process.env.CURRENCY || 'CNY';
const OUT = process.env.OUT;
const TOKENS = fs.readFileSync(process.env.TOKENS, 'utf8').split('\n').filter(Boolean);
const PAGES = TOKENS.length;
const T0 = Date.now();

let failures = 0;
function log(msg) { console.log(`[browser ${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}`); }
function ok(msg) { log('ok: ' + msg); }
function fail(msg) { failures += 1; log('FAIL: ' + msg); }
function check(cond, msg, detail) { if (cond) ok(msg); else fail(msg + (detail !== undefined ? ': ' + detail : '')); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* ---------------------------------------------------------------- the pages ---- */

/* Per page: its index, token, the answers it saw, the requests it sent, problems. */
const buyers = [];

/* The answers the scenario expects, by method and path (under /api/v1/); anything else
 * is an unexpected answer. 404/10016 is expected from GET queue only before the join. */
function expected(b, method, p, status, code) {
  const q = `/api/v1/vouchers/${V}`;
  if (method === 'GET' && p === q) return status === 200;
  if (p === q + '/queue') {
    if (method === 'POST') return status === 200;
    if (method === 'GET') return status === 200 || (status === 404 && code === 10016 && !b.joined);
  }
  if (method === 'POST' && p === q + '/seckill') return (status === 202 || status === 200) && b.mayBuy;
  if (method === 'GET' && p === q + '/orders/me') return status === 200;
  if (method === 'POST' && /^\/api\/v1\/orders\/[1-9][0-9]*\/cancel$/.test(p)) return status === 200 && b.mayCancel;
  return false;
}

function watch(b) {
  b.page.on('pageerror', (e) => fail(`page ${b.i}: page error: ${e.message}`));
  b.page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const text = m.text();
    /* Chromium's own network line for a 4xx the scenario expects (checked per answer below). */
    if (/^Failed to load resource: the server responded with a status of 404/.test(text)) return;
    fail(`page ${b.i}: console.error: ${text}`);
  });
  b.page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.origin !== BASE) fail(`page ${b.i}: request to another origin: ${r.url()}`);
    if (r.method() === 'POST' && u.pathname.endsWith('/seckill')) {
      b.purchases += 1;
      if (!b.mayBuy) fail(`page ${b.i}: sent a purchase it was not told to send`);
    }
  });
  b.page.on('response', async (res) => {
    const u = new URL(res.url());
    if (!u.pathname.startsWith('/api/v1/')) {
      if (res.status() !== 200) fail(`page ${b.i}: ${u.pathname}: ${res.status()}`);
      return;
    }
    const method = res.request().method();
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    const code = body && typeof body.code === 'number' ? body.code : null;
    b.answers.push({ method, path: u.pathname, status: res.status(), body, at: Date.now() });
    if (!expected(b, method, u.pathname, res.status(), code))
      fail(`page ${b.i}: unexpected answer ${method} ${u.pathname}: ${res.status()} ${JSON.stringify(body)}`);
  });
}

/* What a page shows: data-state and the data attributes sale.js writes, the headline, and
 * whether Buy / Cancel are visible. */
async function view(b) {
  return b.page.evaluate(() => {
    const m = document.getElementById('sale');
    const vis = (id) => !document.getElementById(id).hidden;
    return {
      state: m.dataset.state, position: m.dataset.position, unitsHeld: m.dataset.unitsHeld,
      closed: m.dataset.closed, orderId: m.dataset.orderId, orderStatus: m.dataset.orderStatus,
      headline: document.getElementById('headline').textContent,
      detail: document.getElementById('detail').textContent,
      countdown: document.getElementById('countdown').textContent,
      buy: vis('buy'), cancel: vis('cancel'), join: vis('join'),
      wide: document.documentElement.scrollWidth,
    };
  });
}

const shots = new Set();
async function shoot(b, v) {
  const name = v.state + (v.state === 'sold_out' ? (v.closed === 'true' ? '_closed' : '_held') : '');
  if (shots.has(name)) return;
  shots.add(name);
  await b.page.screenshot({ path: path.join(OUT, `${String(shots.size).padStart(2, '0')}_${name}.png`), fullPage: true });
}

/* Wait (bounded) until pred(view) holds on every page of @p list; returns their views. */
async function until(list, pred, what, timeoutMs) {
  const end = Date.now() + timeoutMs;
  let views = [];
  for (;;) {
    views = await Promise.all(list.map(view));
    for (let k = 0; k < list.length; k += 1) {
      list[k].last = views[k];
      if (views[k].position) list[k].seen.add(Number(views[k].position));
      await shoot(list[k], views[k]);
    }
    const bad = list.filter((b, k) => !pred(views[k], b));
    if (bad.length === 0) {
      ok(`${what} (${list.length} page(s))`);
      return views;
    }
    if (Date.now() > end) {
      fail(`${what}: ${bad.length} page(s) not there in ${timeoutMs / 1000} s, e.g. page ${bad[0].i}: ${JSON.stringify(bad[0].last)}`);
      return views;
    }
    await sleep(200);
  }
}

/* ---------------------------------------------------------------- payment ---- */

/* A signed callback of the payment provider (DESIGN.md 15): t=<unix s>,v1=hex HMAC-SHA256
 * of "t.body" under the shared secret. */
async function pay(orderId, txn) {
  const body = JSON.stringify({ orderId, providerTxnId: txn, amount: PRICE, currency: CURRENCY });
  const t = Math.floor(Date.now() / 1000);
  const sig = crypto.createHmac('sha256', process.env.PAY_SECRET).update(`${t}.${body}`).digest('hex');
  const res = await fetch(`${BASE}/api/v1/payments/callback`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Payment-Signature': `t=${t},v1=${sig}` }, body,
  });
  return { status: res.status, body: await res.text() };
}

/* ---------------------------------------------------------------- scenario ---- */

async function main() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sk-chromium-'));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 360, height: 740 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    log(`chromium ${ctx.browser() ? ctx.browser().version() : ''}, ${PAGES} pages, stock ${STOCK}, voucher ${V}`);
    for (let i = 0; i < PAGES; i += 1) {
      const page = i === 0 && ctx.pages().length ? ctx.pages()[0] : await ctx.newPage();
      const b = { i, page, token: TOKENS[i], answers: [], purchases: 0, joined: false, mayBuy: false,
        mayCancel: false, seen: new Set(), last: null };
      watch(b);
      buyers.push(b);
    }
    /* 1. Open, join, pre-queue. */
    await Promise.all(buyers.map((b) => b.page.goto(`${BASE}/sale/${V}#token=${b.token}`)));
    await until(buyers, (v) => v.state === 'join' && v.join, 'every page shows Join', 30000);
    const urls = await Promise.all(buyers.map((b) => b.page.evaluate(() => location.href)));
    check(urls.every((u) => !u.includes('#token=')), 'the token left the address bar', urls[0]);
    const stored = await Promise.all(buyers.map((b) => b.page.evaluate(() => sessionStorage.getItem('seckill.token'))));
    check(stored.every((t, k) => t === buyers[k].token), 'each page keeps its own token in sessionStorage');
    for (const b of buyers) b.joined = true;
    await Promise.all(buyers.map((b) => b.page.click('#join')));
    log('every page clicked Join');
    const pre = await until(buyers, (v) => v.state === 'prequeue', 'every page is in the pre-queue', 30000);
    check(pre.every((v) => /places are drawn at the start/.test(v.headline)), 'each says places are drawn at the start');
    check(pre.every((v) => !v.position), 'no position before begin');
    check(pre.every((v) => /opens in/.test(v.countdown)), 'each counts down to begin', pre[0].countdown);
    check(pre.every((v) => v.wide <= 360), 'nothing wider than 360 px', Math.max(...pre.map((v) => v.wide)));
    const facts = await (await fetch(`${BASE}/api/v1/vouchers/${V}`)).json();
    const opensIn = Number(facts.beginTime) - Number(facts.serverTime);
    log(`the sale opens in ${(opensIn / 1000).toFixed(1)} s`);
    check(opensIn > 0, 'the pre-queue was joined before begin', opensIn);

    /* 2. The sale opens: positions, Buy for exactly STOCK pages. */
    for (const b of buyers) b.mayBuy = true; /* only the admitted ones may show Buy: checked below */
    await until(buyers, (v) => v.state === 'admitted' || v.state === 'waiting', 'every page shows its place',
      opensIn + 90000);
    const views = buyers.map((b) => b.last);
    const positions = views.map((v) => Number(v.position)).sort((a, c) => a - c);
    check(positions.every((p, k) => p === k + 1), `the positions are a permutation of 1..${PAGES}`, positions.join(','));
    const admitted = buyers.filter((b) => b.last.state === 'admitted');
    check(admitted.length === STOCK, `exactly ${STOCK} pages show Buy`, admitted.length);
    check(admitted.every((b) => b.last.buy && Number(b.last.position) <= STOCK), `they hold positions 1..${STOCK}`,
      admitted.map((b) => b.last.position).join(','));
    check(admitted.every((b) => /turn ends in/.test(b.last.countdown)), "Buy shows the admission's countdown",
      admitted.length ? admitted[0].last.countdown : '');
    const waiting = buyers.filter((b) => b.last.state !== 'admitted');
    for (const b of waiting) b.mayBuy = false;
    for (const b of buyers) b.position = Number(b.last.position);
    await Promise.all(admitted.map((b) => b.page.click('#buy')));
    await until(admitted, (v) => v.state === 'unpaid' && v.cancel && v.orderId, 'each buyer shows an UNPAID order with Cancel',
      60000);
    check(admitted.every((b) => /^Pay within (9|10):\d\d$/.test(b.last.countdown)),
      'the order shows its pay deadline counting down from 10 minutes (SECKILL_PAY_TIMEOUT_S=600)',
      admitted[0].last.countdown);
    for (const b of admitted) b.mayBuy = false;

    /* 3. Everyone else: sold out with the units held. */
    await until(waiting, (v) => v.state === 'sold_out' && v.unitsHeld === String(STOCK) && v.closed === 'false',
      `every other page shows sold out with ${STOCK} units held`, 90000);
    check(waiting.every((b) => b.purchases === 0), 'no other page sent a purchase');

    /* 4. A cancel admits the next member on their page within 2 s. */
    const first = admitted.find((b) => b.position === 1) || admitted[0];
    const next = waiting.find((b) => b.position === STOCK + 1);
    check(!!next, `a page holds position ${STOCK + 1}`);
    if (next) next.mayBuy = true;
    first.mayCancel = true;
    await first.page.click('#cancel');
    await until([first], (v) => v.state === 'cancelled', 'the buyer at position 1 sees the order cancelled', 30000);
    const cancelled = first.answers.find((a) => a.method === 'POST' && a.path.endsWith('/cancel') && a.status === 200);
    if (next) {
      await until([next], (v) => v.state === 'admitted' && v.buy, `position ${STOCK + 1} shows Buy`, 30000);
      const admittedAt = next.answers.find((a) => a.body && a.body.state === 'admitted');
      const lag = admittedAt && cancelled ? admittedAt.at - cancelled.at : Infinity;
      check(lag <= 2000, `... within 2 s of the cancel (${lag} ms)`);
      const others = waiting.filter((b) => b !== next);
      const still = await Promise.all(others.map(view));
      check(still.every((v) => !v.buy), 'no other page shows Buy');
      await next.page.click('#buy');
      await until([next], (v) => v.state === 'unpaid' && v.orderId, 'the next member bought: UNPAID order', 60000);
      next.mayBuy = false;
    }

    /* 5. Pay every active order: the room closes. */
    const payers = admitted.filter((b) => b !== first).concat(next ? [next] : []);
    for (const b of payers) {
      const r = await pay(b.last.orderId, `txn-${V}-${b.i}`);
      check(r.status === 200, `order ${b.last.orderId} paid by a signed callback`, `${r.status} ${r.body}`);
    }
    const rest = waiting.filter((b) => b !== next);
    await until(rest, (v) => v.state === 'sold_out' && v.unitsHeld === '0' && v.closed === 'true',
      'every waiting page shows sold out, none held, closed', 90000);
    await until(payers, (v) => v.state === 'paid', 'every buyer page shows the order paid', 60000);

    /* 6. A reload of any page shows the same state. */
    const before = await Promise.all(buyers.map(view));
    for (const b of buyers) b.joined = true;
    await Promise.all(buyers.map((b) => b.page.reload()));
    await until(buyers, (v, b) => v.state === before[buyers.indexOf(b)].state &&
      v.unitsHeld === before[buyers.indexOf(b)].unitsHeld && v.closed === before[buyers.indexOf(b)].closed &&
      v.orderStatus === before[buyers.indexOf(b)].orderStatus, 'after a reload every page shows the same state', 60000);
    check(buyers.every((b) => b.purchases === (b === next || admitted.includes(b) ? 1 : 0)),
      'one purchase per buyer page, none from the others');
    /* 7. A link with another token never replaces the stored one without asking: the page
     *    asks (confirm), the buyer says no, the token and the state stay. */
    const b0 = buyers[0];
    const dialogs = [];
    b0.page.once('dialog', (d) => { dialogs.push(d.type()); d.dismiss(); });
    await b0.page.goto(`${BASE}/sale/${V}?again=1#token=another.buyer.token`);
    await until([b0], (v) => v.state === before[0].state, 'a link with another token: the same state', 30000);
    check(dialogs.length === 1 && dialogs[0] === 'confirm', 'the page asked before replacing the token', dialogs.join(','));
    const kept = await b0.page.evaluate(() => [sessionStorage.getItem('seckill.token'), location.href]);
    check(kept[0] === b0.token, 'declined: the stored token is kept');
    check(!kept[1].includes('#token='), 'the other token left the address bar too', kept[1]);
    log(`screenshots: ${[...shots].join(', ')} in ${OUT}`);
  } finally {
    await ctx.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().then(() => {
  log(failures ? `${failures} failure(s)` : 'every check held');
  process.exit(failures ? 1 : 0);
}, (e) => {
  log('FATAL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
