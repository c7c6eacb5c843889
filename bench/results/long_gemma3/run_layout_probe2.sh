#!/bin/bash
cd /work/runs/probe
source /work/main/.venv/bin/activate
for L in format-last example-first; do
pytest -p no:cacheprovider --ruler-only --ruler-model=gemma3-270m --ruler-backend=vllm \
  --ruler-tasks=niah_single_1,niah_multikey_1 --ruler-lengths=8k --ruler-samples=2 --ruler-mapreduce --ruler-mapreduce-chunk=2k --ruler-mapreduce-layout=$L \
  --ruler-cache-dir=/work/runs/cache-probe --ruler-report=/work/runs/probe/probe-$L.json -rA > out-$L.log 2>&1
done
echo done > rc2
