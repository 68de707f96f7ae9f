/* sk_test_http.c: a tiny HTTP/1.1 client for the tests (sk_test_http.h). */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <cjson/cJSON.h>

#include "sk_test.h"
#include "sk/clock.h"
#include "sk/ids.h"

int sk_test_http(int port, const char *method, const char *path, const char *user,
                 const char *extra, char *body, size_t body_cap)
{
        size_t req_cap = strlen(method) + strlen(path) + (user ? strlen(user) : 0) +
                         (extra ? strlen(extra) : 0) + 256;
        char *req = malloc(req_cap), *resp = malloc(SK_TEST_BODY_MAX), *sep;
        int n, status = -1;

        /* DESIGN.md 15: /healthz, /readyz and /metrics live on the front's operations
         * listener; a test names the front by its API port. */
        if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz") || !strcmp(path, "/metrics"))
                port = sk_test_ops_port(port);
        if (body && body_cap)
                body[0] = '\0';
        if (req && resp) {
                n = snprintf(req, req_cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                             "%s%s%s%s\r\n", method, path, user ? "X-User-Id: " : "", user ? user : "",
                             user ? "\r\n" : "", extra ? extra : "");
                status = sk_test_http_raw(port, req, (size_t)n, resp, SK_TEST_BODY_MAX);
                if (body && status >= 0 && (sep = strstr(resp, "\r\n\r\n")) != NULL)
                        snprintf(body, body_cap, "%s", sep + 4);
        }
        free(req);
        free(resp);
        return status;
}

int sk_test_http_raw(int port, const char *request, size_t len, char *resp, size_t cap)
{
        struct sockaddr_in sin;
        struct timeval tv = { 30, 0 };
        char *buf = malloc(SK_TEST_BODY_MAX);
        size_t got = 0;
        int fd = -1, status = -1;

        if (resp && cap)
                resp[0] = '\0';
        if (!buf || (fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
                goto done;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        sin.sin_port = htons((uint16_t)port);
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
            write(fd, request, len) != (ssize_t)len)
                goto done;
        while (got + 1 < SK_TEST_BODY_MAX) {
                ssize_t r = read(fd, buf + got, SK_TEST_BODY_MAX - 1 - got);

                if (r <= 0)
                        break;
                got += (size_t)r;
        }
        buf[got] = '\0';
        if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
                status = -1;
        if (resp && cap)
                snprintf(resp, cap, "%s", buf);
done:
        if (fd >= 0)
                close(fd);
        free(buf);
        return status;
}

int sk_test_http_bearer(int port, const char *method, const char *path, const char *token,
                        const char *extra, char *resp, size_t cap)
{
        size_t req_cap = strlen(method) + strlen(path) + (token ? strlen(token) : 0) +
                         (extra ? strlen(extra) : 0) + 256;
        char *req = malloc(req_cap);
        int n, status;

        if (!req)
                return -1;
        n = snprintf(req, req_cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "%s%s%s%s\r\n", method, path, token ? "Authorization: Bearer " : "",
                     token ? token : "", token ? "\r\n" : "", extra ? extra : "");
        status = sk_test_http_raw(port, req, (size_t)n, resp, cap);
        free(req);
        return status;
}

const char *sk_test_resp_body(const char *resp)
{
        const char *sep = strstr(resp, "\r\n\r\n");

        return sep ? sep + 4 : "";
}

int sk_test_buy(int port, int64_t vid, const char *user, char *body, size_t cap)
{
        char path[128], v[SK_ID_STRLEN];

        sk_id_format(vid, v);
        snprintf(path, sizeof(path), "/api/v1/vouchers/%s/seckill", v);
        return sk_test_http(port, "POST", path, user, NULL, body, cap);
}

int sk_test_wait_ready(int port, pid_t pid, int timeout_s)
{
        int64_t until = sk_mono_ms() + timeout_s * 1000LL;
        char body[1024];

        while (sk_mono_ms() < until) {
                int st;

                if (sk_test_http(port, "GET", "/readyz", NULL, NULL, body, sizeof(body)) == 200)
                        return 0;
                if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid)
                        return -1;
                usleep(100 * 1000);
        }
        return -1;
}

int sk_test_json_field(const char *json, const char *name, char *out, size_t out_size)
{
        cJSON *j = cJSON_Parse(json);
        const cJSON *it = j ? cJSON_GetObjectItemCaseSensitive(j, name) : NULL;
        int rc = -1;

        if (cJSON_IsString(it)) {
                snprintf(out, out_size, "%s", it->valuestring);
                rc = 0;
        } else if (cJSON_IsNumber(it)) {
                snprintf(out, out_size, "%.0f", it->valuedouble);
                rc = 0;
        } else if (cJSON_IsNull(it)) {
                snprintf(out, out_size, "null");
                rc = 0;
        }
        cJSON_Delete(j);
        return rc;
}

int sk_test_body_code(const char *body)
{
        char c[32];

        if (sk_test_json_field(body, "code", c, sizeof(c)) != 0)
                return -1;
        return (int)strtol(c, NULL, 10);
}

long long sk_test_metric_value(const char *text, const char *name)
{
        size_t n = strlen(name);
        const char *p = text;

        while ((p = strstr(p, name)) != NULL) {
                if ((p == text || p[-1] == '\n') && p[n] == ' ')
                        return strtoll(p + n + 1, NULL, 10);
                p += n;
        }
        return -1;
}

long long sk_test_scrape(int port, const char *name)
{
        char *body = malloc(SK_TEST_BODY_MAX);
        long long v;

        ck_assert(body != NULL);
        ck_assert_int_eq(sk_test_http(port, "GET", "/metrics", NULL, NULL, body, SK_TEST_BODY_MAX), 200);
        v = sk_test_metric_value(body, name);
        free(body);
        return v;
}

int64_t sk_test_report_field(const char *out, int64_t vid, const char *key)
{
        char pat[64];
        const char *p;

        snprintf(pat, sizeof(pat), "\"voucherId\":\"%" PRId64 "\"", vid);
        if (!(p = strstr(out, pat)))
                return -1;
        snprintf(pat, sizeof(pat), "\"%s\":", key);
        if (!(p = strstr(p, pat)))
                return -1;
        p += strlen(pat);
        if (strncmp(p, "true", 4) == 0)
                return 1;
        if (strncmp(p, "false", 5) == 0)
                return 0;
        return strtoll(p, NULL, 10);
}
