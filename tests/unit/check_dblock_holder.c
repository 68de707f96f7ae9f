/* check_dblock_holder.c: sk/dblock_holder.h, the tb_lock holder
 * "host:boot_id:pid:start_ticks:seq" and the dead-holder rule of DESIGN.md 16 (f): parse
 * and format, the start time from /proc/PID/stat text, and the verdict for each kind of
 * holder (another host, another boot id, a gone pid, a reused pid, a live one, our own
 * process, the old three-field form) against a probe the test controls. */
#include <unistd.h>
#include "sk_test.h"
#include "sk/dblock_holder.h"

#define BOOT_A "0b0c2e4f-1111-4a2b-9c3d-5e6f708192a3"
#define BOOT_B "7f7f7f7f-2222-4a2b-9c3d-5e6f708192a3"

/* The probe the test controls: pid 4242 runs, started at tick 900; pid 5151 exists but its
 * start time cannot be read; every other pid is gone. */
static int fake_probe(long pid, uint64_t *ticks, void *arg)
{
        int *calls = arg;

        if (calls)
                (*calls)++;
        if (pid == 4242) {
                *ticks = 900;
                return 1;
        }
        if (pid == 5151)
                return -1;
        return 0;
}

static sk_dblock_holder_t self_a(void)
{
        sk_dblock_holder_t self = { .host = "node-1", .boot_id = BOOT_A, .pid = 100,
                                    .start_ticks = 777, .seq = 0 };
        return self;
}

START_TEST(parse_and_format_round_trip)
{
        sk_dblock_holder_t h = { .host = "db-host.example_1", .boot_id = BOOT_A, .pid = 4194304,
                                 .start_ticks = UINT64_C(18446744073709551615), .seq = 12 }, p;
        char s[200];

        sk_dblock_holder_format(&h, s, sizeof(s));
        ck_assert_str_eq(s, "db-host.example_1:" BOOT_A ":4194304:18446744073709551615:12");
        ck_assert_int_eq(sk_dblock_holder_parse(s, &p), SK_OK);
        ck_assert_str_eq(p.host, h.host);
        ck_assert_str_eq(p.boot_id, BOOT_A);
        ck_assert_int_eq(p.pid, 4194304);
        ck_assert_uint_eq(p.start_ticks, h.start_ticks);
        ck_assert_uint_eq(p.seq, 12);
        /* An unknown boot id is "-". */
        ck_assert_int_eq(sk_dblock_holder_parse("h:-:7:0:1", &p), SK_OK);
        ck_assert_str_eq(p.boot_id, "-");
        ck_assert_uint_eq(p.start_ticks, 0);
}
END_TEST

START_TEST(parse_refuses_malformed)
{
        static const char *const bad[] = {
                "",
                "host:4242:1764750000000",                      /* the old host:pid:start_ms */
                "host:" BOOT_A ":4242:900",                     /* four fields */
                "host:" BOOT_A ":4242:900:1:2",                 /* six fields */
                ":" BOOT_A ":4242:900:1",                       /* no host */
                "ho st:" BOOT_A ":4242:900:1",                  /* a space in the host */
                "host:0B0C2E4F-1111-4A2B-9C3D-5E6F708192A3:4242:900:1", /* upper-case boot id */
                "host:0b0c2e4f:4242:900:1",                     /* short boot id */
                "host:" BOOT_A ":0:900:1",                      /* pid 0 */
                "host:" BOOT_A ":-5:900:1",                     /* signed pid */
                "host:" BOOT_A ":2147483648:900:1",             /* pid past 2^31-1 */
                "host:" BOOT_A ":42x:900:1",
                "host:" BOOT_A ":4242::1",                      /* empty start_ticks */
                "host:" BOOT_A ":4242:+900:1",
                "host:" BOOT_A ":4242:18446744073709551616:1",  /* ticks overflow */
                "host:" BOOT_A ":4242:900:",                    /* empty seq */
                "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh:" BOOT_A
                ":4242:900:1",                                  /* host of 65 bytes */
        };
        sk_dblock_holder_t p;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(sk_dblock_holder_parse(bad[i], &p) == SK_EINVAL, "accepted \"%s\"", bad[i]);
        ck_assert_int_eq(sk_dblock_holder_parse(NULL, &p), SK_EINVAL);
}
END_TEST

START_TEST(stat_ticks_counts_after_the_last_paren)
{
        /* proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
         * cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime ... */
        const char *plain = "4242 (seckill-recon) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 "
                            "20 0 1 0 123456 9999 ...\n";
        const char *odd = "77 (a) b) (c d) R 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 98765 1\n";
        uint64_t t = 0;

        ck_assert_int_eq(sk_dblock_holder_stat_ticks(plain, &t), SK_OK);
        ck_assert_uint_eq(t, 123456);
        ck_assert_int_eq(sk_dblock_holder_stat_ticks(odd, &t), SK_OK);
        ck_assert_uint_eq(t, 98765);
        ck_assert_int_eq(sk_dblock_holder_stat_ticks("4242 (x) S 1 2 3\n", &t), SK_EINVAL);
        ck_assert_int_eq(sk_dblock_holder_stat_ticks("no parenthesis", &t), SK_EINVAL);
        ck_assert_int_eq(sk_dblock_holder_stat_ticks(NULL, &t), SK_EINVAL);
}
END_TEST

