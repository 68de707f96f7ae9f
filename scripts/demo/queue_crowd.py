#!/usr/bin/env python3
"""queue_crowd.py: the crowd of `scripts/demo.sh --queue` (DESIGN.md 18 "Demo"): members
join a voucher's waiting room during its pre-queue, then poll and buy as the buyer page
does (pollAfterMs / retryAfterMs, never a clock of their own), and each winner pays its
order with a signed callback, so the room closes once every unit is paid.

  queue_crowd.py --addr HOST:PORT --voucher ID --tokens FILE --first-user N --begin-ms MS
                 --pay-secret S --price MINOR --currency CUR --out FILE [--conns 64]

FILE of tokens: one JWT a line, for users first-user, first-user+1, ... Members join at
random times spread over the --join-s seconds before begin. Writes one JSON object to
--out with each member's join time, position, admission and purchase times and when it
learned sold out, plus the poll count; queue.sh turns it into the report.
Plain asyncio and HTTP/1.1 keep-alive connections (no third-party module)."""
import argparse
import asyncio
import hashlib
import hmac
import json
import random
import sys
import time


def now_ms():
    return int(time.time() * 1000)


class Pool:
    """Keep-alive HTTP/1.1 connections to one front; each request takes one."""

    def __init__(self, host, port, size):
        self.host, self.port = host, port
        self.free = asyncio.Queue()
        for _ in range(size):
            self.free.put_nowait(None)

    async def request(self, method, path, headers=None, body=b""):
        conn = await self.free.get()
        try:
            for attempt in range(2):
                if conn is None:
                    conn = await asyncio.open_connection(self.host, self.port)
                reader, writer = conn
                head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {len(body)}\r\n"
                for k, v in (headers or {}).items():
                    head += f"{k}: {v}\r\n"
                try:
                    writer.write(head.encode() + b"\r\n" + body)
                    await writer.drain()
                    status_line = await reader.readline()
                    if not status_line:
                        raise ConnectionError("closed")
                    status = int(status_line.split()[1])
                    length, close, retry_after = 0, False, None
                    while True:
                        line = await reader.readline()
                        if line in (b"\r\n", b"\n", b""):
                            break
                        k, _, v = line.decode("latin-1").partition(":")
                        k, v = k.strip().lower(), v.strip()
                        if k == "content-length":
                            length = int(v)
                        elif k == "connection" and v.lower() == "close":
                            close = True
                        elif k == "retry-after" and v.isdigit():
                            retry_after = int(v) * 1000
                    data = await reader.readexactly(length) if length else b""
                    if close:
                        writer.close()
                        conn = None
                    try:
                        obj = json.loads(data) if data else None
                    except ValueError:
                        obj = None
                    return status, obj, retry_after
                except (ConnectionError, OSError, asyncio.IncompleteReadError, IndexError, ValueError):
                    try:
                        writer.close()
                    except Exception:  # noqa: BLE001 - already broken
                        pass
                    conn = None
                    if attempt == 1:
                        return 0, None, None
            return 0, None, None
        finally:
            self.free.put_nowait(conn)


