"""Widgets layer of aihw (top of the stack; imports the layers below, never the other way)."""
