#!/usr/bin/env bash
# 0381_consumer_after_commit.sh: seckill-consumer killed (SIGKILL via failpoint consumer.after_commit=exit)
# mid-burst, then replaced (DESIGN.md 8 "worker killed before/after commit"; 11).
# Asserts one order per purchase, none lost, none doubled, Redis = DB.
# fault: consumer SIGKILLed after its DB commit, before its offset is stored (consumer.after_commit=exit), then replaced
# Buckets: 4 (FT_BUCKETS, read by ft_voucher) (about half of the cases sell bucketed vouchers).
FT_BUCKETS=4
. "$(dirname "$0")/../support/ft.sh"
ft_init consumer_after_commit
ft_case_consumer_crash consumer.after_commit
ft_finish
