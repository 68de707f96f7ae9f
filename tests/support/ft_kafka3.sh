#!/usr/bin/env bash
# tests/support/ft_kafka3.sh: a private replicated Kafka cluster for the fault suite
# (DESIGN.md 10: "the fault suite starts its own private three-broker Kafka cluster").
# Sourced after ft.sh and ft_init:
#   ft_kafka3_start                start it, wait until the three brokers are in the
#                                  metadata, create the case's topic and DLQ (RF 3);
#                                  SECKILL_KAFKA_BROKERS points at the three brokers
#   ft_kafka3_kill N               SIGKILL broker N (1..3; its data is kept)
#   ft_kafka3_restart N            start broker N again on its port and data
#   ft_kafka3_partitions           "PARTITION LEADER ISR" lines of the case's topic
#   ft_kafka3_busiest              the partition of the case's topic with the most messages
#   ft_kafka3_wait_isr P COUNT S   wait up to S s until partition P has COUNT in its ISR
#
# Topology: three broker-only nodes (ids 1-3) and one dedicated KRaft controller (id 9).
# With three combined broker+controller nodes, killing two leaves the controller quorum
# without a majority: nobody could shrink the ISR below min.insync.replicas and the case
# could not show it. With a dedicated controller the controller fences a dead broker
# (after broker.session.timeout.ms), removes it from every ISR and elects leaders from the
# ISR only (unclean.leader.election.enable=false). Brokers: default and offsets topics at
# replication factor 3, min.insync.replicas=2; the case's topics are created with RF 3 and
# min.insync.replicas=2 before any binary starts.
#
# Ports: four free loopback ports below the kernel's ephemeral range; a node that dies at
# startup (its port taken meanwhile) makes the whole boot start again on new ports, at most
# three times. Resources: heaps 128-320 MB per broker, 128-160 MB for the controller, one
# GC thread each, few network/io threads (a 2-core machine). The JVMs are killed (SIGKILL:
# their data is scratch) by ft_cleanup through FT_CLEANUP_HOOKS, and by a watchdog if the
# case's shell dies without running its EXIT trap (a CTest timeout). Every wait is bounded.
#
# What it deliberately does not do: touch the shared broker, or judge speed.

FT_K3_DIR=
FT_K3_LIBS=
FT_K3_CPORT=
FT_K3_NODES=(1 2 3)
declare -A FT_K3_PORT=()   # broker id -> port
declare -A FT_K3_DOWN=()   # broker id -> 1 while we keep it killed
FT_K3_WATCHDOG=
FT_K3_SESSION_MS=${FT_K3_SESSION_MS:-5000}
# min.insync.replicas of the brokers and the case's topics (2; 1 only to watch a case fail).
FT_K3_MIN_ISR=${FT_K3_MIN_ISR:-2}

# The broker's jars: the stack's when it has them (scripts/stack.sh resolves them from
# Maven Central), else resolved here the same way (scripts/kafka/pom.xml, Maven's local
# repository ~/.m2 first) into $FT_BUILD/faults-kafka-libs, once per pom.
ft_kafka3_libs() {
        local libs pom=$FT_SRC/scripts/kafka/pom.xml want tmp
        want=$(sha256sum "$pom" | cut -d' ' -f1)
        for libs in "${SECKILL_STACK_DIR:-}/kafka/libs" "$FT_SRC/.stack/kafka/libs" "$FT_BUILD/faults-kafka-libs"; do
                if [[ $(cat "$libs/.pom.sha256" 2>/dev/null) == "$want" ]]; then
                        FT_K3_LIBS=$libs
                        return 0
                fi
        done
        FT_K3_LIBS=$FT_BUILD/faults-kafka-libs
        tmp=$(readlink -f "$(mktemp -d "$FT_BUILD/faults-kafka-mvn.XXXXXX")")
        cp "$pom" "$tmp/pom.xml"
        ft_log "resolving the broker's jars with Maven (scripts/kafka/pom.xml)"
        if ! (cd "$tmp" && timeout 300 mvn -q -B dependency:copy-dependencies -DoutputDirectory="$tmp/libs" \
                -DincludeScope=runtime </dev/null >"$FT_WORK/mvn.log" 2>&1); then
                rm -rf "$tmp"
                ft_die "Maven could not resolve the Kafka jars: $(tail -n 5 "$FT_WORK/mvn.log")"
        fi
        echo "$want" >"$tmp/libs/.pom.sha256"
        rm -rf "$FT_K3_LIBS"
        mv "$tmp/libs" "$FT_K3_LIBS"
        rm -rf "$tmp"
}

