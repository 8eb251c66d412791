from tests.app.test_settings import endpoint_form
from tests.app.helpers import click, texts
def test_x(open_page, closed_url):
    at = click(endpoint_form(open_page, closed_url), "Save")
    print("\nAFTER SAVE sidebar:", texts(at.sidebar.markdown), texts(at.sidebar.caption), texts(at.warning))
