/* redis_pipe.c: pipelines over every topology (DESIGN.md 4b): N commands appended with
 * their routing key, sent in rounds, each round one batch per node (every command of a
 * node written, then every reply read in order). Per command (sk_pcmd_on_reply):
 *   - a normal reply or a non-redirect error reply: final;
 *   - MOVED: the slot map learns the new node, the command goes there next round;
 *   - ASK: next round on the named node behind ASKING (map unchanged);
 *   - TRYAGAIN: next round, same node, after a backoff;
 *   - no reply because the connection broke: this and every other unanswered command
 *     sent to that node is SK_EUNKNOWN (outcome unknown, DESIGN.md 8), never re-sent;
 *   - unreachable node, uncovered slot or more than SK_REDIR_MAX redirects: SK_EAGAIN
 *     (never ran).
 * Only the redirected commands are sent again; answered ones never are.
 * Not thread-safe: one pipeline per thread, on that thread's sk_redis_t. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "redis_int.h"

typedef struct pent {
        char *cmd;              /* RESP request (resp_format; malloc'd) */
        size_t len;
        redisReply *reply;      /* the final reply once SK_PCMD_ANSWERED */
        char err[200];          /* why it is SK_PCMD_UNKNOWN / SK_PCMD_NOTRUN */
        int64_t ms;             /* its node's batch, from the send to the last read (last round) */
} pent_t;

struct sk_redis_pipe {
        sk_redis_t *r;
        int n, cap;
        pent_t *e;
        sk_pcmd_t *st;          /* routing state, parallel to e[] */
};

sk_redis_pipe_t *sk_redis_pipe_new(sk_redis_t *r)
{
        sk_redis_pipe_t *p = calloc(1, sizeof(*p));

        if (p)
                p->r = r;
        return p;
}

int sk_redis_pipe_count(const sk_redis_pipe_t *p)
{
        return p->n;
}

/* Decimal digits of @p v. */
static size_t dec_len(size_t v)
{
        size_t n = 1;

        while (v >= 10) {
                v /= 10;
                n++;
        }
        return n;
}

/* Write @p v in decimal at @p dst (dec_len(v) bytes). @returns the end. */
static char *dec_put(char *dst, size_t v)
{
        size_t n = dec_len(v), i;

        for (i = n; i > 0; i--) {
                dst[i - 1] = (char)('0' + v % 10);
                v /= 10;
        }
        return dst + n;
}

/* The RESP request of @p argc arguments (lengths @p argvlen, or strlen when NULL) into
 * *@p out (malloc'd, NUL-terminated): the bytes redisFormatCommandArgv writes, without
 * its sprintf per argument (it showed in the front's profile: ~14 per EVALSHA).
 * @returns its length, or -1 (out of memory). */
static int resp_format(char **out, int argc, const char **argv, const size_t *argvlen)
{
        size_t lens[32], *lp = lens, total, i;
        char *cmd, *w;

        if (argc > (int)(sizeof(lens) / sizeof(lens[0])) &&
            !(lp = malloc(sizeof(*lp) * (size_t)argc)))
                return -1;
        total = 1 + dec_len((size_t)argc) + 2;
        for (i = 0; i < (size_t)argc; i++) {
                lp[i] = argvlen ? argvlen[i] : strlen(argv[i]);
                total += 1 + dec_len(lp[i]) + 2 + lp[i] + 2;
        }
        if (total > INT32_MAX || !(cmd = malloc(total + 1))) {
                if (lp != lens)
                        free(lp);
                return -1;
        }
        w = cmd;
        *w++ = '*';
        w = dec_put(w, (size_t)argc);
        *w++ = '\r';
        *w++ = '\n';
        for (i = 0; i < (size_t)argc; i++) {
                *w++ = '$';
                w = dec_put(w, lp[i]);
                *w++ = '\r';
                *w++ = '\n';
                memcpy(w, argv[i], lp[i]);
                w += lp[i];
                *w++ = '\r';
                *w++ = '\n';
        }
        *w = '\0';
        if (lp != lens)
                free(lp);
        *out = cmd;
        return (int)total;
}

int sk_redis_pipe_add(sk_redis_pipe_t *p, int argc, const char **argv, const size_t *argvlen)
{
        char *cmd = NULL;
        int len, slot;

        if (argc < 1)
                return -1;
        slot = sk__cmd_slot(argc, argv, argvlen);
        if (slot == -3 && p->r->url.kind == SK_REDIS_CLUSTER)
                return -1;      /* a keyspace walk: sk_redis_scan */
        if (p->n == p->cap) {
                int cap = p->cap ? p->cap * 2 : 16;
                pent_t *e = realloc(p->e, sizeof(*e) * (size_t)cap);
                sk_pcmd_t *st;
                if (!e)
                        return -1;
                p->e = e;
                if (!(st = realloc(p->st, sizeof(*st) * (size_t)cap)))
                        return -1;
                p->st = st;
                p->cap = cap;
        }
        if ((len = resp_format(&cmd, argc, argv, argvlen)) < 0)
                return -1;
        memset(&p->e[p->n], 0, sizeof(p->e[p->n]));
        p->e[p->n].cmd = cmd;
        p->e[p->n].len = (size_t)len;
        memset(&p->st[p->n], 0, sizeof(p->st[p->n]));
        p->st[p->n].slot = slot < -2 ? -1 : slot;
        p->st[p->n].target = -1;
        p->st[p->n].status = SK_PCMD_PENDING;
        return p->n++;
}

