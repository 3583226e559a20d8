"""The pytrec_eval side of bench_scoring, run in a fresh child process (no Django: spawn imports this)."""

import resource
import time

# As the benchmark's brief names them (P and recall at trec_eval's default cutoffs) ...
SPECIFIED_MEASURES = ("ndcg_cut.3,5,10,100", "P", "recall", "recip_rank", "map")
# ... and cut where the stored scores are.
SAME_CUTOFFS = ("ndcg_cut.3,5,10,100", "P.3,5,10,100", "recall.3,5,10,100", "recip_rank", "map")


def _peak_kib() -> int:
    """This process's peak resident memory. VmHWM, not ru_maxrss, which Linux keeps across the exec
    that started this child and so may report the parent's peak."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def parse_and_evaluate(qrels_path: str, run_paths: list[str], measures: tuple[str, ...], result) -> None:
    """Parse the qrels and each run file with pytrec_eval and evaluate it (one run at a time, as
    trec_eval would); put (seconds, evaluated (run, query) pairs, peak RSS KiB) on `result`."""
    try:
        import pytrec_eval

        started = time.perf_counter()
        with open(qrels_path) as handle:
            qrels = pytrec_eval.parse_qrel(handle)
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures))
        evaluated = 0
        for path in run_paths:
            with open(path) as handle:
                run = pytrec_eval.parse_run(handle)
            evaluated += len(evaluator.evaluate(run))
        seconds = time.perf_counter() - started
        result.put((seconds, evaluated, _peak_kib()))
    except BaseException as exc:  # the parent waits on the queue: always answer
        result.put(exc)
        raise


# The trec_eval measures of bench_scoring's 14-measure set (scoring.measures names -> pytrec_eval), by
# the evaluator they need: relevance level 1, relevance level 2, and the qrels mapped by the gain map.
# ERR@20 and RBP have no trec_eval measure.
MEASURE_SET = (
    "nDCG@10", "nDCG@100", "nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10", "P@10", "P(rel=2)@5", "R@100", "RR",
    "AP", "AP@100", "Rprec", "Bpref", "infAP", "ERR@20", "RBP(p=0.8,rel=1)",
)  # fmt: skip
MEASURE_SET_TREC = {
    "rel1": (
        "ndcg_cut.10,100",
        "P.10",
        "recall.100",
        "recip_rank",
        "map",
        "map_cut.100",
        "Rprec",
        "bpref",
        "infAP",
    ),
    "rel2": ("P.5",),
    "gains": ("ndcg_cut.10",),
}
GAIN_MAP = {0: 0, 1: 1, 2: 3, 3: 7, 4: 15}


def evaluate_measure_set(qrels_path: str, run_paths: list[str], result) -> None:
    """pytrec_eval computing the trec_eval measures of MEASURE_SET: one evaluator per relevance level
    and one on the gain-mapped qrels (as ir_measures runs pytrec_eval), every run through all three;
    put (seconds, evaluated (run, query) pairs, peak RSS KiB) on `result`."""
    try:
        import pytrec_eval

        started = time.perf_counter()
        with open(qrels_path) as handle:
            qrels = pytrec_eval.parse_qrel(handle)
        mapped = {q: {d: GAIN_MAP.get(g, g) for d, g in docs.items()} for q, docs in qrels.items()}
        evaluators = [
            pytrec_eval.RelevanceEvaluator(qrels, set(MEASURE_SET_TREC["rel1"])),
            pytrec_eval.RelevanceEvaluator(qrels, set(MEASURE_SET_TREC["rel2"]), relevance_level=2),
            pytrec_eval.RelevanceEvaluator(mapped, set(MEASURE_SET_TREC["gains"])),
        ]
        evaluated = 0
        for path in run_paths:
            with open(path) as handle:
                run = pytrec_eval.parse_run(handle)
            for evaluator in evaluators:
                evaluated += len(evaluator.evaluate(run))
        seconds = time.perf_counter() - started
        result.put((seconds, evaluated // len(evaluators), _peak_kib()))
    except BaseException as exc:
        result.put(exc)
        raise
