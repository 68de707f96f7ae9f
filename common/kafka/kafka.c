/* kafka.c: librdkafka configuration per role (DESIGN.md 5), topic creation through the
 * Admin API, and the committed offset of the group on one partition.
 *
 * What it does not do: it owns no long-lived handle, never polls a producer or
 * consumer for the caller and never logs (the binaries decide what to print).
 *
 * Settings and why:
 *   producer  enable.idempotence=true (no duplicates or reordering from internal
 *             retries), message.timeout.ms = SECKILL_KAFKA_DELIVERY_TIMEOUT_MS (the
 *             front's delivery verdict deadline), linger.ms=2 (tiny batching window),
 *             partitioner=murmur2_random (the Java client's, DESIGN.md 5: any binary
 *             computes a voucher's partitions with sk_key_partition, sk/vkafka.h).
 *   consumer  group.id, auto.offset.reset=earliest (a new group must not skip orders),
 *             enable.auto.offset.store=false (offsets are stored by hand after the DB
 *             commit), enable.auto.commit=true every 500 ms (only stored offsets get
 *             committed, so this is safe and cheap), queued.max.messages.kbytes=8192
 *             and queued.min.messages=10000, fetch.message.max.bytes=256 KiB,
 *             fetch.max.bytes=2 MiB (bounded prefetch for the consumer's 64 MB RSS
 *             target: fetched messages point into their fetch buffer, so the buffer
 *             sizes bound the memory more than the queue accounting does; a larger
 *             message still gets through, librdkafka grows the fetch size for it).
 * The -X key=value properties of conf->kafka_props are applied last, as given. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "sk/kafka.h"

sk_err_t sk_kafka_conf_set(rd_kafka_conf_t *kconf, const char *name, const char *value,
                           char *errstr, size_t errstr_size)
{
        char rderr[256];

        if (rd_kafka_conf_set(kconf, name, value, rderr, sizeof(rderr)) != RD_KAFKA_CONF_OK) {
                /* librdkafka's message may quote the value: a secret one is not repeated. */
                if (sk_conf_secret_key(name))
                        sk_seterr(errstr, errstr_size, "kafka property %s=***: refused by librdkafka", name);
                else
                        sk_seterr(errstr, errstr_size, "kafka property %s=%s: %s", name, value, rderr);
                return SK_EINVAL;
        }
        return SK_OK;
}

rd_kafka_conf_t *sk_kafka_conf_new(const sk_conf_t *conf, sk_kafka_role_t role,
                                   char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *kconf = rd_kafka_conf_new();
        char client_id[128];
        char num[32];
        const char *role_name = role == SK_KAFKA_PRODUCER ? "producer"
                              : role == SK_KAFKA_CONSUMER ? "consumer" : "admin";
        int i;

        if (!kconf) {
                sk_seterr(errstr, errstr_size, "rd_kafka_conf_new failed");
                return NULL;
        }
        snprintf(client_id, sizeof(client_id), "seckill-%s-%ld", role_name, (long)getpid());
        if (sk_kafka_conf_set(kconf, "bootstrap.servers", conf->kafka_brokers, errstr, errstr_size) ||
            sk_kafka_conf_set(kconf, "client.id", client_id, errstr, errstr_size))
                goto fail;

        switch (role) {
        case SK_KAFKA_PRODUCER:
                snprintf(num, sizeof(num), "%d", conf->kafka_delivery_timeout_ms);
                if (sk_kafka_conf_set(kconf, "enable.idempotence", "true", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "message.timeout.ms", num, errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "linger.ms", "2", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "partitioner", "murmur2_random", errstr, errstr_size))
                        goto fail;
                break;
        case SK_KAFKA_CONSUMER:
                if (sk_kafka_conf_set(kconf, "group.id", conf->group_id, errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "auto.offset.reset", "earliest", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "enable.auto.offset.store", "false", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "enable.auto.commit", "true", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "auto.commit.interval.ms", "500", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "queued.max.messages.kbytes", "8192", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "queued.min.messages", "10000", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "fetch.message.max.bytes", "262144", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "fetch.max.bytes", "2097152", errstr, errstr_size) ||
                    sk_kafka_conf_set(kconf, "enable.partition.eof", "false", errstr, errstr_size))
                        goto fail;
                break;
        case SK_KAFKA_ADMIN:
                break;
        }

        for (i = 0; i < conf->nkafka_props; i++)
                if (sk_kafka_conf_set(kconf, conf->kafka_props[i][0], conf->kafka_props[i][1],
                                      errstr, errstr_size))
                        goto fail;
        return kconf;
fail:
        rd_kafka_conf_destroy(kconf);
        return NULL;
}

