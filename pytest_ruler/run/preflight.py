"""Refuse every knowable mistake once, at start, before any model loads.

``check_start(session, pytest_config)`` runs in ``pytest_configure`` (on the
controller of an xdist run, or the only process) after the options were
parsed into a :class:`~pytest_ruler.run_config.RulerConfig`. Each check either
passes or raises one :class:`~pytest_ruler.errors.RulerUsageError` naming the
parameter, the value and the fix; the plugin turns it into pytest's
``ERROR: ...`` line and exit code 4. What is checked, cheapest first:

    output paths (and --ruler-html's matplotlib) ─► data files ─► baseline ─► tokenizer and chat template
           (a model or tokenizer name that is no alias, path or locally cached Hub id fails
            here in seconds while the Hub cannot be reached, naming --ruler-model or
            --ruler-tokenizer as typed, with the nearest alias)
        ─► --ruler-record's folder takes the recording; --ruler-replay's recorded tasks are this
           run's and its tokenizer reproduces the recorded ids (run.replay.check_samples)
        ─► prediction cache (a corrupt one is moved aside: a warning, not an error)
        ─► the engine's own start-up check, without loading a model
           (a server's /models within seconds; a model folder's config and weights;
            the context length, by the resolver the engine itself uses: --ruler-max-model-len,
            what the model config or server says, the engine's max_context option)
        ─► lengths too short for a task's smallest prompt (its fixed text, the fewest units
           and the answer, counted with the run's tokenizer and template: one render per
           task at the run's shortest length): refused, naming the task and the smallest
           length that fits
        (openai: a server whose GET /models gives no context length, or one that is none:
            -1, 'abc', 10**12, is refused here, naming --ruler-max-model-len, unless it or
            the max_context option says; never item by item)
        ─► lengths that can never fit that context: refused when the user typed them;
           with --ruler-mapreduce or from a preset, a warning (their native items fail
           as over length without a prompt being built); none with --ruler-no-suite,
           which runs no suite item
        ─► a --ruler-think-budget that cannot fit: each sample's answer call holds the prompt,
           the thinking (up to the budget), the thinking's markers and the task's answer tokens;
           RULER's length L already counts the prompt and the answer tokens (tasks.budget), so
           L + budget + the markers' tokens must fit the context at the longest length that
           runs natively; refused, naming --ruler-think-budget and the largest budget that fits

    ─► the MRCR pack's own (run.mrcr_start): map-reduce and base prompts refused, its data, its
       bins (counted here), each bin's longest prompt and the answer budget within the context

Nothing here generates a sample or loads weights, so a mistake costs seconds.

Public names: ``check_start``, ``check_output_path``, ``engine_context``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import RulerUsageError
from ..lengths import format_length
from .replay import check_samples
from .seams import StartSession
from .mrcr_start import check_mrcr

__all__ = ["check_output_path", "check_start", "engine_context"]


def check_output_path(parameter: str, path: Path | None, *, folder: bool = False) -> None:
    """A file (or, with ``folder``, a directory) we can create or replace at ``path``."""
    if path is None:
        return
    p = Path(path).expanduser()
    if not folder and p.is_dir():
        raise RulerUsageError(parameter, str(path), "this is a directory; pass a file path, e.g. ruler.json")
    if folder and p.exists() and not p.is_dir():
        raise RulerUsageError(parameter, str(path), "this is a file; pass a folder")
    parent = p if folder else p.parent
    existing = parent
    while not existing.exists():  # the first existing ancestor must let us create the rest
        existing = existing.parent
    if not existing.is_dir():
        raise RulerUsageError(parameter, str(path), f"{existing} is a file, so no folder can be made here; pass another path")
    if not os.access(existing, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise RulerUsageError(parameter, str(path), f"{existing if not p.exists() else p} is not writable; pass a path you can write")


def _check_data(session: StartSession) -> None:
    """Each data path given is read and shape-checked once, here (``data.registry``: every kind,
    a registered one included); a bad one is refused naming its option."""
    from ..data.registry import read_data

    for kind, path in (session.data_given or {}).items():
        if path:
            read_data(kind, path)


def _check_baseline(config: Any) -> None:
    if config.baseline is None:
        return
    from ..results.baseline import load_baseline

    load_baseline(config.baseline)


def _check_prompting(session: StartSession) -> None:
    """The tokenizer loads and the chat template file decodes and compiles."""
    config = session.config
    name = config.tokenizer or config.model
    option = "--ruler-tokenizer" if config.tokenizer else "--ruler-model"
    try:
        session.tokenizer
    except RulerUsageError as exc:
        if exc.parameter == "tokenizer":  # the loader's own name for it: say the option the user typed
            fix = exc.fix
            if session.backend == "openai" and not config.tokenizer:
                fix += ("; the openai back end counts the length budget with the model's tokenizer, "
                        "so pass --ruler-tokenizer when the served name is not a local model")
            raise RulerUsageError(option, exc.value, fix) from None
        raise
    except Exception as exc:
        raise RulerUsageError("--ruler-tokenizer" if config.tokenizer else "--ruler-model", name,
                              f"its tokenizer does not load ({type(exc).__name__}: {exc}); pass a model folder with tokenizer files, a .gguf file, or --ruler-tokenizer") from None
    choice = config.chat_template
    if choice not in ("auto", "none", "base"):
        try:
            Path(choice).expanduser().read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RulerUsageError("--ruler-chat-template", choice, f"the file is not UTF-8 text ({exc.reason} at byte {exc.start}); pass a Jinja chat template, auto or none") from None
        except OSError as exc:
            raise RulerUsageError("--ruler-chat-template", choice, f"cannot read it ({exc.strerror}); pass a readable Jinja file, auto or none") from None
    try:
        session.frame
    except RulerUsageError as exc:
        raise RulerUsageError("--ruler-chat-template", choice, exc.fix) from None
    except Exception as exc:
        raise RulerUsageError("--ruler-chat-template", choice, f"the template does not render ({type(exc).__name__}: {exc}); pass a valid Jinja chat template, auto or none") from None


def engine_context(session: StartSession) -> Any:
    """The engine's own start-up check (no model loads) and the context length it leads to,
    by the one resolver the engine uses too (``engines.context``); a ContextLength."""
    from ..engines import entry

    config = session.engine_config
    engine = entry(session.backend)
    reported = engine.preflight(config)
    return engine.context_length(config, reported, tokenizer=session.tokenizer)


def _check_lengths(session: StartSession, context: int | None, source: str) -> None:
    from ..tasks import get_task

    config = session.config
    if config.no_suite:  # no standard-suite items: the suite's tasks and lengths are never run
        return
    for task in config.tasks:  # known from the length alone: the answer's tokens leave no room for a prompt
        if get_task(task).family == "mrcr":
            continue  # an MRCR length bins the prompts alone; the answer's room is run.mrcr_start's check
        need = get_task(task).tokens_to_generate
        short = [L for L in config.lengths if L <= need]
        if short:
            raise RulerUsageError("--ruler-lengths", ",".join(format_length(L) for L in short),
                                  f"{task} alone generates {need} tokens, so no prompt fits; use lengths well above that, e.g. 1k")
    if config.replay is None:  # a replay's prompts were built when they were recorded
        _check_room(session)
    if context is None:
        return
    too_long = [L for L in config.lengths if L > context]
    if not too_long:
        return
    shown = ",".join(format_length(L) for L in too_long)
    if config.mapreduce or not config.lengths_given:
        # map-reduce twins exist for exactly these lengths; a preset's lengths were not the user's choice
        session.warn(f"{shown} exceed{'s' if len(too_long) == 1 else ''} {config.model}'s context of {context} tokens ({source}): "
                     "the native items there fail as over length without building a prompt"
                     + ("" if config.mapreduce else "; pass --ruler-lengths to choose lengths, or --ruler-max-model-len"))
        return
    raise RulerUsageError(
        "--ruler-lengths", shown,
        f"{'this length' if len(too_long) == 1 else 'these lengths'} can never fit {config.model}'s context of "
        f"{context} tokens ({source}), so no prompt would be built or run; drop {'it' if len(too_long) == 1 else 'them'}, "
        "raise the limit with --ruler-max-model-len if the model supports longer inputs, "
        "or add --ruler-mapreduce to test chunked inference at those lengths",
    )


def _check_think_budget(session: StartSession, context: int | None, source: str) -> None:
    """``--ruler-think-budget`` fits the context with the longest length asked (module docstring)."""
    config = session.config
    budget = config.think_budget
    if budget is None or context is None:
        return
    markers = session.tokenizer.count(f"{config.think_start}{config.think_end}\n\n")  # the start is added back for a reasoning field
    native = [] if config.no_suite else [L for L in config.lengths if L <= context]  # longer ones: _check_lengths' business
    where = f"{config.model}'s context of {context} tokens ({source})"
    if not native:  # no suite length to go by (--ruler-no-suite): the thinking alone must leave room for a prompt
        if budget + markers < context:
            return
        raise RulerUsageError("--ruler-think-budget", budget,
                              f"the thinking alone ({budget} tokens and {markers} for its markers) fills {where}, so no prompt "
                              f"and no answer could be sent with it; give a budget well below {context - markers}")
    longest = max(native)
    room = context - longest - markers
    if budget <= room:
        return
    fits = [L for L in native if L + budget + markers <= context]
    advice = [f"give --ruler-think-budget={room} or less" if room >= 1 else f"no think budget fits at {format_length(longest)}"]
    if fits:
        advice.append(f"keep lengths up to {format_length(max(fits))} (--ruler-lengths)")
    advice.append("raise the limit with --ruler-max-model-len if the model supports longer inputs")
    raise RulerUsageError(
        "--ruler-think-budget", budget,
        f"at {format_length(longest)}, the longest length asked (its prompt and the task's answer tokens), a thinking of {budget} "
        f"tokens and its markers ({markers} tokens) need {longest + budget + markers} tokens, over {where}: the answer call "
        f"could never be sent and every sample there would score 0; {', '.join(advice[:-1])}{',' if len(advice) > 2 else ''} "
        f"or {advice[-1]}",
    )


def _check_room(session: StartSession) -> None:
    """Each task's smallest prompt fits each length (else every item there errors). The
    fixed text may grow with the length (cwe's example does), so each length is asked,
    shortest first, until one fits: one render per task when the shortest does."""
    from ..tasks.budget import suggested_length
    from ..tasks.generate import smallest_length

    config = session.config
    for task in config.tasks:
        if session.data_missing(task):  # its items are skipped, with the reason
            continue
        short: list[int] = []
        need = 0
        for length in sorted(config.lengths):
            try:
                at = smallest_length(task, length, seed=config.seeds[0], ctx=session.generation_context)
            except RulerUsageError:
                raise
            except Exception:  # a family that cannot draft here (a registered one's own bug): its items say why
                break
            if at <= length:
                break
            short.append(length)
            need = max(need, at)
        if short:
            raise RulerUsageError(
                "--ruler-lengths", ",".join(format_length(L) for L in short),
                f"{task} needs at least {need} tokens with the tokenizer {session.tokenizer.name} and the {session.frame.name} "
                f"template (its fixed text, the smallest haystack and the answer), so no prompt fits "
                f"{'this length' if len(short) == 1 else 'these lengths'}; use {suggested_length(need)} or more "
                "(samples differ by a few tokens), or leave the task out with --ruler-tasks",
            )


def check_start(session: StartSession, pytest_config: Any) -> None:
    """Every start-up check (see the module docstring); raises RulerUsageError."""
    c = session.config
    check_output_path("--ruler-report", c.report)
    check_output_path("--ruler-markdown", c.markdown)
    check_output_path("--ruler-plots", c.plots, folder=True)
    check_output_path("--ruler-html", c.html)
    check_output_path("--ruler-history", c.history, folder=True)  # a file or an unwritable place: refused before any item
    if c.html is not None:
        from ..pages.run_page import check_html

        check_html(c.html)  # its charts need matplotlib (the plot extra)
    xml = getattr(pytest_config.option, "xmlpath", None)
    if xml:
        check_output_path("--junitxml", Path(xml))
    _check_data(session)
    _check_baseline(c)
    _check_prompting(session)
    check_samples(session)  # --ruler-record's folder, --ruler-replay's tasks and token ids (run.replay)
    session.cache  # opened and checked; a corrupt file is moved aside with a warning
    context = engine_context(session)
    session.use_context(context)  # the same number the items, the engine and map-reduce use
    _check_lengths(session, context.tokens, context.source)
    _check_think_budget(session, context.tokens, context.source)
    check_mrcr(session, context.tokens)  # the MRCR pack's own (run.mrcr_start)
