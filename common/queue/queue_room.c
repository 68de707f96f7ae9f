/* queue_room.c: the waiting room in Redis (sk/queue_room.h, DESIGN.md 18): the room's
 * scripts (embedded from lua/ in common/sale), their arguments and replies, the poll's
 * plain reads (no script), and the member state decided from a view. */
#include "sk/queue_room.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "sk/ids.h"
#include "sk/redis_error.h"

extern const char sk_lua_queue_join[], sk_lua_queue_advance[], sk_lua_queue_use[];

static sk_redis_script_t s_join = { .name = "queue_join", .body = sk_lua_queue_join };
static sk_redis_script_t s_adv = { .name = "queue_advance", .body = sk_lua_queue_advance };
static sk_redis_script_t s_use = { .name = "queue_use", .body = sk_lua_queue_use };

static const char *const KINDS[7] = { "state", "pre", "post", "used", "gone", "ticks", "uselog" };

typedef struct room_keys {
        char buf[7][SK_QUEUE_KEY_MAX];
        const char *k[7];
} room_keys_t;

static sk_err_t keys_of(const sk_qroom_t *room, room_keys_t *rk, char *errstr, size_t errstr_size)
{
        for (int i = 0; i < 7; i++) {
                if (sk_queue_key(rk->buf[i], sizeof(rk->buf[i]), room->prefix, room->voucher_id,
                                 KINDS[i]) != 0) {
                        sk_seterr(errstr, errstr_size, "queue key: prefix too long");
                        return SK_EINVAL;
                }
                rk->k[i] = rk->buf[i];
        }
        return SK_OK;
}

static int64_t num(const redisReply *e)
{
        int64_t v = 0;
        const char *p;
        int neg = 0;

        if (!e)
                return -1;
        if (e->type == REDIS_REPLY_INTEGER)
                return e->integer;
        if (e->type != REDIS_REPLY_STRING || e->len == 0 || e->len > 19)
                return -1;
        p = e->str;
        if (*p == '-') {
                neg = 1;
                p++;
        }
        for (; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -1;
                v = v * 10 + (*p - '0');
        }
        return neg ? -v : v;
}

static void copy_gen(char dst[17], const redisReply *e)
{
        size_t n = e && e->type == REDIS_REPLY_STRING && e->len <= 16 ? e->len : 0;

        memcpy(dst, n ? e->str : "", n);
        dst[n] = '\0';
}

static int tag_is(const redisReply *e, const char *s)
{
        return e && e->type == REDIS_REPLY_STRING && strcmp(e->str, s) == 0;
}

/* The 15-element view of lib/queue.lua into *v. */
static sk_err_t parse_view(const redisReply *rep, sk_qroom_view_t *v, char *errstr,
                           size_t errstr_size)
{
        static const char *const TAGS[] = { "MEMBER", "REJOINED", "NOTMEMBER", "NOROOM",
                                            "NOTOPEN", "ENDED", "CLOSED" };
        redisReply *const *e;

        memset(v, 0, sizeof(*v));
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 15) {
                sk_seterr(errstr, errstr_size, "queue script: unexpected reply");
                return SK_EREDIS;
        }
        e = rep->element;
        v->tag = (sk_qview_tag_t)-1;
        for (int i = 0; i < 7; i++)
                if (tag_is(e[0], TAGS[i]))
                        v->tag = (sk_qview_tag_t)i;
        if ((int)v->tag < 0) {
                sk_seterr(errstr, errstr_size, "queue script: unexpected tag");
                return SK_EREDIS;
        }
        v->now_ms = num(e[1]);
        copy_gen(v->generation, e[2]);
        v->begun = num(e[3]) == 1;
        v->npre = num(e[4]);
        v->seq = num(e[5]);
        v->up_to = num(e[6]);
        v->position = num(e[7]);
        v->used = num(e[8]) == 1;
        v->admit_ms = num(e[9]);
        v->units_left = num(e[10]);
        v->units_held = num(e[11]);
        v->held_until_ms = num(e[12]);
        v->closed = num(e[13]) == 1;
        v->exp_up_to = num(e[14]);
        return SK_OK;
}

static void fmt_i64(char *buf, size_t size, int64_t v)
{
        snprintf(buf, size, "%" PRId64, v);
}

