/* rc_kafka.c: re-drive producer and DLQ reader of seckill-reconciler (rc_kafka.h).
 *
 * The producer is the shared idempotent configuration (sk_kafka_conf_new), so a
 * re-drive lands on the partition the front's original did (same key, same
 * partitioner) and internal retries never duplicate or reorder it. Delivery reports
 * are served by rc_producer_wait()'s poll loop; a re-drive counts as sent only when its
 * report says PERSISTED (DESIGN.md 8).
 *
 * The DLQ reader uses the legacy per-partition consumer (rd_kafka_consume_start), which
 * needs no group.id: nothing is committed and no consumer group is touched (DESIGN.md 8:
 * the DLQ is "read from the start each pass"). It stops at the high
 * watermark captured when it started, so a DLQ that keeps growing cannot hold the pass. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rc_kafka.h"
#include "sk/clock.h"
#include "sk/ids.h"
#include "sk/kafka.h"
#include "sk/vec.h"

struct rc_producer {
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt;
        int outstanding;
        int delivery_timeout_ms;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        rc_producer_t *p = opaque;
        rc_delivery_t *dr = rkm->_private;

        (void)rk;
        if (dr) {
                dr->done = 1;
                dr->err = rkm->err;
                dr->status = rd_kafka_message_status(rkm);
                dr->partition = rkm->partition;
                dr->offset = rkm->offset;
        }
        if (p && p->outstanding > 0)
                p->outstanding--;
}

rc_producer_t *rc_producer_new(const sk_conf_t *conf, char *errstr, size_t errstr_size)
{
        rc_producer_t *p = calloc(1, sizeof(*p));
        rd_kafka_conf_t *kconf = NULL;
        char rderr[512];

        if (!p) {
                sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        if (!(kconf = sk_kafka_conf_new(conf, SK_KAFKA_PRODUCER, errstr, errstr_size)))
                goto fail;
        rd_kafka_conf_set_dr_msg_cb(kconf, on_delivery);
        rd_kafka_conf_set_opaque(kconf, p);
        if (!(p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, rderr, sizeof(rderr)))) {
                sk_seterr(errstr, errstr_size, "rd_kafka_new: %s", rderr);
                rd_kafka_conf_destroy(kconf);
                goto fail;
        }
        kconf = NULL; /* p->rk owns it */
        if (!(p->rkt = rd_kafka_topic_new(p->rk, conf->topic, NULL))) {
                sk_seterr(errstr, errstr_size, "topic %s: %s", conf->topic,
                          rd_kafka_err2str(rd_kafka_last_error()));
                goto fail;
        }
        p->delivery_timeout_ms = conf->kafka_delivery_timeout_ms;
        return p;
fail:
        rc_producer_destroy(p);
        return NULL;
}

sk_err_t rc_producer_send(rc_producer_t *p, const char *key, const char *val, rc_delivery_t *dr,
                          char *errstr, size_t errstr_size)
{
        int64_t deadline = sk_mono_ms() + p->delivery_timeout_ms;

        memset(dr, 0, sizeof(*dr));
        dr->partition = -1;
        dr->offset = -1;
        for (;;) {
                if (rd_kafka_produce(p->rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                                     (void *)val, strlen(val), key, strlen(key), dr) == 0) {
                        p->outstanding++;
                        return SK_OK;
                }
                if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL ||
                    sk_mono_ms() > deadline)
                        break;
                rd_kafka_poll(p->rk, 100 /* ms */);
        }
        dr->done = 1;
        dr->err = rd_kafka_last_error();
        dr->status = RD_KAFKA_MSG_STATUS_NOT_PERSISTED;
        sk_seterr(errstr, errstr_size, "produce: %s", rd_kafka_err2str(dr->err));
        return SK_EKAFKA;
}

int rc_producer_wait(rc_producer_t *p, int timeout_ms)
{
        int64_t deadline = sk_mono_ms() + timeout_ms;
        int left;

        while (p->outstanding > 0 && sk_mono_ms() < deadline)
                rd_kafka_poll(p->rk, 100 /* ms */);
        left = p->outstanding;
        if (left > 0) {
                /* The caller frees the rc_delivery_t slots after this: no report may
                 * arrive later. Purged messages are reported now with __PURGE_* errors
                 * (not PERSISTED as far as we know; a duplicate later is harmless). */
                rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                deadline = sk_mono_ms() + 5000;
                while (p->outstanding > 0 && sk_mono_ms() < deadline)
                        rd_kafka_poll(p->rk, 100 /* ms */);
        }
        return left;
}

