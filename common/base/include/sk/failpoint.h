/* sk/failpoint.h: named fault-injection points (DESIGN.md 11), like etcd's gofail.
 * SECKILL_FAILPOINTS="name=action;name=N*action", action: exit (raise(SIGKILL)),
 * error (the step returns failure as if its dependency had failed), sleep(MS), off.
 * "N*" fires N times, then the point is off. Unset variable: every check is one load
 * and branch. Thread-safe (counters are atomic). */
#pragma once
#include <stddef.h>

/** @brief Parse @p spec (may be NULL/empty) and install it, replacing any earlier one.
 *  @returns 0, or -1 with the reason (unknown action, bad count...). */
int sk_failpoint_setup(const char *spec, char *errstr, size_t errstr_size);
/** @brief Reads SECKILL_FAILPOINTS (called by sk_conf_load). */
int sk_failpoint_setup_env(char *errstr, size_t errstr_size);
/** @brief Evaluate point @p name: exit kills the process; sleep sleeps then returns 0;
 *  error returns 1 (the caller fails the step). Returns 0 when inactive. */
int sk_failpoint_eval(const char *name);
/** @brief Log once, at a daemon's start, that this build has failpoints (DESIGN.md 15):
 *  `failpoints_active` (warn, with the spec) or `failpoints_compiled_in` (info). A build
 *  without failpoints logs nothing. Call from the main thread after the log is set up. */
void sk_failpoint_log_start(void);
extern int sk_failpoints_active;

#ifdef SK_FAILPOINTS_ENABLED
#define SK_FAILPOINT(name) (sk_failpoints_active ? sk_failpoint_eval(name) : 0)
#else
#define SK_FAILPOINT(name) 0
#endif
