"""One vocabulary: every set of choices is declared once as a Literal type, its runtime tuple derived from it."""

import importlib
import inspect
import pkgutil
import typing

import pytest

import aihw

pytest.importorskip("torch")
pytest.importorskip("ipywidgets")


def _declared_literals():
    """(module, name, Literal) for every Literal type alias declared at the top level of an aihw module."""
    for info in pkgutil.walk_packages(aihw.__path__, prefix="aihw."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is the command line itself, not a declaration
        module = importlib.import_module(info.name)
        source = inspect.getsource(module)
        for name, value in vars(module).items():
            if typing.get_origin(value) is typing.Literal and f"\n{name} = Literal[" in source:
                yield module, name, value


DECLARED = list(_declared_literals())


def test_the_choices_are_declared_as_literals():
    names = {f"{m.__name__}.{n}" for m, n, _ in DECLARED}
    assert {"aihw.transformer.flops.Recompute", "aihw.memory.estimator.Mode", "aihw.memory.estimator.Optimizer", "aihw.memory.estimator.ZeroStage",
            "aihw.layout.schedules.Schedule", "aihw.runtime.device.Backend", "aihw.measure.roofline.Dtype",
            "aihw.parallel.zero.Method", "aihw.parallel.data_parallel.Mode", "aihw.formats.precision.Special"} <= names


@pytest.mark.parametrize("module, name, literal", DECLARED, ids=[f"{m.__name__}.{n}" for m, n, _ in DECLARED])
def test_runtime_tuple_is_get_args_of_the_literal(module, name, literal):
    choices = typing.get_args(literal)
    tuples = [t for t, v in vars(module).items() if isinstance(v, tuple) and v == choices]
    assert tuples, f"{module.__name__}.{name}: no module-level tuple equals get_args({name}) = {choices}"
