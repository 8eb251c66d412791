"""tests/services/test_jobrunner.py's database tests on PostgreSQL."""

import tests.services.test_jobrunner as source
from tests.pg.reuse import database_tests

globals().update(database_tests(source))
