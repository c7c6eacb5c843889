#!/usr/bin/env bash
# The per-run page of a real run: SmolLM2-135M-Instruct (the embedded model) on the hf engine,
# 2 tasks at 1K and 2K, 3 samples each, no prediction cache (every answer generated now). The
# test path given, this folder, holds no tests: pytest collects only the suite.
# Then its screenshots in headless Chromium (screenshots.sh), as the browser test opens it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=bench/results/html
pytest -p no:cacheprovider --ruler-only --ruler-model=smollm2-135m --ruler-backend=hf \
    --ruler-tasks=niah_single_1,vt --ruler-lengths=1k,2k --ruler-samples=3 --ruler-no-cache \
    --ruler-report=$out/smollm2_hf.json --ruler-html=$out/smollm2_hf.html "$out" | tee $out/smollm2_hf.terminal.txt || true
