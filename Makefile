# Two commands do all set-up on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

# A DEBUG-off process needs its own DJANGO_SECRET_KEY; local commands that run without DEBUG
# (benchmarks, the migrations check) get a throwaway one unless the environment has one.
LOCAL_KEY := DJANGO_SECRET_KEY="$${DJANGO_SECRET_KEY:-floorboard-local-only-not-a-secret}"
MANAGE := $(LOCAL_KEY) $(BIN)/python manage.py
# The development tools (config/devtools: bench_* and soak) are installed only where this is set.
DEV_TOOLS := FLOORBOARD_DEV_TOOLS=1
# Python's bytecode cache stays on for every target, even where the environment turns it off:
# otherwise each test process (and each process a test starts) compiles the project, and pytest
# rewrites every test module, again on every run.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install demo test lint check-migrations bench bench-attacks bench-load soak clean lock

# Exact versions from the lock file (every dependency, direct or not), then the project itself.
$(STAMP): pyproject.toml requirements-dev.lock
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11 or newer is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# After changing a dependency in pyproject.toml: pin the whole tree again (the image installs
# requirements.lock, `make install` requirements-dev.lock; tests/config/test_lock_files.py checks
# both against pyproject.toml).
lock: install
	$(BIN)/pip-compile --quiet --strip-extras --no-emit-find-links --no-emit-index-url \
	  --extra prod -o requirements.lock pyproject.toml
	$(BIN)/pip-compile --quiet --strip-extras --no-emit-find-links --no-emit-index-url \
	  --extra dev -o requirements-dev.lock pyproject.toml

# The embedded default: SQLite and files under var/, a filesystem Celery broker, the offline judge.
# run_demo serves the site and runs a worker scoring the demo submissions in the background, with
# beat inside (its sweeper re-queues whatever a stopped worker left); a worker that exits is
# reported and started again.
demo: install
	DJANGO_DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DJANGO_DEBUG=1 $(BIN)/python manage.py seed_demo
	DJANGO_DEBUG=1 $(BIN)/python manage.py seed_demo_study --base-url http://$(HOST):$(PORT)
	@DJANGO_DEBUG=1 $(BIN)/python manage.py run_demo $(HOST):$(PORT)

# The demo's supervised worker under a submission every 2 minutes for MINUTES, on a site of its
# own under var/soak: worker deaths, quarantined messages, submissions scored. Not part of test.
MINUTES ?= 60
soak: install
	$(DEV_TOOLS) DJANGO_DEBUG=1 FLOORBOARD_VAR_DIR=$(CURDIR)/var/soak $(BIN)/python manage.py soak --minutes $(MINUTES)

# The quick tier runs on every core, an idle core taking tests queued for a busy one; the
# services tier (real workers sharing one broker database, SIGKILL runs, a browser) in one
# process.
PYTEST_ARGS ?= $(if $(FLOORBOARD_REQUIRE_SERVICES)$(FLOORBOARD_RUN_SERVICES),,-n auto --dist worksteal)

test: install
	$(DEV_TOOLS) $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

check-migrations: install
	$(MANAGE) makemigrations --check --dry-run

# bench_overhead on both databases: with DATABASE_URL set for PostgreSQL, the embedded default's
# figures follow.
BENCH := $(DEV_TOOLS) $(MANAGE)
EMBEDDED := env -u DATABASE_URL -u CELERY_BROKER_URL $(BENCH)
OVERHEAD_INSTANT := bench_overhead --latency 0 --repeat 3
OVERHEAD_200MS := bench_overhead --latency 0.2
bench: install
	$(BENCH) migrate --noinput -v0
	$(BENCH) bench_scoring
	$(BENCH) $(OVERHEAD_INSTANT)
	$(BENCH) $(OVERHEAD_200MS)
	@case "$$DATABASE_URL" in postgres*) \
	  $(EMBEDDED) migrate --noinput -v0 && $(EMBEDDED) $(OVERHEAD_INSTANT) && \
	  $(EMBEDDED) $(OVERHEAD_200MS) ;; \
	  *) echo "bench_overhead on PostgreSQL + Redis too: set DATABASE_URL=postgres://... CELERY_BROKER_URL=redis://..." ;; esac
	$(BENCH) bench_agreement
	$(BENCH) bench_leaderboard
	@case "$$DATABASE_URL" in postgres*) $(BENCH) bench_assignment ;; \
	  *) echo "bench_assignment needs PostgreSQL: set DATABASE_URL=postgres://..." ;; esac

# The public pages under a crowd: gunicorn as the image runs it, driven from another process
# (wrk where installed) at 20 and 100 readers, the response cache off and on. Not part of bench.
bench-load: install
	env -u DATABASE_URL -u CELERY_BROKER_URL FLOORBOARD_VAR_DIR=$(CURDIR)/var/bench-load \
	  $(BENCH) bench_load

# Hostile uploads at full size against gunicorn and a worker, DEBUG off, on a site of its own
# under var/bench-attacks: each process's peak memory growth per attack. Not part of bench.
bench-attacks: install
	env -u DATABASE_URL -u CELERY_BROKER_URL FLOORBOARD_VAR_DIR=$(CURDIR)/var/bench-attacks \
	  $(BENCH) bench_attacks

clean:
	rm -rf $(VENV) var
