# Two commands on a fresh machine (Python 3.11, gcc, root): `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
SOURCES := $(shell find board search evaluators -name '*.py' 2>/dev/null)

.PHONY: run test browser test-pure test-compiled test-slow typecheck bench install build sysdeps clean package-check pages

# The main job writes its report under runs/ (its seconds per move depend on the machine) and ends by
# comparing it with the shipped one in reports/: the checkout stays clean.
run: install
	$(BIN)/searchbench scale experiments/configs/quick-crazyhouse.toml --report-dir runs/reports \
	    --compare reports/quick-crazyhouse

test: install browser
	$(MAKE) typecheck test-compiled test-pure package-check

# Debian's chromium and chromium-driver for the report pages' browser tests (tests/test_browser.py);
# where they cannot be installed those tests are skipped with the reason, and the rest run.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		{ $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; } \
		    >/dev/null 2>&1 || echo "no chromium here: the browser tests will be skipped"; \
	fi

# mypy --strict with the project's settings (pyproject.toml), over every package
typecheck: install
	$(BIN)/mypy board search evaluators engines reports experiments

test-compiled: install
	$(BIN)/pytest -q -p no:cacheprovider

test-pure: install
	SEARCHBENCH_PURE=1 $(BIN)/pytest -q -p no:cacheprovider -m "not slow and not compiled_only and not package"

test-slow: install
	$(BIN)/pytest -q -p no:cacheprovider -m slow

# `pip install .` into a fresh virtual environment plays a RISE match in the default inference backend
# (every dependency of a default path is declared): run again whenever the dependencies, the build or
# the default inference change (always on a fresh clone, so in CI).
package-check: $(VENV)/.package-checked
$(VENV)/.package-checked: $(VENV)/.installed pyproject.toml setup.py evaluators/base.py
	$(BIN)/pytest -q -p no:cacheprovider -m package tests/test_package.py
	touch $@

# Every shipped report's index.html again (after a change to reports/html.py or page.js), with its games
# where the database is in runs/ under the report's name (an rl loop's: runs/rl/NAME/rate.sqlite), and
# reports/index.html.
pages: install
	@for md in $$(find reports -mindepth 2 \( -name elo_vs_nodes.md -o -name ablation.md -o -name teams.md -o -name README.md \) | sort); do \
		d=$$(dirname $$md); db=runs/$$(basename $$d).sqlite; [ -f $$db ] || db=runs/rl/$$(basename $$d)/rate.sqlite; \
		$(BIN)/searchbench report $$d $$( [ -f $$db ] && echo --db $$db ) || exit 1; \
	done
	$(BIN)/searchbench report --index reports

bench: install
	$(BIN)/searchbench bench movegen

install: sysdeps $(VENV)/.installed build

# External engines from Debian (Stockfish, Fairy-Stockfish, Sjeng); skipped when already there.
sysdeps:
	@if ! { command -v stockfish || test -x /usr/games/stockfish; } >/dev/null || \
	    ! { command -v fairy-stockfish || test -x /usr/games/fairy-stockfish; } >/dev/null || \
	    ! { command -v sjeng || test -x /usr/games/sjeng; } >/dev/null; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq stockfish fairy-stockfish sjeng; \
	fi

$(VENV)/.installed: pyproject.toml requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	SEARCHBENCH_PURE=1 $(PY) -m pip install -q --no-build-isolation --no-deps -e .  # extensions: see build
	@# The repository root on sys.path: the shared mypyc library (searchbench_native__mypyc) is a
	@# top-level module built after the editable install, which therefore does not map it.
	$(PY) -c "import os, site; open(os.path.join(site.getsitepackages()[0], 'searchbench-root.pth'), 'w').write(os.getcwd() + '\n')"
	touch $@

# mypyc extensions, rebuilt whenever a compiled source changes (a stale .so would shadow edits).
build: $(VENV)/.built
# The old libraries are unlinked first, not overwritten: a running experiment keeps its mapped copy.
$(VENV)/.built: $(VENV)/.installed setup.py $(SOURCES)
	flock /tmp/searchbench-build.lock sh -c 'find board search evaluators -name "*.so" -delete; rm -f searchbench_native__mypyc*.so; \
	  $(PY) setup.py -q build_ext --inplace' > $(VENV)/build.log 2>&1 || { tail -40 $(VENV)/build.log; exit 1; }
	touch $@

clean:
	rm -rf build $(VENV)/.built
	find board search evaluators -name '*.so' -delete
