/* producer/degrade.c: the front's follower of the degrade switch (producer/degrade.h,
 * DESIGN.md 12). One thread, its own DB connection; every second:
 *   1. INSERT IGNORE a switch row (mode NULL, state redis) for every voucher that has
 *      none (vouchers created before their row existed);
 *   2. read every row (sk_dsw_read_all) and publish them to the HTTP threads;
 *   3. per voucher, the moves this front may make, each a conditional UPDATE on
 *      (state, epoch) so two fronts never both make one:
 *        redis -> draining      mode db_only, or mode auto with this front's breaker
 *                               open (mode redis_only never leaves redis) -- at most
 *                               once per voucher and breaker episode (below). "Open"
 *                               is fr_breaker_allow() = 0: on one server or Sentinel
 *                               the one breaker; on a Cluster every master's breaker
 *                               (breaker.c), i.e. all of Redis unreachable. One dead
 *                               master drains no voucher, even one whose buckets all
 *                               live on it: the Cluster's own failover moves its slots
 *                               within cluster-node-timeout + about a second, while a
 *                               drain would cost every bucket of the voucher (those on
 *                               healthy masters too) the draining wait and then a
 *                               rebuild. So a voucher whose buckets span masters keeps
 *                               selling on the healthy ones, and the dead master's
 *                               buckets answer 503 until the promoted replica serves
 *                               them. A master that stays dead with no replica to
 *                               promote is the operator's: `seckill-admin degrade
 *                               db-only --voucher ID` (docs/OPERATIONS.md);
 *        draining -> db         evidence or time (DESIGN.md 12 b-d), then Kafka:
 *                               this front acks the epoch in tb_drain_ack once none of
 *                               its purchases of V can reach Kafka (vflight.c count 0,
 *                               read after the epoch was published to the HTTP threads);
 *                               the early move needs the ack of every front lease row
 *                               with lease_until >= since - D (sk_drain_acks_missing);
 *                               without it the timed rule, since + D +
 *                               SECKILL_SWITCH_STALE_MS (DB clock). Either way the
 *                               group's committed offsets on the voucher's partitions
 *                               must reach high watermarks sampled after that evidence
 *                               (sk_vkafka_check on a handle opened then: its first
 *                               check samples the targets);
 *        db -> rebuilding       mode auto / redis_only and the breaker healthy for
 *                               SECKILL_BREAKER_HEALTHY_MS while the voucher is in db
 *                               (since + that long, DB clock), one transaction that
 *                               also sets switch_epoch on every bucket row of V, so it
 *                               and a DB-only purchase in flight conflict on a bucket
 *                               row (sk_dsw_begin_rebuild; DESIGN.md 16 (2));
 *        rebuilding -> redis    after sk_rebuild_voucher succeeded (breaker closed),
 *                               on the rebuild worker's thread (degrade_rebuild.c),
 *                               never this one: a rebuild waiting to settle must not
 *                               stop the other rows being re-read; a failed rebuild
 *                               stays in rebuilding and is queued again next second
 *                               (by this or any front).
 * Every move is logged once (event degrade_state; why=acks for the early drain, timed for
 * the timed one) and counted (seckill_front_drain_moves_total{rule}).
 *
 * Staleness (DESIGN.md 12 a): the time of the last successful read of the rows is kept;
 * on Galera a read counts only when made with wsrep_sync_wait = 1 on a Synced node
 * (DESIGN.md 16 (e)): a Donor or desynced node may lag without flow control, so the
 * follower steps to the next node of the URL instead (event switch_read_not_synced);
 * once it is older than SECKILL_SWITCH_STALE_MS, fr_degrade_fresh() says 0 and nothing goes
 * to Redis for any voucher (the HTTP threads and the deduct gate) until a read succeeds.
 * While a voucher drains the rows are read every DRAIN_READ_MS instead of every second, so
 * acks and the move follow each other quickly.
 *
 * Breaker episodes. DESIGN.md 12 moves a voucher to draining when a front's breaker
 * *opens*. Read as "while it is open", two fronts whose breakers disagree (one cut off
 * from a Redis the other reaches) bounce the voucher: the cut-off front drains it, the
 * healthy front rebuilds it back to redis, the cut-off front drains it again, every few
 * seconds, and neither path sells (seen in 0412 two_fronts_one_frozen, epoch 0 -> 37 in
 * 90 s). So a front drains a voucher because of its breaker at most once per episode
 * (closed -> open, sampled every read period): once it has seen the voucher leave redis
 * during the episode, a voucher back in redis is another front's recovery, and this
 * front answers its own purchases 503 (breaker open) until its breaker closes. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breaker.h"
#include "degrade.h"
#include "degrade_rebuild.h"
#include "front.h"
#include "health.h"
#include "pool.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/db_sync.h"
#include "metrics.h"
#include "sk/dswitch.h"
#include "sk/drainack.h"
#include "sk/failpoint.h"
#include "sk/log.h"
#include "sk/vkafka.h"
#include "vflight.h"

#define DEGRADE_READ_MS 1000            /* DESIGN.md 12: every front reads every second */
#define DRAIN_READ_MS 200               /* ... and faster while a voucher it follows drains */
#define MAX_DRAINS 64                   /* vouchers draining at once with a Kafka handle */

