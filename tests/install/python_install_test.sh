#!/usr/bin/env bash
# The Python package as users install it (README "From Python", issue 17):
#   1. `cmake --install` into a temporary prefix;
#   2. a virtual environment that sees Debian's numpy and cffi (`python3 -m venv
#      --system-site-packages`; without python3-venv: `pip install --target` + PYTHONPATH);
#   3. `pip install --no-build-isolation --no-index ./bindings/python` with PLEXUS_PREFIX
#      set to the prefix: the cffi extension compiled against the installed headers and
#      libplexus.so, nothing downloaded (pip as root too: the venv is not the system's);
#   4. the plexus-report command pip installed (--help, and a one-step memory report drawn);
#   5. docs/python/quickstart.py (the README's program, verbatim) run with
#      PLEXUS_PLUGIN_PATH, PLEXUS_COLLECTIVES, LD_LIBRARY_PATH and PYTHONPATH unset, from
#      outside the source tree: `plexus` is imported from the environment, libplexus.so
#      and the collectives plugin are loaded from the prefix (glibc's LD_DEBUG=files), and
#      the loss drops.
# Usage: python_install_test.sh <build dir> <source dir> <CMAKE_INSTALL_LIBDIR> <python> [cmake]
set -euo pipefail
export LC_ALL=C

