# Two commands a newcomer needs (see README.md):
#   make book   set everything up, then build the executed HTML book
#   make test   set everything up, then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH_CPU := torch==2.13.0

.PHONY: setup book test test-gpu test-unit test-labs test-book lint labs bench clean browser-deps release

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch: keep whatever is installed (a GPU runtime's build); install the pinned CPU build only if none.
setup: $(BIN)/python
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH_CPU)
	$(BIN)/python -m pip install -q -r requirements.txt
	@$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@# ipywidgets 7.7.1 (Colab's) for the widget compatibility test; never installed, only put on a test's path
	@test -f .cache/compat/ipywidgets-7.7.1-py2.py3-none-any.whl || $(BIN)/python -m pip download -q --no-deps \
	  -d .cache/compat ipywidgets==7.7.1 ipython_genutils==0.2.0
	@$(BIN)/python scripts/live_assets.py fetch  # Pyodide core for the live calculators (needs npm; optional off CI)
	@echo "setup done: $$($(BIN)/python -c 'import torch, aihw; print("aihw", aihw.__version__, "| torch", torch.__version__)')"

# Pages run two at a time into the execution cache first (scripts/execute_pages.py); the build then renders.
book: setup
	$(BIN)/python scripts/execute_pages.py
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "The executed book is at: file://$(CURDIR)/_build/html/index.html"

# Headless Chromium for the browser tests (Debian's package; Playwright drives it, downloads nothing).
browser-deps:
	@bash scripts/install_browser.sh

# The test build executes every page every time: it starts from an empty execution cache (the cache is keyed on
# the page, not on the package a page imports) and builds with --all (Sphinx would otherwise skip a page whose
# source did not change). Within `make test` the labs' pages come from the nbval run just before (KEEP_LABS=1):
# each lab runs once, under nbval, and the build renders that run.
test-book: setup
	$(if $(KEEP_LABS),,rm -rf _build/.jupyter_cache)
	$(BIN)/python scripts/execute_pages.py
	$(BIN)/jupyter-book build . -W -n --keep-going --all

test-unit: setup browser-deps
	$(BIN)/python -m pytest tests -q -p no:cacheprovider

# nbval runs every lab; scripts/nbval_cache.py keeps each fully passed run as the book's executed page.
test-labs: setup
	rm -rf _build/.jupyter_cache
	$(BIN)/python -m pytest --nbval-lax --nbval-cell-timeout=300 labs -q -p no:cacheprovider \
	  -p scripts.nbval_cache --nbval-cache _build/.jupyter_cache

# ruff; the layer contract (import-linter, [tool.importlinter] in pyproject.toml); types (mypy, [tool.mypy]);
# labs' .ipynb in step with their text sources.
lint: setup
	$(BIN)/ruff check src tests bench labs scripts
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python scripts/labs.py check
	@# the publishing workflow, where actionlint is installed (it is not a Python package: see the README)
	@if command -v actionlint >/dev/null; then actionlint .github/workflows/book.yml; \
	  else echo "actionlint not installed: .github/workflows/book.yml checked by tests/test_release.py only"; fi

# Rewrite every labs/*.ipynb from its text source labs/*.py (jupytext py:percent), outputs stripped.
labs: setup
	$(BIN)/python scripts/labs.py sync

test: setup browser-deps lint test-labs
	$(MAKE) --no-print-directory test-book KEEP_LABS=1
	$(MAKE) --no-print-directory test-unit
	@echo "all test stages passed"

# The GPU suite: GPU tests, every lab under nbval on the GPU, and a report of the measured figures.
# The runtime's own CUDA torch, never a freshly installed one (a PyPI wheel may need a newer driver and see no
# GPU). The preflight fails with one line unless this Python's torch sees a GPU.
PYTHON_GPU ?= python3
GPU_RUN = PYTHONPATH=$(CURDIR)/src $(PYTHON_GPU)

test-gpu:
	@$(GPU_RUN) -m aihw.measure.gpu_preflight
	$(GPU_RUN) -m pytest tests -q -m gpu -p no:cacheprovider -rs
	$(GPU_RUN) -m pytest --nbval-lax --nbval-cell-timeout=300 labs -q -p no:cacheprovider
	$(GPU_RUN) -m aihw.measure.gpu_report --out gpu_report.md

# Tag this commit v<version> after checking it can be released (clean tree, labs in step, versions agree);
# `git push origin v<version>` then runs .github/workflows/book.yml: the book on Pages, the wheel on the release.
release: lint
	$(BIN)/python scripts/release.py tag

# Speed and fidelity tables. bench_build_and_ci.py (fresh-clone set-up, book and CI times) is slow: run it alone.
bench: setup
	@for f in bench/bench_*.py; do case $$f in *build_and_ci*) continue;; esac; \
	  echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf _build .pytest_cache .hypothesis
