"""Self-contained HTML pages of runs: one file each, that opens offline (no network, no CDN).

    REPORT ──run_page.run_page(report)──► the per-run page (``--ruler-html``, ``pytest-ruler html``):
        the verdict, Table 3 with intervals, the charts (Matplotlib drawn to inline SVG: svg), the
        depth x length heat map, and a sample browser (samples: filter by task, length, pass/fail)
    markup: escaping (every text from a report is escaped: predictions are model output), the
        page's frame, its CSS and its small inline JavaScript
    assets: the trend page's helpers: escape(), svg(fig), page(title, body), matplotlib() (the figure
        classes, or a usage error naming the ``plot`` extra); history.page draws
        ``pytest-ruler history DIR --html OUT`` with them

Why Matplotlib's SVG and not Plotly: matplotlib is already the ``plot`` extra (no new dependency),
it draws offline, and an inline SVG chart weighs tens of kilobytes, where Plotly would inline
about 4.6 MB of JavaScript into every page.

Public names live in the modules (``run_page.run_page``, ``run_page.write_run_page``, ...).
"""
