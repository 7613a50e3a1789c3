"""Loading ahead of the model on a background thread: AsynchronousDataAccessor's loading
and DataLoader's Async / AsyncRebatched modes. A thread takes the batches of an iterator
(for Async, one whose worker processes load the samples) into a bounded queue, each made
a contiguous tensor in shared or host memory, which the model's call hands to the run as
its host arrays in place (plexus.Session.run passes contiguous arrays of the stream's
dtype without a copy): loading batch i + 1 overlaps run i, whose call releases the GIL.
An error of the source is raised by the iteration that reaches it; ending the iteration
(break, an exception, close(), garbage collection) stops the thread, and the thread then
shuts the source's worker processes down."""
import queue
import threading

import torch


class Failure:
    """An exception of the source, carried through the queue to the consumer."""

    def __init__(self, error):
        self.error = error


_DONE = object()


def get(batches, stop):
    """The next item, waiting while loading goes on; None once `stop` is set and none is left."""
    while True:
        try:
            return batches.get(timeout=0.1)
        except queue.Empty:
            if stop.is_set():
                return None


def put(batches, item, stop):
    """Puts `item`, waiting for room unless `stop` is set; False when stopped."""
    while not stop.is_set():
        try:
            batches.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def contiguous(batch):
    """`batch` (a tensor, or tuples, lists and dicts of them) with each tensor contiguous,
    so that the model's call passes its memory to the run without a copy."""
    if isinstance(batch, torch.Tensor):
        return batch.contiguous()
    if isinstance(batch, (tuple, list)):
        return type(batch)(contiguous(b) for b in batch)
    if isinstance(batch, dict):
        return {k: contiguous(v) for k, v in batch.items()}
    return batch


def _load(source, batches, stop, prepare, finish):
    """The loading thread: every batch of `source` through `prepare` into `batches`, then
    the end (or the source's error); `finish` (shutting workers down) runs at the end, on
    this thread, which alone touches the source."""
    try:
        for batch in source:
            if not put(batches, prepare(batch), stop):
                return
        put(batches, _DONE, stop)
    except Exception as error:  # handed to the consumer, raised there
        put(batches, Failure(error), stop)
    finally:
        finish()


class Prefetcher:
    """An iterator over `source`'s batches loaded up to `buffer_size` ahead on a thread
    (`name`), each passed through `prepare`; `finish()` runs on the thread once loading
    ends. `stop` (a threading.Event) ends it from outside too. close() (also at garbage
    collection and at the end) stops the thread and waits for it up to `join_timeout`
    seconds. Raises the source's error where the iteration reaches it, as `explain(error)`
    makes it (a new exception chained to it, or the error itself)."""

    def __init__(self, source, buffer_size, name, prepare=lambda b: b, finish=lambda: None, stop=None,
                 join_timeout=10.0, explain=lambda error: error):
        self._stop = stop or threading.Event()
        self._own_stop = threading.Event()
        self._batches = queue.Queue(buffer_size)
        self._join_timeout, self._explain = join_timeout, explain
        either = _Either(self._stop, self._own_stop)
        self._thread = threading.Thread(target=_load, args=(source, self._batches, either, prepare, finish),
                                        name=name, daemon=True)
        self._either = either
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        item = get(self._batches, self._either)
        if item is _DONE or item is None:
            self.close()
            raise StopIteration
        if isinstance(item, Failure):
            self.close()
            explained = self._explain(item.error)
            if explained is item.error:
                raise item.error
            raise explained from item.error
        return item

    def close(self):
        """Stops loading and waits for the thread (and so for the source's shutdown)."""
        self._own_stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(self._join_timeout)

    def __del__(self):
        if getattr(self, "_thread", None) is not None:
            self.close()


class _Either:
    """is_set() of either of two events (the accessor's terminate, the iterator's close)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def is_set(self):
        return self.a.is_set() or self.b.is_set()
