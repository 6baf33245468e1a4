"""Warm up running vilab servers: open every page once on each, in headless Chromium.

    python deploy/warmup.py http://127.0.0.1:8601 http://127.0.0.1:8602

Pass each replica's own address (not the nginx port: nginx would send every visit of one browser to
the same replica). ``vilab hall`` runs this itself after starting the replicas.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hall  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        raise SystemExit(2)
    took = hall.warm_up([u.rstrip("/") for u in sys.argv[1:]])
    raise SystemExit(0 if took else 1)
