/* fttool.c: the fault suite's Kafka helper (CMake target fttool, build/tests/fttool;
 * tests/support/ft.sh runs it).
 *
 *   fttool lag BROKERS GROUP TOPIC            sum over partitions of high watermark minus
 *                                             the group's committed offset (none = low)
 *   fttool reset-offsets BROKERS GROUP TOPIC  move the group's committed offsets back to
 *                                             each partition's low watermark with
 *                                             rd_kafka_AlterConsumerGroupOffsets (the
 *                                             group must have no members: DESIGN.md 10)
 *   fttool produce BROKERS TOPIC              one message per stdin line "KEY<TAB>VALUE"
 *                                             (KEY "-" = no key); prints "partition offset"
 *                                             per message; exit 0 iff all PERSISTED
 *   fttool count BROKERS TOPIC                sum over partitions of high - low watermark
 *   fttool delete-topics BROKERS TOPIC...     best effort, for cleanup
 *   fttool create-topic BROKERS TOPIC PARTITIONS RF [KEY=VALUE...]
 *                                             CreateTopics with that replication factor
 *                                             and topic configs; exit 0 iff created
 *   fttool partitions BROKERS TOPIC           per partition, from the metadata of a
 *                                             broker that answers: "PARTITION LEADER
 *                                             ISR" (ISR comma-separated broker ids, "-"
 *                                             when empty; LEADER -1 when none). No
 *                                             request goes to a partition's leader (it
 *                                             may be dead and not fenced yet)
 *   fttool highs BROKERS TOPIC                "PARTITION HIGH" per partition (the high
 *                                             watermark; every leader must answer)
 *   fttool marks BROKERS TOPIC                "PARTITION LOW HIGH" per partition: the log
 *                                             start offset and the high watermark (what
 *                                             dump reads between)
 *   fttool brokers BROKERS                    the ids of the brokers in the metadata
 *                                             (registered and unfenced), sorted, one line
 *   fttool dump BROKERS TOPIC                 every message up to the high watermarks at
 *                                             the start: "PARTITION OFFSET VALUE" (the
 *                                             value's newlines as spaces); assigned,
 *                                             nothing committed (diagnostics of a failed
 *                                             case)
 *
 * Diagnostics on stderr, data on stdout; exit 0 ok, 1 failure, 2 usage. It deliberately
 * knows nothing about the project's message format: a case writes the JSON itself. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <librdkafka/rdkafka.h>

#define TIMEOUT_MS 10000

static rd_kafka_t *new_client(rd_kafka_type_t type, const char *brokers, const char *group)
{
        char errstr[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;

        if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof(errstr)) ||
            (group && rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof(errstr))) ||
            /* This tool never commits for a group (lag only reads, dump only assigns). */
            (group && rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof(errstr))) ||
            (type == RD_KAFKA_PRODUCER &&
             rd_kafka_conf_set(conf, "enable.idempotence", "true", errstr, sizeof(errstr))) ||
            rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr))) {
                fprintf(stderr, "fttool: conf: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "fttool: rd_kafka_new: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
        }
        return rk; /* rk owns conf on success */
}

/* Partition count of @p topic, or -1. */
static int partition_count(rd_kafka_t *rk, const char *topic)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        rd_kafka_resp_err_t err;
        int n = -1;

        err = rd_kafka_metadata(rk, 0, rkt, &md, TIMEOUT_MS);
        if (err) {
                fprintf(stderr, "fttool: metadata %s: %s\n", topic, rd_kafka_err2str(err));
        } else if (md->topic_cnt != 1 || md->topics[0].err) {
                fprintf(stderr, "fttool: topic %s: %s\n", topic,
                        md->topic_cnt ? rd_kafka_err2str(md->topics[0].err) : "absent");
        } else {
                n = md->topics[0].partition_cnt;
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        return n;
}

