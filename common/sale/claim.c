/* claim.c: claim.lua calls and replies (sk/claim.h; DESIGN.md 4 claim.lua, 7, 8).
 * Builds the keys and ARGV of each operation, runs or pipelines the EVALSHA, and parses
 * the replies; the retry policy and what a reply means for a purchase stay with the
 * callers (consumer, reconciler). Ids are strings on the wire, int64_t here. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sk/claim.h"
#include "sk/conf.h"
#include "sk/scripts.h"

static void call_keys(sk_claim_call_t *call, const char *prefix, int64_t voucher_id,
                      int bucket, int64_t expire_extra_ms)
{
        sk_key_voucher(call->k_meta, prefix, voucher_id, bucket, SK_KEY_META);
        sk_key_voucher(call->k_trace, prefix, voucher_id, bucket, SK_KEY_TRACE);
        call->keys[0] = call->k_meta;
        call->keys[1] = call->k_trace;
        snprintf(call->extra, sizeof(call->extra), "%" PRId64, expire_extra_ms);
}

sk_err_t sk_claim_consume_init(sk_claim_call_t *call, const char *prefix, int64_t voucher_id,
                               int bucket,
                               int64_t expire_extra_ms, const int64_t *trace_ids, int n,
                               char *errstr, size_t errstr_size)
{
        memset(call, 0, sizeof(*call));
        if (n < 1 || n > SK_CLAIM_CHUNK) {
                sk_seterr(errstr, errstr_size, "claim.lua consume: %d traceIds (1..%d)", n,
                          SK_CLAIM_CHUNK);
                return SK_EINVAL;
        }
        call->args = calloc((size_t)n + 2, sizeof(*call->args));
        call->ids = calloc((size_t)n, sizeof(*call->ids));
        if (!call->args || !call->ids) {
                sk_claim_call_free(call);
                sk_seterr(errstr, errstr_size, "claim.lua consume: out of memory");
                return SK_ENOMEM;
        }
        call_keys(call, prefix, voucher_id, bucket, expire_extra_ms);
        call->args[0] = "consume";
        call->args[1] = call->extra;
        for (int i = 0; i < n; i++) {
                sk_id_format(trace_ids[i], call->ids[i]);
                call->args[2 + i] = call->ids[i];
        }
        call->nargs = n + 2;
        call->nids = n;
        return SK_OK;
}

sk_err_t sk_claim_op_init(sk_claim_call_t *call, const char *prefix, int64_t voucher_id, int bucket,
                          sk_claim_op_t op, int64_t expire_extra_ms, int64_t trace_id,
                          int32_t partition, int64_t offset, char *errstr, size_t errstr_size)
{
        static const char *const names[] = { "claim", "failed", "sent" };

        memset(call, 0, sizeof(*call));
        if ((int)op < 0 || op > SK_CLAIM_OP_SENT ||
            (op == SK_CLAIM_OP_SENT && (partition < 0 || offset < 0))) {
                sk_seterr(errstr, errstr_size, "claim.lua: bad op %d or position %d/%" PRId64,
                          (int)op, (int)partition, offset);
                return SK_EINVAL;
        }
        call_keys(call, prefix, voucher_id, bucket, expire_extra_ms);
        sk_id_format(trace_id, call->id_one);
        call->args = call->args_one;
        call->args[0] = names[op];
        call->args[1] = call->extra;
        call->args[2] = call->id_one;
        call->nargs = 3;
        call->nids = 1;
        if (op == SK_CLAIM_OP_SENT) {
                snprintf(call->part, sizeof(call->part), "%d", (int)partition);
                snprintf(call->off, sizeof(call->off), "%" PRId64, offset);
                call->args[3] = call->part;
                call->args[4] = call->off;
                call->nargs = 5;
        }
        return SK_OK;
}

void sk_claim_call_free(sk_claim_call_t *call)
{
        if (!call)
                return;
        if (call->args != call->args_one)
                free((void *)call->args);
        free(call->ids);
        call->args = NULL;
        call->ids = NULL;
}

sk_err_t sk_claim_run(sk_redis_t *r, const sk_claim_call_t *call, redisReply **reply,
                      char *errstr, size_t errstr_size)
{
        /* sk_script_eval (sk_redis_evalsha) only reads the key and argument strings. */
        return sk_script_eval(r, SK_SCRIPT_CLAIM, 2, (const char **)call->keys, call->nargs, call->args,
                              reply, errstr, errstr_size);
}

