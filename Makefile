# The two commands of the README:
#   make serve  - set up, then serve the gateway with an embedded Triton (SQLite, CPU)
#   make test   - set up, then run the test suite against a real embedded Triton
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test setup models clean check-serve check-test

# What the operating system must provide, checked first (seconds), with the command to install
# what is missing.
check-serve:
	@$(PYTHON) ocr_embedded/prerequisites.py serve
check-test:
	@$(PYTHON) ocr_embedded/prerequisites.py test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when a dependency list changes.
$(STAMP): $(BIN)/python pyproject.toml triton_models/pyproject.toml contract/pyproject.toml
	$(BIN)/python -m pip install --quiet -e ./contract -e ".[embedded,test]" -e "./triton_models[cpu,eval]"
	touch $(STAMP)

setup: $(STAMP)
	$(BIN)/python manage.py fetch_models
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py collectstatic --no-input --verbosity 0

serve: check-serve setup
	$(BIN)/python manage.py serve_embedded

test: check-test setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var

# make bench - set up, then benchmark ensemble / direct / split / in-process serving on this
# machine (about 15 minutes on 2 cores); results in bench/results/. Options: BENCH_ARGS="--quick".
.PHONY: bench
bench: setup
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# make bench-engines - OpenVINO (BF16 where the CPU has it), OpenVINO FP32 and onnxruntime end
# to end through /api/ocr at long side 640 and 1280 (about 6 minutes on 2 cores).
.PHONY: bench-engines
bench-engines: setup
	$(BIN)/python -m bench.engines $(BENCH_ARGS)
