/* check_redis_redirect.c: the pure routing logic of DESIGN.md 4b: redirect parsing,
 * routing keys, and one pipelined command's bookkeeping (re-send only what was
 * redirected; a broken connection makes the unanswered commands of that node
 * unknown). */
#include <string.h>

#include "sk_test.h"
#include "sk/redis_redirect.h"

#define PARSE(s, rd) sk_redir_parse((s), strlen(s), (rd))

START_TEST(parse_redirects)
{
        sk_redir_t rd;

        ck_assert_int_eq(PARSE("MOVED 3999 127.0.0.1:6381", &rd), SK_REDIR_MOVED);
        ck_assert_int_eq(rd.slot, 3999);
        ck_assert_str_eq(rd.host, "127.0.0.1");
        ck_assert_int_eq(rd.port, 6381);
        ck_assert_int_eq(PARSE("ASK 16383 [::1]:7002", &rd), SK_REDIR_ASK);
        ck_assert_int_eq(rd.slot, 16383);
        ck_assert_str_eq(rd.host, "::1");
        ck_assert_int_eq(rd.port, 7002);
        /* An empty host means "the node you asked" (Redis 7 with no announced IP). */
        ck_assert_int_eq(PARSE("MOVED 0 :7000", &rd), SK_REDIR_MOVED);
        ck_assert_str_eq(rd.host, "");
        ck_assert_int_eq(rd.port, 7000);
        ck_assert_int_eq(PARSE("ASK 5 redis-2.example:6379", &rd), SK_REDIR_ASK);
        ck_assert_str_eq(rd.host, "redis-2.example");
        ck_assert_int_eq(PARSE("TRYAGAIN Multiple keys request during rehashing of slot", &rd),
                         SK_REDIR_TRYAGAIN);
        ck_assert_int_eq(PARSE("CLUSTERDOWN The cluster is down", &rd), SK_REDIR_CLUSTERDOWN);
        ck_assert_int_eq(PARSE("CLUSTERDOWN", &rd), SK_REDIR_CLUSTERDOWN);
        /* Not redirects, or malformed ones. */
        ck_assert_int_eq(PARSE("ERR unknown command", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVEDX 1 h:1", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED 16384 h:1", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED -1 h:1", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED 1 h", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED 1 h:", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED 1 h:0", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED 1 h:65536", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED 1 h:12x", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("MOVED", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("ASK 12", &rd), SK_REDIR_NONE);
        ck_assert_int_eq(PARSE("READONLY You can't write against a read only replica.", &rd),
                         SK_REDIR_NONE);
        ck_assert_int_eq(rd.slot, -1);
}
END_TEST

static int key_index(const char *a0, const char *a1, const char *a2, const char *a3)
{
        const char *argv[4] = { a0, a1, a2, a3 };
        int argc = a3 ? 4 : a2 ? 3 : a1 ? 2 : 1;
        return sk_cmd_key_index(argc, argv, NULL);
}

START_TEST(routing_keys)
{
        ck_assert_int_eq(key_index("GET", "k", NULL, NULL), 1);
        ck_assert_int_eq(key_index("hset", "k", "f", "v"), 1);
        ck_assert_int_eq(key_index("HSCAN", "k", "0", NULL), 1);
        ck_assert_int_eq(key_index("EVALSHA", "0123", "2", "seckill:{v:1:0}:meta"), 3);
        ck_assert_int_eq(key_index("evalsha", "0123", "0", "arg"), 0);
        ck_assert_int_eq(key_index("EVAL", "return 1", "10", "k"), 3);
        ck_assert_int_eq(key_index("PING", NULL, NULL, NULL), 0);
        ck_assert_int_eq(key_index("SCRIPT", "LOAD", "x", NULL), 0);
        ck_assert_int_eq(key_index("CONFIG", "GET", "maxmemory-policy", NULL), 0);
        ck_assert_int_eq(key_index("MULTI", NULL, NULL, NULL), 0);
        ck_assert_int_eq(key_index("WAIT", "1", "100", NULL), 0);
        ck_assert_int_eq(key_index("SCAN", "0", NULL, NULL), -1);
        ck_assert_int_eq(key_index("keys", "*", NULL, NULL), -1);
        ck_assert_int_eq(key_index("DBSIZE", NULL, NULL, NULL), -1);
        /* Binary lengths: "GETX" is not a keyless command. */
        {
                const char *argv[2] = { "PINGX", "k" };
                size_t len[2] = { 4, 1 };
                ck_assert_int_eq(sk_cmd_key_index(2, argv, len), 0);
                len[0] = 5;
                ck_assert_int_eq(sk_cmd_key_index(2, argv, len), 1);
        }
}
END_TEST

static sk_redir_t redir(sk_redir_kind_t k)
{
        sk_redir_t rd;
        memset(&rd, 0, sizeof(rd));
        rd.kind = k;
        rd.slot = 7;
        return rd;
}

START_TEST(pcmd_moved_ask_tryagain)
{
        sk_pcmd_t c = { .slot = 7, .target = 0, .status = SK_PCMD_SENT };
        sk_redir_t none = redir(SK_REDIR_NONE), moved = redir(SK_REDIR_MOVED),
                   ask = redir(SK_REDIR_ASK), again = redir(SK_REDIR_TRYAGAIN),
                   down = redir(SK_REDIR_CLUSTERDOWN);

        /* MOVED: re-send to the new node, no ASKING. */
        ck_assert_int_eq(sk_pcmd_on_reply(&c, &moved, 2), SK_PCMD_PENDING);
        ck_assert_int_eq(c.target, 2);
        ck_assert_int_eq(c.asking, 0);
        ck_assert_int_eq(c.redirects, 1);
        /* ASK: re-send there behind ASKING. */
        ck_assert_int_eq(sk_pcmd_on_reply(&c, &ask, 3), SK_PCMD_PENDING);
        ck_assert_int_eq(c.target, 3);
        ck_assert_int_eq(c.asking, 1);
        /* TRYAGAIN: same node, same ASKING, back off. */
        ck_assert_int_eq(sk_pcmd_on_reply(&c, &again, -1), SK_PCMD_PENDING);
        ck_assert_int_eq(c.target, 3);
        ck_assert_int_eq(c.asking, 1);
        ck_assert_int_eq(c.backoff, 1);
        ck_assert_int_eq(c.redirects, 3);
        /* The answer: final, backoff cleared. */
        ck_assert_int_eq(sk_pcmd_on_reply(&c, &none, -1), SK_PCMD_ANSWERED);
        ck_assert_int_eq(c.backoff, 0);
        /* CLUSTERDOWN is an answer (transient error reply), never re-sent. */
        c.status = SK_PCMD_SENT;
        ck_assert_int_eq(sk_pcmd_on_reply(&c, &down, -1), SK_PCMD_ANSWERED);
        ck_assert_int_eq(sk_pcmd_on_reply(&c, NULL, -1), SK_PCMD_ANSWERED);
}
END_TEST

START_TEST(pcmd_redirect_limit)
{
        sk_pcmd_t c = { .slot = 1, .target = 0 };
        sk_redir_t moved = redir(SK_REDIR_MOVED), again = redir(SK_REDIR_TRYAGAIN);

        for (int i = 0; i < SK_REDIR_MAX; i++)
                ck_assert_int_eq(sk_pcmd_on_reply(&c, i % 2 ? &again : &moved, 1),
                                 SK_PCMD_PENDING);
        /* The sixth redirect: give up, the command never ran. */
        ck_assert_int_eq(sk_pcmd_on_reply(&c, &moved, 1), SK_PCMD_NOTRUN);
        /* A MOVED to a node that cannot be added: not run either. */
        memset(&c, 0, sizeof(c));
        ck_assert_int_eq(sk_pcmd_on_reply(&c, &moved, -1), SK_PCMD_NOTRUN);
}
END_TEST

START_TEST(pipeline_bookkeeping)
{
        /* Six commands over nodes 0 and 1; node 1's connection breaks after its first
         * answer. Only node 1's sent-and-unanswered commands become unknown; the one
         * redirected back to pending and the answered ones keep their state. */
        sk_pcmd_t c[6];
        sk_redir_t none = redir(SK_REDIR_NONE), moved = redir(SK_REDIR_MOVED);

        memset(c, 0, sizeof(c));
        for (int i = 0; i < 6; i++) {
                c[i].target = i % 2;
                c[i].status = SK_PCMD_SENT;
        }
        ck_assert_int_eq(sk_pcmd_on_reply(&c[0], &none, -1), SK_PCMD_ANSWERED);
        ck_assert_int_eq(sk_pcmd_on_reply(&c[2], &moved, 1), SK_PCMD_PENDING);
        ck_assert_int_eq(sk_pcmd_on_reply(&c[1], &none, -1), SK_PCMD_ANSWERED);
        ck_assert_int_eq(sk_pcmds_on_conn_error(c, 6, 1), 2); /* c[3], c[5] */
        ck_assert_int_eq(c[0].status, SK_PCMD_ANSWERED);
        ck_assert_int_eq(c[1].status, SK_PCMD_ANSWERED);
        ck_assert_int_eq(c[2].status, SK_PCMD_PENDING);  /* re-sent next round, to node 1 */
        ck_assert_int_eq(c[2].target, 1);
        ck_assert_int_eq(c[3].status, SK_PCMD_UNKNOWN);
        ck_assert_int_eq(c[4].status, SK_PCMD_SENT);     /* node 0 still reading */
        ck_assert_int_eq(c[5].status, SK_PCMD_UNKNOWN);
        /* Nothing more changes on a second error of the same node. */
        ck_assert_int_eq(sk_pcmds_on_conn_error(c, 6, 1), 0);
}
END_TEST

static Suite *redirect_suite(void)
{
        Suite *s = suite_create("redis_redirect");
        TCase *tc = tcase_create("redirect");

        tcase_add_test(tc, parse_redirects);
        tcase_add_test(tc, routing_keys);
        tcase_add_test(tc, pcmd_moved_ask_tryagain);
        tcase_add_test(tc, pcmd_redirect_limit);
        tcase_add_test(tc, pipeline_bookkeeping);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return sk_test_run(redirect_suite());
}
