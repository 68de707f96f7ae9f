/* verify_print.c: sk_verify_print, the text and JSON report of a live invariant check
 * (sk/verify.h, DESIGN.md 9); the check itself is in verify.c. Writes only to the
 * caller's FILE; thread-safe as far as that FILE is. */
#include <inttypes.h>
#include <stdio.h>

#include "sk/ids.h"
#include "sk/verify.h"

static const char *pf(int ok)
{
        return ok ? "PASS" : "FAIL";
}

/* The bucket rows as a JSON array (DESIGN.md 9: invariant 1 per bucket). */
static void print_buckets_json(FILE *out, const sk_verify_report_t *rep)
{
        fprintf(out, ",\"buckets\":%d,\"bucketRows\":[", rep->buckets);
        for (int b = 0; b < rep->buckets && b < SK_BUCKETS_MAX; b++)
                fprintf(out, "%s{\"bucket\":%d,\"initStock\":%" PRId64 ",\"dbStock\":%" PRId64
                        ",\"activeOrders\":%" PRId64 ",\"redisStock\":%" PRId64 "}", b ? "," : "",
                        b, rep->bucket_init[b], rep->bucket_stock[b], rep->bucket_active[b],
                        rep->redis_bucket_stock[b]);
        fprintf(out, "],\"bucketInitSum\":%" PRId64 ",\"inv1Buckets\":%s", rep->bucket_init_sum,
                rep->inv1_buckets_ok ? "true" : "false");
}

int sk_verify_passed(const sk_verify_report_t *rep, int quiesced)
{
        return rep->live_ok && (!quiesced || rep->inv3_quiesced_ok);
}