usage="usage: python_install_test.sh <build dir> <source dir> <libdir> <python> [cmake]"
build=$(cd "${1:?$usage}" && pwd)
source_dir=$(cd "${2:?$usage}" && pwd)
libdir=${3:?$usage}
python=${4:?$usage}
cmake=${5:-cmake}
program=$source_dir/docs/python/quickstart.py
[[ $libdir != /* ]] || { echo "SKIP: CMAKE_INSTALL_LIBDIR $libdir is absolute: the install would leave the prefix"; exit 0; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plexus_python_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

prefix=$tmp/prefix
step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
installed_libdir=$prefix/$libdir
[[ -e $installed_libdir/libplexus.so ]] || fail "the install has no $installed_libdir/libplexus.so"

# pip builds in the source folder (build/, plexus.egg-info/): build from a copy, so that
# the test leaves the tree as it was and never meets another build's leftovers.
step "copy bindings/python (and docs/ops.md, which setup.py ships) to $tmp/src"
mkdir -p "$tmp/src/bindings" "$tmp/src/docs"
cp -r "$source_dir/bindings/python" "$tmp/src/bindings/python"
rm -rf "$tmp/src/bindings/python/build" "$tmp/src/bindings/python/"*.egg-info
find "$tmp/src" -name __pycache__ -prune -exec rm -rf {} +
cp "$source_dir/docs/ops.md" "$tmp/src/docs/ops.md"

# No index and no build isolation: pip uses the setuptools, wheel and cffi it finds and
# never goes to the network. PIP_* from the caller's environment are dropped.
pip_flags=(--no-build-isolation --no-index --disable-pip-version-check --no-input --root-user-action=ignore)
clean_env=(env -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_FIND_LINKS -u PIP_REQUIRE_VIRTUALENV -u PYTHONPATH
           -u PYTHONHOME -u PYTHONUSERBASE -u PLEXUS_PLUGIN_PATH -u PLEXUS_COLLECTIVES -u LD_LIBRARY_PATH
           -u PKG_CONFIG_PATH)
run_env=("${clean_env[@]}")
if "$python" -m venv --system-site-packages "$tmp/venv" > "$tmp/venv.log" 2>&1; then
  step "pip install into a venv (--system-site-packages: Debian's numpy and cffi)"
  py=$tmp/venv/bin/python
  "${clean_env[@]}" PLEXUS_PREFIX="$prefix" "$py" -m pip install "${pip_flags[@]}" "$tmp/src/bindings/python" \
    > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install into the venv"; }
  expected_home=$tmp/venv/
else
  step "no venv ($(tail -n 1 "$tmp/venv.log")): pip install --target $tmp/site, PYTHONPATH"
  py=$python
  "${clean_env[@]}" PLEXUS_PREFIX="$prefix" "$py" -m pip install "${pip_flags[@]}" --no-deps --target "$tmp/site" \
    "$tmp/src/bindings/python" > "$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install --target"; }
  run_env+=(PYTHONPATH="$tmp/site")
  expected_home=$tmp/site/
fi
grep -E "^(Successfully installed|Processing|  Building)" "$tmp/pip.log" || true
if grep -qiE "downloading|https?://" "$tmp/pip.log"; then cat "$tmp/pip.log"; fail "pip went to the network"; fi

# A sanitizer build of libplexus.so needs its runtime loaded first (tests/python does the same).
if [[ -n ${PLEXUS_PYTHON_PRELOAD:-} ]]; then
  run_env+=(LD_PRELOAD="$PLEXUS_PYTHON_PRELOAD" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
fi

step "where the package comes from"
(cd "$tmp" && "${run_env[@]}" "$py" -c 'import plexus, plexus._plexus_ffi as f, popxl, popxl.ops as o, poptorch
for m in (plexus, f, popxl, o, poptorch): print(m.__file__)') \
  > "$tmp/where.txt" || fail "import plexus, popxl and poptorch from the installed package"
cat "$tmp/where.txt"
while read -r file; do
  [[ $file == "$expected_home"* ]] || fail "$file is not in the installed package under $expected_home"
done < "$tmp/where.txt"

# pip puts the plexus-report entry point in the environment's bin/ (the venv's, on PATH once
# it is activated; <target>/bin with --target). It draws a one-step memory report.
step "plexus-report, the installed command"
report_cmd=${expected_home}bin/plexus-report
[[ -x $report_cmd ]] || fail "pip installed no $report_cmd"
(cd "$tmp" && "${run_env[@]}" "$report_cmd" --help) > "$tmp/report-help.txt" 2>&1 ||
  { cat "$tmp/report-help.txt"; fail "plexus-report --help returned non-zero"; }
head -n 1 "$tmp/report-help.txt" | grep -q '^usage: plexus-report' || fail "plexus-report --help printed no usage"
cat > "$tmp/memory.json" <<'EOT'
{"schema": "plexus.memory_report", "version": 1, "replication_factor": 1, "devices": [{"device": 0, "stages": [0],
 "arena_bytes": 64, "planned_peak_bytes": 48, "variable_bytes": 32, "remote_buffer_bytes": 0, "offloaded_bytes": 0,
 "kinds": ["variables", "activations"], "steps": [{"step": 0, "label": "fwd stage 0 mb 0: relu 'y'", "stage": 0,
 "bytes": {"variables": 32, "activations": 16}}], "peak": {"step": 0, "bytes": 48,
 "tensors": [{"name": "w", "kind": "variables", "bytes": 32}, {"name": "y", "kind": "activations", "bytes": 16}]},
 "variables": [{"name": "w", "device_bytes": 32, "remote_bytes": 0, "shard_over": 1}]}]}
EOT
(cd "$tmp" && "${run_env[@]}" "$report_cmd" --memory "$tmp/memory.json" --out "$tmp/report") > "$tmp/report.txt" 2>&1 ||
  { cat "$tmp/report.txt"; fail "plexus-report on a one-step memory report returned non-zero"; }
for f in memory-memory.png memory-memory.svg index.html; do
  [[ -s $tmp/report/$f ]] || { cat "$tmp/report.txt"; fail "plexus-report wrote no $f"; }
done
echo "plexus-report: $(tr '\n' ' ' < "$tmp/report.txt")"

step "run docs/python/quickstart.py: no PLEXUS_PLUGIN_PATH, LD_LIBRARY_PATH or PYTHONPATH"
(cd "$tmp" && "${run_env[@]}" LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" "$py" "$program") > "$tmp/out.txt" 2>&1 ||
  { cat "$tmp/out.txt"; fail "quickstart.py returned non-zero"; }
cat "$tmp/out.txt"

# libplexus.so and the local collectives plugin from the prefix, and from nowhere else.
loaded=$(cat "$tmp/ld".* | grep -o 'calling init: [^ ]*libplexus[^ ]*' | sed 's/^calling init: //' |
  xargs realpath -s -m | sort -u)
printf 'loaded:\n%s\n' "$loaded"
grep -qx "$installed_libdir/libplexus.so.[0-9]*" <<<"$loaded" || fail "libplexus.so was not loaded from $installed_libdir"
grep -qx "$installed_libdir/plexus/libplexus-collectives-local.so" <<<"$loaded" ||
  fail "the collectives plugin was not loaded from $installed_libdir/plexus"
if grep -v "^$installed_libdir/" <<<"$loaded"; then fail "a Plexus library was loaded from outside $installed_libdir"; fi

step "the loss drops"
losses=$(sed -n 's/^run [0-9]*: loss \([0-9.eE+-]*\)$/\1/p' "$tmp/out.txt")
[[ $(wc -l <<<"$losses") -ge 2 ]] || fail "quickstart.py printed no 'run N: loss X' lines"
first=$(head -n 1 <<<"$losses")
last=$(tail -n 1 <<<"$losses")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b == b && b < a / 4) }' ||
  fail "the loss went from $first to $last (expected it to fall below a quarter)"
echo "loss $first -> $last"

step "ok"
