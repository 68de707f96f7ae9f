/* sk_test_voucher.h: seed a voucher (DB rows, Redis buckets as preheat lays them out,
 * or the real preheat) and admit purchases through the real deduct.lua, so tests start
 * from the state the services would have made. Not thread-safe. */
#pragma once
#include <stdint.h>
#include "sk/conf.h"
#include "sk/msg.h"
#include "sk/redis.h"

/** A voucher to seed (sk_test_voucher). Zero fields mean "none" / the default. */
typedef struct sk_test_voucher {
        const sk_conf_t *conf;      /**< NULL: the fixture's (sk_test_fx) */
        sk_redis_t *r;              /**< NULL: the fixture's */
        int64_t vid;                /**< 0: a new random id */
        int buckets;                /**< 0 or 1: one bucket; N > 1: meta says "buckets N" */
        long long stock;            /**< Redis stock of the one bucket; -1: no stock key */
        const long long *stocks;    /**< buckets > 1: Redis stock of each bucket */
        long long init_stock;       /**< DB init_stock of the voucher row */
        long long db_stock;         /**< DB stock of bucket 0 (one bucket) */
        const long long *db_stocks; /**< buckets > 1: DB stock of each bucket (init
                                     *   init_stock / buckets each) */
        int64_t begin_ms, end_ms;   /**< sale window (epoch ms); both 0: an hour ago to an
                                     *   hour ahead (DB: UTC_TIMESTAMP(3) -/+ 1 HOUR) */
        int status;                 /**< Redis meta status; 0: no meta, users nor trace */
        int db_status;              /**< > 0: the tb_seckill_voucher row with this status
                                     *   and its tb_seckill_stock rows; 0: no DB rows */
        int preheat;                /**< 1: Redis from the DB rows by sk_voucher_preheat */
} sk_test_voucher_t;

/** @brief Seed voucher @p v: the DB rows (db_status > 0), then in Redis either
 *  sk_voucher_preheat (preheat) or, per bucket, meta (begin_ms, end_ms, status[,
 *  buckets]), stock, and users and trace holding the placeholder `_` (DESIGN.md 4).
 *  Fails the test on any error. @returns the voucher id. */
int64_t sk_test_voucher(const sk_test_voucher_t *v);
/** @brief An open voucher with @p stock units, on the fixture's database and Redis
 *  (sk_test_fx): a new random id; the DB row (status 1, init_stock = @p stock) with
 *  bucket 0 holding @p stock; in Redis meta (status 1, on sale from a minute ago to an
 *  hour ahead), stock @p stock, users and trace holding `_` (sk_test_voucher). Fails
 *  the test on any error. @returns the voucher id. */
int64_t sk_test_voucher_open(long long stock);
/** @brief deduct.lua for user @p uid on bucket 0 of @p vid (fixture), with trace and
 *  order ids @p trace / @p order (0: new random ones). On admission the message in
 *  @p msg and its JSON in @p json (SK_MSG_MAX bytes); both may be NULL.
 *  @returns 0 if admitted (OK or REPLAY), the REJECT code, or -1. */
int sk_test_deduct(int64_t vid, int64_t uid, int64_t trace, int64_t order,
                   sk_order_msg_t *msg, char *json);
/** @brief A new purchase of @p uid that must be admitted (users and trace hashes get `_`
 *  first, as preheat writes them). @p order, @p msg, @p json may be NULL.
 *  @returns the trace id. */
int64_t sk_test_admit(int64_t vid, int64_t uid, int64_t *order, sk_order_msg_t *msg,
                      char *json);
/** @brief sk_msg_parse of a message the test made; fails the test if invalid. */
void sk_test_parse_msg(const char *json, sk_order_msg_t *msg);
/** @brief A deduct.lua or take.lua reply in the v4 table shape for the script tests'
 *  assertions (v5, sk/scripts.h: the admission is the bare entry, a rejection the bare
 *  code): a string reply becomes {"OK", entry}, an integer {"REJECT", code}; any other
 *  reply is returned as is. Takes @p reply (owned); @returns the reply to free with
 *  freeReplyObject. */
redisReply *sk_test_admission_reply(redisReply *reply);
