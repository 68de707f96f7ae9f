/* sk_test_proc.h: child processes of a test (the binaries under test, a private
 * redis-server): spawn with the run's SECKILL_* names and a log, wait with a timeout,
 * stop (SIGTERM, then SIGKILL), and reap whatever a failed check left running. Not
 * thread-safe: call from the test's main thread. */
#pragma once
#include <stddef.h>
#include <sys/types.h>
#include "sk/conf.h"

/** What to start (sk_test_spawn). Zero fields mean "none" / the default. */
typedef struct sk_test_spawn {
        const char *bin;          /**< file name under $SK_BIN (default build/bin) */
        const sk_conf_t *conf;    /**< the run's names; NULL: the fixture's (sk_test_fx) */
        const char *const *args;  /**< NULL-terminated, after argv[0]; may be NULL */
        const char *const *env;   /**< "NAME=VALUE" set, "NAME" unset, applied last */
        const char *group;        /**< SECKILL_GROUP_ID instead of conf's group */
        const char *failpoints;   /**< SECKILL_FAILPOINTS; NULL: unset */
        const char *log_path;     /**< stdout and stderr appended there */
        int *out_fd;              /**< without log_path: stdout into a pipe, its read end
                                   *   here (caller closes); NULL: stdout to stderr */
        int names_only;           /**< 1: only prefix, topic, group and MySQL URL from conf
                                   *   (Redis, brokers, timeouts inherited: the front) */
} sk_test_spawn_t;

/** @brief Fork and exec $SK_BIN/@p o->bin. The child gets from the conf:
 *  SECKILL_REDIS_PREFIX, _TOPIC, _GROUP_ID, _MYSQL_URL and, unless names_only,
 *  _REDIS_URL, _KAFKA_BROKERS, _TOPIC_PARTITIONS, _KAFKA_DELIVERY_TIMEOUT_MS,
 *  _RECONCILE_WINDOW_HOURS and _METRICS_ADDR=off; then failpoints, then @p o->env.
 *  The child is remembered for sk_test_reap_all(). Aborts the test if fork fails.
 *  @returns the child's pid. */
pid_t sk_test_spawn(const sk_test_spawn_t *o);
/** @brief Wait up to @p timeout_s (s) for @p pid. @returns its raw wait status
 *  (WIFEXITED...), or -1 on timeout (the child is left running) or error. */
int sk_test_wait(pid_t pid, int timeout_s);
/** @brief Wait up to @p timeout_s (s) for @p pid, SIGKILL it then. @returns its exit
 *  code, or 128 + the signal that ended it. */
int sk_test_wait_exit(pid_t pid, int timeout_s);
/** @brief SIGTERM @p pid and wait up to @p timeout_s (s); then SIGKILL and reap.
 *  @returns the raw wait status (0: exited 0), -1 for @p pid <= 0. */
int sk_test_stop(pid_t pid, int timeout_s);
/** @brief SIGKILL and reap every child sk_test_spawn started that is still unreaped:
 *  the teardown's, and a test's first step when an earlier test of the binary (CK_NOFORK)
 *  failed a check before its own stop. The private redis-server (sk_test_redis_start)
 *  and socat proxies are not among them. */
void sk_test_reap_all(void);
/** @brief The path of one log file of this run, "$SK_BUILD/<name>_<pid>.log" (/tmp
 *  without SK_BUILD): <name> from the printf-style @p fmt (e.g. "front_0408_%s"),
 *  <pid> this process's, so runs side by side never share a log. Written into @p out
 *  (@p cap bytes, truncated). @returns @p out. */
char *sk_test_log_path(char *out, size_t cap, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/** @brief Read @p fd into @p buf (NUL-terminated, @p size bytes) until EOF or
 *  @p timeout_s (s); closes @p fd. */
void sk_test_read_all(int fd, char *buf, size_t size, int timeout_s);
/** @brief How many times @p needle occurs in the file @p path (a service's log, read
 *  whole, up to 4 MiB); 0 when the file is missing. */
int sk_test_file_count(const char *path, const char *needle);
/** @brief A socat TCP proxy 127.0.0.1:@p listen -> 127.0.0.1:@p to (one child per
 *  connection), in its own process group so a test can freeze the whole group (kill
 *  -STOP -pid) to cut a service off without closing its connections. Waits until it
 *  listens (5 s, else the test fails). @returns its pid (= its process group). */
pid_t sk_test_proxy_start(int listen, int to);
/** @brief A free TCP port on 127.0.0.1 (bound, read, closed). Aborts the test if none;
 *  callable from main() too. */
int sk_test_free_port(void);
/** @brief The operations port (SECKILL_OPS_ADDR: /healthz, /readyz, /metrics; DESIGN.md
 *  15) of the front whose API listens on @p api_port, as sk_test_spawn chose it; @p
 *  api_port itself when no front of this process was started on it. */
int sk_test_ops_port(int api_port);
/** @brief Start a PRIVATE redis-server (never the shared one) on @p port (0: a free
 *  one), no persistence, noeviction, plus @p extra_args (NULL-terminated, may be NULL),
 *  and point @p conf's Redis URL at it. Aborts the test if it does not answer within
 *  5 s; callable from main() too. @returns its pid (sk_test_redis_stop()). */
pid_t sk_test_redis_start(sk_conf_t *conf, int port, const char *const *extra_args);
/** @brief Stop the private redis-server *@p pid: SIGCONT (it may be frozen), SIGTERM,
 *  reap; then *@p pid = 0. No-op when *@p pid <= 0. */
void sk_test_redis_stop(pid_t *pid);
