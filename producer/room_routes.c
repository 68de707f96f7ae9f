/* producer/room_routes.c: the waiting room's HTTP routes and the purchase's admission
 * check (room_routes.h, DESIGN.md 3, 18). Room requests run on their own small pool
 * (each thread its own Redis and DB connection) and answer through req.h; the JSON
 * field names are §3's. The rules themselves live in common/queue (sk/queue*.h).
 * What it does not do: advance the line or read the table of rooms (room_tick.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include "breaker.h"
#include "degrade.h"
#include "front.h"
#include "metrics.h"
#include "pool.h"
#include "room_routes.h"
#include "room_snap.h"
#include "room_tick.h"
#include "sk/clock.h"
#include "sk/db.h"
#include "sk/dswitch.h"
#include "sk/failpoint.h"
#include "sk/keys.h"
#include "sk/log.h"
#include "sk/model.h"
#include "sk/queue.h"
#include "sk/queue_db.h"
#include "sk/queue_ticket.h"
#include "sk/queue_token.h"
#include "unknown.h"

#define ROOM_THREADS 2
#define ROOM_QUEUE_MAX 4096             /* room requests waiting; beyond: 503 at once */
#define ROOM_REDIS_TIMEOUT_MS 1000
#define ROOM_TICKET_TTL_MS 600000        /* a position ticket: then one poll reads Redis */

static fr_pool_t pool;
static _Thread_local uint64_t rng;      /* jitter of pollAfterMs; not a secret */

static uint64_t *thread_rng(void)
{
        if (!rng && sk_queue_prekey_draw(&rng) != 0)
                rng = (uint64_t)sk_mono_ms() | 1;
        return &rng;
}

/* ------------------------------------------------------------------ answers ---- */

static void answer_json(fr_req_t *req, int status, cJSON *root)
{
        char *txt = root ? cJSON_PrintUnformatted(root) : NULL;

        cJSON_Delete(root);
        if (!txt) {
                fr_answer_503(req, "overload", NULL, "out of memory");
                return;
        }
        /* cJSON's buffer to a malloc'd one: req.c frees answers with free() */
        {
                char *body = strdup(txt);
                cJSON_free(txt);
                if (!body) {
                        fr_answer_503(req, "overload", NULL, "out of memory");
                        return;
                }
                fr_answer(req, status, body, 0);
        }
}

static void answer_err(fr_req_t *req, int status, int code, const char *msg)
{
        fr_answer(req, status, fr_json_err(code, msg), 0);
}

/* 404 10004: a voucher not in the DB or not on sale there (DESIGN.md 3). Returns 0, what
 * voucher_of returns for it. */
static int answer_unknown(fr_req_t *req)
{
        answer_err(req, 404, SK_CODE_NOT_FOUND, "unknown voucher");
        return 0;
}

static void add_ms(cJSON *o, const char *name, int64_t ms)
{
        cJSON_AddNumberToObject(o, name, (double)ms);
}

/* ------------------------------------------------------------- pool threads ---- */

static sk_redis_t *room_redis(fr_conns_t *c)
{
        char errstr[256];

        if (!c->r && !(c->r = sk_redis_connect(&g_fr.conf.redis, ROOM_REDIS_TIMEOUT_MS, errstr,
                                               sizeof(errstr))))
                SK_LOG(SK_WARN, "room_redis_connect", "reason=\"%s\"", errstr);
        return c->r;
}

static sk_db_t *room_db(fr_conns_t *c)
{
        char errstr[256];

        if (!c->db && !(c->db = sk_db_connect(&g_fr.conf.mysql, 0, 0, errstr, sizeof(errstr))))
                SK_LOG(SK_WARN, "room_db_connect", "reason=\"%s\"", errstr);
        return c->db;
}

/* The voucher of @p req: the table of rooms or the facts read less than a second ago
 * (room_tick.h), else one DB read. 1 found; 0 unknown (or not on sale: offline, expired),
 * answered 404 10004 and remembered by the unknown-voucher cache (unknown.h); -1
 * answered 503. */
