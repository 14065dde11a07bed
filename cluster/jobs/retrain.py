"""Ray Jobs entrypoint for the retraining loop, with the flags of `soay retrain`:

    ray job submit --working-dir . -- python -m cluster.jobs.retrain --eval-limit 200

Run on the cluster that serves, so that a promoted model is swapped into the running application.
"""

from __future__ import annotations

from cluster.jobs import command_job

main = command_job("retrain")

if __name__ == "__main__":
    main()
