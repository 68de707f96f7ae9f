/* main.c: seckill-reconciler, one reconciliation pass per run, for cron or a systemd
 * timer (DESIGN.md 2, 7-9, 14).
 *
 *   seckill-reconciler [--voucher ID] [--window-hours H] [--grace-seconds S]
 *                      [--max-redrive N] [--repair] [--drift-threshold N] [--json]
 *
 * Exit status: 0 everything consistent; 1 found and repaired (re-driven, rolled back,
 * rebuilt, a release of a cancelled/closed order finished); 2 unresolved (waiting on consumers, DLQ, inconsistent, collision, drift
 * without --repair, a refund_due payment older than 24 h (DESIGN.md 13), an error, a
 * lost lock, interrupted) or an invalid configuration.
 * A second run while one holds the deployment's lock says so and exits 0.
 *
 * The run lock is the tb_lock row "seckill:reconcile:<database>:<prefix>" (sk/dblock.h,
 * its own connection, taken without waiting, ttl RUN_LOCK_TTL_MS; DESIGN.md 16: not
 * GET_LOCK, which is node-local on Galera): overlapping runs of one deployment never
 * collide, separate deployments sharing a server never block each other. It is
 * re-checked and renewed before every write of the pass (rc_must_stop): a row that no
 * longer names this run (another run took it after it expired, or it could not be
 * confirmed) stops the run at once, exit 2 "run lock lost". A run that dies leaves the
 * row to expire: the next run within the ttl says "another run holds the lock".
 *
 * Output: the table or --json (report.c); "dlqRedriveLoopTraces" (JSON) / "traces stuck
 * in the DLQ re-drive loop" (table) counts the undecided traces that an earlier pass
 * re-drove and that are back in the DLQ (DESIGN.md 8): alert on it. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"
#include "sk/failpoint.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/dblock.h"
#include "sk/ids.h"
#include "sk/log.h"
#include "sk/payment.h"
#include "sk/redis.h"
#include "sk/signals.h"

#define RUN_LOCK_TTL_MS 60000  /* checked before every write, renewed past half of it; a dead
                                * run's row ends after it (or at once on this host) */

static volatile sig_atomic_t g_stop; /* 0 run, 1 stop between batches, 2 second signal */

/* The run lock's row still names this run (re-checked before every write; renewed once
 * less than half its ttl is left: sk_dblock_recheck). */
static int lock_alive(void *arg)
{
        char errstr[256];

        if (sk_dblock_recheck(arg, errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_ERROR, "lock_lost", "err=\"%s\"", errstr);
                return 0;
        }
        return 1;
}

static void print_simple(int json, int code, const char *msg)
{
        if (json) {
                printf("{\"exit\":%d,\"result\":\"%s\",\"dlqRedriveLoopTraces\":0,\"note\":\"%s\","
                       "\"vouchers\":[]}\n", code,
                       code == 0 ? "consistent" : "unresolved", msg);
        } else {
                printf("%s\n", msg);
        }
}

/* The reconciler's own options (DESIGN.md 7-9, 14), read into `args`: each default is
 * written here only; sk_conf_load applies it and --help shows it. */
static struct {
        char voucher[32];
        int grace_s, max_redrive, repair, drift_threshold, json;
} args;
static const sk_opt_t OPTS[] = {
        SK_OPT_S("voucher", NULL, args.voucher, NULL, "every voucher on sale or ended within the window",
                 "reconcile this voucher only"),
        SK_OPT_I("grace-seconds", NULL, &args.grace_s, 1, 86400, 30, NULL,
                 "judge only trace entries older than this, measured from the entry's ts (its traceId's"
                 " snowflake time, the request's arrival at the front); >= the front's request"
                 " deadline, 2 x delivery timeout + 1 s"),
        SK_OPT_I("max-redrive", NULL, &args.max_redrive, 1, 1000, 3, NULL,
                 "counted failed re-drives before a purchase is declared lost"),
        SK_OPT_B("repair", NULL, &args.repair,
                 "rebuild Redis stock/users from the DB for drifted vouchers (DESIGN.md 8)"),
        SK_OPT_I("drift-threshold", NULL, &args.drift_threshold, 0, 1000000000, 10, NULL,
                 "rebuild a bucket whose Redis stock exceeds DB stock - undecided by more than"
                 " this many units, even without --repair (DESIGN.md 14)"),
        SK_OPT_B("json", NULL, &args.json, "print one JSON document instead of the table"),
};

