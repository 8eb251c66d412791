"""tests/services/test_nli_runs.py's database tests on PostgreSQL."""

import tests.services.test_nli_runs as source
from tests.pg.reuse import database_tests

globals().update(database_tests(source))
