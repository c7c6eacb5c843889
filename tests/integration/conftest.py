"""Integration tests run pytest in-process (pytester.runpytest), which restores
sys.modules after each run. C extensions cannot be imported twice in one
process, so the ones a run may import are loaded here, before any run."""

import numpy  # noqa: F401

import pytest_ruler.engines.scripted  # noqa: F401
import pytest_ruler.reporting  # noqa: F401
import pytest_ruler.tasks  # noqa: F401

try:  # optional: the [plot] extra
    import matplotlib  # noqa: F401
    import matplotlib.figure  # noqa: F401
    from matplotlib.backends import backend_agg  # noqa: F401
except ImportError:
    pass
