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
} fr_config_t;

extern fr_config_t g_fr;

#define FR_REDIS_CMD_TIMEOUT_MS 1000    /* every Redis connection of the front */