START_TEST(dead_only_on_our_host_and_boot)
{
        sk_dblock_holder_t self = self_a();
        int calls = 0;

        /* Same host and boot id: the pid gone -> dead; reused (other ticks) -> dead. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":31337:500:1", &self, fake_probe, &calls), 1);
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":4242:899:3", &self, fake_probe, &calls), 1);
        /* The same pid at the same ticks runs: alive. Start time unreadable: wait. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":4242:900:3", &self, fake_probe, &calls), 0);
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":5151:900:3", &self, fake_probe, &calls), 0);
        /* The holder's start ticks unknown (0) and its pid runs: cannot prove a reuse. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":4242:0:3", &self, fake_probe, &calls), 0);
        /* ... but a gone pid is gone whatever the ticks. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":31337:0:3", &self, fake_probe, &calls), 1);
        ck_assert_int_eq(calls, 6);
        calls = 0;
        /* Another boot id of our host (an earlier boot, DESIGN.md 16 (f)): dead at once,
         * whatever its pid (no pid is asked about); an unknown one: wait for the ttl. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_B ":31337:500:1", &self, fake_probe, &calls), 1);
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_B ":100:777:1", &self, fake_probe, &calls), 1);
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:-:31337:500:1", &self, fake_probe, &calls), 0);
        /* Another host. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-2:" BOOT_A ":31337:500:1", &self, fake_probe, &calls), 0);
        ck_assert_int_eq(sk_dblock_holder_dead("node-10:" BOOT_A ":31337:500:1", &self, fake_probe, &calls), 0);
        /* The old form and junk. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:31337:1764750000000", &self, fake_probe, &calls), 0);
        ck_assert_int_eq(sk_dblock_holder_dead("", &self, fake_probe, &calls), 0);
        ck_assert_int_eq(sk_dblock_holder_dead(NULL, &self, fake_probe, &calls), 0);
        /* Our own process (same pid and ticks): another lock object of ours, alive. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":100:777:9", &self, fake_probe, &calls), 0);
        ck_assert_int_eq(calls, 0);     /* none of these asked about a pid */
        /* Our pid but other ticks: an earlier process that had our pid. */
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:" BOOT_A ":100:776:9", &self, fake_probe, &calls), 1);
        /* Our own boot id unknown: never dead. */
        snprintf(self.boot_id, sizeof(self.boot_id), "-");
        ck_assert_int_eq(sk_dblock_holder_dead("node-1:-:31337:500:1", &self, fake_probe, NULL), 0);
}
END_TEST

START_TEST(self_and_make_on_this_machine)
{
        sk_dblock_holder_t self, p;
        char a[200], b[200];
        uint64_t ticks = 0;

        sk_dblock_holder_self(&self);
        ck_assert_int_eq(self.pid, (long)getpid());
        ck_assert_int_eq((int)strlen(self.boot_id), SK_DBLOCK_BOOT_ID_MAX);   /* Linux */
        ck_assert_uint_gt(self.start_ticks, 0);
        /* Our own pid through the real probe: running, at our ticks. */
        ck_assert_int_eq(sk_dblock_holder_probe_proc(self.pid, &ticks, NULL), 1);
        ck_assert_uint_eq(ticks, self.start_ticks);
        /* Two holders of one process differ by seq only, and parse back. */
        sk_dblock_holder_make(a, sizeof(a));
        sk_dblock_holder_make(b, sizeof(b));
        ck_assert_str_ne(a, b);
        ck_assert_int_eq(sk_dblock_holder_parse(a, &p), SK_OK);
        ck_assert_str_eq(p.host, self.host);
        ck_assert_str_eq(p.boot_id, self.boot_id);
        ck_assert_int_eq(p.pid, self.pid);
        ck_assert_uint_eq(p.start_ticks, self.start_ticks);
        ck_assert_uint_gt(p.seq, 0);
        /* Our own holder is never dead to us. */
        ck_assert_int_eq(sk_dblock_holder_dead(a, &self, sk_dblock_holder_probe_proc, NULL), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("dblock_holder");
        TCase *tc = tcase_create("dblock_holder");

        tcase_add_test(tc, parse_and_format_round_trip);
        tcase_add_test(tc, parse_refuses_malformed);
        tcase_add_test(tc, stat_ticks_counts_after_the_last_paren);
        tcase_add_test(tc, dead_only_on_our_host_and_boot);
        tcase_add_test(tc, self_and_make_on_this_machine);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
