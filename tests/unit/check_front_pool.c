/* check_front_pool.c: the front's pool primitive and thread helper (producer/pool.h) and
 * the request list (producer/queue.h): every request queued before fr_pool_stop is
 * served (drained exit), batches never exceed batch_max, a request answered while it
 * waited is dropped unrun and counted where the pool asks for it (and run where it does
 * not), idle runs while there is no work, close once per thread, a bounded queue says
 * full, pushes after the stop are refused; the list keeps FIFO order; a thread stops
 * on its flag. No network: the hooks open no connection. */
#include <stdatomic.h>
#include <unistd.h>

#include "sk_test.h"
#include "front.h"
#include "metrics.h"
#include "pool.h"
#include "queue.h"
#include "req.h"

fr_config_t g_fr; /* main.c's, not linked */

static atomic_int served, batch_max_seen, idles, closes;

static void reset(void)
{
        atomic_store(&served, 0);
        atomic_store(&batch_max_seen, 0);
        atomic_store(&idles, 0);
        atomic_store(&closes, 0);
}

static void count_run(fr_conns_t *c, fr_req_t **batch, int n)
{
        int i;

        ck_assert_ptr_null(c->r);
        ck_assert_ptr_null(c->db);
        if (n > atomic_load(&batch_max_seen))
                atomic_store(&batch_max_seen, n);
        usleep(2000);   /* slow enough for requests to pile up into batches */
        for (i = 0; i < n; i++) {
                ck_assert_ptr_null(batch[i]->qnext);
                atomic_fetch_add(&served, 1);
                fr_req_done(batch[i]);
        }
}

static void count_idle(fr_conns_t *c)
{
        (void)c;
        atomic_fetch_add(&idles, 1);
}

static void count_close(fr_conns_t *c)
{
        (void)c;
        atomic_fetch_add(&closes, 1);
}

/* A request as an asynchronous pipeline holds it: the HTTP layer's reference and the
 * pipeline's (the one a pool takes over). */
static fr_req_t *new_req(void)
{
        fr_req_t *req = fr_req_new();

        ck_assert_ptr_nonnull(req);
        fr_req_ref(req);
        return req;
}

START_TEST(drained_exit_serves_every_queued_request)
{
        static const fr_pool_ops_t ops = { .run = count_run, .idle = count_idle,
                                           .close = count_close };
        static fr_pool_t pool;
        fr_req_t *reqs[40];
        int i;

        reset();
        ck_assert_int_eq(fr_pool_start(&pool, &ops, 2, 3), 0);
        for (i = 0; i < 40; i++)
                ck_assert_int_eq(fr_pool_push(&pool, reqs[i] = new_req()), 0);
        fr_pool_stop(&pool); /* closes, and returns only once the queue is drained */
        ck_assert_int_eq(atomic_load(&served), 40);
        ck_assert_int_le(atomic_load(&batch_max_seen), 3);
        ck_assert_int_ge(atomic_load(&batch_max_seen), 1);
        ck_assert_int_eq(atomic_load(&closes), 2);
        ck_assert_int_eq(fr_pool_depth(&pool), 0);
        for (i = 0; i < 40; i++)
                fr_req_unref(reqs[i]);
}
END_TEST

START_TEST(idle_runs_without_work)
{
        static const fr_pool_ops_t ops = { .run = count_run, .idle = count_idle };
        static fr_pool_t pool;

        reset();
        ck_assert_int_eq(fr_pool_start(&pool, &ops, 1, 1), 0);
        usleep(3 * FR_POOL_WAIT_MS * 1000);
        fr_pool_stop(&pool);
        ck_assert_int_ge(atomic_load(&idles), 2);
        ck_assert_int_eq(atomic_load(&served), 0);
}
END_TEST

/* Start a one-thread pool with @p ops, push three requests of which the second was
 * answered before it was queued, stop it. @returns what ran. */
static int run_with_one_answered(const fr_pool_ops_t *ops)
{
        static fr_pool_t pool;
        fr_req_t *reqs[3];
        int i;

        reset();
        for (i = 0; i < 3; i++)
                reqs[i] = new_req();
        ck_assert_int_eq(fr_answer(reqs[1], 503, NULL, 1), 1);
        ck_assert_int_eq(fr_pool_start(&pool, ops, 1, 1), 0);
        for (i = 0; i < 3; i++)
                ck_assert_int_eq(fr_pool_push(&pool, reqs[i]), 0);
        fr_pool_stop(&pool);
        for (i = 0; i < 3; i++)
                fr_req_unref(reqs[i]);
        return atomic_load(&served);
}