sk_err_t sk_qroom_join(sk_redis_t *r, const sk_qroom_t *room, int64_t uid, int rejoin_used,
                       sk_qroom_view_t *v, char *errstr, size_t errstr_size)
{
        char a[10][24], uidbuf[SK_ID_STRLEN + 1], gen[17];
        const char *args[10];
        room_keys_t rk;
        sk_err_t err;

        if ((err = keys_of(room, &rk, errstr, errstr_size)) != SK_OK)
                return err;
        if (sk_queue_generation_draw(gen) != 0) {
                sk_seterr(errstr, errstr_size, "no randomness from the OS");
                return SK_EAGAIN;
        }
        sk_id_format(uid, uidbuf);
        args[0] = uidbuf;
        fmt_i64(a[1], sizeof(a[1]), room->begin_ms);
        fmt_i64(a[2], sizeof(a[2]), room->end_ms);
        fmt_i64(a[3], sizeof(a[3]), room->begin_ms - (int64_t)room->conf.open_s * 1000);
        fmt_i64(a[6], sizeof(a[6]), room->expire_at_ms);
        fmt_i64(a[7], sizeof(a[7]), (int64_t)room->conf.ttl_s * 1000);
        fmt_i64(a[9], sizeof(a[9]), room->redraw_ms > 0 ? room->redraw_ms : 0);
        for (int i = 1; i < 10; i++)
                args[i] = a[i];
        args[5] = gen;
        args[8] = rejoin_used ? "1" : "0";
        /* a collision of secret keys redraws (2^52 keys: practically never twice) */
        for (int tries = 0; tries < 8; tries++) {
                redisReply *rep = NULL;
                uint64_t key;

                if (sk_queue_prekey_draw(&key) != 0) {
                        sk_seterr(errstr, errstr_size, "no randomness from the OS");
                        return SK_EAGAIN;
                }
                snprintf(a[4], sizeof(a[4]), "%" PRIu64, key);
                args[4] = a[4];
                if ((err = sk_redis_evalsha(r, &s_join, 6, rk.k, 10, args, &rep, errstr,
                                            errstr_size)) != SK_OK)
                        return err;
                if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
                    tag_is(rep->element[0], "REDRAW")) {
                        freeReplyObject(rep);
                        continue;
                }
                err = parse_view(rep, v, errstr, errstr_size);
                freeReplyObject(rep);
                return err;
        }
        sk_seterr(errstr, errstr_size, "queue join: 8 pre-queue key collisions");
        return SK_EAGAIN;
}

/* ---- The poll: plain commands, no script (DESIGN.md 18 "Polling costs little").
 * A script costs this VM's Redis about 4 µs before its first command (bench/README.md),
 * the poll's whole budget; these reads cost about that together. Round 1: TIME, the
 * state, |pre|, the member's post-begin score and pre-queue rank; round 2, only for a
 * position already admitted: its used bit and, above expUpTo, its admission tick. Both
 * go to the room's own master (the `{q:ID}` slot), so TIME is the clock that wrote the
 * ticks. The reads are not one atomic snapshot, as the script's were: each is the room
 * at its moment, and a poll's answer is a view that the next poll, the token and
 * queue_use.lua (which decide a purchase) do not depend on. */

enum { P_TIME, P_STATE, P_NPRE, P_POST, P_RANK, P_N };
/* the state fields the view needs, in lib/queue.lua's order */
enum { S_GEN, S_BEGUN, S_SEQ, S_UPTO, S_LEFT, S_HELD, S_HELD_UNTIL, S_CLOSED, S_EXPUPTO, S_NPRE,
       S_N };

/* Send @p n commands on @p ctx and read their replies into rep[] (owned by the caller,
 * each freed by free_replies; NULL where none came). An error reply is a transient
 * error (a MOVED after a slot moved also marks the map stale). */
