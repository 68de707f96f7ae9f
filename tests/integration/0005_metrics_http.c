/* 0005_metrics_http.c: sk_metrics_http_start serves /metrics and /healthz on a local
 * port (a random high port on 127.0.0.1; the API has no port 0), answers 404 for other
 * paths and 405 for other methods, and stops cleanly. Needs no external service. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "sk_test.h"
#include "sk/metrics.h"
#include "sk/metrics_http.h"

static int g_port;

/* Sends @p req to 127.0.0.1:g_port and reads the whole answer into @p buf. */
static int http(const char *req, char *buf, size_t size)
{
        struct sockaddr_in sa;
        struct timeval tv = { 5, 0 };   /* bounded wait */
        size_t off = 0;
        ssize_t n;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        if (fd < 0)
                return -1;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)g_port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
                close(fd);
                return -1;
        }
        while (off + 1 < size && (n = read(fd, buf + off, size - 1 - off)) > 0)
                off += (size_t)n;
        buf[off] = '\0';
        close(fd);
        return 0;
}

START_TEST(serves_metrics_and_healthz)
{
        sk_metrics_t *m = sk_metrics_new();
        sk_metric_t *c = sk_metrics_counter(m, "test_hits_total", "path=\"x\"", "hits");
        static char buf[65536];
        char addr[64], err[256] = "";
        void *srv = NULL;

        sk_metric_add(c, 7);
        for (int attempt = 0; attempt < 20 && !srv; attempt++) {
                g_port = 20000 + (int)(sk_test_rand_id() % 40000);
                snprintf(addr, sizeof(addr), "127.0.0.1:%d", g_port);
                srv = sk_metrics_http_start(m, addr, err, sizeof(err));
        }
        ck_assert_msg(srv != NULL, "start: %s", err);

        ck_assert_int_eq(http("GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
        ck_assert_msg(strncmp(buf, "HTTP/1.0 200", 12) == 0 || strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
        ck_assert_ptr_nonnull(strstr(buf, "text/plain; version=0.0.4"));
        ck_assert_ptr_nonnull(strstr(buf, "# TYPE seckill_test_hits_total counter\n"));
        ck_assert_ptr_nonnull(strstr(buf, "seckill_test_hits_total{path=\"x\"} 7\n"));

        sk_metric_add(c, 1);
        ck_assert_int_eq(http("GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
        ck_assert_ptr_nonnull(strstr(buf, "seckill_test_hits_total{path=\"x\"} 8\n"));

        ck_assert_int_eq(http("GET /healthz HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
        ck_assert_ptr_nonnull(strstr(buf, " 200 "));
        ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nok\n"));

        ck_assert_int_eq(http("GET /nope HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
        ck_assert_ptr_nonnull(strstr(buf, " 404 "));

        ck_assert_int_eq(http("POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n", buf, sizeof(buf)), 0);
        ck_assert_ptr_nonnull(strstr(buf, " 405 "));

        /* The port is taken while we serve. */
        ck_assert_ptr_null(sk_metrics_http_start(m, addr, err, sizeof(err)));

        sk_metrics_http_stop(srv);
        ck_assert_int_ne(http("GET /healthz HTTP/1.0\r\n\r\n", buf, sizeof(buf)), 0);
        sk_metrics_destroy(m);
}
END_TEST

static Suite *metrics_http_suite(void)
{
        Suite *s = suite_create("metrics_http");
        TCase *tc = tcase_create("http");

        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, serves_metrics_and_healthz);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(metrics_http_suite());
}