static int voucher_of(fr_conns_t *c, fr_req_t *req, sk_queue_voucher_t *v)
{
        char errstr[256];
        sk_err_t err;
        int64_t checked_ms = sk_mono_ms(); /* before the query: unknown.h */

        if (fr_room_facts(req->voucher_id, v))
                return 1;
        if (!room_db(c)) {
                fr_answer_503(req, "db", NULL, "database unavailable");
                return -1;
        }
        sk_metric_add(fr_m.room_db_reads, 1);
        err = sk_queue_voucher_get(c->db, req->voucher_id, v, errstr, sizeof(errstr));
        if (err == SK_ENOTFOUND) {
                fr_unknown_note(req, checked_ms); /* DESIGN.md 15: made-up ids cost one read */
                return answer_unknown(req);
        }
        if (err != SK_OK) {
                SK_LOG(SK_WARN, "room_db_error", "reason=\"%s\"", errstr);
                sk_db_close(c->db);
                c->db = NULL;
                fr_answer_503(req, "db", NULL, "database unavailable");
                return -1;
        }
        /* a voucher without a room is kept only while on sale (else: the unknown cache) */
        if (v->conf.mode == 1 || (v->status != 2 && v->status != 3))
                fr_room_note(v);
        if (v->status != 2 && v->status != 3)
                return 1;
        fr_unknown_note(req, checked_ms); /* not on sale: 10004, as the purchase route */
        return answer_unknown(req);
}

/* Σ of the buckets' stock in Redis (may lag a second), -1 unknown. */
static int64_t units_left(sk_redis_t *r, const sk_queue_voucher_t *v)
{
        char key[SK_KEY_MAX], errstr[256];
        int64_t sum = 0;

        for (int b = 0; b < (v->buckets > 0 ? v->buckets : 1); b++) {
                redisReply *rep = NULL;

                sk_key_voucher(key, g_fr.conf.redis_prefix, v->voucher_id, b, SK_KEY_STOCK);
                if (sk_redis_cmdf(r, &rep, errstr, sizeof(errstr), "GET %s", key) != SK_OK)
                        return -1;
                if (rep->type == REDIS_REPLY_STRING)
                        sum += strtoll(rep->str, NULL, 10);
                freeReplyObject(rep);
        }
        return sum;
}

/* GET /api/v1/vouchers/{id}: the public facts (§3). */
static void run_voucher(fr_conns_t *c, fr_req_t *req)
{
        sk_queue_voucher_t v;
        char price[24];
        cJSON *root, *q;
        int64_t left = -1;
        int found = voucher_of(c, req, &v);

        if (found <= 0)
                return;
        /* a stock reading is reused for a second: a flood of GETs costs one round a second */
        if (!fr_room_units(req->voucher_id, &left) && room_redis(c)) {
                sk_metric_add(fr_m.room_stock_reads, 1);
                if ((left = units_left(c->r, &v)) < 0) {
                        sk_redis_close(c->r);
                        c->r = NULL;
                } else {
                        fr_room_units_note(req->voucher_id, left);
                }
        }
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "voucherId", req->sv);
        cJSON_AddStringToObject(root, "title", v.title);
        snprintf(price, sizeof(price), "%" PRId64, v.price_minor);
        cJSON_AddStringToObject(root, "price", price);
        cJSON_AddStringToObject(root, "currency", v.currency);
        add_ms(root, "beginTime", v.begin_ms);
        add_ms(root, "endTime", v.end_ms);
        if (left >= 0)
                cJSON_AddNumberToObject(root, "unitsLeft", (double)left);
        else
                cJSON_AddNullToObject(root, "unitsLeft");
        q = cJSON_AddObjectToObject(root, "queue");
        cJSON_AddStringToObject(q, "mode", v.conf.mode == 1 ? "on" : "off");
        if (v.conf.mode == 1)
                add_ms(q, "opensAt", v.begin_ms - (int64_t)v.conf.open_s * 1000);
        add_ms(root, "serverTime", sk_now_ms());
        answer_json(req, 200, root);
}

/* Admissions a second the line moves at, for the ETA and pollAfterMs: queue_rate when
 * set, else the window turning over once per admission lifetime (at least 1). */