/* Create @p ntopics topics; TOPIC_ALREADY_EXISTS counts as success. */
static sk_err_t create_topics(const sk_conf_t *conf, const char **topics, int ntopics,
                              int partitions, int timeout_ms, char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *kconf = NULL;
        rd_kafka_t *rk = NULL;
        rd_kafka_queue_t *rkqu = NULL;
        rd_kafka_AdminOptions_t *opts = NULL;
        rd_kafka_NewTopic_t *nt[4] = { 0 };
        rd_kafka_event_t *rkev = NULL;
        char rderr[512];
        sk_err_t err = SK_EKAFKA;
        int i;

        if (ntopics < 1 || ntopics > 4 || partitions < 1) {
                sk_seterr(errstr, errstr_size, "create_topics: bad arguments");
                return SK_EINVAL;
        }
        if (!(kconf = sk_kafka_conf_new(conf, SK_KAFKA_ADMIN, errstr, errstr_size)))
                return SK_EINVAL;
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, rderr, sizeof(rderr)))) {
                sk_seterr(errstr, errstr_size, "rd_kafka_new: %s", rderr);
                rd_kafka_conf_destroy(kconf);
                return SK_EKAFKA;
        }
        kconf = NULL; /* rk owns it */
        rkqu = rd_kafka_queue_new(rk);
        for (i = 0; i < ntopics; i++) {
                /* replication_factor -1: the broker's default.replication.factor (KIP-464). */
                if (!(nt[i] = rd_kafka_NewTopic_new(topics[i], partitions, -1, rderr, sizeof(rderr)))) {
                        sk_seterr(errstr, errstr_size, "topic %s: %s", topics[i], rderr);
                        err = SK_EINVAL;
                        goto done;
                }
        }
        opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, rderr, sizeof(rderr));
        rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, rderr, sizeof(rderr));
        rd_kafka_CreateTopics(rk, nt, (size_t)ntopics, opts, rkqu);

        /* The result event arrives within the request timeout; allow a margin. */
        rkev = rd_kafka_queue_poll(rkqu, timeout_ms + 2000);
        if (!rkev) {
                sk_seterr(errstr, errstr_size, "CreateTopics: no answer within %d ms", timeout_ms);
                err = SK_EAGAIN;
                goto done;
        }
        if (rd_kafka_event_error(rkev)) {
                rd_kafka_resp_err_t e = rd_kafka_event_error(rkev);
                sk_seterr(errstr, errstr_size, "CreateTopics: %s", rd_kafka_event_error_string(rkev));
                err = (e == RD_KAFKA_RESP_ERR__TIMED_OUT || e == RD_KAFKA_RESP_ERR__TRANSPORT ||
                       e == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) ? SK_EAGAIN : SK_EKAFKA;
                goto done;
        } else {
                const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(rkev);
                const rd_kafka_topic_result_t **tres;
                size_t n = 0, j;

                if (!res) {
                        sk_seterr(errstr, errstr_size, "CreateTopics: unexpected event %s",
                                  rd_kafka_event_name(rkev));
                        goto done;
                }
                tres = rd_kafka_CreateTopics_result_topics(res, &n);
                for (j = 0; j < n; j++) {
                        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(tres[j]);
                        if (e == RD_KAFKA_RESP_ERR_NO_ERROR ||
                            e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                                continue;
                        sk_seterr(errstr, errstr_size, "create topic %s: %s",
                                  rd_kafka_topic_result_name(tres[j]),
                                  rd_kafka_topic_result_error_string(tres[j])
                                          ? rd_kafka_topic_result_error_string(tres[j])
                                          : rd_kafka_err2str(e));
                        err = (e == RD_KAFKA_RESP_ERR__TIMED_OUT ||
                               e == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT ||
                               e == RD_KAFKA_RESP_ERR__TRANSPORT) ? SK_EAGAIN : SK_EKAFKA;
                        goto done;
                }
        }
        err = SK_OK;
done:
        if (rkev)
                rd_kafka_event_destroy(rkev);
        if (opts)
                rd_kafka_AdminOptions_destroy(opts);
        for (i = 0; i < ntopics; i++)
                if (nt[i])
                        rd_kafka_NewTopic_destroy(nt[i]);
        if (rkqu)
                rd_kafka_queue_destroy(rkqu);
        rd_kafka_destroy(rk);
        return err;
}

