"""The special functions and the indicator product the everyday commands use without SciPy
(issue #32: importing scipy.special and scipy.sparse cost 0.1-0.2 s of every score, judges, plan
and verify), each checked against SciPy itself, the independent implementation; and a command on
a small store loads no SciPy at all."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import sparse, special

from annotate.stats import _common
from annotate.stats._common import chi2_sf, indicator_product, normal_cdf, normal_quantile, xlogy


def test_the_normal_quantile_and_distribution_are_scipys():
    ps = np.concatenate([[1e-300, 1e-100, 1e-20, 1e-8], np.linspace(0.0005, 0.9995, 401), [1 - 1e-9, 1 - 1e-15]])
    for p in ps:
        assert normal_quantile(float(p)) == pytest.approx(float(special.ndtri(p)), rel=1e-13, abs=1e-14)
    assert (normal_quantile(0.0), normal_quantile(1.0)) == (-math.inf, math.inf)
    assert math.isnan(normal_quantile(1.5))
    for x in np.concatenate([np.linspace(-38, 9, 471), [-math.inf, math.inf]]):
        assert normal_cdf(float(x)) == pytest.approx(float(special.ndtr(x)), rel=1e-12, abs=1e-300)


def test_xlogy_is_scipys_with_its_zeros_and_nans():
    gen = np.random.default_rng(3)
    x = gen.random(2000) * 5
    y = gen.random(2000)
    x[::4], y[::7], y[::11] = 0.0, 0.0, np.nan
    ours, theirs = xlogy(x, y), special.xlogy(x, y)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)) and np.array_equal(np.isinf(ours), np.isinf(theirs))
    ok = np.isfinite(theirs)
    np.testing.assert_allclose(ours[ok], theirs[ok], rtol=1e-15, atol=0)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 6, 9, 10, 17, 30, 58, 120, 400])
def test_the_chi_square_survival_is_scipys(df):
    for x in [1e-6, 0.01, 0.3, 1.0, 2.5, 3.841458820694124, 7.0, 15.0, 40.0, 90.0, 200.0, 500.0, 1200.0]:
        theirs = float(special.chdtrc(df, x))
        if theirs > 1e-290:
            assert chi2_sf(x, df) == pytest.approx(theirs, rel=1e-11)
    assert chi2_sf(0.0, df) == 1.0 and math.isnan(chi2_sf(math.nan, df))


@pytest.mark.parametrize("direct", [True, False])
def test_the_indicator_product_is_the_sparse_one_either_way(monkeypatch, direct):
    monkeypatch.setattr(_common, "DIRECT_ADDITIONS", 10**12 if direct else 0)
    gen = np.random.default_rng(5)
    for shape, nnz, width in [((7, 9), 30, 4), ((1, 3), 3, 1), ((40, 200), 600, 25), ((5, 5), 0, 3)]:
        rows, cols = gen.integers(0, shape[0], nnz), gen.integers(0, shape[1], nnz)  # repeated pairs add up
        values = gen.normal(size=(shape[1], width))
        if shape[1] > 3:
            values[2, 0] = np.nan  # reaches only the rows that sum it
        ours = indicator_product(rows, cols, shape, values)
        theirs = np.asarray(sparse.csr_matrix((np.ones(nnz), (rows, cols)), shape=shape) @ values)
        np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-13)
        assert np.array_equal(np.isnan(ours), np.isnan(theirs))


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory):
    from annotate.pipeline.demo import run_demo

    root = tmp_path_factory.mktemp("demo") / "ws"
    run_demo(root, offline=True, keep_server=False, echo=lambda _: None)
    return root


@pytest.mark.parametrize(
    "args",
    [
        ["score", "--round", "xstest-r1"],
        ["judges", "--round", "xstest-r1"],
        ["plan", "--round", "xstest-r1", "--target-halfwidth", "0.05"],
        ["status", "--round", "xstest-r1"],
        ["summary", "--json"],
        ["verify", "EXPORT"],
    ],
    ids=lambda a: a[0],
)
def test_an_everyday_command_on_a_small_store_loads_no_scipy(demo_ws, args):
    if args[0] == "verify":
        (export,) = [p for p in (demo_ws / "exports").iterdir() if p.is_dir()]
        args = ["verify", str(export)]
    code = (
        "import sys, io, contextlib\n"
        f"sys.argv = ['annotate', '--workspace', {str(demo_ws)!r}, *{args!r}]\n"
        "from annotate.cli import main\n"
        "try:\n    with contextlib.redirect_stdout(io.StringIO()): main()\n"
        "except SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        "print(sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
