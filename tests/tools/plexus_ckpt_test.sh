#!/usr/bin/env bash
# Tests of plexus-ckpt (tools/plexus_ckpt) on checkpoints written by ckpt_writer: the
# output and exit status of list, verify and diff on good files, on damaged ones (a
# flipped byte in a tensor, the manifest or the header, truncated, trailing bytes, not a
# checkpoint) and on bad command lines.
# Usage: plexus_ckpt_test.sh <plexus-ckpt> <ckpt_writer>
set -euo pipefail
here=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
ckpt=$(realpath "$1")
writer=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

tool_name=plexus-ckpt tool=$ckpt
# shellcheck source=tests/tools/cli_expect.sh
source "$here/cli_expect.sh"

# corrupt FILE TENSOR: flips one bit in the middle of TENSOR's zstd frame (offsets from the manifest).
corrupt() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
path, name = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
manifest_bytes = struct.unpack_from("<Q", data, 16)[0]
tensors = json.loads(data[64:64 + manifest_bytes])["tensors"]
t = next(t for t in tensors if t["name"] == name)
data[t["offset"] + t["size"] // 2] ^= 0x10
open(path, "wb").write(data)
PY
}

# flip FILE OFFSET: flips one bit of the byte at OFFSET.
flip() {
  python3 -c 'import sys; p, at = sys.argv[1], int(sys.argv[2]); d = bytearray(open(p, "rb").read()); d[at] ^= 1; open(p, "wb").write(d)' "$1" "$2"
}

for variant in base bump drop dtype shape rows; do
  "$writer" $variant.ckpt --variant $variant --level 3
done

# --- command line
expect 0 --help
has out "^  list +print the header facts"
has out "^  verify "
has out "^  diff "
expect 0 list --help
has out "Usage: plexus-ckpt list FILE"
has out "--ratios"
has out "--level arg \(=3\)"
expect 0 verify --help
has out "Usage: plexus-ckpt verify FILE\.\.\."
expect 0 diff --help
has out "--fail-on-difference"
expect 1
has err "plexus-ckpt: missing command"
has err "Usage: plexus-ckpt COMMAND"
expect 1 frobnicate base.ckpt
has err "plexus-ckpt: unknown command 'frobnicate' \(commands: list, verify, diff"
expect 1 list
has err "plexus-ckpt list: missing FILE"
has err "Try 'plexus-ckpt list --help'"
expect 1 list base.ckpt --no-such-option
has err "plexus-ckpt list: unrecogni[sz]ed option '--no-such-option'"
expect 1 list base.ckpt bump.ckpt
has err "plexus-ckpt list: too many positional options"
expect 1 list base.ckpt --ratios --level 0
has err "plexus-ckpt list: --level must be in 1 \.\. 19, got 0"
expect 1 list base.ckpt --level many
has err "plexus-ckpt list: .*'--level' is invalid"
expect 1 verify
has err "plexus-ckpt verify: missing FILE"
expect 1 diff base.ckpt
has err "plexus-ckpt diff: missing B"
expect 1 list nowhere.ckpt
has err "^plexus-ckpt list: checkpoint 'nowhere.ckpt': cannot open \(No such file or directory\)$"

# --- list
expect 0 list base.ckpt
has out "^checkpoint 'base.ckpt': format version 1, [0-9]+ bytes$"
has out "^replication factor 4, step 100, counters: epoch=1, loader_run=7$"
has out '^options: \{"optimizer":"sgd"\}$'
has out "^name +kind +dtype +shape +rows +group/stride +retrieval +shard/pad +shuffle +bytes +stored +ratio$"
has out "^layer0/weight +variable +float32 +\[64,32\] +2 +2/1 +one_per_group +- +on +16384 +[0-9]+ +[0-9]+\.[0-9]{2}$"
has out "^layer0/bias +variable +float32 +\[30\] +1 +4/1 +one_per_group +4/2 +on +120 +[0-9]+ +[0-9]+\.[0-9]{2}$"
has out "^optimizer/count +remote_variable +int32 +\[16\] +4 +1/1 +all_replicas +- +off +256 +[0-9]+ +[0-9]+\.[0-9]{2}$"
has out "^buffer/slot +remote_buffer_slot +uint8 +\[100\] +4 +1/1 +all_replicas +- +off +400 +[0-9]+ +[0-9]+\.[0-9]{2}$"
has out "^total: 4 tensors, 17160 bytes, [0-9]+ stored, ratio [0-9]+\.[0-9]{2}$"
[[ $(wc -l <out) == 9 ]] || fail "list prints 9 lines for 4 tensors: $(cat out)"
expect 0 list base.ckpt --ratios --level 5
has out "ratio +shuffled@5 +plain@5$"
has out "^layer0/weight .* [0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2}$"
has out "^optimizer/count .* [0-9]+\.[0-9]{2} +- +-$"
has out "^float32 tensors recompressed at level 5: ratio [0-9]+\.[0-9]{2} with shuffle, [0-9]+\.[0-9]{2} without$"
# At the level the file was written with, the shuffled ratio is the stored one.
expect 0 list base.ckpt --ratios
awk '$1 ~ /^layer0\// && $12 != $13 { exit 1 }' out || fail "shuffled@3 differs from the stored ratio: $(cat out)"

