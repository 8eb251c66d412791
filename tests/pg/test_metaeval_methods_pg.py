"""tests/services/test_metaeval_methods.py's database tests on PostgreSQL."""

import tests.services.test_metaeval_methods as source
from tests.pg.reuse import database_tests

globals().update(database_tests(source))
