"""poptorch.DataLoader's Async and AsyncRebatched modes against Sync: the same batches in
the same order for one seeded sampler, the same trained weights bit for bit, batches
loaded ahead of the consumer by worker processes, a worker's dataset error raised naming
the dataset, and the workers and loading thread gone when the loop is left mid-epoch with
the model destroyed (the interpreter carries on)."""
import copy
import gc
import multiprocessing
import threading
import time

import pytest
import torch

poptorch = pytest.importorskip("poptorch")

Mode = poptorch.DataLoaderMode


class Samples(torch.utils.data.Dataset):
    """n samples (x [4] float32, label int64 in [0, 3)) computed from the index; counts the
    samples read in `loaded` (shared with worker processes) when given."""

    def __init__(self, n, loaded=None):
        self.n, self.loaded = n, loaded

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.loaded is not None:
            with self.loaded.get_lock():
                self.loaded.value += 1
        g = torch.Generator().manual_seed(i)
        return torch.randn(4, generator=g), i % 3


class Broken(Samples):
    def __getitem__(self, i):
        if i == 13:
            raise ValueError("sample 13 is corrupt")
        return super().__getitem__(i)


class Classify(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, labels):
        y = self.fc(x)
        return y, torch.nn.functional.cross_entropy(y, labels)


def _options():
    return poptorch.Options().deviceIterations(2).Training.gradientAccumulation(2)


def _loader(mode, dataset, seed=7, **kwargs):
    """A shuffled loader of micro-batches of 3 (combined 12) with a seeded generator."""
    extra = dict(rebatched_worker_size=5) if mode == Mode.AsyncRebatched else {}
    return poptorch.DataLoader(_options(), dataset, batch_size=3, shuffle=True, mode=mode,
                               generator=torch.Generator().manual_seed(seed), **extra, **kwargs)


def _idle(timeout=10.0):
    """True once no worker process and no poptorch loading thread is left (within timeout s)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        gc.collect()
        threads = [t for t in threading.enumerate() if t.name.startswith("poptorch-")]
        if not multiprocessing.active_children() and not threads:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("mode", [Mode.Async, Mode.AsyncRebatched])
@pytest.mark.parametrize("drop_last", [True, False])
def test_async_batches_equal_sync(mode, drop_last):
    """50 samples: the combined batches of 12 (and with drop_last False the last 2), their
    order, values and dtypes are Sync's, two epochs running."""
    sync, other = _loader(Mode.Sync, Samples(50), drop_last=drop_last), _loader(mode, Samples(50),
                                                                                drop_last=drop_last)
    assert len(other) == len(sync) == (4 if drop_last else 5)
    for _ in range(2):
        a, b = list(sync), list(other)
        assert [len(x[1]) for x in b] == [len(x[1]) for x in a] == [12] * 4 + ([] if drop_last else [2])
        for (xa, la), (xb, lb) in zip(a, b):
            assert xa.dtype == xb.dtype and la.dtype == lb.dtype
            assert torch.equal(xa, xb) and torch.equal(la, lb)
    del other
    assert _idle()


@pytest.mark.parametrize("mode", [Mode.Async, Mode.AsyncRebatched])
def test_async_trains_to_syncs_weights_bit_for_bit(mode):
    """Two epochs of SGD on the Async loader's batches give Sync's weights exactly."""
    torch.manual_seed(0)
    base = Classify()
    weights = {}
    for m in (Mode.Sync, mode):
        model = copy.deepcopy(base)
        trained = poptorch.trainingModel(model, _options(), poptorch.optim.SGD(model.parameters(), lr=0.1))
        loader = _loader(m, Samples(60))
        for _ in range(2):
            for x, labels in loader:
                trained(x, labels)
        weights[m] = {k: v.clone() for k, v in trained.state_dict().items()}
        trained.detachFromDevice()
    assert weights[mode]["fc.weight"].abs().sum() > 0
    for k in weights[Mode.Sync]:
        assert torch.equal(weights[Mode.Sync][k], weights[mode][k]), k
    assert not torch.equal(weights[Mode.Sync]["fc.weight"], base.fc.weight.detach())  # it trained


