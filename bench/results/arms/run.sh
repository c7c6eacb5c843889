#!/bin/sh
# issue 39: a wrong RoPE base caught on CPU. SmolLM2-135M-Instruct (hf engine, CPU), the reference arm as shipped
# (rope_theta 100000) against an arm whose config says rope_theta 10000 (a classic misconfiguration), on the same
# samples, with a non-inferiority margin of 10 points. Run from the repository root under the model lock:
#   flock /work/notes/model.lock sh bench/results/arms/run.sh
set -x
pytest bench/results/arms -p no:cacheprovider --ruler-model=smollm2-135m --ruler-backend=hf --ruler-only \
  --ruler-tasks=niah_single_1 --ruler-lengths=1k,2k,4k --ruler-samples=10 \
  --ruler-arm=ref --ruler-arm='rope1e4:hf_overrides={"rope_parameters": {"rope_theta": 10000}}' \
  --ruler-noninferiority-margin=10 --ruler-cache-dir=/tmp/h-arms-cache \
  --ruler-report=bench/results/arms/rope_theta.json --ruler-markdown=bench/results/arms/rope_theta.md