int rc_producer_outstanding(const rc_producer_t *p)
{
        return p ? p->outstanding : 0;
}

void rc_producer_destroy(rc_producer_t *p)
{
        if (!p)
                return;
        if (p->rk) {
                /* Everything we wait for was waited for already; do not hang here. */
                rd_kafka_flush(p->rk, 1000 /* ms */);
                if (p->rkt)
                        rd_kafka_topic_destroy(p->rkt);
                rd_kafka_destroy(p->rk);
        }
        free(p);
}

/* ---- DLQ reader ---- */

/* The ids found so far; a failed push is remembered and reported once at the end. */
typedef struct idvec {
        sk_i64vec_t ids;
        int oom;
} idvec_t;

static void idvec_push(idvec_t *a, int64_t x)
{
        if (sk_i64vec_push(&a->ids, x) != SK_OK)
                a->oom = 1;
}

/* Every "traceId":"<digits>" in @p buf (the DLQ copy may wrap the original message). */
static void scan_value(idvec_t *ids, const char *buf, size_t len)
{
        static const char pat[] = "\"traceId\"";
        size_t plen = sizeof(pat) - 1, i = 0;

        while (i + plen < len) {
                const char *q;
                size_t j;
                int64_t id;

                if (memcmp(buf + i, pat, plen) != 0) {
                        i++;
                        continue;
                }
                j = i + plen;
                while (j < len && (buf[j] == ' ' || buf[j] == ':' || buf[j] == '\\'))
                        j++;
                if (j < len && buf[j] == '"') {
                        j++;
                        q = buf + j;
                        while (j < len && buf[j] >= '0' && buf[j] <= '9')
                                j++;
                        if (sk_id_parse(q, (size_t)(buf + j - q), &id) == 0)
                                idvec_push(ids, id);
                }
                i += plen;
        }
}

static void scan_headers(idvec_t *ids, const rd_kafka_message_t *rkm)
{
        rd_kafka_headers_t *hdrs = NULL;
        const char *names[] = { "traceId", "trace_id", "messageId" };
        size_t k;

        if (rd_kafka_message_headers(rkm, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR || !hdrs)
                return;
        for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
                const void *val;
                size_t size;
                int64_t id;
                if (rd_kafka_header_get_last(hdrs, names[k], &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                    val && sk_id_parse(val, size, &id) == 0)
                        idvec_push(ids, id);
        }
}

/* A group-less consumer handle (no group.id: it joins no group, commits nothing). */
static rd_kafka_t *dlq_consumer_new(const sk_conf_t *conf, sk_err_t *err, char *errstr,
                                    size_t errstr_size)
{
        rd_kafka_conf_t *kconf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        char rderr[512];
        int i;

        *err = SK_EINVAL;
        if (!kconf) {
                sk_seterr(errstr, errstr_size, "rd_kafka_conf_new failed");
                *err = SK_ENOMEM;
                return NULL;
        }
        if (sk_kafka_conf_set(kconf, "bootstrap.servers", conf->kafka_brokers, errstr, errstr_size) ||
            sk_kafka_conf_set(kconf, "enable.auto.commit", "false", errstr, errstr_size) ||
            sk_kafka_conf_set(kconf, "enable.partition.eof", "false", errstr, errstr_size)) {
                rd_kafka_conf_destroy(kconf);
                return NULL;
        }
        for (i = 0; i < conf->nkafka_props; i++)
                if (sk_kafka_conf_set(kconf, conf->kafka_props[i][0], conf->kafka_props[i][1],
                                      errstr, errstr_size)) {
                        rd_kafka_conf_destroy(kconf);
                        return NULL;
                }
        if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, rderr, sizeof(rderr)))) {
                sk_seterr(errstr, errstr_size, "rd_kafka_new: %s", rderr);
                rd_kafka_conf_destroy(kconf);
                *err = SK_EKAFKA;
                return NULL;
        }
        *err = SK_OK;
        return rk; /* rk owns kconf */
}

/* Read partition @p part of @p topic from its low to its high watermark (captured
 * now) into @p ids, by @p deadline (monotonic ms). */
