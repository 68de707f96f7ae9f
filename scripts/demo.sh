#!/usr/bin/env bash
# scripts/demo.sh: the main job — a flash sale end to end from one command.
#
#   scripts/demo.sh                 install what is missing, build, stack up, run the
#                                   sale, check every invariant, print the report
#   scripts/demo.sh --kill-redis    the same sale through a Redis outage (private Redis
#                                   killed and restarted empty; DB-only path and back)
#   scripts/demo.sh --queue         the sale through the waiting room (DESIGN.md 18):
#                                   members join the pre-queue, poll and buy as the page
#                                   does (demo/queue.sh; --members, --stock, --join-s)
#   scripts/demo.sh --help          options (stock, buckets, buyers, concurrency, duration, --keep)
#
# The logic lives in scripts/demo/ (run.sh: the driver; sale.lua: the wrk crowd;
# report.py: the checks and report; buckets.py, outage.py (outage.sh), figures.py,
# latency.gp, timeline.gp: the report's sections, figures and plots). Output: out/report.json, out/timeline.png,
# out/latency.png and out/demo-<stamp>/ (logs, the 202 log, reconciler and verify output).
# Exit status: 0 every invariant PASS, 1 an invariant FAILED, 2 bad usage, 3 setup failed.
for a in "$@"; do   # --queue: the sale through the waiting room (DESIGN.md 18), demo/queue.sh
        [[ $a == --queue ]] && exec "$(dirname "${BASH_SOURCE[0]}")/demo/queue.sh" "$@"
done
exec "$(dirname "${BASH_SOURCE[0]}")/demo/run.sh" "$@"
