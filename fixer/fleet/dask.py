"""`fixer scan --dask ADDRESS`: the same scan on a Dask cluster, for more logs than one machine holds.

Dask because a scan is a map of one pure function over files, which is what `dask.bag` does, and
because platform teams already run it where training runs: on Kubernetes, and on Slurm or PBS through
dask-jobqueue, from pip alone, with no JVM (Spark) and no object store to size (Ray). Each worker
process builds its own matcher once; the workers must see the files at the paths given (a shared
file system), as they see the job logs they are pointed at.
"""

from __future__ import annotations

from collections.abc import Sequence

import dask.bag as db  # the `fleet` extra: imported here, so that its absence shows on import
from distributed import Client

from fixer.fleet.scan import FileScan, Found, scan_file


def scan_on_dask(files: Sequence[str], address: str, team: tuple[str, ...] = ()) -> tuple[list[Found], list[str]]:
    """As `fixer.fleet.scan.scan`: the tracebacks, and why each skipped file was skipped."""
    with Client(address) as client:
        partitions = max(1, min(len(files), 8 * max(1, len(client.nthreads()))))
        bag = db.from_sequence(list(files), npartitions=partitions).map(scan_file, team)
        results: list[FileScan] = list(client.compute(bag).result())
    return [f for r in results for f in r.found], list(dict.fromkeys(n for r in results for n in r.notices()))
