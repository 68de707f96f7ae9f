/* producer/room_tick.c: the front's waiting-room state that is not a route (room_tick.h,
 * DESIGN.md 18): the admission keys (re-read on SIGHUP and a changed file, keyset.h),
 * the table of queued vouchers, the advancing tick, the deferred used-bit clears and the
 * room metrics. The tick thread owns its own Redis
 * and DB connections; the HTTP threads read the table under its lock (no I/O).
 * What it does not do: answer requests (room_routes.c) or sign tokens. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "degrade.h"
#include "front.h"
#include "keyset.h"
#include "metrics.h"
#include "pool.h"
#include "room_snap.h"
#include "room_tick.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/dswitch.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/redis.h"

#define ROOM_TABLE_MS 1000              /* the table and the DB facts: once a second */
#define ROOM_LABELLED 16                /* rooms with their own metric series */
#define UNUSE_MAX 1024                  /* used-bit clears and done marks waiting for the tick */
#define ROOM_RETIRE_MS 60000            /* a room leaves the table this long after its end */
#define FACTS_MAX 256                   /* vouchers without a room whose facts are kept */
#define FACTS_MS 1000                   /* a voucher's facts or stock reading reused this long */

/* A room's metric series (DESIGN.md 18 "Metrics"): registered and retired together. */
enum { M_MEMBERS, M_LIVE, M_ADMITTED, M_EXPIRED, M_POLLS, M_SOLDOUT, M_N };
static const struct {
        int gauge;                      /* 1 gauge, 0 counter */
        const char *name, *help;
} SERIES[M_N] = {
        [M_MEMBERS] = { 1, "seckill_queue_members", "members of the waiting room (DESIGN.md 18)" },
        [M_LIVE] = { 1, "seckill_queue_admissions_live",
                     "admissions issued, not used, not expired" },
        [M_ADMITTED] = { 0, "seckill_queue_admitted_total",
                         "positions admitted (seen by this front's ticks)" },
        [M_EXPIRED] = { 0, "seckill_queue_admissions_expired_total",
                        "admissions that expired unused" },
        [M_POLLS] = { 0, "seckill_queue_polls_total", "member polls answered by this front" },
        [M_SOLDOUT] = { 0, "seckill_queue_sold_out_told_total",
                        "answers telling a member sold_out" },
};

typedef struct room_ent {
        sk_queue_voucher_t v;
        int64_t seen_ms;                /* last read from the DB (monotonic) */
        int64_t facts_ms;               /* last PAID / deadline read (monotonic) */
        int64_t paid, held_until_ms;
        int closed;
        int64_t admitted_total, expired_total;
        char generation[17];            /* the room's generation last seen by the tick */
        int64_t units, units_ms;        /* the voucher route's stock reading (monotonic; 0 none) */
        sk_metric_t *m[M_N];            /* the series of SERIES */
        int own_series;                 /* 1: the series are labelled by this voucher */
} room_ent_t;

/* A voucher without a room, as the room's routes last read it (DESIGN.md 15 "Cost of
 * hostile input": a flood of requests for it costs one DB read a second, not one each). */
typedef struct facts_ent {
        sk_queue_voucher_t v;
        int64_t seen_ms;                /* read from the DB (monotonic) */
        int64_t units, units_ms;        /* the voucher route's stock reading (monotonic; 0 none) */
} facts_ent_t;

typedef struct unuse {
        sk_qroom_t room;
        char gen[17];
        int64_t pos;
        int op;                         /* SK_QUSE_CLEAR or SK_QUSE_DONE */
} unuse_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static room_ent_t rooms[FR_ROOM_MAX];   /* guarded by mu */
static int nrooms;
static int64_t table_ok_ms;             /* monotonic time of the last good table read */
static facts_ent_t facts[FACTS_MAX];    /* guarded by mu */
static int nfacts;
static unuse_t unuse_q[UNUSE_MAX];      /* guarded by mu */
static int nunuse;
static fr_thread_t th;
static int labelled;                    /* rooms given their own series so far */

