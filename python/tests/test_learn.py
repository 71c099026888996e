"""tessera.learn's KMeans against scikit-learn's and against sums by hand, under several
chunkings."""

import numpy as np
import pytest

import tessera as ts
from tessera.learn import KMeans

rng = np.random.default_rng(3)
TRUE_CENTERS = np.array([[0.0, 0.0, 0.0], [8.0, 8.0, 0.0], [-8.0, 6.0, 4.0], [5.0, -7.0, -5.0]])
TRUTH = np.repeat(np.arange(4), 250)
X = TRUE_CENTERS[TRUTH] + rng.normal(scale=0.7, size=(1000, 3))


def rows(a, chunk):
    x = ts.asarray(a)
    return x if chunk is None else x.rechunk((chunk, a.shape[1]))


def same_partition(a, b):
    """True when the labellings `a` and `b` group the rows alike (up to renaming)."""
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("init", ["k-means||", "random"])
def test_kmeans_finds_the_clusters_alike_under_every_chunking(init):
    fits = [KMeans(4, init=init, n_init=4, random_state=5).fit(rows(X, c)) for c in (None, 37, 400)]
    labels = [np.asarray(f.labels_) for f in fits]
    assert same_partition(labels[0], TRUTH)
    for f, lab in zip(fits[1:], labels[1:]):
        np.testing.assert_array_equal(lab, labels[0])
        np.testing.assert_allclose(f.cluster_centers_, fits[0].cluster_centers_, rtol=1e-12)
    f = fits[0]
    # The centres are the means of their rows, the inertia the sum of squared distances.
    for j in range(4):
        np.testing.assert_allclose(f.cluster_centers_[j], X[labels[0] == j].mean(axis=0), rtol=1e-9)
    inertia = ((X - f.cluster_centers_[labels[0]]) ** 2).sum()
    assert f.inertia_ == pytest.approx(inertia, rel=1e-9)
    assert f.score(X) == pytest.approx(-inertia, rel=1e-9)
    dist = np.sqrt(((X[:, None, :] - f.cluster_centers_[None]) ** 2).sum(axis=2))
    np.testing.assert_allclose(np.asarray(f.transform(X)), dist, atol=1e-9)
    np.testing.assert_array_equal(np.asarray(f.predict(X[:10])), labels[0][:10])


def test_kmeans_equals_scikit_learn_from_the_same_centres():
    sklearn_cluster = pytest.importorskip("sklearn.cluster")
    start = X[[0, 300, 600, 900]]
    ours = KMeans(4, init=start).fit(rows(X, 64))
    theirs = sklearn_cluster.KMeans(4, init=start, n_init=1, algorithm="lloyd", tol=1e-4).fit(X)
    np.testing.assert_array_equal(np.asarray(ours.labels_), theirs.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, rtol=1e-9)
    assert ours.inertia_ == pytest.approx(theirs.inertia_, rel=1e-9)


