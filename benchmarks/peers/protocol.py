"""The line protocol between ``benchmarks/bench_peers.py`` and its persistent workers (standard library only,
so that the worker for the authors' code can import it from their venv without vilab).

The harness writes one JSON object a line to a worker's stdin, ``{"op": NAME, ...}``; the worker answers with
one JSON object a line on the stdout it had when it started: ``{"ok": true, ...}`` or ``{"ok": false, "error":
"...", "traceback": "..."}``. Everything else the worker's code prints (the authors' progress lines, JAX's
warnings) goes to stderr: :func:`serve` points file descriptor 1 at stderr before any handler runs, so a stray
``print`` cannot break a reply.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback


def clean(x):
    """``x`` with every non-finite float written as the string "nan", "inf" or "-inf" (strict JSON)."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    return x


def serve(handlers: dict) -> None:
    """Answer requests from stdin until ``{"op": "quit"}`` or end of input; ``handlers[op](msg) -> dict``."""
    reply_to = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the code under test prints to stderr from now on, C libraries included
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        op = msg.get("op")
        if op == "quit":
            reply_to.write(json.dumps({"ok": True}) + "\n")
            break
        t0 = time.perf_counter()
        try:
            if op not in handlers:
                raise ValueError(f"unknown op {op!r}; this worker knows {sorted(handlers)}")
            reply = {"ok": True, **handlers[op](msg)}
        except Exception as e:  # noqa: BLE001 - the harness records why a row could not run
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=12)}
        reply["handler_s"] = time.perf_counter() - t0
        reply_to.write(json.dumps(clean(reply)) + "\n")
        reply_to.flush()