class Crowd:
    def __init__(self, a, tokens):
        host, _, port = a.addr.rpartition(":")
        self.pool = Pool(host, int(port), a.conns)
        self.a = a
        self.tokens = tokens
        self.q = f"/api/v1/vouchers/{a.voucher}"
        self.members = []
        self.polls = 0
        self.t_first_poll = None
        self.t_last_poll = None
        self.stop = False

    def hint(self, obj, retry_after, default):
        for k in ("pollAfterMs", "retryAfterMs"):
            if obj and isinstance(obj.get(k), int):
                return max(50, obj[k])
        return retry_after if retry_after else default

    async def pay(self, m, order_id):
        body = json.dumps({"orderId": order_id, "providerTxnId": f"demo-{self.a.voucher}-{m['user']}",
                           "amount": str(self.a.price), "currency": self.a.currency}, separators=(",", ":")).encode()
        for _ in range(120):
            t = int(time.time())
            sig = hmac.new(self.a.pay_secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
            st, obj, ra = await self.pool.request("POST", "/api/v1/payments/callback",
                                                  {"Content-Type": "application/json",
                                                   "X-Payment-Signature": f"t={t},v1={sig}"}, body)
            if st == 200:
                m["paid_ms"] = now_ms()
                return
            if st != 503 and st != 0:
                m["pay_error"] = st
                return
            await asyncio.sleep((ra or 500) / 1000)

    async def member(self, k):
        a = self.a
        m = {"user": a.first_user + k}
        self.members.append(m)
        auth = {"Authorization": "Bearer " + self.tokens[k]}
        await asyncio.sleep(max(0.0, (a.join_at[k] - now_ms()) / 1000))
        while not self.stop:
            m["join_ms"] = now_ms()
            st, obj, ra = await self.pool.request("POST", self.q + "/queue", auth)
            if st == 200:
                break
            if st == 403 and obj and obj.get("code") == 10003:
                return
            await asyncio.sleep(self.hint(obj, ra, 1000) / 1000)
        state, wait = obj, self.hint(obj, None, 1000)
        while not self.stop:
            s = state.get("state") if state else None
            if s == "prequeue":
                m["prequeue"] = True
            if state and isinstance(state.get("position"), int) and "position" not in m:
                m["position"] = state["position"]
            if s == "admitted" and "admitted_ms" not in m:
                m["admitted_ms"] = now_ms()
                st, obj, ra = await self.pool.request("POST", self.q + "/seckill",
                                                      dict(auth, **{"X-Admission": state["admission"]}))
                m["buy_status"] = st
                m["buy_code"] = obj.get("code") if obj else None
                if st in (200, 202):
                    m["bought_ms"] = now_ms()
                    await self.pay(m, obj["orderId"])
                    return
                if st == 503:
                    del m["admitted_ms"]  # nothing decided: the turn is kept
            elif s == "sold_out":
                if "sold_out_ms" not in m:
                    m["sold_out_ms"] = now_ms()
                if state.get("closed"):
                    m["closed_ms"] = now_ms()
                    return
            elif s in ("used", "expired", "ended"):
                m["final"] = s
                return
            await asyncio.sleep(wait / 1000)
            st, obj, ra = await self.pool.request("GET", self.q + "/queue", auth)
            t = now_ms()
            self.polls += 1
            self.t_first_poll = self.t_first_poll or t
            self.t_last_poll = t
            if st == 200 and obj:
                state, wait = obj, self.hint(obj, None, 1000)
            else:
                wait = self.hint(obj, ra, 1000)

    async def run(self):
        tasks = [asyncio.create_task(self.member(k)) for k in range(len(self.tokens))]
        deadline = time.time() + self.a.max_s
        while time.time() < deadline and not all(t.done() for t in tasks):
            await asyncio.sleep(0.5)
        self.stop = True
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--addr", required=True)
    p.add_argument("--voucher", required=True)
    p.add_argument("--tokens", required=True)
    p.add_argument("--first-user", type=int, required=True)
    p.add_argument("--begin-ms", type=int, required=True)
    p.add_argument("--join-s", type=float, default=30.0)
    p.add_argument("--pay-secret", required=True)
    p.add_argument("--price", type=int, required=True)
    p.add_argument("--currency", default="CNY")
    p.add_argument("--conns", type=int, default=64)
    p.add_argument("--max-s", type=float, default=600.0)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    with open(a.tokens) as f:
        tokens = [line.strip() for line in f if line.strip()]
    start = max(now_ms(), a.begin_ms - int(a.join_s * 1000))
    span = max(1, a.begin_ms - 2000 - start)
    a.join_at = [start + random.randrange(span) for _ in tokens]
    crowd = Crowd(a, tokens)
    asyncio.run(crowd.run())
    out = {"members": crowd.members, "polls": crowd.polls, "firstPollMs": crowd.t_first_poll,
           "lastPollMs": crowd.t_last_poll, "beginMs": a.begin_ms}
    with open(a.out, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
