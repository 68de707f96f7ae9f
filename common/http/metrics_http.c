/* metrics_http.c: the operations listener: GET /metrics (the Prometheus text of an
 * sk_metrics_t, or a binary's own renderer), /healthz and, when the binary gives one,
 * /readyz, on a libmicrohttpd daemon with its own internal polling thread (the front's
 * SECKILL_OPS_ADDR, the consumer's SECKILL_METRICS_ADDR; DESIGN.md 2, 3 and 15: never
 * on the API listener). Kept out of
 * the layers in its own library (sk_http) so that only the binaries that serve
 * HTTP (front, consumer) link libmicrohttpd; the reconciler and the admin do not.
 * Nothing here logs. Thread-safety: start and stop from one thread; requests are served
 * on the daemon's thread, rendering takes the registry's own lock. */
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "sk/conf.h"
#include "sk/metrics_http.h"

#if MHD_VERSION < 0x00097002
typedef int sk_mhd_result;
#else
typedef enum MHD_Result sk_mhd_result;
#endif

typedef struct msrv {
        struct MHD_Daemon *d;
        sk_ops_http_t ops;
} msrv_t;

static sk_mhd_result reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
                           enum MHD_ResponseMemoryMode mode, const char *ctype)
{
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
        sk_mhd_result ret;

        if (!resp) {
                if (mode == MHD_RESPMEM_MUST_FREE)
                        free(body);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
        ret = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static sk_mhd_result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
        msrv_t *srv = cls;
        static const char text[] = "text/plain; charset=utf-8";

        (void)version;
        (void)upload_data;
        (void)con_cls;
        if (*upload_data_size) {        /* ignore any body */
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
                return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, (char *)"method not allowed\n", 19,
                             MHD_RESPMEM_PERSISTENT, text);
        if (strcmp(url, "/metrics") == 0) {
                char *body = srv->ops.render ? srv->ops.render(srv->ops.ctx) : sk_metrics_render(srv->ops.m);
                if (!body)
                        return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, (char *)"out of memory\n", 14,
                                     MHD_RESPMEM_PERSISTENT, text);
                return reply(conn, MHD_HTTP_OK, body, strlen(body), MHD_RESPMEM_MUST_FREE,
                             "text/plain; version=0.0.4; charset=utf-8");
        }
        if (strcmp(url, "/healthz") == 0)
                return reply(conn, MHD_HTTP_OK, (char *)"ok\n", 3, MHD_RESPMEM_PERSISTENT, text);
        if (strcmp(url, "/readyz") == 0 && srv->ops.ready) {
                char *body = NULL;
                int status = srv->ops.ready(srv->ops.ctx, &body);

                if (!body)
                        return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, (char *)"out of memory\n", 14,
                                     MHD_RESPMEM_PERSISTENT, text);
                return reply(conn, (unsigned)status, body, strlen(body), MHD_RESPMEM_MUST_FREE,
                             "application/json");
        }
        return reply(conn, MHD_HTTP_NOT_FOUND, (char *)"not found\n", 10, MHD_RESPMEM_PERSISTENT, text);
}

void *sk_metrics_http_start(sk_metrics_t *m, const char *addr, char *errstr, size_t errstr_size)
{
        sk_ops_http_t ops = { .m = m };

        if (!m) {
                sk_seterr(errstr, errstr_size, "no metrics registry");
                return NULL;
        }
        return sk_ops_http_start(&ops, addr, errstr, errstr_size);
}

void *sk_ops_http_start(const sk_ops_http_t *ops, const char *addr, char *errstr, size_t errstr_size)
{
        struct addrinfo hints, *ai = NULL;
        struct sockaddr_storage ss;
        char host[256], port_s[16];
        unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
        msrv_t *srv = NULL;
        int port = 0, gai;

        if (!ops || (!ops->m && !ops->render) || !addr ||
            sk_hostport_parse(addr, host, sizeof(host), &port) != 0) {
                sk_seterr(errstr, errstr_size, "metrics address \"%s\" is not host:port", addr ? addr : "");
                return NULL;
        }
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        snprintf(port_s, sizeof(port_s), "%d", port);
        if ((gai = getaddrinfo(host, port_s, &hints, &ai)) != 0 || !ai) {
                sk_seterr(errstr, errstr_size, "metrics address %s: %s", addr, gai_strerror(gai));
                if (ai)
                        freeaddrinfo(ai);
                return NULL;
        }
        memset(&ss, 0, sizeof(ss));
        memcpy(&ss, ai->ai_addr, ai->ai_addrlen < sizeof(ss) ? ai->ai_addrlen : sizeof(ss));
        if (ai->ai_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        freeaddrinfo(ai);

        if (!(srv = calloc(1, sizeof(*srv)))) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        srv->ops = *ops;
        /* DESIGN.md 15 "Ops listener": a slow or half-open client cannot starve the
         * probes. An idle connection (no byte for 2 s, headers included) is closed; one
         * address holds at most SK_OPS_PER_ADDR connections (libmicrohttpd closes the
         * others at once), so SK_OPS_CONNS leave room for every prober. */
        srv->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, srv,
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)SK_OPS_IDLE_S,
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)SK_OPS_CONNS,
                                  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)SK_OPS_PER_ADDR,
                                  MHD_OPTION_END);
        if (!srv->d) {
                sk_seterr(errstr, errstr_size, "cannot listen on %s (address in use or not local?)", addr);
                free(srv);
                return NULL;
        }
        return srv;
}

void sk_metrics_http_stop(void *srvp)
{
        msrv_t *srv = srvp;

        if (!srv)
                return;
        MHD_stop_daemon(srv->d);
        free(srv);
}
