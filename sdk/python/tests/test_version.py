"""The SDK's version follows the API's."""

import re

from taskflow_sdk import __version__


def test_version_follows_the_api(client):
    api = client.server_version()
    m = re.fullmatch(r"v(\d+\.\d+\.\d+)", api)
    if m:  # a tagged build: the same version
        assert __version__ == m.group(1), (api, __version__)
    else:  # a checkout before the first tag (v0.1.0): its development version
        assert api == "(devel)" or "-" in api, api
        assert __version__ == "0.1.0.dev0", __version__


def test_pyproject_reads_the_version_from_the_package():
    import pathlib
    text = (pathlib.Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert 'version = { attr = "taskflow_sdk._version.__version__" }' in text