# ft_kafka3_conf ID: the server.properties of node ID (9 = the controller).
ft_kafka3_conf() {
        local id=$1 dir=$FT_K3_DIR/n$1
        mkdir -p "$dir/data"
        {
                echo "node.id=$id"
                echo "controller.quorum.voters=9@127.0.0.1:$FT_K3_CPORT"
                echo "controller.listener.names=CONTROLLER"
                echo "log.dirs=$dir/data"
                echo "unclean.leader.election.enable=false"
                echo "min.insync.replicas=$FT_K3_MIN_ISR"
                echo "default.replication.factor=3"
                echo "auto.create.topics.enable=false"
                echo "delete.topic.enable=true"
                echo "num.partitions=1"
                if [[ $id == 9 ]]; then
                        echo "process.roles=controller"
                        echo "listeners=CONTROLLER://127.0.0.1:$FT_K3_CPORT"
                        echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT"
                        echo "broker.session.timeout.ms=$FT_K3_SESSION_MS"
                else
                        echo "process.roles=broker"
                        echo "listeners=PLAINTEXT://127.0.0.1:${FT_K3_PORT[$id]}"
                        echo "advertised.listeners=PLAINTEXT://127.0.0.1:${FT_K3_PORT[$id]}"
                        echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
                        echo "inter.broker.listener.name=PLAINTEXT"
                        echo "broker.heartbeat.interval.ms=1000"
                        echo "replica.lag.time.max.ms=10000"
                        echo "offsets.topic.replication.factor=3"
                        echo "offsets.topic.num.partitions=3"
                        echo "transaction.state.log.replication.factor=3"
                        echo "transaction.state.log.min.isr=2"
                        echo "transaction.state.log.num.partitions=3"
                        echo "group.initial.rebalance.delay.ms=0"
                        echo "num.network.threads=2"
                        echo "num.io.threads=2"
                        echo "num.replica.fetchers=1"
                        echo "background.threads=2"
                        echo "log.cleaner.dedupe.buffer.size=8388608"
                fi
        } >"$dir/server.properties"
        cat >"$dir/log4j.properties" <<EOF
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$dir/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaRaftServer=INFO
log4j.logger.state.change.logger=INFO
EOF
}

# A Kafka command-line class (small heap), bounded.
ft_kafka3_tool() {
        timeout 90 java -Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
                -Dlog4j.configuration="file:$FT_K3_DIR/n9/log4j.properties" -cp "$FT_K3_LIBS/*" "$@"
}

