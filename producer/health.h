/* producer/health.h: the front's health thread (DESIGN.md 3 /readyz, 8): every second
 * Redis (reachable, noeviction, scripts loaded), then Kafka (fatal producer
 * replacement, parked re-produces, topic creation, broker metadata). */
#pragma once

/** Start the health thread. @returns 0 or -1. */
int fr_health_start(void);
/** Stop and join it. */
void fr_health_stop(void);
/** Redis as last seen: reachable, maxmemory-policy noeviction, every script loaded, and
 *  @p server: every master reachable with Redis >= 7.0 and noeviction
 *  (sk_redis_check_server, DESIGN.md 3 /readyz). Thread-safe (atomics). */
void fr_health_redis(int *ok, int *noeviction, int *scripts, int *server);
/** The masters' replication guard as last seen (sk_redis_min_replicas, DESIGN.md 4b:
 *  /readyz reports it): smallest min-replicas-to-write and largest min-replicas-max-lag
 *  (seconds), both -1 while unknown (Redis not reached yet or CONFIG GET failed).
 *  Informational: readiness does not depend on it. Thread-safe (atomics). */
void fr_health_min_replicas(int *to_write, int *max_lag_s);
