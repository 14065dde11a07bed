"""Ray Jobs entrypoint for triplet generation, with the flags of `soay generate`:

    ray job submit --address http://HEAD:8265 --working-dir . -- python -m cluster.jobs.generate --workers 16
"""

from __future__ import annotations

from cluster.jobs import command_job

main = command_job("generate", "--json")

if __name__ == "__main__":
    main()
