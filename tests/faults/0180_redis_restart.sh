#!/usr/bin/env bash
# 0180_redis_restart.sh: a private Redis (own redis-server on a spare port, no
# persistence) is killed and restarted empty in the middle of a sale (DESIGN.md 8
# "Redis lost data": meta missing -> 503, not 10004; --repair rebuilds stock and users
# from the DB). Afterwards the sale goes on and sells out exactly; every 202 is
# accounted for; Redis = DB.
# fault: private Redis (no persistence) SIGKILLed and restarted empty mid-sale, then reconciler --repair
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
ft_init redis_restart
ft_private_redis
V=$(ft_voucher 80)
ft_front f1
ft_consumer c1
ft_buy f1 "$V" 1 30 8
ft_buy f1 "$V" 1001 100 4 &
BUYER=$!
sleep 1
ft_private_redis_restart 1
ft_fault_over
wait "$BUYER"
# Meta is gone: the front must never answer 404/10004 (DESIGN.md 3). It answers 503
# until the repair -- or, since the breaker opened during the kill (mode auto, DESIGN.md
# 12), 200 CREATED (or 409 sold out) from the DB-only path while the voucher is in state
# db, and 202 again once the front's recovery rebuilt it.
code=$(curl -s -o "$FT_WORK/after.json" -w '%{http_code}' -m 20 -X POST -H "X-User-Id: 999999" \
        "http://${FT_ADDR[f1]}/api/v1/vouchers/$V/seckill")
case $code in
503|200|202|409) ft_ok "purchase while Redis has no meta: $code, never 404 ($(cat "$FT_WORK/after.json"))" ;;
*) ft_fail "purchase while Redis has no meta: $code ($(cat "$FT_WORK/after.json"))" ;;
esac
ft_settle 60 || ft_fail "202s not decided after the Redis restart"
ft_wait_state_redis "$V" 90 || ft_fail "voucher never came back to state redis after the Redis restart"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V"
# The repaired voucher sells again, and sells out exactly.
ft_buy f1 "$V" 2001 120 8
ft_settle 60 || ft_fail "202s after the repair not decided"
ft_reconcile 90 || ft_fail "reconciler after the second burst: last exit $FT_RECON_RC"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
