#!/usr/bin/env bash
# 0383_consumer_db_conn_killed.sh: the consumer's MariaDB connection is killed
# (KILL CONNECTION) inside its order transaction, several times, mid-burst.
# consumer.between_statements=sleep(500) holds each transaction open after the outcome
# insert so the test finds it in information_schema.innodb_trx (DESIGN.md 8: 2013/2006
# are transient: roll back, retry the whole transaction from BEGIN, never touch Redis).
# fault: the consumer's MariaDB connection killed (KILL CONNECTION) inside its order transaction, up to 4 times mid-burst
# Buckets: 4 (about half of the cases sell bucketed vouchers).
. "$(dirname "$0")/../support/ft.sh"
ft_init consumer_db_conn_killed
V=$(ft_voucher 60 4)
ft_front f1
ft_consumer c1 SECKILL_FAILPOINTS="consumer.between_statements=sleep(500)" -- --batch-max 5
ft_buy f1 "$V" 1 10 4
ft_buy f1 "$V" 1001 100 8 &
BUYER=$!
KILLS=0
T0=$SECONDS
while ((KILLS < 4 && SECONDS - T0 < 40)); do
        id=$(ft_sql_root "SELECT p.id FROM information_schema.innodb_trx t
                JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
                WHERE p.db = '$FT_DB' LIMIT 1" 2>/dev/null)
        if [[ -n $id ]]; then
                if ft_sql_root "KILL CONNECTION $id" 2>/dev/null; then
                        KILLS=$((KILLS + 1))
                        ft_log "killed connection $id inside a transaction ($KILLS)"
                        sleep 1
                fi
        fi
        sleep 0.2   # MariaDB refreshes its innodb_trx cache at most every 100 ms
done
wait "$BUYER"
ft_fault_over
((KILLS >= 2)) && ft_ok "killed $KILLS connections inside transactions" || ft_fail "only $KILLS connection kill(s)"
ft_alive c1 && ft_ok "consumer survived the killed connections" || ft_fail "consumer exited: $(tail -n 5 "$FT_WORK/c1.log")"
ft_settle 60 || ft_fail "202s not decided"
ft_reconcile 90 || ft_fail "reconciler never reached a consistent pass (last exit $FT_RECON_RC)"
ft_check "$V" --sold-out
ft_check_me f1 "$V"
n=$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 2")
ft_eq "$n" 0 "no purchase failed (a lost connection is transient)"
n=$(timeout 20 "$FT_TOOL" count "$SECKILL_KAFKA_BROKERS" "$FT_TOPIC.dlq" 2>/dev/null || echo 0)
ft_eq "$n" 0 "nothing went to the DLQ"
ft_finish
