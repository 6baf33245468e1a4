"""The complete example algorithm in DEVELOPING.md runs as written."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "DEVELOPING.md"


def test_the_protocol_example_in_developing_runs():
    text = DOC.read_text()
    block = re.search(r"<!-- example:begin -->\s*```python\n(.*?)```\s*<!-- example:end -->", text, re.S)
    assert block, "DEVELOPING.md lost its example block"
    code = block.group(1)
    assert 20 <= len(code.strip().splitlines()) <= 60
    namespace: dict = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # the block asserts its own result
    assert namespace["trace"].n_steps == 100