static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
static sk_dsw_row_t *tab;               /* guarded by tab_mu; sorted by voucher_id */
static size_t ntab;

static fr_thread_t t_follow;
static sk_db_t *db;                     /* the follower's connection */
static char who[160];                   /* updated_by: "front host:pid" */
static _Atomic int64_t last_read_ms;    /* sk_mono_ms of the last successful read, 0 = none */

/* A voucher in draining (follower thread only): whether this front has acked the epoch,
 * and once the evidence is in (every front's ack, or the timed wait) the Kafka handle
 * whose first check sampled the high watermarks, and which rule it was. */
typedef struct drain {
        int used, acked;
        int64_t voucher_id, epoch;
        sk_vkafka_t *vk;
        const char *rule;               /* "acks" or "timed", once vk is open */
} drain_t;
static drain_t drains[MAX_DRAINS];

/* Breaker episodes (follower thread only): the episode number, bumped when the follower
 * sees the breaker open after seeing it closed, and per voucher the episode during which
 * this front saw it out of state redis. */
#define MAX_SEEN 1024
typedef struct seen { int64_t voucher_id; uint64_t episode; } seen_t;
static seen_t seen[MAX_SEEN];
static size_t nseen;
static uint64_t episode;                /* counts closed -> open transitions seen */
static int was_open;

static seen_t *seen_find(int64_t voucher_id)
{
        size_t i;

        for (i = 0; i < nseen; i++)
                if (seen[i].voucher_id == voucher_id)
                        return &seen[i];
        if (nseen == MAX_SEEN)
                nseen = 0;      /* a front serving > 1024 vouchers forgets the oldest */
        seen[nseen].voucher_id = voucher_id;
        seen[nseen].episode = 0;
        return &seen[nseen++];
}

/* Per tick: 1 if this front's breaker may move @p row to draining (open, and the
 * voucher has not yet left redis during this episode); records what it sees. */
static int breaker_drains(const sk_dsw_row_t *row, int open)
{
        seen_t *sv;

        if (!open)
                return 0;
        sv = seen_find(row->voucher_id);
        if (row->state != SK_DSW_REDIS) {
                sv->episode = episode;
                return 1;       /* only the redis -> draining move reads it */
        }
        return sv->episode != episode;
}

static int cmp_row(const void *a, const void *b)
{
        const sk_dsw_row_t *x = a, *y = b;

        return x->voucher_id < y->voucher_id ? -1 : x->voucher_id > y->voucher_id;
}

int fr_degrade_state(int64_t voucher_id, int64_t *epoch, int *mode)
{
        sk_dsw_row_t key = { .voucher_id = voucher_id }, *hit;
        int state = SK_DSW_REDIS;

        pthread_mutex_lock(&tab_mu);
        hit = ntab ? bsearch(&key, tab, ntab, sizeof(*tab), cmp_row) : NULL;
        if (hit) {
                state = hit->state;
                if (epoch)
                        *epoch = hit->epoch;
                if (mode)
                        *mode = hit->mode;
        } else {
                if (epoch)
                        *epoch = 0;
                if (mode)
                        *mode = SK_DSW_AUTO;
        }
        pthread_mutex_unlock(&tab_mu);
        return state;
}