/* Options into *conf and *opts. @returns -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv, sk_conf_t *conf, rc_opts_t *opts)
{
        int argi = 0, rc;

        rc = sk_conf_load_bin(conf, SK_BIN_RECONCILER, argc, argv, "seckill-reconciler", NULL,
                              OPTS, SK_NOPTS(OPTS), &argi);
        if (rc == 1)
                return 0;
        if (rc != 0)
                return 2;
        /* Options before any connection. An entry's ts is the snowflake time of its
         * traceId, i.e. the request's arrival at the front (DESIGN.md 4 v5), not the
         * admission: the deduct may run up to the request deadline (2 x delivery timeout
         * + 1 s, DESIGN.md 8) after it, and the front answers by that deadline. Judging
         * a younger trace could re-drive or roll back a purchase the front is still
         * deciding, so the grace, measured from ts, covers the whole deadline. */
        if ((int64_t)args.grace_s * 1000 < rc_request_deadline_ms(conf)) {
                fprintf(stderr, "seckill-reconciler: --grace-seconds %d must cover the front's "
                        "request deadline, 2 x SECKILL_KAFKA_DELIVERY_TIMEOUT_MS (%d ms) + 1 s, "
                        "i.e. >= %lld\n", args.grace_s, conf->kafka_delivery_timeout_ms,
                        (long long)((rc_request_deadline_ms(conf) + 999) / 1000));
                return 2;
        }
        if (sk_redis_startup_check(&conf->redis, "seckill-reconciler") != 0)
                return 2;       /* DESIGN.md 4: Redis >= 7.0, noeviction on every master */
        if (argi < argc) {
                fprintf(stderr, "seckill-reconciler: unexpected argument %s (see --help)\n", argv[argi]);
                return 2;
        }
        memset(opts, 0, sizeof(*opts));
        if (args.voucher[0] && sk_id_parse_cstr(args.voucher, &opts->voucher_id) != 0) {
                fprintf(stderr, "seckill-reconciler: --voucher %s is not a canonical id (1..2^63-1)\n",
                        args.voucher);
                return 2;
        }
        /* --window-hours is the common option (sk/conf.h): SECKILL_RECONCILE_WINDOW_HOURS
         * by default (DESIGN.md 2); scope = vouchers ended within it + 24 h. */
        opts->window_hours = conf->reconcile_window_hours;
        opts->grace_s = args.grace_s;
        opts->max_redrive = args.max_redrive;
        opts->repair = args.repair;
        opts->drift_threshold = args.drift_threshold;
        opts->json = args.json;
        return -1;
}

/* DESIGN.md 13: a refund_due payment not marked refunded 24 h after it arrived keeps
 * the pass unresolved (exit 2) until the merchant refunds it and runs `seckill-admin
 * payment refunded`. A DB error here is logged and also exit 2. */
#define REFUND_DUE_MAX_AGE_S (24 * 3600)
static void refunds_check(rc_ctx_t *ctx, int *code, char *note, size_t note_size)
{
        char errstr[256] = "";
        int64_t count = 0, oldest_s = 0;
        size_t len = strlen(note);
        sk_err_t err = sk_payment_refund_backlog(ctx->db, &count, &oldest_s, errstr, sizeof(errstr));

        if (err) {
                SK_LOG(SK_ERROR, "refund_backlog_failed", "err=%s reason=\"%s\"", sk_err2str(err),
                       errstr);
                snprintf(note + len, note_size - len, "%sthe refund backlog could not be read",
                         len ? "; " : "");
                *code = 2;
                return;
        }
        SK_LOG(count ? SK_WARN : SK_INFO, "refund_backlog", "refund_due=%" PRId64
               " oldest_s=%" PRId64, count, oldest_s);
        if (count > 0 && oldest_s >= REFUND_DUE_MAX_AGE_S) {
                snprintf(note + len, note_size - len, "%s%" PRId64 " refund(s) due, the oldest %"
                         PRId64 " s old (over 24 h): refund them, then seckill-admin payment "
                         "refunded", len ? "; " : "", count, oldest_s);
                *code = 2;
        }
}