static fr_keyset_t qkeys = {
        .ev_loaded = "queue_keys_loaded", .ev_reloaded = "queue_keys_reloaded",
        .ev_failed = "queue_keys_reload_failed", .var = "SECKILL_QUEUE_KEYS_FILE",
        .kind = &sk_qtoken_keyfile,
        .m_reloads = &fr_m.queue_key_reloads, .m_failed = &fr_m.queue_key_reload_fail,
        .mu = PTHREAD_MUTEX_INITIALIZER,
};                                      /* SECKILL_QUEUE_KEYS_FILE (keyset.h) */

int fr_room_init(char *errstr, size_t errstr_size)
{
        qkeys.path = g_fr.queue_keys_file;
        return fr_keyset_init(&qkeys, errstr, errstr_size);
}

void fr_room_keys_tick(int hup)
{
        fr_keyset_tick(&qkeys, hup);
}

int fr_room_has_keys(void)
{
        return fr_keyset_loaded(&qkeys);
}

sk_keyfile_set_t *fr_room_keys(void)
{
        return fr_keyset_get(&qkeys);
}

static room_ent_t *find_locked(int64_t vid)
{
        for (int i = 0; i < nrooms; i++)
                if (rooms[i].v.voucher_id == vid)
                        return &rooms[i];
        return NULL;
}

int fr_room_find(int64_t vid, sk_queue_voucher_t *out)
{
        room_ent_t *e;
        int found = 0;

        pthread_mutex_lock(&mu);
        if ((e = find_locked(vid))) {
                *out = e->v;
                found = 1;
        }
        pthread_mutex_unlock(&mu);
        return found;
}

int fr_room_table_fresh(void)
{
        int fresh;

        pthread_mutex_lock(&mu);
        fresh = table_ok_ms > 0 && sk_mono_ms() - table_ok_ms < 5000;
        pthread_mutex_unlock(&mu);
        return fresh;
}

/* The metric series of a room: its own up to ROOM_LABELLED rooms, then "other". */
static void series(room_ent_t *e)
{
        char lab[64];

        if (labelled < ROOM_LABELLED) {
                snprintf(lab, sizeof(lab), "voucher=\"%" PRId64 "\"", e->v.voucher_id);
                labelled++;
                e->own_series = 1;
        } else {
                snprintf(lab, sizeof(lab), "voucher=\"other\"");
        }
        for (int k = 0; k < M_N; k++)
                e->m[k] = SERIES[k].gauge
                                  ? sk_metrics_gauge(fr_m.reg, SERIES[k].name, lab, SERIES[k].help)
                                  : sk_metrics_counter(fr_m.reg, SERIES[k].name, lab,
                                                       SERIES[k].help);
}

/* DESIGN.md 18 "Metrics": a room's own series are retired after its end, and its label
 * slot goes to the next room (mu held). The "other" series are shared and stay. Every
 * user of a handle holds mu, so none is in use here. */
static void retire_locked(int i)
{
        room_ent_t *e = &rooms[i];

        if (e->own_series) {
                for (int k = 0; k < M_N; k++)
                        sk_metrics_remove(fr_m.reg, e->m[k]);
                labelled--;
        }
        SK_LOG(SK_INFO, "queue_room_retired", "voucher=%" PRId64 " series=%s", e->v.voucher_id,
               e->own_series ? "removed" : "shared");
        memmove(&rooms[i], &rooms[i + 1], (size_t)(nrooms - i - 1) * sizeof(rooms[0]));
        nrooms--;
}

/* Add or refresh @p v in the table (mu held). */
static void upsert_locked(const sk_queue_voucher_t *v)
{
        room_ent_t *e = find_locked(v->voucher_id);

        if (!e) {
                if (nrooms == FR_ROOM_MAX)
                        return;
                e = &rooms[nrooms++];
                memset(e, 0, sizeof(*e));
                e->v = *v;
                series(e);
        }
        e->v = *v;
        e->seen_ms = sk_mono_ms();
}

static facts_ent_t *facts_locked(int64_t vid)
{
        for (int i = 0; i < nfacts; i++)
                if (facts[i].v.voucher_id == vid)
                        return &facts[i];
        return NULL;
}

/* Keep the facts of @p v, a voucher without a room (mu held): a full cache gives up its
 * stalest entry (one more DB read later, never a wrong answer). */
