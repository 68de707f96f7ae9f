/* sale.js: the buyer page of DESIGN.md 18, served by seckill-front at /sale/{voucherId}.
 *
 * Plain JavaScript, no framework, no build step, no request to any other origin (the
 * page's CSP allows none). It shows the voucher's public facts (GET /api/v1/vouchers/{id}),
 * then the buyer's place in the waiting room (POST|GET /api/v1/vouchers/{id}/queue), the
 * purchase with the admission (POST .../seckill, X-Admission) and the order
 * (GET .../orders/me, POST /api/v1/orders/{orderId}/cancel).
 *
 * Rules it keeps:
 * - Time is the server's: every answer with serverTime sets offset = serverTime - Date.now()
 *   and every countdown is computed from Date.now() + offset.
 * - Polls wait what the server says (pollAfterMs, retryAfterMs, Retry-After), never for a
 *   countdown of the page's own; without a hint (the network failed) they back off.
 * - Every state is reachable again by reloading: the server holds the member state and
 *   the order; the admission is also kept in sessionStorage for this voucher.
 * - Text from the server (the title, reasons) is written with textContent only.
 * - Identity: Authorization: Bearer from sessionStorage "seckill.token" (set by the shop's
 *   login page), or none (a trusted gateway adds it). Only when the front says so
 *   (data-fragment-token="1", SECKILL_PAGE_FRAGMENT_TOKEN=1) is a #token=... fragment
 *   taken into sessionStorage, never replacing another token without asking. */
'use strict';

