"""Progress lines for long evaluations (``verbose``)."""

import time

__all__ = ["Progress"]


def _clock(seconds):
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """Work done, documents done, rate and time left, printed every few seconds.

    A context manager: leaving the block without an error prints the last line.

    Parameters
    ----------
    label : str
        Who is working (the public function's name).
    n_documents : int
    total : float
        Total work, in token-updates (the unit of ``n_token_updates``).
    verbose : int
        0: silent; 1: a line at most every 10 s and a last line; 2 and more: at most
        every second.
    """

    def __init__(self, label, n_documents, total, verbose):
        self.label, self.n_documents, self.total = label, n_documents, max(float(total), 1.0)
        self.verbose = int(verbose)
        self.interval = 10.0 if self.verbose == 1 else 1.0
        self.done = 0.0
        self.documents = 0
        self.start = self._last = time.perf_counter()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:  # an interrupted run does not claim to be done
            self.close()

    def advance(self, work):
        """Record ``work`` token-updates done; print when a line is due."""
        if not self.verbose:
            return
        self.done = min(self.done + float(work), self.total)
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self._print(now)

    def finish_documents(self, n):
        """Record that ``n`` more documents are complete."""
        self.documents += int(n)

    def close(self):
        """Print the last line (with ``verbose``)."""
        if self.verbose:
            self.done = self.total
            self._print(time.perf_counter(), last=True)

    def _print(self, now, last=False):
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        tail = "done" if last else (f"ETA {_clock(left)}" if left == left else "ETA ?")
        print(f"[{self.label}] {100 * self.done / self.total:3.0f}% | "
              f"{self.documents:,}/{self.n_documents:,} documents | "
              f"{rate / 1e6:.2f} M token-updates/s | {_clock(elapsed)} elapsed | {tail}",
              flush=True)
