"""Self-contained HTML pages (no network, no CDN): charts are Matplotlib figures inlined as SVG.

    pages.assets     the shared helpers: escape(), svg(fig) (a figure as inline <svg>), page(title, body)
                     (the page shell with its inline CSS), matplotlib() (the figure classes, or a usage
                     error naming the ``plot`` extra)
    history.page     ``pytest-ruler history DIR --html OUT``: the trend page of a history folder

Why Matplotlib's SVG and not Plotly: matplotlib is already the ``plot`` extra (no new dependency),
it draws offline, and an inline SVG chart weighs tens of kilobytes, where Plotly would inline
about 4.6 MB of JavaScript into every page.
"""
