/* signals.c: flag-setting SIGINT/SIGTERM handler (sk/signals.h, STYLE.md 9). The
 * handler touches only the flag and, for the optional exit message, write(2) and
 * _exit(2), which are async-signal-safe (POSIX.1-2008 2.4.3). */
#include <string.h>
#include <unistd.h>

#include "sk/signals.h"

/* Set once by sk_signals_install() before the handler can run; read by the handler. */
static volatile sig_atomic_t *volatile g_flag;
static volatile int g_second_exits;
static const char *volatile g_exit_msg;
static volatile size_t g_exit_msg_len;

static void on_signal(int sig)
{
        (void)sig;
        if (*g_flag) {
                if (g_second_exits) {
                        if (g_exit_msg_len) {
                                ssize_t n = write(2, g_exit_msg, g_exit_msg_len);
                                (void)n;
                        }
                        _exit(1);
                }
                *g_flag = 2;
                return;
        }
        *g_flag = 1;
}

sk_err_t sk_signals_install(volatile sig_atomic_t *flag, int flags, const char *exit_msg)
{
        struct sigaction sa;
        sk_err_t err = SK_OK;

        if (!flag)
                return SK_EINVAL;
        g_flag = flag;
        g_second_exits = (flags & SK_SIGNALS_SECOND_EXITS) != 0;
        g_exit_msg = exit_msg;
        g_exit_msg_len = exit_msg && g_second_exits ? strlen(exit_msg) : 0;

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGINT);
        sigaddset(&sa.sa_mask, SIGTERM);
        /* Both are attempted even if the first fails, as the binaries always did. */
        if (sigaction(SIGINT, &sa, NULL) != 0)
                err = SK_EINVAL;
        if (sigaction(SIGTERM, &sa, NULL) != 0)
                err = SK_EINVAL;
        if ((flags & SK_SIGNALS_IGNORE_PIPE) && signal(SIGPIPE, SIG_IGN) == SIG_ERR)
                err = SK_EINVAL;
        return err;
}
