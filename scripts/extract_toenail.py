"""Re-create vilab/data/toenail.csv from Debian's r-cran-hsaur3 package (HSAUR3's ``toenail`` data set).

How the shipped file was made; not run by the tests or by ``make``. Needs a Debian machine with apt and the
``rdata`` package (pip install rdata):

    python scripts/extract_toenail.py [--out vilab/data/toenail.csv]

It downloads the .deb with ``apt-get download r-cran-hsaur3`` (no installation, no R), unpacks it with
``dpkg-deb -x``, reads the package's lazy-load database (``data/Rdata.rdx``: the gzip-compressed index;
``data/Rdata.rdb``: each object a 4-byte length followed by a zlib stream) and writes the data frame.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import tempfile
import zlib
from pathlib import Path


def read_lazyload(base: Path, name: str):
    import rdata

    index = rdata.conversion.convert(rdata.parser.parse_data(gzip.decompress(base.with_suffix(".rdx").read_bytes())))
    offset, length = (int(v) for v in index["variables"][name])
    chunk = base.with_suffix(".rdb").read_bytes()[offset:offset + length]
    return rdata.conversion.convert(rdata.parser.parse_data(zlib.decompress(chunk[4:])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "vilab" / "data" / "toenail.csv"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", "r-cran-hsaur3"], cwd=tmp, check=True)
        deb = next(Path(tmp).glob("r-cran-hsaur3_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(tmp) / "x")], check=True)
        base = next(Path(tmp, "x").rglob("HSAUR3/data/Rdata.rdb")).with_suffix("")
        df = read_lazyload(base, "toenail")
    df.to_csv(args.out, index=False)
    print(f"wrote {args.out}: {df.shape[0]} rows, {df['patientID'].nunique()} patients")


if __name__ == "__main__":
    main()
