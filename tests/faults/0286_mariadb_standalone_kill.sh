#!/usr/bin/env bash
# 0286_mariadb_standalone_kill.sh: a standalone MariaDB, the book of record, crashes mid-sale
# (DESIGN.md 16 "What is promised": with innodb_flush_log_at_trx_commit=1 a transaction
# whose COMMIT returned OK survives a crash and restart of the server). The case runs its
# own mariadbd (never the machine's on 3306): a spare port, a datadir of its own made by
# mariadb-install-db under /tmp (the mysql user runs it; the datadir must exist before
# ft_init migrates, so it is not under FT_WORK), innodb_flush_log_at_trx_commit=1, the
# binlog off; SECKILL_MYSQL_URL points at it before ft.sh is sourced. While purchases,
# closes (unpaid orders past a 6 s deadline) and the provider's payment callbacks are in
# flight, mariadbd is SIGKILLed and restarted 5 s later (InnoDB crash recovery). While it is
# down the pipeline waits (503s are fine; nothing is decided). Checks: the services survive;
# every orders/me CREATED and every payment answered 200 PAID before the kill (and after)
# is in the recovered DB; every invariant of DESIGN.md 9 (ft_check); no purchase FAILED.
# fault: a standalone mariadbd (private, innodb_flush_log_at_trx_commit=1) SIGKILLed mid-sale with purchases, closes and payments in flight; restarted 5 s later
# Buckets: 2.
PRIV_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PRIV_DIR=$(mktemp -d /tmp/skf.0286db.XXXXXX)
chmod 0755 "$PRIV_DIR"
PRIV_PID=
# priv_start: mariadbd on PRIV_PORT as the mysql user, in the background; waits (60 s) for a ping.
priv_start() {
        local i
        /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$PRIV_DIR/data" \
                --socket="$PRIV_DIR/mariadbd.sock" --pid-file="$PRIV_DIR/mariadbd.pid" \
                --port="$PRIV_PORT" --bind-address=127.0.0.1 --skip-name-resolve --skip-log-bin \
                --innodb-buffer-pool-size=64M --innodb-flush-log-at-trx-commit=1 \
                --log-error="$PRIV_DIR/mariadbd.err" >/dev/null 2>&1 &
        PRIV_PID=$!
        for ((i = 0; i < 300; i++)); do
                mysqladmin --no-defaults --connect-timeout=2 --protocol=SOCKET -S "$PRIV_DIR/mariadbd.sock" \
                        -uroot ping >/dev/null 2>&1 && return 0
                kill -0 "$PRIV_PID" 2>/dev/null || return 1
                sleep 0.2
        done
        return 1
}
priv_stop() {
        [[ -n $PRIV_PID ]] && kill -TERM "$PRIV_PID" 2>/dev/null && wait "$PRIV_PID" 2>/dev/null
        PRIV_PID=
        rm -rf "$PRIV_DIR"
}
chown mysql:mysql "$PRIV_DIR"
mariadb-install-db --no-defaults --user=mysql --datadir="$PRIV_DIR/data" --skip-test-db \
        >"$PRIV_DIR/install-db.log" 2>&1 ||
        { tail -n 20 "$PRIV_DIR/install-db.log"; rm -rf "$PRIV_DIR"; echo "0286: mariadb-install-db failed"; exit 1; }
priv_start || { tail -n 20 "$PRIV_DIR/mariadbd.err"; priv_stop; echo "0286: private mariadbd did not start"; exit 1; }
# root over TCP from 127.0.0.1 without a password, like the stack (loopback only).
mysql --no-defaults --protocol=SOCKET -S "$PRIV_DIR/mariadbd.sock" -uroot -e "
        CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY '';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION" ||
        { priv_stop; echo "0286: root@127.0.0.1"; exit 1; }
export SECKILL_MYSQL_URL="mysql://root@127.0.0.1:$PRIV_PORT/seckill"
. "$(dirname "$0")/../support/ft.sh"
. "$(dirname "$0")/../support/ft_db.sh"
FT_CLEANUP_LAST+=(priv_stop)
ft_init mariadb_standalone_kill
[[ $FT_MYSQL_PORT == "$PRIV_PORT" && $FT_MYSQL_PORT != 3306 ]] || ft_die "not the private server: $FT_MYSQL_HOST:$FT_MYSQL_PORT"
ft_log "private mariadbd pid $PRIV_PID on 127.0.0.1:$PRIV_PORT ($(ft_sql_root "SELECT @@innodb_flush_log_at_trx_commit, @@version"))"

ft_db_services

ft_buy f1 "$V" 1 40 8
ft_settle 60 || ft_fail "first purchases not decided"
ft_db_sale f1 "$V" 1001
sleep 5
ft_db_wait_acknowledged 60 || ft_log "no orders/me CREATED and 200 PAID seen within 60 s: killing anyway"
kill -KILL "$PRIV_PID" || ft_fail "kill -KILL mariadbd $PRIV_PID"
wait "$PRIV_PID" 2>/dev/null
ft_log "mariadbd (pid $PRIV_PID) SIGKILLed"
ft_db_mark_before
ft_note "mariadbd SIGKILLed, restarted after 5 s"
sleep 5
ft_alive f1 && ft_alive c1 && ft_ok "the front and the consumer wait through the outage" ||
        ft_fail "a service died while the server was down"
priv_start || ft_die "mariadbd did not restart: $(tail -n 5 "$PRIV_DIR/mariadbd.err")"
ft_log "mariadbd restarted (pid $PRIV_PID): $(grep -c -i 'crash recovery\|Starting final batch\|redo log' "$PRIV_DIR/mariadbd.err") recovery line(s) in its log"
ft_fault_over
sleep 5
ft_db_sale_stop
ft_db_log_503
ft_alive f1 && ft_alive c1 && ft_ok "the front and the consumer are still up after the restart" ||
        ft_fail "a service died across the restart"

# What a client saw before the kill is in the DB after it.
ft_db_survived_before "$V"
ft_db_promised f1 "$V"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_seckill_outcome WHERE outcome = 2")" 0 \
        "no purchase failed (the outage is waited out, never turned into a business failure)"
ft_finish
