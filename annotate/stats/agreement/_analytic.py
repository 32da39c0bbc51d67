"""The analytic standard errors and z tests beside the bootstrap: the two-rater kappas and Fleiss'.

* :func:`_kappa_analytic`: the large-sample SE of Cohen's and the weighted kappas and their z
  test against chance (Fleiss, Cohen & Everitt 1969; SAS's ASE, statsmodels' ``cohens_kappa``).
* :func:`_fleiss_z`: the SE of Fleiss' kappa on complete units under "no agreement beyond
  chance" and its z test (Fleiss, Nee & Landis 1979; R irr's ``kappam.fleiss``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from annotate.stats._common import NAN


def _kappa_analytic(table: NDArray[np.int64], w: NDArray[np.float64]) -> tuple[float, dict[str, float]]:
    """Large-sample SE of (weighted) kappa and the z test against chance (Fleiss, Cohen & Everitt 1969).

    With agreement weights a = 1 - w / max(w) (a_aa = 1), p_ab = table / n, row and column shares
    p_a+ and p_+b, p_o = sum a p, p_e = sum a p_a+ p_+b, abar_a = sum_b p_+b a_ab and
    abar_b = sum_a p_a+ a_ab:

        Var(kappa)   = [sum p_ab (a_ab - (abar_a + abar_b)(1 - kappa))^2 - (kappa - p_e (1 - kappa))^2]
                       / (n (1 - p_e)^2)
        Var_0(kappa) = [sum p_a+ p_+b (a_ab - (abar_a + abar_b))^2 - p_e^2] / (n (1 - p_e)^2)

    Returns the SE and ``{"se_h0", "z", "p_value"}`` (z = kappa / SE_0, two-sided normal p).
    """
    n = float(table.sum())
    a = 1.0 - w / w.max()
    p = table / n
    row, col = p.sum(axis=1), p.sum(axis=0)
    p_o = float((a * p).sum())
    p_e = float(row @ a @ col)
    kappa = (p_o - p_e) / (1.0 - p_e)
    abar = (a @ col)[:, None] + (row @ a)[None, :]
    fac = n * (1.0 - p_e) ** 2
    var = float((p * (a - abar * (1.0 - kappa)) ** 2).sum() - (kappa - p_e * (1.0 - kappa)) ** 2) / fac
    var0 = float((np.outer(row, col) * (a - abar) ** 2).sum() - p_e**2) / fac
    se0 = math.sqrt(var0) if var0 > 0 else NAN
    z = kappa / se0 if se0 > 0 else NAN
    p_value = math.erfc(abs(z) / math.sqrt(2.0)) if z == z else NAN
    return math.sqrt(max(var, 0.0)), {"se_h0": se0, "z": z, "p_value": p_value}


def _fleiss_z(kappa: float, p_j: NDArray[np.float64], N: int, r: int) -> dict[str, float]:
    """SE of Fleiss' kappa under "no agreement beyond chance" and the z test (Fleiss, Nee & Landis 1979).

        Var_0 = 2 / ((sum_j p_j q_j)^2 N r (r - 1)) * [(sum_j p_j q_j)^2 - sum_j p_j q_j (q_j - p_j)],  q_j = 1 - p_j

    as R irr's ``kappam.fleiss`` computes it. Returns ``{"se_h0", "z", "p_value"}`` (two-sided).
    """
    q_j = 1.0 - p_j
    pq = float((p_j * q_j).sum())
    bracket = pq * pq - float((p_j * q_j * (q_j - p_j)).sum())
    var0 = 2.0 * bracket / (pq * pq * N * r * (r - 1)) if pq > 0 else NAN
    se0 = math.sqrt(var0) if var0 > 0 else NAN
    z = kappa / se0 if se0 > 0 else NAN
    return {"se_h0": se0, "z": z, "p_value": math.erfc(abs(z) / math.sqrt(2.0)) if z == z else NAN}
