#!/usr/bin/env bash
# 0382_consumer_between_statements.sh: seckill-consumer killed (SIGKILL via failpoint consumer.between_statements=exit)
# mid-burst, then replaced (DESIGN.md 8 "worker killed before/after commit"; 11).
# Asserts one order per purchase, none lost, none doubled, Redis = DB.
# fault: consumer SIGKILLed between the statements of its order transaction (consumer.between_statements=exit), then replaced
# Buckets: 1.
. "$(dirname "$0")/../support/ft.sh"
ft_init consumer_between_statements
ft_case_consumer_crash consumer.between_statements
ft_finish
