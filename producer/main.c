/* producer/main.c: seckill-front, the HTTP front of the flash sale (DESIGN.md 2-5, 7, 8,
 * 11): admission in Lua (deduct.lua), publish to Kafka, answer 202 only once Kafka says
 * PERSISTED. On the Kafka path it never writes the database (its DB use there is
 * lookups, cancel and the payment callback); on the DB-only path of DESIGN.md 12 it decides the purchase
 * in one DB transaction (dbonly.c) and follows the per-voucher degrade switch (degrade.c).
 *
 * Files: producer/README.md lists each file of the front with its job; each owns its
 * state behind its own header (front.h holds only the configuration, g_fr).
 * Dependencies point one way: http -> deduct/lookup; deduct -> deduct_reply -> publish,
 * rollback, lookup; publish -> kprod, rollback; every stage answers through req.c.
 *
 * Threading model (every thread has its own Redis/DB connection; hiredis and MySQL
 * handles are never shared). Two shapes, each written once in pool.h: a pool (deduct,
 * probe, rollback, DB-only, lookup, payment) is a FIFO of requests served by N threads
 * whose connections open on first use; a thread waits at most 200 ms for work, exits
 * only once its queue is closed and drained (so stopping a pool serves what was queued),
 * and in the lookup and payment pools a request answered while it waited is dropped
 * unrun. Every other long-lived thread (breaker probe, Kafka poll, degrade follower,
 * timer, health) is an fr_thread_t: a loop polling its stop flag, joined at shutdown.
 *   - main: configuration, worker-id lease, start-up, then waits for a signal and runs
 *     the graceful shutdown (below).
 *   - HTTP (libmicrohttpd internal polling, epoll, a pool of --http-threads threads,
 *     suspend/resume; http.c): parses, checks the bytes of the path and the headers
 *     it reads (strict.c), establishes the buyer (identity.c: a verified JWT, or
 *     X-User-Id from a trusted proxy; 401/10007 otherwise), validates ids (400 without
 *     any Redis call),
 *     answers 409/10005 from the local sold-out cache (soldout.c) without Redis,
 *     refuses with 503 before any Redis write when the in-flight cap is reached, Kafka
 *     is down or fatal, or the lease cannot mint; mints orderId and traceId, puts the
 *     request on the pending list (its deadline), suspends the connection and queues it.
 *     It never blocks on Redis, Kafka or the DB. Requests are routed on the handler's
 *     final call: an answer queued on the first call is an "early response" and
 *     libmicrohttpd then closes the connection (no keep-alive). A declared body is 413
 *     at once (but the payment callback's, at most 4 KiB, kept raw for its signature); 414 and 431 are libmicrohttpd's own (16 KiB per-connection memory limit).
 *   - Redis deduct workers (--redis-workers; deduct.c): pop batches of up to
 *     --pipeline-max purchases, pipeline their EVALSHA deduct.lua on one connection,
 *     read the replies in order. OK/REPLAY -> produce (opaque = the request); REJECT ->
 *     answer (a 10004 goes to the lookup pool for the DB check); FENCED -> 503 FAILED;
 *     COLLISION -> 503 and an alert metric; BUSY, LOADING, READONLY, OOM, TRYAGAIN,
 *     CLUSTERDOWN, MASTERDOWN, NOREPLICAS, NOSCRIPT twice -> 503 (did not run); I/O
 *     error, timeout or any other error reply (the script may have written) -> repeat
 *     the same EVALSHA up to twice on a fresh connection (pipelined again), then
 *     rollback. Before every send: the Redis breaker (closed?) and each request's
 *     deadline (reply or timeout before it?); otherwise nothing is sent (503, or the
 *     rollback once an attempt was unknown). Every batch is reported to the breaker.
 *   - Probe workers (2; probe.c): after an OVERFLOW, take.lua on the other buckets
 *     (DESIGN.md 4 "Overflow probing"), then publish, 409/10005 or the rollback worker.
 *   - Kafka poll thread (kprod.c): rd_kafka_poll(); delivery reports (publish.c) decide
 *     the answer (PERSISTED 202; POSSIBLY_PERSISTED one identical re-produce, else 503
 *     PENDING; NOT_PERSISTED -> rollback worker unless an earlier copy was
 *     POSSIBLY_PERSISTED). It also polls replaced producers and destroys each once its
 *     queue is empty.
 *   - Rollback worker (rollback.c): rollback.lua mode front (sk_rollback_run) -> 503
 *     FAILED or PENDING. While the breaker is open or after failed attempts: 503
 *     PENDING at once, in-flight slot released, the fence retried from a bounded
 *     backlog (one a second, breaker closed).
 *   - Breaker probe (breaker.c): while the Redis breaker is half-open, one probe a
 *     second (PING, ROLE, INFO loading) on its own connection; HTTP refuses purchases
 *     with 503 while it is not closed.
 *   - Degrade follower (degrade.c): every second reads every voucher's switch row (the
 *     HTTP threads route by it: redis -> the pipeline above; draining/rebuilding -> 503
 *     cause degrade; db -> the DB-only pool) and makes the moves of DESIGN.md 12.
 *   - DB-only pool (SECKILL_DEGRADE_DB_CONNS threads; dbonly.c): one transaction per
 *     purchase, 200 CREATED; a bounded queue (503 beyond it). Failpoints
 *     front.db_only_after_checks (sleep: tests) and front.db_only_before_commit (error:
 *     rolled back, 503 cause db).
 *   - Lookup pool (--lookup-threads; lookup.c): orders/me, orders/{id}, cancel, the
 *     10004 DB check (ended -> 403/10003, on sale -> 503, else 404); bounded.
 *   - Payment pool (--pay-threads; payment.c): the provider's signed callbacks (the
 *     signature is checked on the HTTP thread), one DB transaction each that records
 *     tb_payment (DESIGN.md 13); only when SECKILL_PAYMENT_KEYS_FILE is set.
 *   - Timer (deadline.c): answers 503 PENDING at each request's deadline (2 x delivery
 *     timeout + 1 s); never rolls back; the pipeline still handles the late report.
 *   - Health (health.c): every second, Redis noeviction and scripts loaded (skipped
 *     while the breaker is open), fatal
 *     producer replacement, topic creation retry, broker metadata for the topic.
 * Failpoints (DESIGN.md 11, SECKILL_FAILPOINTS): front.after_deduct (error = the publish
 * is refused -> rollback), front.before_respond (before a 202; error -> 503 PENDING),
 * front.delivery_possibly / front.delivery_not (a PERSISTED report is treated as
 * POSSIBLY_PERSISTED / NOT_PERSISTED), front.kafka_fatal (raise a fatal producer error),
 * front.reproduce_fatal (the producer goes fatal right before a re-produce: the re-produce
 * is parked until the health thread has replaced the producer), front.before_rollback
 * (sleep: delay the fence; error: the rollback fails -> 503 PENDING).
 * A request is reference counted (HTTP layer + pipeline) and answered exactly once under
 * one mutex (fr_answer); whoever answers first resumes the connection, so the deadline
 * timer, delivery reports and shutdown can race safely.
 *
 * Graceful shutdown (SIGTERM/SIGINT): stop accepting (MHD_quiesce_daemon) and refuse new
 * purchases; wait for delivery reports until every admitted purchase is settled or its
 * deadline has passed; purge only the queue (RD_KAFKA_PURGE_F_QUEUE): a purged message
 * is NOT_PERSISTED and rolled back unless an earlier copy was POSSIBLY_PERSISTED; answer
 * every request still pending 503 PENDING (no rollback) so every suspended connection is
 * resumed; then MHD_stop_daemon, join, release the lease, exit 0. A second signal exits
 * at once (status 1). */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breaker.h"
