/* sk/dblock_holder.h: who holds a tb_lock row, and whether that holder is provably dead
 * (DESIGN.md 16 "Answers after an unknown COMMIT" (f); the table in ddl/0007_lock.sql,
 * widened by ddl/0011_lock_holder.sql).
 *
 * A holder is "host:boot_id:pid:start_ticks:seq":
 *   host         gethostname() reduced to [A-Za-z0-9._-] (never a ':'), at most 64 bytes;
 *   boot_id      /proc/sys/kernel/random/boot_id (36 bytes, a new one at every boot), or
 *                "-" when it cannot be read;
 *   pid          the taker's pid;
 *   start_ticks  field 22 of /proc/self/stat (the process's start time in clock ticks
 *                since boot), 0 when it cannot be read;
 *   seq          a per-process counter, so every lock object of one process has its own
 *                holder and two locks of one process exclude each other like two processes.
 *
 * A live row is taken over before its ttl only when its holder is provably dead (DESIGN.md
 * §16 (f)): the same host name as ours AND either another boot id (an earlier boot of this
 * host: every process of it is gone), or the same boot id (the same running kernel: a pid
 * means the same thing there) and no process has the pid, or the process that has it
 * started at other ticks (the pid was reused). Anything else waits for the ttl: another
 * host, an unknown boot id ("-" on either side), a holder of the old "host:pid:start_ms"
 * form, a live pid whose start time we cannot read. What the rule cannot tell apart, as
 * DESIGN.md accepts: a host cloned under the same name (another boot id, yet alive: give
 * clones their own host names) and two PID namespaces on one kernel under one host name
 * (containers sharing the host's UTS name but not its pids).
 *
 * Pure parsing and comparison, plus one reader of /proc; nothing here logs or touches the
 * database. Thread-safe. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "sk/err.h"

#define SK_DBLOCK_HOST_MAX 64           /* bytes of the host part */
#define SK_DBLOCK_BOOT_ID_MAX 36        /* a boot id's text form (8-4-4-4-12) */

/** The parts of a holder string (see the top). */
typedef struct {
        char host[SK_DBLOCK_HOST_MAX + 1];
        char boot_id[SK_DBLOCK_BOOT_ID_MAX + 1];       /* "-" when unknown */
        long pid;
        uint64_t start_ticks;                           /* 0 when unknown */
        uint64_t seq;
} sk_dblock_holder_t;

/** @brief How a caller learns about process @p pid: 1 = it exists and its start time (field
 *  22 of /proc/PID/stat, clock ticks since boot) is in *start_ticks; 0 = no process has that
 *  pid; -1 = cannot tell (e.g. /proc unreadable and the pid exists). @p arg is the caller's.
 *  sk_dblock_holder_probe_proc is the real one; tests pass their own. */
typedef int (*sk_dblock_probe_fn)(long pid, uint64_t *start_ticks, void *arg);

/** @brief This process's identity (host, boot id, pid, start ticks; seq 0), read once per
 *  process and cached. @p self is the caller's. Never fails: an unreadable boot id is "-",
 *  unreadable start ticks 0 (such holders are then never taken over early). Thread-safe. */
void sk_dblock_holder_self(sk_dblock_holder_t *self);

/** @brief A fresh holder string of this process into @p out (@p size >= 160 is always
 *  enough): sk_dblock_holder_self with the next seq of a process-wide counter (two calls
 *  never return the same string). Thread-safe. */
void sk_dblock_holder_make(char *out, size_t size);

/** @brief Write @p h as "host:boot_id:pid:start_ticks:seq" into @p out (@p size bytes,
 *  truncated only if @p size < 160). Pure, thread-safe. */
void sk_dblock_holder_format(const sk_dblock_holder_t *h, char *out, size_t size);

/** @brief Parse holder text @p s into @p out (the caller's). Every field must be present and
 *  well formed: host non-empty of [A-Za-z0-9._-] and at most 64 bytes, boot id "-" or 36
 *  bytes of [0-9a-f-], pid 1..2^31-1, start_ticks and seq decimal without sign.
 *  @returns SK_OK, or SK_EINVAL for anything else (the old "host:pid:start_ms" form too);
 *  @p out is then unspecified. Pure, thread-safe. */
sk_err_t sk_dblock_holder_parse(const char *s, sk_dblock_holder_t *out);

/** @brief The start time (field 22) from the text of a /proc/PID/stat file @p stat (NUL
 *  terminated; the command name in parentheses may hold spaces and ')', so fields are
 *  counted after the last ')'). @returns SK_OK with *start_ticks, or SK_EINVAL. Pure. */
sk_err_t sk_dblock_holder_stat_ticks(const char *stat, uint64_t *start_ticks);

/** @brief The real probe (sk_dblock_probe_fn) on this machine: reads /proc/PID/stat, and
 *  when it is missing asks kill(pid, 0) whether the pid is gone (ESRCH). @p arg unused.
 *  Thread-safe. */
int sk_dblock_holder_probe_proc(long pid, uint64_t *start_ticks, void *arg);

/** @brief 1 when holder text @p who is provably dead as seen from @p self (the rule at the
 *  top, asking @p probe about the pid), 0 when the caller must wait for the row's ttl
 *  (including: unparseable, another host or boot id, @p self's boot id unknown, the holder is
 *  @p self's own process (same pid and start ticks), the probe cannot tell, start ticks unknown on a live pid).
 *  DESIGN.md 16 (f). Thread-safe if @p probe is. */
int sk_dblock_holder_dead(const char *who, const sk_dblock_holder_t *self,
                          sk_dblock_probe_fn probe, void *arg);
