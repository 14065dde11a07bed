"""Ray Jobs entrypoint for (re)training, with the flags of `soay train`:

    ray job submit --working-dir . -- python -m cluster.jobs.train -f configs/sft/lora.yaml base_model=/ckpt
"""

from __future__ import annotations

import sys

from cli.main import app


def main(argv: list[str] | None = None) -> None:
    app(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
