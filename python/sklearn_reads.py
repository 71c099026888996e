"""How often scikit-learn's estimators read a lazy Tessera array in array_api_dispatch mode
(each read of a value runs a job), and what those reads cost: each estimator fitted on a
NumPy matrix and on the same matrix persisted in Tessera, one JSON line each.

usage: python sklearn_reads.py ROWS COLS [ESTIMATOR ...]   (e.g. 1e6 32 "PCA full")
"""
import json
import os
import sys
import time

os.environ["SCIPY_ARRAY_API"] = "1"
import numpy as np  # noqa: E402
import sklearn  # noqa: E402

import tessera as ts  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, StandardScaler  # noqa: E402

CASES = {
    "StandardScaler": (StandardScaler, False),
    "MinMaxScaler": (MinMaxScaler, False),
    "PCA full": (lambda: PCA(n_components=8, svd_solver="full"), False),
    "PCA randomized": (lambda: PCA(n_components=8, svd_solver="randomized", random_state=0), False),
    "Ridge svd": (lambda: Ridge(alpha=1.0, solver="svd"), "target"),
    "LinearDiscriminantAnalysis": (LinearDiscriminantAnalysis, "labels"),
    "GaussianNB": (GaussianNB, "labels"),
}

# Every read of a Tessera array (size, seconds) since the list was last cleared.
reads = []


def counted(read):
    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        out = read(self, *args, **kwargs)
        reads.append((self.size, time.perf_counter() - start))
        return out

    return timed


def main():
    n, d = int(float(sys.argv[1])), int(sys.argv[2])
    rng = np.random.default_rng(42)
    X = rng.normal(size=(n, d))
    ys = {"target": X @ rng.normal(size=d), "labels": (X[:, 0] > 0).astype(np.int64)}
    xp = ts.array_api
    Xt = xp.asarray(X).persist()
    yts = {k: xp.asarray(v).persist() for k, v in ys.items()}
    ts.Array.__array__ = counted(ts.Array.__array__)
    ts.Array.compute = counted(ts.Array.compute)
    for name in sys.argv[3:] or list(CASES):
        make, y = CASES[name]
        start = time.perf_counter()
        make().fit(X, ys.get(y))
        numpy_s = time.perf_counter() - start
        reads.clear()
        with sklearn.config_context(array_api_dispatch=True):
            start = time.perf_counter()
            make().fit(Xt, yts.get(y))
            tessera_s = time.perf_counter() - start
        values = [t for size, t in reads if size == 1]
        print(json.dumps({
            "estimator": name,
            "size": f"{n}x{d}",
            "numpy_fit_s": round(numpy_s, 3),
            "tessera_fit_s": round(tessera_s, 3),
            "reads": len(reads),
            "value_reads": len(values),
            "read_s": round(sum(t for _, t in reads), 3),
            "value_read_s": round(sum(values), 3),
        }))


if __name__ == "__main__":
    main()
