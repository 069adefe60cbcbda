#!/usr/bin/env bash
# bench/many_core_run.sh BUNDLE OUT [FUZZ_SECONDS] — the many-core figures, run on the machine
# with many cores from a bundle made by bench/many_core_bundle.sh; writes OUT/figures.txt and
# OUT/fuzz.txt (plus OUT/fuzz_logs.tar.gz and OUT/findings.tar.gz):
#   1. the in-process rate on one core and the handler's cost beside it (bench_server_batch,
#      bench_core_many_worlds);
#   2. one client, StepBatch.arrays of 1024 finger worlds, one server at --threads 1, 2, 4, 8
#      and 16 (bench_net_many b);
#   3. K clients against one server of N shards and against N servers, N = all cores, K = N and
#      4N, and the serial fraction from 1 and 2 shards (bench_net_multi);
#   4. the Step round trip against raw ZeroMQ (robosim-bench);
#   5. both libFuzzer harnesses on every core for FUZZ_SECONDS (default 150): executions and
#      findings summed over the processes (0: no fuzzing).
# A bench that exits non-zero has its status written under its output; the script then exits 1.
# environment: MANY_CORE_BENCH=0 skips 1-4 (fuzzing only); MANY_CORE_BENCH=again runs 3 and 4
# only (a second run of the ratios, to see how far they move run to run); MANY_CORE_FUZZ_SEGMENT=S
# fuzzes in fresh processes of at most S seconds each (default 900); MANY_CORE_BENCH=short
# runs 2 at --threads 1 and all cores, then 3, then 4 as three alternating pairs of the server
# as shipped and with --spin-us 0 (its loops never poll before they sleep).
set -uo pipefail
bundle="$(cd "$1" && pwd)" out="$2" fuzz_seconds="${3:-150}"
mkdir -p "$out" /tmp/rsdev
cp -r "$bundle/lib" /tmp/rsdev/
cp "$bundle"/lib/ld-linux* /tmp/rsdev/
# no LD_LIBRARY_PATH: the binaries carry their library path, and the machine's own tools keep theirs
B="$bundle/bin"
cores=$(nproc)
fig="$out/figures.txt"
log() { echo "$*" | tee -a "$fig"; }
failed=0
# a command's exit status goes into the figures when it is not 0 (a bench that failed or ran out
# of its time must not read as a figure), and the script's own status says that one did
run() {
  log "\$ $*"
  "$@" 2>&1 | tee -a "$fig"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || failed=1
  if [ "$rc" -eq 124 ]; then log "(timed out: exit status 124)"; elif [ "$rc" -ne 0 ]; then log "(exit status $rc)"; fi
  return 0
}

log "# many_core_run: $(uname -m), $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), bundle of $(head -1 "$bundle/commit")$(sed -n 2p "$bundle/commit")"
"$B/robosim-server" --version >/dev/null 2>&1 || { log "the bundled server does not start"; "$B/robosim-server" --version 2>&1 | tail -3 | tee -a "$fig"; exit 1; }

mode="${MANY_CORE_BENCH:-1}"
if [ "$mode" = 1 ]; then
run timeout 40 "$B/bench_server_batch" 1024 4
run timeout 60 "$B/bench_core_many_worlds"
for t in 1 2 4 8 "$cores"; do
  BENCH_BATCH_SIZES=1024 BENCH_BATCH_FORM=arrays BENCH_BATCH_THREADS=$t run timeout 60 "$B/bench_net_many" b 2
done
fi
if [ "$mode" = short ]; then
for t in 1 "$cores"; do
  BENCH_BATCH_SIZES=1024 BENCH_BATCH_FORM=arrays BENCH_BATCH_THREADS=$t run timeout 60 "$B/bench_net_many" b 2
done
fi
if [ "$mode" = 1 ] || [ "$mode" = again ] || [ "$mode" = short ]; then
BENCH_MULTI_N=$cores run timeout 240 "$B/bench_net_multi" 2
fi
if [ "$mode" = 1 ] || [ "$mode" = again ]; then
run timeout 60 "$B/robosim-bench"
fi
if [ "$mode" = short ]; then
printf '#!/bin/sh\nexec %s --spin-us 0 "$@"\n' "$B/robosim-server" >/tmp/rsdev/server-no-spin
chmod +x /tmp/rsdev/server-no-spin
for pair in 1 2 3; do
  run timeout 60 "$B/robosim-bench" 20 500 "$B/robosim-server"
  run timeout 60 "$B/robosim-bench" 20 500 /tmp/rsdev/server-no-spin
done
fi
[ "$fuzz_seconds" -gt 0 ] || exit "$failed"

# fuzzing: three quarters of the cores on fuzz_request, the rest on fuzz_sequence, each process
# on its own copy of its harness's corpus (what one finds, the others need not repeat)
nreq=$(( cores * 3 / 4 )) nseq=$(( cores - cores * 3 / 4 ))
mkdir -p /tmp/rsfuzz/logs /tmp/rsfuzz/findings
i=0
for h in fuzz_request fuzz_sequence; do
  n=$nreq; [ "$h" = fuzz_sequence ] && n=$nseq
  for j in $(seq 1 "$n"); do
    i=$((i + 1))
    c=/tmp/rsfuzz/corpus-$i; mkdir -p "$c"; cp -r "$bundle/corpus/$h/." "$c/"
    mkdir -p /tmp/rsfuzz/findings/$h
    # in segments of at most MANY_CORE_FUZZ_SEGMENT s (default 900), each a fresh process
    # (scripts/fuzz says why)
    (left=$fuzz_seconds seg=0 segment=${MANY_CORE_FUZZ_SEGMENT:-900}; : >/tmp/rsfuzz/logs/$h-$i.log
     while [ "$left" -gt 0 ]; do
       part=$(( left < segment ? left : segment )); seg=$((seg + 1))
       ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
         "$B/$h" "$c" -max_total_time="$part" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
         -print_final_stats=1 -seed=$(( $(date +%s) % 1000000 * 64 + i + 4096 * seg )) \
         -artifact_prefix="/tmp/rsfuzz/findings/$h/" >>/tmp/rsfuzz/logs/$h-$i.log 2>&1 || break
       left=$(( left - part ))
     done) &
  done
done
wait
{
  echo "# fuzzing: $nreq fuzz_request + $nseq fuzz_sequence processes, ${fuzz_seconds} s each"
  for h in fuzz_request fuzz_sequence; do
    execs=$(cat /tmp/rsfuzz/logs/$h-*.log | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
    finds=$(ls /tmp/rsfuzz/findings/$h | wc -l)
    echo "$h: $execs executions, $finds findings ($(ls /tmp/rsfuzz/findings/$h | tr '\n' ' '))"
  done
  grep -h -m3 -E "^==[0-9]+==ERROR|runtime error|SUMMARY" /tmp/rsfuzz/logs/*.log | head -20
} | tee "$out/fuzz.txt"
tar -C /tmp/rsfuzz -czf "$out/fuzz_logs.tar.gz" logs
tar -C /tmp/rsfuzz -czf "$out/findings.tar.gz" findings
exit "$failed"
