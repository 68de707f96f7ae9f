/* sk_test_kafka.h: Kafka in a test, on the fixture's topic: produce messages keyed by
 * voucher id as the front would (the fixture's producer, project settings, 30 s message
 * timeout), commit or read a group's offsets as a consumer would, read the DLQ. Not
 * thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/ids.h"
#include "sk/msg.h"

/** One DLQ message as sk_test_read_dlq found it. */
typedef struct sk_test_dlq_msg {
        char kind[32];              /**< header x-seckill-kind */
        char error[512];            /**< header x-seckill-error */
        char trace[SK_ID_STRLEN];   /**< header traceId */
        char payload[SK_MSG_MAX];
} sk_test_dlq_msg_t;

/** @brief Queue @p payload (@p len bytes, copied) keyed by voucher @p vid on the
 *  fixture's topic without waiting (sk_test_produce_wait). */
void sk_test_produce_async(int64_t vid, const char *payload, size_t len);
/** @brief Wait (≤ 30 s) until every queued message has its delivery report; fails the
 *  test unless all were PERSISTED. */
void sk_test_produce_wait(void);
/** @brief Produce one NUL-terminated @p payload keyed by @p vid and wait for it. */
void sk_test_produce(int64_t vid, const char *payload);
/** @brief Produce @p n messages keyed by @p vid and wait for them. */
void sk_test_publish(int64_t vid, char **msgs, size_t n);
/** @brief Produce @p value keyed by the string @p key and wait. @returns the partition
 *  it landed on. */
int32_t sk_test_produce_key(const char *key, const char *value);
/** @brief Commit the high watermark of @p partition for the fixture's group (as a
 *  consumer that decided everything there would). */
void sk_test_commit_hwm(int32_t partition);
/** @brief The fixture group's committed offset of @p partition (-1: none). */
int64_t sk_test_committed(int32_t partition);
/** @brief The sum over the fixture topic's partitions of their high watermarks (messages
 *  ever produced); aborts the test if the broker does not answer in 10 s. */
int64_t sk_test_hwm_total(void);
/** @brief The sum over the fixture topic's partitions of the group's committed offsets (a
 *  partition without one counts 0): equal to sk_test_hwm_total() once every message is
 *  settled and committed. */
int64_t sk_test_committed_total(void);
/** @brief Read the DLQ from its start into @p out until @p want messages or
 *  @p timeout_s (s). @returns how many were read. */
int sk_test_read_dlq(sk_test_dlq_msg_t *out, int want, int timeout_s);
