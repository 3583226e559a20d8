"""UDCG, "Utility and Distraction-aware Cumulative Gain": its definition, its grade mapping and the
authors' released computation. Pure Python and numpy, no Django; :mod:`scoring.metrics` computes udcg@k
for every ranking in its vectorised pass with :func:`weights` and :func:`from_sums`.

Source
------
Trappolini et al., "Redefining Retrieval Evaluation in the Era of LLMs"
(arXiv 2510.21440, EACL 2026) propose UDCG, "Utility and Distraction-aware
Cumulative Gain": relevant passages add utility, *distracting* ones (irrelevant
but answered from) take it away, with "an LLM-oriented positional discount".
Only the paper's abstract could be read here, not its text: the definition
below is the one the authors' released code computes (github.com/GiovanniTRA/
UDCG, commit daeee3b, ``src/compute_udcg_scores.py``), and its positional
discount is that code's: uniform, every position weighs 1/n. For one query with
passages p_1..p_n::

    UDCG = sigmoid( (1/n) * sum_i w_i * u_i ),   sigmoid(x) = 1 / (1 + e^-x)
    u_i  = 1 - P_LLM(no-response | q, p_i)       (how likely the LLM answers from p_i)
    w_i  = +1 if p_i is relevant, else -gamma    (gamma = 1/3; their stored data used 0.333)

with 0 for an empty list, and a passage without a utility counted in n but not
in the sum. :func:`udcg_of_passages` is exactly that computation, and
reproduces the numbers stored in their ``data/dataset_with_udcg.json``.

Our pools have grades, not an LLM's abstention probabilities, so udcg@k maps
each ranked document's combined grade g to (w, u):

* g >= 1 (relevant, as for P and recall): w = +1, u = 1;
* 0 <= g < 1 (not relevant): u = 0, it contributes 0 -- an irrelevant
  passage the LLM would not answer from;
* g < 0 (a distractor: the grade -1, or a negative combined grade): w = -1/3,
  u = 1 -- an irrelevant passage the LLM would answer from;
* unjudged: contributes 0 but counts in n.

udcg@k = sigmoid(sum over the first n_k = min(k, len) documents / n_k), 0 for
an empty ranking. It lies in [sigmoid(-1/3), sigmoid(1)] = [0.417, 0.731] for a
non-empty ranking: 0.5 means nothing useful and nothing harmful in the top k.
Unlike NDCG it needs no ideal ranking and it does not look at documents the
run did not retrieve: it scores the context handed to a reader, not recall.

Distractors, the combined grade and the other metrics
----------------------------------------------------
A pool may enable the distractor grade, -1 ("looks relevant but misleads"). The pool's combine rule
works on the ordinal scale -1..4 (the mean of -1 and 2 is 0.5, the minimum of -1 and 4 is -1), and a
pair whose combined grade is below 0 is a distractor here. For NDCG, P, recall, MRR and AP a negative
grade is what trec_eval makes of a negative qrels grade: unjudged (no gain, not relevant, dropped from
the condensed list of the "judged" flavour); exported qrels carry it as -1, so trec_eval on the export
reproduces the stored numbers. judged@k counts a distractor as judged (a rater graded it).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["UDCG_GAMMA", "from_sums", "udcg_of_passages", "weights"]

# Weight of a distracting passage: the default of the authors' released code (-1/3; their stored
# outputs were computed with -0.333).
UDCG_GAMMA: float = 1 / 3


def weights(grades: np.ndarray, negative: np.ndarray | None, relevant_from: float = 1.0) -> np.ndarray:
    """Each ranked document's term w * u of the sum (see "Source"): +1 for grade >= relevant_from (1,
    as for P and recall), -UDCG_GAMMA for a distractor (`negative`: a negative combined grade; None
    when there is none), else 0. grades: (n, width), 0 where unjudged or negative."""
    utility = (grades >= relevant_from).astype(np.float64)
    if negative is not None:
        utility -= UDCG_GAMMA * negative
    return utility


def from_sums(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """udcg@k from the summed weights of the first n_k documents and n_k (both (n, n_cutoffs)): the
    sigmoid of the mean, 0 where n_k = 0 (an empty ranking)."""
    mean = np.divide(sums, counts, out=np.zeros(np.shape(sums)), where=counts > 0)
    return np.where(counts > 0, 1.0 / (1.0 + np.exp(-mean)), 0.0)


def udcg_of_passages(relevant, utility, gamma: float = UDCG_GAMMA) -> float:
    """UDCG of one list of passages exactly as the authors' released code computes it (see "Source" in
    the module docstring): sigmoid of the mean of +u (relevant) and -gamma * u (irrelevant) over the n
    passages; a passage whose utility is None is left out of the sum but counted in n; 0 for no
    passage. relevant: booleans; utility: u = 1 - P_LLM(no-response | q, p) per passage, or None.

    Plain Python, summed in order like the released code, so their stored values come out exactly.
    udcg@k of a ranking is this function on the ranking's first min(k, len) documents with
    (relevant, u) = (True, 1) for grade >= 1, (False, 0) for grades in [0, 1), (False, 1) for
    distractors (negative grades) and None for unjudged documents."""
    relevant, utility = list(relevant), list(utility)
    if len(relevant) != len(utility):
        raise ValueError(f"{len(relevant)} relevance labels for {len(utility)} utilities")
    if not relevant:
        return 0.0
    total = 0.0
    for is_relevant, u in zip(relevant, utility, strict=True):
        if u is not None:
            total += u * (1.0 if is_relevant else -gamma)
    return 1.0 / (1.0 + math.exp(-total / len(relevant)))
