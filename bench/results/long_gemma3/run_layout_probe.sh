#!/bin/bash
cd /work/runs/probe
source /work/main/.venv/bin/activate
pytest -p no:cacheprovider --ruler-only --ruler-model=gemma3-270m --ruler-backend=vllm \
  --ruler-tasks=niah_single_1,niah_multikey_1 --ruler-lengths=8k --ruler-samples=2 --ruler-mapreduce --ruler-mapreduce-chunk=2k \
  --ruler-cache-dir=/work/runs/cache-probe --ruler-report=/work/runs/probe/probe.json --ruler-markdown=/work/runs/probe/probe.md -rA > out.log 2>&1
echo $? > rc