static void facts_note_locked(const sk_queue_voucher_t *v)
{
        facts_ent_t *f = facts_locked(v->voucher_id);

        if (!f && nfacts < FACTS_MAX)
                f = &facts[nfacts++];
        if (!f) {
                f = &facts[0];
                for (int i = 1; i < nfacts; i++)
                        if (facts[i].seen_ms < f->seen_ms)
                                f = &facts[i];
        }
        if (f->v.voucher_id != v->voucher_id)
                memset(f, 0, sizeof(*f));
        f->v = *v;
        f->seen_ms = sk_mono_ms();
}

void fr_room_note(const sk_queue_voucher_t *v)
{
        pthread_mutex_lock(&mu);
        /* a room past its retirement is not brought back (its series stay retired) */
        if (v->conf.mode == 1 && sk_now_ms() <= v->end_ms + ROOM_RETIRE_MS)
                upsert_locked(v);
        else
                facts_note_locked(v);
        pthread_mutex_unlock(&mu);
}

int fr_room_facts(int64_t vid, sk_queue_voucher_t *out)
{
        room_ent_t *e;
        facts_ent_t *f;
        int found = 0;

        pthread_mutex_lock(&mu);
        if ((e = find_locked(vid))) {
                *out = e->v;
                found = 1;
        } else if ((f = facts_locked(vid)) && sk_mono_ms() - f->seen_ms < FACTS_MS) {
                *out = f->v;
                found = 1;
        }
        pthread_mutex_unlock(&mu);
        return found;
}

int fr_room_units(int64_t vid, int64_t *units)
{
        room_ent_t *e;
        facts_ent_t *f = NULL;
        int64_t at = 0, now = sk_mono_ms();
        int found = 0;

        pthread_mutex_lock(&mu);
        if ((e = find_locked(vid))) {
                at = e->units_ms;
                *units = e->units;
        } else if ((f = facts_locked(vid))) {
                at = f->units_ms;
                *units = f->units;
        }
        found = at > 0 && now - at < FACTS_MS;
        pthread_mutex_unlock(&mu);
        return found;
}

void fr_room_units_note(int64_t vid, int64_t units)
{
        room_ent_t *e;
        facts_ent_t *f;

        pthread_mutex_lock(&mu);
        if ((e = find_locked(vid))) {
                e->units = units;
                e->units_ms = sk_mono_ms();
        } else if ((f = facts_locked(vid))) {
                f->units = units;
                f->units_ms = sk_mono_ms();
        }
        pthread_mutex_unlock(&mu);
}

void fr_room_of(const sk_queue_voucher_t *v, sk_qroom_t *room)
{
        room_ent_t *e;

        *room = (sk_qroom_t){ .prefix = g_fr.conf.redis_prefix, .voucher_id = v->voucher_id,
                              .begin_ms = v->begin_ms, .end_ms = v->end_ms, .conf = v->conf,
                              .expire_at_ms = v->end_ms + g_fr.expire_extra_ms };
        pthread_mutex_lock(&mu);
        if ((e = find_locked(v->voucher_id)) && e->generation[0])
                room->redraw_ms = FR_ROOM_REDRAW_MS;
        pthread_mutex_unlock(&mu);
}

void fr_room_use_later(const sk_qroom_t *room, const char *gen, int64_t pos, int op)
{
        pthread_mutex_lock(&mu);
        if (nunuse < UNUSE_MAX) {
                unuse_q[nunuse].room = *room;
                snprintf(unuse_q[nunuse].gen, sizeof(unuse_q[nunuse].gen), "%s", gen);
                unuse_q[nunuse].pos = pos;
                unuse_q[nunuse].op = op;
                nunuse++;
        } else {
                SK_LOG(SK_WARN, "queue_unuse_dropped", "voucher=%" PRId64 " position=%" PRId64,
                       room->voucher_id, pos);
        }
        pthread_mutex_unlock(&mu);
}

void fr_room_count_poll(int64_t vid, int sold_out)
{
        room_ent_t *e;

        pthread_mutex_lock(&mu);
        if ((e = find_locked(vid))) {
                sk_metric_add(e->m[M_POLLS], 1);
                if (sold_out)
                        sk_metric_add(e->m[M_SOLDOUT], 1);
        }
        pthread_mutex_unlock(&mu);
}

