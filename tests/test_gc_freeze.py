"""config.gc_freeze: a web worker's long-lived objects leave the collector's generations twice, once
loaded and once its first requests have loaded the rest."""

import gc
import weakref

import pytest
from django.core.signals import request_finished

from config import gc_freeze


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process's objects back in the collector's care


def test_objects_are_frozen_when_installed_and_once_more_after_the_first_requests(unfrozen, monkeypatch):
    calls = []
    monkeypatch.setattr(gc_freeze, "freeze", lambda: (calls.append(1), gc.collect(), gc.freeze()))
    gc_freeze.install(after=3)
    frozen = gc.get_freeze_count()
    assert frozen > 10_000 and len(calls) == 1  # this process's modules, Django included

    late = [[i] for i in range(5_000)]  # what the first requests load (compiled templates, imports)
    for _ in range(2):
        request_finished.send(sender=None)
    assert gc.get_freeze_count() < frozen + len(late) and len(calls) == 1  # not yet
    request_finished.send(sender=None)
    assert gc.get_freeze_count() >= frozen + len(late) and len(calls) == 2
    for _ in range(5):
        request_finished.send(sender=None)
    assert len(calls) == 2  # once only


def test_garbage_is_collected_before_it_is_frozen(unfrozen):
    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    alive = weakref.ref(a)
    del a, b
    gc_freeze.freeze()
    assert alive() is None
