#!/usr/bin/env python3
"""sk_sqlproxy.py: a TCP proxy between a binary and MariaDB that holds or drops a COMMIT
(DESIGN.md 16 "Answers after an unknown COMMIT": what a client is told after a COMMIT
whose outcome it cannot know). Test tool of the fault suite (tests/support/ft_db.sh
ft_sqlproxy*); Python 3 from Debian, standard library only.

    sk_sqlproxy.py --listen HOST:PORT --upstream HOST:PORT --control PATH [--arm RULE]
    sk_sqlproxy.py --control PATH --send "COMMAND"      (prints the proxy's answer)

It reads the MySQL protocol the client sends (packets: 3-byte length, 1-byte sequence;
a command is a packet of sequence 0: COM_QUERY 0x03 and COM_STMT_PREPARE 0x16 carry SQL
text) and forwards everything unchanged until a rule fires. A rule is armed by a marker:
once a statement containing MARKER (case-insensitive, e.g. "INSERT INTO tb_payment") was
seen on a connection, the next COMMIT (COM_QUERY "COMMIT") on that connection fires it
(a ROLLBACK disarms the connection), at most COUNT times in all:

    hold         the COMMIT is held HOLD_MS, then forwarded (the transaction's row locks
                 stay held meanwhile)
    drop_before  after HOLD_MS the link is dropped instead of forwarding the COMMIT (the
                 server rolls the transaction back; the client sees a lost connection:
                 an unknown outcome that did not apply)
    drop_after   after HOLD_MS the COMMIT is forwarded, its answer swallowed and the link
                 dropped (applied; the client sees a lost connection)
    late_commit  the client's link is dropped at once, the COMMIT forwarded to the server
                 HOLD_MS later (the transaction and its row locks live on meanwhile), then
                 the server's link closed: the COMMIT is still being applied while the
                 client reconnects and resolves (applied, later than the client thinks)

After a drop, every new connection is held RECONNECT_MS before it is connected upstream
(a slow reconnect: a dead first node of a multi-host URL). The server side of a dropped
link is closed too, so the server rolls back what it had not committed.

Control socket (PATH, a unix stream socket; one line in, one line out):
    arm ACTION HOLD_MS RECONNECT_MS COUNT MARKER...   -> "ok"   (replaces the rule)
    disarm                                            -> "ok"
    delay MS          hold every new connection MS from now      -> "ok"
    status            -> "fired=N conns=N open=N marked=N"
--arm RULE is the same "ACTION HOLD_MS RECONNECT_MS COUNT MARKER..." at start. Events go
to stderr, one line each ("sqlproxy ts=... event=..."), so a case can grep them.

What it deliberately does not do: TLS (it cannot read an encrypted stream: the cases
run without it), compression, or parse anything the server sends.
"""
import argparse
import asyncio
import os
import sys
import time

COM_QUERY = 0x03
COM_STMT_PREPARE = 0x16
ACTIONS = ("hold", "drop_before", "drop_after", "late_commit")


class Rule:
    def __init__(self, action, hold_ms, reconnect_ms, count, marker):
        self.action, self.hold_ms, self.reconnect_ms = action, hold_ms, reconnect_ms
        self.count, self.marker = count, marker.lower().encode()

    @staticmethod
    def parse(words):
        """ACTION HOLD_MS RECONNECT_MS COUNT MARKER... -> Rule (ValueError if malformed)."""
        if len(words) < 5 or words[0] not in ACTIONS:
            raise ValueError("ACTION HOLD_MS RECONNECT_MS COUNT MARKER... (ACTION: %s)"
                             % "|".join(ACTIONS))
        nums = [int(w) for w in words[1:4]]
        if min(nums) < 0:
            raise ValueError("negative number")
        return Rule(words[0], nums[0], nums[1], nums[2], " ".join(words[4:]))