int fr_room_table_read(void)
{
        int read;

        pthread_mutex_lock(&mu);
        read = table_ok_ms > 0;
        pthread_mutex_unlock(&mu);
        return read;
}

void fr_room_json(char *buf, size_t size)
{
        pthread_mutex_lock(&mu);
        snprintf(buf, size, "{\"keys\":%s,\"rooms\":%d,\"table\":%s,\"tableFresh\":%s}",
                 fr_room_has_keys() ? "true" : "false", nrooms, table_ok_ms > 0 ? "true" : "false",
                 table_ok_ms > 0 && sk_mono_ms() - table_ok_ms < 5000 ? "true" : "false");
        pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------ the tick thread ---- */

typedef struct tick_conns {
        sk_redis_t *r;
        sk_db_t *db;
} tick_conns_t;

/* Read the queued vouchers whose sale has not ended more than a minute ago (DB), into
 * the table; rooms no longer listed, and ended more than ROOM_RETIRE_MS ago, are dropped
 * with their metric series. */
static void read_table(tick_conns_t *c)
{
        char errstr[256];
        sk_i64vec_t ids = { 0 };
        sk_queue_voucher_t v;
        sk_err_t err;

        if (!c->db && !(c->db = sk_db_connect(&g_fr.conf.mysql, 0, 0, errstr, sizeof(errstr)))) {
                SK_LOG(SK_WARN, "queue_table_db", "reason=\"%s\"", errstr);
                return;
        }
        err = sk_queue_db_rooms(c->db, FR_ROOM_MAX, &ids, errstr, sizeof(errstr));
        for (size_t i = 0; err == SK_OK && i < ids.n; i++)
                if ((err = sk_queue_voucher_get(c->db, ids.v[i], &v, errstr, sizeof(errstr))) == SK_OK) {
                        pthread_mutex_lock(&mu);
                        upsert_locked(&v);
                        pthread_mutex_unlock(&mu);
                }
        if (err != SK_OK) {
                SK_LOG(SK_WARN, "queue_table_db", "reason=\"%s\"", errstr);
                sk_db_close(c->db);
                c->db = NULL;
        } else {
                int64_t now = sk_now_ms();

                pthread_mutex_lock(&mu);
                table_ok_ms = sk_mono_ms();
                /* rooms no longer listed and ended a minute ago leave, with their series */
                for (int i = 0; i < nrooms;) {
                        size_t k = 0;

                        while (k < ids.n && ids.v[k] != rooms[i].v.voucher_id)
                                k++;
                        if (k == ids.n && now > rooms[i].v.end_ms + ROOM_RETIRE_MS)
                                retire_locked(i);
                        else
                                i++;
                }
                pthread_mutex_unlock(&mu);
        }
        sk_i64vec_free(&ids);
}

/* Redis TIME (ms) at the start of a reading, then every bucket's stock in one pipelined
 * round (grouped per node by the Redis layer). The TIME is the room's own master's
 * (`{q:ID}`'s slot on a Cluster): queue_advance.lua compares the reading's time with the
 * uselog times queue_use.lua wrote by that master's clock (DESIGN.md 18), so another
 * master's clock, ahead of it, would let a reading taken before a deduct count its use.
 * A failure leaves the raw connection unusable: the caller closes @p r.
 * @returns 0 with *units, *read_ms. */
static int read_stock(sk_redis_t *r, const sk_queue_voucher_t *v, int64_t *units, int64_t *read_ms)
{
        char keys[SK_BUCKETS_MAX][SK_KEY_MAX], errstr[256], room_key[SK_KEY_MAX];
        sk_redis_pipe_t *p = sk_redis_pipe_new(r);
        redisReply *rep = NULL;
        redisContext *ctx;
        int nb = v->buckets > 0 && v->buckets <= SK_BUCKETS_MAX ? v->buckets : 1;
        int ok = 0;

        if (!p)
                return -1;
        if (sk_queue_key(room_key, sizeof(room_key), g_fr.conf.redis_prefix, v->voucher_id, "state") != 0 ||
            !(ctx = sk_redis_ctx_key(r, room_key)) || !(rep = redisCommand(ctx, "TIME")) ||
            (*read_ms = sk_redis_time_ms(rep)) < 0)
                goto done;
        for (int b = 0; b < nb; b++) {
                const char *argv[2] = { "GET", keys[b] };
                sk_key_voucher(keys[b], g_fr.conf.redis_prefix, v->voucher_id, b, SK_KEY_STOCK);
                sk_redis_pipe_add(p, 2, argv, NULL);
        }
        if (sk_redis_pipe_exec(p) != 0)
                goto done;
        *units = 0;
        for (int b = 0; b < nb; b++) {
                redisReply *s = NULL;
                if (sk_redis_pipe_result(p, b, &s, errstr, sizeof(errstr)) != SK_OK)
                        goto done;
                if (s->type == REDIS_REPLY_STRING)
                        *units += strtoll(s->str, NULL, 10);
        }
        ok = 1;
done:
        if (rep)
                freeReplyObject(rep);
        sk_redis_pipe_free(p);
        return ok ? 0 : -1;
}

/* The DB facts of a room at most once a second: PAID count, latest pay deadline. */
static void read_facts(tick_conns_t *c, room_ent_t *e)
{
        char errstr[256];
        int64_t paid = 0, latest = 0;

        if (sk_mono_ms() - e->facts_ms < ROOM_TABLE_MS || !c->db)
                return;
        if (sk_queue_db_paid(c->db, e->v.voucher_id, &paid, &latest, errstr, sizeof(errstr)) != SK_OK) {
                SK_LOG(SK_WARN, "queue_facts_db", "voucher=%" PRId64 " reason=\"%s\"",
                       e->v.voucher_id, errstr);
                return;
        }
        e->facts_ms = sk_mono_ms();
        e->paid = paid;
        e->held_until_ms = latest > 0 ? latest + (int64_t)g_fr.conf.pay_grace_s * 1000 : 0;
        e->closed = paid >= e->v.init_stock;
}

/* One advance of room @p e (a copy; its counters are written back under mu). */
static void advance_one(tick_conns_t *c, room_ent_t *copy)
{
        char errstr[256];
        sk_qroom_t room;
        sk_qroom_adv_t adv;
        int64_t units = 0, read_ms = 0, now = sk_now_ms(), held;
        room_ent_t *e;
        sk_err_t err;

        if (now < copy->v.begin_ms - (int64_t)copy->v.conf.open_s * 1000 || now > copy->v.end_ms + 60000)
                return;
        /* DESIGN.md 18 "Outage": the line does not advance while the voucher sells on the
         * DB alone (12): Redis's stock no longer counts what is sold */
        if (fr_degrade_state(copy->v.voucher_id, NULL, NULL) != SK_DSW_REDIS)
                return;
        read_facts(c, copy);
        if (read_stock(c->r, &copy->v, &units, &read_ms) != 0) {
                sk_redis_close(c->r);
                c->r = NULL;
                return;
        }
        held = copy->v.init_stock - copy->paid - units;
        fr_room_of(&copy->v, &room);
        err = sk_qroom_advance(c->r, &room, units, read_ms, copy->facts_ms ? (held < 0 ? 0 : held) : -1,
                               copy->held_until_ms, copy->closed || now >= copy->v.end_ms, &adv,
                               errstr, sizeof(errstr));
        if (err != SK_OK) {
                SK_LOG(SK_WARN, "queue_advance_failed", "voucher=%" PRId64 " err=%s reason=\"%s\"",
                       copy->v.voucher_id, sk_err2str(err), errstr);
                if (err != SK_EINVAL) {
                        sk_redis_close(c->r);
                        c->r = NULL;
                }
                return;
        }
        fr_room_snap_put(copy->v.voucher_id, &adv);     /* the polls' room state */
        pthread_mutex_lock(&mu);
        if ((e = find_locked(copy->v.voucher_id)) && !adv.noroom) {
                e->facts_ms = copy->facts_ms;
                e->paid = copy->paid;
                e->held_until_ms = copy->held_until_ms;
                e->closed = copy->closed;
                sk_metric_set(e->m[M_MEMBERS], adv.members);
                sk_metric_set(e->m[M_LIVE], adv.live);
                sk_metric_add(e->m[M_ADMITTED], adv.admitted_now);
                /* DESIGN.md 18: a room whose keys were lost starts a new generation */
                if (e->generation[0] && strcmp(e->generation, adv.generation) != 0) {
                        SK_LOG(SK_WARN, "queue_new_generation", "voucher=%" PRId64 " old=%s new=%s",
                               e->v.voucher_id, e->generation, adv.generation);
                        sk_metric_add(fr_m.queue_generations, 1);
                        e->expired_total = 0;
                }
                snprintf(e->generation, sizeof(e->generation), "%s", adv.generation);
                if (adv.expired > e->expired_total) {
                        sk_metric_add(e->m[M_EXPIRED], adv.expired - e->expired_total);
                        e->expired_total = adv.expired;
                }
        }
        pthread_mutex_unlock(&mu);
        if (adv.admitted_now > 0)
                SK_LOG(SK_DEBUG, "queue_admitted", "voucher=%" PRId64 " up_to=%" PRId64 " n=%" PRId64
                       " window=%" PRId64 " live=%" PRId64, copy->v.voucher_id, adv.up_to,
                       adv.admitted_now, adv.window, adv.live);
}

/* The used-bit clears queued by 503 answers and the done marks queued by the others
 * (fr_room_use_later). */
static void run_unuse(tick_conns_t *c)
{
        unuse_t batch[64];
        int n;

        pthread_mutex_lock(&mu);
        n = nunuse < 64 ? nunuse : 64;
        memcpy(batch, unuse_q, (size_t)n * sizeof(batch[0]));
        memmove(unuse_q, unuse_q + n, (size_t)(nunuse - n) * sizeof(unuse_q[0]));
        nunuse -= n;
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < n; i++) {
                char errstr[256];
                sk_quse_t res;

                if (sk_qroom_use(c->r, &batch[i].room, batch[i].gen, batch[i].pos, batch[i].op, &res,
                                 errstr, sizeof(errstr)) != SK_OK) {
                        SK_LOG(SK_WARN, "queue_unuse_failed", "voucher=%" PRId64 " position=%" PRId64
                               " reason=\"%s\"", batch[i].room.voucher_id, batch[i].pos, errstr);
                        /* this one and the rest of the batch wait for the next tick */
                        for (; i < n; i++)
                                fr_room_use_later(&batch[i].room, batch[i].gen, batch[i].pos,
                                                  batch[i].op);
                        sk_redis_close(c->r);
                        c->r = NULL;
                        return;
                }
        }
}

