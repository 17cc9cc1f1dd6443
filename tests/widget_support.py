"""Shared helpers for the widget tests: walk a widget tree, find a control by its description."""


def walk(widget):
    """The widget and every widget below it, depth first."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def find(widget, description):
    """The first widget below ``widget`` (or itself) whose ``description`` is ``description``."""
    return next(w for w in walk(widget) if getattr(w, "description", None) == description)
