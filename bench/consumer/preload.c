/* bench/consumer/preload.c: produce M order messages (DESIGN.md 5 JSON) over V vouchers
 * into a topic, as fast as librdkafka batches them, for bench/consumer.sh. Compiled by
 * the script itself (cc preload.c $(pkg-config --cflags --libs rdkafka)); not part of
 * the product build.
 * Usage: preload BROKERS TOPIC M VOUCHER_BASE V ID_BASE [DUP_PCT]
 *   message i: voucher VOUCHER_BASE + i % V, traceId ID_BASE + i, orderId ID_BASE + M + i,
 *   userId ID_BASE + 2M + i (distinct buyers), beforeQty/afterQty counting down per
 *   voucher. DUP_PCT (0..100, default 0) re-drives that share of the backlog: after
 *   message i, for DUP_PCT of the i, an identical copy is produced, alternately of
 *   message i itself (a duplicate inside the same batch) and of message i - 5000 (one
 *   already decided when the copy arrives). Prints "produced=N duplicates=D seconds=S"
 *   on success; exit 1 on a delivery failure.
 *   Environment PRELOAD_BUCKETS=B (1..16, default 1): each voucher has B buckets; the k-th
 *   message of a voucher goes to bucket k % B (fields "bucket" and "home", Kafka key
 *   "voucherId:bucket", DESIGN.md 5), beforeQty/afterQty counting down per bucket. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <librdkafka/rdkafka.h>

static long failed;
static long nbuckets = 1; /* PRELOAD_BUCKETS */

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        (void)rk;
        (void)opaque;
        if (rkm->err)
                failed++;
}

/* Produce message @p j (see the top comment). @returns 0, or -1 (reason printed). */
static int produce_msg(rd_kafka_t *rk, const char *topic, long j, long m, long v, int64_t vbase,
                       int64_t idbase)
{
        char key[32], val[512];
        int64_t vid = vbase + j % v;
        long k = j / v;                     /* message j is the k-th of its voucher */
        long b = k % nbuckets;              /* ... and the (k / B)-th of bucket b */
        int64_t before = m / v / nbuckets + 1 - k / nbuckets;
        rd_kafka_resp_err_t e;
        int n;

        if (nbuckets > 1)
                snprintf(key, sizeof(key), "%" PRId64 ":%ld", vid, b);
        else
                snprintf(key, sizeof(key), "%" PRId64, vid);
        n = snprintf(val, sizeof(val),
                     "{\"traceId\":\"%" PRId64 "\",\"orderId\":\"%" PRId64 "\",\"userId\":\"%" PRId64
                     "\",\"voucherId\":\"%" PRId64 "\",\"bucket\":%ld,\"home\":%ld,\"beforeQty\":%" PRId64
                     ",\"deductQty\":1,\"afterQty\":%" PRId64 ",\"ts\":%" PRId64 "}",
                     idbase + j, idbase + m + j, idbase + 2 * m + j, vid, b, b, before, before - 1,
                     (int64_t)time(NULL) * 1000);
        for (;;) {
                e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, strlen(key)),
                                      RD_KAFKA_V_VALUE(val, (size_t)n),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        break;
                rd_kafka_poll(rk, 10);
        }
        if (e) {
                fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
                return -1;
        }
        rd_kafka_poll(rk, 0);
        return 0;
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
        char errstr[512];
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk;
        long m, v, i, dup_pct, dups = 0;
        int64_t vbase, idbase;
        double t0;

        if (argc != 7 && argc != 8) {
                fprintf(stderr, "usage: %s BROKERS TOPIC M VOUCHER_BASE V ID_BASE [DUP_PCT]\n", argv[0]);
                return 2;
        }
        dup_pct = argc == 8 ? atol(argv[7]) : 0;
        if (getenv("PRELOAD_BUCKETS"))
                nbuckets = atol(getenv("PRELOAD_BUCKETS"));
        if (nbuckets < 1 || nbuckets > 16) {
                fprintf(stderr, "PRELOAD_BUCKETS must be 1..16\n");
                return 2;
        }
        m = atol(argv[3]);
        vbase = strtoll(argv[4], NULL, 10);
        v = atol(argv[5]);
        idbase = strtoll(argv[6], NULL, 10);
        if (m < 1 || v < 1 || vbase < 1 || idbase < 1 || dup_pct < 0 || dup_pct > 100) {
                fprintf(stderr, "bad arguments\n");
                return 2;
        }
        conf = rd_kafka_conf_new();
        if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "enable.idempotence", "true", errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "linger.ms", "20", errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "compression.codec", "lz4", errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "queue.buffering.max.messages", "500000", errstr, sizeof(errstr))) {
                fprintf(stderr, "%s\n", errstr);
                return 1;
        }
        rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr)))) {
                fprintf(stderr, "%s\n", errstr);
                return 1;
        }
        t0 = now_s();
        for (i = 0; i < m; i++) {
                if (produce_msg(rk, argv[2], i, m, v, vbase, idbase) != 0)
                        return 1;
                /* DUP_PCT of the messages get a re-driven copy. */
                if (dup_pct > 0 && (i * dup_pct) / 100 != ((i + 1) * dup_pct) / 100) {
                        long j = (dups % 2 == 0) ? i : i - 5000;
                        if (j >= 0) {
                                if (produce_msg(rk, argv[2], j, m, v, vbase, idbase) != 0)
                                        return 1;
                                dups++;
                        }
                }
        }
        rd_kafka_flush(rk, 60000);
        if (rd_kafka_outq_len(rk) || failed) {
                fprintf(stderr, "not delivered: %d queued, %ld failed\n", rd_kafka_outq_len(rk), failed);
                return 1;
        }
        printf("produced=%ld duplicates=%ld seconds=%.2f\n", m + dups, dups, now_s() - t0);
        rd_kafka_destroy(rk);
        return 0;
}