size_t fr_degrade_metrics(char *buf, size_t size)
{
        size_t off = 0, i;
        int n;

        if (size == 0)
                return 0;
        buf[0] = '\0';
        n = snprintf(buf, size, "# HELP seckill_front_degrade_state the degrade state of each "
                     "voucher as this front follows it (DESIGN.md 12): 1 for its current state\n"
                     "# TYPE seckill_front_degrade_state gauge\n");
        if (n < 0 || (size_t)n >= size)
                return 0;
        off = (size_t)n;
        pthread_mutex_lock(&tab_mu);
        for (i = 0; i < ntab; i++) {
                n = snprintf(buf + off, size - off,
                             "seckill_front_degrade_state{voucher=\"%" PRId64 "\",state=\"%s\"} 1\n",
                             tab[i].voucher_id, sk_dsw_state_str(tab[i].state));
                if (n < 0 || (size_t)n >= size - off)
                        break;
                off += (size_t)n;
        }
        pthread_mutex_unlock(&tab_mu);
        buf[off] = '\0';
        return off;
}

size_t fr_degrade_json(char *buf, size_t size)
{
        size_t off = 0, i;
        int n, first = 1;

        if (size < 3)
                return 0;
        buf[off++] = '{';
        pthread_mutex_lock(&tab_mu);
        for (i = 0; i < ntab; i++) {
                if (tab[i].state == SK_DSW_REDIS)
                        continue; /* only vouchers not on the Redis path */
                n = snprintf(buf + off, size - off, "%s\"%" PRId64 "\":\"%s\"", first ? "" : ",",
                             tab[i].voucher_id, sk_dsw_state_str(tab[i].state));
                if (n < 0 || (size_t)n >= size - off - 1)
                        break;
                off += (size_t)n;
                first = 0;
        }
        pthread_mutex_unlock(&tab_mu);
        buf[off++] = '}';
        buf[off] = '\0';
        return off;
}

static drain_t *drain_find(int64_t voucher_id, int64_t epoch, int create)
{
        int i, free_i = -1;

        for (i = 0; i < MAX_DRAINS; i++) {
                if (drains[i].used && drains[i].voucher_id == voucher_id) {
                        if (drains[i].epoch == epoch)
                                return &drains[i];
                        sk_vkafka_close(drains[i].vk); /* another draining period */
                        memset(&drains[i], 0, sizeof(drains[i]));
                }
                if (!drains[i].used && free_i < 0)
                        free_i = i;
        }
        if (!create || free_i < 0)
                return NULL;
        memset(&drains[free_i], 0, sizeof(drains[free_i]));
        drains[free_i].used = 1;
        drains[free_i].voucher_id = voucher_id;
        drains[free_i].epoch = epoch;
        return &drains[free_i];
}

static void drain_drop(drain_t *d)
{
        sk_vkafka_close(d->vk);
        memset(d, 0, sizeof(*d));
}

int fr_degrade_fresh(void)
{
        int64_t last = atomic_load(&last_read_ms);

        return last > 0 && sk_mono_ms() - last < g_fr.conf.switch_stale_ms;
}

/* The HTTP threads follow a move this front made at once, not at the next read. */
static void publish_one(const sk_dsw_row_t *row)
{
        sk_dsw_row_t *hit;

        pthread_mutex_lock(&tab_mu);
        hit = ntab ? bsearch(row, tab, ntab, sizeof(*tab), cmp_row) : NULL;
        if (hit && hit->epoch < row->epoch) {
                hit->state = row->state;
                hit->epoch = row->epoch;
                hit->age_ms = 0;
        }
        pthread_mutex_unlock(&tab_mu);
}

static void move(sk_dsw_row_t *row, int to, const char *why)
{
        char errstr[512];
        int moved = 0;

        if (sk_dsw_move(db, row->voucher_id, row->state, row->epoch, to, who, &moved, errstr,
                        sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_WARN, "degrade_move_failed", "voucher_id=%" PRId64 " to=%s reason=\"%s\"",
                       row->voucher_id, sk_dsw_state_str(to), errstr);
                return;
        }
        if (moved) {
                fr_degrade_log_move(row, to, why);
                row->state = to;
                row->epoch++;
                publish_one(row);
        }
}