#include "front.h"
#include "http.h"
#include "identity.h"
#include "kprod.h"
#include "lookup.h"
#include "ops.h"
#include "metrics.h"
#include "payment.h"
#include "pipeline.h"
#include "publish.h"
#include "req.h"
#include "room_routes.h"
#include "room_tick.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/failpoint.h"
#include "sk/jwks.h"
#include "sk/log.h"
#include "sk/redis.h"
#include "sk/outcome.h"
#include "sk/signals.h"
#include "soldout.h"
#include "unknown.h"
#include "xsite.h"

fr_config_t g_fr;

static volatile sig_atomic_t g_stop; /* 0 run, 1 drain */
static volatile sig_atomic_t g_hup;  /* SIGHUP seen: re-read every keys file (15, 18) */

static void on_hup(int sig)
{
        (void)sig;
        g_hup = 1;
}

/* SIGHUP only sets a flag; the main loop re-reads the keys (STYLE.md 9). */
static void install_hup(void)
{
        struct sigaction sa;

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_hup;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGHUP, &sa, NULL);
}
static sk_idgen_t *idgen;

/* Every purchase in flight holds its (suspended) connection's socket, so the in-flight
 * cap of DESIGN.md 8 (503 before deduct) is only reachable with a descriptor limit
 * above it: with a distribution's default soft limit (1024) accept() fails with EMFILE
 * long before, libmicrohttpd stops accepting, and buyers wait in the listen backlog
 * instead of getting 503 + Retry-After. Raise the soft limit toward the hard one
 * (SECKILL_MAX_INFLIGHT + 2048: connections over the cap, Redis, DB, Kafka sockets);
 * warn when the hard limit is lower. */
