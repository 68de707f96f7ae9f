/* check_claim.c: sk/claim.h without Redis: the ARGV each claim.lua operation is built
 * with (ids as strings, 64-bit ids unchanged, chunk bounds, sent's position) and the
 * parsing of consume and claim/failed/sent replies, well-formed and not. */
#include <string.h>
#include "sk_test.h"
#include "sk/claim.h"

/* A reply element built on the stack. */
static redisReply str_el(const char *s)
{
        redisReply r;
        memset(&r, 0, sizeof(r));
        r.type = REDIS_REPLY_STRING;
        r.str = (char *)s;
        r.len = strlen(s);
        return r;
}

static redisReply int_el(long long v)
{
        redisReply r;
        memset(&r, 0, sizeof(r));
        r.type = REDIS_REPLY_INTEGER;
        r.integer = v;
        return r;
}

static redisReply array_of(redisReply **els, size_t n)
{
        redisReply r;
        memset(&r, 0, sizeof(r));
        r.type = REDIS_REPLY_ARRAY;
        r.element = els;
        r.elements = n;
        return r;
}

START_TEST(consume_args)
{
        const int64_t ids[3] = { 1, INT64_MAX, 9007199254740993LL };
        sk_claim_call_t call;
        char errstr[128];

        ck_assert_int_eq(sk_claim_consume_init(&call, "p", 42, 0, 86400000, ids, 3, errstr, sizeof(errstr)), SK_OK);
        ck_assert_str_eq(call.keys[0], "p:{v:42:0}:meta");
        ck_assert_str_eq(call.keys[1], "p:{v:42:0}:trace");
        ck_assert_int_eq(call.nargs, 5);
        ck_assert_str_eq(call.args[0], "consume");
        ck_assert_str_eq(call.args[1], "86400000");
        ck_assert_str_eq(call.args[2], "1");
        ck_assert_str_eq(call.args[3], "9223372036854775807");
        ck_assert_str_eq(call.args[4], "9007199254740993"); /* 2^53 + 1, not rounded */
        sk_claim_call_free(&call);
        ck_assert_int_eq(sk_claim_consume_init(&call, "p", 42, 0, 0, ids, 0, errstr, sizeof(errstr)), SK_EINVAL);
        ck_assert_int_eq(sk_claim_consume_init(&call, "p", 42, 0, 0, ids, SK_CLAIM_CHUNK + 1, errstr,
                                               sizeof(errstr)), SK_EINVAL);
        sk_claim_call_free(&call); /* safe after a failed init */
}
END_TEST

START_TEST(op_args)
{
        sk_claim_call_t call;
        char errstr[128];

        ck_assert_int_eq(sk_claim_op_init(&call, "p", 7, 0, SK_CLAIM_OP_SENT, 5, 99, 3, 123456789012LL,
                                          errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(call.nargs, 5);
        ck_assert_str_eq(call.args[0], "sent");
        ck_assert_str_eq(call.args[2], "99");
        ck_assert_str_eq(call.args[3], "3");
        ck_assert_str_eq(call.args[4], "123456789012");
        sk_claim_call_free(&call);
        ck_assert_int_eq(sk_claim_op_init(&call, "p", 7, 0, SK_CLAIM_OP_FAILED, 5, 99, -1, -1,
                                          errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(call.nargs, 3);
        ck_assert_str_eq(call.args[0], "failed");
        ck_assert_int_eq(sk_claim_op_init(&call, "p", 7, 0, SK_CLAIM_OP_SENT, 5, 99, -1, 0,
                                          errstr, sizeof(errstr)), SK_EINVAL);
}
END_TEST

START_TEST(parse_consume)
{
        redisReply ok = str_el("OK"), a = int_el(0), b = int_el(1), bad = str_el("NOPE");
        redisReply *els[3] = { &ok, &a, &b };
        redisReply reply = array_of(els, 3), err;
        int fenced[2] = { -1, -1 };
        char errstr[128];

        ck_assert_int_eq(sk_claim_parse_consume(&reply, 2, fenced, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(fenced[0], 0);
        ck_assert_int_eq(fenced[1], 1);
        /* Wrong count, wrong status, an error reply. */
        ck_assert_int_eq(sk_claim_parse_consume(&reply, 3, fenced, errstr, sizeof(errstr)), SK_EREDIS);
        els[0] = &bad;
        ck_assert_int_eq(sk_claim_parse_consume(&reply, 2, fenced, errstr, sizeof(errstr)), SK_EREDIS);
        memset(&err, 0, sizeof(err));
        err.type = REDIS_REPLY_ERROR;
        err.str = (char *)"ERR SKARG traceId";
        err.len = strlen(err.str);
        ck_assert_int_eq(sk_claim_parse_consume(&err, 2, fenced, errstr, sizeof(errstr)), SK_EREDIS);
        ck_assert_ptr_nonnull(strstr(errstr, "SKARG"));
}
END_TEST

START_TEST(parse_op)
{
        redisReply ok = str_el("OK"), rd = int_el(2), fl = int_el(1), co = int_el(1);
        redisReply part = str_el("4"), off = str_el("9223372036854775806"), empty = str_el("");
        redisReply restored = str_el("RESTORED");
        redisReply *els[6] = { &ok, &rd, &fl, &co, &part, &off };
        redisReply reply = array_of(els, 6), rreply;
        redisReply *rels[1] = { &restored };
        sk_claim_rec_t rec;
        char errstr[128];
        int was_restored = -1;

        ck_assert_int_eq(sk_claim_parse_op(&reply, &was_restored, &rec, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(was_restored, 0);
        ck_assert_int_eq(rec.redrives, 2);
        ck_assert_int_eq(rec.failed, 1);
        ck_assert_int_eq(rec.consumed, 1);
        ck_assert_int_eq(rec.partition, 4);
        ck_assert(rec.offset == INT64_MAX - 1);
        els[5] = &empty; /* no re-drive recorded */
        ck_assert_int_eq(sk_claim_parse_op(&reply, &was_restored, &rec, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(rec.partition, -1);
        ck_assert(rec.offset == -1);
        rreply = array_of(rels, 1);
        ck_assert_int_eq(sk_claim_parse_op(&rreply, &was_restored, &rec, errstr, sizeof(errstr)), SK_OK);
        ck_assert_int_eq(was_restored, 1);
        reply.elements = 3; /* truncated */
        ck_assert_int_eq(sk_claim_parse_op(&reply, &was_restored, &rec, errstr, sizeof(errstr)), SK_EREDIS);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("claim");
        TCase *tc = tcase_create("claim");

        tcase_add_test(tc, consume_args);
        tcase_add_test(tc, op_args);
        tcase_add_test(tc, parse_consume);
        tcase_add_test(tc, parse_op);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
