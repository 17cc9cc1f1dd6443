"""Planning a real training run: the layout search and step-time model (:mod:`~aihw.planning.planner`) and the
published runs it is checked against (:mod:`~aihw.planning.published`)."""