def test_async_loads_ahead_in_worker_processes():
    """After the first batch is taken, the workers go on loading: at least two more
    combined batches (buffer_size 3) are read without the loop asking; Sync with no
    workers reads none ahead."""
    for mode, ahead in ((Mode.Sync, 0), (Mode.Async, 2)):
        loaded = multiprocessing.Value("i", 0)
        batches = iter(_loader(mode, Samples(120, loaded), async_options={"buffer_size": 3}))
        next(batches)
        end = time.monotonic() + 10.0
        while loaded.value < 12 * (1 + ahead) and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.2)
        assert loaded.value >= 12 * (1 + ahead) if ahead else loaded.value == 12, (mode, loaded.value)
        del batches
    assert _idle()


@pytest.mark.parametrize("mode", [Mode.Async, Mode.AsyncRebatched])
def test_worker_error_names_the_dataset(mode):
    """A dataset raising in a worker: the loop raises its ValueError naming the dataset
    and the error, and the workers are gone."""
    with pytest.raises(ValueError, match=r"(?s)the dataset Broken raised ValueError.*sample 13 is corrupt"):
        for _ in _loader(mode, Broken(40), num_workers=2):
            pass
    assert _idle()


def test_model_destroyed_mid_epoch_stops_the_loader():
    """Leaving the loop after 2 of 8 batches with the model detached and deleted: no
    worker process or loading thread is left, and a new model and loader run."""
    model = Classify()
    trained = poptorch.trainingModel(model, _options(), poptorch.optim.SGD(model.parameters(), lr=0.1))
    for i, (x, labels) in enumerate(_loader(Mode.Async, Samples(96), num_workers=2)):
        trained(x, labels)
        if i == 1:
            trained.detachFromDevice()
            del trained
            break
    assert _idle()
    again = poptorch.trainingModel(model, _options(), poptorch.optim.SGD(model.parameters(), lr=0.1))
    x, labels = next(iter(_loader(Mode.Async, Samples(24))))
    _, loss = again(x, labels)
    assert torch.isfinite(loss).all()
    again.detachFromDevice()
    assert _idle()


def test_bad_async_options():
    with pytest.raises(ValueError, match="buffer_size"):
        _loader(Mode.Async, Samples(24), async_options={"buffer_size": 0})
    with pytest.raises(ValueError, match="rebatched_worker_size"):
        poptorch.DataLoader(_options(), Samples(24), batch_size=3, mode=Mode.AsyncRebatched,
                            rebatched_worker_size=13)


@pytest.mark.parametrize("mode", [Mode.Sync, Mode.Async])
def test_workers_are_at_most_the_cores(mode, monkeypatch, capsys):
    """16 workers asked on a process that may use 2 cores start 2 and say so once; the
    batches are those of 16 workers; PLEXUS_LOADER_MAX_WORKERS sets the limit (0: none)."""
    monkeypatch.setattr(poptorch.data.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(poptorch.data, "_told_workers", set())
    capped = _loader(mode, Samples(48), num_workers=16)
    assert capped.num_workers == 2
    assert capsys.readouterr().err.count("2 worker processes for the 16 asked") == 1
    _loader(mode, Samples(48), num_workers=16)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("PLEXUS_LOADER_MAX_WORKERS", "0")
    every = _loader(mode, Samples(48), num_workers=16)
    assert every.num_workers == 16
    for (x, y), (x16, y16) in zip(capped, every, strict=True):
        assert torch.equal(x, x16) and torch.equal(y, y16)
    monkeypatch.setenv("PLEXUS_LOADER_MAX_WORKERS", "3")
    assert _loader(mode, Samples(48), num_workers=16).num_workers == 3
    assert _loader(mode, Samples(48), num_workers=1).num_workers == 1


def test_bad_worker_limit(monkeypatch):
    monkeypatch.setenv("PLEXUS_LOADER_MAX_WORKERS", "-1")
    with pytest.raises(ValueError, match="PLEXUS_LOADER_MAX_WORKERS must be an integer >= 0.*'-1'"):
        _loader(Mode.Async, Samples(24), num_workers=4)
