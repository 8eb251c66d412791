"""Subcommands for cli.py, one module each with `add_parser(subparsers)` and `run(args) -> int`.

`add_parser` imports nothing heavy: help and argument errors come at once, and each subcommand loads its
services when it runs. The choices and defaults below are the services' own (services.dcr.METHOD_LABELS,
services.nli.paradigms.METHOD_LABELS, services.stats.LEVELS, db.models.REPORT_KINDS, the defaults of
services.metaeval and services.nli.distill, the answer formats and splits of services.conseval and
services.dhp), written out so the parser need not load those packages; tests/test_cli_startup.py holds them
equal.
"""

TASKS = ("summarization", "semantic", "custom")
METHODS = ("dce-amc", "paragraph", "evidence", "summ-nli", "sent-nli", "qg-qa")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
REPORT_KINDS = ("run", "batch", "nli", "conseval", "dhp", "survey", "judges", "compare")
REPORT_THRESHOLD, REPORT_SEED, REPORT_BOOT = 1.0, 0, 1000
REPORT_PROBABILITY_THRESHOLD = 0.5  # the evidence checker's own (services.metaeval.binary)
DISTILL_SEED, DISTILL_TEST_SHARE = 0, 0.2
CONSEVAL_ANSWER_FORMATS = ("plain", "structured")
CONSEVAL_SPLITS = ("8:2", "leave-one-out")
DHP_ANSWER_FORMATS = ("plain", "structured")


def positive_int(value: str) -> int:
    """An argparse type: a whole number of 1 or more; anything else is a usage message naming the option."""
    import argparse

    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number; give 1 or more") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not allowed; give 1 or more")
    return n