static int64_t per_second(const sk_queue_voucher_t *v, int64_t left)
{
        int64_t w = sk_queue_window(left, v->conf.overbook_pct);
        int64_t per = v->conf.ttl_s > 0 ? w / v->conf.ttl_s : w;

        if (v->conf.rate > 0 && (per > v->conf.rate || per < 1))
                per = v->conf.rate;
        return per < 1 ? 1 : per;
}

/* The member's position ticket (sk/queue_ticket.h) into @p root, for its later polls:
 * none for a state that has no place (ended), or when it cannot be signed. */
static void add_ticket(cJSON *root, const fr_req_t *req, const sk_qroom_view_t *view)
{
        sk_keyfile_set_t *keys = fr_room_keys();
        /* expiry from the view's Redis time: expiry - ROOM_TICKET_TTL_MS is the time of
         * the state this answer told (poll_from_room_state answers no older one) */
        sk_qticket_t t = { .voucher_id = req->voucher_id, .user_id = req->user_id,
                           .position = view->begun ? view->position : 0,
                           .expiry_ms = view->now_ms + ROOM_TICKET_TTL_MS };
        char tic[SK_QTICKET_MAX + 1];

        snprintf(t.generation, sizeof(t.generation), "%s", view->generation);
        if (t.position >= 0 && sk_qticket_sign(keys, &t, tic, sizeof(tic)) == 0)
                cJSON_AddStringToObject(root, "ticket", tic);
        sk_keyfile_set_free(keys);
}

/* The member's state of view @p view as §3's JSON (@p ticket: with a new position
 * ticket), for fr_answer or fr_quick: the body (malloc'd) and *status; NULL when it
 * cannot be built (503). */
static char *state_body(fr_req_t *req, const sk_queue_voucher_t *v, const sk_qroom_view_t *view,
                        int ticket, int *status)
{
        int64_t until = 0, now = view->now_ms, ahead, per;
        sk_qstate_t st = sk_qroom_state(view, v->conf.ttl_s, v->end_ms, &until);
        cJSON *root;
        char *txt, *body;

        if (st == SK_QSTATE_NONE) {
                *status = 404;
                return fr_json_err(SK_CODE_NOT_MEMBER, "not a member of the waiting room");
        }
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "state", sk_qstate_name(st));
        add_ms(root, "serverTime", now);
        ahead = view->position - view->up_to - 1;
        if (ahead < 0)
                ahead = 0;
        per = per_second(v, view->units_left);
        switch (st) {
        case SK_QSTATE_PREQUEUE:
                add_ms(root, "opensAt", v->begin_ms - (int64_t)v->conf.open_s * 1000);
                add_ms(root, "begin", v->begin_ms);
                cJSON_AddNumberToObject(root, "members", (double)view->npre);
                add_ms(root, "pollAfterMs", sk_queue_prequeue_poll_ms(now, v->begin_ms, view->npre,
                                                                      g_fr.queue_poll_rate,
                                                                      thread_rng()));
                break;
        case SK_QSTATE_WAITING:
                cJSON_AddNumberToObject(root, "position", (double)view->position);
                cJSON_AddNumberToObject(root, "ahead", (double)ahead);
                if (view->units_left > 0)
                        cJSON_AddNumberToObject(root, "etaSeconds", (double)((ahead + per) / per));
                else
                        cJSON_AddNullToObject(root, "etaSeconds");
                cJSON_AddNumberToObject(root, "unitsLeft", (double)(view->units_left < 0 ? 0 : view->units_left));
                cJSON_AddNumberToObject(root, "unitsHeld", (double)view->units_held);
                add_ms(root, "pollAfterMs", sk_queue_poll_after_ms(ahead, per, thread_rng()));
                break;
        case SK_QSTATE_ADMITTED: {
                sk_keyfile_set_t *keys = fr_room_keys();
                sk_qtoken_t t = { .voucher_id = req->voucher_id, .user_id = req->user_id,
                                  .position = view->position, .expiry_ms = until };
                char tok[SK_QTOKEN_MAX + 1];

                snprintf(t.generation, sizeof(t.generation), "%s", view->generation);
                if (sk_qtoken_sign(keys, &t, tok, sizeof(tok)) != 0) {
                        sk_keyfile_set_free(keys);
                        cJSON_Delete(root);
                        return NULL;
                }
                sk_keyfile_set_free(keys);
                cJSON_AddNumberToObject(root, "position", (double)view->position);
                cJSON_AddStringToObject(root, "admission", tok);
                add_ms(root, "admitUntil", until);
                add_ms(root, "pollAfterMs", until - now < 5000 ? (until - now > 1000 ? until - now : 1000)
                                                               : 5000);
                break;
        }
        case SK_QSTATE_USED:
        case SK_QSTATE_EXPIRED:
                cJSON_AddNumberToObject(root, "position", (double)view->position);
                add_ms(root, "pollAfterMs", SK_QUEUE_POLL_MAX_MS);
                break;
        case SK_QSTATE_SOLD_OUT:
                cJSON_AddNumberToObject(root, "unitsHeld", (double)view->units_held);
                add_ms(root, "heldUntil", view->held_until_ms);
                cJSON_AddBoolToObject(root, "closed", view->closed);
                add_ms(root, "pollAfterMs", view->closed ? SK_QUEUE_POLL_MAX_MS
                                                         : sk_queue_poll_after_ms(ahead, 1, thread_rng()));
                break;
        default:
                add_ms(root, "pollAfterMs", SK_QUEUE_POLL_MAX_MS);
                break;
        }
        if (ticket && st != SK_QSTATE_ENDED)
                add_ticket(root, req, view);
        fr_room_count_poll(req->voucher_id, st == SK_QSTATE_SOLD_OUT);
        txt = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        /* cJSON's buffer to a malloc'd one: req.c frees answers with free() */
        body = txt ? strdup(txt) : NULL;
        cJSON_free(txt);
        *status = 200;
        return body;
}

