/* const409.c: the HTTP layer's limit, for bench/sale.sh. A libmicrohttpd server set up
 * like seckill-front (internal polling thread, epoll, a thread pool, the same connection
 * limits and memory per connection) that answers every request with the front's sold-out
 * answer: 409 {"code":10005,"message":"sold out"}, application/json. No Redis, no Kafka:
 * the front's rate divided by this one's is the share of the HTTP layer's speed the front
 * keeps on the sold-out path. A benchmark tool, built but never installed.
 *
 *   const409 HOST:PORT [THREADS]     (THREADS default 2, as SECKILL_HTTP_THREADS)
 *
 * Runs until SIGINT or SIGTERM. Exit 0 after a signal, 2 on bad arguments, 1 when it
 * cannot listen. */
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char BODY[] = "{\"code\":10005,\"message\":\"sold out\"}";

/* Each request: the first call only marks the connection (as the front does before it
 * has the headers and body); the next one with no upload data left queues the answer. */
static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version,
                               const char *upload_data, size_t *upload_data_size, void **req_cls)
{
        static int marker;
        struct MHD_Response *resp;
        enum MHD_Result ret;

        (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
        if (*req_cls == NULL) {
                *req_cls = &marker;
                return MHD_YES;
        }
        if (*upload_data_size) {
                *upload_data_size = 0; /* discard the body */
                return MHD_YES;
        }
        resp = MHD_create_response_from_buffer(sizeof(BODY) - 1, (void *)BODY, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        ret = MHD_queue_response(conn, 409, resp);
        MHD_destroy_response(resp);
        return ret;
}

int main(int argc, char **argv)
{
        struct sockaddr_in sa;
        struct MHD_Daemon *d;
        char host[64];
        const char *colon;
        unsigned int threads = 2;
        long port;
        sigset_t set;
        int sig;

        if (argc < 2 || !(colon = strrchr(argv[1], ':')) || (size_t)(colon - argv[1]) >= sizeof(host)) {
                fprintf(stderr, "usage: const409 HOST:PORT [THREADS]\n");
                return 2;
        }
        memcpy(host, argv[1], (size_t)(colon - argv[1]));
        host[colon - argv[1]] = '\0';
        port = strtol(colon + 1, NULL, 10);
        if (argc > 2)
                threads = (unsigned int)strtoul(argv[2], NULL, 10);
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)port);
        if (port <= 0 || port > 65535 || threads < 1 || threads > 64 ||
            inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
                fprintf(stderr, "const409: bad address %s or thread count\n", argv[1]);
                return 2;
        }
        /* Block the signals before the daemon's threads start, so they inherit the mask. */
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                             MHD_USE_ITC, (uint16_t)port, NULL, NULL, handler, NULL,
                             MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                             MHD_OPTION_THREAD_POOL_SIZE, threads,
                             MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(10000 + 1024),
                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
                             MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
                             MHD_OPTION_END);
        if (!d) {
                fprintf(stderr, "const409: cannot listen on %s\n", argv[1]);
                return 1;
        }
        sigwait(&set, &sig);
        MHD_stop_daemon(d);
        return 0;
}