static void raise_nofile(void)
{
        struct rlimit rl;
        rlim_t want = (rlim_t)g_fr.conf.max_inflight + 2048;

        if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
                return;
        if (rl.rlim_cur < want) {
                rlim_t old = rl.rlim_cur;

                rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != old)
                        SK_LOG(SK_INFO, "nofile_raised", "from=%llu to=%llu", (unsigned long long)old,
                               (unsigned long long)rl.rlim_cur);
                else
                        rl.rlim_cur = old;
        }
        if (rl.rlim_cur < want)
                SK_LOG(SK_WARN, "nofile_low",
                       "limit=%llu wanted=%llu max_inflight=%d reason=\"the in-flight cap cannot be "
                       "reached: connections beyond the descriptor limit wait in the backlog\"",
                       (unsigned long long)rl.rlim_cur, (unsigned long long)want,
                       g_fr.conf.max_inflight);
}

/* Worker-id lease events from the renewal thread: each logged once (DESIGN.md 2). */
static void on_lease_event(void *arg, sk_idgen_event_t ev, int worker_id, const char *detail)
{
        (void)arg;
        switch (ev) {
        case SK_IDGEN_EV_LOST:
                SK_LOG(SK_WARN, "worker_lease_lost", "worker_id=%d reason=\"%s\"", worker_id, detail);
                break;
        case SK_IDGEN_EV_ACQUIRED:
                SK_LOG(SK_INFO, "worker_lease_reacquired", "worker_id=%d %s", worker_id, detail);
                break;
        case SK_IDGEN_EV_RENEW_FAILED:
                SK_LOG(SK_WARN, "worker_lease_renew_failed", "worker_id=%d reason=\"%s\"", worker_id,
                       detail);
                break;
        case SK_IDGEN_EV_RENEW_RECOVERED:
                SK_LOG(SK_INFO, "worker_lease_renew_recovered", "worker_id=%d result=%s", worker_id,
                       detail);
                break;
        }
}

