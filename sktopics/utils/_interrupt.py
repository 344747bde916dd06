"""Ctrl-C during a fit: stop at the next safe point, keep the work done, then stop.

A fitting loop that checks :attr:`StopRequest.requested` between its steps (sweeps,
epochs) can end on a consistent state when the user presses Ctrl-C: the first
SIGINT inside :func:`deferred_interrupt` only records the request, the loop ends
after its current step, the estimator keeps the model of the steps done, and the
caller then raises :class:`KeyboardInterrupt` so that the loops around ``fit``
(a grid search, a stream of shards) stop too. A second Ctrl-C raises at once.
"""

import contextlib
import signal
import sys
import threading

__all__ = ["StopRequest", "deferred_interrupt", "stop_now"]


class StopRequest:
    """Whether the user asked the running fit to stop (``requested``), and how many
    times they pressed Ctrl-C (``presses``: a second press stops at once)."""

    def __init__(self):
        self.requested = False
        self.presses = 0


def stop_now(stop, collective=None):
    """Whether a fitting loop ends after its current step.

    In a data-parallel fit (``collective`` set) the ranks agree: a Ctrl-C on any rank
    stops every rank after the same step, and each records the request, so that every
    rank raises :class:`KeyboardInterrupt` once its model is kept. Every rank must
    call this at the same point of every step.
    """
    requested = stop is not None and stop.requested
    if collective is not None:
        requested = bool(collective.sum(int(requested)))
        if requested and stop is not None:
            stop.requested = True
    return requested


@contextlib.contextmanager
def deferred_interrupt(owner, step):
    """Defer the first Ctrl-C of the block to the fitting loop's next check.

    Only in the main thread and while SIGINT has a Python handler (the default, or
    IPython's): elsewhere the block runs unchanged, and a KeyboardInterrupt
    arrives wherever it arrives. The previous handler is restored on exit.

    Parameters
    ----------
    owner : str
        Who is fitting, for the message printed on the first Ctrl-C.
    step : str
        What the loop finishes before it stops ("sweep", "epoch").

    Yields
    ------
    request : StopRequest
    """
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN or SIG_DFL: the user's choice stands
        yield request
        return

    def handler(signum, frame):
        request.presses += 1
        if request.requested:
            signal.signal(signal.SIGINT, previous)
            previous(signum, frame)
            return
        request.requested = True
        print(f"{owner}: interrupted; stopping after the current {step} "
              "(press Ctrl-C again to stop at once).", file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, handler)
    try:
        yield request
    finally:
        signal.signal(signal.SIGINT, previous)
