"""The report's ``arms`` (``--ruler-arm``; results.arms) as Markdown: one table of cells per arm, then the flips.

    the report's ``arms`` dict ──arms_markdown(section)──► lines: "## Arms", per arm a table (task, length, both scores,
        the paired difference and its 95 % interval, lost / gained, status), and under it the flips, two examples each way

Called by :func:`pytest_ruler.report.markdown.markdown` after the verdict; each arm's own Table 3 is drawn there.
Predictions are model output: escaped and cut, never raw.

Public names: ``arms_markdown``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..lengths import format_length
from ..outside_text import escaped

__all__ = ["arms_markdown"]


def _cut(text: Any, width: int = 80) -> str:
    text = escaped(str(text)).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."


def _shown(text: Any) -> str:
    """A prediction in code style, or "(empty)"."""
    return f"`{_cut(text)}`" if str(text).strip() else "(empty)"


def arms_markdown(section: Mapping[str, Any] | None) -> list[str]:
    """The ``## Arms`` section's lines (none without arms)."""
    if not section:
        return []
    ref = section.get("reference")
    margin = section.get("margin")
    test = (f"paired non-inferiority at a margin of {margin:g} points" if margin is not None else "paired drop test (no margin)")
    lines = ["## Arms", "", f"Reference arm: **{ref}**; {test}, Holm over each arm's cells, alpha {section.get('alpha')}; "
             f"arms interleaved {section.get('interleaving', 'item')} by {section.get('interleaving', 'item')}.", ""]
    for arm in section.get("arms") or ():
        if arm.get("reference"):
            continue
        settings = ", ".join(f"{k}={v}" for k, v in (arm.get("settings") or {}).items()) or "the run's settings"
        lines += [f"### Arm {arm['name']}: {str(arm.get('status') or '').upper()}", "", f"Settings: `{_cut(settings, 200)}`", ""]
        lines.append(f"| Task | Length | Mode | {ref} | {arm['name']} | Difference | 95% CI | Pairs | Lost | Gained | Status |")
        lines.append("|:---|---:|:---|---:|---:|---:|:---|---:|---:|---:|:---|")
        for c in arm.get("cells") or ():
            low, high = c["difference_ci95"]
            lines.append(f"| {c['task']} | {format_length(int(c['length']))} | {c['mode']} | {c['reference_score']:.1f} | "
                         f"{c['arm_score']:.1f} | {c['difference']:+.1f} | [{low:+.1f}, {high:+.1f}] | {c['pairs']} | "
                         f"{c['lost']} | {c['gained']} | {c['status']} |")
        lines.append("")
        flips = []
        for c in arm.get("cells") or ():
            for way, key in (("lost", "lost_examples"), ("gained", "gained_examples")):
                for e in c.get(key) or ():
                    flips.append(f"- {c['task']} @ {format_length(int(c['length']))} seed {e['seed']} sample {e['index']} ({way}): "
                                 f"{ref} {_shown(e['reference_prediction'])}, {arm['name']} {_shown(e['arm_prediction'])}, "
                                 f"expected `{_cut(', '.join(e.get('answers') or ()))}`")
        if flips:
            lines += ["Flips (two examples each way per cell):", "", *flips, ""]
        if arm.get("prompt_mismatches"):
            where = ", ".join(f"{m['task']} @ {format_length(int(m['length']))}" for m in arm["prompt_mismatches"])
            lines += [f"**Prompts differ from the reference arm's at {where}.**", ""]
    return lines