sk_err_t sk_claim_append(redisContext *ctx, const sk_claim_call_t *call,
                         char *errstr, size_t errstr_size)
{
        const char *sha = sk_script_sha(SK_SCRIPT_CLAIM);
        int argc = 0, done = 0;
        const char **argv;
        size_t *argvlen;
        sk_err_t err = SK_OK;

        if (!sha) {
                sk_seterr(errstr, errstr_size, "claim.lua: SHA not known yet");
                return SK_EAGAIN;
        }
        argv = calloc((size_t)call->nargs + 5, sizeof(*argv));
        argvlen = calloc((size_t)call->nargs + 5, sizeof(*argvlen));
        if (!argv || !argvlen) {
                sk_seterr(errstr, errstr_size, "claim.lua: out of memory");
                err = SK_ENOMEM;
                goto done;
        }
        argv[argc++] = "EVALSHA";
        argv[argc++] = sha;
        argv[argc++] = "2";
        argv[argc++] = call->keys[0];
        argv[argc++] = call->keys[1];
        for (int i = 0; i < call->nargs; i++)
                argv[argc++] = call->args[i];
        for (int i = 0; i < argc; i++)
                argvlen[i] = strlen(argv[i]);
        if (redisAppendCommandArgv(ctx, argc, argv, argvlen) != REDIS_OK) {
                sk_seterr(errstr, errstr_size, "claim.lua append: %s", ctx->errstr);
                err = SK_EUNKNOWN;
                goto done;
        }
        while (!done) {
                if (redisBufferWrite(ctx, &done) != REDIS_OK) {
                        sk_seterr(errstr, errstr_size, "claim.lua write: %s", ctx->errstr);
                        err = SK_EUNKNOWN;
                        goto done;
                }
        }
done:
        free((void *)argv);
        free(argvlen);
        return err;
}

/* First element of a claim.lua reply as a string, or NULL. */
static const char *status_of(const redisReply *reply)
{
        const redisReply *el;

        if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1)
                return NULL;
        el = reply->element[0];
        if (el->type != REDIS_REPLY_STRING && el->type != REDIS_REPLY_STATUS)
                return NULL;
        return el->str;
}

sk_err_t sk_claim_parse_consume(const redisReply *reply, int n, int *fenced,
                                char *errstr, size_t errstr_size)
{
        const char *st = status_of(reply);

        if (reply && reply->type == REDIS_REPLY_ERROR) {
                sk_seterr(errstr, errstr_size, "claim.lua consume: %s", reply->str);
                return SK_EREDIS;
        }
        if (!st || strcmp(st, "OK") != 0 || reply->elements != (size_t)n + 1) {
                sk_seterr(errstr, errstr_size, "claim.lua consume: unexpected reply for %d ids", n);
                return SK_EREDIS;
        }
        for (int i = 0; i < n; i++) {
                const redisReply *el = reply->element[i + 1];
                fenced[i] = el->type == REDIS_REPLY_INTEGER && el->integer == 1;
        }
        return SK_OK;
}

/* The "P" / "O" strings of a record: both set and valid, or -1/-1. */
static void parse_position(const redisReply *p_el, const redisReply *o_el, sk_claim_rec_t *rec)
{
        long p;
        int64_t o;

        rec->partition = -1;
        rec->offset = -1;
        if (p_el->type != REDIS_REPLY_STRING || p_el->len == 0 ||
            o_el->type != REDIS_REPLY_STRING || o_el->len == 0)
                return;
        if (sk_parse_long(p_el->str, 0, INT32_MAX, &p) != 0)
                return;
        if (strcmp(o_el->str, "0") == 0)
                o = 0;
        else if (sk_id_parse_cstr(o_el->str, &o) != 0)
                return;
        rec->partition = (int32_t)p;
        rec->offset = o;
}

sk_err_t sk_claim_parse_op(const redisReply *reply, int *restored, sk_claim_rec_t *rec,
                           char *errstr, size_t errstr_size)
{
        const char *st = status_of(reply);

        *restored = 0;
        memset(rec, 0, sizeof(*rec));
        rec->partition = -1;
        rec->offset = -1;
        if (!st) {
                sk_seterr(errstr, errstr_size, "claim.lua: unexpected reply");
                return SK_EREDIS;
        }
        if (strcmp(st, "RESTORED") == 0) {
                *restored = 1;
                return SK_OK;
        }
        if (strcmp(st, "OK") != 0 || reply->elements < 6) {
                sk_seterr(errstr, errstr_size, "claim.lua: unexpected reply %s", st);
                return SK_EREDIS;
        }
        rec->redrives = reply->element[1]->integer;
        rec->failed = reply->element[2]->integer;
        rec->consumed = reply->element[3]->integer != 0;
        parse_position(reply->element[4], reply->element[5], rec);
        return SK_OK;
}
