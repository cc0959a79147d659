"""A plug-in that fails while it is imported."""

from forge.context import register_pass

SETTINGS = {"alpha": 1}
ALPHA = SETTINGS["beta"]