(function () {
  const body = document.body;
  const V = body.dataset.voucher || '';
  const FRAGMENT_TOKEN = body.dataset.fragmentToken === '1';
  const TOKEN_KEY = 'seckill.token';
  const ADMISSION_KEY = 'seckill.admission.' + V;
  const TICKET_KEY = 'seckill.ticket.' + V;     // the signed position ticket of this buyer's place
  const API = '/api/v1/vouchers/' + V;
  const MIN_POLL_MS = 250;
  const MAX_POLL_MS = 60000;

  const $ = (id) => document.getElementById(id);
  const el = {
    main: $('sale'), title: $('title'), price: $('price'), when: $('when'),
    headline: $('headline'), detail: $('detail'), place: $('place'), position: $('position'),
    ahead: $('ahead'), eta: $('eta'), progress: $('progress'), countdown: $('countdown'),
    join: $('join'), buy: $('buy'), cancel: $('cancel'), rejoin: $('rejoin'),
  };

  let offset = 0;        /* serverTime - Date.now() at the last answer that carried it (ms) */
  let facts = null;      /* GET /api/v1/vouchers/{id} */
  let order = null;      /* the last orders/me answer */
  let timer = 0;         /* the one pending poll */
  let backoffMs = 1000;  /* the next wait when the server gave no hint */
  let countdown = null;  /* { at: server ms, label, done } shown by tick() */
  let buying = false;    /* a purchase is in flight: polls do not redraw */
  let boughtHere = false; /* this page's purchase was accepted (200/202) */

  /* ------------------------------------------------------------ small tools ---- */

  const store = {
    get(k) { try { return window.sessionStorage.getItem(k); } catch (e) { return null; } },
    set(k, v) { try { window.sessionStorage.setItem(k, v); } catch (e) { /* private mode */ } },
    del(k) { try { window.sessionStorage.removeItem(k); } catch (e) { /* private mode */ } },
  };

  /* A number of the JSON (ms, counts): a number or a decimal string, else null. */
  function num(x) {
    if (typeof x === 'number' && Number.isFinite(x)) return x;
    if (typeof x === 'string' && /^-?\d+$/.test(x)) return Number(x);
    return null;
  }

  /* A time of the API in ms since the epoch: a number (the room's answers) or the
   * "YYYY-mm-ddTHH:MM:SS.mmm" UTC text of orders/me's payDeadline; else null. */
  function when(x) {
    const n = num(x);
    if (n !== null) return n;
    if (typeof x === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?$/.test(x)) {
      const t = Date.parse(x.replace(/(\.\d{3})\d*$/, '$1') + 'Z');
      return Number.isFinite(t) ? t : null;
    }
    return null;
  }

  function serverNow() { return Date.now() + offset; }

  function learnTime(b) {
    const t = b ? num(b.serverTime) : null;
    if (t !== null) offset = t - Date.now();
  }

  function duration(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    const two = (n) => (n < 10 ? '0' : '') + n;
    return h > 0 ? h + ':' + two(m) + ':' + two(r) : m + ':' + two(r);
  }

  function clock(ms) {
    const d = new Date(ms);
    return isNaN(d.getTime()) ? '' : d.toLocaleString();
  }

  function money(minor, currency) {
    const n = num(minor);
    if (n === null) return '';
    try {
      const f = new Intl.NumberFormat(undefined, { style: 'currency', currency: currency || 'CNY' });
      return f.format(n / Math.pow(10, f.resolvedOptions().maximumFractionDigits));
    } catch (e) {
      return (n / 100).toFixed(2) + ' ' + (currency || '');
    }
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function schedule(ms, fn) {
    clearTimeout(timer);
    timer = setTimeout(fn, Math.min(MAX_POLL_MS, Math.max(0, ms)));
  }

  function stopPolling() { clearTimeout(timer); timer = 0; }

  /* The wait after a failure without a hint: 1 s doubling to 30 s, jittered ±20%. */
  function nextBackoff() {
    const ms = backoffMs * (0.8 + 0.4 * Math.random());
    backoffMs = Math.min(30000, backoffMs * 2);
    return ms;
  }

  /* ------------------------------------------------------------ identity ---- */

  /* DESIGN.md 18: #token=... only with SECKILL_PAGE_FRAGMENT_TOKEN=1; the fragment is
   * removed from the address bar (and so from the history) whatever is decided. */
  function takeFragmentToken() {
    if (!location.hash || location.hash.length < 2) return;
    const params = new URLSearchParams(location.hash.slice(1));
    const t = params.get('token');
    if (t === null) return;
    params.delete('token');
    const rest = params.toString();
    history.replaceState(history.state, '', location.pathname + location.search + (rest ? '#' + rest : ''));
    if (!FRAGMENT_TOKEN || !/^[A-Za-z0-9._~+/=-]{1,8192}$/.test(t)) return;
    const old = store.get(TOKEN_KEY);
    if (old === t) return;
    if (old && !window.confirm('This link signs in another buyer on this page. Replace the buyer signed in now?'))
      return;
    store.set(TOKEN_KEY, t);
    store.del(ADMISSION_KEY);
    store.del(TICKET_KEY);
  }

  /* ------------------------------------------------------------ the API ---- */

  /* One request to the front; never throws. { status (0 = no answer), body, code,
   * retryMs (retryAfterMs of the body, else Retry-After, else null) }. */
  async function call(method, path, extra) {
    const headers = { Accept: 'application/json' };
    const token = store.get(TOKEN_KEY);
    if (token) headers.Authorization = 'Bearer ' + token;
    Object.assign(headers, extra || {});
    let res;
    try {
      res = await fetch(path, { method, headers, cache: 'no-store', credentials: 'same-origin', redirect: 'error' });
    } catch (e) {
      return { status: 0, body: null, code: null, retryMs: null };
    }
    let b = null;
    try { b = await res.json(); } catch (e) { b = null; }
    learnTime(b);
    let retryMs = b ? num(b.retryAfterMs) : null;
    if (retryMs === null) {
      const ra = res.headers.get('Retry-After');
      if (ra && /^\d+$/.test(ra)) retryMs = Number(ra) * 1000;
    }
    return { status: res.status, body: b, code: b ? num(b.code) : null, retryMs };
  }

  /* ------------------------------------------------------------ drawing ---- */

  /* One state of the page: data-state, the announced headline and detail (the aria-live
   * region changes only when they do), the visible controls and the countdown. */
  function show(state, headline, detail, opts) {
    const o = opts || {};
    el.main.dataset.state = state;
    setText(el.headline, headline);
    setText(el.detail, detail || '');
    for (const b of ['join', 'buy', 'cancel', 'rejoin']) {
      el[b].hidden = !(o.buttons || []).includes(b);
      el[b].disabled = false;
    }
    el.place.hidden = !o.place;
    el.progress.hidden = !o.place;
    countdown = o.countdown || null;
    for (const k of ['position', 'unitsHeld', 'closed', 'orderId', 'orderStatus']) {
      if (o[k] === undefined || o[k] === null) delete el.main.dataset[k];
      else el.main.dataset[k] = String(o[k]);
    }
    tick();
  }

  function tick() {
    if (!countdown) {
      setText(el.countdown, '');
      return;
    }
    const left = countdown.at - serverNow();
    setText(el.countdown, left > 0 ? countdown.label + ' ' + duration(left) : (countdown.done || ''));
  }

  function renderFacts() {
    const title = typeof facts.title === 'string' && facts.title ? facts.title : 'Flash sale';
    setText(el.title, title);
    document.title = title;
    setText(el.price, money(facts.price, facts.currency));
    const b = num(facts.beginTime), e = num(facts.endTime);
    setText(el.when, b !== null && e !== null ? 'On sale ' + clock(b) + ' – ' + clock(e) : '');
  }

  function queueOn() { return !!(facts && facts.queue && facts.queue.mode === 'on'); }

  function transient(r, retry) {
    show(el.main.dataset.state === 'loading' ? 'error' : el.main.dataset.state,
      el.headline.textContent, 'The shop is busy. Trying again shortly…',
      { buttons: visibleButtons(), place: !el.place.hidden, countdown,
        position: el.main.dataset.position, unitsHeld: el.main.dataset.unitsHeld,
        closed: el.main.dataset.closed, orderId: el.main.dataset.orderId,
        orderStatus: el.main.dataset.orderStatus });
    schedule(r.retryMs !== null ? r.retryMs : nextBackoff(), retry);
  }

  function visibleButtons() {
    return ['join', 'buy', 'cancel', 'rejoin'].filter((b) => !el[b].hidden);
  }

  function signIn() {
    stopPolling();
    show('signin', 'Please sign in', 'Sign in at the shop, then open this page again.');
  }

  function ended() {
    stopPolling();
    store.del(ADMISSION_KEY);
    show('ended', 'The sale has ended', 'This sale is over.');
  }

  function unknown() {
    stopPolling();
    show('unknown', 'No such sale', 'This sale does not exist or is not on sale. Check the link.');
  }

  /* ------------------------------------------------------------ admission ---- */

  function saveAdmission(m) {
    store.set(ADMISSION_KEY, JSON.stringify({ token: m.admission, admitUntil: num(m.admitUntil), position: num(m.position) }));
  }

  function loadAdmission() {
    try {
      const a = JSON.parse(store.get(ADMISSION_KEY) || 'null');
      if (a && typeof a.token === 'string' && a.token && typeof a.admitUntil === 'number') return a;
    } catch (e) { /* not ours */ }
    return null;
  }

  function showAdmitted(a) {
    show('admitted', "It's your turn: buy now",
      'Your place ' + a.position + ' has come up. Buy before your turn ends.',
      { buttons: ['buy'], countdown: { at: a.admitUntil, label: 'Your turn ends in', done: 'Your turn is ending…' },
        position: a.position });
  }

  /* ------------------------------------------------------------ the member ---- */

  async function poll() {
    if (buying) return;
    // the position ticket lets the front answer a waiting member from the room state it
    // already holds, without a Redis command (DESIGN.md 18 "Polling costs little")
    const ticket = store.get(TICKET_KEY);
    handleMember(await call('GET', API + '/queue', ticket ? { 'X-Queue-Ticket': ticket } : {}), poll);
  }

  async function join() {
    el.join.disabled = true;
    el.rejoin.disabled = true;
    store.del(ADMISSION_KEY);
    store.del(TICKET_KEY);
    handleMember(await call('POST', API + '/queue'), join);
  }

  /* An answer of POST or GET .../queue; @p again repeats the call after a transient failure. */
  function handleMember(r, again) {
    if (buying) return;
    if (r.status === 200 && r.body && typeof r.body.state === 'string') {
      backoffMs = 1000;
      if (typeof r.body.ticket === 'string') store.set(TICKET_KEY, r.body.ticket);
      renderMember(r.body);
      return;
    }
    if (r.status === 404 && r.code === 10016) { store.del(TICKET_KEY); notMember(); return; }
    if (r.status === 401) { signIn(); return; }
    if (r.status === 404 && r.code === 10004) { unknown(); return; }
    if (r.status === 403 && r.code === 10003) { ended(); return; }
    if (r.status === 409 && r.code === 10005) {
      stopPolling();
      show('sold_out', 'Sold out', 'Every unit is sold. The line is closed.', { unitsHeld: 0, closed: true });
      return;
    }
    if (r.status === 403 && r.code === 10015) {
      const opens = r.body ? num(r.body.opensAt) : null;
      show('before_open', 'The line is not open yet',
        'You will be placed in the line automatically when it opens' + (opens !== null ? ' at ' + clock(opens) : '') + '.',
        { countdown: opens !== null ? { at: opens, label: 'The line opens in', done: 'Opening…' } : null });
      schedule(r.retryMs !== null ? r.retryMs : nextBackoff(), join);
      return;
    }
    transient(r, again);
  }

  function pollAfter(m) {
    const ms = num(m.pollAfterMs);
    return ms === null ? nextBackoff() : Math.max(MIN_POLL_MS, ms);
  }

  function renderMember(m) {
    const after = pollAfter(m);
    switch (m.state) {
    case 'prequeue': {
      const begin = num(m.begin), members = num(m.members);
      show('prequeue', 'You are in the pre-queue: places are drawn at the start',
        (members !== null ? members + (members === 1 ? ' buyer is' : ' buyers are') + ' in the pre-queue. ' : '') +
        'When the sale opens every place is drawn at random, so arriving early neither helps nor hurts. Keep this page open.',
        { countdown: begin !== null ? { at: begin, label: 'The sale opens in', done: 'Drawing the places…' } : null });
      schedule(after, poll);
      return;
    }
    case 'waiting': {
      const p = num(m.position), a = num(m.ahead), eta = num(m.etaSeconds), left = num(m.unitsLeft);
      setText(el.position, p !== null ? String(p) : '–');
      setText(el.ahead, a !== null ? String(a) : '–');
      setText(el.eta, eta !== null ? 'about ' + duration(eta * 1000) : 'unknown');
      if (p !== null && a !== null && p > 0) {
        el.progress.max = p;
        el.progress.value = Math.max(0, p - a);
      }
      show('waiting', 'You are in the line',
        (left !== null ? left + (left === 1 ? ' unit is' : ' units are') + ' left. ' : '') +
        'Keep this page open: the Buy button appears when your turn comes.',
        { place: true, position: p });
      schedule(after, poll);
      return;
    }
    case 'admitted': {
      if (typeof m.admission !== 'string' || !m.admission) break;
      saveAdmission(m);
      showAdmitted(loadAdmission());
      schedule(after, poll);
      return;
    }
    case 'used':
      store.del(ADMISSION_KEY);
      stopPolling();
      loadOrder(false);
      return;
    case 'expired':
      store.del(ADMISSION_KEY);
      stopPolling();
      show('expired', 'Your turn has passed',
        'Your turn ended before you bought. Join the line again to get a new place at its end.',
        { buttons: ['rejoin'], position: num(m.position) });
      return;
    case 'sold_out': {
      const held = num(m.unitsHeld) || 0, until = num(m.heldUntil), closed = m.closed === true;
      store.del(ADMISSION_KEY);
      if (closed) {
        stopPolling();
        show('sold_out', 'Sold out', 'Every unit is sold and paid for. The sale is closed.', { unitsHeld: held, closed: true });
        return;
      }
      show('sold_out', 'Sold out for now',
        held > 0
          ? held + (held === 1 ? ' unit is' : ' units are') + ' held by buyers who have not paid yet' +
            (until !== null ? ', at the latest until ' + clock(until) : '') +
            '. If one comes back you keep your place and your turn may still come.'
          : 'No unit is left. If one comes back you keep your place.',
        { unitsHeld: held, closed: false,
          countdown: held > 0 && until !== null ? { at: until, label: 'Held units decided in at most', done: '' } : null });
      schedule(after, poll);
      return;
    }
    case 'ended':
      ended();
      return;
    default:
      break;
    }
    transient({ retryMs: after }, poll);
  }

  /* Not a member: Join, unless this buyer already has an active order (bought earlier). */
  async function notMember() {
    stopPolling();
    store.del(ADMISSION_KEY);
    const r = await call('GET', API + '/orders/me');
    if (r.status === 200 && r.body && (r.body.orderStatus === 'UNPAID' || r.body.orderStatus === 'PAID')) {
      renderOrder(r.body, true);
      return;
    }
    const opens = facts && facts.queue ? num(facts.queue.opensAt) : null;
    const before = opens !== null && opens > serverNow();
    show('join', before ? 'The line opens soon' : 'Join the line',
      before ? 'Join now and you are placed as soon as the line opens.'
        : 'Join the line to get your place. Places of those who join before the sale opens are drawn at random.',
      { buttons: ['join'], countdown: before ? { at: opens, label: 'The line opens in', done: 'The line is open' } : null });
  }

  /* ------------------------------------------------------------ the purchase ---- */

  async function buy() {
    const a = loadAdmission();
    if (queueOn() && !a) { poll(); return; }
    buying = true;
    stopPolling();
    el.buy.disabled = true;
    show('buying', 'Buying…', 'Your purchase is on its way.', { position: a ? a.position : null });
    const r = await call('POST', API + '/seckill', a ? { 'X-Admission': a.token } : {});
    buying = false;
    if (r.status === 202 || r.status === 200) {
      boughtHere = true;
      store.del(ADMISSION_KEY);
      showPending(r.body && r.body.orderId);
      schedule(500, () => loadOrder(false));
      return;
    }
    if (r.status === 409 && r.code === 10006) {
      store.del(ADMISSION_KEY);
      loadOrder(true);
      return;
    }
    if (r.status === 401) { signIn(); return; }
    if (r.status === 403 && r.code === 10003) { ended(); return; }
    if ((r.status === 409 && r.code === 10005) || (r.status === 403 && r.code === 10014)) {
      /* The unit or the turn is gone: the room says what this buyer is now. */
      store.del(ADMISSION_KEY);
      poll();
      return;
    }
    /* Nothing was decided (503, no answer): the turn is kept while it lasts. */
    if (a) {
      showAdmitted(a);
      setText(el.detail, 'The shop is busy and nothing was bought. Your turn is kept: try again.');
      schedule(r.retryMs !== null ? r.retryMs : nextBackoff(), poll);
    } else {
      transient(r, poll);
    }
  }

  function showPending(orderId) {
    show('pending', 'Your order is being confirmed', 'This takes a moment.', { orderId: orderId || null });
  }

  /* ------------------------------------------------------------ the order ---- */

  let orderPolls = 0;

  async function loadOrder(already) {
    const r = await call('GET', API + '/orders/me');
    if (r.status === 200 && r.body) {
      renderOrder(r.body, already);
      return;
    }
    if (r.status === 401) { signIn(); return; }
    if (r.status === 403 && r.code === 10003) { ended(); return; }
    transient(r, () => loadOrder(already));
  }

  /* orders/me has no poll hint: 1 s while the order is being decided, backing off to 5 s;
   * 10 s while it waits for payment. */
  function renderOrder(o, already) {
    order = o;
    const id = typeof o.orderId === 'string' ? o.orderId : null;
    const st = o.orderStatus, s = o.state;
    const common = { orderId: id, orderStatus: st || null };
    if (st === 'UNPAID') {
      const dl = when(o.payDeadline);
      show(already ? 'already' : 'unpaid', already ? 'You have already bought this' : 'Your order is waiting for payment',
        'Order ' + (id || '') + (dl !== null ? ': pay before ' + clock(dl) + '.' : '.'),
        Object.assign({ buttons: ['cancel'], countdown: dl !== null ? { at: dl, label: 'Pay within', done: 'The time to pay is over' } : null }, common));
      schedule(10000, () => loadOrder(already));
      return;
    }
    if (st === 'PAID') {
      stopPolling();
      show(already ? 'already' : 'paid', already ? 'You have already bought this' : 'You bought it',
        'Order ' + (id || '') + ' is paid.', common);
      return;
    }
    if (st === 'CANCELLED' || st === 'CLOSED' || s === 'CLOSED' || s === 'FAILED') {
      stopPolling();
      const why = st === 'CANCELLED' ? 'Your order was cancelled'
        : s === 'FAILED' ? 'Your purchase did not go through' : 'Your order was closed';
      const reason = s === 'FAILED' && typeof o.reason === 'string' ? ' (' + o.reason + ')' : '';
      show(st === 'CANCELLED' ? 'cancelled' : s === 'FAILED' ? 'failed' : 'closed', why,
        (st === 'CLOSED' || s === 'CLOSED' ? 'It was not paid in time' + reason + '. ' : reason ? reason.trim() + '. ' : '') +
        'The unit went back to the line. You can join the line again.',
        Object.assign({ buttons: ['rejoin'] }, common));
      return;
    }
    if (s === 'NONE' && !boughtHere) {
      /* The room says "used" and there is no order: the purchase was answered sold out
       * (10005) when this buyer's turn came (DESIGN.md 18: such a member stays used). */
      stopPolling();
      show('sold_out', 'Sold out', 'No unit was left when your turn came.', { unitsHeld: null, closed: null });
      return;
    }
    /* PENDING, or NONE just after this page's own purchase was accepted. */
    showPending(id);
    orderPolls += 1;
    schedule(Math.min(5000, 1000 * Math.ceil(orderPolls / 5)), () => loadOrder(already));
  }

  async function cancelOrder() {
    const id = el.main.dataset.orderId;
    if (!id) return;
    el.cancel.disabled = true;
    stopPolling();
    const r = await call('POST', '/api/v1/orders/' + id + '/cancel');
    if (r.status === 200 || (r.status === 409 && r.code === 10022)) {
      loadOrder(false);
      return;
    }
    if (r.status === 401) { signIn(); return; }
    el.cancel.disabled = false;
    setText(el.detail, r.status === 404 ? 'This order cannot be found.' : 'The shop is busy: the order was not cancelled. Try again.');
    schedule(r.retryMs !== null ? r.retryMs : nextBackoff(), () => loadOrder(false));
  }

  /* ------------------------------------------------------------ start ---- */

  async function loadFacts() {
    const r = await call('GET', API);
    if (r.status === 200 && r.body) {
      facts = r.body;
      backoffMs = 1000;
      renderFacts();
      const end = num(facts.endTime);
      if (end !== null && end <= serverNow()) { ended(); return; }
      if (!queueOn()) {
        const begin = num(facts.beginTime);
        const before = begin !== null && begin > serverNow();
        show('noroom', before ? 'The sale starts soon' : 'On sale now',
          'This sale has no waiting room: buy when it starts.',
          { buttons: ['buy'], countdown: before ? { at: begin, label: 'The sale starts in', done: 'On sale now' } : null });
        return;
      }
      const a = loadAdmission();
      if (a && a.admitUntil > serverNow()) showAdmitted(a);
      poll();
      return;
    }
    if (r.status === 404) { unknown(); return; }
    if (r.status === 403 && r.code === 10003) { ended(); return; }
    transient(r, loadFacts);
  }

  function start() {
    if (!/^[1-9][0-9]{0,18}$/.test(V)) {
      unknown();
      return;
    }
    takeFragmentToken();
    el.join.addEventListener('click', join);
    el.rejoin.addEventListener('click', join);
    el.buy.addEventListener('click', buy);
    el.cancel.addEventListener('click', cancelOrder);
    setInterval(tick, 250);
    loadFacts();
  }

  start();
}());
