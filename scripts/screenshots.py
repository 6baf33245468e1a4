"""Screenshot every page (or some) at 1280x720 and 1600x1000, normal and lecture mode, and print what a
lecturer would trip over: main figure below the first screen, text under 18 px in lecture mode,
clipped text, exceptions.

    .venv/bin/python scripts/screenshots.py                      # every page, into assets/screenshots
    .venv/bin/python scripts/screenshots.py --pages Vector_fields Trajectories --out /tmp/shots
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import layout  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", nargs="*", help="url paths (e.g. Vector_fields); default: every page")
    ap.add_argument("--out", default=str(ROOT / "assets" / "screenshots"))
    ap.add_argument("--full", action="store_true", help="also save a full-page screenshot")
    ap.add_argument("--query", default="", help="URL parameters for every page, e.g. 'tab=3-D'")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [p for p, _ in layout.page_paths() if not args.pages or p in args.pages]
    n_bad = 0
    with layout.streamlit_server() as url, layout.chromium() as browser:
        for path in paths:
            for (w, h) in layout.SIZES:
                for lecture in (False, True):
                    page, errors = layout.open_page(browser, url, path, w, h, lecture, args.query)
                    tag = f"{path.lower()}-{w}x{h}{'-lecture' if lecture else ''}"
                    page.screenshot(path=str(out / f"{tag}.png"))
                    if args.full:
                        page.screenshot(path=str(out / f"{tag}-full.png"), full_page=True)
                    probs = layout.exception_problems(page, errors) + layout.main_figure_problems(page)
                    probs += layout.overflow_problems(page)
                    if lecture:
                        probs += layout.font_problems(page)
                    n_bad += bool(probs)
                    print(f"{tag}: {'ok' if not probs else ''}")
                    for p in probs:
                        print("   ", p)
                    page.close()
    return 1 if n_bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
