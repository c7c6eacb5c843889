"""Benchmark: the openai engine over several endpoints (issue 24: past one machine).

Four measurements, each against a baseline run in this same process:

1. ``scaling``: items/s with 1, 2 and 4 endpoints. The endpoints are a stand-in for
   remote GPU servers: the scripted stub (tests/servers/stub_openai.py) in a child
   process each, answering after a fixed ``--service`` seconds, at most ``--server-slots``
   requests at once (the rest wait, as ``--max-num-seqs`` makes them). The requests are
   real RULER prompts (token ids, the runner's affinity keys), generated once; each round
   sends every item's samples in one engine call in prefix order, as the engine queue
   does; rounds alternate over the endpoint counts. ``ratio_2`` = median of per-round
   items/s at 2 over 1 (goal: at least 1.9).
2. ``cached_share``: the share of prompt tokens each endpoint served from its prefix cache,
   with prefix affinity and without (engine option ``affinity=false``: each request to the
   least loaded endpoint). The stand-in keeps vLLM-style 16-token blocks and reports
   ``usage.prompt_tokens_details.cached_tokens``: a simulated cache, fresh per measurement,
   not a GPU's.
3. ``failover``: a whole plugin run (pytest in a child process) over two stand-ins answering
   by the oracle (the needle read out of the prompt), one of which kills itself (SIGKILL)
   with a request in flight; against the same run on one healthy endpoint: the run completes,
   every prediction equal, the report's per-endpoint counts and the terminal name the failover.
4. ``real_servers``: two llama.cpp servers (llama-cpp-python's, the embedded SmolLM2-135M
   GGUF) against one of them: the same RULER requests, predictions compared one by one.

    python bench/scale_out.py [--service 0.2] [--rounds 5] [--parts scaling,cached_share,failover,real_servers]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.harness import pytest_command, run_arm  # noqa: E402

TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multivalue", "niah_multiquery", "vt")


# --------------------------------------------------------------------------- stand-in servers


def _serve(ports, kwargs: dict, oracle: bool, die_at: int | None) -> None:
    """A child process: one stub server until killed (``die_at``: SIGKILL itself on that completion)."""
    import signal
    import threading

    from tests.servers.stub_openai import StubServer, completion

    count, lock = [0], threading.Lock()

    def handler(call):
        if call.route != "/v1/completions" or call.body.get("max_tokens", 1) <= 1:
            return None
        with lock:
            count[0] += 1
            if die_at is not None and count[0] == die_at:
                os.kill(os.getpid(), signal.SIGKILL)  # a crash: this request and those in flight get no answer
        if oracle:
            from pytest_ruler.engines.scripted import oracle_answer

            return 200, completion(oracle_answer(call.prompt))
        return None

    with StubServer(handler, record=False, **kwargs) as server:
        ports.put(server.base_url)
        threading.Event().wait()


class StandIn:
    """A stub server in a child process (see ``_serve``)."""

    def __init__(self, *, oracle: bool = False, die_at: int | None = None, **kwargs):
        ctx = multiprocessing.get_context("spawn")
        self.ports = ctx.Queue()
        self.proc = ctx.Process(target=_serve, args=(self.ports, kwargs, oracle, die_at), daemon=True)

    def __enter__(self) -> "StandIn":
        self.proc.start()
        self.base_url = self.ports.get(timeout=120)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)


# --------------------------------------------------------------------------- requests


def ruler_items(seeds: int, samples: int, length: int, tasks: tuple[str, ...] = TASKS) -> list:
    """Every item's requests (real RULER prompts, with the runner's affinity keys), generated once."""
    from pytest_ruler.run_config import RulerConfig
    from pytest_ruler.run import runner
    from pytest_ruler.run.session import RulerSession

    session = RulerSession(RulerConfig(model="smollm2-135m", backend="scripted", tasks=tasks, samples=samples), None)
    return [runner.item_inputs(session, task, length, seed, samples).requests for task in tasks for seed in range(seeds)]


def engine(urls: list[str], concurrency: int, **options):
    from pytest_ruler.engines.base import EngineConfig
    from pytest_ruler.engines.openai import OpenAIEngine

    return OpenAIEngine(EngineConfig(model="stub-model", backend="openai", tokenizer="smollm2-135m",
                                     base_url=urls if len(urls) > 1 else urls[0], options={"concurrency": concurrency, **options}))


def one_call(eng, items: list) -> tuple[float, list]:
    """Every item's samples in one engine call, in prefix order (run.queue.prefix_order): seconds, completions."""
    from pytest_ruler.run.queue import prefix_order

    requests = [r for item in items for r in item]
    order = prefix_order(requests)
    started = time.perf_counter()
    out = eng.generate([requests[i] for i in order])
    return time.perf_counter() - started, out