class Proxy:
    def __init__(self, upstream):
        self.upstream = upstream
        self.rule = None
        self.fired = 0
        self.conns = 0
        self.open = set()           # Conn objects with a live link
        self.delay_until = 0.0      # monotonic: new connections wait until then

    def log(self, event, **kv):
        extra = "".join(" %s=%s" % (k, v) for k, v in kv.items())
        sys.stderr.write("sqlproxy ts=%.3f event=%s%s\n" % (time.time(), event, extra))
        sys.stderr.flush()

    async def client(self, creader, cwriter):
        self.conns += 1
        conn = Conn(self, self.conns, creader, cwriter)
        wait = self.delay_until - time.monotonic()
        if wait > 0:
            self.log("accept_held", conn=conn.n, ms=int(wait * 1000))
            await asyncio.sleep(wait)
        try:
            host, port = self.upstream
            conn.sreader, conn.swriter = await asyncio.open_connection(host, port)
        except OSError as e:
            self.log("upstream_refused", conn=conn.n, reason='"%s"' % e)
            cwriter.close()
            return
        self.open.add(conn)
        try:
            await conn.run()
        finally:
            self.open.discard(conn)

    def take_rule(self):
        """The armed rule if it may fire once more (its count decremented), else None."""
        r = self.rule
        if not r or r.count <= 0:
            return None
        r.count -= 1
        self.fired += 1
        return r

    async def control(self, reader, writer):
        try:
            line = (await reader.readline()).decode(errors="replace").strip()
            words = line.split()
            out = "ok"
            if not words:
                out = "error empty command"
            elif words[0] == "arm":
                try:
                    self.rule = Rule.parse(words[1:])
                    self.log("armed", action=self.rule.action, hold_ms=self.rule.hold_ms,
                             reconnect_ms=self.rule.reconnect_ms, count=self.rule.count,
                             marker='"%s"' % self.rule.marker.decode())
                except ValueError as e:
                    out = "error %s" % e
            elif words[0] == "disarm":
                self.rule = None
                self.log("disarmed")
            elif words[0] == "delay" and len(words) == 2 and words[1].isdigit():
                self.delay_until = time.monotonic() + int(words[1]) / 1000.0
                self.log("delay", ms=words[1])
            elif words[0] == "status":
                out = "fired=%d conns=%d open=%d marked=%d" % (
                    self.fired, self.conns, len(self.open),
                    sum(1 for c in self.open if c.marked))
            else:
                out = "error unknown command (arm, disarm, delay MS, status)"
            writer.write((out + "\n").encode())
            await writer.drain()
        finally:
            writer.close()