static int cmd_lag(const char *brokers, const char *group, const char *topic)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, brokers, group);
        rd_kafka_topic_partition_list_t *parts = NULL;
        rd_kafka_resp_err_t err;
        int64_t lag = 0, lo, hi;
        int n, i, rc = 1;

        if (!rk)
                return 1;
        if ((n = partition_count(rk, topic)) < 0)
                goto done;
        parts = rd_kafka_topic_partition_list_new(n);
        for (i = 0; i < n; i++)
                rd_kafka_topic_partition_list_add(parts, topic, i);
        if ((err = rd_kafka_committed(rk, parts, TIMEOUT_MS))) {
                fprintf(stderr, "fttool: committed: %s\n", rd_kafka_err2str(err));
                goto done;
        }
        for (i = 0; i < n; i++) {
                err = rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi, TIMEOUT_MS);
                if (err) {
                        fprintf(stderr, "fttool: watermarks %s/%d: %s\n", topic, i, rd_kafka_err2str(err));
                        goto done;
                }
                if (parts->elems[i].offset >= 0)
                        lag += hi - parts->elems[i].offset;
                else
                        lag += hi - lo;
        }
        printf("%" PRId64 "\n", lag);
        rc = 0;
done:
        if (parts)
                rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_destroy(rk);
        return rc;
}

/* The three outputs of cmd_count. */
enum { COUNT_SUM, COUNT_HIGHS, COUNT_MARKS };

/* count (COUNT_SUM): the sum over partitions of high - low watermark; highs: "PARTITION
 * HIGH" per partition; marks: "PARTITION LOW HIGH" per partition. */
static int cmd_count(const char *brokers, const char *topic, int mode)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, brokers, NULL);
        rd_kafka_resp_err_t err;
        int64_t sum = 0, lo, hi;
        int n, i, rc = 1;

        if (!rk)
                return 1;
        if ((n = partition_count(rk, topic)) < 0)
                goto done;
        for (i = 0; i < n; i++) {
                err = rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi, TIMEOUT_MS);
                if (err) {
                        fprintf(stderr, "fttool: watermarks %s/%d: %s\n", topic, i, rd_kafka_err2str(err));
                        goto done;
                }
                sum += hi - lo;
                if (mode == COUNT_HIGHS)
                        printf("%d %" PRId64 "\n", i, hi);
                else if (mode == COUNT_MARKS)
                        printf("%d %" PRId64 " %" PRId64 "\n", i, lo, hi);
        }
        if (mode == COUNT_SUM)
                printf("%" PRId64 "\n", sum);
        rc = 0;
done:
        rd_kafka_destroy(rk);
        return rc;
}

static int cmd_reset(const char *brokers, const char *group, const char *topic)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, brokers, NULL);
        rd_kafka_topic_partition_list_t *parts = NULL;
        rd_kafka_AlterConsumerGroupOffsets_t *alter = NULL;
        rd_kafka_queue_t *q = NULL;
        rd_kafka_event_t *ev = NULL;
        const rd_kafka_group_result_t **groups;
        const rd_kafka_topic_partition_list_t *res;
        size_t ngroups = 0;
        int64_t lo, hi;
        int n, i, rc = 1;

        if (!rk)
                return 1;
        if ((n = partition_count(rk, topic)) < 0)
                goto done;
        parts = rd_kafka_topic_partition_list_new(n);
        for (i = 0; i < n; i++) {
                rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi, TIMEOUT_MS);
                if (err) {
                        fprintf(stderr, "fttool: watermarks %s/%d: %s\n", topic, i, rd_kafka_err2str(err));
                        goto done;
                }
                rd_kafka_topic_partition_list_add(parts, topic, i)->offset = lo;
        }
        alter = rd_kafka_AlterConsumerGroupOffsets_new(group, parts);
        q = rd_kafka_queue_new(rk);
        rd_kafka_AlterConsumerGroupOffsets(rk, &alter, 1, NULL, q);
        ev = rd_kafka_queue_poll(q, 3 * TIMEOUT_MS);
        if (!ev) {
                fprintf(stderr, "fttool: AlterConsumerGroupOffsets: no result\n");
                goto done;
        }
        if (rd_kafka_event_error(ev)) {
                fprintf(stderr, "fttool: AlterConsumerGroupOffsets: %s\n", rd_kafka_event_error_string(ev));
                goto done;
        }
        groups = rd_kafka_AlterConsumerGroupOffsets_result_groups(
                rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &ngroups);
        if (ngroups != 1) {
                fprintf(stderr, "fttool: AlterConsumerGroupOffsets: %zu group results\n", ngroups);
                goto done;
        }
        if (rd_kafka_group_result_error(groups[0])) {
                fprintf(stderr, "fttool: AlterConsumerGroupOffsets %s: %s\n", group,
                        rd_kafka_error_string(rd_kafka_group_result_error(groups[0])));
                goto done;
        }
        res = rd_kafka_group_result_partitions(groups[0]);
        rc = 0;
        for (i = 0; res && i < res->cnt; i++) {
                if (res->elems[i].err) {
                        fprintf(stderr, "fttool: %s/%d: %s\n", res->elems[i].topic,
                                res->elems[i].partition, rd_kafka_err2str(res->elems[i].err));
                        rc = 1;
                } else {
                        printf("%d %" PRId64 "\n", res->elems[i].partition, res->elems[i].offset);
                }
        }
