"""Ray Jobs entrypoint for the retriever index build, with the flags of `soay index`:

    ray job submit --address http://HEAD:8265 --working-dir . -- python -m cluster.jobs.index --workers 8
"""

from __future__ import annotations

from cluster.jobs import command_job

main = command_job("index", "--json")

if __name__ == "__main__":
    main()