class Conn:
    def __init__(self, proxy, n, creader, cwriter):
        self.p, self.n = proxy, n
        self.creader, self.cwriter = creader, cwriter
        self.sreader = self.swriter = None
        self.marked = False         # the marker was seen in this transaction
        self.swallow = False        # drop_after: the next server bytes are the COMMIT's answer
        self.closed = False

    def close(self):
        if self.closed:
            return
        self.closed = True
        for w in (self.cwriter, self.swriter):
            try:
                w.transport.abort()     # RST at once, as a dead link
            except Exception:
                pass

    async def server_to_client(self):
        try:
            while True:
                data = await self.sreader.read(65536)
                if not data:
                    break
                if self.swallow:
                    self.p.log("commit_answer_swallowed", conn=self.n, bytes=len(data))
                    break
                self.cwriter.write(data)
                await self.cwriter.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        self.close()

    async def fire(self, rule, packet):
        """The COMMIT packet of a marked transaction under @rule: @returns True to go on."""
        self.p.log("commit_fired", conn=self.n, action=rule.action, hold_ms=rule.hold_ms)
        if rule.action == "late_commit":
            self.p.delay_until = time.monotonic() + rule.reconnect_ms / 1000.0
            self.swallow = True
            try:
                self.cwriter.transport.abort()
            except Exception:
                pass
            self.p.log("client_dropped", conn=self.n, commit_in_ms=rule.hold_ms)
            await asyncio.sleep(rule.hold_ms / 1000.0)
            self.swriter.write(packet)
            await self.swriter.drain()
            self.p.log("late_commit_sent", conn=self.n)
            return True     # server_to_client swallows the answer and closes the link
        if rule.hold_ms:
            await asyncio.sleep(rule.hold_ms / 1000.0)
        if rule.action == "hold":
            self.swriter.write(packet)
            await self.swriter.drain()
            self.p.log("commit_released", conn=self.n)
            return True
        self.p.delay_until = time.monotonic() + rule.reconnect_ms / 1000.0
        if rule.action == "drop_before":
            self.p.log("dropped_before_commit", conn=self.n, reconnect_ms=rule.reconnect_ms)
            self.close()
            return False
        self.swallow = True
        self.swriter.write(packet)
        await self.swriter.drain()
        self.p.log("commit_sent_then_drop", conn=self.n, reconnect_ms=rule.reconnect_ms)
        return True     # server_to_client swallows the answer and drops the link

    async def run(self):
        pump = asyncio.ensure_future(self.server_to_client())
        try:
            while not self.closed:
                head = await self.creader.readexactly(4)
                size = int.from_bytes(head[:3], "little")
                body = await self.creader.readexactly(size)
                packet = head + body
                if head[3] == 0 and body:
                    if await self.command(body, packet):
                        if self.swallow:    # the COMMIT went out: its answer ends the link
                            await asyncio.gather(pump, return_exceptions=True)
                            break
                        continue
                self.swriter.write(packet)
                await self.swriter.drain()
        except (OSError, asyncio.IncompleteReadError, ConnectionError):
            pass
        self.close()
        await asyncio.gather(pump, return_exceptions=True)

    async def command(self, body, packet):
        """Inspect one command. @returns True when it was handled (not to be forwarded)."""
        if body[0] not in (COM_QUERY, COM_STMT_PREPARE):
            return False
        text = body[1:].lower()
        word = text.strip()
        rule = self.p.rule
        if rule and rule.count > 0 and rule.marker in text and not self.marked:
            self.marked = True
            self.p.log("marker_seen", conn=self.n)
        if word.startswith(b"rollback"):
            self.marked = False
        elif word.startswith(b"commit") and self.marked:
            self.marked = False
            r = self.p.take_rule()
            if r:
                await self.fire(r, packet)
                return True
        return False


def hostport(s):
    host, _, port = s.rpartition(":")
    return host or "127.0.0.1", int(port)


def send(path, command):
    """The control client: one command, the answer printed. Exit 0 iff it says ok/fired."""
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(command.encode() + b"\n")
        out = b""
        while not out.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    print(out.decode().strip())
    return 1 if out.startswith(b"error") else 0


async def main(a, ap):
    if not a.listen or not a.upstream:
        ap.error("--listen and --upstream are required (or --send)")
    p = Proxy(hostport(a.upstream))
    if a.arm:
        try:
            p.rule = Rule.parse(a.arm.split())
        except ValueError as e:
            ap.error("--arm: %s" % e)
    if os.path.exists(a.control):
        os.unlink(a.control)
    host, port = hostport(a.listen)
    srv = await asyncio.start_server(p.client, host, port)
    ctl = await asyncio.start_unix_server(p.control, a.control)
    p.log("listening", addr="%s:%d" % (host, port), upstream=a.upstream)
    async with srv, ctl:
        await asyncio.gather(srv.serve_forever(), ctl.serve_forever())


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", help="HOST:PORT")
    ap.add_argument("--upstream", help="HOST:PORT of MariaDB")
    ap.add_argument("--control", required=True, help="path of the control unix socket")
    ap.add_argument("--arm", help="ACTION HOLD_MS RECONNECT_MS COUNT MARKER...")
    ap.add_argument("--send", help="send one control command and print the answer")
    args = ap.parse_args()
    if args.send is not None:
        sys.exit(send(args.control, args.send))
    try:
        asyncio.run(main(args, ap))
    except KeyboardInterrupt:
        pass
