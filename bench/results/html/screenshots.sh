#!/usr/bin/env bash
# Screenshots of a page in headless Chromium (offline: no name resolves), as tests/unit/pages/test_browser.py
# opens it: screenshots.sh PAGE.html OUT_PREFIX  ->  OUT_PREFIX.png (the top of the page: verdict, Table 3,
# charts) and OUT_PREFIX.samples.png (the sample browser alone, filtered to the wrong answers through the
# address, #outcome=wrong; a copy of the page whose other parts are hidden, so the browser is on screen).
set -euo pipefail
page="$(realpath "$1")"; prefix="$2"
work="$(mktemp -d)"
shot() {
  chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars \
    --user-data-dir="$work/profile" --host-resolver-rules="MAP * ~NOTFOUND" --window-size="$1" \
    --screenshot="$2" "file://$3$4" 2>/dev/null
}
shot "${TOP_SIZE:-1280,2600}" "$prefix.png" "$page" ""
sed 's|</head>|<style>body > *:not(#sample-browser) { display: none; }</style></head>|' "$page" > "$work/samples.html"
shot "${SAMPLES_SIZE:-1280,1500}" "$prefix.samples.png" "$work/samples.html" "#outcome=wrong"
rm -rf "$work"
