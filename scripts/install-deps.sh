#!/usr/bin/env bash
# Installs Plexus's build, test and run dependencies from Debian 12 packages.
# Idempotent: only packages that are missing are installed. Runs as root or via sudo.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds the benchmark peers' tqdm; PyTorch and
# torchvision are always installed: `import poptorch` runs over them; python3-matplotlib draws
# plexus-report's pictures, and headless chromium opens its HTML page in tests/python)
set -euo pipefail

packages=(
  cmake g++ gcc pkg-config make ninja-build ccache
  clang libclang-rt-14-dev lld universal-ctags
  libboost-dev libboost-program-options-dev
  libblis-pthread-dev libzstd-dev zstd libdeflate-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin libgloo-dev iproute2 abigail-tools
  nlohmann-json3-dev zlib1g-dev
  npm dataset-fashion-mnist fortunes
  python3 python3-dev python3-cffi python3-numpy python3-pytest python3-setuptools python3-pip
  python3-venv python3-wheel python3-torch python3-torchvision
  python3-matplotlib chromium
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-tqdm)
elif [[ $# -gt 0 ]]; then
  echo "install-deps.sh: unknown argument '$1' (expected --bench or nothing)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# npm may come from a non-Debian Node.js install; that is fine.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