done:
        if (ev)
                rd_kafka_event_destroy(ev);
        if (alter)
                rd_kafka_AlterConsumerGroupOffsets_destroy(alter);
        if (q)
                rd_kafka_queue_destroy(q);
        if (parts)
                rd_kafka_topic_partition_list_destroy(parts);
        rd_kafka_destroy(rk);
        return rc;
}

static int g_failed;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *rkm, void *opaque)
{
        (void)rk;
        (void)opaque;
        if (rkm->err || rd_kafka_message_status(rkm) != RD_KAFKA_MSG_STATUS_PERSISTED) {
                fprintf(stderr, "fttool: delivery: %s\n", rd_kafka_err2str(rkm->err));
                g_failed++;
        } else {
                printf("%" PRId32 " %" PRId64 "\n", rkm->partition, rkm->offset);
        }
}

static int cmd_produce(const char *brokers, const char *topic)
{
        char errstr[512], line[65536];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        int rc = 0;

        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "enable.idempotence", "true", errstr, sizeof(errstr)) ||
            rd_kafka_conf_set(conf, "message.timeout.ms", "20000", errstr, sizeof(errstr))) {
                fprintf(stderr, "fttool: conf: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return 1;
        }
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr)))) {
                fprintf(stderr, "fttool: rd_kafka_new: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return 1;
        }
        while (fgets(line, sizeof(line), stdin)) {
                size_t len = strlen(line);
                char *tab, *key, *val;
                rd_kafka_resp_err_t err;

                if (len && line[len - 1] == '\n')
                        line[--len] = '\0';
                if (!(tab = strchr(line, '\t'))) {
                        fprintf(stderr, "fttool: line without a tab\n");
                        rc = 1;
                        continue;
                }
                *tab = '\0';
                key = line;
                val = tab + 1;
                err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_KEY(strcmp(key, "-") ? key : NULL,
                                                       strcmp(key, "-") ? strlen(key) : 0),
                                        RD_KAFKA_V_VALUE(val, strlen(val)), RD_KAFKA_V_END);
                if (err) {
                        fprintf(stderr, "fttool: produce: %s\n", rd_kafka_err2str(err));
                        rc = 1;
                }
                rd_kafka_poll(rk, 0);
        }
        if (rd_kafka_flush(rk, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                fprintf(stderr, "fttool: flush: %d left\n", rd_kafka_outq_len(rk));
                rc = 1;
        }
        rd_kafka_destroy(rk);
        return rc || g_failed ? 1 : 0;
}

static int cmd_delete(const char *brokers, int ntopics, char **topics)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, brokers, NULL);
        rd_kafka_DeleteTopic_t *del[16];
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        int i, rc;

        if (!rk)
                return 1;
        if (ntopics > 16)
                ntopics = 16;
        for (i = 0; i < ntopics; i++)
                del[i] = rd_kafka_DeleteTopic_new(topics[i]);
        q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopics(rk, del, (size_t)ntopics, NULL, q);
        ev = rd_kafka_queue_poll(q, 3 * TIMEOUT_MS);
        rc = ev && !rd_kafka_event_error(ev) ? 0 : 1;
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_DeleteTopic_destroy_array(del, (size_t)ntopics);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return rc;
}