# --------------------------------------------------------------------------- 1. scaling


def scaling(items: list, ns) -> dict:
    counts = (1, 2, 4)
    rates: dict[int, list[float]] = {n: [] for n in counts}
    per_endpoint: dict[int, list] = {}
    servers = [StandIn(service_time=ns.service, max_concurrency=ns.server_slots) for _ in range(4)]
    for s in servers:
        s.__enter__()
    try:
        engines = {n: engine([s.base_url for s in servers[:n]], ns.server_slots) for n in counts}
        for eng in engines.values():  # a warm-up call each: connections open, threads started
            one_call(eng, [items[0][:2]])
        for _ in range(ns.rounds):
            for n in counts:
                seconds, out = one_call(engines[n], items)
                assert all(c.ok for c in out), [c.error for c in out if not c.ok][:3]
                rates[n].append(len(items) / seconds)
                per_endpoint[n] = sorted(collections_count(c.endpoint for c in out).values(), reverse=True)
        for eng in engines.values():
            eng.close()
    finally:
        for s in servers:
            s.__exit__()
    med = {n: statistics.median(r) for n, r in rates.items()}
    ratio = {n: statistics.median(a / b for a, b in zip(rates[n], rates[1])) for n in counts}
    return {
        "what": f"items/s of one engine call carrying {len(items)} items x {len(items[0])} samples (real RULER prompts, "
                f"token ids) to N stand-in servers, each answering after {ns.service} s with at most {ns.server_slots} "
                f"requests at once; --ruler-max-concurrency={ns.server_slots}",
        "requests_per_round": sum(len(i) for i in items),
        "ideal_items_per_s": {n: round(n * ns.server_slots / ns.service / len(items[0]), 2) for n in counts},
        "items_per_s": {n: [round(r, 2) for r in rates[n]] for n in counts},
        "median_items_per_s": {n: round(med[n], 2) for n in counts},
        "ratio_vs_1": {n: round(ratio[n], 3) for n in counts},
        "ratio_2": round(ratio[2], 3),
        "requests_per_endpoint_last_round": per_endpoint,
    }