static sk_err_t raw_round(sk_redis_t *r, redisContext *ctx, int n, const char *argv[][16],
                          const int argc[], redisReply *rep[], char *errstr, size_t errstr_size)
{
        for (int i = 0; i < n; i++)
                rep[i] = NULL;
        for (int i = 0; i < n; i++)
                if (redisAppendCommandArgv(ctx, argc[i], argv[i], NULL) != REDIS_OK)
                        goto io;
        for (int i = 0; i < n; i++) {
                void *x = NULL;
                if (redisGetReply(ctx, &x) != REDIS_OK)
                        goto io;
                rep[i] = x;
        }
        for (int i = 0; i < n; i++) {
                if (rep[i]->type != REDIS_REPLY_ERROR)
                        continue;
                if (sk_redis_reply_is(rep[i], "MOVED") || sk_redis_reply_is(rep[i], "ASK"))
                        sk_redis_map_stale(r);
                sk_seterr(errstr, errstr_size, "queue poll: %.*s", (int)rep[i]->len, rep[i]->str);
                return SK_EAGAIN;
        }
        return SK_OK;
io:
        sk_seterr(errstr, errstr_size, "queue poll: %s", ctx->errstr[0] ? ctx->errstr : "connection lost");
        return SK_EAGAIN;
}

static void free_replies(redisReply *rep[], int n)
{
        for (int i = 0; i < n; i++)
                if (rep[i])
                        freeReplyObject(rep[i]);
}

/* The view of lib/queue.lua's q_position from round 1: the position, or -1 (not a member). */
static int64_t position_of(redisReply *const rep[], int64_t npre, int begun, int64_t seq)
{
        const redisReply *post = rep[P_POST], *rank = rep[P_RANK];

        if (seq > 0 && post->type == REDIS_REPLY_STRING)
                return npre + num(post);
        if (npre == 0 || rank->type != REDIS_REPLY_INTEGER)
                return -1;
        return begun ? rank->integer + 1 : 0;
}

/* Round 2 for an admitted position: its used bit and admission time into @p v. */
static sk_err_t admitted_of(sk_redis_t *r, redisContext *ctx, const room_keys_t *rk, sk_qroom_view_t *v,
                            char *errstr, size_t errstr_size)
{
        char pos[24];
        const char *argv[2][16] = { { "GETBIT", rk->k[3], pos },
                                    { "ZRANGEBYSCORE", rk->k[5], pos, "+inf", "LIMIT", "0", "1" } };
        const int argc[2] = { 3, 7 };
        int n = v->position > v->exp_up_to ? 2 : 1;
        redisReply *rep[2];
        sk_err_t err;

        fmt_i64(pos, sizeof(pos), v->position);
        if ((err = raw_round(r, ctx, n, argv, argc, rep, errstr, errstr_size)) == SK_OK) {
                v->used = rep[0]->type == REDIS_REPLY_INTEGER && rep[0]->integer == 1;
                /* "upTo:redisTimeMs" of the first tick covering the position */
                if (n == 2 && rep[1]->type == REDIS_REPLY_ARRAY && rep[1]->elements == 1 &&
                    rep[1]->element[0]->type == REDIS_REPLY_STRING) {
                        const char *c = strchr(rep[1]->element[0]->str, ':');
                        redisReply at = { .type = REDIS_REPLY_STRING };
                        if (c) {
                                at.str = (char *)c + 1;
                                at.len = strlen(c + 1);
                                v->admit_ms = num(&at);
                        }
                }
        }
        free_replies(rep, n);
        return err;
}