/* Target of a never-redirected pending command from the current map; -1 = none. */
static int first_target(sk_redis_t *r, const sk_pcmd_t *c)
{
        if (c->slot == -2 && r->last_node >= 0)
                return r->last_node;
        return sk__node_for_slot(r, c->slot < 0 ? -1 : c->slot);
}

static void set_err(pent_t *e, const char *fmt, const char *a, int b, const char *c)
{
        snprintf(e->err, sizeof(e->err), fmt, a, b, c);
}

/* Read the replies of node @p n's batch (commands idx[0..k-1], all SK_PCMD_SENT). */
static void read_batch(sk_redis_pipe_t *p, int n, const int *idx, int k)
{
        sk_redis_t *r = p->r;
        redisContext *ctx = r->nodes[n].ctx;
        int readonly = 0;

        for (int j = 0; j < k; j++) {
                sk_pcmd_t *c = &p->st[idx[j]];
                void *rep = NULL, *a = NULL;
                redisReply *rr;
                sk_redir_t rd = { 0 };
                int rn = -1;

                if ((c->asking && (redisGetReply(ctx, &a) != REDIS_OK || !a)) ||
                    redisGetReply(ctx, &rep) != REDIS_OK || !rep) {
                        /* Everything of this node not answered yet: outcome unknown. */
                        for (int q = j; q < k; q++)
                                set_err(&p->e[idx[q]], "redis %s:%d: %s (outcome unknown)",
                                        r->nodes[n].host, r->nodes[n].port,
                                        ctx->errstr[0] ? ctx->errstr : "no reply");
                        sk_pcmds_on_conn_error(p->st, p->n, n);
                        sk__node_drop(r, n);
                        r->need_refresh = 2;
                        if (a)
                                freeReplyObject(a);
                        return;
                }
                if (a)
                        freeReplyObject(a);
                rr = rep;
                if (rr->type == REDIS_REPLY_ERROR && r->url.kind == SK_REDIS_CLUSTER &&
                    sk_redir_parse(rr->str, rr->len, &rd) != SK_REDIR_NONE) {
                        if (rd.kind == SK_REDIR_MOVED || rd.kind == SK_REDIR_ASK) {
                                const char *h = rd.host[0] ? rd.host : r->nodes[n].host;
                                rn = sk__node_find_or_add(r, h, strlen(h), rd.port);
                        }
                        if (rd.kind == SK_REDIR_MOVED && rn >= 0)
                                r->slots[rd.slot] = (int16_t)rn;
                        if ((rd.kind == SK_REDIR_MOVED || rd.kind == SK_REDIR_CLUSTERDOWN) &&
                            r->need_refresh < 1)
                                r->need_refresh = 1;
                }
                if (sk_redis_reply_is(rr, "READONLY"))
                        readonly = 1;
                switch (sk_pcmd_on_reply(c, &rd, rn)) {
                case SK_PCMD_ANSWERED:
                        p->e[idx[j]].reply = rr;
                        if (c->slot >= 0)
                                r->last_node = n;
                        break;
                case SK_PCMD_NOTRUN:
                        snprintf(p->e[idx[j]].err, sizeof(p->e[idx[j]].err),
                                 "redis cluster: %.*s (gave up after %d redirects; not run)",
                                 (int)(rr->len > 120 ? 120 : rr->len), rr->str, c->redirects);
                        freeReplyObject(rr);
                        break;
                default:
                        freeReplyObject(rr);
                }
        }
        if (readonly && r->url.kind == SK_REDIS_SENTINEL)
                sk__node_drop(r, n);    /* demoted master: resolve again next time */
}