/* The member's state of view @p view (read from Redis: with a new ticket), answered. */
static void answer_state(fr_req_t *req, const sk_queue_voucher_t *v, const sk_qroom_view_t *view)
{
        int status = 503;
        char *body = state_body(req, v, view, 1, &status);

        if (!body)
                fr_answer_503(req, "queue", NULL, "cannot build the member's state");
        else
                fr_answer(req, status, body, 0);
}

/* 1 if the user's purchase of a used position ended FAILED, CANCELLED or CLOSED (no
 * active order, and an ended order or a FAILED outcome): a join gives a new place. */
static int purchase_ended(fr_conns_t *c, fr_req_t *req)
{
        static const char sql[] =
                "SELECT (SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND user_id = ?"
                " AND status IN (1, 2)),"
                " (SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = ? AND user_id = ?"
                " AND status IN (3, 4)) + (SELECT COUNT(*) FROM tb_seckill_outcome"
                " WHERE voucher_id = ? AND user_id = ? AND outcome = 2)";
        int64_t out[2] = { 0, 0 }, vid = req->voucher_id, uid = req->user_id;
        char errstr[256];

        if (!room_db(c))
                return 0;
        if (sk_db_row1(c->db, sql, SK_ARGS(SK_I64(vid), SK_I64(uid), SK_I64(vid), SK_I64(uid),
                                           SK_I64(vid), SK_I64(uid)),
                       out, 2, NULL, errstr, sizeof(errstr)) != SK_OK) {
                sk_db_close(c->db);
                c->db = NULL;
                return 0;
        }
        return out[0] == 0 && out[1] > 0;
}

