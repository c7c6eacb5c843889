"""Self-contained HTML pages of runs: one file each, that opens offline (no network, no CDN).

    REPORT ──run_page.run_page(report)──► the per-run page (``--ruler-html``, ``pytest-ruler html``):
        the verdict, Table 3 with intervals, the charts (Matplotlib drawn to inline SVG: svg), the
        depth x length heat map, and a sample browser (samples: filter by task, length, pass/fail)
    markup: escaping (every text from a report is escaped: predictions are model output), the
        page's frame, its CSS and its small inline JavaScript

Public names live in the modules (``run_page.run_page``, ``run_page.write_run_page``, ...).
"""