/* One round: send every pending command to its node, read the replies. */
static void run_round(sk_redis_pipe_t *p, int *idx)
{
        sk_redis_t *r = p->r;

        for (int i = 0; i < p->n; i++) {
                sk_pcmd_t *c = &p->st[i];
                if (c->status != SK_PCMD_PENDING || c->redirects > 0)
                        continue;
                if ((c->target = first_target(r, c)) < 0) {
                        r->need_refresh = 2;
                        sk__map_refresh(r, 0);
                        c->target = first_target(r, c);
                }
                if (c->target < 0) {
                        c->status = SK_PCMD_NOTRUN;
                        snprintf(p->e[i].err, sizeof(p->e[i].err), "redis cluster: slot %d is "
                                 "not covered by any reachable master (not run)", c->slot);
                }
        }
        for (int n = 0; n < r->nnodes; n++) {
                char why[200] = "";
                int k = 0;

                for (int i = 0; i < p->n; i++)
                        if (p->st[i].status == SK_PCMD_PENDING && p->st[i].target == n)
                                idx[k++] = i;
                if (k == 0)
                        continue;
                if (sk__node_ensure(r, n, why, sizeof(why)) != SK_OK) {
                        for (int j = 0; j < k; j++) {
                                p->st[idx[j]].status = SK_PCMD_NOTRUN;
                                /* The precision keeps reason + suffix within err[200]
                                 * (gcc's -Wformat-truncation at -O0 sees why[200]). */
                                snprintf(p->e[idx[j]].err, sizeof(p->e[idx[j]].err),
                                         "%.180s (not run)", why);
                        }
                        continue;
                }
                int64_t t0 = sk__now_ms();

                for (int j = 0; j < k; j++) {
                        redisContext *ctx = r->nodes[n].ctx;
                        if (p->st[idx[j]].asking)
                                (void)redisAppendCommand(ctx, "ASKING");
                        (void)redisAppendFormattedCommand(ctx, p->e[idx[j]].cmd, p->e[idx[j]].len);
                        p->st[idx[j]].status = SK_PCMD_SENT;
                }
                read_batch(p, n, idx, k);
                t0 = sk__now_ms() - t0;
                for (int j = 0; j < k; j++)
                        p->e[idx[j]].ms = t0;
        }
}

int sk_redis_pipe_exec(sk_redis_pipe_t *p)
{
        int *idx, failed = 0;

        if (p->n == 0)
                return 0;
        if (!(idx = malloc(sizeof(*idx) * (size_t)p->n))) {
                for (int i = 0; i < p->n; i++)
                        if (p->st[i].status == SK_PCMD_PENDING) {
                                p->st[i].status = SK_PCMD_NOTRUN;
                                snprintf(p->e[i].err, sizeof(p->e[i].err), "out of memory");
                        }
                return p->n;
        }
        sk__map_refresh(p->r, 0);
        for (int round = 0; round <= SK_REDIR_MAX; round++) {
                int pending = 0, backoff = 0;
                for (int i = 0; i < p->n; i++)
                        if (p->st[i].status == SK_PCMD_PENDING) {
                                pending++;
                                backoff |= p->st[i].backoff;
                        }
                if (!pending)
                        break;
                if (backoff)
                        usleep((useconds_t)(20000u << (round < 4 ? round : 4)));
                run_round(p, idx);
        }
        free(idx);
        for (int i = 0; i < p->n; i++) {
                if (p->st[i].status == SK_PCMD_PENDING) {
                        p->st[i].status = SK_PCMD_NOTRUN;
                        snprintf(p->e[i].err, sizeof(p->e[i].err), "redis cluster: too many "
                                 "redirects (not run)");
                }
                failed += p->st[i].status != SK_PCMD_ANSWERED;
        }
        return failed;
}

sk_err_t sk_redis_pipe_result(sk_redis_pipe_t *p, int i, redisReply **reply,
                              char *errstr, size_t errstr_size)
{
        redisReply *rr;

        *reply = NULL;
        if (i < 0 || i >= p->n) {
                sk_seterr(errstr, errstr_size, "pipeline: no command #%d", i);
                return SK_EINVAL;
        }
        switch (p->st[i].status) {
        case SK_PCMD_ANSWERED:
                break;
        case SK_PCMD_UNKNOWN:
                sk_seterr(errstr, errstr_size, "%s", p->e[i].err);
                return SK_EUNKNOWN;
        default:
                sk_seterr(errstr, errstr_size, "%s", p->e[i].err[0] ? p->e[i].err :
                          "pipeline: not executed");
                return SK_EAGAIN;
        }
        rr = p->e[i].reply;
        if (rr->type == REDIS_REPLY_ERROR) {
                sk_seterr(errstr, errstr_size, "redis: %.*s", (int)rr->len, rr->str);
                return sk_redis_error_not_run(rr->str, rr->len) ? SK_EAGAIN : SK_EREDIS;
        }
        *reply = rr;
        return SK_OK;
}

int64_t sk_redis_pipe_ms(const sk_redis_pipe_t *p, int i)
{
        return i >= 0 && i < p->n ? p->e[i].ms : 0;
}

int sk_redis_pipe_addr(const sk_redis_pipe_t *p, int i, char *addr, size_t addr_size)
{
        int n = i >= 0 && i < p->n ? p->st[i].target : -1;

        sk__node_addr(p->r, n, addr, addr_size);
        return n < 0 ? -1 : 0;
}

const redisReply *sk_redis_pipe_raw(const sk_redis_pipe_t *p, int i)
{
        if (i < 0 || i >= p->n || p->st[i].status != SK_PCMD_ANSWERED)
                return NULL;
        return p->e[i].reply;
}

void sk_redis_pipe_reset(sk_redis_pipe_t *p)
{
        for (int i = 0; i < p->n; i++) {
                free(p->e[i].cmd);
                if (p->e[i].reply)
                        freeReplyObject(p->e[i].reply);
        }
        p->n = 0;
}

void sk_redis_pipe_free(sk_redis_pipe_t *p)
{
        if (!p)
                return;
        sk_redis_pipe_reset(p);
        free(p->e);
        free(p->st);
        free(p);
}
