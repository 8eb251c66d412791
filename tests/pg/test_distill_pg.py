"""tests/services/test_distill.py's database tests on PostgreSQL."""

import tests.services.test_distill as source
from tests.pg.reuse import database_tests

globals().update(database_tests(source))
