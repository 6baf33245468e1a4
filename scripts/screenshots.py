"""Screenshot every page (or some), normal mode at 1280x720 and 1600x1000 and lecture mode (the stage) at 1280x720,
1920x1080 and 1024x768, and print what a lecturer would trip over: main figure below the first screen or, on the
stage, covering less than 60 % of it, text under 18 px in lecture mode, clipped text, a Deploy button, exceptions.
Each lecture-mode line says how much of the screen the main figure covers.

    .venv/bin/python scripts/screenshots.py                      # every page, into assets/screenshots
    .venv/bin/python scripts/screenshots.py --pages Vector_fields Trajectories --out /tmp/shots
    .venv/bin/python scripts/screenshots.py --modes lecture --sizes 1280x720 1920x1080   # the README's stage shots

Files: <page>-<W>x<H>.png (normal mode), <page>-lecture-<W>x<H>.png (lecture mode); --small also writes a copy
at 25 % (<name>-25pc.png), the back row's view.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import layout  # noqa: E402


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is WIDTHxHEIGHT in pixels, like 1280x720; got {text!r}") from None
    if not (200 <= w <= 8000 and 200 <= h <= 8000):
        raise argparse.ArgumentTypeError(f"a size between 200x200 and 8000x8000 pixels; got {text!r}")
    return w, h


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", nargs="*", help="url paths (e.g. Vector_fields); default: every page")
    ap.add_argument("--out", default=str(ROOT / "assets" / "screenshots"))
    ap.add_argument("--modes", nargs="*", choices=["normal", "lecture"], default=["normal", "lecture"])
    ap.add_argument("--sizes", nargs="*", type=_size,
                    help="WIDTHxHEIGHT; default: 1280x720 and 1600x1000 (normal), 1280x720, 1920x1080 and "
                         "1024x768 (lecture)")
    ap.add_argument("--full", action="store_true", help="also save a full-page screenshot")
    ap.add_argument("--small", action="store_true", help="also save a copy scaled to 25 %% (the back row)")
    ap.add_argument("--query", default="", help="URL parameters for every page, e.g. 'tab=3-D'")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    known = [p for p, _ in layout.page_paths()]
    unknown = [p for p in args.pages or [] if p not in known]
    if unknown:
        ap.error(f"no page {', '.join(unknown)}; the pages are {', '.join(known)}")
    paths = [p for p in known if not args.pages or p in args.pages]
    n_bad = 0
    with layout.streamlit_server(args=["--server.fileWatcherType", "none"]) as url, layout.chromium() as browser:
        for path in paths:
            for lecture in (False, True):
                if ("lecture" if lecture else "normal") not in args.modes:
                    continue
                sizes = args.sizes or (layout.STAGE_SIZES if lecture else layout.SIZES)
                page, errors = layout.open_page(browser, url, path, *sizes[0], lecture, args.query)
                for i, (w, h) in enumerate(sizes):
                    if i:
                        page.set_viewport_size({"width": w, "height": h})
                        page.wait_for_timeout(1500)  # the chart element follows its place's size a moment later
                    tag = f"{path.lower()}{'-lecture' if lecture else ''}-{w}x{h}"
                    page.screenshot(path=str(out / f"{tag}.png"))
                    if args.full:
                        page.screenshot(path=str(out / f"{tag}-full.png"), full_page=True)
                    if args.small:
                        from PIL import Image

                        with Image.open(out / f"{tag}.png") as im:
                            im.resize((max(1, w // 4), max(1, h // 4)), Image.LANCZOS).save(out / f"{tag}-25pc.png")
                    probs = layout.exception_problems(page, errors) + layout.main_figure_problems(page)
                    probs += layout.overflow_problems(page) + layout.chrome_problems(page)
                    if lecture:
                        probs += layout.font_problems(page) + layout.stage_problems(page)
                    frac = layout.main_figure_fraction(page)
                    n_bad += bool(probs)
                    print(f"{tag}: {'' if frac is None else f'main figure {frac:.0%} of the screen; '}"
                          f"{'ok' if not probs else 'PROBLEMS'}", flush=True)
                    for p in probs:
                        print("   ", p)
                page.close()
    return 1 if n_bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
