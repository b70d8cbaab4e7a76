# The SDK's version follows the API's: when taskflow is tagged vX.Y.Z the SDK
# is X.Y.Z. Until the first tag (v0.1.0, CHANGELOG.md) it is a development
# version of that one. tests/test_version.py holds the two together.
__version__ = "0.1.0.dev0"
