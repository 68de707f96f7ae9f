/* vkafka.c: a voucher's partitions and the group's progress on them (sk/vkafka.h;
 * DESIGN.md 5, 8). The partition of a key is librdkafka's own murmur2_random
 * partitioner, the one every producer of the project is configured with (kafka.c), so
 * the answer is the producer's by construction. It is called outside a produce call with
 * no topic handle: for a non-NULL key it only hashes (the topic handle is used for
 * NULL keys alone, which never reach it). The unit test check_vkafka compares it with
 * values of the Java client's Utils.murmur2.
 *
 * What it does not do: consume, commit, subscribe or log. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "sk/clock.h"
#include "sk/kafka.h"
#include "sk/vkafka.h"

#define VKAFKA_TO_MS 5000   /* one metadata / watermark / committed request */

struct sk_vkafka {
        rd_kafka_t *rk;
        char topic[256];
        int ntargets;                          /* sampled high watermarks */
        int32_t target_part[SK_VKAFKA_MAXPARTS];
        int64_t target_off[SK_VKAFKA_MAXPARTS];
};

int32_t sk_key_partition(const char *key, size_t len, int32_t partition_cnt)
{
        if (!key || len == 0 || partition_cnt <= 0)
                return 0;
        return rd_kafka_msg_partitioner_murmur2_random(NULL, key, len, partition_cnt, NULL,
                                                       NULL);
}

size_t sk_voucher_partitions(int64_t voucher_id, int buckets, int32_t partition_cnt,
                             int32_t *out)
{
        char key[48];
        size_t n = 0;

        if (buckets < 1)
                buckets = 1;
        if (buckets > SK_VKAFKA_MAXPARTS - 1)
                buckets = SK_VKAFKA_MAXPARTS - 1;
        for (int b = -1; b < buckets; b++) {
                int len = b < 0 ? snprintf(key, sizeof(key), "%" PRId64, voucher_id)
                                : snprintf(key, sizeof(key), "%" PRId64 ":%d", voucher_id, b);
                int32_t p = sk_key_partition(key, (size_t)len, partition_cnt);
                size_t i = 0;

                while (i < n && out[i] < p)
                        i++;
                if (i < n && out[i] == p)
                        continue;
                memmove(&out[i + 1], &out[i], (n - i) * sizeof(*out));
                out[i] = p;
                n++;
        }
        return n;
}

sk_vkafka_t *sk_vkafka_open(const sk_conf_t *conf, char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *kconf;
        sk_vkafka_t *vk;
        char rderr[256];

        if (!(kconf = sk_kafka_conf_new(conf, SK_KAFKA_CONSUMER, errstr, errstr_size)))
                return NULL;
        /* This handle never subscribes and never commits. */
        if (sk_kafka_conf_set(kconf, "enable.auto.commit", "false", errstr, errstr_size) !=
            SK_OK || !(vk = calloc(1, sizeof(*vk)))) {
                rd_kafka_conf_destroy(kconf);
                if (errstr_size && !errstr[0])
                        sk_seterr(errstr, errstr_size, "out of memory");
                return NULL;
        }
        if (!(vk->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kconf, rderr, sizeof(rderr)))) {
                rd_kafka_conf_destroy(kconf);
                sk_seterr(errstr, errstr_size, "rd_kafka_new: %s", rderr);
                free(vk);
                return NULL;
        }
        snprintf(vk->topic, sizeof(vk->topic), "%s", conf->topic);
        return vk;
}

void sk_vkafka_close(sk_vkafka_t *vk)
{
        if (!vk)
                return;
        rd_kafka_destroy(vk->rk);
        free(vk);
}

/* The topic's partition count (0 with *missing = 1 when the topic does not exist). */
static sk_err_t partition_count(sk_vkafka_t *vk, int32_t *cnt, int *missing, char *errstr,
                                size_t errstr_size)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(vk->rk, vk->topic, NULL);
        rd_kafka_resp_err_t kerr;
        sk_err_t err = SK_EAGAIN;

        *cnt = 0;
        *missing = 0;
        if (!rkt) {
                sk_seterr(errstr, errstr_size, "topic %s: %s", vk->topic,
                          rd_kafka_err2str(rd_kafka_last_error()));
                return SK_EKAFKA;
        }
        kerr = rd_kafka_metadata(vk->rk, 0, rkt, &md, VKAFKA_TO_MS);
        if (kerr)
                sk_seterr(errstr, errstr_size, "metadata of %s: %s", vk->topic,
                          rd_kafka_err2str(kerr));
        else if (md->topic_cnt < 1)
                sk_seterr(errstr, errstr_size, "metadata of %s: no topic", vk->topic);
        else if (md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                *missing = 1, err = SK_OK;
        else if (md->topics[0].err)
                sk_seterr(errstr, errstr_size, "metadata of %s: %s", vk->topic,
                          rd_kafka_err2str(md->topics[0].err));
        else
                *cnt = md->topics[0].partition_cnt, err = SK_OK;
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        return err;
}

/* The target of @p part: sampled now (= @p hi) when the handle has none for it yet. */
static int64_t target_of(sk_vkafka_t *vk, int32_t part, int64_t hi)
{
        for (int i = 0; i < vk->ntargets; i++)
                if (vk->target_part[i] == part)
                        return vk->target_off[i];
        if (vk->ntargets < SK_VKAFKA_MAXPARTS) {
                vk->target_part[vk->ntargets] = part;
                vk->target_off[vk->ntargets++] = hi;
        }
        return hi;
}

