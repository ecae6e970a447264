"""Many raters, sparse answers (issue 25 part 5): Dawid-Skene, pairwise kappa and leave-one-out
alpha from a long table of (item, rater, label) give the figures of the dense computations, keep
the raters' names, and run at sizes where a raters x items array is out of the question."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judging.agreement import (
    Answers,
    alpha_with_reason,
    answers_from_matrix,
    cohen_kappa,
    encode_answer_frame,
    encode_answers,
    encode_ratings,
    leave_one_out_alpha,
    pairwise_kappa,
)
from judging.agreement import kappa as kappa_module
from judging.agreement import leave_one_out as loo_module
from judging.voting.dawid_skene import dawid_skene

LABELS = ["KEEP", "REJECT", "SPLIT", "MERGE"]


# ------------------------------------------------------------------ data


def _sparse_grid(seed: int, n_items: int, n_raters: int, n_labels: int, answered: float
                 ) -> list[list[object]]:
    """Items x raters labels with most cells missing, plus the awkward cases: a rater who
    answered once, a rater who never gave a valid answer, an item nobody rated validly, and
    two-rater items split down the middle (ties)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_labels, n_items)
    accuracy = rng.uniform(0.4, 0.95, n_raters)
    right = rng.random((n_items, n_raters)) < accuracy
    codes = np.where(right, truth[:, None], rng.integers(0, n_labels, (n_items, n_raters)))
    grid = np.array(LABELS[:n_labels], dtype=object)[codes]
    grid[rng.random(grid.shape) > answered] = None
    grid[:, 1] = None
    grid[3, 1] = LABELS[0]  # rater 1 answered once
    grid[:, 2] = None  # rater 2 never answered validly
    grid[5, :] = None  # nobody rated item 5 validly
    grid[6, :] = None
    grid[6, 0], grid[6, 3] = LABELS[0], LABELS[1]  # a tie
    return grid.tolist()


def _long_table(grid: list[list[object]], raters: list[object]) -> pd.DataFrame:
    """Every cell of the grid as an answer row (missing ones as None: a failed verdict)."""
    rows = [(f"item-{u}", raters[r], value) for u, row in enumerate(grid)
            for r, value in enumerate(row)]
    return pd.DataFrame(rows, columns=["item", "rater", "label"])