# ft_kafka3_jvm ID: start node ID in the background; its pid goes to n<ID>/pid.
ft_kafka3_jvm() {
        local id=$1 dir=$FT_K3_DIR/n$1 heap=-Xmx320m
        [[ $id == 9 ]] && heap=-Xmx160m
        java -Xms128m "$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:ParallelGCThreads=1 \
                -XX:ConcGCThreads=1 -XX:CICompilerCount=2 -Djava.awt.headless=true \
                -Dlog4j.configuration="file:$dir/log4j.properties" -Dkafka.logs.dir="$dir" \
                -cp "$FT_K3_LIBS/*" kafka.Kafka "$dir/server.properties" >>"$dir/out.log" 2>&1 &
        echo $! >"$dir/pid"
}

ft_kafka3_pid() { cat "$FT_K3_DIR/n$1/pid" 2>/dev/null; }

# The addresses of the brokers we have not killed: the case's own metadata queries
# bootstrap from those only (a fresh client whose first pick is a dead broker can spend
# its whole timeout on it).
ft_kafka3_up() {
        local id out=
        for id in "${FT_K3_NODES[@]}"; do
                [[ -n ${FT_K3_DOWN[$id]:-} ]] || out+="${out:+,}127.0.0.1:${FT_K3_PORT[$id]}"
        done
        echo "$out"
}

# Brokers currently in the metadata (registered, unfenced), space-separated.
ft_kafka3_live() {
        timeout 15 "$FT_TOOL" brokers "$(ft_kafka3_up)" 2>>"$FT_WORK/fttool.log" | paste -sd' '
}

# ft_kafka3_wait_brokers "1 2 3" TIMEOUT_S [NODE...]: until exactly those brokers are in
# the metadata. 1 after the timeout, or as soon as one of the NODEs' JVMs has exited.
ft_kafka3_wait_brokers() {
        local want=$1 timeout_s=$2 t0=$SECONDS have= id
        shift 2
        while ((SECONDS - t0 < timeout_s)); do
                for id in "$@"; do
                        kill -0 "$(ft_kafka3_pid "$id")" 2>/dev/null && continue
                        ft_log "kafka3: node $id exited: $(grep -h -m 1 -o -E 'failed to bind[^.]*|Exception: [^(]*' \
                                "$FT_K3_DIR/n$id/server.log" "$FT_K3_DIR/n$id/out.log" 2>/dev/null | head -n 1)"
                        return 1
                done
                have=$(ft_kafka3_live)
                [[ $have == "$want" ]] && return 0
                sleep 1
        done
        ft_log "brokers in the metadata: '${have}', want '$want' after ${timeout_s}s"
        return 1
}

# The JVMs of every node, SIGKILLed and reaped.
ft_kafka3_kill_nodes() {
        local id pid
        for id in "${FT_K3_NODES[@]}" 9; do
                pid=$(ft_kafka3_pid "$id")
                [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
        done
        for id in "${FT_K3_NODES[@]}" 9; do
                pid=$(ft_kafka3_pid "$id")
                [[ -n $pid ]] && wait "$pid" 2>/dev/null
        done
        return 0
}

ft_kafka3_stop_all() {
        [[ -n $FT_K3_WATCHDOG ]] && kill -KILL "$FT_K3_WATCHDOG" 2>/dev/null
        ft_kafka3_kill_nodes
}

# N distinct free loopback ports below the kernel's ephemeral range (ft.sh).
ft_kafka3_ports() { ft_low_ports "$1"; }

# One attempt to boot the four nodes with cluster id $1 on fresh ports and data: until
# the three brokers are in the metadata (150 s). 1 when a node exited (a port taken
# meanwhile, ...) or the time ran out; the caller kills the nodes and tries again.
ft_kafka3_boot() {
        local uuid=$1 id ports fmt=()
        read -r -a ports <<<"$(ft_kafka3_ports 4)"
        FT_K3_CPORT=${ports[0]}
        for id in "${FT_K3_NODES[@]}"; do FT_K3_PORT[$id]=${ports[$id]}; done
        rm -rf "$FT_K3_DIR"/n*
        for id in 9 "${FT_K3_NODES[@]}"; do ft_kafka3_conf "$id"; done
        # Formatting is a JVM per node: in parallel.
        for id in 9 "${FT_K3_NODES[@]}"; do
                ft_kafka3_tool kafka.tools.StorageTool format -t "$uuid" \
                        -c "$FT_K3_DIR/n$id/server.properties" >>"$FT_K3_DIR/format.log" 2>&1 &
                fmt+=($!)
        done
        wait "${fmt[@]}"
        for id in 9 "${FT_K3_NODES[@]}"; do
                [[ -f $FT_K3_DIR/n$id/data/meta.properties ]] ||
                        ft_die "kafka3: node $id not formatted: $(tail -n 5 "$FT_K3_DIR/format.log")"
        done
        for id in 9 "${FT_K3_NODES[@]}"; do ft_kafka3_jvm "$id"; done
        FT_BROKERS=127.0.0.1:${FT_K3_PORT[1]},127.0.0.1:${FT_K3_PORT[2]},127.0.0.1:${FT_K3_PORT[3]}
        export SECKILL_KAFKA_BROKERS=$FT_BROKERS
        ft_kafka3_wait_brokers "1 2 3" 150 9 "${FT_K3_NODES[@]}"
}

ft_kafka3_start() {
        local uuid t0=$SECONDS attempt
        ft_kafka3_libs
        FT_K3_DIR=$FT_WORK/k3
        mkdir -p "$FT_K3_DIR"
        FT_CLEANUP_HOOKS+=(ft_kafka3_stop_all)
        # Watchdog: if the case's shell is killed without its EXIT trap, kill the JVMs.
        (
                trap '' TERM INT
                while kill -0 $$ 2>/dev/null; do sleep 2; done
                for id in 9 "${FT_K3_NODES[@]}"; do
                        pid=$(cat "$FT_K3_DIR/n$id/pid" 2>/dev/null) && kill -KILL "$pid" 2>/dev/null
                done
        ) >/dev/null 2>&1 &
        FT_K3_WATCHDOG=$!
        disown "$FT_K3_WATCHDOG"
        uuid=$(ft_kafka3_tool kafka.tools.StorageTool random-uuid 2>>"$FT_K3_DIR/format.log") ||
                ft_die "kafka3: random-uuid failed: $(tail -n 5 "$FT_K3_DIR/format.log")"
        for attempt in 1 2 3; do
                ft_kafka3_boot "$uuid" && break
                ft_kafka3_kill_nodes
                ((attempt < 3)) || ft_die "kafka3: the cluster did not start in 3 attempts (logs in $FT_K3_DIR)"
        done
        timeout 30 "$FT_TOOL" create-topic "$FT_BROKERS" "$FT_TOPIC" "$FT_PARTITIONS" 3 "min.insync.replicas=$FT_K3_MIN_ISR" \
                2>>"$FT_WORK/fttool.log" || ft_die "kafka3: cannot create $FT_TOPIC: $(tail -n 2 "$FT_WORK/fttool.log")"
        timeout 30 "$FT_TOOL" create-topic "$FT_BROKERS" "$FT_TOPIC.dlq" "$FT_PARTITIONS" 3 "min.insync.replicas=$FT_K3_MIN_ISR" \
                2>>"$FT_WORK/fttool.log" || ft_die "kafka3: cannot create $FT_TOPIC.dlq: $(tail -n 2 "$FT_WORK/fttool.log")"
        ft_log "private cluster: controller 9 on $FT_K3_CPORT, brokers $FT_BROKERS (ready in $((SECONDS - t0))s, attempt $attempt)"
}

ft_kafka3_kill() {
        local pid
        pid=$(ft_kafka3_pid "$1")
        [[ -n $pid ]] || ft_die "kafka3: no pid for broker $1"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        FT_K3_DOWN[$1]=1
        ft_log "broker $1 (pid $pid) SIGKILLed"
}

ft_kafka3_restart() {
        ft_kafka3_jvm "$1"
        unset "FT_K3_DOWN[$1]"
        ft_log "broker $1 started again (pid $(ft_kafka3_pid "$1"))"
}

ft_kafka3_partitions() {
        timeout 30 "$FT_TOOL" partitions "$(ft_kafka3_up)" "$FT_TOPIC" 2>>"$FT_WORK/fttool.log"
}

ft_kafka3_busiest() {
        timeout 30 "$FT_TOOL" highs "$(ft_kafka3_up)" "$FT_TOPIC" 2>>"$FT_WORK/fttool.log" |
                sort -k2,2nr | head -n 1 | awk '{print $1}'
}

# ft_kafka3_wait_isr P COUNT TIMEOUT_S: until partition P's ISR has COUNT brokers. 0 iff so.
ft_kafka3_wait_isr() {
        local part=$1 want=$2 timeout_s=$3 t0=$SECONDS line isr=
        while ((SECONDS - t0 < timeout_s)); do
                line=$(ft_kafka3_partitions | awk -v p="$part" '$1 == p')
                isr=$(awk '{print $3}' <<<"$line")
                if [[ -n $isr && $isr != - ]] && (($(tr ',' '\n' <<<"$isr" | wc -l) == want)); then
                        return 0
                fi
                sleep 1
        done
        ft_log "partition $part: ISR '${isr}' after ${timeout_s}s, want $want members"
        return 1
}