static void shutdown_front(void)
{
        int64_t t0 = sk_mono_ms(), until;
        int left;

        SK_LOG(SK_INFO, "shutdown_begin", "inflight=%d", fr_inflight());
        fr_set_stopping(1);
        fr_http_quiesce();
        /* Every purchase admitted before stopping has a deadline <= now + deadline. */
        until = t0 + g_fr.deadline_ms;
        while (fr_inflight() > 0 && sk_mono_ms() < until)
                sk_sleep_ms(20, NULL);
        left = fr_publish_purge();
        /* Purged messages come back as NOT_PERSISTED delivery reports (poll thread) and
         * go to the rollback worker; give that a bounded moment. */
        until = sk_mono_ms() + 3000;
        while (fr_inflight() > 0 && sk_mono_ms() < until)
                sk_sleep_ms(20, NULL);
        /* Level 2: from here on nothing is suspended any more (fr_req_suspend checks it
         * under the answer lock and answers 503 at once), and fr_answer resumes under
         * that lock, so after this flush no connection is suspended and no resume is
         * under way: MHD_stop_daemon neither panics nor races with a resume. */
        fr_set_stopping(2);
        fr_pending_flush("shutdown");
        /* Let the HTTP threads send the answers of the connections just resumed. */
        sk_sleep_ms(300, NULL);
        fr_http_stop();
        fr_ops_stop();
        fr_pipeline_stop();
        fr_lookup_stop();
        fr_room_routes_stop();
        fr_payment_stop();
        SK_LOG(SK_INFO, "shutdown_done", "ms=%lld outq_at_purge=%d inflight=%d",
               (long long)(sk_mono_ms() - t0), left, fr_inflight());
        fr_kprod_destroy_all();
        /* Every purchase settled and the producers destroyed: nothing of this front can
         * reach Kafka any more, so its lease row need not hold back a drain (DESIGN.md 12 c):
         * released as quiet (free at once). Otherwise it stays a front row for D more. */
        sk_idgen_stop_quiet(idgen, fr_inflight() == 0);
        idgen = NULL;
        fr_soldout_destroy();
        fr_unknown_destroy();
        fr_identity_destroy();
        fr_metrics_destroy();
}

/* The front's own options (DESIGN.md 2, 3, 12, 13, 15): each default is written here
 * only; sk_conf_load applies it and --help shows it. */
