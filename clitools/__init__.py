"""Subcommands for cli.py, one module each with `add_parser(subparsers)` and `run(args) -> int`.

`add_parser` imports nothing heavy: help and argument errors come at once. The choices below are the
services' own names (services.dcr.METHOD_LABELS, services.nli.paradigms.METHOD_LABELS), written out so the
parser need not load those packages; tests/test_cli_startup.py holds them equal.
"""

TASKS = ("summarization", "semantic", "custom")
METHODS = ("dce-amc", "paragraph", "evidence", "summ-nli", "sent-nli", "qg-qa")
