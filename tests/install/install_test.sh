#!/usr/bin/env bash
# The install is relocatable and self-contained (issue 16, deliverable 5):
#   1. `cmake --install` into a temporary prefix;
#   2. docs/tutorial/tutorial.c built with `pkg-config --cflags --libs plexus` into
#      <prefix>/bin (rpath $ORIGIN/../<libdir>), and with find_package(plexus);
#   3. both run with PLEXUS_PLUGIN_PATH and PLEXUS_COLLECTIVES unset, LD_LIBRARY_PATH at
#      most the prefix's libdir; the collectives plugin must be loaded from
#      <libdir>/plexus of the prefix (glibc's LD_DEBUG=files says which file);
#   4. docs/plugins.md's example plugins build against the installed headers alone, export
#      only their entry point; the collectives one loads through PLEXUS_PLUGIN_PATH; the
#      strategy trains a two-stage program bit for bit like `sharded` and `pipelined`, also
#      when copied into <libdir>/plexus; plexus-plugin.pc gives the headers without
#      -lplexus, and docs/plugins.md's CMake snippet (plexus::plugin_headers) builds the
#      strategy with no libplexus dependency; the installed plexus-collectives-conformance
#      runs on the installed local plugin; the installed plexus-strategy-check passes the
#      installed pipelined strategy and the example one;
#   5. the prefix is moved to another folder: the program in it runs again, loading the
#      moved library and plugin, and the moved checker passes the moved sharded strategy; pkg-config and find_package on the moved prefix give
#      paths inside it, and programs built from them run.
# Usage: install_test.sh <build dir> <source dir> <CMAKE_INSTALL_LIBDIR> [cc] [cmake]
set -euo pipefail
export LC_ALL=C