static const sk_opt_t OPTS[] = {
        SK_OPT_I("http-threads", "SECKILL_HTTP_THREADS", &g_fr.http_threads, 1, 64, 2, NULL,
                 "libmicrohttpd worker threads"),
        SK_OPT_I("redis-workers", "SECKILL_FRONT_REDIS_WORKERS", &g_fr.redis_workers, 1, 64, 2, NULL,
                 "threads pipelining deduct.lua, each its batch of EVALSHAs on one connection"),
        SK_OPT_I("lookup-threads", "SECKILL_FRONT_LOOKUP_THREADS", &g_fr.lookup_threads, 1, 64, 2, NULL,
                 "threads for orders/me, orders/{id}, cancel and the 10004 DB check"),
        SK_OPT_I("lookup-queue-max", "SECKILL_FRONT_LOOKUP_QUEUE_MAX", &g_fr.lookup_queue_max, 1, 1000000,
                 256, NULL, "lookups waiting for the lookup pool; beyond it 503 + Retry-After at once; "
                 "a job whose request was already answered is dropped, never run"),
        SK_OPT_I("pipeline-max", "SECKILL_FRONT_PIPELINE_MAX", &g_fr.pipeline_max, 1, 4096, 128, NULL,
                 "EVALSHAs pipelined per batch on one connection"),
        SK_OPT_S("ops-addr", "SECKILL_OPS_ADDR", g_fr.ops_addr, "127.0.0.1:9465", NULL,
                 "host:port of /healthz, /readyz and /metrics, never on the API listener (DESIGN.md "
                 "15; off = none; a front that cannot listen there does not start)"),
        /* Buyer identity (DESIGN.md 15; identity.c). */
        SK_OPT_S("auth", "SECKILL_AUTH", g_fr.auth_mode, "jwt", NULL,
                 "buyer identity: jwt (Authorization: Bearer; needs the keys file, issuer and "
                 "audience) | trusted-header (X-User-Id from SECKILL_TRUSTED_PROXIES only)"),
        SK_OPT_S("jwt-keys-file", "SECKILL_JWT_KEYS_FILE", g_fr.jwt_keys_file, NULL, "none",
                 "jwt: the identity provider's JWKS file (required with jwt); re-read on SIGHUP or "
                 "when it changes"),
        SK_OPT_S("jwt-issuer", "SECKILL_JWT_ISSUER", g_fr.jwt_issuer, NULL, "none: jwt does not start",
                 "jwt: the iss every token must carry (required; * = not checked, warned at "
                 "every start)"),
        SK_OPT_S("jwt-audience", "SECKILL_JWT_AUDIENCE", g_fr.jwt_audience, NULL, "none: jwt does not start",
                 "jwt: the aud every token must name, a string or one member of an array "
                 "(required; * = not checked, warned at every start)"),
        SK_OPT_I("jwt-cache-max", "SECKILL_JWT_CACHE_MAX", &g_fr.jwt_cache_max, 0, 16777216, 262144, NULL,
                 "jwt: verified tokens cached by SHA-256, about 64 bytes each (0 = none)"),
        SK_OPT_I("jwt-verify-rate", "SECKILL_JWT_VERIFY_RATE", &g_fr.jwt_verify_rate, 0, 1000000, 50,
                 NULL, "jwt: signature verifications of tokens not in the cache per second per "
                 "client address (the address a trusted proxy forwards in X-Forwarded-For, else "
                 "the peer), with a burst of as many; beyond it 429 + Retry-After (0 = no limit)"),
        SK_OPT_I("jwt-rsa-max-bits", "SECKILL_JWT_RSA_MAX_BITS", &g_fr.jwt_rsa_max_bits, 2048,
                 SK_JWKS_RSA_LIMIT_BITS, SK_JWKS_RSA_MAX_BITS, NULL,
                 "jwt: the largest RSA key of the JWKS accepted; a larger one makes the file "
                 "refused (every uncached RS256 token costs more with a bigger key)"),
        SK_OPT_S("trusted-proxies", "SECKILL_TRUSTED_PROXIES", g_fr.trusted_proxies,
                 FR_TRUSTED_PROXIES_DEFAULT, NULL,
                 "peers whose X-User-Id (trusted-header) or X-Forwarded-For (jwt) is believed: "
                 "canonical CIDRs, bare addresses, unix; any other peer's X-User-Id is 401/10007"),
        SK_OPT_B("trusted-proxies-allow-wide", "SECKILL_TRUSTED_PROXIES_ALLOW_WIDE",
                 &g_fr.trusted_proxies_allow_wide,
                 "accept SECKILL_TRUSTED_PROXIES entries wider than /8 (IPv4) or /32 (IPv6), "
                 "0.0.0.0/0 included (warned at start)"),
        SK_OPT_S("allowed-origins", "SECKILL_ALLOWED_ORIGINS", g_fr.allowed_origins, NULL,
                 "none: only Sec-Fetch-Site: same-origin",
                 "trusted-header: origins (https://shop.example[:port], as a browser sends them; "
                 "commas or spaces) whose POSTs are accepted; any other browser POST (Origin or "
                 "Sec-Fetch-Site present, not same-origin) is 403/10001"),
        /* The payment callback (DESIGN.md 13, 15; payment.c). */
        SK_OPT_S("payment-keys-file", "SECKILL_PAYMENT_KEYS_FILE", g_fr.payment_keys_file, NULL,
                 "none, POST /api/v1/payments/callback answers 404",
                 "the payment provider's webhook secrets, one per line (16..256 bytes each, at most "
                 "16; # comments); re-read on SIGHUP or when it changes; a file that does not load "
                 "stops the start"),
        SK_OPT_I("pay-threads", "SECKILL_FRONT_PAY_THREADS", &g_fr.pay_threads, 1, 64, 2, NULL,
                 "threads (each with its own DB connection) deciding payment callbacks; 256 may "
                 "wait, beyond that 503 + Retry-After"),
        /* The waiting room (DESIGN.md 18; room_tick.c, room_routes.c). */
        SK_OPT_S("queue-keys-file", "SECKILL_QUEUE_KEYS_FILE", g_fr.queue_keys_file, NULL,
                 "none, the waiting room's routes answer 503",
                 "admission-token keys, one \"<kid> <secret>\" a line (kid 1..16 of [A-Za-z0-9_-], "
                 "secret 16..256 bytes, at most 16; # comments): the first signs, every line "
                 "verifies; re-read on SIGHUP or when it changes; a file that does not load "
                 "stops the start"),
        SK_OPT_I("queue-poll-rate", "SECKILL_QUEUE_POLL_RATE", &g_fr.queue_poll_rate, 1, 10000000,
                 20000, NULL, "polls per second the pre-queue's first polls after begin are "
                 "spread over (members / rate seconds)"),
        /* The buyer page (DESIGN.md 18; page.c). */
        SK_OPT_B("page-fragment-token", "SECKILL_PAGE_FRAGMENT_TOKEN", &g_fr.page_fragment_token,
                 "the buyer page /sale/ID takes a Bearer token from its URL fragment (#token=...) "
                 "into sessionStorage: for tests and the demo only; a shop's login page sets "
                 "sessionStorage seckill.token instead"),
};

