/* sk_test_bin.c: the binaries under test as children (sk_test_bin.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sk_test.h"
#include "sk/dblock.h"

pid_t sk_test_front_start(const sk_conf_t *conf, int port, const char *const *env,
                          const char *log_path)
{
        const char *all[48];
        char addr[64];
        int n = 0;

        snprintf(addr, sizeof(addr), "SECKILL_HTTP_ADDR=127.0.0.1:%d", port);
        all[n++] = addr;
        all[n++] = "SECKILL_TOPIC_PARTITIONS=2";
        all[n++] = "SECKILL_WORKER_LEASE_MS=900";
        all[n++] = "SECKILL_KAFKA_DELIVERY_TIMEOUT_MS=3000";
        all[n++] = "SECKILL_LOG_LEVEL=info";
        all[n++] = "SECKILL_WORKER_ID";         /* unset */
        /* The identity mode, named (DESIGN.md 15: jwt is the binary's default): the test
         * client on loopback plays the gateway. A test's @p env may say otherwise. */
        all[n++] = "SECKILL_AUTH=trusted-header";
        all[n++] = "SECKILL_TRUSTED_PROXIES=127.0.0.1/32,unix";
        for (; env && *env && n < 47; env++)
                all[n++] = *env;
        all[n] = NULL;
        return sk_test_spawn(&(sk_test_spawn_t){ .bin = "seckill-front", .conf = conf, .env = all,
                                                 .log_path = log_path, .names_only = 1 });
}

pid_t sk_test_consumer_start(const sk_test_spawn_t *o, int quick)
{
        sk_test_spawn_t s = *o;
        const char *args[40];
        int n = 0;

        args[n++] = "-X";
        args[n++] = "session.timeout.ms=6000";
        args[n++] = "-X";
        args[n++] = "heartbeat.interval.ms=500";
        if (quick) {
                args[n++] = "--lock-wait-timeout-s";
                args[n++] = "2";
                args[n++] = "--backoff-cap-ms";
                args[n++] = "500";
        }
        for (int i = 0; o->args && o->args[i] && n < 39; i++)
                args[n++] = o->args[i];
        args[n] = NULL;
        s.bin = "seckill-consumer";
        s.args = args;
        return sk_test_spawn(&s);
}

int sk_test_reconcile(const char *const *args, const char *failpoints, char *out, size_t size)
{
        int fd = -1, rc;
        pid_t pid = sk_test_spawn(&(sk_test_spawn_t){ .bin = "seckill-reconciler", .args = args,
                                                      .failpoints = failpoints, .out_fd = &fd });

        sk_test_read_all(fd, out, size, 240);
        rc = sk_test_wait_exit(pid, 10);
        fprintf(stderr, "---- reconciler %s exit %d:\n%s", args && args[0] ? args[0] : "", rc, out);
        return rc;
}

int sk_test_admin(const sk_conf_t *conf, const char *const *args)
{
        pid_t pid = sk_test_spawn(&(sk_test_spawn_t){ .bin = "seckill-admin", .conf = conf,
                                                      .args = args });

        return sk_test_wait_exit(pid, 120);
}

void sk_test_reconcile_lock(char *buf, size_t size, int fitted)
{
        char name[256];

        snprintf(name, sizeof(name), "seckill:reconcile:%s:%s", sk_test_fx.conf.mysql.database,
                 sk_test_fx.conf.redis_prefix);
        if (fitted && size > SK_DBLOCK_NAME_MAX)
                sk_dblock_fit_name(name, buf, size);
        else
                snprintf(buf, size, "%s", name);
}