/* DESIGN.md 12 b: this front's ack of @p row's epoch, once none of its purchases of the
 * voucher can reach Kafka. The rows (this epoch included) were published to the HTTP
 * threads before this call, so a purchase not counted now reads draining and never
 * reaches Redis. Failpoint front.drain_before_ack: error = no ack this time. */
static void drain_ack(sk_dsw_row_t *row, drain_t *d)
{
        char errstr[512];
        int64_t n = fr_vflight_count(row->voucher_id);

        if (n > 0) {
                SK_LOG(SK_DEBUG, "drain_ack_wait", "voucher_id=%" PRId64 " epoch=%" PRId64
                       " in_flight=%" PRId64, row->voucher_id, row->epoch, n);
                return;
        }
        if (SK_FAILPOINT("front.drain_before_ack")) {
                SK_LOG(SK_WARN, "failpoint", "name=front.drain_before_ack voucher_id=%" PRId64,
                       row->voucher_id);
                return;
        }
        if (sk_drain_ack(db, g_fr.lease_holder, row->voucher_id, row->epoch, errstr,
                         sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_WARN, "drain_ack_failed", "voucher_id=%" PRId64 " epoch=%" PRId64
                       " reason=\"%s\"", row->voucher_id, row->epoch, errstr);
                return;
        }
        d->acked = 1;
        sk_metric_add(fr_m.drain_acks, 1);
        SK_LOG(SK_INFO, "drain_acked", "voucher_id=%" PRId64 " epoch=%" PRId64 " holder=%s",
               row->voucher_id, row->epoch, g_fr.lease_holder);
}

/* The evidence of DESIGN.md 12 c, or the timed rule: @returns "acks", "timed" or NULL
 * (not yet). The early move needs this front's own ack first (its lease row is one of
 * those counted). */
static const char *drain_evidence(const sk_dsw_row_t *row, const drain_t *d)
{
        char errstr[512];
        int64_t missing = -1, fronts = 0;

        if (row->age_ms >= g_fr.deadline_ms + g_fr.conf.switch_stale_ms)
                return "timed";
        if (!d->acked)
                return NULL;
        if (sk_drain_acks_missing(db, row->voucher_id, row->epoch, g_fr.deadline_ms, &missing,
                                  &fronts, errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_DEBUG, "drain_acks_read_failed", "voucher_id=%" PRId64 " reason=\"%s\"",
                       row->voucher_id, errstr);
                return NULL;
        }
        if (missing != 0) {
                SK_LOG(SK_DEBUG, "drain_acks_missing", "voucher_id=%" PRId64 " epoch=%" PRId64
                       " missing=%" PRId64 " fronts=%" PRId64, row->voucher_id, row->epoch, missing,
                       fronts);
                return NULL;
        }
        SK_LOG(SK_INFO, "drain_acks_complete", "voucher_id=%" PRId64 " epoch=%" PRId64
               " fronts=%" PRId64 " age_ms=%" PRId64, row->voucher_id, row->epoch, fronts,
               row->age_ms);
        return "acks";
}

/* draining -> db (DESIGN.md 12): this front's ack; then the evidence (every front's ack,
 * or the timed wait); then high watermarks of the voucher's partitions sampled after it
 * (the handle's first check) and the group's committed offsets reaching them. */
static void step_draining(sk_dsw_row_t *row)
{
        char errstr[512];
        sk_vkafka_state_t st;
        drain_t *d;

        if (!(d = drain_find(row->voucher_id, row->epoch, 1)))
                return;
        if (!d->acked)
                drain_ack(row, d);
        if (!d->vk) {
                const char *rule = drain_evidence(row, d);

                if (!rule)
                        return;
                if (!(d->vk = sk_vkafka_open(&g_fr.conf, errstr, sizeof(errstr)))) {
                        SK_LOG(SK_WARN, "degrade_kafka_open_failed", "reason=\"%s\"", errstr);
                        return;
                }
                d->rule = rule;
        }
        if (sk_vkafka_check(d->vk, row->voucher_id, row->buckets, &st, errstr, sizeof(errstr)) !=
            SK_OK) {
                SK_LOG(SK_DEBUG, "degrade_kafka_check", "voucher_id=%" PRId64 " reason=\"%s\"",
                       row->voucher_id, errstr);
                return;
        }
        if (!st.topic_missing && st.lag > 0) {
                SK_LOG(SK_DEBUG, "degrade_draining", "voucher_id=%" PRId64 " lag=%" PRId64,
                       row->voucher_id, st.lag);
                return;
        }
        {
                const char *rule = d->rule;
                int64_t ep = row->epoch;

                drain_drop(d);
                move(row, SK_DSW_DB, rule);
                if (row->epoch != ep)
                        sk_metric_add(strcmp(rule, "acks") ? fr_m.drain_timed : fr_m.drain_early, 1);
        }
}

