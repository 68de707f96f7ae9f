/* 0446_ops_listener.c: a slow or half-open client cannot starve the front's probes
 * (DESIGN.md 15 "Ops listener"). 500 sockets from 127.0.0.1 to SECKILL_OPS_ADDR, each
 * with half a request line sent and then nothing: /healthz and /readyz asked from
 * another address (127.0.0.2) answer 200 within 3 s, again and again; every one of the
 * 500 is closed by the front within 10 s (a per-address limit closes most at once, the
 * 2 s idle timeout the rest). Before, 64 connections filled the listener for 10 s each
 * and the probes waited behind the backlog. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sk_test.h"

#define IDLE_SOCKETS 500

/* A TCP connection from @p src to 127.0.0.1:@p port (blocking connect, then
 * non-blocking). @returns the fd, or -1. */
static int dial(const char *src, int port)
{
        struct sockaddr_in a, d;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        if (fd < 0)
                return -1;
        memset(&a, 0, sizeof(a));
        a.sin_family = AF_INET;
        inet_pton(AF_INET, src, &a.sin_addr);
        memset(&d, 0, sizeof(d));
        d.sin_family = AF_INET;
        d.sin_port = htons((uint16_t)port);
        inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
            connect(fd, (struct sockaddr *)&d, sizeof(d)) != 0) {
                close(fd);
                return -1;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        return fd;
}

/* GET @p path from 127.0.0.2 within @p timeout_ms. @returns the status, or -1. */
static int probe(int port, const char *path, int timeout_ms)
{
        char req[128], buf[8192];
        int64_t until = sk_mono_ms() + timeout_ms;
        size_t got = 0;
        int fd = dial("127.0.0.2", port), st = -1, n;

        if (fd < 0)
                return -1;
        n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
        if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
                goto done;
        while (sk_mono_ms() < until && got + 1 < sizeof(buf)) {
                struct pollfd p = { fd, POLLIN, 0 };
                ssize_t r;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                if ((r = read(fd, buf + got, sizeof(buf) - 1 - got)) <= 0)
                        break;
                got += (size_t)r;
        }
        buf[got] = '\0';
        if (sscanf(buf, "HTTP/1.%*d %d", &st) != 1)
                st = -1;
done:
        close(fd);
        return st;
}

/* 1 if the server closed @p fd (EOF or reset), 0 if it is still open. */
static int closed_by_server(int fd)
{
        char c;
        ssize_t r = read(fd, &c, 1);

        return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

START_TEST(idle_sockets_leave_the_probes_answering)
{
        static int fds[IDLE_SOCKETS];
        char log[256];
        int port = sk_test_free_port(), ops, i, open_n, round;
        int64_t t0, until;
        pid_t pid;

        sk_test_log_path(log, sizeof(log), "front_0446");
        pid = sk_test_front_start(&sk_test_fx.conf, port, NULL, log);
        ck_assert_msg(sk_test_wait_ready(port, pid, 30) == 0, "front not ready (log %s)", log);
        ops = sk_test_ops_port(port);
        ck_assert_int_eq(probe(ops, "/healthz", 10000), 200);
        for (i = 0; i < IDLE_SOCKETS; i++) {
                ck_assert_msg((fds[i] = dial("127.0.0.1", ops)) >= 0, "socket %d: %s", i, strerror(errno));
                /* Half a request line, then silence (the front may have closed it
                 * already: no SIGPIPE, the result does not matter). */
                (void)send(fds[i], "GET /heal", 9, MSG_NOSIGNAL);
        }
        for (round = 0; round < 3; round++) {
                t0 = sk_mono_ms();
                ck_assert_int_eq(probe(ops, "/healthz", 3000), 200);
                ck_assert_int_eq(probe(ops, "/readyz", 3000), 200);
                ck_assert_msg(sk_mono_ms() - t0 < 6000, "probes took %lld ms", (long long)(sk_mono_ms() - t0));
        }
        /* Every idle socket is closed by the front within 10 s. */
        until = sk_mono_ms() + 10000;
        do {
                for (i = 0, open_n = 0; i < IDLE_SOCKETS; i++)
                        if (fds[i] >= 0 && !closed_by_server(fds[i]))
                                open_n++;
                if (!open_n)
                        break;
                usleep(200 * 1000);
        } while (sk_mono_ms() < until);
        ck_assert_msg(open_n == 0, "%d of %d idle sockets still open after 10 s", open_n, IDLE_SOCKETS);
        for (i = 0; i < IDLE_SOCKETS; i++)
                close(fds[i]);
        ck_assert_int_eq(probe(ops, "/healthz", 3000), 200);
        ck_assert_int_eq(sk_test_stop(pid, 30), 0);
}
END_TEST

static void setup(void)
{
        sk_test_fix_setup("opslistener", &(sk_test_fix_opts_t){ .no_topics = 1 });
}

int main(void)
{
        Suite *s = suite_create("ops_listener");
        TCase *tc = tcase_create("ops");

        tcase_set_timeout(tc, 120);
        tcase_add_unchecked_fixture(tc, setup, sk_test_fix_teardown);
        tcase_add_checked_fixture(tc, sk_test_reap_all, NULL); /* a front an earlier failed test left */
        tcase_add_test(tc, idle_sockets_leave_the_probes_answering);
        suite_add_tcase(s, tc);
        return sk_test_run_nofork(s);
}
