"""The worker thread behind Graph.submit: runs posted jobs in order and delivers each result to
its callback on that thread. Closing it (``scellis.shutdown()``, also at interpreter exit) drops
every job not yet delivered: no callback is ever called after its worker closed."""

import atexit
import concurrent.futures
import queue
import threading

from .errors import ScellisError, SessionStateError


class Worker:
    def __init__(self):
        self._jobs = queue.Queue()
        self._lock = threading.RLock()  # held while delivering, so close() waits for a callback
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="scellis-worker", daemon=True)
        self._thread.start()

    @property
    def closed(self):
        return self._closed

    def post(self, job, callback, on_error=None):
        with self._lock:
            if self._closed:
                raise SessionStateError("worker-closed", "the worker is closed; nothing is run")
            future = concurrent.futures.Future()
            self._jobs.put((job, callback, on_error, future))
            return future

    def _loop(self):
        while True:
            item = self._jobs.get()
            if item is None:
                return
            job, callback, on_error, future = item
            if not future.set_running_or_notify_cancel():
                continue
            if self._closed:
                future.set_exception(SessionStateError(
                    "worker-closed", "the worker closed before the job ran"))
                continue
            try:
                result, error = job(), None
            except ScellisError as e:
                result, error = None, e
            with self._lock:
                if self._closed:
                    future.set_exception(SessionStateError(
                        "worker-closed", "the worker closed before the result was delivered"))
                    continue
                try:
                    if error is None:
                        callback(result)
                        future.set_result(result)
                    elif on_error is not None:
                        on_error(error)
                        future.set_exception(error)
                    else:
                        future.set_exception(error)
                except BaseException as e:  # a failing callback fails its future, not the worker
                    if not future.done():
                        future.set_exception(e)

    def close(self, wait=True):
        """Stops delivering: jobs not yet delivered are dropped (their futures cancelled)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()


_default = None
_default_lock = threading.Lock()


def default():
    """The package's worker, started on first use (again after shutdown)."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Worker()
        return _default


def shutdown(wait=True):
    """Closes the package's worker: no callback of a job submitted before is called after this
    returns."""
    with _default_lock:
        w = _default
    if w is not None:
        w.close(wait=wait)


atexit.register(shutdown, False)