/* Redis healthy for the recovery (DESIGN.md 12): the breaker has seen it healthy for
 * SECKILL_BREAKER_HEALTHY_MS AND the health thread reached it in its last check. The
 * second half is the evidence a front restarted mid-outage lacks: its breaker starts
 * closed and sees no purchase traffic while its vouchers are on the DB-only path. */
static int redis_healthy(void)
{
        int ok, noev, scripts, server;

        fr_health_redis(&ok, &noev, &scripts, &server);
        return ok && server && fr_breaker_healthy();
}

static void step(sk_dsw_row_t *row)
{
        /* draining is decided by step_draining on every tick (its own rules): sk_dsw_next
         * is asked with a wait of 0 so it names the move. */
        int healthy = redis_healthy();
        int to = sk_dsw_next(row, breaker_drains(row, !fr_breaker_allow()), healthy, 0,
                             g_fr.conf.breaker_healthy_ms);
        char errstr[512];
        int moved = 0;
        int64_t ep = row->epoch;

        switch (to) {
        case SK_DSW_DRAINING:
                move(row, SK_DSW_DRAINING, row->mode == SK_DSW_DB_ONLY ? "mode_db_only" : "breaker_open");
                break;
        case SK_DSW_DB:
                step_draining(row);
                break;
        case SK_DSW_REBUILDING:
                if (sk_dsw_begin_rebuild(db, row->voucher_id, row->epoch, who, &moved, &ep, errstr,
                                         sizeof(errstr)) != SK_OK) {
                        SK_LOG(SK_WARN, "degrade_move_failed",
                               "voucher_id=%" PRId64 " to=rebuilding reason=\"%s\"", row->voucher_id,
                               errstr);
                        break;
                }
                if (!moved)
                        break;
                fr_degrade_log_move(row, SK_DSW_REBUILDING, "redis_healthy");
                row->state = SK_DSW_REBUILDING;
                row->epoch = ep;
                fr_rebuild_request(row); /* never on this thread */
                break;
        case SK_DSW_REDIS:
                fr_rebuild_request(row);
                break;
        default:
                break;
        }
}

static void publish(sk_dsw_row_t *rows, size_t n)
{
        sk_dsw_row_t *old;

        pthread_mutex_lock(&tab_mu);
        old = tab;
        tab = rows;
        ntab = n;
        pthread_mutex_unlock(&tab_mu);
        free(old);
}

/* The follower's node is not Synced (a Donor, desynced, joining): nothing read there
 * counts as fresh (DESIGN.md 16 (e)). The next node of the URL first, like a lost link;
 * logged once per node change. */
static void not_synced(int state, int port)
{
        char errstr[512];

        SK_LOG(SK_WARN, "switch_read_not_synced", "port=%d wsrep_local_state=%d reason=\"the "
               "degrade switch is read only from a Synced node: trying the next one\"", port,
               state);
        sk_metric_add(fr_m.switch_not_synced, 1);
        sk_db_prefer_next_node(db);
        (void)sk_db_reconnect(db, errstr, sizeof(errstr));
}

/* One read (and publish) of every row. @returns 0 or -1 (DB unavailable, or the node is
 * not Synced). */
