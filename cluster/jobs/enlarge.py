"""Ray Jobs entrypoint for the dataset enlargement job, with the flags of `soay enlarge`:

    ray job submit --address http://HEAD:8265 --working-dir . -- python -m cluster.jobs.enlarge --workers 8

The verification workers run on the cluster while this driver stays the only consumer and the
only writer of the dataset. Without --until-idle / --max-records it runs until the job is stopped
(SIGTERM ends the batch in hand).
"""

from __future__ import annotations

from cluster.jobs import command_job

main = command_job("enlarge", "--json")

if __name__ == "__main__":
    main()
