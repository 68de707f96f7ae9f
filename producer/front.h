/* producer/front.h: the configuration of seckill-front (the HTTP front of DESIGN.md 3),
 * set by main.c before any thread starts and read-only afterwards. The threading model
 * is described atop producer/main.c; each part of the front keeps its own state in its
 * own file behind its own header (the files and their jobs: producer/README.md). */
#pragma once
#include <stdint.h>

#include "sk/conf.h"

typedef struct fr_config {
        sk_conf_t conf;
        int http_threads, redis_workers, lookup_threads, pipeline_max;
        int lookup_queue_max;           /* lookups waiting beyond it: 503 at once (DESIGN.md 3) */
        int64_t expire_extra_ms;        /* reconcile window + 1 day (ms) */
        int64_t deadline_ms;            /* per request: 2 x delivery timeout + 1 s */
        char lease_holder[128];         /* the worker-id lease's holder (tb_drain_ack.holder) */
        /* Buyer identity (DESIGN.md 15; identity.c). */
        char auth_mode[32];             /* SECKILL_AUTH: trusted-header | jwt */
        char jwt_keys_file[512];        /* SECKILL_JWT_KEYS_FILE: the JWKS */
        char jwt_issuer[256];           /* SECKILL_JWT_ISSUER: "" = iss not checked */
        char jwt_audience[256];         /* SECKILL_JWT_AUDIENCE: "" = aud not checked */
        int jwt_cache_max;              /* SECKILL_JWT_CACHE_MAX: verified tokens cached */
        int jwt_rsa_max_bits;           /* SECKILL_JWT_RSA_MAX_BITS: larger RSA keys refused */
        int jwt_verify_rate;            /* SECKILL_JWT_VERIFY_RATE: per client address, 1/s */
        char trusted_proxies[1024];     /* SECKILL_TRUSTED_PROXIES: CIDRs and "unix" */
        int trusted_proxies_allow_wide; /* SECKILL_TRUSTED_PROXIES_ALLOW_WIDE: /0../7, /0../31 */
        char allowed_origins[2048];     /* SECKILL_ALLOWED_ORIGINS: cross-site POSTs allowed (xsite.c) */
        char ops_addr[128];             /* SECKILL_OPS_ADDR: /healthz /readyz /metrics; "off" = none */
        /* The payment callback (DESIGN.md 13, 15; payment.c). */
        char payment_keys_file[512];    /* SECKILL_PAYMENT_KEYS_FILE: "" = route 404 */
        int pay_threads;                /* SECKILL_FRONT_PAY_THREADS: the payment pool */
        /* The waiting room (DESIGN.md 18; room_tick.c, room_routes.c). */
        char queue_keys_file[512];      /* SECKILL_QUEUE_KEYS_FILE: "" = room routes 503 */
        int queue_poll_rate;            /* SECKILL_QUEUE_POLL_RATE: polls/s after begin */
        /* The buyer page (DESIGN.md 18; page.c). */
        int page_fragment_token;        /* SECKILL_PAGE_FRAGMENT_TOKEN: the page takes #token= */
} fr_config_t;

extern fr_config_t g_fr;

#define FR_REDIS_CMD_TIMEOUT_MS 1000    /* every Redis connection of the front */
