"""Many pairs through one judge: bounded concurrency, a budget, cancel, a callback per pair. No Django.

:func:`judge_pairs` sends each :class:`Job` (a key the caller chooses, e.g. a pair id, and its chat
messages) to the judge, at most ``concurrency`` at a time, and hands every answer to ``on_result`` as
an :class:`Outcome` the moment it arrives: ``graded`` (a grade and the judge's reason), ``cant_judge``
(the model answered without a usable grade: the raw answer is the reason) or ``failed`` (the server
gave no answer; nothing to store, the pair is simply judged again next run). Storing each outcome as
it arrives is what makes a killed run resumable.

Stopping: when the budget is reached or ``cancel`` is set, no new call starts; calls in flight finish
and their outcomes are delivered; pairs caught between retries are counted ``unfinished``. A fatal
error (bad key, unknown model, server unreachable) or ``max_consecutive_failures`` failures in a row
stop the run the same way. The returned :class:`Summary` says which (``stopped``, ``message``).

Threads, not asyncio: the HTTP calls run on a small thread pool (I/O-bound, so the GIL is no
obstacle at the few dozen parallel calls an LLM server takes), while jobs are pulled, answers parsed
and ``on_result``/``on_progress`` called *in the caller's thread*, one at a time. So the caller
stores grades with its own database connection and transaction, from a management command or a
background-task worker alike, with no event loop and no ``sync_to_async``. Jobs are pulled lazily
(only ``concurrency`` ahead), so ``jobs`` may be a generator over a large queryset.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from .answers import Verdict, clip, parse_answer
from .client import Budget, CallFailed, ChatClient, Stopped, Usage

GRADED, CANT_JUDGE, FAILED = "graded", "cant_judge", "failed"
MAX_CONSECUTIVE_FAILURES = 5
_END = object()


@dataclass(frozen=True)
class Job:
    key: Hashable
    messages: list[dict]


@dataclass(frozen=True)
class Outcome:
    """What became of one pair. ``reason``: the judge's reason, or its raw answer when it can't judge."""

    key: Hashable
    status: str  # GRADED, CANT_JUDGE or FAILED
    grade: int | None = None
    reason: str = ""
    problem: str = ""  # why can't judge / why it failed
    usage: Usage = field(default_factory=Usage)
    usage_reported: bool = False
    calls: int = 0
    finish_reason: str = ""


@dataclass
class Summary:
    total: int | None = None  # jobs, when known
    graded: int = 0
    cant_judge: int = 0
    failed: int = 0
    unfinished: int = 0  # started, then stopped (budget, cancel) before an answer
    calls: int = 0  # HTTP requests, retries included (the budget's count)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    calls_without_usage: int = 0  # answers that reported no token usage (counted as 0)
    stopped: str = ""  # "" (all jobs done), "budget", "cancelled" or "failed"
    message: str = ""
    seconds: float = 0.0

    @property
    def done(self) -> int:
        """Pairs with an outcome delivered."""
        return self.graded + self.cant_judge + self.failed


class _Either:
    """Set when the caller's cancel event or the runner's own halt is set (what the client waits on)."""

    def __init__(self, halt: threading.Event, cancel: threading.Event | None):
        self.halt, self.cancel = halt, cancel

    def is_set(self) -> bool:
        return self.halt.is_set() or (self.cancel is not None and self.cancel.is_set())

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.halt.wait(min(left, 0.05))
        return True


def _outcome(key: Hashable, reply, verdict: Verdict) -> Outcome:
    return Outcome(
        key=key,
        status=GRADED if verdict.judged else CANT_JUDGE,
        grade=verdict.grade,
        reason=verdict.reason,
        problem=verdict.problem,
        usage=reply.usage,
        usage_reported=reply.usage_reported,
        calls=reply.calls,
        finish_reason=reply.finish_reason,
    )


def _stop_message(budget: Budget) -> str:
    if budget.reached == "calls":
        return f"Stopped at the budget: {budget.calls} of {budget.max_calls} calls."
    return f"Stopped at the budget: {budget.tokens} tokens used of {budget.max_tokens}."


def judge_pairs(
    client: ChatClient,
    jobs: Iterable[Job],
    *,
    parse: Callable[[str], Verdict] = parse_answer,
    concurrency: int = 4,
    budget: Budget | None = None,
    cancel: threading.Event | None = None,
    on_result: Callable[[Outcome], None] | None = None,
    on_progress: Callable[[Summary], None] | None = None,
    total: int | None = None,
    max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
) -> Summary:
    """Judge every job (until stopped); ``parse`` turns an answer into a Verdict (e.g. ``parse_answer``
    with the pool's allowed grades). If ``on_result`` raises, no new call starts and the error is
    re-raised once the calls in flight end (their outcomes are dropped)."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    budget = budget if budget is not None else Budget()
    if total is None and hasattr(jobs, "__len__"):
        total = len(jobs)
    summary = Summary(total=total)
    halt = threading.Event()
    signal = _Either(halt, cancel)
    started = time.monotonic()
    pending: dict[Future, Job] = {}
    source, exhausted, failures_in_a_row = iter(jobs), False, 0

    def sync() -> None:
        summary.calls, summary.tokens = budget.calls, budget.tokens
        summary.prompt_tokens, summary.completion_tokens = budget.prompt_tokens, budget.completion_tokens
        summary.calls_without_usage = budget.calls_without_usage
        summary.seconds = round(time.monotonic() - started, 3)

    def stop(reason: str, message: str) -> None:
        if not summary.stopped:
            summary.stopped, summary.message = reason, message

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge") as pool:
        try:
            while True:
                while not summary.stopped and not exhausted and len(pending) < concurrency:
                    if cancel is not None and cancel.is_set():
                        stop("cancelled", "Cancelled.")
                    elif budget.reached:
                        stop("budget", _stop_message(budget))
                    elif (job := next(source, _END)) is _END:
                        exhausted = True
                    else:
                        future = pool.submit(client.complete, job.messages, budget=budget, cancel=signal)
                        pending[future] = job
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    try:
                        reply = future.result()
                    except Stopped as stopped:
                        summary.unfinished += 1
                        if stopped.reason == "budget":
                            stop("budget", _stop_message(budget))
                        else:
                            stop("cancelled", "Cancelled.")
                        continue
                    except CallFailed as error:
                        outcome = Outcome(job.key, FAILED, problem=str(error), calls=0)
                        failures_in_a_row += 1
                        if error.fatal:
                            stop("failed", f"Stopped: {error}")
                        elif failures_in_a_row >= max_consecutive_failures:
                            stop(
                                "failed",
                                f"Stopped after {failures_in_a_row} failures in a row; last: {error}",
                            )
                    else:
                        outcome = _outcome(job.key, reply, parse(reply.content))
                        failures_in_a_row = 0
                    if on_result is not None:
                        on_result(outcome)
                    if outcome.status == GRADED:
                        summary.graded += 1
                    elif outcome.status == CANT_JUDGE:
                        summary.cant_judge += 1
                    else:
                        summary.failed += 1
                    if on_progress is not None:
                        sync()
                        on_progress(dataclasses.replace(summary))
        except BaseException:
            halt.set()  # calls waiting to retry give up; calls in flight end within their timeout
            for future in pending:
                future.cancel()
            raise
    sync()
    return summary


def describe(summary: Summary) -> str:
    """One line for a command or a page: what the run did and why it stopped."""
    parts = [
        f"{summary.graded} graded",
        f"{summary.cant_judge} can't judge",
        f"{summary.failed} failed",
        f"{summary.calls} calls",
        f"{summary.tokens} tokens",
    ]
    if summary.unfinished:
        parts.append(f"{summary.unfinished} unfinished")
    if summary.calls_without_usage:
        parts.append(f"{summary.calls_without_usage} answers without token counts")
    line = ", ".join(parts) + f" in {summary.seconds:.1f} s."
    return f"{line} {clip(summary.message, 300)}" if summary.message else line