def test_an_empty_cluster_keeps_its_centre_and_more_runs_never_do_worse():
    far = np.vstack([TRUE_CENTERS[:3], [[1e3, 1e3, 1e3]]])
    f = KMeans(4, init=far).fit(X)
    np.testing.assert_array_equal(f.cluster_centers_[3], far[3])
    assert np.isfinite(f.cluster_centers_).all()
    one = KMeans(4, init="random", n_init=1, random_state=11).fit(X)
    many = KMeans(4, init="random", n_init=4, random_state=11).fit(X)
    assert many.inertia_ <= one.inertia_ + 1e-9


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="n_clusters"):
        KMeans(2000).fit(X)
    with pytest.raises(ValueError, match="not fitted"):
        KMeans(2).predict(X)
    with pytest.raises(ValueError, match="init must be"):
        KMeans(2, init="kmeans++").fit(X)
    with pytest.raises(ValueError, match="initial centres of shape"):
        KMeans(2, init=X[:3]).fit(X)
    with pytest.raises(ValueError, match="2-d"):
        KMeans(2).fit(X[:, 0])
    f = KMeans(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        f.predict(X[:, :2])
    holed = X.copy()
    holed[17, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        KMeans(2, init=X[:2]).fit(holed)
    assert f.score(X) == pytest.approx(-f.inertia_, rel=1e-12)


LOW_RANK = rng.normal(size=(900, 4)) @ rng.normal(size=(4, 12)) * [[3.0] * 12] + rng.normal(scale=0.01, size=(900, 12)) + 5.0


@pytest.mark.parametrize("solver", ["full", "randomized"])
@pytest.mark.parametrize("chunk", [None, 50, 333])
def test_pca_equals_the_svd_of_the_centred_data(solver, chunk):
    from tessera.learn import PCA

    p = PCA(3, svd_solver=solver, random_state=1).fit(rows(LOW_RANK, chunk))
    centred = LOW_RANK - LOW_RANK.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    # scikit-learn's signs: each component's largest loading positive.
    vt = vt * np.sign(vt[np.arange(len(vt)), np.argmax(np.abs(vt), axis=1)])[:, None]
    np.testing.assert_allclose(p.components_, vt[:3], atol=1e-9)
    np.testing.assert_allclose(p.singular_values_, s[:3], rtol=1e-9)
    np.testing.assert_allclose(p.explained_variance_, s[:3] ** 2 / 899, rtol=1e-9)
    np.testing.assert_allclose(p.explained_variance_ratio_, s[:3] ** 2 / (s**2).sum(), rtol=1e-9)
    np.testing.assert_allclose(p.mean_, LOW_RANK.mean(axis=0), rtol=1e-12)
    y = np.asarray(p.transform(LOW_RANK))
    np.testing.assert_allclose(y, centred @ vt[:3].T, atol=1e-8)
    np.testing.assert_allclose(np.asarray(p.inverse_transform(y)), y @ vt[:3] + LOW_RANK.mean(axis=0), atol=1e-8)


def test_pca_equals_scikit_learn_and_refuses_bad_input():
    from tessera.learn import PCA

    decomposition = pytest.importorskip("sklearn.decomposition")
    ours = PCA(5).fit(LOW_RANK)
    theirs = decomposition.PCA(5, svd_solver="full").fit(LOW_RANK)
    np.testing.assert_allclose(ours.components_, theirs.components_, atol=1e-9)
    np.testing.assert_allclose(ours.explained_variance_, theirs.explained_variance_, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(ours.fit_transform(LOW_RANK)), theirs.transform(LOW_RANK), atol=1e-8)
    with pytest.raises(ValueError, match="n_components"):
        PCA(13).fit(LOW_RANK)
    with pytest.raises(ValueError, match="svd_solver"):
        PCA(2, svd_solver="arpack").fit(LOW_RANK)
    with pytest.raises(ValueError, match="not fitted"):
        PCA(2).transform(LOW_RANK)
    with pytest.raises(ValueError, match="features"):
        ours.transform(LOW_RANK[:, :3])


FEATURES = rng.normal(size=(800, 5))
RESPONSE = FEATURES @ np.array([1.5, -2.0, 0.0, 0.5, 3.0]) + 4.0 + 0.05 * rng.normal(size=800)


def normal_equations(X, y, alpha, intercept):
    """Ridge's coefficients and intercept by hand."""
    mx, my = (X.mean(axis=0), y.mean(axis=0)) if intercept else (np.zeros(X.shape[1]), 0.0)
    xc, yc = X - mx, y - my
    coef = np.linalg.solve(xc.T @ xc + alpha * np.eye(X.shape[1]), xc.T @ yc)
    return coef, my - mx @ coef


@pytest.mark.parametrize("chunk", [None, 7, 300])
def test_least_squares_solve_the_normal_equations(chunk):
    from tessera.learn import LinearRegression, Ridge

    x = rows(FEATURES, chunk)
    for model, alpha in [(LinearRegression(), 0.0), (Ridge(2.5), 2.5), (Ridge(0.5, fit_intercept=False), 0.5)]:
        model.fit(x, RESPONSE)
        coef, intercept = normal_equations(FEATURES, RESPONSE, alpha, model.fit_intercept)
        np.testing.assert_allclose(model.coef_, coef, rtol=1e-9, atol=1e-12)
        assert model.intercept_ == pytest.approx(intercept, rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(np.asarray(model.predict(x)), FEATURES @ coef + intercept, rtol=1e-9)
    # Two targets: one row of coefficients each.
    both = np.c_[RESPONSE, 1.0 - RESPONSE]
    model = Ridge(2.5).fit(x, both)
    coef, intercept = normal_equations(FEATURES, both, 2.5, True)
    np.testing.assert_allclose(model.coef_, coef.T, rtol=1e-9)
    np.testing.assert_allclose(model.intercept_, intercept, rtol=1e-9)
    assert model.score(x, both) > 0.99


def test_linear_models_equal_scikit_learn():
    linear_model = pytest.importorskip("sklearn.linear_model")
    from tessera.learn import LinearRegression, LogisticRegression, Ridge

    x = rows(FEATURES, 64)
    for ours, theirs in [(LinearRegression(), linear_model.LinearRegression()), (Ridge(3.0), linear_model.Ridge(3.0))]:
        np.testing.assert_allclose(ours.fit(x, RESPONSE).coef_, theirs.fit(FEATURES, RESPONSE).coef_, rtol=1e-9)
        assert ours.score(x, RESPONSE) == pytest.approx(theirs.score(FEATURES, RESPONSE), rel=1e-12)
    labels = np.where(FEATURES[:, 0] - FEATURES[:, 1] + 0.5 * rng.normal(size=800) > 0, 7, 2)
    ours = LogisticRegression(C=0.5, tol=1e-12).fit(x, labels)
    theirs = linear_model.LogisticRegression(C=0.5, tol=1e-10, max_iter=1000).fit(FEATURES, labels)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(ours.predict_proba(x)), theirs.predict_proba(FEATURES), atol=1e-7)
    np.testing.assert_array_equal(np.asarray(ours.predict(x)), theirs.predict(FEATURES))
    assert ours.score(x, labels) == pytest.approx(theirs.score(FEATURES, labels))


@pytest.mark.parametrize("chunk", [None, 5, 250])
def test_logistic_regression_reaches_the_penalised_optimum(chunk):
    from tessera.learn import LogisticRegression

    labels = (FEATURES[:, 0] + FEATURES[:, 2] + 0.8 * rng.normal(size=800) > 0).astype(np.int64)
    model = LogisticRegression(C=2.0, tol=1e-12).fit(rows(FEATURES, chunk), labels)
    w, b = model.coef_[0], model.intercept_[0]
    # At the optimum the gradient of ½‖w‖² + C Σ log(1 + e^(-z)) is zero.
    p = 1.0 / (1.0 + np.exp(-(FEATURES @ w + b)))
    np.testing.assert_allclose(w + 2.0 * FEATURES.T @ (p - labels), 0.0, atol=1e-7)
    assert abs(2.0 * (p - labels).sum()) < 1e-7
    np.testing.assert_array_equal(model.classes_, [0, 1])
    # The default tol bounds the gradient as scikit-learn scales it: divided by C n.
    model = LogisticRegression(C=2.0).fit(rows(FEATURES, chunk), labels)
    w, b = model.coef_[0], model.intercept_[0]
    p = 1.0 / (1.0 + np.exp(-(FEATURES @ w + b)))
    scaled = np.append(w / 2.0 + FEATURES.T @ (p - labels), (p - labels).sum()) / 800
    assert np.abs(scaled).max() <= 1e-4


def test_truncated_svd_gives_the_top_singular_triplets():
    from tessera.learn import TruncatedSVD

    z = LOW_RANK - 5.0
    model = TruncatedSVD(3, random_state=0)
    projected = np.asarray(model.fit_transform(rows(z, 100)))
    _, s, vt = np.linalg.svd(z, full_matrices=False)
    vt = vt * np.sign(vt[np.arange(len(vt)), np.argmax(np.abs(vt), axis=1)])[:, None]
    np.testing.assert_allclose(model.singular_values_, s[:3], rtol=1e-8)
    np.testing.assert_allclose(model.components_, vt[:3], atol=1e-8)
    np.testing.assert_allclose(projected, z @ vt[:3].T, atol=1e-7)
    np.testing.assert_allclose(model.explained_variance_, (z @ vt[:3].T).var(axis=0), rtol=1e-8)
    np.testing.assert_allclose(model.explained_variance_ratio_, (z @ vt[:3].T).var(axis=0) / z.var(axis=0).sum(), rtol=1e-8)


def test_linear_models_refuse_bad_input():
    from tessera.learn import LinearRegression, LogisticRegression, Ridge, TruncatedSVD

    with pytest.raises(ValueError, match="one row per sample"):
        LinearRegression().fit(FEATURES, RESPONSE[:10])
    with pytest.raises(ValueError, match="alpha"):
        Ridge(-1.0).fit(FEATURES, RESPONSE)
    with pytest.raises(ValueError, match="binary"):
        LogisticRegression().fit(FEATURES, np.arange(800) % 3)
    with pytest.raises(ValueError, match="C must be"):
        LogisticRegression(C=0).fit(FEATURES, np.arange(800) % 2)
    with pytest.raises(ValueError, match="not fitted"):
        LogisticRegression().predict(FEATURES)
    with pytest.raises(ValueError, match="not fitted"):
        Ridge().predict(FEATURES)
    with pytest.raises(ValueError, match="features"):
        LinearRegression().fit(FEATURES, RESPONSE).predict(FEATURES[:, :2])
    with pytest.raises(ValueError, match="n_components"):
        TruncatedSVD(9).fit(FEATURES)


POINTS = rng.normal(size=(600, 4))
QUERIES = rng.normal(size=(50, 4))


def neighbours_by_hand(X, Q, k):
    """Each query's k nearest rows by sorting all distances (ties to the lower row)."""
    d = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    order = np.lexsort((np.broadcast_to(np.arange(len(X)), d.shape), d), axis=1)[:, :k]
    return np.take_along_axis(d, order, axis=1), order


@pytest.mark.parametrize("chunk", [None, 37, 250])
def test_nearest_neighbors_equal_a_search_by_hand_and_scikit_learn(chunk):
    from tessera.learn import NearestNeighbors

    model = NearestNeighbors(n_neighbors=6).fit(rows(POINTS, chunk))
    dist, ind = model.kneighbors(QUERIES)
    want_d, want_i = neighbours_by_hand(POINTS, QUERIES, 6)
    np.testing.assert_array_equal(ind, want_i)
    np.testing.assert_allclose(dist, want_d, rtol=1e-13)
    assert dist.dtype == np.float64 and ind.dtype == np.int64 and ind.shape == (50, 6)
    np.testing.assert_array_equal(model.kneighbors(rows(QUERIES, 9), 2, return_distance=False), want_i[:, :2])
    neighbors = pytest.importorskip("sklearn.neighbors")
    theirs = neighbors.NearestNeighbors(n_neighbors=6, algorithm="brute").fit(POINTS)
    their_d, their_i = theirs.kneighbors(QUERIES)
    np.testing.assert_array_equal(ind, their_i)
    np.testing.assert_allclose(dist, their_d, rtol=1e-9)
    # Without X: each row's neighbours among the others, as scikit-learn gives them.
    own_d, own_i = model.kneighbors()
    their_own_d, their_own_i = theirs.kneighbors()
    np.testing.assert_array_equal(own_i, their_own_i)
    np.testing.assert_allclose(own_d, their_own_d, rtol=1e-9, atol=1e-12)


def test_nearest_neighbors_break_ties_to_the_lower_row_and_drop_self_among_duplicates():
    from tessera.learn import NearestNeighbors

    # Rows 0, 2 and 3 are the same point; row 1 is 1 away, row 4 is 2 away.
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    model = NearestNeighbors(n_neighbors=2).fit(X)
    dist, ind = model.kneighbors(np.array([[0.0, 0.0]]))
    np.testing.assert_array_equal(ind, [[0, 2]])
    np.testing.assert_array_equal(dist, [[0.0, 0.0]])
    # Among the others (X=None): row 0's two nearest are 2 and 3; row 1 (1 from 0, 2, 3
    # and 4) takes 0 and 2.
    _, own = model.kneighbors()
    np.testing.assert_array_equal(own, [[2, 3], [0, 2], [0, 3], [0, 2], [1, 0]])
    # One neighbour: rows 0 and 2 come before row 3, which is crowded out of its own list
    # [0, 2]; scikit-learn's rule then drops the first, leaving 2.
    _, one = model.kneighbors(None, 1)
    np.testing.assert_array_equal(one, [[2], [0], [0], [2], [1]])


def test_nearest_neighbors_refuse_bad_input():
    from tessera.learn import NearestNeighbors

    with pytest.raises(ValueError, match="not fitted"):
        NearestNeighbors().kneighbors(QUERIES)
    with pytest.raises(ValueError, match="Euclidean"):
        NearestNeighbors(metric="manhattan").fit(POINTS)
    with pytest.raises(ValueError, match="Euclidean"):
        NearestNeighbors(p=1).fit(POINTS)
    with pytest.raises(ValueError, match="brute"):
        NearestNeighbors(algorithm="kd_tree").fit(POINTS)
    model = NearestNeighbors(n_neighbors=3).fit(POINTS[:5])
    with pytest.raises(ValueError, match="features"):
        model.kneighbors(QUERIES[:, :2])
    with pytest.raises(ValueError, match="between 1 and the 5"):
        model.kneighbors(QUERIES, 6)
    with pytest.raises(ValueError, match="below the 5"):
        model.kneighbors(None, 5)
    with pytest.raises(ValueError, match="positive integer"):
        model.kneighbors(QUERIES, 0)
    nan = POINTS[:5].copy()
    nan[1:, 0] = np.nan
    with pytest.raises(ValueError, match="finite distance"):
        NearestNeighbors(n_neighbors=2).fit(nan).kneighbors(QUERIES)
    # The model still answers after the refusals.
    np.testing.assert_array_equal(model.kneighbors(POINTS[:5], 1, return_distance=False)[:, 0], np.arange(5))
