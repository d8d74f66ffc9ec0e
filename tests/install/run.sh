#!/usr/bin/env bash
# Install into a temporary prefix, then use the installed tree the way a user
# would: the binary finds its presets relative to itself (no TRAINSIM_DATA, run
# from /), and a program builds against the library through pkg-config.
#   usage: run.sh <build dir>
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/trainsim include/trainsim/common.h include/trainsim/sim.h lib/pkgconfig/trainsim.pc \
         share/trainsim/models/gpt3-175b.json share/trainsim/gpus/h100-sxm5-80gb.json \
         share/trainsim/clusters/dgx-h100.json; do
  [ -e "$prefix/$f" ] || { echo "install: missing $f"; exit 1; }
done
ls "$prefix"/lib*/libtrainsim.a "$prefix"/lib*/libtrainsim.so >/dev/null
out=$(cd / && env -u TRAINSIM_DATA "$prefix/bin/trainsim" models)
echo "$out" | grep -q '^gpt3-175b .*174.6 B' || { echo "install: installed binary does not list gpt3-175b"; exit 1; }
(cd / && env -u TRAINSIM_DATA "$prefix/bin/trainsim" simulate >/dev/null)
cat > "$prefix/t.c" <<'C'
#include <stdio.h>
#include <trainsim/model.h>
int main(void)
{
    ModelSpec m;
    TsError e = {0};
    if (model_preset("gpt3-175b", &m, &e)) { puts(e.msg); return 1; }
    ModelCounts c;
    model_count_params(&m, &c);
    printf("%lld\n", (long long)c.total);
    return 0;
}
C
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc "$prefix/t.c" -o "$prefix/t" -Wl,-rpath,"$prefix/lib" $(pkg-config --cflags --libs trainsim)
got=$(TRAINSIM_DATA="$prefix/share/trainsim" "$prefix/t")
[ "$got" = 174604259328 ] || { echo "install: library program printed '$got'"; exit 1; }
echo "install: binary, library, headers, pkg-config file and presets work from $prefix"
