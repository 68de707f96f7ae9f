#!/usr/bin/env bash
# 0380_consumer_before_commit.sh: seckill-consumer killed (SIGKILL via failpoint consumer.before_commit=exit)
# mid-burst, then replaced (DESIGN.md 8 "worker killed before/after commit"; 11).
# Asserts one order per purchase, none lost, none doubled, Redis = DB.
# fault: consumer SIGKILLed before its DB commit (consumer.before_commit=exit), then replaced
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
ft_init consumer_before_commit
ft_case_consumer_crash consumer.before_commit
ft_finish