/* Options, then the checks made before anything is leased or bound: Redis (DESIGN.md
 * 4: >= 7.0, noeviction), the identity settings and JWKS, the payment keys (DESIGN.md
 * 15: a bad one is a configuration error). Installs the signal handlers.
 * @returns -1 to go on, else the exit status (0 after --help, 2 bad configuration). */
static int configure(int argc, char **argv)
{
        char errstr[512];
        int argi = 0, rc;

        sk_log_init("front");
        rc = sk_conf_load_bin(&g_fr.conf, SK_BIN_FRONT, argc, argv, "seckill-front", NULL, OPTS,
                              SK_NOPTS(OPTS), &argi);
        if (rc != 0)
                return rc == 1 ? 0 : 2;
        if (sk_redis_startup_check(&g_fr.conf.redis, "seckill-front") != 0)
                return 2;
        if (argi < argc) {
                fprintf(stderr, "seckill-front: unexpected argument '%s'\n", argv[argi]);
                return 2;
        }
        g_fr.expire_extra_ms = sk_expire_extra_ms(g_fr.conf.reconcile_window_hours);
        g_fr.deadline_ms = 2 * (int64_t)g_fr.conf.kafka_delivery_timeout_ms + 1000;
        if (g_fr.page_fragment_token) /* DESIGN.md 18: tests and demos only */
                SK_LOG(SK_WARN, "page_fragment_token", "msg=\"the buyer page takes a token from "
                       "its URL fragment: for tests and demos only\"");
        /* SIGINT/SIGTERM: g_stop = 1 (drain); a second one abandons the drain: _exit(1). */
        (void)sk_signals_install(&g_stop, SK_SIGNALS_SECOND_EXITS | SK_SIGNALS_IGNORE_PIPE, NULL);
        raise_nofile();
        sk_db_library_init();
        fr_metrics_init();
        fr_breaker_init();
        fr_soldout_init(g_fr.conf.soldout_cache_ms);
        fr_unknown_init(g_fr.conf.soldout_cache_ms);
        if (fr_identity_init(errstr, sizeof(errstr)) != 0) {
                SK_LOG(SK_ERROR, "identity_config", "reason=\"%s\"", errstr);
                fprintf(stderr, "seckill-front: %s\n", errstr);
                return 2;
        }
        if (fr_xsite_init(g_fr.allowed_origins, !strcmp(g_fr.auth_mode, "trusted-header"), errstr,
                          sizeof(errstr)) != 0) {
                SK_LOG(SK_ERROR, "identity_config", "reason=\"%s\"", errstr);
                fprintf(stderr, "seckill-front: %s\n", errstr);
                return 2;
        }
        if (!strcmp(g_fr.auth_mode, "trusted-header"))
                SK_LOG(SK_INFO, "cross_site", "allowed_origins=%d same_origin=accepted "
                       "no_browser_headers=accepted", fr_xsite_count());
        if (fr_payment_init(errstr, sizeof(errstr)) != 0) {
                SK_LOG(SK_ERROR, "payment_config", "reason=\"%s\"", errstr);
                fprintf(stderr, "seckill-front: %s\n", errstr);
                return 2;
        }
        if (fr_room_init(errstr, sizeof(errstr)) != 0) {
                SK_LOG(SK_ERROR, "queue_config", "reason=\"%s\"", errstr);
                fprintf(stderr, "seckill-front: SECKILL_QUEUE_KEYS_FILE: %s\n", errstr);
                return 2;
        }
        install_hup();
        return -1;
}

