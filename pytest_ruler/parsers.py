"""Typed parsers for option values: each takes the parameter as the user wrote it and the raw value.

``(where, raw) -> value``: ``where`` is ``--ruler-<name>`` or the ini key
``ruler_<name>``, so a refusal names what the user typed, with the value and
the fix (:class:`~pytest_ruler.errors.RulerUsageError`; the value as
:func:`pytest_ruler.secrets.typed_value` shows it: a credential-named or key-shaped part
masked, as everywhere a typed value is shown). The option spec
(``pytest_ruler.options.OPTIONS``) gives each option one of these.

Public names: ``Parser``, ``integer``, ``choice`` (parser factories), the
``parse_*`` functions, and ``RelativeMark`` (``parse_threshold``'s ``rel:F``; its
meaning is :mod:`pytest_ruler.results.relative`), ``Arm`` and ``ARM_KEYS`` (``parse_arms``'s
``--ruler-arm``; their use is :mod:`pytest_ruler.run.arms`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import RulerUsageError
from .lengths import parse_length as _length, parse_lengths as _lengths

Parser = Callable[[str, Any], Any]  # (the parameter as the user wrote it, the raw value) -> the typed value


def _refused(where: str, raw: Any, fix: str) -> RulerUsageError:
    """The refusal of a typed value: what looks like a secret in it masked (``secrets.typed_value``)."""
    from .secrets import typed_value  # when refused: the plugin's entry imports this module

    return RulerUsageError(where, typed_value(raw), fix)


def _remember(value: Any) -> None:
    from .secrets import remember

    remember(value)


@dataclass(frozen=True)
class RelativeMark:
    """``rel:F``: a length passes when its score is above F times the shortest tested length's own
    score (NoLiMa's effective length; :mod:`pytest_ruler.results.relative`)."""

    fraction: float

    def __str__(self) -> str:
        return f"rel:{self.fraction:g}"


def parse_threshold(where: str, raw: Any) -> "float | RelativeMark":
    """A pass mark: a score in [0, 100) (``85.6``), or ``rel:F`` with F in (0, 1) (``rel:0.85``).

    ``rel:1`` is refused: the pass rule is strictly above the mark, and the mark is F times the
    shortest tested length's own score, so at F = 1 that length can never pass itself, and no
    effective length could ever be found (as 100 is refused for an absolute mark)."""
    if isinstance(raw, RelativeMark):
        return raw
    text = str(raw).strip()
    if not text.lower().startswith("rel:"):
        return parse_score(where, raw)
    fix = "give rel:F with F in (0, 1), e.g. rel:0.85 (85% of the shortest tested length's own score), or an absolute score like 85.6"
    try:
        fraction = float(text[4:].strip())
    except ValueError:
        raise _refused(where, raw, fix) from None
    if fraction == 1:
        raise _refused(where, raw, "a length passes when its score is above F times the shortest tested length's own score, "
                              "so at F = 1 the shortest length never passes itself and no length can be an effective length; "
                              "give F below 1, e.g. rel:0.95 (or rel:0.85, NoLiMa's mark)")
    if not 0 < fraction < 1:
        raise _refused(where, raw, fix)
    return RelativeMark(fraction)


def parse_int(name: str, value: Any, minimum: int = 1) -> int:
    """An integer >= minimum; ``name`` is an option name without ``--ruler-`` or a written parameter."""
    where = name if name.startswith(("-", "ruler_")) else f"--ruler-{name}"
    try:
        n = int(str(value).strip())
    except ValueError:
        raise _refused(where, value, f"give an integer >= {minimum}") from None
    if n < minimum:
        raise _refused(where, value, f"give an integer >= {minimum}")
    return n


def integer(minimum: int = 1) -> Parser:
    return lambda where, raw: parse_int(where, raw, minimum)


def parse_text(where: str, raw: Any) -> str:
    return str(raw)


def parse_flag(where: str, raw: Any) -> bool:
    return bool(raw)


def parse_not_flag(where: str, raw: Any) -> bool:
    return not bool(raw)


def parse_path(where: str, raw: Any) -> Path:
    return Path(str(raw)).expanduser()


def parse_length(where: str, raw: Any) -> int:
    return _length(raw, where)


def parse_lengths(where: str, raw: Any) -> tuple[int, ...]:
    return tuple(_lengths(str(raw), where))


def parse_score(where: str, raw: Any) -> float:
    try:
        t = float(str(raw).strip())
    except ValueError:
        raise _refused(where, raw, "give a score between 0 and 100, e.g. 85.6") from None
    if not 0 <= t <= 100:
        raise _refused(where, raw, "give a score between 0 and 100, e.g. 85.6")
    if t == 100:  # the pass rule is "above the mark" (results.aggregate.passes): nothing is above 100
        raise _refused(where, raw, "a score passes when it is above its mark, so no score can pass 100; "
                              "give a mark below 100, e.g. 99.9 to require every sample right")
    return t


def _level(where: str, raw: Any, low: float, fix: str) -> float:
    """A probability-like level in [low, 1) (``low`` itself excluded when it is 0)."""
    try:
        level = float(raw)
    except (TypeError, ValueError):
        level = -1.0
    if not (low < level < 1 if low == 0 else low <= level < 1):
        raise _refused(where, raw, fix)
    return level


def parse_significance(where: str, raw: Any) -> float:
    return _level(where, raw, 0.0, "give a significance level between 0 and 1, e.g. 0.05")


def parse_confidence(where: str, raw: Any) -> float:
    return _level(where, raw, 0.5, "give a confidence level between 0.5 and 1, e.g. 0.95")


def choice(*names: str) -> Parser:
    def parse(where: str, raw: Any) -> str:
        if str(raw) not in names:
            raise _refused(where, raw, f"choose one of {', '.join(names)}")
        return str(raw)

    return parse


# what both engines accept as a dtype: torch's names (hf) and vLLM's --dtype choices
DTYPES = ("auto", "float32", "bfloat16", "float16", "float", "half")


def parse_dtype(where: str, raw: Any) -> str:
    """A model dtype both engines load (``DTYPES``); a quantized format (fp8, int4) is a model or vllm option, not a dtype."""
    text = str(raw).strip().lower()
    if text not in DTYPES:
        raise _refused(where, raw, "choose auto, float32, bfloat16 or float16 (float and half are accepted too); "
                                          "8- and 4-bit weights come from a quantized model or the vllm option quantization=..., not a dtype")
    return text


def parse_device(where: str, raw: Any) -> str:
    """auto, cpu, cuda or cuda:N (whether that GPU exists is the engine's start-up check)."""
    text = str(raw).strip().lower()
    head, _, index = text.partition(":")
    if text in ("auto", "cpu", "cuda") or (head == "cuda" and index.isdigit()):
        return text
    raise _refused(where, raw, "choose auto, cpu, cuda or cuda:N (N: a visible GPU's index, from 0)")


def parse_seeds(where: str, value: Any) -> tuple[int, ...]:
    text = str(value).strip()
    if "," not in text:
        return tuple(range(parse_int(where, text)))
    seeds = [parse_int(where, part, minimum=0) for part in text.split(",") if part.strip()]
    if not seeds:
        raise _refused(where, value, "give a count N (seeds 0..N-1) or a comma list like 0,1,7")
    return tuple(dict.fromkeys(seeds))


def parse_depths(where: str, value: Any) -> tuple[float, ...]:
    out = []
    for part in str(value).split(","):
        if not part.strip():
            continue
        try:
            d = float(part.strip().rstrip("%"))
        except ValueError:
            raise _refused(where, value, "give depths as fractions of the context, e.g. 0,0.25,0.5,0.75,1") from None
        d = d / 100 if d > 1 else d
        if not 0 <= d <= 1:
            raise _refused(where, value, "depths are fractions in [0, 1] (or percentages up to 100)")
        out.append(d)
    if not out:
        raise _refused(where, value, "give at least one depth, e.g. 0,0.5,1")
    return tuple(dict.fromkeys(out))


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_key_values(values: Any, where: str = "--ruler-engine-option") -> dict[str, Any]:
    """``KEY=VALUE`` pairs (repeatable, comma-separated; a value with ``{`` is one pair), values as
    JSON where they parse. What looks like a secret in them is remembered (``secrets.remember``),
    so it is masked wherever it shows up later; a malformed pair is shown as the typed-text rule
    of ``secrets`` leaves it."""
    items: list[str] = []
    for v in values if isinstance(values, list) else [values]:
        items += [p for p in str(v).split(",") if p.strip()] if "{" not in str(v) else [str(v)]
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise _refused(where, item, "write KEY=VALUE, e.g. --ruler-engine-option=enforce_eager=true")
        k, v = item.split("=", 1)
        out[k.strip()] = _parse_value(v.strip())
    _remember(out)
    return out


def parse_template_kwargs(where: str, raw: Any) -> dict[str, Any]:
    """``--ruler-chat-template-kwargs``: KEY=VALUE pairs (repeatable; values as JSON where they
    parse: ``enable_thinking=false`` is the boolean) for the chat template's render."""
    out: dict[str, Any] = {}
    for v in raw if isinstance(raw, list) else [raw]:
        for item in (p for p in str(v).split(",") if p.strip()):
            key, eq, value = item.partition("=")
            if not eq or not key.strip().isidentifier():
                raise _refused(where, item, "write KEY=VALUE with KEY a template variable, e.g. enable_thinking=false")
            if key.strip() in ("messages", "add_generation_prompt", "bos_token", "eos_token"):
                raise _refused(where, item, f"{key.strip()} is set by pytest-ruler when it renders the template; pass other keys")
            out[key.strip()] = _parse_value(value.strip())
    _remember(out)
    return out


def parse_marker(where: str, raw: Any) -> str:
    """A thinking marker (``--ruler-think-start`` / ``--ruler-think-end``): text that is not blank."""
    text = str(raw)
    if not text.strip():
        raise _refused(where, raw, "give the text that opens or closes the model's thinking, e.g. <think> and </think>")
    return text


def parse_base_urls(where: str, raw: Any) -> str | tuple[str, ...]:
    """``--ruler-base-url``, given once or several times (ini ``ruler_base_url``: one URL per line):
    one URL as the string, several as a tuple in the order given. The same URL twice is refused
    here; each URL's form is checked when the engine connects (a URL with credentials is refused there)."""
    urls: list[str] = []
    for value in raw if isinstance(raw, (list, tuple)) else [raw]:
        urls += str(value).split()
    if not urls:
        raise _refused(where, raw, "give the server's OpenAI API root, e.g. http://127.0.0.1:8000/v1")
    seen: set[str] = set()
    for url in urls:
        key = url.rstrip("/")
        if key in seen:
            raise _refused(where, url, "this endpoint is given twice; give each server's URL once")
        seen.add(key)
    _remember(urls)  # user info or a query with a key: masked wherever it shows up later
    return urls[0] if len(urls) == 1 else tuple(urls)


# --------------------------------------------------------------------------- --ruler-arm (run.arms uses them)

ARM_KEYS = ("backend", "dtype", "base_url", "model", "max_model_len")  # the run settings an arm may change
_ARM_NAME = re.compile(r"^[A-Za-z0-9_.]+$")


@dataclass(frozen=True)
class Arm:
    """One arm: its name, the run settings it changes (``ARM_KEYS``) and its engine options."""

    name: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    engine_options: Mapping[str, Any] = field(default_factory=dict)

    def overrides(self) -> dict[str, Any]:
        """What the arm changes, as given (for the report; engine option values as typed)."""
        return {**self.settings, **self.engine_options}


def _arm_pairs(text: str) -> list[str]:
    """``text`` split on the commas outside brackets, braces and quotes."""
    out, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [p for p in out if p.strip()]


def _arm_value(where: str, key: str, raw: str) -> Any:
    if key == "dtype":
        return parse_dtype(where, raw)
    if key == "max_model_len":
        return parse_length(where, raw)
    if key in ("backend", "model", "base_url"):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_arm(where: str, raw: Any) -> Arm:
    """One ``NAME:KEY=VALUE,...``; engine option keys are checked against the arm's back end later (``arm_config``)."""
    text = str(raw).strip()
    name, _, rest = text.partition(":")
    name = name.strip()
    if not _ARM_NAME.match(name):
        raise _refused(where, text, "write NAME:KEY=VALUE,... with NAME letters, digits, _ or . "
                              "(e.g. --ruler-arm=ref --ruler-arm=cand:dtype=bfloat16)")
    settings: dict[str, Any] = {}
    engine: dict[str, Any] = {}
    for pair in _arm_pairs(rest):
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise _refused(where, text, f"arm {name!r}: write KEY=VALUE pairs separated by commas, e.g. "
                                  f"{name}:dtype=bfloat16,max_model_len=8k (keys: {', '.join(ARM_KEYS)} or an engine option)")
        target = settings if key in ARM_KEYS else engine
        if key in target:
            raise _refused(where, text, f"arm {name!r} sets {key} twice: keep one")
        target[key] = _arm_value(f"{where} ({name}: {key})", key, value.strip())
    _remember(engine)  # a value that looks like a secret is masked wherever it shows later
    return Arm(name, settings, engine)


def parse_arms(where: str, raw: Any) -> tuple[Arm, ...]:
    """``--ruler-arm`` given once or more (an ini key: one arm per line): two arms at least, names unique."""
    values = raw if isinstance(raw, (list, tuple)) else str(raw).splitlines()
    arms = tuple(parse_arm(where, v) for v in values if str(v).strip())
    if len(arms) < 2:
        raise _refused(where, list(values), "give two arms at least: the first is the reference, each other arm is "
                              "compared with it (e.g. --ruler-arm=ref --ruler-arm=cand:dtype=bfloat16)")
    names = [a.name for a in arms]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise _refused(where, names, f"arm names must differ: {', '.join(twice)} is given twice")
    return arms
