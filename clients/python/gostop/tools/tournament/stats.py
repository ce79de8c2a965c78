"""The statistics of the report: Student's t and the mean of clustered samples with its interval.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Final

# ------------------------------------------------------------------------------ statistics

Z95: Final = 1.959963984540054


_T975: Final = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
                2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
                2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (a table to 30, then the
    Cornish-Fisher expansion around the normal quantile).

    >>> t975(1), round(t975(60), 3), round(t975(10**6), 3)
    (12.706, 2.0, 1.96)
    """
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)


def clustered_mean(samples: Iterable[tuple[Any, float]]) -> tuple[float, float, float, int]:
    """Mean of values grouped in clusters, with a 95 % CI from the cluster-robust standard error
    (t with clusters − 1 degrees of freedom): ``(mean, low, high, clusters)``; NaN bounds with
    fewer than two clusters.

    >>> m, lo, hi, g = clustered_mean([(1, 1.0), (2, 3.0), (3, 2.0), (4, 2.0)])
    >>> m, round(lo, 3), round(hi, 3), g
    (2.0, 0.701, 3.299, 4)
    """
    sums: dict[Any, float] = defaultdict(float)
    counts: dict[Any, int] = defaultdict(int)
    for cluster, value in samples:
        sums[cluster] += value
        counts[cluster] += 1
    n = sum(counts.values())
    if n == 0:
        return (math.nan, math.nan, math.nan, 0)
    mean = sum(sums.values()) / n
    g = len(sums)
    if g < 2:
        return (mean, math.nan, math.nan, g)
    var = g / (g - 1) * sum((sums[c] - mean * counts[c]) ** 2 for c in sums) / (n * n)
    half = t975(g - 1) * math.sqrt(var)
    return (mean, mean - half, mean + half, g)
