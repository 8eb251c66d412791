"""tests/services/test_evidence.py's database tests on PostgreSQL."""

import tests.services.test_evidence as source
from tests.pg.reuse import database_tests

globals().update(database_tests(source))
