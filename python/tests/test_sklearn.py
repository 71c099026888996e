"""scikit-learn's estimators that support the array API, fitted on Tessera arrays in
``array_api_dispatch`` mode, against the same estimators on NumPy arrays."""

import numpy as np
import pytest

import tessera as ts
from conftest import CHUNKINGS

sklearn = pytest.importorskip("sklearn")
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.naive_bayes import GaussianNB  # noqa: E402
from sklearn.preprocessing import (  # noqa: E402
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    StandardScaler,
)

xp = ts.array_api
rng = np.random.default_rng(42)
X = rng.normal(size=(300, 6))
X[:, 2] = 3.0  # a constant column: the scalers' zero-variance path
Y = X @ rng.normal(size=6) + 0.1 * rng.normal(size=300)
LABELS = (X[:, 0] + X[:, 1] > 0).astype(np.int64)

TRANSFORMERS = {
    "StandardScaler": StandardScaler,
    "MinMaxScaler": MinMaxScaler,
    "MaxAbsScaler": MaxAbsScaler,
    "Normalizer": Normalizer,
    "PCA full": lambda: PCA(n_components=3, svd_solver="full"),
    "PCA randomized": lambda: PCA(n_components=3, svd_solver="randomized", random_state=0),
}
PREDICTORS = {
    "Ridge svd": (lambda: Ridge(alpha=0.5, solver="svd"), Y),
    "LinearDiscriminantAnalysis": (LinearDiscriminantAnalysis, LABELS),
    "GaussianNB": (GaussianNB, LABELS),
}


def tessera_array(a, chunks):
    x = xp.asarray(a)
    return x if chunks is None else x.rechunk(tuple(min(chunks * 11, n) for n in x.shape))


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("name", sorted(TRANSFORMERS))
def test_a_transformer_on_tessera_arrays_equals_numpys(name, chunks):
    want = TRANSFORMERS[name]().fit_transform(X)
    with sklearn.config_context(array_api_dispatch=True):
        got = TRANSFORMERS[name]().fit_transform(tessera_array(X, chunks))
    assert isinstance(got, ts.Array)
    # svd_flip fixes the components' signs from the data, so PCA agrees exactly in sign.
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("name", sorted(PREDICTORS))
def test_a_predictor_on_tessera_arrays_equals_numpys(name, chunks):
    make, target = PREDICTORS[name]
    want = make().fit(X, target).predict(X)
    with sklearn.config_context(array_api_dispatch=True):
        model = make().fit(tessera_array(X, chunks), xp.asarray(target))
        got = model.predict(tessera_array(X, chunks))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-9)
