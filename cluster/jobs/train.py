"""Ray Jobs entrypoint for (re)training, with the flags of `soay train`:

    ray job submit --working-dir . -- python -m cluster.jobs.train -f configs/sft/lora.yaml base_model=/ckpt
"""

from __future__ import annotations

from cluster.jobs import command_job

main = command_job("train")

if __name__ == "__main__":
    main()
