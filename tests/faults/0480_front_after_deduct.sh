#!/usr/bin/env bash
# 0480_front_after_deduct.sh: the front dies (SIGKILL, failpoint front.after_deduct=exit)
# after deduct.lua ran and before it published (DESIGN.md 8 "front killed after the
# deduct": the reconciler finds DEDUCTs with no outcome and re-drives them).
# A healthy front sells part of the stock, a second front with the failpoint dies on its
# first purchase, a third front sells the rest; after the reconciler's passes the
# voucher is sold out exactly, every 202 is accounted for and Redis = DB.
# fault: front SIGKILLed after deduct.lua, before publishing (failpoint front.after_deduct=exit); the reconciler re-drives
# Buckets: 4 (about half of the cases sell bucketed vouchers).
. "$(dirname "$0")/../support/ft.sh"
ft_init front_after_deduct
V=$(ft_voucher 80 4)
ft_consumer c1
ft_front f1
ft_buy f1 "$V" 1 40 8
ft_front f2 SECKILL_FAILPOINTS="front.after_deduct=exit"
ft_buy f2 "$V" 1001 16 8
ft_wait_exit f2 10 && ft_ok "front f2 died at front.after_deduct" || ft_fail "front f2 still alive"
ft_fault_over
ft_buy f1 "$V" 2001 120 8
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_settle 10
ft_check "$V" --sold-out
ft_check_me f1 "$V"
ft_finish
