#!/usr/bin/env bash
# scripts/stack.sh: the local stack of DESIGN.md 10 on one Debian 12 host.
#
#   Redis 7     127.0.0.1:6379  (maxmemory-policy noeviction, no persistence when we start it)
#   MariaDB     127.0.0.1:3306  (root, no password, over TCP)
#   Kafka 3.9.1 127.0.0.1:9092  single-node KRaft (controller 9093), auto.create.topics.enable=false
#
# A service already answering on its port is used as it is ("not started by us"); only
# Redis's maxmemory-policy is changed if needed (CONFIG SET) and MariaDB's root is given a
# passwordless TCP login if it has none. Otherwise the service is installed from Debian's
# packages (Kafka: its jars from Maven Central, scripts/kafka/pom.xml) and started, and
# its pid file goes into the state dir. `down` stops only what has a pid file there.
#
# What this script deliberately does not do: use Docker (docker-compose.yml describes
# the same stack for users who have it), or touch a service it did not start beyond the
# two settings above.
#
# Environment (all optional):
#   SECKILL_STACK_DIR                    state: jars, data, logs, pid files ($REPO/.stack)
#   SECKILL_STACK_REDIS_PORT             6379  (not 6379: a private redis-server)
#   SECKILL_STACK_MYSQL_PORT             3306  (not 3306: a private mariadbd and datadir)
#   SECKILL_STACK_KAFKA_PORT             9092
#   SECKILL_STACK_KAFKA_CONTROLLER_PORT  9093
#   SECKILL_STACK_KAFKA_TIMEOUT_S        120   readiness wait of the broker
#   SECKILL_STACK_MVN_OPTS               extra mvn options, e.g. -Dmaven.repo.local=/tmp/m2
#   SECKILL_STACK_REDIS                  standalone (default) | cluster | sentinel: 'up' also
#                                        starts that Redis topology (DESIGN.md 4b, 10; see
#                                        scripts/stack/redis_topo.sh for its ports)
#   SECKILL_STACK_DB                     standalone (default) | galera: 'up' also starts the
#                                        three-node Galera cluster (DESIGN.md 10, 16; see
#                                        scripts/stack/galera.sh), 'env' prints its URL
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$REPO/scripts/lib/apt.sh"
STACK_DIR=${SECKILL_STACK_DIR:-$REPO/.stack}
HOST=127.0.0.1
REDIS_PORT=${SECKILL_STACK_REDIS_PORT:-6379}
MYSQL_PORT=${SECKILL_STACK_MYSQL_PORT:-3306}
KAFKA_PORT=${SECKILL_STACK_KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${SECKILL_STACK_KAFKA_CONTROLLER_PORT:-9093}
KAFKA_TIMEOUT_S=${SECKILL_STACK_KAFKA_TIMEOUT_S:-120}
MVN_OPTS=${SECKILL_STACK_MVN_OPTS:-}
REDIS_TOPOLOGY=${SECKILL_STACK_REDIS:-standalone}
DB_TOPOLOGY=${SECKILL_STACK_DB:-standalone}

RUN_DIR=$STACK_DIR/run
LOG_DIR=$STACK_DIR/logs
KAFKA_DIR=$STACK_DIR/kafka
KAFKA_LIBS=$KAFKA_DIR/libs
KAFKA_DATA=$KAFKA_DIR/data
KAFKA_CONF=$KAFKA_DIR/server.properties
KAFKA_LOG4J=$KAFKA_DIR/log4j.properties
TOOLS_LOG4J=$KAFKA_DIR/tools-log4j.properties
KAFKA_LOG=$LOG_DIR/kafka.log
KAFKA_OUT=$LOG_DIR/kafka.out
KAFKA_PID=$RUN_DIR/kafka.pid
REDIS_PID=$RUN_DIR/redis.pid
REDIS_LOG=$LOG_DIR/redis.log
MARIADB_PID=$RUN_DIR/mariadb.pid
MARIADB_LOG=$LOG_DIR/mariadb.err
# A non-default MariaDB port gets a private instance (its own datadir and socket), so a
# second server can be tried next to the system one; the mysql user must be able to
# reach the state dir then (e.g. SECKILL_STACK_DIR under /tmp).
MYSQL_PRIVATE=0
[[ $MYSQL_PORT != 3306 ]] && MYSQL_PRIVATE=1
MYSQL_PRIV_DIR=$STACK_DIR/mysql

SUDO=
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null 2>&1; then
        SUDO=sudo
fi

say() { printf 'stack: %s\n' "$*"; }
warn() { printf 'stack: warning: %s\n' "$*" >&2; }
die() { printf 'stack: error: %s\n' "$*" >&2; exit 1; }

usage() {
        cat <<EOF
usage: scripts/stack.sh COMMAND

  up                      start what is not running (idempotent); wait until ready
                          (SECKILL_STACK_REDIS=cluster|sentinel: also that Redis topology)
  up cluster|sentinel     start only that Redis topology (or restart its missing nodes);
                          prints the topology (masters, replicas, Sentinels) and its
                          SECKILL_REDIS_URL (cluster: 3 masters with 2 replicas each on
                          127.0.0.1:7000-7008; sentinel: master 6390, replicas 6391-6392,
                          Sentinels 26390-26392)
  up redis                only Redis (SECKILL_STACK_REDIS_PORT other than 6379: a private
                          redis-server with the stack's settings; bench/windows.sh)
  down [SERVICE...]       stop what 'up' started (all, or redis|mariadb|kafka|cluster|sentinel|galera)
  galera up|down|status|env|kill N
                          only the three Galera nodes (127.0.0.1:3311-3313), nothing else;
                          'up' prints the SECKILL_MYSQL_URL; 'kill N' SIGKILLs node N
  status                  what runs where; exit 0 iff redis, mariadb and kafka are up
  env                     print export lines for the SECKILL_* endpoints of this stack
  topics TOPIC PARTITIONS create TOPIC and TOPIC.dlq if missing (same partition count)
  kafka-stop|kafka-start  stop (SIGTERM, data kept) or start again our own broker
  kafka-kill              SIGKILL our own broker (data kept)
  kafka-freeze|kafka-thaw SIGSTOP / SIGCONT our own broker
EOF
}

# ---------------------------------------------------------------------------------------
# Generic helpers

# Install the Debian packages of "$@" that are not installed yet (scripts/lib/apt.sh).
ensure_pkgs() {
        local missing=()
        mapfile -t missing < <(sk_apt_missing "$@")
        [[ ${#missing[@]} -eq 0 ]] && return 0
        say "installing ${missing[*]}"
        sk_apt_install "" "${missing[@]}" || die "cannot install ${missing[*]}"
}

# Run "$@" with every file descriptor above 2 closed. A daemon that forks itself
# (redis-server --daemonize yes) keeps what it inherits: it must not hold our lock (fd 9,
# with_lock) nor a lock of whoever called us (e.g. a wrapper that serialises stack
# changes with flock on its own fd), or that lock stays taken as long as the daemon runs.
# (start-stop-daemon --background closes them itself.)
detached() {
        (
                for fd in /proc/self/fd/*; do
                        fd=${fd##*/}
                        [[ $fd =~ ^[0-9]+$ ]] && ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
                done
                exec "$@"
        )
}

# True when something accepts TCP connections on $1:$2 (bash's /dev/tcp, no extra tool).
port_open() {
        timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

# Pid of the process listening on TCP port $1, or "-" when unknown.
port_pid() {
        local port=$1 pid=
        if command -v ss >/dev/null 2>&1; then
                pid=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2 || true)
        fi
        if [[ -z $pid && -r /proc/net/tcp ]]; then
                # Listening sockets (state 0A) on the port, then the process holding the inode.
                local hex inode fd
                hex=$(printf '%04X' "$port")
                inode=$(awk -v p=":$hex" '$4=="0A" && substr($2, length($2)-4)==p {print $10; exit}' \
                        /proc/net/tcp /proc/net/tcp6 2>/dev/null || true)
                if [[ -n $inode && $inode != 0 ]]; then
                        for fd in /proc/[0-9]*/fd/*; do
                                if [[ $(readlink "$fd" 2>/dev/null) == "socket:[$inode]" ]]; then
                                        pid=${fd#/proc/}; pid=${pid%%/*}; break
                                fi
                        done
                fi
        fi
        echo "${pid:--}"
}

# State letter of process $1 (R, S, T, Z, ...) or empty when it does not exist.
proc_state() {
        local stat
        stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
        stat=${stat##*) }
        echo "${stat%% *}"
}

# Pid from pid file $1 if that process is alive (not a zombie) and its command line
# contains $2; empty otherwise (a stale pid file is removed).
live_pid() {
        local file=$1 match=$2 pid st cmd
        [[ -f $file ]] || return 0
        pid=$(tr -dc '0-9' <"$file")
        if [[ -n $pid ]]; then
                st=$(proc_state "$pid")
                cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" || true)
                if [[ -n $st && $st != Z && $cmd == *"$match"* ]]; then
                        echo "$pid"
                        return 0
                fi
        fi
        rm -f "$file" 2>/dev/null || $SUDO rm -f "$file" || true
}

# Stop pid $2 (service $1): SIGTERM (and SIGCONT, in case it is frozen), wait up to $3
# seconds for it to be gone, then SIGKILL and wait again.
stop_pid() {
        local name=$1 pid=$2 wait_s=$3 i st
        say "$name: stopping pid $pid"
        $SUDO kill -TERM "$pid" 2>/dev/null || true
        $SUDO kill -CONT "$pid" 2>/dev/null || true
        for ((i = 0; i < wait_s * 5; i++)); do
                st=$(proc_state "$pid")
                [[ -z $st || $st == Z ]] && { say "$name: stopped"; return 0; }
                ((i % 25 == 24)) && say "$name: waiting for pid $pid to exit ($((i / 5 + 1)) s)"
                sleep 0.2
        done
        warn "$name: pid $pid still alive after ${wait_s} s, sending SIGKILL"
        $SUDO kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
                st=$(proc_state "$pid")
                [[ -z $st || $st == Z ]] && { say "$name: killed"; return 0; }
                sleep 0.2
        done
        die "$name: pid $pid does not exit"
}

prepare_dirs() {
        mkdir -p "$RUN_DIR" "$LOG_DIR" "$KAFKA_DIR"
}

# Service $1 answers on port $2 right after this 'up' installed its Debian package: the
# package's postinst started it, on our behalf. Record its pid in pid file $3 so that
# 'down' stops it like a service we started ourselves.
adopt_pid() {
        local name=$1 port=$2 file=$3 pid
        pid=$(port_pid "$port")
        if [[ $pid == - ]]; then
                say "$name: running on $HOST:$port after installing the package (pid unknown), not started by us"
                return 0
        fi
        prepare_dirs
        echo "$pid" >"$file"
        say "$name: running on $HOST:$port, started by the package's postinst during this 'up' (pid $pid); counted as started by us"
}

# ---------------------------------------------------------------------------------------
# Redis

redis_cli() { redis-cli -h "$HOST" -p "$REDIS_PORT" "$@"; }
redis_ping() { [[ $(redis_cli ping 2>/dev/null) == PONG ]]; }
redis_our_pid() { live_pid "$REDIS_PID" redis-server; }

# DESIGN.md 4: Redis must run with maxmemory-policy noeviction.
redis_ensure_noeviction() {
        local policy
        policy=$(redis_cli config get maxmemory-policy 2>/dev/null | sed -n 2p)
        if [[ $policy != noeviction ]]; then
                redis_cli config set maxmemory-policy noeviction >/dev/null ||
                        die "redis: CONFIG SET maxmemory-policy noeviction failed"
                say "redis: maxmemory-policy was '${policy:-?}', set to noeviction with CONFIG SET (runtime only, not written to its config file)"
        fi
}

redis_up() {
        local pid i
        command -v redis-cli >/dev/null 2>&1 || ensure_pkgs redis-tools
        if redis_ping; then
                pid=$(redis_our_pid)
                if [[ -n $pid ]]; then
                        say "redis: running on $HOST:$REDIS_PORT, started by us (pid $pid)"
                else
                        say "redis: already running on $HOST:$REDIS_PORT, not started by us"
                fi
                redis_ensure_noeviction
                return 0
        fi
        command -v redis-server >/dev/null 2>&1 || ensure_pkgs redis-server
        # The package's postinst may have started Debian's own instance on 6379.
        if redis_ping; then
                adopt_pid redis "$REDIS_PORT" "$REDIS_PID"
                redis_ensure_noeviction
                return 0
        fi
        port_open "$HOST" "$REDIS_PORT" && die "redis: port $REDIS_PORT is taken by something that does not answer PING"
        prepare_dirs
        mkdir -p "$STACK_DIR/redis"
        say "redis: starting on $HOST:$REDIS_PORT (no persistence, noeviction)"
        detached redis-server --daemonize yes --bind "$HOST" --port "$REDIS_PORT" --save "" --appendonly no \
                --maxmemory-policy noeviction --dir "$STACK_DIR/redis" \
                --pidfile "$REDIS_PID" --logfile "$REDIS_LOG" --loglevel warning
        for ((i = 0; i < 100; i++)); do
                redis_ping && { say "redis: ready (pid $(redis_our_pid))"; return 0; }
                sleep 0.2
        done
        tail -n 30 "$REDIS_LOG" >&2 || true
        die "redis: not answering PING after 20 s; log: $REDIS_LOG"
}

# shellcheck source=stack/redis_topo.sh
source "$REPO/scripts/stack/redis_topo.sh"
# shellcheck source=stack/galera.sh
source "$REPO/scripts/stack/galera.sh"

# ---------------------------------------------------------------------------------------
# MariaDB

mysql_sock() {
        if [[ $MYSQL_PRIVATE -eq 1 ]]; then echo "$MYSQL_PRIV_DIR/mysqld.sock"; else echo /run/mysqld/mysqld.sock; fi
}
# mysqladmin ping exits 0 whenever the server answers, even with "access denied".
mysql_alive() {
        mysqladmin --no-defaults --connect-timeout=2 --protocol=TCP -h "$HOST" -P "$MYSQL_PORT" -uroot ping >/dev/null 2>&1
}
mysql_login() {
        mysql --no-defaults --connect-timeout=3 --protocol=TCP -h "$HOST" -P "$MYSQL_PORT" -uroot -N -e 'SELECT 1' >/dev/null 2>&1
}
mariadb_our_pid() { live_pid "$MARIADB_PID" mariadbd; }

# root@localhost (TCP from 127.0.0.1 maps to it unless skip-name-resolve is set) and
# root@127.0.0.1 (when it is) may log in without a password; the unix_socket login of
# Debian's default install is kept. Done through the socket, as the OS root.
# The local stack's root has no password over 127.0.0.1, on purpose: every test, bench
# and script, and the CI machine's pre-started server, log in that way
# (docs/OPERATIONS.md "Stack operations"). It is a test server bound to loopback, never
# one to deploy on; `up` says how to reach it.
mysql_ensure_root_tcp() {
        if mysql_login; then
                say "mariadb: reach it as root without a password: mysql -h $HOST -P $MYSQL_PORT -u root (local test stack only)"
                return 0
        fi
        say "mariadb: root cannot log in over TCP without a password; enabling it via the unix socket"
        $SUDO mysql --no-defaults --protocol=SOCKET -S "$(mysql_sock)" -uroot -e "
                ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket;
                CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
                GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
                FLUSH PRIVILEGES;" ||
                die "mariadb: could not change root's login through $(mysql_sock) (run as root?)"
        mysql_login || die "mariadb: root still cannot log in over TCP $HOST:$MYSQL_PORT"
        say "mariadb: root@localhost and root@127.0.0.1 log in over TCP without a password (local test stack only): mysql -h $HOST -P $MYSQL_PORT -u root"
}

mariadb_up() {
        local pid datadir i nodefaults="" args=()
        if ! command -v mysqladmin >/dev/null 2>&1 || ! command -v mysql >/dev/null 2>&1; then
                ensure_pkgs mariadb-client
        fi
        if mysql_alive; then
                pid=$(mariadb_our_pid)
                if [[ -n $pid ]]; then
                        say "mariadb: running on $HOST:$MYSQL_PORT, started by us (pid $pid)"
                else
                        say "mariadb: already running on $HOST:$MYSQL_PORT, not started by us"
                fi
                mysql_ensure_root_tcp
                return 0
        fi
        [[ -x /usr/sbin/mariadbd ]] || ensure_pkgs mariadb-server
        if mysql_alive; then
                adopt_pid mariadb "$MYSQL_PORT" "$MARIADB_PID"
                mysql_ensure_root_tcp
                return 0
        fi
        port_open "$HOST" "$MYSQL_PORT" && die "mariadb: port $MYSQL_PORT is taken by something that is not a MySQL server"
        prepare_dirs
        if [[ $MYSQL_PRIVATE -eq 1 ]]; then
                datadir=$MYSQL_PRIV_DIR/data
                mkdir -p "$MYSQL_PRIV_DIR"
                $SUDO chown mysql:mysql "$MYSQL_PRIV_DIR"
                # --no-defaults must come first: a private server ignores /etc/mysql.
                nodefaults=--no-defaults
                args=(--no-defaults --socket="$(mysql_sock)" --pid-file="$MYSQL_PRIV_DIR/mariadbd.pid"
                      --skip-log-bin --innodb-buffer-pool-size=64M)
        else
                datadir=/var/lib/mysql
                $SUDO mkdir -p /run/mysqld
                $SUDO chown mysql:mysql /run/mysqld
        fi
        if [[ ! -d $datadir/mysql ]]; then
                say "mariadb: initialising $datadir (mysql_install_db)"
                $SUDO mkdir -p "$datadir"
                $SUDO chown mysql:mysql "$datadir"
                # shellcheck disable=SC2086  # $nodefaults is empty or one word
                $SUDO mysql_install_db $nodefaults --user=mysql --datadir="$datadir" \
                        --skip-test-db >"$LOG_DIR/mysql_install_db.log" 2>&1 ||
                        { tail -n 30 "$LOG_DIR/mysql_install_db.log" >&2; die "mariadb: mysql_install_db failed; log: $LOG_DIR/mysql_install_db.log"; }
        fi
        say "mariadb: starting on $HOST:$MYSQL_PORT (datadir $datadir)"
        # No --log-error: mariadbd logs to stderr, which start-stop-daemon (still root)
        # sends to $MARIADB_LOG, so the mysql user needs no access to the state dir.
        $SUDO start-stop-daemon --start --oknodo --background --make-pidfile --pidfile "$MARIADB_PID" \
                --output "$MARIADB_LOG" --exec /usr/sbin/mariadbd -- "${args[@]}" --user=mysql \
                --datadir="$datadir" --port="$MYSQL_PORT" --bind-address="$HOST" 9>&-
        for ((i = 0; i < 300; i++)); do
                if mysql_alive; then
                        say "mariadb: ready (pid $(mariadb_our_pid))"
                        mysql_ensure_root_tcp
                        return 0
                fi
                if [[ -z $(mariadb_our_pid) ]]; then
                        tail -n 30 "$MARIADB_LOG" >&2 || true
                        die "mariadb: mariadbd exited during startup; log: $MARIADB_LOG"
                fi
                ((i % 25 == 24)) && say "mariadb: waiting for $HOST:$MYSQL_PORT ($((i / 5 + 1)) s)"
                sleep 0.2
        done
        tail -n 30 "$MARIADB_LOG" >&2 || true
        die "mariadb: not answering after 60 s; log: $MARIADB_LOG"
}

# ---------------------------------------------------------------------------------------
# Kafka

kafka_our_pid() { live_pid "$KAFKA_PID" kafka.Kafka; }

ensure_java() {
        command -v java >/dev/null 2>&1 || ensure_pkgs openjdk-17-jre-headless
        command -v java >/dev/null 2>&1 || die "java not found after installing openjdk-17-jre-headless"
}

# The broker's jars in $KAFKA_LIBS, resolved from scripts/kafka/pom.xml. Re-resolved
# only when the pom changes (its checksum is kept next to the jars).
ensure_jars() {
        local pom=$REPO/scripts/kafka/pom.xml want have t0
        [[ -f $pom ]] || die "missing $pom"
        want=$(sha256sum "$pom" | cut -d' ' -f1)
        have=$(cat "$KAFKA_LIBS/.pom.sha256" 2>/dev/null || true)
        if [[ $want == "$have" ]] && compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null; then
                return 0
        fi
        command -v mvn >/dev/null 2>&1 || ensure_pkgs maven
        prepare_dirs
        rm -rf "$KAFKA_LIBS.tmp" "$KAFKA_DIR/mvn"
        mkdir -p "$KAFKA_DIR/mvn"
        # Copied out of the tree so that Maven writes nothing into the repository.
        cp "$pom" "$KAFKA_DIR/mvn/pom.xml"
        say "kafka: resolving the broker's jars with Maven (scripts/kafka/pom.xml)"
        t0=$SECONDS
        # shellcheck disable=SC2086  # MVN_OPTS is a list of words on purpose
        if ! (cd "$KAFKA_DIR/mvn" && mvn -q -B $MVN_OPTS dependency:copy-dependencies \
                -DoutputDirectory="$KAFKA_LIBS.tmp" -DincludeScope=runtime </dev/null \
                >"$LOG_DIR/mvn.log" 2>&1); then
                tail -n 30 "$LOG_DIR/mvn.log" >&2 || true
                die "kafka: Maven could not resolve the jars; log: $LOG_DIR/mvn.log"
        fi
        rm -rf "$KAFKA_LIBS"
        mv "$KAFKA_LIBS.tmp" "$KAFKA_LIBS"
        echo "$want" >"$KAFKA_LIBS/.pom.sha256"
        say "kafka: $(find "$KAFKA_LIBS" -name '*.jar' | wc -l) jars in $KAFKA_LIBS ($((SECONDS - t0)) s)"
}

write_tools_log4j() {
        prepare_dirs
        cat >"$TOOLS_LOG4J" <<'EOF'
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
}

# Run a Kafka command-line class from the jars (small heap, WARN to stderr), killed
# after KAFKA_TOOL_TIMEOUT_S seconds (default 120).
kafka_tool() {
        [[ -f $TOOLS_LOG4J ]] || write_tools_log4j
        timeout "${KAFKA_TOOL_TIMEOUT_S:-120}" java -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
                -Dlog4j.configuration="file:$TOOLS_LOG4J" -cp "$KAFKA_LIBS/*" "$@"
}

# Readiness: the broker answers a metadata request that lists itself (in KRaft a broker
# appears in metadata once it is registered and unfenced, i.e. topics can be created).
kafka_metadata_ok() {
        local out
        out=$(KAFKA_TOOL_TIMEOUT_S=30 kafka_tool kafka.admin.BrokerApiVersionsCommand \
                --bootstrap-server "$HOST:$KAFKA_PORT" 2>/dev/null) || return 1
        grep -q '(id: ' <<<"$out"
}

write_kafka_config() {
        prepare_dirs
        mkdir -p "$KAFKA_DATA"
        cat >"$KAFKA_CONF" <<EOF
# Written by scripts/stack.sh on every start; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=1
# DESIGN.md 5: topics are created by the binaries (or 'stack.sh topics'), never implicitly.
auto.create.topics.enable=false
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
min.insync.replicas=1
EOF
        cat >"$KAFKA_LOG4J" <<EOF
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$KAFKA_LOG
log4j.appender.file.MaxFileSize=20MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
# One INFO line when the server has started.
log4j.logger.kafka.server.KafkaRaftServer=INFO
EOF
}

kafka_fail() {
        warn "$1"
        warn "kafka log: $KAFKA_LOG (last 30 lines below; stdout/stderr in $KAFKA_OUT)"
        tail -n 30 "$KAFKA_LOG" >&2 2>/dev/null || true
        if [[ -s $KAFKA_OUT ]]; then
                warn "last lines of $KAFKA_OUT:"
                tail -n 10 "$KAFKA_OUT" >&2 || true
        fi
        exit 1
}

# Wait until the broker on $KAFKA_PORT serves metadata. $1 = our pid to watch ("" for a
# broker not started by us).
kafka_wait_ready() {
        local pid=$1 t0=$SECONDS next=5 st
        while :; do
                if [[ -n $pid ]]; then
                        st=$(proc_state "$pid")
                        [[ -z $st || $st == Z ]] && kafka_fail "kafka: the broker (pid $pid) exited during startup"
                        [[ $st == T ]] && kafka_fail "kafka: the broker (pid $pid) is frozen (SIGSTOP); run 'scripts/stack.sh kafka-thaw'"
                fi
                if port_open "$HOST" "$KAFKA_PORT" && kafka_metadata_ok; then
                        say "kafka: ready on $HOST:$KAFKA_PORT (metadata served, $((SECONDS - t0)) s)"
                        return 0
                fi
                ((SECONDS - t0 >= KAFKA_TIMEOUT_S)) &&
                        kafka_fail "kafka: not serving metadata on $HOST:$KAFKA_PORT after $KAFKA_TIMEOUT_S s"
                if ((SECONDS - t0 >= next)); then
                        say "kafka: waiting for the broker on $HOST:$KAFKA_PORT ($((SECONDS - t0)) s)"
                        next=$((SECONDS - t0 + 5))
                fi
                sleep 1
        done
}

kafka_start() {
        local java uuid pid
        port_open "$HOST" "$KAFKA_PORT" && die "kafka: port $KAFKA_PORT is in use by pid $(port_pid "$KAFKA_PORT"), not by a broker we started"
        port_open "$HOST" "$KAFKA_CONTROLLER_PORT" &&
                die "kafka: controller port $KAFKA_CONTROLLER_PORT is in use by pid $(port_pid "$KAFKA_CONTROLLER_PORT") (set SECKILL_STACK_KAFKA_CONTROLLER_PORT)"
        ensure_java
        ensure_jars
        write_kafka_config
        write_tools_log4j
        if [[ ! -f $KAFKA_DATA/meta.properties ]]; then
                uuid=$(kafka_tool kafka.tools.StorageTool random-uuid 2>>"$LOG_DIR/kafka-format.log")
                say "kafka: formatting $KAFKA_DATA (cluster id $uuid)"
                kafka_tool kafka.tools.StorageTool format -t "$uuid" -c "$KAFKA_CONF" --ignore-formatted \
                        >>"$LOG_DIR/kafka-format.log" 2>&1 ||
                        { tail -n 30 "$LOG_DIR/kafka-format.log" >&2; die "kafka: StorageTool format failed; log: $LOG_DIR/kafka-format.log"; }
        fi
        java=$(readlink -f "$(command -v java)")
        say "kafka: starting Kafka 3.9.1 (KRaft) on $HOST:$KAFKA_PORT, controller $HOST:$KAFKA_CONTROLLER_PORT"
        # start-stop-daemon detaches the JVM (own session: a Ctrl-C in this terminal does
        # not reach it) and writes its real pid.
        start-stop-daemon --start --background --make-pidfile --pidfile "$KAFKA_PID" \
                --chdir "$KAFKA_DIR" --output "$KAFKA_OUT" --exec "$java" -- \
                -Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
                -Dlog4j.configuration="file:$KAFKA_LOG4J" -Dkafka.logs.dir="$LOG_DIR" \
                -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_CONF" 9>&-
        sleep 0.2
        pid=$(kafka_our_pid)
        [[ -n $pid ]] || kafka_fail "kafka: the JVM did not start"
        say "kafka: pid $pid, waiting until it serves metadata (log: $KAFKA_LOG)"
        kafka_wait_ready "$pid"
        kafka_warm_group_coordinator
}

# A fresh broker creates __consumer_offsets (50 partitions) at the first FindCoordinator
# and answers COORDINATOR_LOAD_IN_PROGRESS until it has loaded them; tests that read a
# group's committed offsets right away would see that. Describing a group that does not
# exist goes through FindCoordinator and returns once the coordinator is loaded.
kafka_warm_group_coordinator() {
        local t0=$SECONDS
        if KAFKA_TOOL_TIMEOUT_S=90 kafka_tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
                --bootstrap-server "$HOST:$KAFKA_PORT" --describe --group seckill-stack-warmup >/dev/null 2>&1; then
                say "kafka: group coordinator loaded ($((SECONDS - t0)) s)"
        else
                warn "kafka: the group coordinator did not answer within 90 s (log: $KAFKA_LOG)"
        fi
}

kafka_up() {
        local pid
        pid=$(kafka_our_pid)
        if [[ -n $pid ]]; then
                say "kafka: running on $HOST:$KAFKA_PORT, started by us (pid $pid)"
                ensure_java
                ensure_jars
                kafka_wait_ready "$pid"
                return 0
        fi
        if port_open "$HOST" "$KAFKA_PORT"; then
                say "kafka: already running on $HOST:$KAFKA_PORT (pid $(port_pid "$KAFKA_PORT")), not started by us"
                # The jars are still needed for the readiness check and 'topics'.
                ensure_java
                ensure_jars
                kafka_wait_ready ""
                return 0
        fi
        kafka_start
}

# ---------------------------------------------------------------------------------------
# Commands

# Serialise up/down/kafka-start/kafka-stop of one state dir. The lock is fd 9, which the
# daemons must not inherit (each start closes it: 9>&-, detached or start-stop-daemon
# --background), or they would hold it forever.
with_lock() {
        prepare_dirs
        exec 9>"$STACK_DIR/.lock"
        if ! flock -w 300 9; then
                die "another scripts/stack.sh holds $STACK_DIR/.lock"
        fi
}

cmd_up() {
        local t0=$SECONDS
        case ${1:-} in
        cluster | sentinel) with_lock; "${1}_up"; return 0 ;;
        redis) with_lock; redis_up; return 0 ;;
        "") ;;
        *) die "up: unknown topology '$1' (cluster, sentinel, redis)" ;;
        esac
        case $REDIS_TOPOLOGY in
        standalone | cluster | sentinel) ;;
        *) die "SECKILL_STACK_REDIS must be standalone, cluster or sentinel (got '$REDIS_TOPOLOGY')" ;;
        esac
        case $DB_TOPOLOGY in
        standalone | galera) ;;
        *) die "SECKILL_STACK_DB must be standalone or galera (got '$DB_TOPOLOGY')" ;;
        esac
        with_lock
        redis_up
        mariadb_up
        kafka_up
        [[ $REDIS_TOPOLOGY == standalone ]] || "${REDIS_TOPOLOGY}_up"
        [[ $DB_TOPOLOGY != galera ]] || galera_up
        say "up: redis $HOST:$REDIS_PORT, mariadb $HOST:$MYSQL_PORT, kafka $HOST:$KAFKA_PORT ($((SECONDS - t0)) s)"
}

cmd_down() {
        local svc pid port services=("$@")
        [[ ${#services[@]} -eq 0 ]] && services=(galera cluster sentinel kafka mariadb redis)
        with_lock
        for svc in "${services[@]}"; do
                case $svc in
                cluster | sentinel) topo_down "$svc"; continue ;;
                galera) galera_down; continue ;;
                kafka) pid=$(kafka_our_pid); port=$KAFKA_PORT ;;
                mariadb) pid=$(mariadb_our_pid); port=$MYSQL_PORT ;;
                redis) pid=$(redis_our_pid); port=$REDIS_PORT ;;
                *) die "down: unknown service '$svc' (redis, mariadb, kafka, cluster, sentinel, galera)" ;;
                esac
                if [[ -n $pid ]]; then
                        stop_pid "$svc" "$pid" 60
                        rm -f "$RUN_DIR/$svc.pid" 2>/dev/null || $SUDO rm -f "$RUN_DIR/$svc.pid" || true
                elif port_open "$HOST" "$port"; then
                        say "$svc: running on $HOST:$port but not started by us; left alone"
                else
                        say "$svc: not running"
                fi
        done
}

# One line per service: NAME ADDR STATE pid=PID started_by_us=yes|no DETAILS
cmd_status() {
        local ok=0 pid ours state detail policy st
        # Redis
        pid=$(redis_our_pid); ours=no; [[ -n $pid ]] && ours=yes
        if command -v redis-cli >/dev/null 2>&1 && redis_ping; then
                state=up
                [[ -z $pid ]] && pid=$(redis_cli info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')
                policy=$(redis_cli config get maxmemory-policy 2>/dev/null | sed -n 2p)
                detail="maxmemory-policy=${policy:-?}"
        else
                state=down; detail=; ok=1
        fi
        printf '%-8s %-16s %-6s pid=%-8s started_by_us=%-3s %s\n' redis "$HOST:$REDIS_PORT" "$state" "${pid:--}" "$ours" "$detail"
        # MariaDB
        pid=$(mariadb_our_pid); ours=no; [[ -n $pid ]] && ours=yes
        if command -v mysqladmin >/dev/null 2>&1 && mysql_alive; then
                state=up
                [[ -z $pid ]] && pid=$(port_pid "$MYSQL_PORT")
                if mysql_login; then detail="root_tcp_login=ok"; else detail="root_tcp_login=denied"; ok=1; fi
        else
                state=down; detail=; ok=1
        fi
        printf '%-8s %-16s %-6s pid=%-8s started_by_us=%-3s %s\n' mariadb "$HOST:$MYSQL_PORT" "$state" "${pid:--}" "$ours" "$detail"
        # Kafka
        pid=$(kafka_our_pid); ours=no; [[ -n $pid ]] && ours=yes
        st=; [[ -n $pid ]] && st=$(proc_state "$pid")
        if [[ $st == T ]]; then
                state=frozen; detail="SIGSTOP (scripts/stack.sh kafka-thaw)"; ok=1
        elif port_open "$HOST" "$KAFKA_PORT"; then
                [[ -z $pid ]] && pid=$(port_pid "$KAFKA_PORT")
                if compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null && command -v java >/dev/null 2>&1; then
                        if kafka_metadata_ok; then state=up; detail="metadata=ok"; else state=down; detail="metadata=none (starting or broken)"; ok=1; fi
                else
                        state=up; detail="metadata=unchecked (no jars yet: scripts/stack.sh up)"
                fi
        else
                state=down; ok=1
                if [[ -n $pid ]]; then detail="starting (pid alive, port closed)"; else detail=; fi
        fi
        printf '%-8s %-16s %-6s pid=%-8s started_by_us=%-3s %s\n' kafka "$HOST:$KAFKA_PORT" "$state" "${pid:--}" "$ours" "$detail"
        # Redis topologies (DESIGN.md 4b): the nodes that answer or that we started.
        if command -v redis-cli >/dev/null 2>&1; then
                topo_status cluster
                topo_status sentinel
        fi
        # The Galera nodes (DESIGN.md 16): counted only under SECKILL_STACK_DB=galera.
        if [[ $DB_TOPOLOGY == galera ]]; then
                galera_status || ok=1
        elif [[ -d $GALERA_DIR ]]; then
                galera_status || true
        fi
        return $ok
}

cmd_env() {
        local url=redis://$HOST:$REDIS_PORT/0
        [[ $REDIS_TOPOLOGY == cluster ]] && url=$(cluster_url)
        [[ $REDIS_TOPOLOGY == sentinel ]] && url=$(sentinel_url)
        local mysql_url=mysql://root@$HOST:$MYSQL_PORT/seckill
        [[ $DB_TOPOLOGY == galera ]] && mysql_url=$(galera_url)
        cat <<EOF
export SECKILL_REDIS_URL=$url
export SECKILL_MYSQL_URL=$mysql_url
export SECKILL_KAFKA_BROKERS=$HOST:$KAFKA_PORT
EOF
}

cmd_topics() {
        [[ $# -eq 2 ]] || { usage >&2; exit 2; }
        local topic=$1 parts=$2 t out
        [[ $topic =~ ^[A-Za-z0-9._-]{1,200}$ ]] || die "topics: invalid topic name '$topic'"
        [[ $parts =~ ^[1-9][0-9]{0,3}$ && $parts -le 1000 ]] || die "topics: partitions must be 1..1000, got '$parts'"
        ensure_java
        ensure_jars
        port_open "$HOST" "$KAFKA_PORT" || die "topics: no broker on $HOST:$KAFKA_PORT (scripts/stack.sh up)"
        for t in "$topic" "$topic.dlq"; do
                kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$HOST:$KAFKA_PORT" \
                        --create --if-not-exists --topic "$t" --partitions "$parts" --replication-factor 1 >/dev/null ||
                        die "topics: could not create $t"
                out=$(kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$HOST:$KAFKA_PORT" \
                        --describe --topic "$t") || die "topics: could not describe $t"
                head -n1 <<<"$out"
        done
}

# Fault-injection helpers: only ever act on the broker we started.
kafka_require_ours() {
        local pid
        pid=$(kafka_our_pid)
        if [[ -z $pid ]]; then
                port_open "$HOST" "$KAFKA_PORT" && die "kafka: the broker on $HOST:$KAFKA_PORT was not started by us; refusing"
                die "kafka: no broker started by us (scripts/stack.sh up)"
        fi
        echo "$pid"
}

cmd_kafka() {
        local pid
        case $1 in
        kafka-start)
                with_lock
                pid=$(kafka_our_pid)
                if [[ -n $pid ]]; then say "kafka: already running (pid $pid)"; kafka_wait_ready "$pid"; return 0; fi
                kafka_start
                ;;
        kafka-stop)
                with_lock
                pid=$(kafka_require_ours)
                stop_pid kafka "$pid" 60
                rm -f "$KAFKA_PID"
                ;;
        kafka-kill)
                pid=$(kafka_require_ours)
                kill -KILL "$pid"
                say "kafka: SIGKILL sent to pid $pid (data kept; 'kafka-start' restarts it)"
                ;;
        kafka-freeze)
                pid=$(kafka_require_ours)
                kill -STOP "$pid"
                say "kafka: pid $pid frozen (SIGSTOP)"
                ;;
        kafka-thaw)
                pid=$(kafka_require_ours)
                kill -CONT "$pid"
                say "kafka: pid $pid thawed (SIGCONT)"
                ;;
        esac
}

main() {
        [[ $# -ge 1 ]] || { usage >&2; exit 2; }
        local cmd=$1
        shift
        case $cmd in
        up) cmd_up "$@" ;;
        down) cmd_down "$@" ;;
        status) cmd_status ;;
        env) cmd_env ;;
        topics) cmd_topics "$@" ;;
        galera) cmd_galera "$@" ;;
        kafka-start | kafka-stop | kafka-kill | kafka-freeze | kafka-thaw) cmd_kafka "$cmd" ;;
        -h | --help | help) usage ;;
        *) usage >&2; exit 2 ;;
        esac
}

main "$@"