/* Watermarks and committed offsets of st->parts into st (lo, hi, committed, lag). */
static sk_err_t progress(sk_vkafka_t *vk, sk_vkafka_state_t *st, char *errstr,
                         size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(st->nparts);
        rd_kafka_resp_err_t kerr;
        sk_err_t err = SK_EAGAIN;

        for (int i = 0; i < st->nparts; i++)
                rd_kafka_topic_partition_list_add(list, vk->topic, st->parts[i]);
        if ((kerr = rd_kafka_committed(vk->rk, list, VKAFKA_TO_MS)) || list->cnt != st->nparts) {
                sk_seterr(errstr, errstr_size, "committed offsets on %s: %s", vk->topic,
                          rd_kafka_err2str(kerr));
                goto done;
        }
        for (int i = 0; i < list->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &list->elems[i];
                int64_t lo = 0, hi = 0, committed = tp->offset, target;

                if (tp->err) {
                        sk_seterr(errstr, errstr_size, "committed offset of partition %d: %s",
                                  (int)tp->partition, rd_kafka_err2str(tp->err));
                        goto done;
                }
                kerr = rd_kafka_query_watermark_offsets(vk->rk, vk->topic, tp->partition, &lo,
                                                        &hi, VKAFKA_TO_MS);
                if (kerr) {
                        sk_seterr(errstr, errstr_size, "watermarks of partition %d: %s",
                                  (int)tp->partition, rd_kafka_err2str(kerr));
                        goto done;
                }
                if (committed < lo)             /* none committed (or below the log start) */
                        committed = lo;
                st->lo[i] = lo;
                st->hi[i] = hi;
                st->committed[i] = committed;
                target = target_of(vk, tp->partition, hi);
                if (committed < target)
                        st->lag += target - committed;
        }
        err = SK_OK;
done:
        rd_kafka_topic_partition_list_destroy(list);
        return err;
}

sk_err_t sk_vkafka_check(sk_vkafka_t *vk, int64_t voucher_id, int buckets,
                         sk_vkafka_state_t *st, char *errstr, size_t errstr_size)
{
        int32_t cnt;
        sk_err_t err;

        memset(st, 0, sizeof(*st));
        if ((err = partition_count(vk, &cnt, &st->topic_missing, errstr, errstr_size)) != SK_OK)
                return err;
        if (st->topic_missing || cnt <= 0)
                return SK_OK; /* nothing was ever published: nothing in flight */
        st->nparts = (int)sk_voucher_partitions(voucher_id, buckets, cnt, st->parts);
        return progress(vk, st, errstr, errstr_size);
}

/* 1 if the message key names voucher @p vs ("V" or "V:" followed by digits). */
static int key_of_voucher(const char *key, size_t len, const char *vs, size_t vlen)
{
        if (!key || len < vlen || memcmp(key, vs, vlen) != 0)
                return 0;
        if (len == vlen)
                return 1;
        if (key[vlen] != ':' || len == vlen + 1)
                return 0;
        for (size_t i = vlen + 1; i < len; i++)
                if (key[i] < '0' || key[i] > '9')
                        return 0;
        return 1;
}

/* Read the assigned ranges until a message of @p vs, every range read, or the deadline.
 * done[i] marks parts[i] read up to its high watermark (or not assigned). */
static sk_err_t scan_ranges(sk_vkafka_t *vk, const sk_vkafka_state_t *st, int *done,
                            int left, const char *vs, int64_t deadline_ms, int *found)
{
        while (left > 0 && !*found && sk_mono_ms() < deadline_ms) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(vk->rk, 100 /* ms */);

                if (!m)
                        continue;
                if (!m->err) {
                        if (key_of_voucher(m->key, m->key_len, vs, strlen(vs)))
                                *found = 1;
                        for (int i = 0; i < st->nparts; i++)
                                if (st->parts[i] == m->partition && !done[i] &&
                                    m->offset + 1 >= st->hi[i]) {
                                        done[i] = 1;
                                        left--;
                                }
                }
                rd_kafka_message_destroy(m);
        }
        return left > 0 && !*found ? SK_EAGAIN : SK_OK;
}

sk_err_t sk_vkafka_pending(sk_vkafka_t *vk, int64_t voucher_id, int buckets, int wait_ms,
                           int *found, char *errstr, size_t errstr_size)
{
        int64_t deadline_ms = sk_mono_ms() + wait_ms;
        rd_kafka_topic_partition_list_t *list;
        sk_vkafka_state_t st;
        char vs[32];
        int left = 0, done[SK_VKAFKA_MAXPARTS];
        sk_err_t err;

        *found = 0;
        if ((err = sk_vkafka_check(vk, voucher_id, buckets, &st, errstr, errstr_size)) != SK_OK)
                return err;
        list = rd_kafka_topic_partition_list_new(st.nparts > 0 ? st.nparts : 1);
        for (int i = 0; i < st.nparts; i++) {
                done[i] = st.committed[i] >= st.hi[i];
                if (!done[i]) {
                        rd_kafka_topic_partition_list_add(list, vk->topic, st.parts[i])->offset =
                                st.committed[i];
                        left++;
                }
        }
        if (left > 0 && rd_kafka_assign(vk->rk, list) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                sk_seterr(errstr, errstr_size, "assign %s: failed", vk->topic);
                err = SK_EKAFKA;
        } else if (left > 0) {
                snprintf(vs, sizeof(vs), "%" PRId64, voucher_id);
                err = scan_ranges(vk, &st, done, left, vs, deadline_ms, found);
                if (err == SK_EAGAIN)
                        sk_seterr(errstr, errstr_size, "the voucher's partitions of %s were "
                                  "not read to the end within %d ms", vk->topic, wait_ms);
                (void)rd_kafka_assign(vk->rk, NULL);
        }
        rd_kafka_topic_partition_list_destroy(list);
        return err;
}
