"""Batch runs of DCR over a dataset: create, claim, process, resume, cancel, re-run failed items.

create: a batch and its options, cancel, resume; status: progress and the item table; claims: worker
heartbeats, atomic claims with fencing, leases, recovery from dead workers (at once for a process of this
machine that is gone); items: one item through DCR or an NLI paradigm, every call's usage kept; work: the
loop that works on a batch, on any number of workers, holding its answers through a full disk, and the
delete that stops the workers first.
"""

from services.jobs import runner as jobrunner
from services.jobs.batches.claims import (
    LeaseLost,
    Leases,
    claim,
    claim_leases,
    heartbeat,
    joinable,
    live_workers,
    recover,
    release_gone,
    release_own,
)
from services.jobs.batches.create import (
    JOBS,
    all_options,
    create_batch,
    create_repeats,
    eq3_of,
    eq3_params,
    mark_enqueued,
    options,
    reopen,
    request_cancel,
)
from services.jobs.batches.items import ItemInput, load_inputs, process_item, process_nli_item, round_record
from services.jobs.batches.status import (
    FailedItem,
    Progress,
    batch_public,
    disagreements,
    failed_counts,
    failed_items,
    items_frame,
    list_batches,
    progress,
    status_text,
)
from services.jobs.batches.work import (
    RunStats,
    active_batches,
    backend_for,
    delete_batch,
    process_batch,
    settle,
    shutdown,
    worker_endpoints,
)

__all__ = [
    "JOBS",
    "ItemInput",
    "LeaseLost",
    "Leases",
    "FailedItem",
    "Progress",
    "RunStats",
    "active_batches",
    "all_options",
    "backend_for",
    "batch_public",
    "claim",
    "claim_leases",
    "create_batch",
    "create_repeats",
    "delete_batch",
    "eq3_of",
    "eq3_params",
    "heartbeat",
    "disagreements",
    "failed_counts",
    "failed_items",
    "items_frame",
    "joinable",
    "list_batches",
    "live_workers",
    "load_inputs",
    "mark_enqueued",
    "options",
    "process_batch",
    "process_item",
    "process_nli_item",
    "progress",
    "recover",
    "release_gone",
    "release_own",
    "reopen",
    "request_cancel",
    "round_record",
    "settle",
    "shutdown",
    "status_text",
    "worker_endpoints",
]

jobrunner.register(jobrunner.JobKind("batch", process=process_batch, recover=recover, on_enqueue=mark_enqueued))
