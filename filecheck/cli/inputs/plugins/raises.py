"""A plug-in that fails while it is imported."""

from forge.driver.registry import register_pass  # noqa: F401 - a plug-in's usual import; it fails before using it

SETTINGS = {"alpha": 1}
ALPHA = SETTINGS["beta"]