/* The worker-id lease first (a second front with the same SECKILL_WORKER_ID exits 2
 * before it binds anything, DESIGN.md 2), then the pipeline, the pools and the
 * listeners. @returns -1 once the front runs, else the exit status; a failure once
 * threads run releases the lease and exits 1 at once (no orderly teardown). */
static int start_front(void)
{
        sk_idgen_opts_t lo = { .metrics = fr_m.reg, .on_event = on_lease_event, .role = "front" };
        char errstr[512];
        sk_err_t err = SK_OK;

        idgen = sk_idgen_start_opts(&g_fr.conf, &lo, &err, errstr, sizeof(errstr));
        if (!idgen) {
                SK_LOG(SK_ERROR, "worker_lease_failed", "worker_id=%d err=%s reason=\"%s\"",
                       g_fr.conf.worker_id, sk_err2str(err), errstr);
                return err == SK_EEXIST ? 2 : 1;
        }
        snprintf(g_fr.lease_holder, sizeof(g_fr.lease_holder), "%s", sk_idgen_holder(idgen));
        if (fr_pipeline_start(errstr, sizeof(errstr)) != 0) {
                SK_LOG(SK_ERROR, "pipeline_start_failed", "reason=\"%s\"", errstr);
                sk_idgen_stop(idgen);
                return 1;
        }
        if (fr_lookup_start(errstr, sizeof(errstr)) != 0 ||
            fr_room_routes_start(errstr, sizeof(errstr)) != 0 ||
            fr_ops_start(idgen, errstr, sizeof(errstr)) != 0 ||
            fr_payment_start(errstr, sizeof(errstr)) != 0 ||
            fr_http_start(idgen, errstr, sizeof(errstr)) != 0) {
                SK_LOG(SK_ERROR, "http_start_failed", "addr=%s reason=\"%s\"", g_fr.conf.http_addr,
                       errstr);
                sk_idgen_stop(idgen);
                _exit(1);
        }
        return -1;
}

int main(int argc, char **argv)
{
        int rc;

        if ((rc = configure(argc, argv)) >= 0 || (rc = start_front()) >= 0)
                return rc;
        sk_failpoint_log_start();
        SK_LOG(SK_INFO, "front_started",
               "addr=%s ops_addr=%s worker_id=%d topic=%s prefix=%s http_threads=%d redis_workers=%d "
               "delivery_timeout_ms=%d deadline_ms=%lld max_inflight=%d soldout_cache_ms=%d",
               g_fr.conf.http_addr, g_fr.ops_addr, sk_idgen_worker_id(idgen), g_fr.conf.topic,
               g_fr.conf.redis_prefix, g_fr.http_threads, g_fr.redis_workers,
               g_fr.conf.kafka_delivery_timeout_ms, (long long)g_fr.deadline_ms,
               g_fr.conf.max_inflight, g_fr.conf.soldout_cache_ms);
        while (!g_stop) {
                sk_sleep_ms(100, NULL);
                /* Key rotation (DESIGN.md 15, 18): SIGHUP re-reads the JWKS, the payment
                 * keys and the queue keys now; a changed file of each is seen within 10 s. */
                int hup = g_hup ? (g_hup = 0, 1) : 0;

                fr_identity_tick(hup);
                fr_payment_tick(hup);
                fr_room_keys_tick(hup);
        }
        shutdown_front();
        return 0;
}
