/* sk_test_fix.c: the run's fixture (sk_test_fix.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sk_test.h"
#include "sk/kafka.h"
#include "sk/migrate.h"
#include "sk/outcome.h"

sk_test_fix_t sk_test_fx;

static void die(const char *what, const char *errstr)
{
        fprintf(stderr, "test setup failed: %s: %s\n", what, errstr);
        exit(2);
}

void sk_test_fix_setup(const char *name, const sk_test_fix_opts_t *o)
{
        static const sk_test_fix_opts_t none;
        sk_test_fix_t *fx = &sk_test_fx;
        char errstr[512] = "";

        if (!o)
                o = &none;
        memset(fx, 0, sizeof(*fx));
        sk_db_library_init();
        sk_test_conf(&fx->conf, name);
        if (o->partitions > 0)
                fx->conf.topic_partitions = o->partitions;
        if (o->delivery_timeout_ms > 0)
                fx->conf.kafka_delivery_timeout_ms = o->delivery_timeout_ms;
        if (!o->redis_only && sk_migrate(&fx->conf.mysql, NULL, errstr, sizeof(errstr)))
                die("migrate", errstr);
        if (o->private_redis)
                fx->redis_pid = sk_test_redis_start(&fx->conf, 0, o->redis_args);
        if (!o->no_topics && !o->redis_only &&
            sk_kafka_ensure_topics(&fx->conf, 15000, errstr, sizeof(errstr)))
                die("ensure topics", errstr);
        if (!o->redis_only &&
            !(fx->db = sk_db_connect(&fx->conf.mysql, 0, o->lock_wait_s, errstr, sizeof(errstr))))
                die("db connect", errstr);
        if (!(fx->r = sk_redis_connect(&fx->conf.redis, 5000, errstr, sizeof(errstr))))
                die("redis connect", errstr);
        fx->extra_ms = sk_expire_extra_ms(fx->conf.reconcile_window_hours);
}

void sk_test_fix_teardown(void)
{
        sk_test_fix_t *fx = &sk_test_fx;

        sk_test_reap_all();
        if (fx->prod)
                rd_kafka_destroy(fx->prod);
        fx->prod = NULL;
        sk_db_close(fx->db);
        fx->db = NULL;
        sk_redis_close(fx->r);
        fx->r = NULL;
        sk_test_redis_stop(&fx->redis_pid);
        if (fx->conf.mysql.database[0] && !getenv("SK_TEST_KEEP"))
                sk_test_cleanup(&fx->conf);
        fx->conf.mysql.database[0] = '\0';
}

void sk_test_decider(sk_decider_t *d)
{
        memset(d, 0, sizeof(*d));
        d->db = sk_test_fx.db;
        d->r = sk_test_fx.r;
        d->prefix = sk_test_fx.conf.redis_prefix;
        d->mode = "reconciler";
        d->expire_extra_ms = sk_expire_extra_ms(sk_test_fx.conf.reconcile_window_hours);
        d->attempts = 2;
}