sk_err_t sk_qroom_poll(sk_redis_t *r, const sk_qroom_t *room, int64_t uid,
                       sk_qroom_view_t *v, char *errstr, size_t errstr_size)
{
        char uidbuf[SK_ID_STRLEN + 1];
        room_keys_t rk;
        redisReply *rep[P_N], *const *f;
        const redisReply *st;
        redisContext *ctx;
        sk_err_t err;

        memset(v, 0, sizeof(*v));
        if ((err = keys_of(room, &rk, errstr, errstr_size)) != SK_OK)
                return err;
        sk_id_format(uid, uidbuf);
        const char *argv[P_N][16] = {
                [P_TIME] = { "TIME" },
                [P_STATE] = { "HMGET", rk.k[0], "generation", "begun", "seq", "upto", "unitsLeft",
                              "unitsHeld", "heldUntil", "closed", "expupto", "npre" },
                [P_NPRE] = { "ZCARD", rk.k[1] },
                [P_POST] = { "ZSCORE", rk.k[2], uidbuf },
                [P_RANK] = { "ZRANK", rk.k[1], uidbuf },
        };
        const int argc[P_N] = { [P_TIME] = 1, [P_STATE] = 2 + S_N, [P_NPRE] = 2, [P_POST] = 3, [P_RANK] = 3 };

        if (!(ctx = sk_redis_ctx_key(r, rk.k[0]))) {
                sk_seterr(errstr, errstr_size, "queue poll: the room's master is not reachable");
                return SK_EAGAIN;
        }
        if ((err = raw_round(r, ctx, P_N, argv, argc, rep, errstr, errstr_size)) != SK_OK)
                goto done;
        st = rep[P_STATE];
        if (st->type != REDIS_REPLY_ARRAY || st->elements != S_N || (v->now_ms = sk_redis_time_ms(rep[P_TIME])) < 0 ||
            rep[P_NPRE]->type != REDIS_REPLY_INTEGER) {
                sk_seterr(errstr, errstr_size, "queue poll: unexpected reply");
                err = SK_EREDIS;
                goto done;
        }
        f = st->element;
        v->position = -1;
        v->admit_ms = -1;
        v->npre = rep[P_NPRE]->integer;
        if (f[S_GEN]->type != REDIS_REPLY_STRING) {
                v->tag = SK_QVIEW_NOROOM;       /* every state is created with a generation */
                v->units_left = -1;
                goto done;
        }
        copy_gen(v->generation, f[S_GEN]);
        v->begun = f[S_BEGUN]->type == REDIS_REPLY_STRING && strcmp(f[S_BEGUN]->str, "1") == 0;
        if (v->begun && f[S_NPRE]->type == REDIS_REPLY_STRING)
                v->npre = num(f[S_NPRE]);       /* frozen at begin */
        v->seq = f[S_SEQ]->type == REDIS_REPLY_STRING ? num(f[S_SEQ]) : 0;
        v->up_to = f[S_UPTO]->type == REDIS_REPLY_STRING ? num(f[S_UPTO]) : 0;
        v->units_left = f[S_LEFT]->type == REDIS_REPLY_STRING ? num(f[S_LEFT]) : -1;
        v->units_held = f[S_HELD]->type == REDIS_REPLY_STRING ? num(f[S_HELD]) : 0;
        v->held_until_ms = f[S_HELD_UNTIL]->type == REDIS_REPLY_STRING ? num(f[S_HELD_UNTIL]) : 0;
        v->closed = f[S_CLOSED]->type == REDIS_REPLY_STRING && strcmp(f[S_CLOSED]->str, "1") == 0;
        v->exp_up_to = f[S_EXPUPTO]->type == REDIS_REPLY_STRING ? num(f[S_EXPUPTO]) : 0;
        v->position = position_of(rep, v->npre, v->begun, v->seq);
        v->tag = v->position < 0 ? SK_QVIEW_NOTMEMBER : SK_QVIEW_MEMBER;
        if (v->position > 0 && v->position <= v->up_to)
                err = admitted_of(r, ctx, &rk, v, errstr, errstr_size);
done:
        free_replies(rep, P_N);
        return err;
}

sk_err_t sk_qroom_advance(sk_redis_t *r, const sk_qroom_t *room, int64_t units, int64_t read_ms,
                          int64_t units_held, int64_t held_until_ms, int closed,
                          sk_qroom_adv_t *out, char *errstr, size_t errstr_size)
{
        char a[11][24];
        const char *args[11];
        redisReply *rep = NULL;
        room_keys_t rk;
        sk_err_t err;
        int64_t in[10] = { units < 0 ? 0 : units, read_ms, (int64_t)room->conf.ttl_s * 1000,
                           room->conf.overbook_pct, room->conf.rate, room->begin_ms,
                           room->end_ms, room->expire_at_ms, units_held,
                           held_until_ms < 0 ? 0 : held_until_ms };

        memset(out, 0, sizeof(*out));
        if ((err = keys_of(room, &rk, errstr, errstr_size)) != SK_OK)
                return err;
        for (int i = 0; i < 10; i++) {
                fmt_i64(a[i], sizeof(a[i]), in[i]);
                args[i] = a[i];
        }
        if (units_held < 0)
                args[8] = args[9] = "";
        args[10] = closed ? "1" : "0";
        if ((err = sk_redis_evalsha(r, &s_adv, 7, rk.k, 11, args, &rep, errstr,
                                    errstr_size)) != SK_OK)
                return err;
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 && tag_is(rep->element[0], "NOROOM")) {
                out->noroom = 1;
        } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 16 &&
                   tag_is(rep->element[0], "OK")) {
                redisReply *const *e = rep->element;
                out->now_ms = num(e[1]);
                copy_gen(out->generation, e[2]);
                out->up_to = num(e[3]);
                out->live = num(e[4]);
                out->window = num(e[5]);
                out->members = num(e[6]);
                out->expired = num(e[7]);
                out->used = num(e[8]);
                out->admitted_now = num(e[9]);
                out->closed = num(e[10]) == 1;
                out->units_left = num(e[11]);
                out->begun = num(e[12]) == 1;
                out->npre = num(e[13]);
                out->units_held = num(e[14]);
                out->held_until_ms = num(e[15]);
        } else {
                sk_seterr(errstr, errstr_size, "queue_advance: unexpected reply");
                err = SK_EREDIS;
        }
        freeReplyObject(rep);
        return err;
}

