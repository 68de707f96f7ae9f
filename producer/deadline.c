/* producer/deadline.c: the deadline timer of seckill-front (DESIGN.md 8). Suspended
 * libmicrohttpd connections never time out, so at 2 x delivery timeout + 1 s this
 * thread answers the request 503 (PENDING when the purchase may have taken stock).
 * Never a rollback here: a later delivery report is still handled by publish.c, whose
 * answer fr_answer() then drops. The pending list itself is req.c's. */
#include <pthread.h>
#include <stdatomic.h>

#include "deadline.h"
#include "pool.h"
#include "req.h"
#include "sk/clock.h"
#include "sk/log.h"

static fr_thread_t t_timer;

/* The request_deadline WARN, rate-limited: one line per second at most, the
 * next one saying how many were not logged. A flood of slow lookups must not turn into
 * a flood of log lines. Timer thread only. */
static int64_t warn_last_ms;
static long warn_suppressed;

static void warn_deadline(const fr_req_t *req, int64_t now)
{
        if (warn_last_ms && now - warn_last_ms < 1000) {
                warn_suppressed++;
                return;
        }
        SK_LOG(SK_WARN, "request_deadline", "trace_id=%s order_id=%s kind=%d suppressed=%ld",
               req->st, req->so, (int)req->kind, warn_suppressed);
        warn_last_ms = now;
        warn_suppressed = 0;
}

static void *timer_main(void *arg)
{
        (void)arg;
        while (!fr_thread_stopping(&t_timer)) {
                int64_t now = sk_mono_ms();
                fr_req_t *req;

                while ((req = fr_pending_expired(now)) != NULL) {
                        warn_deadline(req, now);
                        if (fr_req_unanswered_state(req))
                                fr_answer_503(req, "timeout", "PENDING", "outcome not yet known");
                        else
                                fr_answer_503(req, "timeout", NULL, "lookup timed out");
                        fr_req_unref(req);
                }
                sk_sleep_ms(20, NULL);
        }
        return NULL;
}

int fr_deadline_start(void)
{
        return fr_thread_start(&t_timer, timer_main);
}

void fr_deadline_stop(void)
{
        fr_thread_stop(&t_timer);
}