def collections_count(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


# --------------------------------------------------------------------------- 2. cached share


def cached_share(items: list, ns) -> list[dict]:
    from pytest_ruler.results.endpoints import endpoint_total, tally

    rows = []
    for n, affinity in ((1, True), (2, True), (2, False), (4, True), (4, False)):  # one endpoint: every prefix in one cache
        servers = [StandIn(service_time=ns.service / 4, max_concurrency=ns.server_slots, prefix_cache=True) for _ in range(n)]
        for s in servers:
            s.__enter__()
        try:
            eng = engine([s.base_url for s in servers], ns.server_slots, affinity=affinity)
            try:
                _, out = one_call(eng, items)
            finally:
                eng.close()
        finally:
            for s in servers:
                s.__exit__()
        rec: dict = {}
        for c in out:
            tally(rec, c)
        total = endpoint_total([type("Item", (), {"endpoints": rec})()])
        prompt = sum(r["prompt_tokens"] for r in total.values())
        cached = sum(r["cached_tokens"] for r in total.values())
        rows.append({"endpoints": n, "affinity": affinity,
                     "cached_share_per_endpoint": [total[s.base_url]["cached_share"] for s in servers],
                     "requests_per_endpoint": [total[s.base_url]["requests"] for s in servers],
                     "cached_share_all": round(cached / prompt, 4)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


# --------------------------------------------------------------------------- 3. failover (a plugin run)


def plugin_run(urls: list[str], folder: Path) -> tuple[int, dict, str]:
    args = ["--rootdir", str(folder), "--ruler-model=stub-model", "--ruler-backend=openai", *(f"--ruler-base-url={u}" for u in urls),
            "--ruler-tokenizer=smollm2-135m", "--ruler-engine-option=prompt_format=text", f"--ruler-tasks={','.join(TASKS[:4])}",
            "--ruler-lengths=1k", "--ruler-samples=8", "--ruler-max-concurrency=2", "--ruler-no-cache"]
    # any exit status: the failover part reports the run's own
    done = run_arm("plugin", pytest_command(args, folder / "r.json"), cwd=folder, env={"PYTHONPATH": str(ROOT)},
                   report=folder / "r.json", timeout=900, ok_codes=None)
    return done.rc, done.report, done.output


def failover(ns) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        one, two = Path(tmp, "one"), Path(tmp, "two")
        one.mkdir()
        two.mkdir()
        with StandIn(oracle=True, service_time=ns.service, max_concurrency=2) as a:
            rc1, ref, _ = plugin_run([a.base_url], one)
        with StandIn(oracle=True, service_time=ns.service, max_concurrency=2) as a, \
                StandIn(oracle=True, service_time=ns.service, max_concurrency=2, die_at=ns.die_at) as b:
            rc2, got, stdout = plugin_run([a.base_url, b.base_url], two)
            killed = not b.proc.is_alive()
            urls = (a.base_url, b.base_url)

    def predictions(report):
        return {(it["task"], it["length"], it["seed"]): [p["prediction"] for p in it["predictions"]] for it in report["items"]}

    lines = [line for line in stdout.splitlines() if "failed mid-run" in line]
    return {
        "what": f"a plugin run ({len(got['items'])} items x 8 samples, --ruler-max-concurrency=2) over two stand-ins "
                f"answering by the oracle; the second SIGKILLs itself on its completion #{ns.die_at}, with a request in "
                "flight; baseline: the same run on one healthy stand-in",
        "exit_status": {"one_endpoint": rc1, "two_endpoints_one_killed": rc2},
        "endpoint_killed": killed,
        "complete": got["complete"],
        "items_passed": sum(it["passed"] for it in got["items"]),
        "items": len(got["items"]),
        "predictions_identical_to_one_endpoint": predictions(got) == predictions(ref),
        "predictions_compared": sum(len(v) for v in predictions(got).values()),
        "endpoints": {("killed " if u == urls[1] else "alive ") + u: rec for u, rec in (got.get("endpoints") or {}).items()},
        "terminal_line": lines[0] if lines else None,
    }


# --------------------------------------------------------------------------- 4. real servers


def real_servers(ns) -> dict:
    from tests.servers.llama_cpp_server import llama_cpp_server, missing_modules

    from pytest_ruler.engines.base import EngineConfig
    from pytest_ruler.engines.openai import OpenAIEngine
    from pytest_ruler.run.queue import prefix_order
    from pytest_ruler.tasks.tokenizer import embedded_gguf_path

    if missing_modules():
        return {"skipped": f"llama-cpp-python's server is not installed (missing {', '.join(missing_modules())})"}
    items = ruler_items(1, ns.real_samples, ns.real_length, TASKS[:ns.real_items])
    requests = [r for item in items for r in item]
    requests = [requests[i] for i in prefix_order(requests)]
    gguf = embedded_gguf_path("smollm2-135m")
    out: dict = {}
    with llama_cpp_server(gguf, alias="smollm2-135m", n_ctx=2048, n_threads=1) as a, \
            llama_cpp_server(gguf, alias="smollm2-135m", n_ctx=2048, n_threads=1) as b:
        for name, urls in (("one", a), ("two", (a, b))):
            eng = OpenAIEngine(EngineConfig(model="smollm2-135m", backend="openai", base_url=urls,
                                             options={"concurrency": 1, "max_context": 2048}))  # llama.cpp does not say
            try:
                started = time.perf_counter()
                got = eng.generate(requests)
                out[name] = (time.perf_counter() - started, got)
            finally:
                eng.close()
    (t1, one), (t2, two) = out["one"], out["two"]
    same = [x.text == y.text for x, y in zip(one, two)]
    return {
        "what": f"{len(requests)} RULER requests at {ns.real_length} tokens ({len(items)} items of {', '.join(TASKS[:ns.real_items])}, "
                f"{ns.real_samples} samples each) through one llama.cpp server (llama-cpp-python {_version('llama_cpp')}, "
                "SmolLM2-135M GGUF, 1 thread) and through two, --ruler-max-concurrency=1",
        "requests": len(requests),
        "all_answered": all(c.ok for c in one + two),
        "identical_predictions": sum(same),
        "predictions_identical": all(same),
        "requests_per_endpoint_two": collections_count(c.endpoint for c in two),
        "seconds": {"one": round(t1, 2), "two": round(t2, 2)},
        "note": "the two servers share this machine's 2 CPU cores with other work: their wall times are not a speed-up measurement",
    }


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except Exception:
        return None


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--service", type=float, default=0.2, help="the stand-in's seconds per request")
    ap.add_argument("--server-slots", type=int, default=4, help="requests a stand-in serves at once (= --ruler-max-concurrency)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--die-at", type=int, default=6)
    ap.add_argument("--real-items", type=int, default=2)
    ap.add_argument("--real-samples", type=int, default=3)
    ap.add_argument("--real-length", type=int, default=512)
    ap.add_argument("--parts", default="scaling,cached_share,failover,real_servers",
                    help="the parts to run; the others are kept from an earlier --out file")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale_out.json"))
    ns = ap.parse_args()

    parts = set(ns.parts.split(","))
    out = Path(ns.out)
    result: dict = json.loads(out.read_text()) if out.exists() and parts != {"scaling", "cached_share", "failover", "real_servers"} else {}
    result.update({"bench": "scale_out", "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()})
    result.setdefault("load_average", {})
    items = ruler_items(ns.seeds, ns.samples, 1024) if parts & {"scaling", "cached_share"} else []
    if "scaling" in parts:
        result["scaling"] = scaling(items, ns)
        print(json.dumps(result["scaling"]), flush=True)
        result["load_average"]["scaling"] = [round(x, 1) for x in os.getloadavg()]  # 1, 5, 15 min, as the part ended
    if "cached_share" in parts:
        result["cached_share"] = {"what": "share of prompt tokens served from each stand-in's simulated prefix cache (16-token "
                                          "blocks, fresh per row), one engine call of every item, with and without prefix "
                                          "affinity; one endpoint: the ceiling (every prefix in one cache)",
                                  "rows": cached_share(items, ns)}
        result["load_average"]["cached_share"] = [round(x, 1) for x in os.getloadavg()]
    if "failover" in parts:
        result["failover"] = failover(ns)
        print(json.dumps(result["failover"]), flush=True)
        result["load_average"]["failover"] = [round(x, 1) for x in os.getloadavg()]  # 1, 5, 15 min, as the part ended
    if "real_servers" in parts:
        result["real_servers"] = real_servers(ns)
        print(json.dumps(result["real_servers"]), flush=True)
        result["load_average"]["real_servers"] = [round(x, 1) for x in os.getloadavg()]  # 1, 5, 15 min, as the part ended
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
