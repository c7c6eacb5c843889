"""The embedded tokenizer: offline, exact counts without BOS, cached conversion."""

from __future__ import annotations

import subprocess
import sys

from pytest_ruler.tasks.tokenizer import cache_root, embedded_gguf_path, load_tokenizer


def test_embedded_alias_counts_without_special_tokens(tokenizer):
    assert tokenizer.name == "smollm2-135m"
    assert embedded_gguf_path("smollm2-135m").suffix == ".gguf"
    ids = tokenizer.encode("The grass is green.")
    assert tokenizer.count("The grass is green.") == len(ids) > 0
    assert tokenizer.decode(ids) == "The grass is green."
    assert tokenizer.chat_template and "<|im_start|>" in tokenizer.chat_template


def test_count_pieces_matches_count(tokenizer):
    pieces = [" alpha", "\nThe grass is green.", " 1234567.", " alpha"]
    assert tokenizer.count_pieces(pieces) == [tokenizer.count(p) for p in pieces]


def test_cached_tokenizer_loads_fast_in_a_new_process():
    load_tokenizer("smollm2-135m")  # ensure the converted tokenizer is cached
    assert any(cache_root().glob("tokenizers/*/tokenizer.json"))
    code = "import time; t=time.perf_counter(); from pytest_ruler.tasks.tokenizer import load_tokenizer; load_tokenizer('smollm2-135m'); import sys; print(time.perf_counter()-t); print('transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.split()
    # loading the cached tokenizer never imports transformers
    assert out[1] == "False"