static int cmd_create(const char *brokers, const char *topic, int partitions, int rf,
                      int nconf, char **confs)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, brokers, NULL);
        rd_kafka_NewTopic_t *nt;
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        const rd_kafka_topic_result_t **res;
        char errstr[512];
        size_t nres = 0;
        int i, rc = 1;

        if (!rk)
                return 1;
        if (!(nt = rd_kafka_NewTopic_new(topic, partitions, rf, errstr, sizeof(errstr)))) {
                fprintf(stderr, "fttool: NewTopic %s: %s\n", topic, errstr);
                rd_kafka_destroy(rk);
                return 1;
        }
        for (i = 0; i < nconf; i++) {
                char *eq = strchr(confs[i], '=');
                if (!eq) {
                        fprintf(stderr, "fttool: topic config without '=': %s\n", confs[i]);
                        goto out;
                }
                *eq = '\0';
                if (rd_kafka_NewTopic_set_config(nt, confs[i], eq + 1)) {
                        fprintf(stderr, "fttool: topic config %s refused\n", confs[i]);
                        goto out;
                }
        }
        q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        ev = rd_kafka_queue_poll(q, 3 * TIMEOUT_MS);
        if (!ev) {
                fprintf(stderr, "fttool: CreateTopics: no result\n");
        } else if (rd_kafka_event_error(ev)) {
                fprintf(stderr, "fttool: CreateTopics: %s\n", rd_kafka_event_error_string(ev));
        } else {
                res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &nres);
                if (nres == 1 && !rd_kafka_topic_result_error(res[0]))
                        rc = 0;
                else
                        fprintf(stderr, "fttool: create %s: %s\n", topic,
                                nres == 1 ? rd_kafka_err2str(rd_kafka_topic_result_error(res[0])) : "no result");
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
out:
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        return rc;
}

/* A count 1..1000 from @p s, or -1 (CreateTopics then refuses it). */
static int small_int(const char *s)
{
        char *end;
        long v = strtol(s, &end, 10);

        return *s && !*end && v >= 1 && v <= 1000 ? (int)v : -1;
}

static int cmp_int(const void *a, const void *b)
{
        int x = *(const int *)a, y = *(const int *)b;
        return (x > y) - (x < y);
}

/* Metadata of @p topic (NULL: brokers only) into *md; 0 on success. */
static int metadata(rd_kafka_t *rk, const char *topic, const struct rd_kafka_metadata **md)
{
        rd_kafka_topic_t *rkt = topic ? rd_kafka_topic_new(rk, topic, NULL) : NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, md, TIMEOUT_MS);

        if (rkt)
                rd_kafka_topic_destroy(rkt);
        if (err) {
                fprintf(stderr, "fttool: metadata: %s\n", rd_kafka_err2str(err));
                return 1;
        }
        if (topic && ((*md)->topic_cnt != 1 || (*md)->topics[0].err)) {
                fprintf(stderr, "fttool: topic %s: %s\n", topic,
                        (*md)->topic_cnt ? rd_kafka_err2str((*md)->topics[0].err) : "absent");
                rd_kafka_metadata_destroy(*md);
                return 1;
        }
        return 0;
}

static int cmd_partitions(const char *brokers, const char *topic)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, brokers, NULL);
        const struct rd_kafka_metadata *md = NULL;
        const struct rd_kafka_metadata_partition *p;
        int i, j;

        if (!rk)
                return 1;
        if (metadata(rk, topic, &md)) {
                rd_kafka_destroy(rk);
                return 1;
        }
        for (i = 0; i < md->topics[0].partition_cnt; i++) {
                p = &md->topics[0].partitions[i];
                printf("%d %d ", p->id, p->err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ? -1 : p->leader);
                for (j = 0; j < p->isr_cnt; j++)
                        printf("%s%d", j ? "," : "", p->isrs[j]);
                printf("%s\n", p->isr_cnt ? "" : "-");
        }
        rd_kafka_metadata_destroy(md);
        rd_kafka_destroy(rk);
        return 0;
}

static int cmd_brokers(const char *brokers)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_PRODUCER, brokers, NULL);
        const struct rd_kafka_metadata *md = NULL;
        int ids[64], n, i;

        if (!rk)
                return 1;
        if (metadata(rk, NULL, &md)) {
                rd_kafka_destroy(rk);
                return 1;
        }
        n = md->broker_cnt < 64 ? md->broker_cnt : 64;
        for (i = 0; i < n; i++)
                ids[i] = md->brokers[i].id;
        qsort(ids, (size_t)n, sizeof(ids[0]), cmp_int);
        for (i = 0; i < n; i++)
                printf("%d\n", ids[i]);
        rd_kafka_metadata_destroy(md);
        rd_kafka_destroy(rk);
        return 0;
}

/* dump: every message of @p topic below the high watermarks read at the start, by
 * partition, with a plain assign (a group id is required by assign; nothing is
 * committed for it). */