static void *tick_main(void *arg)
{
        tick_conns_t c = { 0 };
        int64_t table_ms = 0;

        (void)arg;
        while (!fr_thread_stopping(&th)) {
                int64_t t0 = sk_mono_ms();
                room_ent_t copy[FR_ROOM_MAX];
                int n;

                if (t0 - table_ms >= ROOM_TABLE_MS) {
                        table_ms = t0;
                        read_table(&c);
                }
                if (!c.r) {
                        char errstr[256];
                        c.r = sk_redis_connect(&g_fr.conf.redis, FR_REDIS_CMD_TIMEOUT_MS, errstr,
                                               sizeof(errstr));
                }
                /* clears and done marks first: the stock reading after them counts them */
                if (c.r)
                        run_unuse(&c);
                if (c.r) {
                        pthread_mutex_lock(&mu);
                        n = nrooms;
                        memcpy(copy, rooms, (size_t)n * sizeof(copy[0]));
                        pthread_mutex_unlock(&mu);
                        for (int i = 0; i < n && c.r; i++)
                                advance_one(&c, &copy[i]);
                }
                {
                        int64_t spent = sk_mono_ms() - t0;
                        if (spent < FR_ROOM_TICK_MS)
                                sk_sleep_ms((int)(FR_ROOM_TICK_MS - spent), NULL);
                }
        }
        sk_redis_close(c.r);
        sk_db_close(c.db);
        return NULL;
}

int fr_room_start(void)
{
        return fr_thread_start(&th, tick_main);
}

void fr_room_stop(void)
{
        fr_thread_stop(&th);
}
