#!/usr/bin/env bash
# 0313_kafka_properties_file.sh: SECKILL_KAFKA_PROPERTIES_FILE (DESIGN.md 15 "Hardening
# rules": Kafka client secrets never only on a command line, where /proc/PID/cmdline and
# `systemctl show` print them). With the real front, consumer and broker:
#   - a file others may read (0644) or with a line that is not key=value: the front exits
#     2 with one line naming the file (and the mode or the line number), never its text;
#   - the file reaches librdkafka: security.protocol=ssl from it makes the front's client
#     talk TLS to the plaintext broker (an SSL handshake failure in its log);
#   - a -X of the same key wins over the file (applied after it): with
#     -X security.protocol=plaintext the same file sells, 202 then an order; the secret
#     of the file (sasl.password) is in no log line, not in --print-config (***), not in
#     the process's command line or environment.
. "$(dirname "$0")/../support/ft.sh"
ft_init kafka_properties_file

SECRET=hunter2-0312-$RANDOM$RANDOM
PROPS=$FT_WORK/kafka.properties
printf '# the SASL secret, off the command line\nsecurity.protocol = ssl\nsasl.password=%s\n\n! a comment too\n' \
        "$SECRET" >"$PROPS"
front() { SECKILL_AUTH=trusted-header SECKILL_TRUSTED_PROXIES=127.0.0.1/32 \
        timeout 60 "$FT_BIN/seckill-front" --http-addr "127.0.0.1:$(ft_free_port)" "$@"; }

# --- refused files ---------------------------------------------------------------------
chmod 0644 "$PROPS"
SECKILL_KAFKA_PROPERTIES_FILE=$PROPS front >"$FT_WORK/o" 2>"$FT_WORK/e"
ft_eq "$?" 2 "a file others may read: exit 2"
grep -q "SECKILL_KAFKA_PROPERTIES_FILE=$PROPS has mode 0644" "$FT_WORK/e" && ft_ok "the line names the file and its mode" ||
        ft_fail "refusal: $(cat "$FT_WORK/e")"
chmod 0640 "$PROPS"
printf 'client.id=x\n%s\n' "$SECRET" >"$FT_WORK/bad.properties"
chmod 0600 "$FT_WORK/bad.properties"
front --kafka-properties-file "$FT_WORK/bad.properties" >"$FT_WORK/o" 2>"$FT_WORK/e"
ft_eq "$?" 2 "a line that is not key=value: exit 2"
grep -q "line 2: not key=value" "$FT_WORK/e" && ft_ok "the line names the line number" || ft_fail "refusal: $(cat "$FT_WORK/e")"
ft_eq "$(cat "$FT_WORK/o" "$FT_WORK/e" | grep -c "$SECRET")" 0 "the bad line's text is not echoed"

# --- the file reaches librdkafka ----------------------------------------------------------
SECKILL_OPS_ADDR=127.0.0.1:$(ft_free_port) SECKILL_KAFKA_PROPERTIES_FILE=$PROPS SECKILL_AUTH=trusted-header \
        SECKILL_TRUSTED_PROXIES=127.0.0.1/32 "$FT_BIN/seckill-front" --http-addr "127.0.0.1:$(ft_free_port)" \
        >"$FT_WORK/ssl.log" 2>&1 &
ssl_pid=$!
for ((i = 0; i < 300; i++)); do grep -q 'ssl://.*SSL' "$FT_WORK/ssl.log" && break; sleep 0.1; done
grep -q 'ssl://.*SSL' "$FT_WORK/ssl.log" && ft_ok "security.protocol=ssl from the file: the client talked TLS" ||
        ft_fail "no TLS attempt in the log: $(tail -n 5 "$FT_WORK/ssl.log")"
kill -9 "$ssl_pid" 2>/dev/null
wait "$ssl_pid" 2>/dev/null

# --- -X wins; the secret stays out of sight -----------------------------------------------
ft_eq "$(SECKILL_KAFKA_PROPERTIES_FILE=$PROPS "$FT_BIN/seckill-front" -X security.protocol=plaintext --print-config | grep -E '^(-X|SECKILL_KAFKA_PROPERTIES_FILE)' | tr '\n' ' ')" \
        "SECKILL_KAFKA_PROPERTIES_FILE=$PROPS -X security.protocol=ssl -X sasl.password=*** -X security.protocol=plaintext " \
        "--print-config: the file's properties first, masked, then -X"
ft_front f SECKILL_KAFKA_PROPERTIES_FILE="$PROPS" -- -X security.protocol=plaintext
ft_consumer c SECKILL_KAFKA_PROPERTIES_FILE="$PROPS" -- -X security.protocol=plaintext
V=$(ft_voucher 5)
ft_buy f "$V" 1 2 2
ft_eq "$(wc -l <"$FT_WORK/accepted.tsv")" 2 "two purchases: 202"
ft_settle 60 || ft_fail "purchases not settled"
ft_eq "$(ft_sql "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $V")" 2 "two orders through the consumer"
ft_eq "$(tr '\0' '\n' </proc/"${FT_PID[f]}"/cmdline | grep -c "$SECRET")" 0 "the secret is not on the front's command line"
ft_eq "$(tr '\0' '\n' </proc/"${FT_PID[f]}"/environ | grep -c "$SECRET")" 0 "nor in its environment"
ft_eq "$(cat "$FT_WORK"/*.log | grep -c "$SECRET")" 0 "nor in any log"
ft_check "$V"
ft_finish
