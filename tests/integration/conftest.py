"""Integration tests run pytest in-process (pytester.runpytest), which restores
sys.modules after each run. C extensions cannot be imported twice in one
process, so the ones a run may import are loaded here, before any run."""

import numpy  # noqa: F401

import pytest_ruler.engines.scripted  # noqa: F401
import pytest_ruler.plugin.terminal  # noqa: F401
import pytest_ruler.tasks  # noqa: F401

try:  # optional: the [mrcr] extra (the MRCR pack's parquet records)
    import pyarrow.parquet  # noqa: F401
except ImportError:
    pass

try:  # optional: the [plot] extra
    import matplotlib  # noqa: F401
    import matplotlib.figure  # noqa: F401
    from matplotlib.backends import backend_agg  # noqa: F401
except ImportError:
    pass

# The embedded tokenizer, loaded here with the real HOME: pytester points HOME at a
# temporary folder, where a first load would convert the GGUF tokenizer through
# transformers (importing torch inside the in-process run, which cannot be undone).
from pytest_ruler.tasks.tokenizer import load_tokenizer  # noqa: E402

load_tokenizer("smollm2-135m")
load_tokenizer("smollm2-135m", trust_remote_code=False)  # the session calls it so: another lru_cache key
