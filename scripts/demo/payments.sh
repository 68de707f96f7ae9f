# scripts/demo/payments.sh: the order lifecycle's part of the demo (DESIGN.md 13), sourced
# by run.sh (which defines say, warn, phase, DEMO_DIR, RUN, DB, HTTP_ADDR, SALE_VLIST,
# UNPAID_PCT, PAY_TIMEOUT_S, PAY_KEYS). The work itself is scripts/demo/payer.py, which pays
# as a payment provider would: signed callbacks (DESIGN.md 15) with the secret of PAY_KEYS.
#   payments_start   the payer in the background: every winner pays at once, except
#                    ~UNPAID_PCT% who never do (their orders close after PAY_TIMEOUT_S);
#                    one of those is paid late (signed after deadline + grace: refund_due)
#   payments_resale  after the sale: late buyers take the units the closes release, until
#                    no unit is left, no order is UNPAID and every logged 202 is decided
#                    (payer.py resale); their 202s join the log (sale/accepted-resale.tsv)
#   payments_stop    the payer finishes (after the drain) and prints its counts

payments_start() {
        python3 "$DEMO_DIR/payer.py" pay --db "$DB" --front "http://$HTTP_ADDR" --keys "$PAY_KEYS" \
                --unpaid-pct "$UNPAID_PCT" --grace-s "${SECKILL_PAY_GRACE_S:-0}" \
                --stop "$RUN/payer.stop" --out "$RUN/payer.json" > "$RUN/payer.log" 2>&1 9>&- &
        PAYER_PID=$!
        say "payer started: ~$UNPAID_PCT% of the winners never pay; payment window ${PAY_TIMEOUT_S}s"
}

payments_resale() {
        say "late buyers: buying what the closes release until no unit is left, no order is unpaid and every 202 is decided"
        python3 "$DEMO_DIR/payer.py" resale --db "$DB" --front "http://$HTTP_ADDR" --unpaid-pct "$UNPAID_PCT" \
                --vouchers "$SALE_VLIST" --tsv "$RUN/sale/accepted-resale.tsv" \
                --accepted "$RUN/sale/accepted-*.tsv" \
                --timeout-s $(( 3 * PAY_TIMEOUT_S + 60 )) > "$RUN/resale.json" 2> "$RUN/resale.log" ||
                warn "late buyers failed: $(tail -n 3 "$RUN/resale.log")"
        say "late buyers: $(cat "$RUN/resale.json" 2>/dev/null)"
        if grep -q '"stopped": "timeout"' "$RUN/resale.json" 2>/dev/null; then
                warn "late buyers stopped at their timeout with units or orders left (see resale.json): undersell likely"
        fi
        phase resale_end
}

payments_stop() {
        touch "$RUN/payer.stop"
        wait "$PAYER_PID" 2>/dev/null || warn "payer exited with an error: $(tail -n 3 "$RUN/payer.log")"
        PAYER_PID=
        say "payer: $(cat "$RUN/payer.json" 2>/dev/null)"
}
