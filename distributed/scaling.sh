#!/usr/bin/env bash
# The scaling report of reports/mpi/ (not a test): `alto-mpi cpd` at P = 1, 2, 4 ranks
# (oversubscribed on a small machine, so times mean nothing) on the real tensors; the bytes
# each mode sends per iteration against a whole-matrix allreduce, and memory per rank.
# Usage: distributed/scaling.sh BINARY OUT_DIR TENSOR...
set -euo pipefail
bin=$1 out=$2
shift 2
mkdir -p "$out"
bytes="$out/bytes.csv" memory="$out/memory.csv"
echo "tensor,ranks,mode,partial_rows_bytes,updated_rows_bytes,whole_matrix_allreduce_bytes" >"$bytes"
echo "tensor,ranks,rank,nonzeros,most_held_while_building,local_tensor_bytes,peak_rss_bytes" >"$memory"
for t in "$@"; do
  name=$(basename "$t" .tns)
  for p in 1 2 4; do
    log=$(mpirun --oversubscribe --allow-run-as-root -np "$p" "$bin" cpd "$t" --rank 16 \
      --iters 2 --tol 0 --threads 1)
    echo "$log" | awk -v t="$name" -v p="$p" '/^mode [0-9]+: interval exchange/ {
        gsub(":", "", $2); print t "," p "," $2 "," $5 "," $7 "," $(NF-1) }' >>"$bytes"
    echo "$log" | awk -v t="$name" -v p="$p" '/^memory rank/ {
        gsub(":", "", $3); print t "," p "," $3 "," $4 "," $8 "," $14 "," $18 }' >>"$memory"
  done
done