# --- verify
expect 0 verify base.ckpt
has out "^base.ckpt: OK \(4 tensors, $(stat -c %s base.ckpt) bytes\)$"
expect 0 verify base.ckpt drop.ckpt rows.ckpt
has out "^drop.ckpt: OK \(3 tensors, [0-9]+ bytes\)$"
[[ $(wc -l <out) == 3 ]] || fail "verify prints one line per file: $(cat out)"

# A flipped bit in a tensor's data: verify names the tensor; list still reads the manifest,
# list --ratios and diff read the tensor and fail.
cp base.ckpt data.ckpt
corrupt data.ckpt layer0/weight
expect 1 verify base.ckpt data.ckpt drop.ckpt
has out "^base.ckpt: OK"
has out "^drop.ckpt: OK"
has err "^plexus-ckpt verify: checkpoint 'data.ckpt': tensor 'layer0/weight': "
grep -q "data.ckpt: OK" out && fail "verify reports the damaged file as OK"
expect 0 list data.ckpt
expect 1 list data.ckpt --ratios
has err "^plexus-ckpt list: checkpoint 'data.ckpt': tensor 'layer0/weight': "
expect 1 diff base.ckpt data.ckpt
has err "^plexus-ckpt diff: checkpoint 'data.ckpt': tensor 'layer0/weight': "
cp base.ckpt slot.ckpt
corrupt slot.ckpt buffer/slot
expect 1 verify slot.ckpt
has err "^plexus-ckpt verify: checkpoint 'slot.ckpt': tensor 'buffer/slot': "

cp base.ckpt manifest.ckpt
flip manifest.ckpt 80
expect 1 verify manifest.ckpt
has err "checkpoint 'manifest.ckpt': the header and manifest checksum does not match"
cp base.ckpt version.ckpt
flip version.ckpt 8
expect 1 list version.ckpt
has err "checkpoint 'version.ckpt': checkpoint format version 0; this build reads version 1"
cp base.ckpt reserved.ckpt
flip reserved.ckpt 50
expect 1 verify reserved.ckpt
has err "checkpoint 'reserved.ckpt': reserved header bytes are not zero"

cp base.ckpt truncated.ckpt
truncate -s -100 truncated.ckpt
expect 1 verify truncated.ckpt
has err "^plexus-ckpt verify: checkpoint 'truncated.ckpt': the header records $(stat -c %s base.ckpt) bytes but the file has $(stat -c %s truncated.ckpt) \(truncated\)$"
truncate -s 10 truncated.ckpt
expect 1 verify truncated.ckpt
has err "checkpoint 'truncated.ckpt': 10 bytes, shorter than the 64-byte header \(truncated or not a checkpoint\)"
: >empty.ckpt
expect 1 verify empty.ckpt
has err "checkpoint 'empty.ckpt': 0 bytes, shorter than the 64-byte header"
cp base.ckpt trailing.ckpt
echo "junk" >>trailing.ckpt
expect 1 verify trailing.ckpt
has err "checkpoint 'trailing.ckpt': .* \(trailing bytes\)$"
head -c 200 /dev/zero | tr '\0' 'x' >text.ckpt
expect 1 diff base.ckpt text.ckpt
has err "^plexus-ckpt diff: checkpoint 'text.ckpt': not a Plexus checkpoint \(wrong magic number\)$"
mkdir folder.ckpt
expect 1 verify folder.ckpt
has err "checkpoint 'folder.ckpt': "
expect 1 verify nowhere.ckpt base.ckpt
has err "checkpoint 'nowhere.ckpt': cannot open \(No such file or directory\)"
has out "^base.ckpt: OK"

# --- diff
expect 0 diff base.ckpt base.ckpt --fail-on-difference
has out "^A: base.ckpt \(4 tensors\)$"
has out "^tensor +max abs difference$"
has out "^layer0/weight +0$"
has out "^buffer/slot +0$"
[[ $(tail -n 1 out) == "max abs difference: 0" ]] || fail "diff's last line: $(tail -n 1 out)"
expect 0 diff base.ckpt bump.ckpt
has out "^layer0/weight +0\.25$"
has out "^layer0/bias +0$"
has out "^optimizer/count +3$"
[[ $(tail -n 1 out) == "max abs difference: 3" ]] || fail "diff's last line: $(tail -n 1 out)"
expect 2 diff base.ckpt bump.ckpt --fail-on-difference
expect 2 diff base.ckpt drop.ckpt --fail-on-difference
has out "^buffer/slot +only in A$"
expect 0 diff drop.ckpt base.ckpt
has out "^buffer/slot +only in B$"
[[ $(tail -n 1 out) == "max abs difference: 0" ]] || fail "diff's last line: $(tail -n 1 out)"
expect 2 diff base.ckpt dtype.ckpt --fail-on-difference
has out "^optimizer/count +dtype or shape differs: int32 \[16\] vs float32 \[16\]$"
expect 2 diff base.ckpt shape.ckpt --fail-on-difference
has out "^layer0/weight +dtype or shape differs: float32 \[64,32\] vs float32 \[32,64\]$"
expect 2 diff base.ckpt rows.ckpt --fail-on-difference
has out "^buffer/slot +rows differ: 4 vs 2$"
expect 1 diff base.ckpt nowhere.ckpt
has err "^plexus-ckpt diff: checkpoint 'nowhere.ckpt': cannot open"

echo "plexus-ckpt: all checks passed"
