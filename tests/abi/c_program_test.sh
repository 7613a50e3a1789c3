#!/usr/bin/env bash
# Installs the built project into a temporary prefix, then builds against the install the
# way users do (docs/design.md, "The C ABI": "a plain C program links with one line"):
#   1. c_program/main.c as C99 with the C compiler given (gcc unless told) and
#      `pkg-config --cflags --libs plexus`, and runs it;
#   2. cmake_consumer/ with find_package(plexus) -> plexus::plexus (C and C++), and runs it.
# Usage: c_program_test.sh <build dir> <tests/abi source dir> <CMAKE_INSTALL_LIBDIR> [cc] [cmake] [c++]
set -euo pipefail
export LC_ALL=C

build=${1:?usage: c_program_test.sh <build dir> <tests/abi dir> <libdir> [cc] [cmake] [c++]}
src=${2:?usage: c_program_test.sh <build dir> <tests/abi dir> <libdir> [cc] [cmake] [c++]}
libdir=${3:?usage: c_program_test.sh <build dir> <tests/abi dir> <libdir> [cc] [cmake] [c++]}
cc=${4:-gcc}
cmake=${5:-cmake}
cxx=${6:-g++}
# Extra compile and link flags for the consumer programs: a sanitizer build of Plexus
# needs consumers built with the same sanitizers (the ASan runtime must load first).
extra_flags=${PLEXUS_CONSUMER_FLAGS:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plexus_c_program.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
# A relative CMAKE_INSTALL_LIBDIR is under the prefix; an absolute one is used as is.
if [[ $libdir = /* ]]; then prefix_libdir=$libdir; else prefix_libdir=$prefix/$libdir; fi

step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

step "install $build into $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
for f in "$prefix/include/plexus/plexus.h" "$prefix_libdir/libplexus.so" "$prefix_libdir/pkgconfig/plexus.pc" \
         "$prefix_libdir/cmake/plexus/plexusConfig.cmake"; do
  [[ -e $f ]] || fail "the install has no $f; it holds:$(cd "$prefix" && find . ! -type d | sed 's/^/ /')"
done

step "pkg-config --cflags --libs plexus"
flags=$(PKG_CONFIG_PATH=$prefix_libdir/pkgconfig pkg-config --cflags --libs plexus) || fail "pkg-config plexus"
echo "$flags"
# The flags must point into this install (a prefix frozen at configure time would send
# the compiler to another, or to no, copy of Plexus).
prefix_real=$(realpath "$prefix")
for flag in $flags; do
  case $flag in
    -I*|-L*)
      dir=${flag:2}
      real=$(realpath -m "$dir")
      [[ $real == "$prefix_real"/* ]] ||
        fail "pkg-config flag $flag is outside the install prefix $prefix" \
             "(plexus.pc does not follow the prefix given to cmake --install)"
      ;;
  esac
done

step "$cc -std=c99 main.c against the install"
# shellcheck disable=SC2086  # the pkg-config flags are meant to split
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror $extra_flags "$src/c_program/main.c" $flags \
  -Wl,-rpath,"$prefix_libdir" -o "$tmp/c_program"
if command -v ldd > /dev/null; then
  loaded=$(ldd "$tmp/c_program" | awk '/libplexus/ { print $3 }')
  [[ $(realpath "$loaded") == "$prefix_real"/* ]] || fail "c_program loads libplexus from $loaded, not from the install"
fi
"$tmp/c_program" || fail "c_program (pkg-config build) returned $?"

step "find_package(plexus) from a CMake project"
"$cmake" -S "$src/cmake_consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$extra_flags" -DCMAKE_CXX_FLAGS="$extra_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$extra_flags" > "$tmp/consumer-configure.log" 2>&1 ||
  { cat "$tmp/consumer-configure.log"; fail "configure cmake_consumer"; }
"$cmake" --build "$tmp/consumer" > "$tmp/consumer-build.log" 2>&1 ||
  { cat "$tmp/consumer-build.log"; fail "build cmake_consumer"; }
grep -q "plexus_DIR:PATH=$prefix" "$tmp/consumer/CMakeCache.txt" ||
  fail "find_package(plexus) found $(grep plexus_DIR "$tmp/consumer/CMakeCache.txt"), not the install in $prefix"
"$tmp/consumer/consumer_c" || fail "consumer_c returned $?"
"$tmp/consumer/consumer_cpp" || fail "consumer_cpp returned $?"

step "ok"