/* POST|GET …/queue. */
static void run_member(fr_conns_t *c, fr_req_t *req)
{
        char errstr[256];
        sk_queue_voucher_t v;
        sk_qroom_view_t view;
        sk_qroom_t room;
        sk_err_t err;
        int found = voucher_of(c, req, &v);

        if (found <= 0)
                return;
        if (v.conf.mode != 1) {
                answer_err(req, 404, SK_CODE_NOT_MEMBER, "this voucher has no waiting room");
                return;
        }
        if (!room_redis(c)) {
                fr_answer_503(req, "redis", NULL, "redis unavailable");
                return;
        }
        fr_room_of(&v, &room);
        if (req->room_op == FR_ROOM_OP_POLL) {
                err = sk_qroom_poll(c->r, &room, req->user_id, &view, errstr, sizeof(errstr));
        } else {
                err = sk_qroom_join(c->r, &room, req->user_id, 0, &view, errstr, sizeof(errstr));
                /* a used member whose purchase ended joins again (DESIGN.md 18) */
                if (err == SK_OK && sk_qroom_state(&view, v.conf.ttl_s, v.end_ms, NULL) == SK_QSTATE_USED &&
                    purchase_ended(c, req))
                        err = sk_qroom_join(c->r, &room, req->user_id, 1, &view, errstr, sizeof(errstr));
        }
        if (err != SK_OK) {
                SK_LOG(SK_WARN, "room_redis_error", "voucher=%s err=%s reason=\"%s\"", req->sv,
                       sk_err2str(err), errstr);
                if (err != SK_EINVAL) {
                        sk_redis_close(c->r);
                        c->r = NULL;
                }
                fr_answer_503(req, "redis", NULL, "redis unavailable");
                return;
        }
        switch (view.tag) {
        case SK_QVIEW_NOTOPEN: {
                int64_t opens = v.begin_ms - (int64_t)v.conf.open_s * 1000;
                cJSON *root = cJSON_CreateObject();

                cJSON_AddNumberToObject(root, "code", SK_CODE_ROOM_NOT_OPEN);
                cJSON_AddStringToObject(root, "message", "the waiting room is not open yet");
                add_ms(root, "opensAt", opens);
                add_ms(root, "retryAfterMs", sk_queue_not_open_retry_ms(view.now_ms, opens, thread_rng()));
                add_ms(root, "serverTime", view.now_ms);
                answer_json(req, 403, root);
                return;
        }
        case SK_QVIEW_ENDED:
                answer_err(req, 403, SK_CODE_ENDED, "the sale has ended");
                return;
        case SK_QVIEW_CLOSED:
                answer_err(req, 409, SK_CODE_SOLD_OUT, "sold out: the waiting room is closed");
                return;
        default:
                answer_state(req, &v, &view);
        }
}

static void room_run(fr_conns_t *c, fr_req_t **batch, int n)
{
        for (int i = 0; i < n; i++) {
                fr_req_t *req = batch[i];

                if (req->room_op == FR_ROOM_OP_VOUCHER)
                        run_voucher(c, req);
                else
                        run_member(c, req);
                fr_req_done(req);
        }
}

static const fr_pool_ops_t room_ops = { .run = room_run, .drop_answered = 1 };

/* ---------------------------------------------------------------- HTTP side ---- */

/* DESIGN.md 18 "Polling costs little": a poll carrying a valid position ticket
 * (X-Queue-Ticket) of a member still waiting — before begin, or behind admittedUpTo — is
 * answered on the HTTP thread from the room state the tick read (room_snap.h, at most
 * FR_ROOM_SNAP_FRESH_MS old, same generation, not older than the answer that handed the
 * ticket), with no Redis command: prequeue, waiting,
 * sold_out (unitsHeld, heldUntil, closed) or ended. A member whose position may be
 * admitted (position <= admittedUpTo: admitted, used, expired), a pre-queue ticket once
 * the line has begun (its position is drawn), another generation, an old state or a
 * ticket that does not verify: 0, and the poll reads Redis as before. 1 answered. */
