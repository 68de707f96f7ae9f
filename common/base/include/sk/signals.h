/* sk/signals.h: the SIGINT/SIGTERM handler of the long-running binaries (STYLE.md 9):
 * the handler only sets a flag that the main loop polls; a second signal either marks
 * the flag 2 (abandon the drain, the loop decides) or ends the process at once.
 *
 * What it does not do: log (a handler may only call async-signal-safe functions; the
 * optional message goes out with one write(2) to stderr), drain anything, or handle
 * other signals (except ignoring SIGPIPE on request). One process-wide installation:
 * call it once, from the main thread, before starting other threads. */
#pragma once
#include <signal.h>
#include "sk/err.h"

/* Flags of sk_signals_install(). */
#define SK_SIGNALS_SECOND_EXITS 0x1 /* second signal: write exit_msg (if any), _exit(1) */
#define SK_SIGNALS_IGNORE_PIPE  0x2 /* SIGPIPE -> SIG_IGN: a write to a closed socket
                                     * returns EPIPE instead of killing the process */

/** @brief Install one handler for SIGINT and SIGTERM (each masks both while it runs,
 *  so the handler never nests). First signal: *@p flag = 1. A later signal (or any
 *  signal once the program itself set *@p flag non-zero): with SK_SIGNALS_SECOND_EXITS,
 *  write @p exit_msg (may be NULL) to fd 2 and _exit(1); without it, *@p flag = 2.
 *  @param flag      polled by the program; borrowed, must live until exit (a global).
 *  @param flags     SK_SIGNALS_* bits, or 0.
 *  @param exit_msg  borrowed, must live until exit (a string literal); its length is
 *                   taken now. Ignored without SK_SIGNALS_SECOND_EXITS.
 *  @returns SK_OK, or SK_EINVAL (flag NULL, or sigaction(2) refused: not transient).
 *  Not thread-safe: replaces the previous installation (one flag per process). */
sk_err_t sk_signals_install(volatile sig_atomic_t *flag, int flags, const char *exit_msg);
