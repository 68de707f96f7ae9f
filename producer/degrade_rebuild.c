/* producer/degrade_rebuild.c: the recovery rebuild worker of seckill-front
 * (producer/degrade_rebuild.h, DESIGN.md 12 "db -> rebuilding"): a queue of vouchers in
 * state rebuilding, filled by the degrade follower every second, and one thread that
 * rebuilds them (sk_rebuild_voucher, §8) and then moves each to redis by a conditional
 * UPDATE on (state, epoch) on its own DB connection, so two fronts never both make the
 * move. A failed rebuild leaves the voucher in rebuilding (503) for the next request. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "breaker.h"
#include "degrade_rebuild.h"
#include "front.h"
#include "sk/db.h"
#include "sk/log.h"
#include "sk/rebuild.h"

#define REBUILD_QUEUE_MAX 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static sk_dsw_row_t queue[REBUILD_QUEUE_MAX];  /* guarded by mu */
static size_t nqueue;
static int64_t running;                        /* voucher being rebuilt, 0 = none; mu */
static int stopping;                           /* mu */
static pthread_t t_worker;
static sk_db_t *db;                            /* the worker's connection (worker only) */
static char who[160];

void fr_rebuild_request(const sk_dsw_row_t *row)
{
        size_t i;

        pthread_mutex_lock(&mu);
        if (row->voucher_id == running) {
                pthread_mutex_unlock(&mu);
                return;
        }
        for (i = 0; i < nqueue; i++)
                if (queue[i].voucher_id == row->voucher_id) {
                        queue[i] = *row; /* the latest epoch */
                        pthread_mutex_unlock(&mu);
                        return;
                }
        if (nqueue < REBUILD_QUEUE_MAX) {
                queue[nqueue++] = *row;
                pthread_cond_signal(&cv);
        }
        pthread_mutex_unlock(&mu);
}

void fr_degrade_log_move(const sk_dsw_row_t *row, int to, const char *why)
{
        SK_LOG(to == SK_DSW_REDIS ? SK_INFO : SK_WARN, "degrade_state",
               "voucher_id=%" PRId64 " from=%s to=%s epoch=%" PRId64 " mode=%s why=%s",
               row->voucher_id, sk_dsw_state_str(row->state), sk_dsw_state_str(to),
               row->epoch + 1, sk_dsw_mode_str(row->mode), why);
}

/* rebuilding -> redis on the worker's connection (conditional on state and epoch). */
static void move_to_redis(sk_dsw_row_t *row)
{
        char errstr[512];
        int moved = 0;

        if (!db && !(db = sk_db_connect_io(&g_fr.conf.mysql, 0, 5, 5, errstr, sizeof(errstr)))) {
                SK_LOG(SK_WARN, "degrade_move_failed", "voucher_id=%" PRId64 " to=redis reason=\"%s\"",
                       row->voucher_id, errstr);
                return;
        }
        if (!sk_db_connected(db) && sk_db_reconnect(db, errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_WARN, "degrade_move_failed", "voucher_id=%" PRId64 " to=redis reason=\"%s\"",
                       row->voucher_id, errstr);
                return;
        }
        if (sk_dsw_move(db, row->voucher_id, row->state, row->epoch, SK_DSW_REDIS, who, &moved,
                        errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_WARN, "degrade_move_failed", "voucher_id=%" PRId64 " to=redis reason=\"%s\"",
                       row->voucher_id, errstr);
                return;
        }
        if (moved)
                fr_degrade_log_move(row, SK_DSW_REDIS, "rebuilt");
}

/* The rebuild of one voucher (Redis reachable), then the move. */
static void rebuild_one(sk_dsw_row_t *row)
{
        sk_rebuild_report_t rep;
        char errstr[512];
        sk_err_t err;

        if (!fr_breaker_allow())
                return;
        memset(&rep, 0, sizeof(rep));
        err = sk_rebuild_voucher(&g_fr.conf, row->voucher_id, 0, &rep, errstr, sizeof(errstr));
        if (err != SK_OK) {
                SK_LOG(SK_WARN, "degrade_rebuild_failed",
                       "voucher_id=%" PRId64 " err=%s reason=\"%s\" detail=\"%s\"", row->voucher_id,
                       sk_err2str(err), errstr, rep.detail);
                return;
        }
        SK_LOG(SK_INFO, "degrade_rebuilt", "voucher_id=%" PRId64 " stock=%" PRId64 " users=%" PRId64,
               row->voucher_id, rep.stock, rep.users);
        move_to_redis(row);
}

static void *worker_main(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&mu);
        for (;;) {
                sk_dsw_row_t row;

                while (!stopping && nqueue == 0)
                        pthread_cond_wait(&cv, &mu);
                if (stopping)
                        break;
                row = queue[0];
                memmove(&queue[0], &queue[1], (nqueue - 1) * sizeof(queue[0]));
                nqueue--;
                running = row.voucher_id;
                pthread_mutex_unlock(&mu);
                rebuild_one(&row);
                pthread_mutex_lock(&mu);
                running = 0;
        }
        nqueue = 0;
        pthread_mutex_unlock(&mu);
        return NULL;
}

int fr_rebuild_start(void)
{
        char host[64] = "?";

        gethostname(host, sizeof(host) - 1);
        snprintf(who, sizeof(who), "front %s:%d", host, (int)getpid());
        pthread_mutex_lock(&mu);
        stopping = 0;
        nqueue = 0;
        pthread_mutex_unlock(&mu);
        return pthread_create(&t_worker, NULL, worker_main, NULL) == 0 ? 0 : -1;
}

void fr_rebuild_stop(void)
{
        pthread_mutex_lock(&mu);
        stopping = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        pthread_join(t_worker, NULL);
        sk_db_close(db);
        db = NULL;
}