static int poll_from_room_state(fr_req_t *req, struct MHD_Connection *conn)
{
        const char *hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Queue-Ticket");
        sk_queue_voucher_t v;
        fr_room_snap_t snap;
        sk_qticket_t t;
        sk_keyfile_set_t *keys;
        sk_qtoken_res_t res;
        sk_qroom_view_t view;
        sk_qstate_t st;
        char *body;
        int status = 503;

        if (!hdr || !fr_room_find(req->voucher_id, &v) || v.conf.mode != 1 ||
            !fr_room_snap_get(req->voucher_id, &snap))
                return 0;
        keys = fr_room_keys();
        res = sk_qticket_verify(keys, hdr, req->voucher_id, req->user_id, sk_now_ms(), &t);
        sk_keyfile_set_free(keys);
        /* never a state older than the one the ticket's answer told (the member would
         * see it go back), nor of another room life */
        if (res != SK_QTOKEN_OK || strcmp(t.generation, snap.generation) != 0 ||
            snap.now_ms < t.expiry_ms - ROOM_TICKET_TTL_MS)
                return 0;
        if (t.position == 0 ? snap.begun : t.position <= snap.up_to)
                return 0;
        view = (sk_qroom_view_t){ .tag = SK_QVIEW_MEMBER, .begun = snap.begun, .npre = snap.npre,
                                  .up_to = snap.up_to, .position = t.position,
                                  .admit_ms = -1, .units_left = snap.units_left,
                                  .units_held = snap.units_held,
                                  .held_until_ms = snap.held_until_ms, .closed = snap.closed };
        view.now_ms = snap.now_ms + (sk_mono_ms() - snap.mono_ms);
        memcpy(view.generation, snap.generation, sizeof(view.generation));
        st = sk_qroom_state(&view, v.conf.ttl_s, v.end_ms, NULL);
        if (st != SK_QSTATE_PREQUEUE && st != SK_QSTATE_WAITING && st != SK_QSTATE_SOLD_OUT &&
            st != SK_QSTATE_ENDED)
                return 0;
        if (!(body = state_body(req, &v, &view, 0, &status)))
                return 0;
        fr_quick(req, status, body);
        return 1;
}

void fr_room_route(fr_req_t *req, struct MHD_Connection *conn, fr_room_op_t op)
{
        if (op != FR_ROOM_OP_VOUCHER && !fr_room_has_keys()) {
                fr_quick_503(req, "queue", "the waiting room is not served by this front "
                             "(no SECKILL_QUEUE_KEYS_FILE)");
                return;
        }
        if (fr_stopping() > 1) {
                fr_quick_503(req, "shutdown", "shutting down");
                return;
        }
        /* DESIGN.md 15: a voucher the DB did not know moments ago -> 10004 without Redis or
         * the DB (unknown.c), as the purchase route does */
        if (fr_unknown_hit(req)) {
                fr_quick(req, 404, fr_json_err(SK_CODE_NOT_FOUND, "unknown voucher"));
                return;
        }
        /* DESIGN.md 18 "Outage": the line lives in Redis; while the breaker knows Redis
         * is down, joins and polls are 503 + Retry-After at once */
        if (op != FR_ROOM_OP_VOUCHER && !fr_breaker_allow()) {
                fr_quick_503(req, "redis", "redis unavailable: the waiting room cannot move");
                return;
        }
        /* ... and so while this voucher sells on the DB alone (DESIGN.md 12: draining, db or
         * rebuilding, an operator's db-only included): Redis's stock is not the sale's */
        if (op != FR_ROOM_OP_VOUCHER && fr_degrade_state(req->voucher_id, NULL, NULL) != SK_DSW_REDIS) {
                fr_quick_503(req, "degrade", "the voucher sells on the DB alone: the waiting room cannot move");
                return;
        }
        if (op == FR_ROOM_OP_POLL && poll_from_room_state(req, conn))
                return;
        if (fr_pool_full(&pool, ROOM_QUEUE_MAX)) {
                fr_quick_503(req, "overload", "too many waiting-room requests waiting");
                return;
        }
        req->kind = FR_KIND_ROOM;
        req->room_op = op;
        if (fr_req_suspend(req, conn) != 0)
                return;
        fr_pool_push_or_refuse(&pool, req);
}