static sk_err_t dlq_read_partition(rd_kafka_t *rk, rd_kafka_topic_t *rkt, const char *topic,
                                   int32_t part, int64_t deadline, idvec_t *ids,
                                   char *errstr, size_t errstr_size)
{
        int64_t low = 0, high = 0, next;
        int left = (int)(deadline - sk_mono_ms());
        rd_kafka_resp_err_t e;

        if (left <= 0) {
                sk_seterr(errstr, errstr_size, "reading %s: timed out", topic);
                return SK_EAGAIN;
        }
        e = rd_kafka_query_watermark_offsets(rk, topic, part, &low, &high, left);
        if (e) {
                sk_seterr(errstr, errstr_size, "watermarks %s[%d]: %s", topic, (int)part,
                          rd_kafka_err2str(e));
                return SK_EAGAIN;
        }
        if (high <= low)
                return SK_OK;
        if (rd_kafka_consume_start(rkt, part, RD_KAFKA_OFFSET_BEGINNING) == -1) {
                sk_seterr(errstr, errstr_size, "consume_start %s[%d]: %s", topic, (int)part,
                          rd_kafka_err2str(rd_kafka_last_error()));
                return SK_EKAFKA;
        }
        next = low;
        while (next < high) {
                rd_kafka_message_t *rkm;
                if (sk_mono_ms() > deadline) {
                        rd_kafka_consume_stop(rkt, part);
                        sk_seterr(errstr, errstr_size, "reading %s[%d]: timed out at %" PRId64
                                  " of %" PRId64, topic, (int)part, next, high);
                        return SK_EAGAIN;
                }
                if (!(rkm = rd_kafka_consume(rkt, part, 200 /* ms */)))
                        continue;
                if (rkm->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                        if (rkm->payload)
                                scan_value(ids, rkm->payload, rkm->len);
                        scan_headers(ids, rkm);
                        next = rkm->offset + 1;
                } else if (rkm->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
                           rkm->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
                        next = high; /* compacted/deleted tail: nothing more */
                }
                rd_kafka_message_destroy(rkm);
        }
        rd_kafka_consume_stop(rkt, part);
        return SK_OK;
}

sk_err_t rc_dlq_read(const sk_conf_t *conf, const char *topic, int timeout_ms, int64_t **out,
                     size_t *nout, char *errstr, size_t errstr_size)
{
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt = NULL;
        const rd_kafka_metadata_t *md = NULL;
        rd_kafka_resp_err_t e;
        idvec_t ids = { 0 };
        int64_t deadline = sk_mono_ms() + timeout_ms;
        sk_err_t err = SK_EKAFKA;
        int i;

        *out = NULL;
        *nout = 0;
        if (!(rk = dlq_consumer_new(conf, &err, errstr, errstr_size)))
                return err;
        err = SK_EKAFKA;
        if (!(rkt = rd_kafka_topic_new(rk, topic, NULL))) {
                sk_seterr(errstr, errstr_size, "topic %s: %s", topic,
                          rd_kafka_err2str(rd_kafka_last_error()));
                goto done;
        }
        e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
        if (e) {
                sk_seterr(errstr, errstr_size, "metadata %s: %s", topic, rd_kafka_err2str(e));
                err = SK_EAGAIN;
                goto done;
        }
        if (md->topic_cnt != 1 ||
            md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
                err = SK_OK; /* no DLQ topic: nothing was dead-lettered */
                goto done;
        }
        if (md->topics[0].err) {
                sk_seterr(errstr, errstr_size, "metadata %s: %s", topic,
                          rd_kafka_err2str(md->topics[0].err));
                err = SK_EAGAIN;
                goto done;
        }
        err = SK_OK;
        for (i = 0; i < md->topics[0].partition_cnt && err == SK_OK; i++)
                err = dlq_read_partition(rk, rkt, topic, md->topics[0].partitions[i].id,
                                         deadline, &ids, errstr, errstr_size);
        if (err == SK_OK && ids.oom) {
                sk_seterr(errstr, errstr_size, "out of memory");
                err = SK_ENOMEM;
        }
done:
        if (err == SK_OK && ids.ids.n) {
                sk_i64vec_sort_unique(&ids.ids);
                *out = ids.ids.v; /* the caller owns the array now */
                *nout = ids.ids.n;
                ids.ids.v = NULL;
        }
        sk_i64vec_free(&ids.ids);
        if (md)
                rd_kafka_metadata_destroy(md);
        if (rkt)
                rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        return err;
}
