#!/bin/bash
# issue 20 item 4: native vs map-reduce, gemma3-270m (vllm CPU), 16K/32K inside the window, 64K beyond it
cd /work/runs/mr
source /work/main/.venv/bin/activate
date +%s > start
/usr/bin/time -v pytest -p no:cacheprovider --ruler-only --ruler-model=gemma3-270m --ruler-backend=vllm \
  --ruler-tasks=niah_single_1,niah_multikey_1 --ruler-lengths=16k,32k,64k --ruler-samples=5 \
  --ruler-mapreduce --ruler-mapreduce-chunk=2k --ruler-cache-dir=/work/runs/cache \
  --ruler-report=/work/runs/mr/mr_gemma3_vllm.json --ruler-markdown=/work/runs/mr/mr_gemma3_vllm.md \
  -rA > out.log 2>&1
echo $? > rc
date +%s > end