usage="usage: install_test.sh <build dir> <source dir> <libdir> [cc] [cmake] [c++]"
build=${1:?$usage}
source_dir=${2:?$usage}
libdir=${3:?$usage}
cc=${4:-cc}
cmake=${5:-cmake}
cxx=${6:-c++}
# A sanitizer build of Plexus needs consumers built with the same sanitizers.
extra_flags=${PLEXUS_CONSUMER_FLAGS:-}
tutorial=$source_dir/docs/tutorial/tutorial.c
[[ $libdir != /* ]] || { echo "SKIP: CMAKE_INSTALL_LIBDIR $libdir is absolute, so the install cannot move"; exit 0; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plexus_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# run_clean <log> <program> [args]: runs with no plugin variables and LD_DEBUG=files
# (glibc writes every library it loads, and initialises, to <log>.<pid>).
run_clean() {
  local log=$1
  shift
  env -u PLEXUS_PLUGIN_PATH -u PLEXUS_COLLECTIVES LD_DEBUG=files LD_DEBUG_OUTPUT="$log" "$@" ||
    fail "$* returned $?"
}

# expect_loaded_from <log> <libdir>: libplexus.so and the local collectives plugin were
# loaded from <libdir> and <libdir>/plexus, and from nowhere else.
expect_loaded_from() {
  local log=$1 dir=$2 loaded
  loaded=$(cat "$log".* | grep -o 'calling init: [^ ]*libplexus[^ ]*' | sed 's/^calling init: //' |
    xargs realpath -s -m | sort -u)  # -s: "bin/../lib" becomes "lib", links stay
  printf 'loaded:\n%s\n' "$loaded"
  grep -qx "$dir/libplexus.so.[0-9]*" <<<"$loaded" || fail "libplexus.so was not loaded from $dir"
  grep -qx "$dir/plexus/libplexus-collectives-local.so" <<<"$loaded" ||
    fail "the collectives plugin was not loaded from $dir/plexus"
  if grep -v "^$dir/" <<<"$loaded"; then fail "a Plexus library was loaded from outside $dir"; fi
  rm -f "$log".*
}

# expect_inside <prefix> <flags...>: every -I and -L flag points into <prefix>.
expect_inside() {
  local prefix flag
  prefix=$(realpath "$1")
  shift
  for flag in "$@"; do
    case $flag in
      -I* | -L*)
        [[ $(realpath -m "${flag:2}") == "$prefix"/* ]] || fail "flag $flag is outside the install prefix $prefix"
        ;;
    esac
  done
}

# build_with_cmake <prefix> <build folder>: the find_package(plexus) consumer against <prefix>.
build_with_cmake() {
  "$cmake" -S "$source_dir/tests/install/consumer" -B "$2" -DCMAKE_PREFIX_PATH="$1" -DCMAKE_C_COMPILER="$cc" \
    -DPLEXUS_TUTORIAL_SOURCE="$tutorial" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$extra_flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$extra_flags" > "$2.log" 2>&1 || { cat "$2.log"; fail "configure the CMake consumer"; }
  "$cmake" --build "$2" >> "$2.log" 2>&1 || { cat "$2.log"; fail "build the CMake consumer"; }
  local found
  found=$(sed -n 's/^plexus_DIR:PATH=//p' "$2/CMakeCache.txt")
  echo "find_package(plexus) found $found"
  [[ $found == "$1"/* ]] || fail "find_package(plexus) found $found, not the install in $1"
}

prefix=$tmp/first/prefix
step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in include/plexus/plexus.h "$libdir/libplexus.so" "$libdir/plexus/libplexus-collectives-local.so" \
         "$libdir/pkgconfig/plexus.pc" "$libdir/pkgconfig/plexus-plugin.pc" "$libdir/cmake/plexus/plexusConfig.cmake"; do
  [[ -e $prefix/$f ]] || fail "the install has no $f; it holds:$(cd "$prefix" && find . ! -type d | sed 's/^/ /')"
done

step "pkg-config --cflags --libs plexus"
flags=$(PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config --cflags --libs plexus) || fail "pkg-config plexus"
echo "$flags"
# shellcheck disable=SC2086  # the flags are meant to split
expect_inside "$prefix" $flags

step "cc -std=c99 tutorial.c \$(pkg-config ...) -o <prefix>/bin/tutorial"
mkdir -p "$prefix/bin"
# shellcheck disable=SC2086,SC2016  # the flags split; $ORIGIN is for the dynamic loader
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror $extra_flags "$tutorial" $flags \
  -Wl,-rpath,'$ORIGIN/../'"$libdir" -o "$prefix/bin/tutorial"

step "run it: no PLEXUS_PLUGIN_PATH, no LD_LIBRARY_PATH"
run_clean "$tmp/ld" env -u LD_LIBRARY_PATH "$prefix/bin/tutorial"
expect_loaded_from "$tmp/ld" "$prefix/$libdir"

step "find_package(plexus): the tutorial from a CMake project"
build_with_cmake "$prefix" "$tmp/consumer"
run_clean "$tmp/ld" env LD_LIBRARY_PATH="$prefix/$libdir" "$tmp/consumer/tutorial" > /dev/null
expect_loaded_from "$tmp/ld" "$prefix/$libdir"

step "docs/plugins.md's plugins built out of tree against the installed headers"
# Its first ```c block is a strategy plugin, its third the skeleton of a collectives plugin.
# extract_block <markdown> <n> [language]: the n-th fenced block of that language (default c).
extract_block() {
  awk -v want="$2" -v fence="\`\`\`${3:-c}" '$0 == fence { n++; on = (n == want); next } /^```$/ { on = 0 } on' "$1"
}
mkdir -p "$tmp/plugins"
for plugin in 1:strategy-example:plx_strategy_plugin_v1 3:collectives-mine:plx_collectives_plugin_v1; do
  IFS=: read -r block name entry <<<"$plugin"
  extract_block "$source_dir/docs/plugins.md" "$block" > "$tmp/plugins/$name.c"
  # shellcheck disable=SC2046  # the flags are meant to split
  "$cc" -std=c99 -Wall -Wextra -pedantic -Werror -fPIC -shared -fvisibility=hidden \
    $(PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config --cflags plexus-plugin) "$tmp/plugins/$name.c" \
    -o "$tmp/plugins/libplexus-$name.so" || fail "docs/plugins.md's $name does not build"
  exported=$(nm -D --defined-only "$tmp/plugins/libplexus-$name.so" | awk 'NF >= 3 { print $3 }')
  [[ $exported == "$entry" ]] || fail "libplexus-$name.so exports '$exported', not only $entry"
  echo "libplexus-$name.so builds and exports $entry"
done
# The skeleton loads through PLEXUS_PLUGIN_PATH and its first collective fails cleanly.
if PLEXUS_PLUGIN_PATH=$tmp/plugins PLEXUS_COLLECTIVES=mine "$prefix/bin/tutorial" > /dev/null 2> "$tmp/mine.log"; then
  fail "the tutorial ran with a collectives plugin that does no collective"
fi
# Either replica may fail first: the message names the one that did.
grep -Eq "\(mine plugin\), replica [01]: mine: this collective is not written yet" "$tmp/mine.log" ||
  fail "the tutorial with PLEXUS_COLLECTIVES=mine: $(cat "$tmp/mine.log")"
echo "PLEXUS_COLLECTIVES=mine: $(cat "$tmp/mine.log")"

step "docs/plugins.md's strategy trains like the shipped ones (tests/install/strategy_driver.c)"
# shellcheck disable=SC2086  # the flags are meant to split
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror $extra_flags "$source_dir/tests/install/strategy_driver.c" $flags \
  -Wl,-rpath,"$prefix/$libdir" -o "$tmp/strategy_driver"
PLEXUS_PLUGIN_PATH=$tmp/plugins "$tmp/strategy_driver" example > "$tmp/example.out" || fail "strategy_driver example"
for shipped in sharded pipelined; do
  env -u PLEXUS_PLUGIN_PATH "$tmp/strategy_driver" $shipped > "$tmp/$shipped.out" || fail "strategy_driver $shipped"
  cmp -s "$tmp/example.out" "$tmp/$shipped.out" ||
    fail "the example strategy trains other losses or weights than $shipped: $(diff "$tmp/example.out" "$tmp/$shipped.out" | head -4)"
done
echo "example, sharded, pipelined: the same $(grep -c . "$tmp/example.out") losses and weights, bit for bit"
if PLEXUS_PLUGIN_PATH=$tmp/plugins "$tmp/strategy_driver" example fast > /dev/null 2> "$tmp/fast.log"; then
  fail "the example strategy accepted options"
fi
grep -q "execution strategy 'example': example takes no options, got 'fast'" "$tmp/fast.log" ||
  fail "unexpected error for options: $(cat "$tmp/fast.log")"
# Copied into the install's plugin folder, it needs no PLEXUS_PLUGIN_PATH.
cp "$tmp/plugins/libplexus-strategy-example.so" "$prefix/$libdir/plexus/"
env -u PLEXUS_PLUGIN_PATH "$tmp/strategy_driver" example | cmp -s - "$tmp/example.out" ||
  fail "the example strategy copied into $prefix/$libdir/plexus was not found or trained otherwise"
echo "found in $prefix/$libdir/plexus with no PLEXUS_PLUGIN_PATH"

step "docs/plugins.md's CMake snippet: the strategy with plexus::plugin_headers, not linked to libplexus"
pc_plugin=$(PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config --cflags --libs plexus-plugin) ||
  fail "pkg-config plexus-plugin"
[[ $pc_plugin != *-lplexus* ]] || fail "pkg-config --libs plexus-plugin links libplexus: $pc_plugin"
# shellcheck disable=SC2086
expect_inside "$prefix" $pc_plugin
mkdir -p "$tmp/cmake_plugin"
{
  echo "cmake_minimum_required(VERSION 3.16)"
  echo "project(plugin LANGUAGES C)"
  extract_block "$source_dir/docs/plugins.md" 1 cmake | sed "s|my_strategy.c|$tmp/plugins/strategy-example.c|"
} > "$tmp/cmake_plugin/CMakeLists.txt"
"$cmake" -S "$tmp/cmake_plugin" -B "$tmp/cmake_plugin/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  > "$tmp/cmake_plugin.log" 2>&1 && "$cmake" --build "$tmp/cmake_plugin/build" >> "$tmp/cmake_plugin.log" 2>&1 ||
  { cat "$tmp/cmake_plugin.log"; fail "docs/plugins.md's CMake snippet does not build the strategy"; }
built=$tmp/cmake_plugin/build/libplexus-strategy-mine.so
[[ -f $built ]] || fail "the CMake snippet made no libplexus-strategy-mine.so"
if readelf -d "$built" | grep -q 'NEEDED.*libplexus'; then fail "$built links libplexus"; fi
cp "$built" "$tmp/plugins/"
PLEXUS_PLUGIN_PATH=$tmp/plugins "$tmp/strategy_driver" mine | cmp -s - "$tmp/example.out" ||
  fail "the strategy built by the CMake snippet trained otherwise"
echo "plexus-plugin.pc: $pc_plugin; the CMake-built strategy needs no libplexus and trains like the shipped ones"

step "the installed conformance runner on the installed local plugin"
"$prefix/bin/plexus-collectives-conformance" --plugin "$prefix/$libdir/plexus/libplexus-collectives-local.so" \
  --gtest_filter='Sequencing.*:BroadcastRoots.*' > "$tmp/conformance.log" 2>&1 ||
  { cat "$tmp/conformance.log"; fail "plexus-collectives-conformance on the installed local plugin"; }
grep -E '^\[  PASSED  \]' "$tmp/conformance.log"

step "plugins/collectives_gloo built out of tree against the installed prefix, as a third party builds a plugin"
"$cmake" -S "$source_dir/plugins/collectives_gloo" -B "$tmp/gloo_build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$extra_flags" \
  > "$tmp/gloo_build.log" 2>&1 && "$cmake" --build "$tmp/gloo_build" -j2 >> "$tmp/gloo_build.log" 2>&1 ||
  { cat "$tmp/gloo_build.log"; fail "plugins/collectives_gloo does not build against the installed prefix"; }
gloo=$tmp/gloo_build/libplexus-collectives-gloo.so
[[ -f $gloo ]] || fail "the out-of-tree build made no libplexus-collectives-gloo.so"
if readelf -d "$gloo" | grep -q 'NEEDED.*libplexus'; then fail "$gloo links libplexus"; fi
if grep -q "$source_dir/plugins/collectives_\(common\|workers\)" "$tmp/gloo_build/CMakeFiles/plexus-collectives-gloo.dir/flags.make"; then
  fail "the out-of-tree Gloo build reads the kit's headers from the source tree, not the install"
fi
exported=$(nm -D --defined-only "$gloo" | awk 'NF >= 3 { print $3 }')
[[ $exported == plx_collectives_plugin_v1 ]] || fail "the out-of-tree Gloo plugin exports '$exported'"
echo "built against $prefix (plexus::collectives_workers from the install), exports only plx_collectives_plugin_v1"
step "the installed conformance runner on it: 2 workers started separately (PLEXUS_CLUSTER, no mpirun)"
# Every collective, layout, dtype and op; not the 1<<20-element and larger buffers or the
# chaos matrix, which collectives.gloo.conformance.* run on the same sources built in the
# tree (17 s here instead of 80 s: this checks the out-of-tree build, not the collectives).
bash "$source_dir/tests/plugins/conformance/launch_workers.sh" 2 \
  "$prefix/bin/plexus-collectives-conformance" --plugin "$gloo" '--gtest_filter=-Huge*:Matrix/Chaos.*:*_n1048576*' \
  > "$tmp/gloo_conformance.log" 2>&1 ||
  { tail -n 60 "$tmp/gloo_conformance.log"; fail "plexus-collectives-conformance on the out-of-tree Gloo plugin"; }
grep -E '\[  PASSED  \]' "$tmp/gloo_conformance.log"

step "the installed schedule checker on the installed pipelined strategy and on docs/plugins.md's example"
# check_strategy <plexus-strategy-check> <plugin> <summary> [options]: exit 0 with that summary line.
check_strategy() {
  local checker=$1 plugin=$2 summary=$3
  shift 3
  "$checker" --plugin "$plugin" "$@" > "$tmp/check.log" 2>&1 ||
    { cat "$tmp/check.log"; fail "plexus-strategy-check on $plugin"; }
  grep -qx "$summary" "$tmp/check.log" || { cat "$tmp/check.log"; fail "plexus-strategy-check on $plugin: no '$summary'"; }
  echo "$(basename "$plugin"): $summary"
}
check_strategy "$prefix/bin/plexus-strategy-check" "$prefix/$libdir/plexus/libplexus-strategy-pipelined.so" \
  "488 of 488 schedules pass"
check_strategy "$prefix/bin/plexus-strategy-check" "$tmp/plugins/libplexus-strategy-example.so" \
  "746 of 746 schedules pass"

moved=$tmp/second/elsewhere
step "move $prefix to $moved and run again"
mkdir -p "$(dirname "$moved")"
mv "$prefix" "$moved"
run_clean "$tmp/ld" env -u LD_LIBRARY_PATH "$moved/bin/tutorial" > /dev/null
expect_loaded_from "$tmp/ld" "$moved/$libdir"

check_strategy "$moved/bin/plexus-strategy-check" "$moved/$libdir/plexus/libplexus-strategy-sharded.so" \
  "138 of 138 schedules pass" --stages 2,4
step "pkg-config and find_package on the moved install"
flags=$(PKG_CONFIG_PATH=$moved/$libdir/pkgconfig pkg-config --cflags --libs plexus) || fail "pkg-config plexus"
echo "$flags"
# shellcheck disable=SC2086
expect_inside "$moved" $flags
# shellcheck disable=SC2086
"$cc" -std=c99 $extra_flags "$tutorial" $flags -o "$tmp/tutorial_moved"
run_clean "$tmp/ld" env LD_LIBRARY_PATH="$moved/$libdir" "$tmp/tutorial_moved" > /dev/null
expect_loaded_from "$tmp/ld" "$moved/$libdir"
build_with_cmake "$moved" "$tmp/consumer_moved"
run_clean "$tmp/ld" env LD_LIBRARY_PATH="$moved/$libdir" "$tmp/consumer_moved/tutorial" > /dev/null
expect_loaded_from "$tmp/ld" "$moved/$libdir"

step "ok"
