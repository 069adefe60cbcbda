#!/usr/bin/env bash
# bench/many_core_bundle.sh [DIR] — pack what bench/many_core_run.sh needs on a machine with
# more cores and no package registry (default DIR: .deps/many_core, which git ignores): the
# release benches and server (build/release), the libFuzzer harnesses (build/fuzz, with their
# corpora), and every shared library they load, C library and loader included. The binaries are
# copied with their interpreter set to /tmp/rsdev/ld-linux-x86-64.so.2 and their library path
# to /tmp/rsdev/lib (many_core_run.sh puts the bundle's there), so they run on any x86-64 Linux
# whatever its own libraries are. Build first: scripts/build and scripts/fuzz.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
dir="${1:-.deps/many_core}"
command -v patchelf >/dev/null || { echo "many_core_bundle: patchelf not found (apt-get install patchelf)" >&2; exit 1; }

bins=(build/release/bin/robosim-server build/release/bin/bench_net_many
      build/release/bin/bench_net_multi build/release/bin/robosim-bench
      build/release/bin/bench_server_batch build/release/bin/bench_core_many_worlds
      build/fuzz/bin/fuzz_request build/fuzz/bin/fuzz_sequence)
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "many_core_bundle: $b missing (scripts/build; scripts/fuzz)" >&2; exit 1; }
done

rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/corpus"
for b in "${bins[@]}"; do
  cp "$b" "$dir/bin/"
  # every library it loads, by the path this machine resolves
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' |
    while read -r lib; do cp -nL "$lib" "$dir/lib/"; done
done
loader=$(ls "$dir/lib" | grep -m1 '^ld-linux')
for f in "$dir"/bin/*; do
  strip --strip-debug "$f" 2>/dev/null || true
  patchelf --set-interpreter "/tmp/rsdev/$loader" --force-rpath --set-rpath /tmp/rsdev/lib "$f"
done
for h in fuzz_request fuzz_sequence; do
  mkdir -p "$dir/corpus/$h"
  cp -r build/fuzz/corpus/$h/. "$dir/corpus/$h/"
  cp -r build/fuzz/seeds/$h/. "$dir/corpus/$h/"
done
git rev-parse HEAD >"$dir/commit"
git diff --quiet HEAD -- server clients proto bench || echo "dirty" >>"$dir/commit"
du -sh "$dir"
