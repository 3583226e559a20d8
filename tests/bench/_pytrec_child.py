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
