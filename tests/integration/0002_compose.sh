#!/usr/bin/env bash
# tests/integration/0002_compose.sh: docker-compose.yml describes the same stack as
# scripts/stack.sh (DESIGN.md 10). No Docker is needed: the file is parsed, not run.
#   - services kafka, mariadb and redis exist;
#   - each publishes exactly the port scripts/stack.sh uses (read from the script's
#     SECKILL_STACK_*_PORT defaults, not repeated here);
#   - Kafka has auto.create.topics.enable=false and Redis runs with noeviction.
# Parsed with python3 + PyYAML when available; always also with a small awk reader of
# this file's layout, and both readings must agree (so the fallback stays correct).
set -euo pipefail

SRC=${SK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
COMPOSE=$SRC/docker-compose.yml
STACK=$SRC/scripts/stack.sh
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -f $COMPOSE ]] || fail "missing $COMPOSE"
[[ -f $STACK ]] || fail "missing $STACK"

# Default ports as scripts/stack.sh defines them: NAME=${SECKILL_STACK_NAME_PORT:-N}.
stack_port() {
        local p
        p=$(sed -n "s/^[A-Z_]*=\${SECKILL_STACK_$1_PORT:-\([0-9]*\)}.*/\1/p" "$STACK" | head -n1)
        [[ -n $p ]] || fail "no default for SECKILL_STACK_$1_PORT in $STACK"
        echo "$p"
}
declare -A WANT=([redis]=$(stack_port REDIS) [mariadb]=$(stack_port MYSQL) [kafka]=$(stack_port KAFKA))
echo "scripts/stack.sh ports: redis=${WANT[redis]} mariadb=${WANT[mariadb]} kafka=${WANT[kafka]}"

# Normalised reading, one fact per line:
#   service NAME | port NAME HOSTPORT | autocreate VALUE | redis_policy VALUE
read_yaml() {
        python3 - "$COMPOSE" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
out = []
for name, svc in (doc.get("services") or {}).items():
    out.append("service %s" % name)
    for p in svc.get("ports") or []:
        if isinstance(p, dict):
            out.append("port %s %s" % (name, p.get("published")))
        else:
            parts = str(p).split("/")[0].split(":")
            out.append("port %s %s" % (name, parts[-2] if len(parts) >= 2 else parts[0]))
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    if "KAFKA_AUTO_CREATE_TOPICS_ENABLE" in env:
        out.append("autocreate %s" % str(env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"]).lower())
    cmd = svc.get("command") or []
    if isinstance(cmd, str):
        cmd = cmd.split()
    if "--maxmemory-policy" in cmd:
        out.append("redis_policy %s" % cmd[cmd.index("--maxmemory-policy") + 1])
print("\n".join(sorted(out)))
EOF
}

# The same facts for this file's layout: two-space service keys under "services:",
# short-syntax ports, environment as a mapping, command as a flow sequence.
read_awk() {
        awk '
        function unq(s) { gsub(/^[ \t]*-?[ \t]*"?|"?[ \t]*$/, "", s); return s }
        /^[^ #]/ { top = $1; svc = ""; key = ""; next }
        top == "services:" && /^  [A-Za-z0-9_.-]+:[ \t]*$/ {
                svc = $1; sub(/:$/, "", svc); print "service " svc; key = ""; next }
        svc != "" && /^    [A-Za-z_]+:/ { key = $1; sub(/:$/, "", key) }
        svc != "" && key == "ports" && /^      - / {
                s = unq($0); sub(/\/.*/, "", s); n = split(s, a, ":")
                print "port " svc " " (n >= 2 ? a[n-1] : a[1]) }
        svc != "" && /^      KAFKA_AUTO_CREATE_TOPICS_ENABLE:/ {
                v = $0; sub(/^[^:]*:/, "", v); v = unq(v); print "autocreate " tolower(v) }
        svc != "" && key == "command" { cmd[svc] = cmd[svc] $0 }
        END {
                for (s in cmd) if (match(cmd[s], /"--maxmemory-policy",[ \t]*"[a-z-]+"/)) {
                        v = substr(cmd[s], RSTART, RLENGTH); sub(/.*,[ \t]*"/, "", v); sub(/"$/, "", v)
                        print "redis_policy " v }
        }' "$COMPOSE" | sort
}

facts=$(read_awk)
if python3 -c 'import yaml' 2>/dev/null; then
        yfacts=$(read_yaml)
        if [[ $yfacts != "$facts" ]]; then
                diff <(echo "$yfacts") <(echo "$facts") >&2 || true
                fail "the YAML and awk readings of docker-compose.yml differ (left: PyYAML, right: awk)"
        fi
        echo "parsed with PyYAML and awk (agree)"
else
        echo "python3 yaml not available: parsed with awk only"
fi
echo "$facts"

for svc in kafka mariadb redis; do
        grep -qx "service $svc" <<<"$facts" || fail "service '$svc' missing from docker-compose.yml"
        ports=$(awk -v s="$svc" '$1 == "port" && $2 == s {print $3}' <<<"$facts" | sort -u | tr '\n' ' ')
        [[ $ports == "${WANT[$svc]} " ]] ||
                fail "$svc publishes '${ports% }', scripts/stack.sh uses ${WANT[$svc]}"
done
grep -qx 'autocreate false' <<<"$facts" || fail "kafka must set KAFKA_AUTO_CREATE_TOPICS_ENABLE: \"false\""
grep -qx 'redis_policy noeviction' <<<"$facts" || fail "redis must run with --maxmemory-policy noeviction"
echo "PASS: docker-compose.yml matches scripts/stack.sh"
