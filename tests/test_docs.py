"""The documentation site (mkdocs.yml, docs/): it builds with no warning in strict mode, its API pages
hold the rendered docstrings, a broken cross-reference fails the build, every module of vilab has an
API page, and the Python blocks of the home and concept pages run as written."""

import html
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _mkdocs(args, cwd):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    res = subprocess.run([sys.executable, "-m", "mkdocs", *args], cwd=cwd, capture_output=True, text=True,
                         env=env, timeout=600)
    log = _ANSI.sub("", res.stdout + res.stderr)
    return res.returncode, log


def _warnings(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.lstrip().startswith(("WARNING", "ERROR"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    rc, log = _mkdocs(["build", "--strict", "--site-dir", str(out)], ROOT)
    assert rc == 0, f"mkdocs build --strict failed:\n{log[-5000:]}"
    assert not _warnings(log), "\n".join(_warnings(log))
    return out


def _text(page: Path) -> str:
    """The visible text of a built page (tags removed, entities decoded, spaces collapsed)."""
    raw = re.sub(r"<[^>]+>", "", page.read_text())
    text = re.sub(r"\s+", " ", html.unescape(raw))
    # a signature laid out one parameter per line (mkdocstrings-python 2) reads "run( algorithm: ..., )"
    return re.sub(r"\s+\)", ")", re.sub(r"\(\s+", "(", text))


def test_site_builds_strict_with_no_warning(site):
    for page in ("index.html", "api/core/index.html", "papers/tan2025/index.html", "examples/bong/index.html"):
        assert (site / page).is_file(), page


def test_api_pages_render_signatures_and_docstrings(site):
    core = _text(site / "api/core/index.html")
    assert "run(algorithm: Algorithm, key, state, n_steps: int, *, batches=None, record_every: int = 1" in core
    assert "Run algorithm from state for at most n_steps steps" in core
    # the plain-text layout of the docstrings survives (docs/_hooks/plain_docstrings.py): "<reason>" is
    # text, not a swallowed HTML tag; aligned tables are preformatted
    assert 'status "diverged: <reason>"' in core
    assert "<pre" in (site / "api/core/index.html").read_text()
    assert "resume(algorithm: Algorithm, trace: Trace, n_steps: int" in core
    natgrad = _text(site / "api/family/index.html")
    assert "update_cor1(mu, T, grad_mu, grad_T, rho)" in natgrad and "Corollary 1" in natgrad
    # the reStructuredText roles of the docstrings became links (docs/_hooks/rst_roles.py)
    raw = (site / "api/core/index.html").read_text()
    assert ":class:<code>" not in raw and ":func:<code>" not in raw
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="[^"]*#vilab\.core(\.trace)?\.Trace"', raw)


def test_paper_pages_link_to_the_api(site):
    raw = (site / "papers/tan2025/index.html").read_text()
    for ident in ("vilab.family.natgrad.update_cor1", "vilab.family.natgrad.natural_grad_chol_cov", "vilab.algorithms.optim.snngm"):
        assert re.search(rf'href="[^"]*api/[a-z_]+/#{re.escape(ident)}"', raw), ident
    for page, ident in (("kumar2025", "vilab.theory.guarantees.lemma1_check"),
                        ("chen-nott-tan", "vilab.divergences.gaussian.score_nqp"),
                        ("bong", "vilab.online.reference.kalman_filter")):
        assert re.search(rf'href="[^"]*#{re.escape(ident)}"', (site / f"papers/{page}/index.html").read_text()), ident


def test_example_pages_include_the_scripts(site):
    for page, script in (("own-target", "fit_your_own_target"), ("compare", "compare_methods_logistic"),
                         ("bong", "bong_stream"), ("reproduce", "reproduce_a_table")):
        text = _text(site / f"examples/{page}/index.html")
        first = (ROOT / "examples" / f"{script}.py").read_text().splitlines()[0].strip('"')
        assert first in text and "def main(" in text, page


def test_every_vilab_module_has_an_api_page():
    documented = set()
    for page in (DOCS / "api").glob("*.md"):
        documented |= set(re.findall(r"^::: (vilab[\w.]*)\s*$", page.read_text(), re.M))
    modules = set()
    for path in (ROOT / "vilab").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") for p in parts):
            modules.add(".".join(parts))
    missing = sorted(modules - documented)
    assert not missing, f"modules without an API page (add a '::: module' line under docs/api/): {missing}"


def test_nav_lists_every_page_and_registers_existing_hooks():
    cfg = (ROOT / "mkdocs.yml").read_text()
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
             if not p.relative_to(DOCS).as_posix().startswith(("_hooks/", "hooks/"))}
    unlisted = sorted(p for p in pages if p not in cfg)
    assert not unlisted, f"pages missing from the nav of mkdocs.yml: {unlisted}"
    if (DOCS / "hooks" / "method_table.py").exists():
        assert "docs/hooks/method_table.py" in cfg


def test_a_broken_reference_fails_the_strict_build(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Broken\n\nSee [`nothing`][vilab.family.linalg.no_such_function].\n\n::: vilab.family.linalg\n")
    (tmp_path / "mkdocs.yml").write_text(textwrap.dedent(f"""\
        site_name: broken
        docs_dir: docs
        plugins:
          - autorefs
          - mkdocstrings:
              handlers:
                python:
                  paths: ["{ROOT.as_posix()}"]
        """))
    rc, log = _mkdocs(["build", "--strict", "--site-dir", str(tmp_path / "site")], tmp_path)
    assert rc != 0 and "vilab.family.linalg.no_such_function" in log


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


@pytest.mark.parametrize("page", ["concepts/gaussian-families.md", "concepts/algorithms.md",
                                  "concepts/runner.md", "concepts/traces.md", "concepts/step-sizes.md",
                                  "concepts/reproductions.md"])
def test_python_blocks_of_the_pages_run(page):
    blocks = _python_blocks(DOCS / page)
    assert blocks, f"{page} has no Python block"
    code = "\n".join(blocks)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"a Python block of docs/{page} failed:\n{res.stderr[-3000:]}"


def test_home_example_prints_what_the_page_says():
    text = (DOCS / "index.md").read_text()
    block = re.search(r"<!-- home-example:begin -->\s*```python\n(.*?)```\s*<!-- home-example:end -->", text, re.S)
    assert block, "docs/index.md lost its ten-line example"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 12
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    status, steps = res.stdout.split()[:2]
    assert status == "converged" and f"`converged {steps} " in text
