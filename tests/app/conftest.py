"""The app's tests run with a temporary home: Streamlit writes its disk cache (``persist="disk"``) under
``~/.streamlit/cache``, and the browser test's server inherits this environment; the user's home is never touched."""
import pytest


@pytest.fixture(scope="session", autouse=True)
def _streamlit_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))  # Streamlit asks Path.home() each time it writes its cache
        yield home