sk_err_t sk_qroom_use(sk_redis_t *r, const sk_qroom_t *room, const char *gen, int64_t pos,
                      int op, sk_quse_t *res, char *errstr, size_t errstr_size)
{
        char p[24], e[24], b[24];
        const char *args[5] = { gen, p, op == SK_QUSE_SET ? "set" : op == SK_QUSE_DONE ? "done" : "clear",
                                e, b };
        const char *keys[4];
        redisReply *rep = NULL;
        room_keys_t rk;
        sk_err_t err;

        if ((err = keys_of(room, &rk, errstr, errstr_size)) != SK_OK)
                return err;
        keys[0] = rk.k[0];
        keys[1] = rk.k[3];
        keys[2] = rk.k[4];
        keys[3] = rk.k[6];
        fmt_i64(p, sizeof(p), pos);
        fmt_i64(e, sizeof(e), room->expire_at_ms);
        fmt_i64(b, sizeof(b), room->use_bound_ms > 0 ? room->use_bound_ms : SK_QROOM_USE_BOUND_MS);
        if ((err = sk_redis_evalsha(r, &s_use, 4, keys, 5, args, &rep, errstr,
                                    errstr_size)) != SK_OK)
                return err;
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1) {
                const redisReply *t = rep->element[0];
                if (tag_is(t, "OK"))
                        *res = SK_QUSE_OK;
                else if (tag_is(t, "USED"))
                        *res = SK_QUSE_USED;
                else if (tag_is(t, "OTHERGEN"))
                        *res = SK_QUSE_OTHERGEN;
                else if (tag_is(t, "NOROOM"))
                        *res = SK_QUSE_NOROOM;
                else
                        err = SK_EREDIS;
        } else {
                err = SK_EREDIS;
        }
        if (err != SK_OK)
                sk_seterr(errstr, errstr_size, "queue_use: unexpected reply");
        freeReplyObject(rep);
        return err;
}

sk_qstate_t sk_qroom_state(const sk_qroom_view_t *v, int ttl_s, int64_t end_ms,
                           int64_t *admit_until_ms)
{
        if (v->tag == SK_QVIEW_ENDED || (v->now_ms >= end_ms && v->tag != SK_QVIEW_NOTMEMBER &&
                                         v->tag != SK_QVIEW_NOROOM))
                return SK_QSTATE_ENDED;
        if ((v->tag != SK_QVIEW_MEMBER && v->tag != SK_QVIEW_REJOINED) || v->position < 0)
                return SK_QSTATE_NONE;
        if (!v->begun || v->position == 0)
                return SK_QSTATE_PREQUEUE;
        if (v->position <= v->up_to) {
                if (v->used)
                        return SK_QSTATE_USED;
                if (v->admit_ms >= 0 && v->now_ms < v->admit_ms + (int64_t)ttl_s * 1000) {
                        if (admit_until_ms)
                                *admit_until_ms = v->admit_ms + (int64_t)ttl_s * 1000;
                        return SK_QSTATE_ADMITTED;
                }
                return SK_QSTATE_EXPIRED;
        }
        if (v->closed || v->units_left == 0)
                return SK_QSTATE_SOLD_OUT;
        return SK_QSTATE_WAITING;
}

const char *sk_qstate_name(sk_qstate_t s)
{
        static const char *const N[] = { "none", "prequeue", "waiting", "admitted", "used",
                                          "expired", "sold_out", "ended" };
        return (int)s >= 0 && s <= SK_QSTATE_ENDED ? N[s] : "none";
}
