/* tests/browser/mock_room.js: a stand-in for seckill-front's waiting room, written from
 * DESIGN.md 3 and 18 alone, so the page (producer/page/) and the browser driver
 * (queue_page.js) can be run where the real room is not at hand:
 *   node mock_room.js   (MOCK_PORT, MOCK_VOUCHER, MOCK_STOCK, MOCK_BEGIN_IN_MS, MOCK_PAY_SECRET)
 * It serves the page's files from producer/page/ as the front does (placeholders, CSP)
 * and the routes of §3 on one in-memory room: pre-queue drawn at begin, admissions while
 * live < ceil(units left × overbook), sold out with held units, cancel, signed payment
 * callbacks (checked), closing when every unit is paid. The Bearer token is the user.
 * It is no proof of the real room: the test of record is queue_page.sh. */
'use strict';

const http = require('http');
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const PORT = Number(process.env.MOCK_PORT || 18080);
const V = process.env.MOCK_VOUCHER || '4200000000000000001';
const STOCK = Number(process.env.MOCK_STOCK || 5);
const OVERBOOK = Number(process.env.MOCK_OVERBOOK || 100);
const TTL_MS = 60000;
const PAY_MS = 600000;
const PRICE = '500';
const PAGE_DIR = path.join(__dirname, '..', '..', 'producer', 'page');
const CSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
const begin = Date.now() + Number(process.env.MOCK_BEGIN_IN_MS || 15000);
const opensAt = begin - 600000;
const end = begin + 7200000;

const members = new Map();  /* user -> { key, pos, admitUntil, used, gone } */
const prequeue = [];
let byPos = [];             /* position - 1 -> user */
let begun = false;
let admittedUpTo = 0;
let unitsLeft = STOCK;
const orders = new Map();   /* user -> { id, status, payDeadline } */
let paid = 0;
let seq = 1000;

function now() { return Date.now(); }
function live() {
  let n = 0;
  for (let p = 1; p <= admittedUpTo; p += 1) {
    const m = members.get(byPos[p - 1]);
    if (m && m.pos === p && !m.used && m.admitUntil > now()) n += 1;
  }
  return n;
}
function tick() {
  if (!begun && now() >= begin) {
    begun = true;
    prequeue.sort((a, b) => members.get(a).key - members.get(b).key);
    byPos = prequeue.slice();
    byPos.forEach((u, k) => { members.get(u).pos = k + 1; });
  }
  if (!begun) return;
  while (admittedUpTo < byPos.length && live() < Math.ceil(unitsLeft * OVERBOOK / 100)) {
    admittedUpTo += 1;
    const m = members.get(byPos[admittedUpTo - 1]);
    if (m && m.pos === admittedUpTo) m.admitUntil = now() + TTL_MS;
  }
}
setInterval(tick, 200);

function held() { return STOCK - paid - unitsLeft; }
function heldUntil() {
  let t = 0;
  for (const o of orders.values()) if (o.status === 'UNPAID') t = Math.max(t, o.payDeadline);
  return t;
}
function memberState(user) {
  const m = members.get(user);
  const base = { serverTime: now() };
  if (now() >= end) return Object.assign(base, { state: 'ended', pollAfterMs: 30000 });
  if (!begun) {
    return Object.assign(base, { state: 'prequeue', opensAt, begin, members: prequeue.length,
      pollAfterMs: begin - now() + Math.floor(Math.random() * 200) });
  }
  if (m.pos <= admittedUpTo && m.admitUntil) {
    if (m.used) return Object.assign(base, { state: 'used', position: m.pos, pollAfterMs: 5000 });
    if (m.admitUntil > now()) {
      return Object.assign(base, { state: 'admitted', position: m.pos, admission: `adm.${V}.${user}.${m.pos}`,
        admitUntil: m.admitUntil, pollAfterMs: 5000 });
    }
    return Object.assign(base, { state: 'expired', position: m.pos, pollAfterMs: 30000 });
  }
  const ahead = m.pos - admittedUpTo - 1;
  const poll = Math.min(30000, Math.max(1000, ahead * 500));
  if (unitsLeft === 0) {
    return Object.assign(base, { state: 'sold_out', unitsHeld: held(), heldUntil: heldUntil(), closed: paid === STOCK,
      pollAfterMs: Math.min(poll, 1000) });
  }
  return Object.assign(base, { state: 'waiting', position: m.pos, ahead, etaSeconds: null, unitsLeft,
    unitsHeld: held(), pollAfterMs: poll });
}

function send(res, status, obj, headers) {
  const body = typeof obj === 'string' ? obj : JSON.stringify(obj);
  res.writeHead(status, Object.assign({ 'Content-Type': 'application/json' }, headers || {}));
  res.end(body);
}
function user(req) {
  const a = req.headers.authorization || '';
  return a.startsWith('Bearer ') ? a.slice(7) : null;
}