sk_err_t sk_kafka_create_topic(const sk_conf_t *conf, const char *topic, int partitions,
                               int timeout_ms, char *errstr, size_t errstr_size)
{
        return create_topics(conf, &topic, 1, partitions, timeout_ms, errstr, errstr_size);
}

sk_err_t sk_kafka_ensure_topics(const sk_conf_t *conf, int timeout_ms,
                                char *errstr, size_t errstr_size)
{
        const char *topics[2] = { conf->topic, conf->dlq_topic };
        return create_topics(conf, topics, 2, conf->topic_partitions, timeout_ms,
                             errstr, errstr_size);
}

sk_err_t sk_kafka_committed(const sk_conf_t *conf, const char *topic, int partition,
                            int64_t *offset, int timeout_ms, char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *kconf = NULL;
        rd_kafka_t *rk = NULL;
        rd_kafka_topic_partition_list_t *parts = NULL;
        rd_kafka_resp_err_t e;
        char rderr[512];
        sk_err_t err = SK_EKAFKA;

        if (!(kconf = sk_kafka_conf_new(conf, SK_KAFKA_CONSUMER, errstr, errstr_size)))
                return SK_EINVAL;
        /* This handle never subscribes and never commits. */
        if (sk_kafka_conf_set(kconf, "enable.auto.commit", "false", errstr, errstr_size)) {
                rd_kafka_conf_destroy(kconf);
                return SK_EINVAL;
        }
        if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, rderr, sizeof(rderr)))) {
                sk_seterr(errstr, errstr_size, "rd_kafka_new: %s", rderr);
                rd_kafka_conf_destroy(kconf);
                return SK_EKAFKA;
        }
        kconf = NULL; /* rk owns it */
        parts = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(parts, topic, partition);
        e = rd_kafka_committed(rk, parts, timeout_ms);
        if (e) {
                sk_seterr(errstr, errstr_size, "committed %s[%d]: %s", topic, partition,
                          rd_kafka_err2str(e));
                err = (e == RD_KAFKA_RESP_ERR__TIMED_OUT || e == RD_KAFKA_RESP_ERR__TRANSPORT ||
                       e == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
                       e == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
                       e == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
                       e == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) ? SK_EAGAIN : SK_EKAFKA;
                goto done;
        }
        if (parts->elems[0].err) {
                sk_seterr(errstr, errstr_size, "committed %s[%d]: %s", topic, partition,
                          rd_kafka_err2str(parts->elems[0].err));
                goto done;
        }
        *offset = parts->elems[0].offset < 0 ? -1 : parts->elems[0].offset;
        err = SK_OK;
done:
        rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_destroy(rk);
        return err;
}
