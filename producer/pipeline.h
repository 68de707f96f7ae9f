/* producer/pipeline.h: start and stop of the purchase pipeline of seckill-front, in the
 * order its parts depend on each other (DESIGN.md 8 shutdown rules, main.c). */
#pragma once
#include <stddef.h>

/** Start the Kafka producer and poll thread, the rollback worker, the deduct workers,
 *  the deadline timer and the health thread. @returns 0, or -1 with @p errstr. */
int fr_pipeline_start(char *errstr, size_t errstr_size);
/** Stop them (every admitted purchase still gets its delivery report served and, when
 *  NOT_PERSISTED, its fence). Call after the HTTP daemon stopped; the lookup pool is
 *  stopped after this (it drains the DB checks the deduct workers queued). */
void fr_pipeline_stop(void);