static int cmd_dump(const char *brokers, const char *topic)
{
        rd_kafka_t *rk = new_client(RD_KAFKA_CONSUMER, brokers, "fttool-dump");
        rd_kafka_topic_partition_list_t *parts = NULL;
        int64_t *highs = NULL, *next = NULL, lo;
        int n, i, left = 0, rc = 1;

        if (!rk)
                return 1;
        if ((n = partition_count(rk, topic)) < 0)
                goto done;
        highs = calloc((size_t)n + 1, sizeof(*highs));
        next = calloc((size_t)n + 1, sizeof(*next));
        parts = rd_kafka_topic_partition_list_new(n);
        if (!highs || !next)
                goto done;
        for (i = 0; i < n; i++) {
                rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &highs[i], TIMEOUT_MS);
                if (err) {
                        fprintf(stderr, "fttool: watermarks %s/%d: %s\n", topic, i, rd_kafka_err2str(err));
                        goto done;
                }
                next[i] = lo;
                if (lo < highs[i]) {
                        rd_kafka_topic_partition_list_add(parts, topic, i)->offset = lo;
                        left++;
                }
        }
        if (left && rd_kafka_assign(rk, parts)) {
                fprintf(stderr, "fttool: assign %s failed\n", topic);
                goto done;
        }
        for (int idle = 0; left > 0 && idle < TIMEOUT_MS / 100;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m) {
                        idle++;
                        continue;
                }
                if (!m->err && m->partition >= 0 && m->partition < n && m->offset < highs[m->partition]) {
                        printf("%d %" PRId64 " ", (int)m->partition, (int64_t)m->offset);
                        for (size_t k = 0; k < m->len; k++) {
                                char ch = ((const char *)m->payload)[k];
                                putchar(ch == '\n' || ch == '\r' ? ' ' : ch);
                        }
                        putchar('\n');
                        next[m->partition] = m->offset + 1;
                        if (next[m->partition] >= highs[m->partition])
                                left--;
                } else if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        fprintf(stderr, "fttool: dump %s: %s\n", topic, rd_kafka_message_errstr(m));
                }
                rd_kafka_message_destroy(m);
        }
        if (left)
                fprintf(stderr, "fttool: dump %s: %d partition(s) not read to their high watermark\n", topic, left);
        rc = left ? 1 : 0;
done:
        if (parts)
                rd_kafka_topic_partition_list_destroy(parts);
        free(highs);
        free(next);
        rd_kafka_destroy(rk);
        return rc;
}

int main(int argc, char **argv)
{
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc == 5 && !strcmp(argv[1], "lag"))
                return cmd_lag(argv[2], argv[3], argv[4]);
        if (argc == 5 && !strcmp(argv[1], "reset-offsets"))
                return cmd_reset(argv[2], argv[3], argv[4]);
        if (argc == 4 && !strcmp(argv[1], "produce"))
                return cmd_produce(argv[2], argv[3]);
        if (argc == 4 && !strcmp(argv[1], "count"))
                return cmd_count(argv[2], argv[3], COUNT_SUM);
        if (argc >= 4 && !strcmp(argv[1], "delete-topics"))
                return cmd_delete(argv[2], argc - 3, argv + 3);
        if (argc >= 6 && !strcmp(argv[1], "create-topic"))
                return cmd_create(argv[2], argv[3], small_int(argv[4]), small_int(argv[5]), argc - 6, argv + 6);
        if (argc == 4 && !strcmp(argv[1], "highs"))
                return cmd_count(argv[2], argv[3], COUNT_HIGHS);
        if (argc == 4 && !strcmp(argv[1], "marks"))
                return cmd_count(argv[2], argv[3], COUNT_MARKS);
        if (argc == 4 && !strcmp(argv[1], "partitions"))
                return cmd_partitions(argv[2], argv[3]);
        if (argc == 3 && !strcmp(argv[1], "brokers"))
                return cmd_brokers(argv[2]);
        if (argc == 4 && !strcmp(argv[1], "dump"))
                return cmd_dump(argv[2], argv[3]);
        fprintf(stderr, "usage: fttool lag|reset-offsets BROKERS GROUP TOPIC | produce|count|partitions|highs|marks BROKERS TOPIC"
                        " | delete-topics BROKERS TOPIC... | create-topic BROKERS TOPIC PARTITIONS RF [KEY=VALUE...]"
                        " | brokers BROKERS | dump BROKERS TOPIC\n");
        return 2;
}
