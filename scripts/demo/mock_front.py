#!/usr/bin/env python3
"""scripts/demo/mock_front.py: a stand-in for seckill-front's purchase route, for
selftest.sh only. Same answers as DESIGN.md 3 for the cases the crowd meets: 202 with
orderId/traceId (strings), 409 10005 sold out, 409 10006 already bought (membership
before stock), 404 10004 unknown voucher, 400 10001 without X-User-Id, and a 503 for
every 50th request (to exercise the crowd's retries). GET /healthz answers 200.

  mock_front.py PORT VOUCHER=STOCK [VOUCHER=STOCK ...]

On SIGTERM it writes its own record (accepted traceIds per voucher) as JSON on stdout."""
import http.server
import itertools
import json
import re
import signal
import sys
import threading

lock = threading.Lock()
seq = itertools.count(1)
stock, users, accepted = {}, {}, {}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        m = re.match(r"^/api/v1/vouchers/([1-9][0-9]{0,18})/seckill$", self.path)
        user = self.headers.get("X-User-Id") or ""
        if not m or not re.match(r"^[1-9][0-9]{0,18}$", user):
            return self.answer(400, {"code": 10001})
        v = m.group(1)
        with lock:
            k = next(seq)
            if v not in stock:
                return self.answer(404, {"code": 10004})
            if k % 50 == 0:
                return self.answer(503, {"code": 10013, "state": "NONE"})
            if (v, user) in users:
                return self.answer(409, {"code": 10006})
            if stock[v] <= 0:
                return self.answer(409, {"code": 10005})
            stock[v] -= 1
            order, trace = str(4000000000000000000 + 2 * k), str(4000000000000000001 + 2 * k)
            users[(v, user)] = trace
            accepted.setdefault(v, []).append(trace)
        self.answer(202, {"code": 0, "orderId": order, "traceId": trace, "state": "PENDING"})

    def do_GET(self):
        self.answer(200, {"status": "ok"})


def main():
    port = int(sys.argv[1])
    for arg in sys.argv[2:]:
        v, n = arg.split("=")
        stock[v] = int(n)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True

    def stop(*_):
        threading.Thread(target=srv.shutdown).start()
    signal.signal(signal.SIGTERM, stop)
    srv.serve_forever()
    with lock:
        json.dump({"accepted": accepted, "users": len(users)}, sys.stdout)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
