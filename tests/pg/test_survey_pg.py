"""tests/services/test_survey.py's database tests on PostgreSQL."""

import tests.services.test_survey as source
from tests.pg.reuse import database_tests

globals().update(database_tests(source))