function route(req, res, body) {
  const u = new URL(req.url, 'http://x');
  const p = u.pathname;
  const page = { 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' };
  if (p === `/sale/${V}`) {
    const html = fs.readFileSync(path.join(PAGE_DIR, 'index.html'), 'utf8')
      .replace('{{voucherId}}', V).replace('{{fragmentToken}}', '1');
    return send(res, 200, html, Object.assign({ 'Content-Type': 'text/html; charset=utf-8' }, page));
  }
  const asset = /^\/sale\/assets\/(sale\.js|sale\.css|icon\.svg)$/.exec(p);
  if (asset) {
    const type = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' }[asset[1].split('.')[1]];
    return send(res, 200, fs.readFileSync(path.join(PAGE_DIR, asset[1]), 'utf8'), Object.assign({ 'Content-Type': type }, page));
  }
  const q = `/api/v1/vouchers/${V}`;
  if (p === q && req.method === 'GET') {
    return send(res, 200, { title: 'Mock <b>sale</b> & "quotes"', price: PRICE, currency: 'CNY', beginTime: begin,
      endTime: end, unitsLeft, queue: { mode: 'on', opensAt }, serverTime: now() });
  }
  if (p === '/api/v1/payments/callback' && req.method === 'POST') {
    const m = /^t=(\d+),v1=([0-9a-f]+)$/.exec(req.headers['x-payment-signature'] || '');
    const want = crypto.createHmac('sha256', process.env.MOCK_PAY_SECRET || '').update(`${m && m[1]}.${body}`).digest('hex');
    if (!m || m[2] !== want) return send(res, 401, { code: 10008, message: 'bad signature' });
    const cb = JSON.parse(body);
    for (const o of orders.values()) {
      if (o.id === cb.orderId && o.status === 'UNPAID') {
        o.status = 'PAID';
        paid += 1;
        return send(res, 200, { code: 0, orderId: o.id, orderStatus: 'PAID' });
      }
    }
    return send(res, 409, { code: 10021, refund: true });
  }
  const who = user(req);
  if (!who) return send(res, 401, { code: 10007, message: 'no identity' }, { 'WWW-Authenticate': 'Bearer' });
  if (p === q + '/queue') {
    if (req.method === 'POST' && !members.has(who)) {
      if (paid === STOCK) return send(res, 409, { code: 10005, message: 'sold out' });
      const m = { key: crypto.randomInt(2 ** 47), pos: 0, admitUntil: 0, used: false };
      members.set(who, m);
      if (!begun) prequeue.push(who);
      else { byPos.push(who); m.pos = byPos.length; }
    }
    if (!members.has(who)) return send(res, 404, { code: 10016, message: 'not a member' });
    return send(res, 200, memberState(who));
  }
  if (p === q + '/seckill' && req.method === 'POST') {
    const m = members.get(who);
    if (!m || req.headers['x-admission'] !== `adm.${V}.${who}.${m.pos}` || m.used || m.admitUntil <= now())
      return send(res, 403, { code: 10014, message: 'no valid admission' });
    m.used = true;
    if (orders.has(who) && orders.get(who).status !== 'CANCELLED') return send(res, 409, { code: 10006 });
    if (unitsLeft === 0) return send(res, 409, { code: 10005 });
    unitsLeft -= 1;
    const o = { id: String(++seq), status: 'PENDING', payDeadline: 0 };
    orders.set(who, o);
    setTimeout(() => { o.status = 'UNPAID'; o.payDeadline = now() + PAY_MS; }, 400);
    return send(res, 202, { code: 0, orderId: o.id, traceId: String(++seq), state: 'PENDING' });
  }
  if (p === q + '/orders/me' && req.method === 'GET') {
    const o = orders.get(who);
    if (!o) return send(res, 200, { state: 'NONE' });
    if (o.status === 'PENDING') return send(res, 200, { state: 'PENDING', orderId: o.id });
    return send(res, 200, { state: o.status === 'CANCELLED' ? 'CLOSED' : 'CREATED', orderId: o.id, orderStatus: o.status,
      payDeadline: o.payDeadline ? new Date(o.payDeadline).toISOString().slice(0, 23) : null });
  }
  const c = /^\/api\/v1\/orders\/(\d+)\/cancel$/.exec(p);
  if (c && req.method === 'POST') {
    const o = orders.get(who);
    if (!o || o.id !== c[1]) return send(res, 404, { code: 10001 });
    if (o.status === 'PAID') return send(res, 409, { code: 10022 });
    if (o.status === 'UNPAID') { o.status = 'CANCELLED'; unitsLeft += 1; tick(); }
    return send(res, 200, { orderStatus: 'CANCELLED' });
  }
  return send(res, 404, { code: 10001, message: 'no such route' });
}

http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    try { route(req, res, body); } catch (e) { send(res, 500, { message: String(e) }); }
  });
}).listen(PORT, '127.0.0.1', () => console.log(`mock room on 127.0.0.1:${PORT}, voucher ${V}, begin in ${begin - now()} ms`));
