"""tests/services/test_conseval.py's database tests on PostgreSQL."""

import tests.services.test_conseval as source
from tests.pg.reuse import database_tests

globals().update(database_tests(source))
