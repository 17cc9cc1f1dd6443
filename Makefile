# Two commands a newcomer needs (see README.md):
#   make book   set everything up, then build the executed HTML book
#   make test   set everything up, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH_CPU := torch==2.13.0

.PHONY: setup book test test-unit test-labs test-book lint labs bench clean browser-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch: keep whatever is installed (a GPU runtime's build); install the pinned CPU build only if none.
setup: $(BIN)/python
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH_CPU)
	$(BIN)/python -m pip install -q -r requirements.txt
	@$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@echo "setup done: $$($(BIN)/python -c 'import torch, aihw; print("aihw", aihw.__version__, "| torch", torch.__version__)')"

book: setup
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "The executed book is at: file://$(CURDIR)/_build/html/index.html"

# Headless Chromium for the browser tests (Debian's package; Playwright drives it, downloads nothing).
browser-deps:
	@bash scripts/install_browser.sh

test-book: setup
	$(BIN)/jupyter-book build . -W -n --keep-going

test-unit: setup browser-deps
	$(BIN)/python -m pytest tests -q

test-labs: setup
	$(BIN)/python -m pytest --nbval-lax --nbval-cell-timeout=300 labs -q -p no:cacheprovider

# ruff; the layer contract (import-linter, [tool.importlinter] in pyproject.toml); types (mypy, [tool.mypy]);
# labs' .ipynb in step with their text sources.
lint: setup
	$(BIN)/ruff check src tests bench labs scripts
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python scripts/labs.py check

# Rewrite every labs/*.ipynb from its text source labs/*.py (jupytext py:percent), outputs stripped.
labs: setup
	$(BIN)/python scripts/labs.py sync

test: setup browser-deps lint test-book test-unit test-labs
	@echo "all test stages passed"

# Speed and fidelity tables. bench_build_and_ci.py (fresh-clone set-up, book and CI times) is slow: run it alone.
bench: setup
	@for f in bench/bench_*.py; do case $$f in *build_and_ci*) continue;; esac; \
	  echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf _build .pytest_cache .hypothesis
