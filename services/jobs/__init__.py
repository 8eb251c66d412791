"""Work that outlives the page, for every kind of job (batches, ConsEval studies, DHP runs).

runner: the one job lifecycle (claim, heartbeat, recover, cancel, progress) and the registry of kinds;
queue: the task queue (Huey) that hands a job to the workers; batches: the batch kind (DCR and the
factual-inconsistency paradigms over a dataset). The worker process is services.worker.
"""