/* The pass over every voucher in scope, printed. @returns the exit status. */
static int run_pass(rc_ctx_t *ctx, const char *lock_name)
{
        char errstr[512], note[512] = "";
        rc_vstat_t *stats = NULL;
        int64_t *ids = NULL;
        size_t nids = 0, ndone = 0, i;
        int rc, code = 0, json = ctx->opts.json;
        sk_err_t err;

        if ((err = rc_scope(ctx, &ids, &nids, errstr, sizeof(errstr))) != SK_OK) {
                SK_LOG(SK_ERROR, "scope_failed", "err=\"%s\"", errstr);
                print_simple(json, 2, "could not list the vouchers in scope");
                return 2;
        }
        sk_failpoint_log_start();
        SK_LOG(SK_INFO, "pass_start", "vouchers=%zu window_hours=%d grace_s=%d max_redrive=%d"
               " repair=%d lock=%s", nids, ctx->opts.window_hours, ctx->opts.grace_s,
               ctx->opts.max_redrive, ctx->opts.repair, lock_name);
        if (nids && !(stats = calloc(nids, sizeof(*stats)))) {
                free(ids);
                print_simple(json, 2, "out of memory");
                return 2;
        }
        for (i = 0; i < nids; i++) {
                err = rc_voucher(ctx, ids[i], &stats[i]);
                ndone = i + 1;
                if (err == SK_ESTOP) {
                        snprintf(note, sizeof(note), "%s", ctx->lock_lost
                                 ? "run lock lost (its tb_lock row no longer names this run, or"
                                   " could not be confirmed): stopped without acting further"
                                 : "interrupted: stopped");
                        if (ctx->lock_lost || stats[i].voucher_id == 0)
                                ndone = i + (stats[i].voucher_id ? 1 : 0);
                        code = 2;
                        break;
                }
                rc = rc_vstat_exit(&stats[i]);
                if (rc > code)
                        code = rc;
        }
        if (!ctx->lock_lost)
                refunds_check(ctx, &code, note, sizeof(note));
        rc_ctx_release(ctx);
        rc_print(stdout, stats, ndone, json, code, note);
        SK_LOG(SK_INFO, "pass_end", "vouchers=%zu exit=%d lock_lost=%d dlq_redrive_loop=%" PRId64,
               ndone, code, ctx->lock_lost, rc_dlq_loop_total(stats, ndone));
        free(ids);
        free(stats);
        return code;
}

int main(int argc, char **argv)
{
        sk_conf_t conf;
        rc_opts_t opts;
        char lock_name[256], errstr[512];
        sk_dblock_t *lk = NULL;
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        rc_ctx_t ctx;
        int code;
        sk_err_t err;

        sk_log_init("reconciler");
        if ((code = parse_options(argc, argv, &conf, &opts)) >= 0)
                return code;
        sk_db_library_init();
        snprintf(lock_name, sizeof(lock_name), "seckill:reconcile:%s:%s", conf.mysql.database,
                 conf.redis_prefix);
        if (!(lk = sk_dblock_open(&conf.mysql, lock_name, RUN_LOCK_TTL_MS, errstr,
                                  sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "db_connect_failed", "err=\"%s\"", errstr);
                print_simple(opts.json, 2, "database unreachable");
                return 2;
        }
        err = sk_dblock_take(lk, 0, errstr, sizeof(errstr));
        if (err == SK_EAGAIN && sk_dblock_busy(lk)) {
                SK_LOG(SK_INFO, "already_running", "lock=%s err=\"%s\"", lock_name, errstr);
                print_simple(opts.json, 0, "another seckill-reconciler run holds the lock; nothing done");
                sk_dblock_close(lk);
                return 0;
        }
        if (err != SK_OK) {
                SK_LOG(SK_ERROR, "lock_failed", "lock=%s err=\"%s\"", lock_name, errstr);
                print_simple(opts.json, 2, "could not take the run lock");
                sk_dblock_close(lk);
                return 2;
        }
        if (!(db = sk_db_connect(&conf.mysql, 0, 5, errstr, sizeof(errstr))) ||
            !(r = sk_redis_connect(&conf.redis, 5000, errstr, sizeof(errstr)))) {
                SK_LOG(SK_ERROR, "connect_failed", "err=\"%s\"", errstr);
                print_simple(opts.json, 2, "database or Redis unreachable");
                code = 2;
                goto done;
        }
        (void)sk_signals_install(&g_stop, 0, NULL); /* SIGINT/SIGTERM: 1, then 2 */

        memset(&ctx, 0, sizeof(ctx));
        ctx.conf = &conf;
        ctx.opts = opts;
        ctx.db = db;
        ctx.r = r;
        ctx.stop = &g_stop;
        ctx.lock_ok = lock_alive;
        ctx.lock_arg = lk;
        code = run_pass(&ctx, lock_name);
done:
        fflush(stdout);
        sk_redis_close(r);
        sk_db_close(db);
        sk_dblock_close(lk);    /* releases the row if still ours */
        return code;
}
