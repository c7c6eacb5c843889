#!/bin/bash
# issue 20 item 3: the long preset on gemma3-270m (vllm CPU), 10 samples per cell
cd /work/runs/long
source /work/main/.venv/bin/activate
date +%s > start
/usr/bin/time -v pytest -p no:cacheprovider --ruler-only --ruler-model=gemma3-270m --ruler-backend=vllm \
  --ruler-preset=long --ruler-samples=10 --ruler-cache-dir=/work/runs/cache \
  --ruler-report=/work/runs/long/long_gemma3_vllm.json --ruler-markdown=/work/runs/long/long_gemma3_vllm.md \
  -rA > out.log 2>&1
echo $? > rc
date +%s > end
