"""One engine option's declaration, :class:`EngineOption`, and the coercion of values against declarations.

An engine declares what it reads from ``EngineConfig.options`` as a tuple of
:class:`EngineOption`; the functions here take those declarations as a parameter, so the
import-light ``*_options`` modules that make them, and the registry that holds them, need
nothing above this module. Looking declarations up by engine name is :mod:`.options`
(above the registry).

Kinds: ``int``, ``float``, ``bool`` (``true``/``false``/``1``/``0``/``yes``/
``no``/``on``/``off``; ``auto`` or empty is None: the engine decides), ``str``
(empty is None), ``json`` (a dict or list, as JSON text or already parsed;
``mapping=True`` asks for an object) and ``choice`` (one of ``choices``).
``minimum``/``maximum`` bound numbers (``open_minimum`` excludes the minimum).

    declarations + raw values ──coerce_declared(backend, declared, raw)──► typed dict (or RulerUsageError)
    declarations + config.options ──read_declared(declared, config, backend, foreign)──► what the engine reads
    declarations + raw values ──unknown_in(declared, raw)──► keys the engine does not declare
    declarations + config.options ──option_value(declared, options, key)──► one option's value or default

Public names: ``EngineOption``, ``KINDS``, ``PARAMETER``, ``coerce_declared``, ``option_value``,
``read_declared``, ``unknown_in``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..errors import RulerUsageError

__all__ = ["KINDS", "PARAMETER", "EngineOption", "coerce_declared", "option_value", "read_declared", "unknown_in"]

KINDS = ("int", "float", "bool", "str", "json", "choice")
PARAMETER = "--ruler-engine-option"

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_AUTO = frozenset({"", "auto", "none"})


@dataclass(frozen=True)
class EngineOption:
    """One option an engine reads from ``EngineConfig.options``.

    ``default`` None means the engine decides (often from the run's settings);
    ``cli`` names a top-level pytest option ``--ruler-<cli>`` that sets it too.
    """

    key: str
    kind: str
    default: Any = None
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    cli: str | None = None
    open_minimum: bool = False  # the minimum itself is refused (e.g. a share in (0, 1])
    mapping: bool = False  # json: a JSON object, not a list

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"EngineOption {self.key!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"EngineOption {self.key!r}: a choice needs choices")

    # ------------------------------------------------------------------ the expected form

    def form(self) -> str:
        """What a valid value looks like, for error messages."""
        if self.kind == "choice":
            return f"choose one of {', '.join(self.choices)}"
        if self.kind == "bool":
            return "must be true or false"
        if self.kind == "json":
            return "must be a JSON object" if self.mapping else "must be a JSON object or list"
        if self.kind == "str":
            return "must be text"
        noun = "an integer" if self.kind == "int" else "a number"
        low = None if self.minimum is None else f"{'>' if self.open_minimum else '>='} {self.minimum:g}"
        high = None if self.maximum is None else f"<= {self.maximum:g}"
        bounds = " and ".join(b for b in (low, high) if b)
        return f"must be {noun}{' ' + bounds if bounds else ''}"

    def _bad(self, value: Any, why: str = "") -> RulerUsageError:
        from ..secrets import typed_value  # when refused: the plugin's entry imports this module

        shown = json.dumps(value, default=str) if isinstance(value, (Mapping, list, tuple)) else value  # JSON: scrubbed by key name
        return RulerUsageError(PARAMETER, typed_value(f"{self.key}={shown}"), f"{self.key} {self.form()}{f' ({why})' if why else ''}")

    # ------------------------------------------------------------------ coercion

    def coerce(self, value: Any) -> Any:
        """``value`` as this option's kind (None stays None); raises RulerUsageError."""
        if value is None:
            return None
        return getattr(self, f"_as_{self.kind}")(value)

    def _as_int(self, value: Any) -> int:
        if isinstance(value, bool):
            raise self._bad(value)
        try:
            number = int(value.strip()) if isinstance(value, str) else int(value)
        except (TypeError, ValueError, OverflowError):
            raise self._bad(value) from None
        if isinstance(value, float) and value != number:
            raise self._bad(value)
        return self._in_range(value, number)

    def _as_float(self, value: Any) -> float:
        if isinstance(value, bool):
            raise self._bad(value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self._bad(value) from None
        if number != number:  # NaN
            raise self._bad(value)
        return self._in_range(value, number)

    def _in_range(self, value: Any, number: Any) -> Any:
        if self.minimum is not None and (number < self.minimum or (self.open_minimum and number == self.minimum)):
            raise self._bad(value)
        if self.maximum is not None and number > self.maximum:
            raise self._bad(value)
        return number

    def _as_bool(self, value: Any) -> bool | None:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        if text in _AUTO:
            return None
        raise self._bad(value)

    def _as_str(self, value: Any) -> str | None:
        text = str(value).strip()
        return text or None

    def _as_choice(self, value: Any) -> str:
        text = str(value).strip()
        if text not in self.choices:
            raise self._bad(value)
        return text

    def _as_json(self, value: Any) -> Any:
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise self._bad(value, str(exc)) from None
        allowed = (Mapping,) if self.mapping else (Mapping, list, tuple)
        if not isinstance(value, allowed):
            raise self._bad(value)
        try:  # a deep, JSON-clean copy: callers may change it freely
            return json.loads(json.dumps(dict(value) if isinstance(value, Mapping) else list(value)))
        except (TypeError, ValueError) as exc:
            raise self._bad(value, str(exc)) from None


# --------------------------------------------------------------------------- against declarations

Declared = Mapping[str, EngineOption]  # by key; None where an engine declares nothing (its options pass through)


def coerce_declared(backend: str, declared: Declared | None, raw: Mapping[str, Any] | None, *,
                    drop_unknown: bool = False) -> dict[str, Any]:
    """``raw`` with every value converted to its declared kind and range-checked (see
    :func:`.options.coerce_engine_options`, which looks ``declared`` up by ``backend``)."""
    from ..secrets import remember, typed_value  # not at import: the plugin's entry imports this module

    remember(dict(raw or {}))  # what looks like a secret in them is masked wherever it shows up later
    if declared is None:
        return dict(raw or {})
    out: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        option = declared.get(key)
        if option is None:
            if drop_unknown:
                continue
            known = ", ".join(declared) or "none"  # the value is never echoed: it may be a key typed under a wrong name
            name = typed_value(key)
            raise RulerUsageError(PARAMETER, name, f"{backend} has no option {name!r} (its value is not shown); known options: {known}")
        out[key] = option.coerce(value)
    return out


def unknown_in(declared: Declared | None, raw: Mapping[str, Any] | None) -> list[str]:
    """Keys of ``raw`` that ``declared`` does not hold (none when nothing is declared)."""
    return [] if declared is None else sorted(set(raw or {}) - set(declared))


def read_declared(declared: Declared | None, config: Any, backend: str, foreign: Iterable[str] = ()) -> dict[str, Any]:
    """What an engine reads (see :func:`.options.engine_options`): ``config.options`` coerced by
    ``declared``, every declared key present. ``foreign``: keys that other engines' top-level flags set,
    dropped where ``backend`` does not declare them."""
    raw = dict(config.options or {})
    if declared is not None:
        for key in foreign:
            if key not in declared:
                raw.pop(key, None)
    options = coerce_declared(backend, declared, raw, drop_unknown=config.backend != backend)
    for key, option in (declared or {}).items():
        if options.get(key) is None:
            options[key] = option.default
    return options


def option_value(declared: Declared, options: Mapping[str, Any] | None, key: str) -> Any:
    """One declared option's value in ``options`` (an engine config's), coerced; its default when unset."""
    value = declared[key].coerce((options or {}).get(key))
    return declared[key].default if value is None else value
