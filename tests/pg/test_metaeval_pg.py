"""tests/services/test_metaeval.py's database tests on PostgreSQL."""

import tests.services.test_metaeval as source
from tests.pg.reuse import database_tests

# The SQLite JSON path is SQLite's own; PostgreSQL reads the results through the Python path.
globals().update(database_tests(source, skip=("test_sqlite_json_path_and_python_path_read_the_same",)))