int fr_room_purchase_check(fr_req_t *req, struct MHD_Connection *conn)
{
        sk_queue_voucher_t v;
        sk_keyfile_set_t *keys;
        sk_qtoken_t t;
        sk_qtoken_res_t res;
        const char *hdr;
        int64_t now = sk_now_ms();

        if (!fr_room_find(req->voucher_id, &v)) {
                /* invariant 8: until the table of queued vouchers was read once, a
                 * purchase cannot be told apart from one of a queued voucher */
                if (!fr_room_table_read()) {
                        fr_quick_503(req, "queue", "the table of waiting rooms is not read yet");
                        return -1;
                }
                return 0;
        }
        /* DESIGN.md 18's order: window (10002/10003) before the admission */
        if (now < v.begin_ms) {
                fr_quick(req, 403, fr_json_err(SK_CODE_NOT_STARTED, "the sale has not started"));
                return -1;
        }
        if (now >= v.end_ms) {
                fr_quick(req, 403, fr_json_err(SK_CODE_ENDED, "the sale has ended"));
                return -1;
        }
        if (!(keys = fr_room_keys())) {
                fr_quick_503(req, "queue", "no SECKILL_QUEUE_KEYS_FILE: cannot check admissions");
                return -1;
        }
        hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Admission");
        res = sk_qtoken_verify(keys, hdr, req->voucher_id, req->user_id, now, &t);
        sk_keyfile_set_free(keys);
        if (res != SK_QTOKEN_OK) {
                SK_LOG(SK_DEBUG, "admission_refused", "voucher=%s why=%s", req->sv,
                       sk_qtoken_res_name(res));
                fr_quick(req, 403, fr_json_err(SK_CODE_NO_ADMISSION,
                                               "a valid admission (X-Admission) is required"));
                return -1;
        }
        req->q_pos = t.position;
        snprintf(req->q_gen, sizeof(req->q_gen), "%s", t.generation);
        fr_room_of(&v, &req->q_room);
        /* the deduct follows the used bit within the request's deadline, or never */
        req->q_room.use_bound_ms = g_fr.deadline_ms + FR_REDIS_CMD_TIMEOUT_MS;
        return 0;
}

int fr_room_purchase_use(sk_redis_t *r, fr_req_t *req)
{
        char errstr[256];
        sk_quse_t res = SK_QUSE_OK;
        sk_err_t err;

        if (req->q_pos <= 0 || req->q_used)
                return 0;
        err = sk_qroom_use(r, &req->q_room, req->q_gen, req->q_pos, SK_QUSE_SET, &res, errstr,
                           sizeof(errstr));
        if (err != SK_OK) {
                /* unknown: the bit may be set; a clear after the 503 undoes it */
                if (err == SK_EUNKNOWN)
                        req->q_used = 1;
                fr_answer_503(req, "redis", NULL, "redis unavailable");
                fr_req_done(req);
                return -1;
        }
        if (res == SK_QUSE_USED) {
                fr_answer(req, 403, fr_json_err(SK_CODE_NO_ADMISSION, "this admission was already used"), 0);
                fr_req_done(req);
                return -1;
        }
        req->q_used = res == SK_QUSE_OK;
        /* sleep(MS): the deduct comes late after the use (tests 0606: a stock reading
         * taken in between must not admit a position for this purchase's unit) */
        (void)SK_FAILPOINT("front.after_queue_use");
        return 0;
}

/* fr_answer's hook: a queued purchase answered 503 (nothing decided) frees its token's
 * position again (DESIGN.md 18), on the next tick; any other answer means its deduct, if
 * any, has applied: the tick marks the use done, so that a stock reading taken after it
 * counts the use (until then the use counts as live: invariant 8). */
static void on_answer(fr_req_t *req, int status)
{
        if (!req->q_used || req->q_pos <= 0)
                return;
        fr_room_use_later(&req->q_room, req->q_gen, req->q_pos,
                          status == 503 ? SK_QUSE_CLEAR : SK_QUSE_DONE);
}

int fr_room_routes_start(char *errstr, size_t errstr_size)
{
        fr_req_answer_hook = on_answer;
        if (fr_pool_start(&pool, &room_ops, ROOM_THREADS, 16) != 0 || fr_room_start() != 0) {
                sk_seterr(errstr, errstr_size, "cannot start the waiting room's threads");
                return -1;
        }
        return 0;
}

void fr_room_routes_stop(void)
{
        fr_room_stop();
        fr_pool_stop(&pool);
}