def _dense_dawid_skene_reference(codes: np.ndarray, k: int, max_iter: int = 200,
                                 tol: float = 1e-7, smoothing: float = 0.01
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The dense EM this project shipped before the answers' way (a raters x items x labels
    one-hot), kept here as the oracle: (priors, confusion, posteriors, iterations)."""
    n_items, n_critics = codes.shape
    valid = codes >= 0
    rated = valid.any(axis=1)
    onehot = np.zeros((n_critics, n_items, k))
    for r in range(n_critics):
        rows = np.flatnonzero(valid[:, r])
        onehot[r, rows, codes[rows, r]] = 1.0
    votes = onehot.sum(axis=0)
    m = votes.sum(axis=1, keepdims=True)
    post = np.where(m > 0, votes / np.where(m > 0, m, 1.0), 1.0 / k)
    fit_w = rated.astype(np.float64)
    total = fit_w.sum()
    log_lik = -np.inf
    for iterations in range(1, max_iter + 1):  # noqa: B007
        weighted = post * fit_w[:, None]
        priors = np.clip(weighted.sum(axis=0) / total, 1e-12, None)
        priors /= priors.sum()
        confusion = np.einsum("pk,rpl->rkl", weighted, onehot) + smoothing
        confusion /= confusion.sum(axis=2, keepdims=True)
        log_post = np.log(priors)[None, :] + np.einsum("rpl,rkl->pk", onehot, np.log(confusion))
        top = log_post.max(axis=1, keepdims=True)
        norm = (top + np.log(np.exp(log_post - top).sum(axis=1, keepdims=True)))[:, 0]
        post = np.exp(log_post - norm[:, None])
        new_log_lik = float((fit_w * norm).sum())
        if abs(new_log_lik - log_lik) / total < tol:
            break
        log_lik = new_log_lik
    post[~rated] = priors
    return priors, confusion, post, iterations


# ------------------------------------------------------------------ Dawid-Skene


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize(("n_raters", "n_labels"), [(6, 4), (45, 3)])
def test_dawid_skene_from_answers_equals_the_dense_em(seed, n_raters, n_labels):
    # 6 raters: items with the same answers are pooled; 45 raters: too many to pool, EM runs
    # over the answers themselves. Both give the dense one-hot EM's figures.
    grid = _sparse_grid(seed, 240, n_raters, n_labels, answered=0.35 if n_raters < 10 else 0.08)
    raters = [f"rater-{r}" for r in range(n_raters)]
    answers = encode_answer_frame(_long_table(grid, raters), order=LABELS[:n_labels])
    model = dawid_skene(answers)
    matrix = encode_ratings(grid, order=LABELS[:n_labels])
    priors, confusion, post, iterations = _dense_dawid_skene_reference(matrix.codes, n_labels)
    assert model.iterations == iterations
    np.testing.assert_allclose(model.priors, priors, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.confusion, confusion, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.posteriors, post, rtol=1e-9, atol=1e-12)
    # The matrix input goes the same way and gives the same model.
    from_matrix = dawid_skene(grid, labels=LABELS[:n_labels], critics=raters)
    np.testing.assert_allclose(from_matrix.posteriors, model.posteriors, rtol=1e-12, atol=1e-14)
    assert not model.rated[5] and model.consensus()[5] is None


def test_the_long_table_keeps_rater_names_and_item_ids():
    frame = pd.DataFrame({
        "task": ["q1", "q1", "q2", "q2", "q3", "q3", "q3", "q4"],
        "worker": [17, "ann", 17, "bob", "ann", "bob", 17, "bob"],
        "answer": ["yes", "yes", "no", "no", "yes", "no", "yes", None],
    })
    answers = encode_answer_frame(frame, item="task", rater="worker", label="answer")
    assert answers.raters == [17, "ann", "bob"] and answers.items == ["q1", "q2", "q3", "q4"]
    model = dawid_skene(answers)
    assert model.critics == [17, "ann", "bob"]
    assert set(model.accuracies) == {17, "ann", "bob"}
    posteriors = model.posterior_frame()
    assert list(posteriors.index) == ["q1", "q2", "q3", "q4"]
    assert list(posteriors.columns) == ["no", "yes"]
    np.testing.assert_array_equal(posteriors.loc["q3"].to_numpy(), model.posteriors[2])
    assert model.consensus()[3] is None  # q4's only answer failed
    assert pairwise_kappa(answers).critics == [17, "ann", "bob"]
    assert list(leave_one_out_alpha(answers)) == [17, "ann", "bob"]
    # Compound item ids stay whole.
    compound = encode_answers([("d1", 1), ("d1", 1), ("d1", 2)], ["x", "y", "x"], ["a", "b", "a"])
    assert compound.items == [("d1", 1), ("d1", 2)]


@pytest.mark.parametrize("smoothing", [0.0, -0.5, math.nan, math.inf])
def test_smoothing_that_is_not_positive_is_refused_with_a_sentence(smoothing):
    # With smoothing=0.0 EM used to return all-NaN posteriors without a word.
    with pytest.raises(ValueError, match="smoothing must be a positive number"):
        dawid_skene([["a", "b"], ["a", "a"], ["b", "b"]], smoothing=smoothing)


def test_other_em_settings_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="max_iter must be at least 1"):
        dawid_skene([["a", "b"], ["a", "a"]], max_iter=0)
    with pytest.raises(ValueError, match="tol must be a non-negative number"):
        dawid_skene([["a", "b"], ["a", "a"]], tol=-1.0)


def test_labels_or_critics_that_contradict_the_answers_are_refused():
    answers = encode_answers(["1", "1", "2"], ["x", "y", "x"], ["a", "b", "a"])
    with pytest.raises(ValueError, match="encoded with the labels"):
        dawid_skene(answers, labels=["b", "a"])
    with pytest.raises(ValueError, match="rename them in the long table"):
        pairwise_kappa(answers, critics=["p", "q"])


# ------------------------------------------------------------------ the long table itself


def test_bad_long_tables_name_the_problem():
    with pytest.raises(ValueError, match="rater 'ann' answered item 'q1' more than once"):
        encode_answers(["q1", "q2", "q1"], ["ann", "ann", "ann"], ["a", "b", "b"])
    with pytest.raises(ValueError, match="answer row 1 has no rater name"):
        encode_answers(["q1", "q2"], ["ann", None], ["a", "b"])
    with pytest.raises(ValueError, match="columns of one table"):
        encode_answers(["q1"], ["ann", "bob"], ["a", "b"])
    with pytest.raises(ValueError, match="no column 'rater'.*pass item=, rater=, label="):
        encode_answer_frame(pd.DataFrame({"item": [1], "worker": ["w"], "label": ["a"]}))


def test_answers_round_trip_through_the_matrix():
    grid = _sparse_grid(4, 50, 7, 3, answered=0.4)
    matrix = encode_ratings(grid, critics=[f"r{i}" for i in range(7)])
    answers = answers_from_matrix(matrix)
    assert isinstance(answers, Answers) and answers.n_answers == int((matrix.codes >= 0).sum())
    np.testing.assert_array_equal(answers.to_matrix().codes, matrix.codes)


# ------------------------------------------------------------------ pairwise kappa


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_pairwise_kappa_from_answers_equals_the_column_pairs(seed, weights):
    grid = _sparse_grid(seed, 300, 9, 4, answered=0.3)
    grid[0][4] = grid[1][4] = None  # rater 4 and rater 1 share no item
    raters = [f"r{i}" for i in range(9)]
    dense = pairwise_kappa(grid, weights=weights, labels=LABELS, critics=raters)
    answers = encode_answer_frame(_long_table(grid, raters), order=LABELS)
    sparse = pairwise_kappa(answers, weights=weights)
    assert sparse.critics == raters
    np.testing.assert_array_equal(sparse.n, dense.n)
    np.testing.assert_allclose(sparse.values, dense.values, rtol=1e-12, atol=1e-12)
    assert sparse.reasons == dense.reasons and len(sparse.reasons) == len(dense.reasons)
    assert sparse.reasons[(1, 2)] == "no item was rated by both critics"
    assert (0, 0) not in sparse.reasons


def test_a_table_with_many_critics_takes_the_answers_way_with_the_same_figures(monkeypatch):
    grid = _sparse_grid(5, 200, 40, 3, answered=0.1)
    names = [f"c{i}" for i in range(40)]
    fast = pairwise_kappa(grid, critics=names)
    monkeypatch.setattr(kappa_module, "_PANEL_CRITICS", 1000)  # force the column pairs
    slow = pairwise_kappa(grid, critics=names)
    assert kappa_module._answers_are_cheaper(encode_ratings(grid)) is False
    assert fast.critics == names
    np.testing.assert_allclose(fast.values, slow.values, rtol=1e-12, atol=1e-12)
    assert fast.reasons == slow.reasons


# ------------------------------------------------------------------ leave-one-out alpha


def _assert_same_alpha(a, b):
    assert (a.reason, a.n_units, a.n_pairable_units, a.n_pairable) == (
        b.reason, b.n_units, b.n_pairable_units, b.n_pairable)
    for field in ("value", "observed", "expected"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None)
        if x is not None:
            assert x == pytest.approx(y, rel=1e-11, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_leave_one_out_from_answers_equals_dropping_columns(seed, level):
    rng = np.random.default_rng(seed)
    grid = rng.integers(1, 6, (120, 8)).astype(object)
    grid[rng.random(grid.shape) < 0.6] = None
    grid[:, 2] = None
    grid[9, 2] = 4  # answered once
    grid[:, 5] = None  # never answered
    grid[11] = None
    raters = [f"r{i}" for i in range(8)]
    dense = leave_one_out_alpha(grid.tolist(), level, critics=raters)
    frame = _long_table(grid.tolist(), raters)
    sparse = leave_one_out_alpha(encode_answer_frame(frame, level=level))
    assert list(sparse) == raters
    for name in raters:
        _assert_same_alpha(sparse[name], dense[name])


def test_leave_one_out_undefined_cases_say_why_as_before():
    # Two raters: without either, nothing is pairable; one label only: no variation.
    for grid in ([["a", "b"], ["a", "a"]], [["a", "a", "a"], ["a", "a", None]]):
        names = [f"r{i}" for i in range(len(grid[0]))]
        dense = leave_one_out_alpha(grid, critics=names)
        sparse = leave_one_out_alpha(answers_from_matrix(encode_ratings(grid, critics=names)))
        for name in names:
            _assert_same_alpha(sparse[name], dense[name])
            assert sparse[name].value is None and sparse[name].reason


def test_many_critics_and_many_values_take_the_right_way(monkeypatch):
    grid = _sparse_grid(7, 150, 30, 4, answered=0.15)
    names = [f"c{i}" for i in range(30)]
    fast = leave_one_out_alpha(grid, critics=names)
    monkeypatch.setattr(loo_module, "_PANEL_CRITICS", 1000)
    slow = leave_one_out_alpha(grid, critics=names)
    for name in names:
        _assert_same_alpha(fast[name], slow[name])
    # More distinct values than the answers' way holds: dropping columns, same figures.
    rng = np.random.default_rng(1)
    values = rng.normal(size=(60, 5)).round(3).astype(object)
    values[rng.random(values.shape) < 0.3] = None
    answers = answers_from_matrix(encode_ratings(values.tolist(), "interval"))
    assert answers.n_values > loo_module._MAX_ANSWER_VALUES
    by_answers = leave_one_out_alpha(answers)
    by_columns = leave_one_out_alpha(values.tolist(), "interval")
    for name in by_columns:
        _assert_same_alpha(by_answers[name], by_columns[name])


# ------------------------------------------------------------------ scale


def test_five_thousand_items_two_thousand_raters_three_answers_each():
    # A raters x items x labels array here is 2,000 x 5,000 x 4 cells (320 MB of float64) and
    # pairwise kappa over columns is 2 million pairs x 5,000 items: not a unit test's work.
    rng = np.random.default_rng(11)
    n_items, n_raters, per_item, k = 5000, 2000, 3, 4
    truth = rng.integers(0, k, n_items)
    accuracy = rng.uniform(0.6, 0.95, n_raters)
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False)
                            for _ in range(n_items)])
    right = rng.random(len(item)) < accuracy[rater]
    said = np.where(right, truth[item], (truth[item] + rng.integers(1, k, len(item))) % k)
    answers = encode_answers(item, [f"w{r}" for r in rater], np.array(LABELS, dtype=object)[said],
                             order=LABELS)
    model = dawid_skene(answers)
    assert model.converged and model.posteriors.shape == (n_items, k)
    # At the fixed point each posterior is prior x the raters' confusion rows, normalised.
    log_conf = np.log(model.confusion)
    for u in (0, 1234, 4999):
        rows = np.flatnonzero(answers.item == u)
        log_p = np.log(model.priors) + log_conf[answers.rater[rows], :, answers.code[rows]].sum(0)
        p = np.exp(log_p - log_p.max())
        assert model.posteriors[u] == pytest.approx(p / p.sum(), abs=1e-4)
    # ... and each rater's confusion is its answers' posteriors, smoothed and normalised.
    for r in (0, 999, answers.n_raters - 1):
        rows = np.flatnonzero(answers.rater == r)
        counts = np.full((k, k), 0.01)
        for row in rows:
            counts[:, answers.code[row]] += model.posteriors[answers.item[row]]
        assert model.confusion[r] == pytest.approx(counts / counts.sum(1, keepdims=True),
                                                   abs=1e-4)

    kappa = pairwise_kappa(answers)
    i, j = np.argwhere(np.triu(kappa.n, 1) >= 2)[0]
    both = [u for u in range(n_items) if {i, j} <= set(answers.rater[answers.item == u])]
    a = [answers.code[(answers.item == u) & (answers.rater == i)][0] for u in both]
    b = [answers.code[(answers.item == u) & (answers.rater == j)][0] for u in both]
    assert kappa.n[i, j] == len(both)
    expected = cohen_kappa(a, b, labels=range(k))
    assert (np.isnan(kappa.values[i, j]) if expected is None
            else kappa.values[i, j] == pytest.approx(expected))

    loo = leave_one_out_alpha(answers)
    assert list(loo) == answers.raters
    # Alpha without a rater, from the items' answers packed three to a row.
    by_item = np.argsort(answers.item, kind="stable")
    packed = answers.code[by_item].reshape(n_items, per_item)
    packed_raters = answers.rater[by_item].reshape(n_items, per_item)
    for r in (0, 777, answers.n_raters - 1):
        without = np.where(packed_raters == r, np.nan, packed.astype(np.float64))
        _assert_same_alpha(loo[answers.raters[r]], _packed_alpha(without, k))


def _packed_alpha(without: np.ndarray, k: int):
    """Alpha of codes packed as items x 3 (NaN = missing), with every label declared."""
    grid = [[None if np.isnan(x) else int(x) for x in row] for row in without]
    return alpha_with_reason(grid, "nominal", order=list(range(k)))
