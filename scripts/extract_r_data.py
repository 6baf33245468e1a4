"""Re-create the R data sets shipped in vilab/data from Debian's r-cran-* packages (see vilab/data/SOURCES.md).

How the shipped files were made; not run by the tests or by ``make``. Needs a Debian machine with apt and the
``rdata`` package (pip install rdata); no R:

    python scripts/extract_r_data.py            # every file of FILES into vilab/data
    python scripts/extract_r_data.py --out DIR  # somewhere else (to compare: cmp DIR/x.csv vilab/data/x.csv)

For each Debian package it runs ``apt-get download`` (no installation), unpacks the .deb with ``dpkg-deb -x``
and reads the data set either from ``data/<name>.rda`` or from the package's lazy-load database
(``data/Rdata.rdx``: the gzip-compressed index; ``data/Rdata.rdb``: each object a 4-byte length followed by a
zlib stream), then writes it as CSV without other change.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import tempfile
import zlib
from pathlib import Path

#: shipped file -> (Debian package, R package, data set)
FILES = {
    "toenail.csv": ("r-cran-hsaur3", "HSAUR3", "toenail"),
    "pima_indians_diabetes.csv": ("r-cran-mlbench", "mlbench", "PimaIndiansDiabetes"),
    "breast_cancer_wisconsin.csv": ("r-cran-mlbench", "mlbench", "BreastCancer"),
}


def read_r_data(data_dir: Path, name: str):
    """The data set ``name`` of an installed R package's ``data`` folder, as a pandas DataFrame."""
    import rdata

    rda = data_dir / f"{name}.rda"
    if rda.is_file():
        return rdata.read_rda(rda)[name]
    index = rdata.conversion.convert(rdata.parser.parse_data(gzip.decompress((data_dir / "Rdata.rdx").read_bytes())))
    offset, length = (int(v) for v in index["variables"][name])
    chunk = (data_dir / "Rdata.rdb").read_bytes()[offset:offset + length]
    return rdata.conversion.convert(rdata.parser.parse_data(zlib.decompress(chunk[4:])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "vilab" / "data"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        unpacked = {}
        for fname, (deb_name, r_pkg, name) in FILES.items():
            if deb_name not in unpacked:
                subprocess.run(["apt-get", "download", deb_name], cwd=tmp, check=True)
                deb = next(Path(tmp).glob(f"{deb_name}_*.deb"))
                unpacked[deb_name] = Path(tmp) / deb_name
                subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked[deb_name])], check=True)
            data_dir = next(unpacked[deb_name].rglob(f"site-library/{r_pkg}/data"))
            df = read_r_data(data_dir, name)
            df.to_csv(Path(args.out) / fname, index=False)
            print(f"wrote {fname}: {df.shape[0]} rows x {df.shape[1]} columns ({r_pkg}::{name}, Debian {deb_name})")


if __name__ == "__main__":
    main()