void sk_verify_print(FILE *out, const sk_verify_report_t *rep, int json, int quiesced)
{
        char vid[SK_ID_STRLEN];
        const char *inv3 = !quiesced ? "null" : rep->inv3_quiesced_ok ? "true" : "false";
        int ok = sk_verify_passed(rep, quiesced);

        sk_id_format(rep->voucher_id, vid);
        if (json) {
                char rstock[32] = "null";
                if (!rep->redis_stock_missing)
                        snprintf(rstock, sizeof(rstock), "%" PRId64, rep->redis_stock);
                fprintf(out, "{\"voucherId\":\"%s\"", vid);
                print_buckets_json(out, rep);
                fprintf(out,
                        ",\"ok\":%s,\"initStock\":%" PRId64
                        ",\"dbStock\":%" PRId64 ",\"redisStock\":%s"
                        ",\"metaStatus\":%d,\"activeOrders\":%" PRId64
                        ",\"activeBuyers\":%" PRId64 ",\"usersInHash\":%" PRId64
                        ",\"duplicateUsers\":%" PRId64 ",\"usersNotActive\":%" PRId64
                        ",\"activeNotInHash\":%" PRId64 ",\"usersWrongHome\":%" PRId64
                        ",\"undecidedTraces\":%" PRId64
                        ",\"pendingRollbacks\":%" PRId64 ",\"heldQty\":%" PRId64
                        ",\"expectedRedisStock\":%" PRId64 ",\"traceEntries\":%" PRId64 ",\"lateOrders\":%" PRId64
                        ",\"endedOrders\":%" PRId64 ",\"endedWithoutRestore\":%" PRId64
                        ",\"releasesPending\":%" PRId64
                        ",\"restoreNotEnded\":%" PRId64 ",\"paidAndEnded\":%" PRId64
                        ",\"redisStable\":%s,\"quiesced\":%s,\"invariants\":{\"1\":%s,\"2\":%s,\"3\":%s,"
                        "\"4\":%s,\"6\":%s,\"activeLeInit\":%s}}\n",
                        ok ? "true" : "false", rep->init_stock, rep->db_stock,
                        rstock, rep->meta_status, rep->active_orders, rep->active_buyers,
                        rep->users_in_hash, rep->duplicate_users, rep->users_not_active,
                        rep->active_not_in_hash, rep->users_wrong_home, rep->undecided_traces,
                        rep->pending_rollbacks,
                        rep->held_qty, rep->expected_redis_stock, rep->trace_entries, rep->late_orders,
                        rep->ended_orders, rep->ended_no_restore, rep->ended_no_release,
                        rep->restore_not_ended,
                        rep->paid_and_ended, rep->redis_stable ? "true" : "false",
                        quiesced ? "true" : "false",
                        rep->inv1_ok ? "true" : "false", rep->inv2_ok ? "true" : "false",
                        inv3, rep->inv4_ok ? "true" : "false",
                        rep->inv6_ok ? "true" : "false", rep->active_le_init_ok ? "true" : "false");
                return;
        }
        fprintf(out, "voucher %s\n", vid);
        fprintf(out, "  init stock            %" PRId64 "\n", rep->init_stock);
        fprintf(out, "  DB stock              %" PRId64 "\n", rep->db_stock);
        fprintf(out, "  buckets               %d (%d rows, init sum %" PRId64 ")\n", rep->buckets,
                rep->bucket_rows, rep->bucket_init_sum);
        for (int b = 0; b < rep->buckets && b < SK_BUCKETS_MAX; b++)
                fprintf(out, "    bucket %-2d init %" PRId64 " stock %" PRId64 " active %" PRId64
                        " redis %" PRId64 "%s\n", b, rep->bucket_init[b], rep->bucket_stock[b],
                        rep->bucket_active[b], rep->redis_bucket_stock[b],
                        rep->bucket_init[b] - rep->bucket_stock[b] == rep->bucket_active[b] ? "" : "  MISMATCH");
        if (rep->redis_stock_missing)
                fprintf(out, "  Redis stock           (missing)\n");
        else
                fprintf(out, "  Redis stock           %" PRId64 "\n", rep->redis_stock);
        fprintf(out, "  expected Redis stock  %" PRId64 " (DB stock - %" PRId64 " held)\n",
                rep->expected_redis_stock, rep->held_qty);
        fprintf(out, "  Redis meta status     %d%s\n", rep->meta_status,
                rep->meta_status == 0 ? " (missing)" : "");
        fprintf(out, "  active orders         %" PRId64 "\n", rep->active_orders);
        fprintf(out, "  active buyers         %" PRId64 "\n", rep->active_buyers);
        fprintf(out, "  users in hash         %" PRId64 "\n", rep->users_in_hash);
        fprintf(out, "  duplicate users       %" PRId64 "\n", rep->duplicate_users);
        fprintf(out, "  hash users not active %" PRId64 "\n", rep->users_not_active);
        fprintf(out, "  active not in hash    %" PRId64 "\n", rep->active_not_in_hash);
        if (rep->users_wrong_home)
                fprintf(out, "  users not in home     %" PRId64 "\n", rep->users_wrong_home);
        fprintf(out, "  undecided traces      %" PRId64 "\n", rep->undecided_traces);
        fprintf(out, "  pending rollbacks     %" PRId64 "\n", rep->pending_rollbacks);
        fprintf(out, "  trace entries         %" PRId64 "\n", rep->trace_entries);
        if (rep->late_orders)
                fprintf(out, "  orders after snapshot %" PRId64 " (not compared)\n", rep->late_orders);
        fprintf(out, "  cancelled/closed      %" PRId64 "\n", rep->ended_orders);
        fprintf(out, "  ended without RESTORE %" PRId64 "\n", rep->ended_no_restore);
        fprintf(out, "  RESTORE, not ended    %" PRId64 "\n", rep->restore_not_ended);
        if (rep->ended_no_release)
                fprintf(out, "  release pending       %" PRId64 " (no T:x in Redis yet: the closer or"
                        " the reconciler finishes it)\n", rep->ended_no_release);
        fprintf(out, "  paid and ended / late %" PRId64 "\n", rep->paid_and_ended);
        fprintf(out, "  1 init - stock = active, per bucket %s\n", pf(rep->inv1_ok));
        fprintf(out, "  2 one active order per user        %s\n", pf(rep->inv2_ok));
        if (quiesced)
                fprintf(out, "  3 Redis stock and users = DB truth %s%s\n",
                        pf(rep->inv3_quiesced_ok),
                        rep->redis_stable ? "" : " (Redis kept changing: traffic is flowing)");
        else
                fprintf(out, "  3 Redis stock and users = DB truth (not judged on a live sale:"
                        " --quiesced; in-flight accounted: %s)\n", pf(rep->inv3_ok));
        fprintf(out, "  active <= init                     %s\n", pf(rep->active_le_init_ok));
        fprintf(out, "  4 cancelled/closed: RESTORE, unit  %s\n", pf(rep->inv4_ok));
        fprintf(out, "  6 never both paid and closed       %s\n", pf(rep->inv6_ok));
        fprintf(out, "%s\n", ok ? "OK" : "FAILED");
}