START_TEST(answered_request_dropped_unrun_and_counted)
{
        static const fr_pool_ops_t ops = { .run = count_run, .drop_answered = 1,
                                           .dropped = &fr_m.lk_dropped };
        int64_t before = sk_metric_value(fr_m.lk_dropped);

        ck_assert_int_eq(run_with_one_answered(&ops), 2);
        ck_assert_int_eq(sk_metric_value(fr_m.lk_dropped) - before, 1);
}
END_TEST

START_TEST(answered_request_runs_without_the_drop_rule)
{
        static const fr_pool_ops_t ops = { .run = count_run };

        ck_assert_int_eq(run_with_one_answered(&ops), 3);
}
END_TEST

/* Nothing serves the queue between start and the pushes here: one thread blocked in
 * run on the first request keeps the others waiting. */
static atomic_int hold;

static void hold_run(fr_conns_t *c, fr_req_t **batch, int n)
{
        (void)c;
        while (atomic_load(&hold))
                usleep(1000);
        for (int i = 0; i < n; i++)
                fr_req_done(batch[i]);
}

START_TEST(bounded_queue_full_and_closed)
{
        static const fr_pool_ops_t ops = { .run = hold_run };
        static fr_pool_t pool;
        fr_req_t *reqs[4];
        fr_req_t *late = new_req();
        int i;

        atomic_store(&hold, 1);
        ck_assert_int_eq(fr_pool_start(&pool, &ops, 1, 1), 0);
        ck_assert_int_eq(fr_pool_push(&pool, reqs[0] = new_req()), 0);
        while (fr_pool_depth(&pool) > 0) /* the thread holds it */
                usleep(1000);
        for (i = 1; i < 4; i++)
                ck_assert_int_eq(fr_pool_push(&pool, reqs[i] = new_req()), 0);
        ck_assert_int_eq(fr_pool_full(&pool, 3), 1);
        ck_assert_int_eq(fr_pool_full(&pool, 4), 0);
        atomic_store(&hold, 0);
        fr_pool_stop(&pool);
        ck_assert_int_eq(fr_pool_push(&pool, late), -1); /* stopped: nothing queued */
        fr_req_done(late);
        fr_req_unref(late);
        for (i = 0; i < 4; i++)
                fr_req_unref(reqs[i]);
}
END_TEST

START_TEST(list_keeps_fifo_order)
{
        fr_req_list_t l = { NULL, NULL };
        fr_req_t a = { 0 }, b = { 0 }, c = { 0 };

        ck_assert_ptr_null(fr_req_list_shift(&l));
        fr_req_list_append(&l, &a);
        fr_req_list_append(&l, &b);
        ck_assert_ptr_eq(fr_req_list_shift(&l), &a);
        ck_assert_ptr_null(a.qnext);
        fr_req_list_append(&l, &c);
        ck_assert_ptr_eq(fr_req_list_shift(&l), &b);
        ck_assert_ptr_eq(fr_req_list_shift(&l), &c);
        ck_assert_ptr_null(fr_req_list_shift(&l));
        ck_assert_ptr_null(l.tail);
}
END_TEST

static fr_thread_t th;
static atomic_int loops;

static void *loop_main(void *arg)
{
        (void)arg;
        while (!fr_thread_stopping(&th)) {
                atomic_fetch_add(&loops, 1);
                usleep(1000);
        }
        return NULL;
}

START_TEST(thread_stops_on_its_flag)
{
        ck_assert_int_eq(fr_thread_start(&th, loop_main), 0);
        while (atomic_load(&loops) == 0)
                usleep(1000);
        fr_thread_stop(&th);
        ck_assert_int_eq(fr_thread_stopping(&th), 1);
        fr_thread_stop(&th); /* a second stop is a no-op */
}
END_TEST

int main(void)
{
        Suite *s = suite_create("front_pool");
        TCase *tc = tcase_create("pool");

        fr_metrics_init();
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, drained_exit_serves_every_queued_request);
        tcase_add_test(tc, idle_runs_without_work);
        tcase_add_test(tc, answered_request_dropped_unrun_and_counted);
        tcase_add_test(tc, answered_request_runs_without_the_drop_rule);
        tcase_add_test(tc, bounded_queue_full_and_closed);
        tcase_add_test(tc, list_keeps_fifo_order);
        tcase_add_test(tc, thread_stops_on_its_flag);
        suite_add_tcase(s, tc);
        return sk_test_run(s);
}