static int read_rows(sk_dsw_row_t **rows, size_t *n)
{
        static const char ensure[] =
                "INSERT IGNORE INTO tb_seckill_switch (scope, mode, state, updated_by) "
                "SELECT v.voucher_id, NULL, 'redis', 'front' FROM tb_seckill_voucher v "
                "LEFT JOIN tb_seckill_switch s ON s.scope = v.voucher_id WHERE s.scope IS NULL";
        char errstr[512];
        int state = SK_DB_WSREP_SYNCED, port = 0;

        if (!sk_db_connected(db) && sk_db_reconnect(db, errstr, sizeof(errstr)) != SK_OK)
                return -1;
        /* DESIGN.md 16 (e): on Galera the read waits for the cluster's earlier commits
         * (wsrep_sync_wait = 1, set on every read: a reconnect starts a fresh session)
         * and counts only from a Synced node. */
        if (sk_db_sync_reads(db, errstr, sizeof(errstr)) == SK_OK &&
            sk_db_node_state(db, &state, &port, errstr, sizeof(errstr)) == SK_OK &&
            state != SK_DB_WSREP_SYNCED) {
                not_synced(state, port);
                return -1;
        }
        if (sk_db_exec(db, ensure, errstr, sizeof(errstr)) != SK_OK ||
            sk_dsw_read_all(db, rows, n, NULL, errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_DEBUG, "degrade_read_failed", "reason=\"%s\"", errstr);
                if (sk_db_last_err(db) == SK_EAGAIN) {
                        /* A lost link or a node not ready: the next node of the URL first,
                         * never back through a dead or frozen writer (DESIGN.md 16), so the
                         * rows are fresh again as soon as the cluster writes. */
                        sk_db_prefer_next_node(db);
                        (void)sk_db_reconnect(db, errstr, sizeof(errstr));
                }
                return -1;
        }
        return 0;
}

static void *follow_main(void *arg)
{
        int was_stale = 0;

        (void)arg;
        while (!fr_thread_stopping(&t_follow)) {
                int64_t t0 = sk_mono_ms();
                sk_dsw_row_t *rows;
                size_t n, i;

                int64_t period_ms = DEGRADE_READ_MS;

                if (read_rows(&rows, &n) == 0) {
                        int open = !fr_breaker_allow();

                        if (open && !was_open)
                                episode++;
                        was_open = open;
                        publish(rows, n);
                        atomic_store(&last_read_ms, sk_mono_ms());
                        sk_metric_set(fr_m.switch_stale, 0);
                        for (i = 0; i < n && !fr_thread_stopping(&t_follow); i++) {
                                sk_dsw_row_t row = rows[i];

                                if (row.state == SK_DSW_DRAINING)
                                        period_ms = DRAIN_READ_MS;
                                step(&row);
                        }
                } else if (!fr_degrade_fresh()) {
                        if (!was_stale)
                                SK_LOG(SK_WARN, "switch_stale", "stale_ms=%d reason=\"the degrade "
                                       "switch rows cannot be read: nothing goes to Redis\"",
                                       g_fr.conf.switch_stale_ms);
                        was_stale = 1;
                        sk_metric_set(fr_m.switch_stale, 1);
                }
                if (was_stale && fr_degrade_fresh()) {
                        SK_LOG(SK_INFO, "switch_fresh", "reason=\"the switch rows were read\"");
                        was_stale = 0;
                }
                while (!fr_thread_stopping(&t_follow) && sk_mono_ms() - t0 < period_ms)
                        sk_sleep_ms(20, NULL);
        }
        return NULL;
}

int fr_degrade_start(void)
{
        char errstr[512], host[64] = "?";
        sk_dsw_row_t *rows;
        size_t n;

        gethostname(host, sizeof(host) - 1);
        snprintf(who, sizeof(who), "front %s:%d", host, (int)getpid());
        db = sk_db_connect_io(&g_fr.conf.mysql, 0, 5, 5, errstr, sizeof(errstr));
        if (!db) {
                SK_LOG(SK_ERROR, "degrade_db_failed", "reason=\"%s\"", errstr);
                return -1;
        }
        if (read_rows(&rows, &n) == 0) {
                publish(rows, n);
                atomic_store(&last_read_ms, sk_mono_ms());
        }
        if (fr_rebuild_start() != 0)
                return -1;
        return fr_thread_start(&t_follow, follow_main);
}

void fr_degrade_stop(void)
{
        int i;

        fr_thread_stop(&t_follow);
        fr_rebuild_stop();
        for (i = 0; i < MAX_DRAINS; i++)
                if (drains[i].used)
                        drain_drop(&drains[i]);
        sk_db_close(db);
        db = NULL;
        publish(NULL, 0);
}
