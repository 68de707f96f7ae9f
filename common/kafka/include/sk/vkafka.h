/* sk/vkafka.h: a voucher's partitions of the order topic and the consumer group's
 * progress on them (DESIGN.md 5, 8). Every producer of the project uses librdkafka's
 * murmur2_random partitioner (the Java client's murmur2), so any binary can compute the
 * partitions that carry a voucher's messages: the key "V" (one-bucket messages) and
 * "V:b" for each bucket b (DESIGN.md 5). The rebuild waits only for those partitions,
 * and the preheat asks whether a message of the voucher waits there unconsumed.
 *
 * What it does not do: consume, commit or subscribe (the handle only reads metadata,
 * watermarks and the group's committed offsets). Not thread-safe: one sk_vkafka_t per
 * thread. Never logs. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/conf.h"
#include "sk/err.h"

#define SK_VKAFKA_MAXPARTS 17   /* "V" and "V:0".."V:15" */

/** @brief The partition librdkafka's murmur2_random partitioner (equal to the Java
 *  client's default for keyed messages: toPositive(murmur2(key)) % n) gives the
 *  @p len bytes at @p key among @p partition_cnt (> 0) partitions. @p len > 0. Pure,
 *  thread-safe. */
int32_t sk_key_partition(const char *key, size_t len, int32_t partition_cnt);

/** @brief The distinct partitions that carry voucher @p voucher_id's messages among
 *  @p partition_cnt: of the keys "V" and "V:b", b in 0..@p buckets-1 (@p buckets 1..16),
 *  ascending into @p out (SK_VKAFKA_MAXPARTS entries). @returns their number. Pure. */
size_t sk_voucher_partitions(int64_t voucher_id, int buckets, int32_t partition_cnt,
                             int32_t *out);

/** What sk_vkafka_check found on the voucher's partitions. */
typedef struct sk_vkafka_state {
        int topic_missing;      /* the topic does not exist: nothing was ever published */
        int nparts;             /* the voucher's partitions */
        int32_t parts[SK_VKAFKA_MAXPARTS];
        int64_t lag;            /* sum over the partitions of target - committed offset,
                                   where target = the high watermark sampled by the
                                   handle's first check (0 = consumed up to there) */
        int64_t lo[SK_VKAFKA_MAXPARTS], hi[SK_VKAFKA_MAXPARTS]; /* watermarks of parts[i] */
        int64_t committed[SK_VKAFKA_MAXPARTS]; /* the group's offset, at least lo[i] */
} sk_vkafka_state_t;

typedef struct sk_vkafka sk_vkafka_t;

/** @brief A handle on conf->topic for conf->group_id (a consumer handle that never
 *  subscribes, commits or consumes). @returns owned handle (sk_vkafka_close), or NULL
 *  with the reason (bad -X property or librdkafka error). */
sk_vkafka_t *sk_vkafka_open(const sk_conf_t *conf, char *errstr, size_t errstr_size);
/** @brief Destroy @p vk. NULL is a no-op. */
void sk_vkafka_close(sk_vkafka_t *vk);

/** @brief Look at voucher @p voucher_id's partitions (@p buckets as in
 *  sk_voucher_partitions): watermarks, and the group's committed offsets. The first
 *  successful check of a handle samples each partition's high watermark as its target
 *  (DESIGN.md 12: "high watermarks sampled after that moment"): later messages of other
 *  vouchers on the same partition never hold a rebuild back. A committed offset below
 *  the low watermark (or none) counts as the low watermark.
 *  @returns SK_OK; SK_EAGAIN (the broker did not answer in time: check again). */
sk_err_t sk_vkafka_check(sk_vkafka_t *vk, int64_t voucher_id, int buckets,
                         sk_vkafka_state_t *st, char *errstr, size_t errstr_size);

/** @brief Whether a message of voucher @p voucher_id (key "V" or "V:b") waits on its
 *  partitions between the group's committed offset and the high watermark, i.e. a
 *  purchase the consumers have not decided yet: reads that range of each of the
 *  voucher's partitions (assign, never commit) until a message of the voucher is found
 *  (*found = 1) or every range is read (*found = 0). Other vouchers' messages are skipped.
 *  Reading stops at @p wait_ms: SK_EAGAIN (the caller treats the voucher as possibly
 *  having sales). @returns SK_OK, SK_EAGAIN, or SK_EKAFKA. */
sk_err_t sk_vkafka_pending(sk_vkafka_t *vk, int64_t voucher_id, int buckets, int wait_ms,
                           int *found, char *errstr, size_t errstr_size);
