"""A frame with several measures is refused where the model or the means would pool them
(irm.anova already did; irm.mixed fitted 4 x the rows and kendall_tau averaged the measures)."""

from __future__ import annotations

import pytest

import irmodels as irm


@pytest.fixture(scope="module")
def scores():
    col = irm.collection.generate(preset="tiny", seed=0)
    return irm.evaluate(col.runs, col.qrels, ["AP", "P@10"])


def test_mixed_refuses_pooled_measures(scores):
    with pytest.raises(irm.DesignError, match="hold 2 measures .* would be pooled"):
        irm.mixed("score ~ system + (1|topic)", scores)
    ap = scores[scores["measure"] == "AP"]
    assert irm.mixed("score ~ system + (1|topic)", ap).n_obs == len(ap)


def test_rankings_refuse_pooled_measures(scores):
    ap = scores[scores["measure"] == "AP"]
    for f in (irm.kendall_tau, irm.tau_ap):
        with pytest.raises(irm.DataFormatError, match="a holds 2 measures"):
            f(scores, ap)
        with pytest.raises(irm.DataFormatError, match="b holds 2 measures"):
            f(ap, scores)


def test_empty_frames_refused_in_words(scores):
    """A filter that matched nothing gave numpy's "zero-size array to reduction operation" (anova,
    pairwise, gstudy) or a bare StopIteration (compare on a categorical frame)."""
    empty = scores[(scores["measure"] == "AP") & (scores["system"] == "no-such-run")]
    assert len(empty) == 0
    for f in (lambda: irm.anova("MD1", empty), lambda: irm.pairwise(empty),
              lambda: irm.gstudy(empty), lambda: irm.compare(empty)):
        with pytest.raises(irm.DataFormatError, match="the data have no rows"):
            f()
