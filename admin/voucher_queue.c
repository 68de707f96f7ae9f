/* voucher_queue.c: `seckill-admin voucher queue ID` (admin.h, DESIGN.md 18): a queued
 * voucher's waiting room as one JSON line — members, admitted up to, live / used /
 * expired admissions, units left and held, held until, closed, the generation — from
 * the room's Redis state (`{q:ID}`) and the voucher's DB row. It changes nothing. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include "admin.h"
#include "sk/ids.h"
#include "sk/queue.h"
#include "sk/queue_db.h"
#include "sk/redis.h"
#include "sk/voucher.h"

#define PROG "seckill-admin"

/* One field of the room's state hash (HGETALL reply @p h) as a number, @p def if absent. */
static double field(const redisReply *h, const char *name, double def)
{
        for (size_t i = 0; h && i + 1 < h->elements; i += 2)
                if (strcmp(h->element[i]->str, name) == 0) {
                        int64_t v = 0;
                        if (sscanf(h->element[i + 1]->str, "%" SCNd64, &v) == 1)
                                return (double)v;
                }
        return def;
}

static const char *field_str(const redisReply *h, const char *name)
{
        for (size_t i = 0; h && i + 1 < h->elements; i += 2)
                if (strcmp(h->element[i]->str, name) == 0)
                        return h->element[i + 1]->str;
        return "";
}

/* ZCARD of the room key @p kind, -1 on error. */
static int64_t zcard(sk_redis_t *r, const char *prefix, int64_t vid, const char *kind)
{
        char key[SK_QUEUE_KEY_MAX], errstr[256];
        redisReply *rep = NULL;
        int64_t n = -1;

        if (sk_queue_key(key, sizeof(key), prefix, vid, kind) != 0)
                return -1;
        if (sk_redis_cmdf(r, &rep, errstr, sizeof(errstr), "ZCARD %s", key) == SK_OK &&
            rep->type == REDIS_REPLY_INTEGER)
                n = rep->integer;
        if (rep)
                freeReplyObject(rep);
        return n;
}

int sk_admin_voucher_queue(const sk_conf_t *conf, const sk_admin_opts_t *o)
{
        char errstr[512], key[SK_QUEUE_KEY_MAX], idbuf[SK_ID_STRLEN + 1];
        sk_queue_voucher_t qv;
        redisReply *st = NULL;
        sk_db_t *db = NULL;
        sk_redis_t *r = NULL;
        cJSON *root;
        int64_t vid, npre, npost;
        double upto, used, expired;
        sk_err_t err;
        int rc = 1;

        if (sk_id_parse_cstr(o->args[0], &vid) != 0) {
                fprintf(stderr, PROG ": \"%s\" is not a voucher id\n", o->args[0]);
                return 2;
        }
        if (sk_voucher_connect(conf, &db, &r, errstr, sizeof(errstr)) != SK_OK) {
                fprintf(stderr, PROG ": voucher queue: %s\n", errstr);
                return 1;
        }
        if ((err = sk_queue_voucher_get(db, vid, &qv, errstr, sizeof(errstr))) != SK_OK) {
                fprintf(stderr, PROG ": voucher queue: %s\n",
                        err == SK_ENOTFOUND ? "no such voucher" : errstr);
                rc = err == SK_ENOTFOUND ? 2 : 1;
                goto done;
        }
        if (qv.conf.mode != 1) {
                fprintf(stderr, PROG ": voucher queue: voucher %s has no waiting room\n", o->args[0]);
                rc = 2;
                goto done;
        }
        if (sk_queue_key(key, sizeof(key), conf->redis_prefix, vid, "state") != 0 ||
            sk_redis_cmdf(r, &st, errstr, sizeof(errstr), "HGETALL %s", key) != SK_OK ||
            st->type != REDIS_REPLY_ARRAY) {
                fprintf(stderr, PROG ": voucher queue: redis: %s\n", errstr);
                goto done;
        }
        npre = zcard(r, conf->redis_prefix, vid, "pre");
        npost = zcard(r, conf->redis_prefix, vid, "post");
        upto = field(st, "upto", 0);
        used = field(st, "used", 0);
        expired = field(st, "expired", 0);
        root = cJSON_CreateObject();
        sk_id_format(vid, idbuf);
        cJSON_AddStringToObject(root, "voucherId", idbuf);
        cJSON_AddBoolToObject(root, "room", st->elements > 0);
        cJSON_AddStringToObject(root, "generation", field_str(st, "generation"));
        cJSON_AddBoolToObject(root, "begun", field(st, "begun", 0) == 1);
        cJSON_AddNumberToObject(root, "members", (double)(npre + npost));
        cJSON_AddNumberToObject(root, "prequeue", (double)npre);
        cJSON_AddNumberToObject(root, "afterBegin", (double)npost);
        cJSON_AddNumberToObject(root, "admittedUpTo", upto);
        cJSON_AddNumberToObject(root, "live", upto - used - expired);
        cJSON_AddNumberToObject(root, "used", used);
        cJSON_AddNumberToObject(root, "expired", expired);
        cJSON_AddNumberToObject(root, "unitsLeft", field(st, "unitsLeft", -1));
        cJSON_AddNumberToObject(root, "unitsHeld", field(st, "unitsHeld", 0));
        cJSON_AddNumberToObject(root, "heldUntil", field(st, "heldUntil", 0));
        cJSON_AddBoolToObject(root, "closed", field(st, "closed", 0) == 1);
        cJSON_AddNumberToObject(root, "window",
                                (double)sk_queue_window((int64_t)field(st, "unitsLeft", -1),
                                                        qv.conf.overbook_pct));
        {
                char *txt = cJSON_PrintUnformatted(root);
                if (txt)
                        printf("%s\n", txt);
                cJSON_free(txt);
        }
        cJSON_Delete(root);
        rc = 0;
done:
        if (st)
                freeReplyObject(st);
        sk_redis_close(r);
        sk_db_close(db);
        return rc;
}
